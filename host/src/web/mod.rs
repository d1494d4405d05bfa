//! The web application served by `cuecraft serve` itself: sign-in, the project list and the
//! subtitle editor. Server-rendered HTML plus small ES modules embedded in the binary
//! (`include_str!`, no bundler, no CDN); every response carries a Content-Security-Policy that
//! allows scripts from this origin only (no inline script), and every state-changing request must
//! carry the session's CSRF token (a `_csrf` form field or an `X-CSRF-Token` header).
//!
//! Rooms: `auth` (sign-in links, passwords, sessions), `projects` (the list), `editor` (the
//! editor page, its data, media and edits), `align` (edited text onto stored words), `cache`
//! (recently used transcripts and their views, for the edit round trip), `password`.

mod align;
mod auth;
mod cache;
mod editor;
mod password;
mod projects;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, LOCATION, SET_COOKIE};
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use crate::http::error::ApiError;
use crate::http::{App, Body};
use crate::store::Session;
use crate::util::now_ms;

pub use align::align_text;

/// The session cookie.
const SESSION_COOKIE: &str = "cc_session";
/// The sign-in forms' CSRF cookie (double submit: no session exists yet).
const PRE_COOKIE: &str = "cc_signin";
/// The largest form or JSON body the pages send.
const MAX_BODY: usize = 4 << 20;

/// What the pages may load: this origin only; no inline script, no plug-ins, no framing.
pub const CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
media-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; \
form-action 'self'";

/// Whether `path` belongs to the web application (everything but `/v1` and `/upload`).
pub fn owns(path: &str) -> bool {
    !(path == "/v1" || path.starts_with("/v1/") || path.starts_with("/upload/"))
}

/// An error of a page or of one of its requests.
#[derive(Debug)]
pub enum WebError {
    /// No such page, or a project the member may not see.
    NotFound,
    /// Not signed in.
    SignIn,
    /// The CSRF token is missing or wrong.
    Csrf,
    /// The request is malformed.
    BadRequest(String),
    /// Someone else saved first: the current revision.
    Conflict(i64),
    /// The method is not served on this path.
    Method,
    /// Anything else (logged, not shown).
    Internal(String),
}

impl From<crate::store::StoreError> for WebError {
    fn from(e: crate::store::StoreError) -> Self {
        WebError::Internal(e.to_string())
    }
}

impl From<std::io::Error> for WebError {
    fn from(e: std::io::Error) -> Self {
        WebError::Internal(e.to_string())
    }
}

impl WebError {
    fn status(&self) -> u16 {
        match self {
            WebError::NotFound => 404,
            WebError::SignIn => 401,
            WebError::Csrf => 403,
            WebError::BadRequest(_) => 400,
            WebError::Conflict(_) => 409,
            WebError::Method => 405,
            WebError::Internal(_) => 500,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            WebError::NotFound => "not_found",
            WebError::SignIn => "not_signed_in",
            WebError::Csrf => "csrf_token_invalid",
            WebError::BadRequest(_) => "bad_request",
            WebError::Conflict(_) => "revision_conflict",
            WebError::Method => "method_not_allowed",
            WebError::Internal(_) => "internal_error",
        }
    }

    fn message(&self) -> String {
        match self {
            WebError::NotFound => "Not found.".into(),
            WebError::SignIn => "Please sign in.".into(),
            WebError::Csrf => "The form's security token is missing or out of date; reload the page and try again.".into(),
            WebError::BadRequest(m) => m.clone(),
            WebError::Conflict(_) => "Someone else changed this transcript; reload to see their version.".into(),
            WebError::Method => "Method not allowed.".into(),
            WebError::Internal(_) => "Something went wrong on the server.".into(),
        }
    }
}

