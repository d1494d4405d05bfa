//! The project list (`/projects`): the organisation's jobs the member may see (the visibility rule
//! is in `store`), searched by name, filtered by status and folder, sorted by created, updated or
//! name, a page at a time by keyset (the last row's sort key and id), with the statuses of running
//! jobs refreshed by `projects.js` from `/projects/status`.

use std::sync::Arc;

use hyper::Response;
use serde_json::json;

use crate::http::{App, Body};
use crate::store::{Cursor, ProjectQuery, ProjectRow, Sort};
use crate::util::{is_id, percent_encode, rfc3339};

use super::{db, esc, field, html, json_ok, page, require_session, WebError, WebRequest};

/// Rows per page.
pub const PAGE: usize = 50;

/// The job statuses, in pipeline order.
const STATUSES: &[&str] = &["uploading", "transcribing", "formatting", "ready", "failed"];

/// Encodes a cursor for the `after` parameter: `t<ms>.<id>` or `n<id>.<name>`.
pub fn encode_cursor(c: &Cursor) -> String {
    match c {
        Cursor::Time(t, id) => format!("t{t}.{id}"),
        Cursor::Name(name, id) => format!("n{id}.{name}"),
    }
}

/// Reads an `after` parameter; `None` when it is not one [`encode_cursor`] writes.
pub fn decode_cursor(s: &str) -> Option<Cursor> {
    if let Some(rest) = s.strip_prefix('t') {
        let (t, id) = rest.split_once('.')?;
        return (is_id(id)).then(|| Some(Cursor::Time(t.parse().ok()?, id.to_string())))?;
    }
    let rest = s.strip_prefix('n')?;
    let (id, name) = rest.split_once('.')?;
    is_id(id).then(|| Cursor::Name(name.to_string(), id.to_string()))
}

/// `2026-11-23 21:30` (UTC) for a Unix time in milliseconds.
pub fn short_time(ms: i64) -> String {
    let s = rfc3339(ms);
    format!(
        "{} {}",
        s.get(0..10).unwrap_or(""),
        s.get(11..16).unwrap_or("")
    )
}

/// `1:02:03` or `2:03` for seconds.
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as i64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