/// A request as the pages see it: method, path segments, query, headers and (for POST) the body.
pub struct WebRequest {
    pub method: Method,
    pub path: String,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl WebRequest {
    /// The value of cookie `name`.
    pub fn cookie(&self, name: &str) -> Option<String> {
        for h in self.headers.get_all(hyper::header::COOKIE) {
            let Ok(s) = h.to_str() else { continue };
            for part in s.split(';') {
                if let Some((k, v)) = part.trim().split_once('=') {
                    if k == name {
                        return Some(v.to_string());
                    }
                }
            }
        }
        None
    }

    /// The form fields of an `application/x-www-form-urlencoded` body.
    pub fn form(&self) -> Vec<(String, String)> {
        crate::util::parse_query(&String::from_utf8_lossy(&self.body))
    }

    /// The query parameters.
    pub fn params(&self) -> Vec<(String, String)> {
        crate::util::parse_query(&self.query)
    }

    /// Whether the caller wants JSON (the pages' scripts ask for it).
    pub fn wants_json(&self) -> bool {
        self.headers
            .get(hyper::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.starts_with("application/json"))
    }
}

/// The first value of `name` in `pairs`.
pub fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Escapes text for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Adds the headers every page response carries.
fn harden(resp: &mut Response<Body>) {
    let h = resp.headers_mut();
    h.insert("Content-Security-Policy", HeaderValue::from_static(CSP));
    h.insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("X-Frame-Options", HeaderValue::from_static("DENY"));
    // Sign-in links carry their token in the path: never leak it to another site.
    h.insert("Referrer-Policy", HeaderValue::from_static("no-referrer"));
}

/// A response with a body and content type.
pub fn respond_bytes(
    status: u16,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut resp = Response::new(Body::full(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// A JSON response.
pub fn json_ok(value: &Value) -> Response<Body> {
    respond_bytes(
        200,
        "application/json; charset=utf-8",
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

/// A 303 redirect.
pub fn redirect(to: &str) -> Response<Body> {
    let mut resp = respond_bytes(303, "text/plain; charset=utf-8", Bytes::new());
    if let Ok(v) = HeaderValue::from_str(to) {
        resp.headers_mut().insert(LOCATION, v);
    }
    resp
}

/// Appends a `Set-Cookie`.
pub fn set_cookie(resp: &mut Response<Body>, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().append(SET_COOKIE, v);
    }
}

/// A `Set-Cookie` value: HttpOnly, SameSite, and Secure when the service is public over https.
pub fn cookie(
    app: &App,
    name: &str,
    value: &str,
    path: &str,
    same_site: &str,
    max_age: i64,
) -> String {
    let secure = if app.config.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    format!(
        "{name}={value}; Path={path}; HttpOnly; SameSite={same_site}; Max-Age={max_age}{secure}"
    )
}

/// A whole HTML page: the header with the member's organisation and sign-out form, the body, and
/// the page's ES modules (external files only: the CSP refuses inline script).
pub fn page(title: &str, session: Option<&Session>, body: &str, modules: &[&str]) -> String {
    let mut head_extra = String::new();
    for m in modules {
        head_extra.push_str(&format!(
            "<script type=\"module\" src=\"/assets/{}\"></script>",
            esc(m)
        ));
    }
    let nav = match session {
        Some(s) => format!(
            "<meta name=\"csrf-token\" content=\"{csrf}\">",
            csrf = esc(&s.csrf)
        ),
        None => String::new(),
    };
    let header = match session {
        Some(s) => format!(
            "<header class=\"top\"><a class=\"brand\" href=\"/projects\">cuecraft</a>\
             <span class=\"org\">{org}</span><nav><a href=\"/projects\">Projects</a>\
             <a href=\"/account\">{email}</a>\
             <form method=\"post\" action=\"/logout\" class=\"inline\">\
             <input type=\"hidden\" name=\"_csrf\" value=\"{csrf}\">\
             <button type=\"submit\">Sign out</button></form></nav></header>",
            org = esc(&s.member.org_name),
            email = esc(&s.member.email),
            csrf = esc(&s.csrf),
        ),
        None => "<header class=\"top\"><a class=\"brand\" href=\"/projects\">cuecraft</a></header>"
            .into(),
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · cuecraft</title><link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/assets/app.css\">{nav}{head_extra}\
         </head><body>{header}<main>{body}</main></body></html>\n",
        title = esc(title),
    )
}

/// An HTML page response.
pub fn html(status: u16, page: String) -> Response<Body> {
    respond_bytes(status, "text/html; charset=utf-8", page)
}

/// The embedded assets: (name, content type, bytes).
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
    (
        "projects.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/projects.js"),
    ),
    (
        "editor.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/editor.js"),
    ),
    (
        "timeline.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/timeline.js"),
    ),
    (
        "speakers.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/speakers.js"),
    ),
];

fn asset(name: &str) -> Result<Response<Body>, WebError> {
    let (_, ct, body) = ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or(WebError::NotFound)?;
    let mut resp = respond_bytes(200, "text/plain", Bytes::from_static(body.as_bytes()));
    if let Ok(v) = HeaderValue::from_str(ct) {
        resp.headers_mut().insert(CONTENT_TYPE, v);
    }
    Ok(resp)
}

/// The session of the request's cookie, if it is live.
pub async fn session_of(app: &Arc<App>, req: &WebRequest) -> Result<Option<Session>, WebError> {
    let Some(token) = req.cookie(SESSION_COOKIE) else {
        return Ok(None);
    };
    db(app, move |c| Ok(c.session(&token, now_ms())?)).await
}

/// The session, or `SignIn`.
pub async fn require_session(app: &Arc<App>, req: &WebRequest) -> Result<Session, WebError> {
    session_of(app, req).await?.ok_or(WebError::SignIn)
}

/// Checks the CSRF token of a state-changing request against the session's.
pub fn check_csrf(req: &WebRequest, session: &Session) -> Result<(), WebError> {
    let sent = req
        .headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| field(&req.form(), "_csrf").map(str::to_string));
    match sent {
        Some(t) if password::constant_time_eq(t.as_bytes(), session.csrf.as_bytes()) => Ok(()),
        _ => Err(WebError::Csrf),
    }
}

/// Runs database work on a blocking thread.
pub async fn db<T: Send + 'static>(
    app: &Arc<App>,
    f: impl FnOnce(&dyn crate::store::Store) -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    let store = app.store.clone();
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let out = span.in_scope(|| f(store.as_ref()));
        crate::ops::metrics::store_call("web", started);
        out
    })
    .await
    .map_err(|e| WebError::Internal(format!("blocking task: {e}")))?
}

/// Answers a request to the web application. Errors become an HTML page, or `{error, code}` JSON
/// for the pages' scripts; a page that needs a session redirects to the sign-in page.
pub async fn handle(app: Arc<App>, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let (parts, body) = req.into_parts();
    let is_post = parts.method == Method::POST;
    let body = if is_post {
        match Limited::new(body, MAX_BODY).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => {
                return Ok(error_page(
                    &WebError::BadRequest("The request body is too large or was cut off.".into()),
                    true,
                ))
            }
        }
    } else {
        Bytes::new()
    };
    let req = WebRequest {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts.headers,
        body,
    };
    let wants_json = req.wants_json();
    let mut resp = match route(&app, &req).await {
        Ok(r) => r,
        Err(WebError::SignIn) if !wants_json && req.method == Method::GET => {
            let next = crate::util::percent_encode(&format!(
                "{}{}{}",
                req.path,
                if req.query.is_empty() { "" } else { "?" },
                req.query
            ));
            redirect(&format!("/login?next={next}"))
        }
        Err(e) => {
            if let WebError::Internal(why) = &e {
                tracing::error!("web: {why}");
            }
            error_page(&e, wants_json)
        }
    };
    harden(&mut resp);
    Ok(resp)
}

fn error_page(e: &WebError, wants_json: bool) -> Response<Body> {
    if wants_json {
        let mut body = json!({"error": e.message(), "code": e.code()});
        if let WebError::Conflict(rev) = e {
            body["revision"] = json!(rev);
        }
        let mut resp = json_ok(&body);
        *resp.status_mut() = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::OK);
        return resp;
    }
    let body = format!(
        "<section class=\"notice\"><h1>{}</h1><p>{}</p><p><a href=\"/projects\">Projects</a></p></section>",
        e.status(),
        esc(&e.message())
    );
    html(e.status(), page(&e.message(), None, &body, &[]))
}

async fn route(app: &Arc<App>, req: &WebRequest) -> Result<Response<Body>, WebError> {
    let segs: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
    let get = req.method == Method::GET || req.method == Method::HEAD;
    let post = req.method == Method::POST;
    match segs.as_slice() {
        [""] if get => Ok(redirect("/projects")),
        ["assets", name] if get => asset(name),
        ["login"] if get => auth::login_page(app, req, None).await,
        ["login"] if post => auth::password_login(app, req).await,
        ["login", token] if get => auth::link_page(app, req, token).await,
        ["login", token] if post => auth::link_login(app, req, token).await,
        ["logout"] if post => auth::logout(app, req).await,
        ["account"] if get => auth::account_page(app, req).await,
        ["account", "password"] if post => auth::set_password(app, req).await,
        ["projects"] if get => projects::list_page(app, req).await,
        ["projects", "status"] if get => projects::statuses(app, req).await,
        ["editor", id] if get => editor::page(app, req, id).await,
        ["editor", id, "data"] if get => editor::data(app, req, id).await,
        ["editor", id, "media"] if get => editor::media(app, req, id).await,
        ["editor", id, "peaks"] if get => editor::peaks(app, req, id).await,
        ["editor", id, "download"] if get => editor::download(app, req, id).await,
        ["editor", id, "revisions"] if get => editor::revision_list(app, req, id).await,
        ["editor", id, "edit"] if post => editor::edit(app, req, id).await,
        ["editor", id, "restore"] if post => editor::restore(app, req, id).await,
        ["editor", id, "settings"] if post => editor::settings(app, req, id).await,
        ["editor", id, "speakers"] if post => editor::speakers(app, req, id).await,
        ["editor", id, "translations"] if post => editor::add_translation(app, req, id).await,
        [""]
        | ["assets", _]
        | ["login"]
        | ["login", _]
        | ["logout"]
        | ["account"]
        | ["account", "password"]
        | ["projects"]
        | ["projects", "status"]
        | ["editor", _]
        | ["editor", _, _] => Err(WebError::Method),
        _ => Err(WebError::NotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escaping_covers_text_and_attributes() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn the_api_and_uploads_are_not_the_web_application() {
        assert!(owns("/"));
        assert!(owns("/projects"));
        assert!(owns("/editor/0123"));
        assert!(!owns("/v1/jobs"));
        assert!(!owns("/v1"));
        assert!(!owns("/upload/abc"));
        assert!(owns("/v1x"));
    }

    #[test]
    fn the_policy_forbids_inline_script() {
        let script = CSP
            .split(';')
            .map(str::trim)
            .find(|d| d.starts_with("script-src"))
            .unwrap_or_default();
        assert_eq!(script, "script-src 'self'");
        assert!(!CSP.contains("unsafe-inline"));
    }
}