fn query_of(req: &WebRequest) -> Result<ProjectQuery, WebError> {
    let p = req.params();
    let nonempty = |name: &str| {
        field(&p, name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let sort = match nonempty("sort") {
        None => Sort::Created,
        Some(s) => {
            Sort::parse(&s).ok_or_else(|| WebError::BadRequest(format!("Unknown sort {s:?}.")))?
        }
    };
    let status = nonempty("status");
    if let Some(s) = &status {
        if !STATUSES.contains(&s.as_str()) {
            return Err(WebError::BadRequest(format!("Unknown status {s:?}.")));
        }
    }
    let folder = nonempty("folder");
    if folder.as_deref().is_some_and(|f| !is_id(f)) {
        return Err(WebError::BadRequest("Unknown folder.".into()));
    }
    let after = match nonempty("after") {
        None => None,
        Some(a) => {
            Some(decode_cursor(&a).ok_or_else(|| WebError::BadRequest("Bad page link.".into()))?)
        }
    };
    Ok(ProjectQuery {
        search: nonempty("q").map(|q| q.chars().take(200).collect()),
        status,
        folder,
        sort,
        after,
        limit: PAGE,
    })
}

fn link_with(q: &ProjectQuery, after: Option<&Cursor>) -> String {
    let mut parts = Vec::new();
    if let Some(s) = &q.search {
        parts.push(format!("q={}", percent_encode(s)));
    }
    if let Some(s) = &q.status {
        parts.push(format!("status={}", percent_encode(s)));
    }
    if let Some(f) = &q.folder {
        parts.push(format!("folder={}", percent_encode(f)));
    }
    parts.push(format!("sort={}", q.sort.as_str()));
    if let Some(a) = after {
        parts.push(format!("after={}", percent_encode(&encode_cursor(a))));
    }
    format!("/projects?{}", parts.join("&"))
}

fn row_html(r: &ProjectRow) -> String {
    format!(
        "<tr data-id=\"{id}\"><td><a class=\"open\" href=\"/editor/{id}\">{name}</a></td>\
         <td><span class=\"status status-{status}\" data-status=\"{status}\">{status}</span></td>\
         <td>{folder}</td><td class=\"num\">{dur}</td><td>{created}</td>\
         <td class=\"updated\">{updated}</td></tr>",
        id = esc(&r.id),
        name = esc(&r.name),
        status = esc(&r.status),
        folder = esc(r.folder.as_deref().unwrap_or("")),
        dur = duration(r.duration_seconds),
        created = short_time(r.created_at),
        updated = short_time(r.updated_at),
    )
}

/// GET /projects.
pub async fn list_page(app: &Arc<App>, req: &WebRequest) -> Result<Response<Body>, WebError> {
    let session = require_session(app, req).await?;
    let q = query_of(req)?;
    let viewer = session.member.clone();
    let q2 = q.clone();
    let (mut rows, folders) = db(app, move |c| {
        Ok((c.list_projects(&viewer, &q2)?, c.folders(&viewer)?))
    })
    .await?;
    let more = rows.len() > PAGE;
    rows.truncate(PAGE);
    let mut body = String::from("<section class=\"projects\"><h1>Projects</h1>");
    body.push_str("<form class=\"filters\" method=\"get\" action=\"/projects\" role=\"search\">");
    body.push_str(&format!(
        "<label>Search <input type=\"search\" name=\"q\" value=\"{}\" placeholder=\"Project name\"></label>",
        esc(q.search.as_deref().unwrap_or(""))
    ));
    body.push_str("<label>Status <select name=\"status\"><option value=\"\">Any</option>");
    for s in STATUSES {
        let sel = if q.status.as_deref() == Some(s) {
            " selected"
        } else {
            ""
        };
        body.push_str(&format!("<option value=\"{s}\"{sel}>{s}</option>"));
    }
    body.push_str(
        "</select></label><label>Folder <select name=\"folder\"><option value=\"\">Any</option>",
    );
    for (id, name) in &folders {
        let sel = if q.folder.as_deref() == Some(id.as_str()) {
            " selected"
        } else {
            ""
        };
        body.push_str(&format!(
            "<option value=\"{}\"{sel}>{}</option>",
            esc(id),
            esc(name)
        ));
    }
    body.push_str("</select></label><label>Sort <select name=\"sort\">");
    for (v, label) in [
        (Sort::Created, "Newest first"),
        (Sort::Updated, "Recently changed"),
        (Sort::Name, "Name"),
    ] {
        let sel = if q.sort == v { " selected" } else { "" };
        body.push_str(&format!(
            "<option value=\"{}\"{sel}>{label}</option>",
            v.as_str()
        ));
    }
    body.push_str("</select></label><button type=\"submit\">Apply</button></form>");
    if rows.is_empty() {
        body.push_str(if q.after.is_none() {
            "<p class=\"empty\">No projects match. Jobs created through the API appear here.</p>"
        } else {
            "<p class=\"empty\">No more projects.</p>"
        });
    } else {
        body.push_str(
            "<table class=\"list\"><thead><tr><th>Name</th><th>Status</th><th>Folder</th>\
             <th>Duration</th><th>Created (UTC)</th><th>Updated (UTC)</th></tr></thead><tbody>",
        );
        for r in &rows {
            body.push_str(&row_html(r));
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("<nav class=\"pages\">");
    if q.after.is_some() {
        body.push_str(&format!(
            "<a href=\"{}\">First page</a>",
            esc(&link_with(&q, None))
        ));
    }
    if more {
        if let Some(last) = rows.last() {
            body.push_str(&format!(
                "<a rel=\"next\" href=\"{}\">Next page</a>",
                esc(&link_with(&q, Some(&last.cursor(q.sort))))
            ));
        }
    }
    body.push_str("</nav></section>");
    Ok(html(
        200,
        page("Projects", Some(&session), &body, &["projects.js"]),
    ))
}

/// GET /projects/status?ids=a,b: the current status of listed jobs, for the list's refresh.
pub async fn statuses(app: &Arc<App>, req: &WebRequest) -> Result<Response<Body>, WebError> {
    let session = require_session(app, req).await?;
    let ids: Vec<String> = field(&req.params(), "ids")
        .unwrap_or("")
        .split(',')
        .filter(|id| is_id(id))
        .map(str::to_string)
        .collect();
    let viewer = session.member.clone();
    let (found, progress) = db(app, move |c| {
        let found = c.project_statuses(&viewer, &ids)?;
        let running: Vec<String> = found
            .iter()
            .filter(|(_, status, _)| status == "transcribing")
            .map(|(id, _, _)| id.clone())
            .collect();
        Ok((found, c.progress(&running)?))
    })
    .await?;
    let now = crate::util::now_ms();
    let list: Vec<_> = found
        .into_iter()
        .map(|(id, status, updated)| {
            let mut job = json!({"id": id, "status": status, "updated": short_time(updated)});
            if let Some((_, p)) = progress.iter().find(|(pid, _)| *pid == id) {
                job["progress"] = progress_json(p, now);
            }
            job
        })
        .collect();
    Ok(json_ok(&json!({ "jobs": list })))
}

/// A running job's progress as the list and the editor show it: `share` (0 to 1, of the
/// recording recognised) and `secondsLeft` (counted from now; null until there is an estimate).
pub fn progress_json(p: &crate::store::JobProgress, now: i64) -> serde_json::Value {
    json!({
        "share": (p.share.clamp(0.0, 1.0) * 1000.0).round() / 1000.0,
        "secondsLeft": p.seconds_left_at(now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        let id = "0123456789abcdef01234567".to_string();
        for c in [
            Cursor::Time(1_700_000_000_000, id.clone()),
            Cursor::Name("a.b c&d".into(), id.clone()),
            Cursor::Name(String::new(), id.clone()),
        ] {
            assert_eq!(decode_cursor(&encode_cursor(&c)), Some(c));
        }
        assert_eq!(decode_cursor("t12.nothex"), None);
        assert_eq!(decode_cursor("x"), None);
        assert_eq!(decode_cursor("tabc.0123456789abcdef01234567"), None);
    }

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(duration(62.4), "1:02");
        assert_eq!(duration(3723.0), "1:02:03");
    }
}
