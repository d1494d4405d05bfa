//! The web application over real HTTP: sign-in links, sessions, CSRF, the Content-Security-Policy,
//! the project list's visibility, search, filters and pages, and editor edits reaching every API
//! download byte for byte. The same flows in real Chromium are in `browser.rs`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{request, str_field, Resp, Server, BIN};

/// A signed-in browser session, spoken over plain HTTP.
pub struct Web {
    pub port: u16,
    pub cookie: String,
    pub csrf: String,
}

/// The value of cookie `name` among a response's `Set-Cookie` headers (the whole header too).
pub fn set_cookie(resp: &Resp, name: &str) -> Option<(String, String)> {
    resp.headers
        .iter()
        .filter(|(k, _)| k == "set-cookie")
        .find_map(|(_, v)| {
            let first = v.split(';').next()?;
            let (k, val) = first.split_once('=')?;
            (k == name).then(|| (val.to_string(), v.clone()))
        })
}

/// The `value` of the first `<input ... name="NAME" value="...">` or the `content` of
/// `<meta name="NAME" content="...">` in a page.
pub fn attr_after(page: &str, marker: &str, attr: &str) -> Option<String> {
    let at = page.find(marker)?;
    let rest = &page[at..];
    let v = rest.find(&format!("{attr}=\""))? + attr.len() + 2;
    let end = rest[v..].find('"')?;
    Some(rest[v..v + end].to_string())
}

/// A fresh sign-in link for `member` (`cuecraft admin member login-link`), as a path.
pub fn link_path(server: &Server, member: &str) -> String {
    let out = server.admin(&["member", "login-link", "--member", member]);
    let url = str_field(&out, "signInUrl");
    url.strip_prefix(&server.base())
        .unwrap_or_else(|| panic!("{url} is not on {}", server.base()))
        .to_string()
}

/// Uses a sign-in link as a browser would: the confirmation page, then its form.
pub fn use_link(port: u16, path: &str) -> Resp {
    let page = request(port, "GET", path, &[], b"");
    if page.status != 200 {
        return page;
    }
    let (pre, _) = set_cookie(&page, "cc_signin").expect("sign-in CSRF cookie");
    let field = attr_after(&page.text(), "name=\"_csrf\"", "value").expect("csrf field");
    assert_eq!(field, pre, "double-submit token");
    request(
        port,
        "POST",
        path,
        &[
            ("Cookie", &format!("cc_signin={pre}")),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        format!("_csrf={field}").as_bytes(),
    )
}

impl Web {
    /// Signs `member` in with a fresh link.
    pub fn sign_in(server: &Server, member: &str) -> Web {
        let path = link_path(server, member);
        let resp = use_link(server.port, &path);
        assert_eq!(resp.status, 303, "{}", resp.text());
        assert_eq!(resp.header("location"), Some("/projects"));
        let (token, header) = set_cookie(&resp, "cc_session").expect("session cookie");
        assert!(
            header.contains("HttpOnly") && header.contains("SameSite=Lax"),
            "{header}"
        );
        assert!(
            !header.contains("Secure"),
            "plain http public URL: {header}"
        );
        let mut web = Web {
            port: server.port,
            cookie: format!("cc_session={token}"),
            csrf: String::new(),
        };
        let page = web.get("/projects");
        assert_eq!(page.status, 200, "{}", page.text());
        web.csrf = attr_after(&page.text(), "name=\"csrf-token\"", "content").expect("csrf meta");
        web
    }

    pub fn get(&self, path: &str) -> Resp {
        request(self.port, "GET", path, &[("Cookie", &self.cookie)], b"")
    }

    pub fn get_json(&self, path: &str) -> Resp {
        request(
            self.port,
            "GET",
            path,
            &[("Cookie", &self.cookie), ("Accept", "application/json")],
            b"",
        )
    }

    /// POSTs JSON with the CSRF header.
    pub fn post_json(&self, path: &str, body: &Value) -> Resp {
        request(
            self.port,
            "POST",
            path,
            &[
                ("Cookie", &self.cookie),
                ("Accept", "application/json"),
                ("Content-Type", "application/json"),
                ("X-CSRF-Token", &self.csrf),
            ],
            body.to_string().as_bytes(),
        )
    }
}

/// Creates a job named `name` with `media` through the API and waits until it is ready.
pub fn ready_job(
    server: &Server,
    key: &str,
    name: &str,
    media: &std::path::Path,
    ct: &str,
) -> String {
    let data = std::fs::read(media).expect("media");
    let created = server.create_job(
        key,
        &json!({"filename": "m", "contentType": ct, "sizeBytes": data.len(), "durationSeconds": 3, "name": name}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    assert_eq!(server.upload(&created, &data).status, 200);
    let id = str_field(&created, "id");
    let job = server.wait_for(key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready", "{job}");
    id
}

fn sql(server: &Server, statement: &str) {
    server.sql(statement);
}

#[test]
fn sign_in_links_work_once_and_expire_and_a_left_members_session_is_refused() {
    let server = Server::start(&[]);
    let org = server.org(0, &[]);
    let member = str_field(
        &server.admin(&[
            "member",
            "add",
            "--org",
            &org.id,
            "--email",
            "m@example.com",
            "--role",
            "member",
        ]),
        "id",
    );
    // Single use: the second use of the same link is refused.
    let path = link_path(&server, &member);
    assert_eq!(use_link(server.port, &path).status, 303);
    let again = use_link(server.port, &path);
    assert_eq!(again.status, 410, "{}", again.text());
    // Expired: a link past its 15 minutes is refused, on the page and on use.
    let path = link_path(&server, &member);
    sql(
        &server,
        "UPDATE login_links SET expires_at = 0 WHERE used_at IS NULL",
    );
    assert_eq!(use_link(server.port, &path).status, 410);
    // A made-up token is refused too.
    assert_eq!(
        use_link(server.port, &format!("/login/{}", "ab".repeat(32))).status,
        410
    );
    // Without a session the pages send you to sign in; the scripts' requests get 401 JSON.
    let anon = request(server.port, "GET", "/projects", &[], b"");
    assert_eq!(anon.status, 303);
    assert_eq!(anon.header("location"), Some("/login?next=%2Fprojects"));
    let web = Web::sign_in(&server, &member);
    assert_eq!(web.get("/projects").status, 200);
    // The member leaves: the session ends at once, and no new link is printed for them.
    server.admin(&["member", "remove", "--org", &org.id, "--member", &member]);
    assert_eq!(web.get("/projects").status, 303);
    assert_eq!(web.get_json("/projects/status?ids=").status, 401);
    let err = server.admin_fails(&["member", "login-link", "--member", &member]);
    assert!(err.contains("no active member"), "{err}");
    // Sign-out ends a session.
    let owner = Web::sign_in(&server, &org.owner);
    let out = request(
        server.port,
        "POST",
        "/logout",
        &[
            ("Cookie", &owner.cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        format!("_csrf={}", owner.csrf).as_bytes(),
    );
    assert_eq!(out.status, 303);
    assert_eq!(owner.get("/projects").status, 303);
}

#[test]
fn a_password_signs_in_and_the_sign_in_form_needs_its_token() {
    let server = Server::start(&[]);
    let org = server.org(0, &[]);
    let web = Web::sign_in(&server, &org.owner);
    let set = request(
        server.port,
        "POST",
        "/account/password",
        &[
            ("Cookie", &web.cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        format!("_csrf={}&password=correct+horse+battery", web.csrf).as_bytes(),
    );
    assert_eq!(set.status, 303, "{}", set.text());
    let form = request(server.port, "GET", "/login", &[], b"");
    let (pre, header) = set_cookie(&form, "cc_signin").expect("cookie");
    assert!(header.contains("SameSite=Strict") && header.contains("HttpOnly"));
    let login = |csrf: &str, pw: &str| {
        request(
            server.port,
            "POST",
            "/login",
            &[
                ("Cookie", &format!("cc_signin={pre}")),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            format!("_csrf={csrf}&email=owner%40example.com&password={pw}&next=%2Faccount")
                .as_bytes(),
        )
    };
    assert_eq!(login(&pre, "wrong+password+here").status, 401);
    assert_eq!(login("", "correct+horse+battery").status, 403, "no token");
    let ok = login(&pre, "correct+horse+battery");
    assert_eq!(ok.status, 303, "{}", ok.text());
    assert_eq!(ok.header("location"), Some("/account"));
    assert!(set_cookie(&ok, "cc_session").is_some());
}

#[test]
fn state_changes_need_the_csrf_token_and_pages_forbid_inline_script() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(
        &server,
        &org.key,
        "<script>alert('name')</script>",
        &server.tone(3),
        "audio/wav",
    );
    let web = Web::sign_in(&server, &org.owner);
    // Every page carries the policy: scripts from this origin only.
    for path in [
        "/projects",
        &format!("/editor/{id}"),
        "/login",
        "/assets/editor.js",
    ] {
        let r = web.get(path);
        let csp = r
            .header("content-security-policy")
            .unwrap_or_default()
            .to_string();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{path}: {csp}"
        );
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    // No page holds an inline script: every <script> has a src.
    for path in ["/projects", &format!("/editor/{id}"), "/account"] {
        let page = web.get(path).text();
        for (n, _) in page.match_indices("<script") {
            let tag = &page[n..n + page[n..].find('>').unwrap_or(0)];
            assert!(
                tag.contains(" src=\"/assets/"),
                "{path}: inline script {tag}"
            );
        }
    }
    // A script-bearing job name is shown as text.
    let list = web.get("/projects").text();
    assert!(
        list.contains("&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;"),
        "{list}"
    );
    assert!(!list.contains("<script>alert"));
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let rev = data["transcript"]["revision"].as_i64().expect("revision");
    let op = json!({"revision": rev, "op": "split", "at": 2});
    // Without the token, or with another, the edit is refused and nothing changes.
    for token in ["", "0000"] {
        let r = request(
            server.port,
            "POST",
            &format!("/editor/{id}/edit"),
            &[
                ("Cookie", &web.cookie),
                ("Accept", "application/json"),
                ("Content-Type", "application/json"),
                ("X-CSRF-Token", token),
            ],
            op.to_string().as_bytes(),
        );
        assert_eq!(
            (r.status, r.code()),
            (403, "csrf_token_invalid".to_string())
        );
    }
    let out = request(
        server.port,
        "POST",
        "/logout",
        &[("Cookie", &web.cookie)],
        b"",
    );
    assert_eq!(out.status, 403);
    assert_eq!(
        web.get_json(&format!("/editor/{id}/data")).json()["transcript"]["revision"],
        rev
    );
    // A script typed into a cue is stored as text and never becomes markup on a page.
    let first = &data["cues"][0];
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": rev, "op": "text", "from": first["from"], "to": first["to"], "text": "<img src=x onerror=alert(1)> hi"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let page = web.get(&format!("/editor/{id}")).text();
    assert!(!page.contains("<img src=x"));
    let vtt = server
        .get(&org.key, &format!("/v1/jobs/{id}/subtitles?format=vtt"))
        .text();
    assert!(
        vtt.contains("&lt;") && vtt.contains("src=x onerror"),
        "{vtt}"
    );
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    assert_eq!(
        data["cues"][0]["words"][0]["text"], "<img",
        "stored as typed, as text"
    );
}

/// Every format the editor offers, as the API names them.
const FORMATS: &[&str] = &["srt", "vtt", "ttml", "ass", "ebu-stl"];

#[test]
fn edits_reach_every_api_download_byte_for_byte_and_conflicts_are_refused() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let before = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let rev = data["transcript"]["revision"].as_i64().expect("revision");
    assert_eq!(rev, 0);
    // The editor's cues are the API's cues.
    let api = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    let lines = |cues: &Value| -> Vec<Value> {
        cues.as_array()
            .into_iter()
            .flatten()
            .map(|c| c["lines"].clone())
            .collect()
    };
    assert_eq!(lines(&data["cues"]), lines(&api["cues"]));
    // Correct a word of the first cue: "world." -> "there." keeps its timing.
    let first = &data["cues"][0];
    let words: Vec<&str> = first["words"]
        .as_array()
        .expect("words")
        .iter()
        .map(|w| w["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(words[..2], ["Hello", "world."]);
    let mut edited: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    edited[1] = "there.".into();
    std::thread::sleep(Duration::from_millis(5));
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 0, "op": "text", "from": first["from"], "to": first["to"], "text": edited.join(" ")}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let after_edit = r.json();
    assert_eq!(after_edit["transcript"]["revision"], 1);
    let w1 = &after_edit["cues"][0]["words"][1];
    assert_eq!(
        (w1["text"].as_str(), &w1["start"], &w1["end"]),
        (
            Some("there."),
            &first["words"][1]["start"],
            &first["words"][1]["end"]
        )
    );
    // The API sees it: a new updatedAt, the transcript text, every format equal to the editor's.
    let job = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    assert!(
        job["updatedAt"].as_str() > before["updatedAt"].as_str(),
        "{job}"
    );
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    assert!(text.starts_with("Hello there."), "{text}");
    let check_downloads = |label: &str| {
        for f in FORMATS {
            let api = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format={f}"));
            let ours = web.get(&format!("/editor/{id}/download?format={f}"));
            assert_eq!(api.status, 200);
            assert_eq!(ours.status, 200, "{f}");
            assert_eq!(ours.body, api.body, "{label}: {f} differs");
            assert_eq!(ours.header("content-type"), api.header("content-type"));
            assert_eq!(
                ours.header("content-disposition"),
                api.header("content-disposition")
            );
        }
    };
    check_downloads("after a text edit");
    // Split before the third word of the cue, then a line break; each is a new revision.
    let at = first["from"].as_u64().expect("from") + 1;
    let split = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 1, "op": "split", "at": at}),
    );
    assert_eq!(split.status, 200, "{}", split.text());
    let cues = split.json()["cues"].clone();
    assert_eq!(cues[0]["lines"], json!(["Hello"]));
    assert_eq!(cues[1]["lines"], json!(["there."]));
    check_downloads("after a split");
    // A second tab still on revision 1 gets a conflict, never a silent overwrite.
    let stale = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 1, "op": "linebreak", "at": at + 1}),
    );
    assert_eq!(
        (stale.status, stale.json()["revision"].clone()),
        (409, json!(2))
    );
    // Restore revision 0: a new revision 3 with the recognised words; the history keeps all.
    let restored = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 2, "restore": 0}),
    );
    assert_eq!(restored.status, 200, "{}", restored.text());
    assert_eq!(restored.json()["transcript"]["revision"], 3);
    let history = web.get_json(&format!("/editor/{id}/revisions")).json();
    let revs: Vec<i64> = history["revisions"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|r| r["revision"].as_i64())
        .collect();
    assert_eq!(revs, [3, 2, 1, 0]);
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    assert!(text.starts_with("Hello world."), "{text}");
    check_downloads("after a restore");
}

#[test]
fn a_rerun_of_recognition_keeps_the_human_edits() {
    let mut server = Server::start(&["--workers", "1"]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let first = &data["cues"][0];
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 0, "op": "text", "from": first["from"], "to": first["to"], "text": "Edited by a person."}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // The job is sent through recognition again (as a restart mid-job would).
    server.kill9();
    sql(
        &server,
        &format!("UPDATE jobs SET status = 'transcribing' WHERE id = '{id}'"),
    );
    server.spawn();
    let job = server.wait_for(&org.key, &id, &["ready", "failed"]);
    assert_eq!(job["status"], "ready");
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    assert!(text.starts_with("Edited by a person."), "{text}");
}

#[test]
fn members_see_their_own_and_their_folders_projects_found_sorted_and_paged() {
    let server = Server::start(&["--rate-limit-per-minute", "1000"]);
    let org = server.org(100_000, &[]);
    let other = server.org(100_000, &[]);
    let folder = str_field(
        &server.admin(&["folder", "create", "--org", &org.id, "--name", "Docs"]),
        "id",
    );
    let admin = str_field(
        &server.admin(&[
            "member",
            "add",
            "--org",
            &org.id,
            "--email",
            "a@example.com",
            "--role",
            "admin",
        ]),
        "id",
    );
    let member = str_field(
        &server.admin(&[
            "member",
            "add",
            "--org",
            &org.id,
            "--email",
            "m@example.com",
            "--role",
            "member",
        ]),
        "id",
    );
    let outsider = str_field(
        &server.admin(&[
            "member",
            "add",
            "--org",
            &org.id,
            "--email",
            "o@example.com",
            "--role",
            "member",
        ]),
        "id",
    );
    server.admin(&[
        "folder",
        "add-member",
        "--folder",
        &folder,
        "--member",
        &member,
    ]);
    let data = std::fs::read(server.tone(1)).expect("tone");
    let create = |key: &str, name: &str, folder: Option<&str>| -> String {
        let mut body = json!({"filename": "a.wav", "contentType": "audio/wav", "sizeBytes": data.len(), "durationSeconds": 1, "name": name});
        if let Some(f) = folder {
            body["folderId"] = json!(f);
        }
        let r = server.create_job(key, &body);
        assert_eq!(r.status, 201, "{}", r.text());
        str_field(&r.json(), "id")
    };
    // 120 projects of the owner's key, 3 of them in the folder; one of another organisation.
    let mut ids = Vec::new();
    for n in 0..120 {
        let folder = (n % 40 == 0).then_some(folder.as_str());
        ids.push(create(&org.key, &format!("Project {n:03}"), folder));
    }
    let foreign = create(&other.key, "Foreign", None);
    // The owner pages through all 120, newest first, 50 at a time, without repeats.
    let owner = Web::sign_in(&server, &org.owner);
    let mut seen = Vec::new();
    let mut next = "/projects".to_string();
    loop {
        let page = owner.get(&next).text();
        seen.extend(row_ids(&page));
        match attr_after(&page, "rel=\"next\"", "href") {
            Some(href) => next = href.replace("&amp;", "&"),
            None => break,
        }
    }
    // Every project once; newest first (projects created in the same millisecond by id).
    let mut all = seen.clone();
    all.sort();
    all.dedup();
    let mut want = ids.clone();
    want.sort();
    assert_eq!((seen.len(), all), (120, want));
    let position = |id: &String| ids.iter().position(|x| x == id).unwrap_or(0);
    assert!(position(&seen[0]) > position(&seen[119]));
    // Sorted by name ascending, searched, filtered by folder and by status.
    let by_name = row_ids(&owner.get("/projects?sort=name").text());
    assert_eq!(by_name[..3], ids[..3]);
    assert_eq!(
        row_ids(&owner.get("/projects?q=project+11&sort=name").text()),
        ids[110..120].to_vec()
    );
    assert_eq!(
        row_ids(
            &owner
                .get(&format!("/projects?folder={folder}&sort=name"))
                .text()
        ),
        vec![ids[0].clone(), ids[40].clone(), ids[80].clone()]
    );
    assert_eq!(
        row_ids(&owner.get("/projects?status=ready").text()),
        Vec::<String>::new()
    );
    assert_eq!(
        row_ids(&owner.get("/projects?status=uploading&q=Project+000").text()),
        vec![ids[0].clone()]
    );
    assert_eq!(owner.get("/projects?status=bogus").status, 400);
    // An admin sees everything; a member sees the folder's projects; another member none.
    let admin_web = Web::sign_in(&server, &admin);
    assert_eq!(
        row_ids(&admin_web.get("/projects?q=Project+000").text()),
        vec![ids[0].clone()]
    );
    let member_web = Web::sign_in(&server, &member);
    let mut visible = row_ids(&member_web.get("/projects").text());
    visible.sort();
    let mut expected = vec![ids[0].clone(), ids[40].clone(), ids[80].clone()];
    expected.sort();
    assert_eq!(visible, expected);
    assert_eq!(member_web.get(&format!("/editor/{}", ids[1])).status, 404);
    assert_eq!(member_web.get(&format!("/editor/{}", ids[40])).status, 200);
    let outsider_web = Web::sign_in(&server, &outsider);
    assert!(row_ids(&outsider_web.get("/projects").text()).is_empty());
    // Another organisation's project is a 404 everywhere, even for an owner.
    for path in [
        "",
        "/data",
        "/media",
        "/peaks",
        "/download?format=srt",
        "/revisions",
    ] {
        assert_eq!(
            owner.get(&format!("/editor/{foreign}{path}")).status,
            404,
            "{path}"
        );
    }
    // The status refresh answers only for visible jobs.
    let st = member_web
        .get_json(&format!("/projects/status?ids={},{}", ids[1], ids[40]))
        .json();
    assert_eq!(st["jobs"].as_array().map(Vec::len), Some(1));
    assert_eq!(st["jobs"][0]["status"], "uploading");
}

fn row_ids(page: &str) -> Vec<String> {
    page.match_indices("<tr data-id=\"")
        .map(|(n, m)| page[n + m.len()..n + m.len() + 24].to_string())
        .collect()
}

#[test]
fn quickstart_on_a_fresh_data_directory_gives_a_working_key_and_a_signed_in_page() {
    let server = Server::start(&[]);
    let log_deadline = Instant::now() + Duration::from_secs(10);
    while !server.log().contains("quickstart") {
        assert!(
            Instant::now() < log_deadline,
            "serve printed no hint:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        server.log().contains("admin --data-dir"),
        "{}",
        server.log()
    );
    let out = std::process::Command::new(BIN)
        .args(["admin", "--data-dir"])
        .arg(server.data_dir())
        .arg("quickstart")
        .envs(server.store_env())
        .output()
        .expect("quickstart");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let qs: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let key = str_field(&qs, "key");
    // The key works, and can pay for a job.
    let r = server.create_job(&key, &json!({"filename": "a.wav", "contentType": "audio/wav", "sizeBytes": 10, "durationSeconds": 60}));
    assert_eq!(r.status, 201, "{}", r.text());
    // The link signs the owner in on the server's own address.
    let url = str_field(&qs, "signInUrl");
    let path = url
        .strip_prefix(&server.base())
        .expect("link on the public URL");
    let resp = use_link(server.port, path);
    assert_eq!(resp.status, 303);
    let (token, _) = set_cookie(&resp, "cc_session").expect("session");
    let page = request(
        server.port,
        "GET",
        "/projects",
        &[("Cookie", &format!("cc_session={token}"))],
        b"",
    );
    assert_eq!(page.status, 200);
    assert!(page.text().contains("My organisation"));
    // `/` leads to the list.
    let root = request(server.port, "GET", "/", &[], b"");
    assert_eq!(
        (root.status, root.header("location")),
        (303, Some("/projects"))
    );
}

#[test]
fn the_editor_shows_one_labelled_warning_per_broken_rule_from_the_engines_qc() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let all = |data: &Value| -> Vec<Value> {
        data["cues"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["warnings"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    assert!(
        all(&data).iter().all(|w| w["rule"] != "reading-pace"),
        "{data}"
    );
    // Far more text than 0.85 s of speech can carry: the reading pace rule flags it, once per cue.
    let first = &data["cues"][0];
    let long = "Hello every single one of you wonderful people out there. Um, this is a test of the subtitles.";
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 0, "op": "text", "from": first["from"], "to": first["to"], "text": long}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.json();
    let pace: Vec<Value> = all(&data)
        .into_iter()
        .filter(|w| w["rule"] == "reading-pace")
        .collect();
    assert!(!pace.is_empty(), "{data}");
    assert_eq!(pace[0]["label"], "Reading pace over 17 CPS");
    assert_eq!(pace[0]["level"], "warning");
    assert!(
        pace[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("characters per second")),
        "{}",
        pace[0]
    );
    for cue in data["cues"].as_array().into_iter().flatten() {
        let rules: Vec<&Value> = cue["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| &w["rule"])
            .collect();
        let mut unique = rules.clone();
        unique.dedup();
        assert_eq!(rules.len(), unique.len(), "one signal per rule: {cue}");
    }
    assert!(
        data["qc"]["warnings"].as_u64().is_some_and(|n| n >= 1),
        "{}",
        data["qc"]
    );
}

#[test]
fn layout_settings_changed_in_the_editor_re_lay_out_the_cues_everywhere() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let before = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    let longest = |v: &Value| -> usize {
        v["cues"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["lines"].as_array().cloned().unwrap_or_default())
            .map(|l| l.as_str().unwrap_or("").chars().count())
            .max()
            .unwrap_or(0)
    };
    assert!(
        longest(
            &server
                .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
                .json()
        ) > 20
    );
    std::thread::sleep(Duration::from_millis(5));
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"settings": {"maxCharsPerLine": 20, "maxLinesPerSubtitle": 1}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["maxCharsPerLine"], 20);
    assert!(longest(&r.json()) <= 20);
    // The API lays out with the new settings at once, byte for byte as the editor downloads.
    let api = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    assert!(longest(&api) <= 20, "{api}");
    assert!(api["cues"].as_array().map(Vec::len) > Some(1));
    let job = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    assert!(job["updatedAt"].as_str() > before["updatedAt"].as_str());
    for f in FORMATS {
        let ours = web.get(&format!("/editor/{id}/download?format={f}"));
        let theirs = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format={f}"));
        assert_eq!(ours.body, theirs.body, "{f}");
    }
    // The API's validation, naming the field; recognition settings are not the editor's.
    let bad = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"settings": {"maxCharsPerLine": 5}}),
    );
    assert_eq!(bad.status, 400);
    assert!(
        bad.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("settings.maxCharsPerLine")),
        "{}",
        bad.text()
    );
    let lang = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"settings": {"language": "nl"}}),
    );
    assert_eq!(lang.status, 400);
    let combined = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"settings": {"minDuration": 5, "maxDuration": 2}}),
    );
    assert_eq!(combined.status, 400, "{}", combined.text());
    assert_eq!(
        server
            .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
            .json()["cues"],
        api["cues"]
    );
    // Without the CSRF token nothing changes.
    let r = request(
        server.port,
        "POST",
        &format!("/editor/{id}/settings"),
        &[
            ("Cookie", &web.cookie),
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
        ],
        json!({"settings": {"maxCharsPerLine": 42}})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 403);
}

/// Standard base64, as the browser's `btoa` sends a file.
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn a_translation_added_in_the_editor_is_listed_and_served_by_the_api() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    // Imported from an SRT file, on the media's timeline.
    let srt = "1\r\n00:00:00,100 --> 00:00:00,950\r\nHallo wereld.\r\n\r\n2\r\n00:00:01,200 --> 00:00:02,950\r\nDit is een test\r\nvan de ondertitels.\r\n\r\n";
    let r = web.post_json(
        &format!("/editor/{id}/translations"),
        &json!({"language": "nl", "label": "Nederlands", "from": "file", "file": {"name": "nl.srt", "base64": base64(srt.as_bytes())}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.json();
    assert_eq!(data["transcript"]["kind"], "translation");
    // Each cue shows the original's text over the same time beside it.
    assert!(
        data["cues"][0]["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("Hello world.")),
        "{}",
        data["cues"]
    );
    assert!(
        data["cues"][1]["source"]
            .as_str()
            .is_some_and(|s| s.contains("test of the subtitles")),
        "{}",
        data["cues"]
    );
    let job = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    let nl: Vec<&Value> = job["transcripts"]
        .as_array()
        .expect("list")
        .iter()
        .filter(|t| t["language"] == "nl")
        .collect();
    assert_eq!(nl.len(), 1, "{job}");
    assert_eq!(
        (
            nl[0]["kind"].as_str(),
            nl[0]["label"].as_str(),
            nl[0]["status"].as_str()
        ),
        (Some("translation"), Some("Nederlands"), Some("ready"))
    );
    let srt_back = server
        .get(&org.key, &format!("/v1/jobs/{id}/subtitles?language=nl"))
        .text();
    assert!(
        srt_back.contains("Hallo wereld.")
            && srt_back.contains("Dit is een test\r\nvan de ondertitels."),
        "{srt_back}"
    );
    // The imported times, snapped to the job's frames as every cue is (25 fps: 0.1 s -> 0.12 s).
    assert!(
        srt_back.starts_with("1\r\n00:00:00,120 --> ")
            && srt_back.contains("\r\n2\r\n00:00:01,200 --> "),
        "{srt_back}"
    );
    let tid = data["transcript"]["id"].as_str().expect("id").to_string();
    let ours = web.get(&format!(
        "/editor/{id}/download?format=vtt&transcript={tid}"
    ));
    let theirs = server.get(
        &org.key,
        &format!("/v1/jobs/{id}/subtitles?format=vtt&transcriptId={tid}"),
    );
    assert_eq!(ours.body, theirs.body);
    // Or a copy of the original, typed over cue by cue.
    let r = web.post_json(
        &format!("/editor/{id}/translations"),
        &json!({"language": "de", "from": "original"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let de = r.json();
    let first = &de["cues"][0];
    let typed = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"transcript": de["transcript"]["id"], "revision": 0, "op": "text", "from": first["from"], "to": first["to"], "text": "Hallo Welt. Äh, dies ist ein Test der Untertitel."}),
    );
    assert_eq!(typed.status, 200, "{}", typed.text());
    let text = server
        .get(
            &org.key,
            &format!("/v1/jobs/{id}/transcript?format=text&language=de"),
        )
        .text();
    assert!(text.starts_with("Hallo Welt."), "{text}");
    let original = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    assert!(
        original.starts_with("Hello world."),
        "the original is untouched: {original}"
    );
    // Refusals: no language, a file that is not subtitles.
    let bad = web.post_json(
        &format!("/editor/{id}/translations"),
        &json!({"language": "", "from": "original"}),
    );
    assert_eq!(bad.status, 400);
    let bad = web.post_json(
        &format!("/editor/{id}/translations"),
        &json!({"language": "fr", "from": "file", "file": {"name": "x.bin", "base64": base64(b"not subtitles at all")}}),
    );
    assert_eq!(bad.status, 400, "{}", bad.text());
}

/// A French translation of job `id` imported from the SRT file `srt` through the editor: the
/// editor's data (`transcript`, `cues`) and the transcript's id.
fn import_fr(web: &Web, id: &str, srt: &str) -> (Value, String) {
    let r = web.post_json(
        &format!("/editor/{id}/translations"),
        &json!({"language": "fr", "from": "file", "file": {"name": "fr.srt", "base64": base64(srt.as_bytes())}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.json();
    let tid = data["transcript"]["id"].as_str().expect("id").to_string();
    (data, tid)
}

#[test]
fn an_imported_srt_downloads_back_byte_for_byte_until_it_is_laid_out_again() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    // Four cues on the 25 fps grid, lines as a subtitler broke them, gaps of 2 frames or more:
    // the layout's rules would chain the first gap (0.920 -> 0.880) and give "Merci." its
    // reading time (2.960 -> 3.400); a file timed by hand keeps its times.
    let srt = "1\r\n00:00:00,120 --> 00:00:00,920\r\nBonjour le monde.\r\n\r\n\
               2\r\n00:00:01,000 --> 00:00:01,800\r\nCeci est un essai\r\ndes sous-titres,\r\n\r\n\
               3\r\n00:00:02,000 --> 00:00:02,480\r\nlu à voix haute.\r\n\r\n\
               4\r\n00:00:02,560 --> 00:00:02,960\r\nMerci.\r\n\r\n";
    let (data, tid) = import_fr(&web, &id, srt);
    let api = |f: &str| {
        server.get(
            &org.key,
            &format!("/v1/jobs/{id}/subtitles?language=fr&format={f}"),
        )
    };
    assert_eq!(api("srt").text(), srt, "served exactly as imported");
    let same_downloads = |label: &str| {
        for f in FORMATS {
            let ours = web.get(&format!(
                "/editor/{id}/download?format={f}&transcript={tid}"
            ));
            assert_eq!(ours.status, 200, "{label} {f}");
            assert_eq!(
                ours.body,
                api(f).body,
                "{label}: the editor's {f} is the API's"
            );
        }
    };
    same_downloads("as imported");
    // Under its own file name, not the original's.
    let original = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles"));
    assert_ne!(
        api("srt").header("content-disposition"),
        original.header("content-disposition")
    );
    // A text edit keeps every time: only cue 2's text changes.
    let cue = &data["cues"][1];
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"transcript": tid, "revision": 0, "op": "text", "from": cue["from"], "to": cue["to"], "text": "Voici un essai des sous-titres,"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        api("srt").text(),
        srt.replace(
            "Ceci est un essai\r\ndes sous-titres,",
            "Voici un essai\r\ndes sous-titres,"
        ),
    );
    same_downloads("after a text edit");
    // Re-fitting is asked for: laid out again under the rules, the times are the layout's.
    // Its words now (the edit made "Ceci est" one word, "Voici").
    let now = web
        .get_json(&format!("/editor/{id}/data?transcript={tid}"))
        .json();
    let words = now["cues"][3]["to"].clone();
    assert_eq!(words, json!(13), "{now}");
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"transcript": tid, "revision": 1, "op": "relayout", "from": 0, "to": words}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let fitted = api("srt").text();
    // "Merci." gets its reading time (5/6 s at least): 2.960 is no cue's end any more.
    assert!(!fitted.contains(" --> 00:00:02,960\r\n"), "{fitted}");
    same_downloads("after laying out again");
}

/// A download cut into its header and one piece per cue, as bytes: SRT and WebVTT blocks, ASS
/// `Dialogue:` lines, TTML `<p>` elements, EBU STL's 128-byte text blocks after its 1024-byte
/// header.
fn cue_pieces(format: &str, body: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    if format == "ebu-stl" {
        let (head, tti) = body.split_at(1024.min(body.len()));
        return (head.to_vec(), tti.chunks(128).map(<[u8]>::to_vec).collect());
    }
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let (head, pieces): (&str, Vec<&str>) = match format {
        "srt" => ("", text.split("\n\n").filter(|b| !b.is_empty()).collect()),
        "vtt" => {
            let mut blocks = text.split("\n\n").filter(|b| !b.is_empty());
            (blocks.next().unwrap_or(""), blocks.collect())
        }
        "ass" => {
            let at = text.find("\nDialogue:").map_or(text.len(), |k| k + 1);
            (&text[..at], text[at..].lines().collect())
        }
        _ => {
            let mut parts = text.split("<p ");
            (parts.next().unwrap_or(""), parts.collect())
        }
    };
    (
        head.as_bytes().to_vec(),
        pieces.iter().map(|p| p.as_bytes().to_vec()).collect(),
    )
}

#[test]
fn laying_out_a_range_of_an_imported_file_again_leaves_every_other_cue_as_imported() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(10), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    // Five cues on the 25 fps grid, each shorter than its reading time: the rules would lengthen
    // every one; a file timed by hand keeps them. Cues 2 and 3 have silence after them.
    let srt = "1\r\n00:00:00,120 --> 00:00:00,920\r\nBonsoir à tous.\r\n\r\n\
               2\r\n00:00:01,000 --> 00:00:01,800\r\nVoici la rivière\r\nprès du vieux moulin,\r\n\r\n\
               3\r\n00:00:04,000 --> 00:00:04,480\r\nen plein hiver.\r\n\r\n\
               4\r\n00:00:07,000 --> 00:00:07,400\r\nMerci.\r\n\r\n\
               5\r\n00:00:07,480 --> 00:00:08,200\r\nAu revoir,\r\nà bientôt.\r\n\r\n";
    let (data, tid) = import_fr(&web, &id, srt);
    let api = |f: &str| {
        server
            .get(
                &org.key,
                &format!("/v1/jobs/{id}/subtitles?language=fr&format={f}"),
            )
            .body
    };
    assert_eq!(api("srt"), srt.as_bytes(), "served exactly as imported");
    let imported: Vec<Vec<u8>> = FORMATS.iter().map(|f| api(f)).collect();
    // Cues 2 and 3 laid out again through the editor (their words, as the page sends them).
    let (from, to) = (
        data["cues"][1]["from"].clone(),
        data["cues"][2]["to"].clone(),
    );
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"transcript": tid, "revision": 0, "op": "relayout", "from": from, "to": to}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    for (f, before) in FORMATS.iter().zip(&imported) {
        let after = api(f);
        let ours = web.get(&format!(
            "/editor/{id}/download?format={f}&transcript={tid}"
        ));
        assert_eq!(ours.body, after, "the editor's {f} is the API's");
        let (head0, cues0) = cue_pieces(f, before);
        let (head1, cues1) = cue_pieces(f, &after);
        assert_eq!(head1, head0, "{f}: the header");
        assert_eq!((cues0.len(), cues1.len()), (5, 5), "{f}");
        for k in [0, 3, 4] {
            assert_eq!(
                String::from_utf8_lossy(&cues1[k]),
                String::from_utf8_lossy(&cues0[k]),
                "{f}: cue {} stays as imported",
                k + 1
            );
        }
        for k in [1, 2] {
            assert_ne!(cues1[k], cues0[k], "{f}: cue {} is laid out again", k + 1);
        }
    }
    // The range's cues now stay up for their reading time, and cue 2 keeps the frame gap (3
    // frames) after cue 1's imported end (0.920), which does not move.
    let fitted = String::from_utf8(api("srt")).expect("utf-8");
    let blocks: Vec<&str> = fitted.split("\r\n\r\n").collect();
    let end = |b: &str| {
        b.lines()
            .nth(1)
            .and_then(|l| l.split(" --> ").nth(1))
            .map(str::to_string)
    };
    assert!(blocks[1].starts_with("2\r\n00:00:01,040 --> "), "{fitted}");
    assert!(blocks[2].starts_with("3\r\n00:00:04,000 --> "), "{fitted}");
    assert!(
        end(blocks[1]).is_some_and(|e| e.as_str() > "00:00:01,800"),
        "{fitted}"
    );
    assert!(
        end(blocks[2]).is_some_and(|e| e.as_str() > "00:00:04,480"),
        "{fitted}"
    );
}

#[test]
fn an_edit_of_the_original_carries_to_the_clean_version_and_marks_the_translations_cues() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    // The clean version ("Hello world. This is a test of the subtitles.") is made after the job
    // is ready.
    let deadline = Instant::now() + Duration::from_secs(20);
    let clean = loop {
        let data = web.get_json(&format!("/editor/{id}/data")).json();
        let found = data["transcripts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["kind"] == "clean")
            .cloned();
        if let Some(t) = found {
            break t;
        }
        assert!(Instant::now() < deadline, "no clean version in {data}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let clean_id = clean["id"].as_str().expect("id").to_string();
    let r = web.post_json(
        &format!("/editor/{id}/translations"),
        &json!({"language": "de", "from": "original"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let de_id = r.json()["transcript"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    std::thread::sleep(Duration::from_millis(5));
    // Fix a word of the original: "test" -> "trial" in the cue that holds it.
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let cues = data["cues"].as_array().expect("cues").clone();
    let text_of = |c: &Value| -> String {
        c["words"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| w["text"].as_str().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let k = cues
        .iter()
        .position(|c| text_of(c).contains(" test "))
        .expect("a cue with test");
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 0, "op": "text", "from": cues[k]["from"], "to": cues[k]["to"], "text": text_of(&cues[k]).replace(" test ", " trial ")}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    let listed = answer["transcripts"]
        .as_array()
        .expect("list")
        .iter()
        .find(|t| t["id"] == clean_id.as_str())
        .cloned()
        .expect("clean listed");
    let clean_text = || {
        server
            .get(
                &org.key,
                &format!("/v1/jobs/{id}/transcript?format=text&transcriptId={clean_id}"),
            )
            .text()
    };
    assert!(clean_text().contains("This is a test"), "{}", clean_text());
    // Carried: the clean version says "trial" too, keeps its mended capital and has no filler.
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"transcript": clean_id, "revision": listed["revision"], "op": "carry", "sourceRevision": 1}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let now = clean_text();
    assert!(now.contains("This is a trial of the subtitles."), "{now}");
    assert!(!now.contains("Um"), "{now}");
    // An edit of a filler the clean version does not have is refused, saying why, and writes
    // nothing.
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 1, "op": "text", "from": cues[k]["from"], "to": cues[k]["to"], "text": text_of(&cues[k]).replace(" test ", " trial ").replace("Um,", "Uh,")}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let clean_rev = r.json()["transcripts"]
        .as_array()
        .expect("list")
        .iter()
        .find(|t| t["id"] == clean_id.as_str())
        .map(|t| t["revision"].clone())
        .expect("clean listed");
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"transcript": clean_id, "revision": clean_rev, "op": "carry", "sourceRevision": 2}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains("does not have the same words"),
        "{}",
        r.text()
    );
    assert_eq!(clean_text(), now);
    // The translation made before the fix: the cue over "trial" is marked, the others are not.
    let de = web
        .get_json(&format!("/editor/{id}/data?transcript={de_id}"))
        .json();
    let marked: Vec<bool> = de["cues"]
        .as_array()
        .expect("cues")
        .iter()
        .map(|c| c["sourceChanged"] == true)
        .collect();
    let expect: Vec<bool> = (0..marked.len()).map(|j| j == k).collect();
    assert_eq!(marked, expect, "{}", de["cues"]);
    // Editing that translation cue is a review of it: the mark goes.
    let cue = &de["cues"][k];
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"transcript": de_id, "revision": 0, "op": "text", "from": cue["from"], "to": cue["to"], "text": "Äh, dies ist ein Versuch der Untertitel."}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let de = web
        .get_json(&format!("/editor/{id}/data?transcript={de_id}"))
        .json();
    assert!(
        de["cues"]
            .as_array()
            .expect("cues")
            .iter()
            .all(|c| c.get("sourceChanged").is_none()),
        "{}",
        de["cues"]
    );
}

#[test]
fn nudges_speakers_and_replace_all_reach_the_api() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let cue = data["cues"][0].clone();
    let edit = |rev: i64, op: Value| -> Value {
        let mut body = op;
        body["revision"] = json!(rev);
        let r = web.post_json(&format!("/editor/{id}/edit"), &body);
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    // The last cue's end a frame (40 ms at 25 fps) later (the first cue ends a gap before the
    // second, a sentence of its own, so its end has no room), the first cue's start a frame
    // earlier, from where the cue is shown: the API's cue moves by exactly that.
    let last = data["cues"]
        .as_array()
        .and_then(|c| c.last())
        .cloned()
        .unwrap_or_default();
    let api_cue = |s: &Server, k: usize| {
        let cues = s.get(&org.key, &format!("/v1/jobs/{id}/transcript")).json()["cues"].clone();
        let n = cues.as_array().map_or(0, |c| c.len());
        cues[k.min(n.saturating_sub(1))].clone()
    };
    let before = api_cue(&server, usize::MAX);
    edit(
        0,
        json!({"op": "nudge", "from": last["from"], "to": last["to"], "edge": "end", "frames": 1, "time": last["end"]}),
    );
    let after = api_cue(&server, usize::MAX);
    assert!(
        (after["end"].as_f64().unwrap_or(0.0) - before["end"].as_f64().unwrap_or(0.0) - 0.04).abs()
            < 1e-6,
        "{before} -> {after}"
    );
    let before = api_cue(&server, 0);
    let d = edit(
        1,
        json!({"op": "nudge", "from": cue["from"], "to": cue["to"], "edge": "start", "frames": -1, "time": cue["start"]}),
    );
    let after = api_cue(&server, 0);
    assert!(
        (before["start"].as_f64().unwrap_or(0.0) - after["start"].as_f64().unwrap_or(0.0) - 0.04)
            .abs()
            < 1e-6,
        "{before} -> {after}"
    );
    assert_eq!(d["transcript"]["revision"], 2);
    // Speaker 0 becomes 3 everywhere.
    let d = edit(
        d["transcript"]["revision"].as_i64().unwrap_or(0),
        json!({"op": "speaker", "from": cue["from"], "to": cue["to"], "speaker": 3, "everywhere": true}),
    );
    let api = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    assert!(
        api["cues"]
            .as_array()
            .expect("cues")
            .iter()
            .all(|c| c["speaker"] == 3),
        "{api}"
    );
    // Replace all: every word holding the text changes.
    let d = edit(
        d["transcript"]["revision"].as_i64().unwrap_or(0),
        json!({"op": "replace", "find": "subtitles", "replace": "captions"}),
    );
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    assert!(
        text.contains("captions.") && !text.contains("subtitles"),
        "{text}"
    );
    assert_eq!(d["transcript"]["revision"], 4);
    let none = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 4, "op": "replace", "find": "zebra", "replace": "x"}),
    );
    assert_eq!(none.status, 400);
    // A phrase across words, case-insensitive: "this IS a" finds "This is a"; with whole
    // words "is" does not find the "is" inside "This", without it does.
    let d = edit(
        4,
        json!({"op": "replace", "find": "this IS  a", "replace": "That was a", "caseSensitive": false}),
    );
    let text = || {
        server
            .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
            .text()
    };
    assert!(text().contains("That was a test"), "{}", text());
    let case = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 5, "op": "replace", "find": "that was", "replace": "x"}),
    );
    assert_eq!(case.status, 400, "case-sensitive unless asked");
    let d = edit(
        d["transcript"]["revision"].as_i64().unwrap_or(0),
        json!({"op": "replace", "find": "was", "replace": "is", "wholeWord": true}),
    );
    assert!(text().contains("That is a test"), "{}", text());
    edit(
        d["transcript"]["revision"].as_i64().unwrap_or(0),
        json!({"op": "replace", "find": "hat", "replace": "his"}),
    );
    assert!(text().contains("This is a test"), "{}", text());
    let whole = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 7, "op": "replace", "find": "his", "replace": "x", "wholeWord": true}),
    );
    assert_eq!(whole.status, 400, "\"his\" is inside \"This\" only");
}

/// Applies an edit answer's `patch` to the cues the page holds, as editor.js does.
fn apply_patch(cues: &mut Vec<Value>, patch: &Value) {
    let num = |v: &Value| v.as_i64().expect("number");
    let from = num(&patch["from"]) as usize;
    let remove = num(&patch["remove"]) as usize;
    assert_eq!(num(&patch["baseCueCount"]) as usize, cues.len(), "{patch}");
    let fresh = patch["cues"].as_array().expect("cues").clone();
    let dk = fresh.len() as i64 - remove as i64;
    let dw = num(&patch["wordDelta"]);
    for c in &mut cues[from + remove..] {
        c["index"] = json!(num(&c["index"]) + dk);
        c["from"] = json!(num(&c["from"]) + dw);
        c["to"] = json!(num(&c["to"]) + dw);
        for w in c["words"].as_array_mut().expect("words") {
            w["i"] = json!(num(&w["i"]) + dw);
        }
    }
    cues.splice(from..from + remove, fresh);
    assert_eq!(num(&patch["cueCount"]) as usize, cues.len());
}

#[test]
fn an_edit_answers_only_the_cues_it_changed_and_the_patch_gives_the_whole_list() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "long", &server.tone(3), "audio/wav");
    // Forty sentences of six words, a pause after each: forty cues.
    let mut words = Vec::new();
    let mut t = 0;
    for s in 0..40 {
        for k in 0..6 {
            let text = if k == 5 {
                format!("end{s}.")
            } else {
                format!("word{k}")
            };
            words.push(json!({"t": text, "s": t, "e": t + 300, "p": 0}));
            t += 350;
        }
        // Longer than the layout's hard pause: every sentence is a cue of its own.
        t += 2500;
    }
    // The words in one page of the store (`word_pages`: the list's objects joined by commas).
    let count = words.len();
    let list = Value::Array(words).to_string();
    let original =
        format!("SELECT id FROM transcripts WHERE job_id = '{id}' AND kind = 'original'");
    sql(
        &server,
        &format!(
            "DELETE FROM word_pages WHERE transcript_id IN ({original});
             INSERT INTO word_pages (transcript_id, page, n, words)
             SELECT id, 0, {count}, '{}' FROM transcripts WHERE id IN ({original})",
            &list[1..list.len() - 1]
        ),
    );
    let web = Web::sign_in(&server, &org.owner);
    let mut cues = web.get_json(&format!("/editor/{id}/data")).json()["cues"]
        .as_array()
        .expect("cues")
        .clone();
    assert_eq!(cues.len(), 40);
    let mut rev = 0;
    let mut step = |op: Value, restore: bool, cues: &mut Vec<Value>, most: usize| {
        let mut body = op;
        body["revision"] = json!(rev);
        body["answer"] = json!("patch");
        let path = if restore { "restore" } else { "edit" };
        let r = web.post_json(&format!("/editor/{id}/{path}"), &body);
        assert_eq!(r.status, 200, "{}", r.text());
        let d = r.json();
        assert!(d.get("cues").is_none(), "a patch, not the list");
        let patch = &d["patch"];
        // (The first edit pins the segmentation: every cue's words gain their manual breaks.)
        assert!(
            rev == 0
                || patch["cues"].as_array().map_or(0, Vec::len) <= most
                    && patch["remove"].as_u64() <= Some(most as u64),
            "{patch}"
        );
        apply_patch(cues, patch);
        rev = d["transcript"]["revision"].as_i64().expect("revision");
        let whole = web.get_json(&format!("/editor/{id}/data")).json();
        assert_eq!(&Value::Array(cues.clone()), &whole["cues"], "after {body}");
    };
    // Two words more in cue 10: that cue alone (and a neighbour whose warnings may follow).
    let c = cues[10].clone();
    step(
        json!({"op": "text", "from": c["from"], "to": c["to"], "text": "word0 word1 two more word2 word3 word4 end10."}),
        false,
        &mut cues,
        3,
    );
    // Split cue 20 before its fourth word: one cue becomes two, every later number moves.
    let c = cues[20].clone();
    let at = c["from"].as_i64().expect("from") + 3;
    step(json!({"op": "split", "at": at}), false, &mut cues, 3);
    assert_eq!(cues.len(), 41);
    step(json!({"op": "merge", "at": at}), false, &mut cues, 3);
    // Words removed from cue 30.
    let c = cues[30].clone();
    step(
        json!({"op": "text", "from": c["from"], "to": c["to"], "text": "word0 end30."}),
        false,
        &mut cues,
        3,
    );
    // A restore of revision 1 undoes the split, merge and removal at once.
    step(json!({"restore": 1, "note": "undo"}), true, &mut cues, 12);
    // Without asking for a patch the answer is the whole list, as before.
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": rev, "op": "linebreak", "at": at}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["cues"].as_array().map(Vec::len), Some(40));
}

/// Puts `words` (stored form) in place of the original transcript's words of job `id`.
fn store_words(server: &Server, id: &str, words: Vec<Value>) {
    let count = words.len();
    let list = Value::Array(words).to_string();
    let original =
        format!("SELECT id FROM transcripts WHERE job_id = '{id}' AND kind = 'original'");
    sql(
        server,
        &format!(
            "DELETE FROM word_pages WHERE transcript_id IN ({original});
             INSERT INTO word_pages (transcript_id, page, n, words)
             SELECT id, 0, {count}, '{}' FROM transcripts WHERE id IN ({original})",
            &list[1..list.len() - 1]
        ),
    );
}

#[test]
fn an_edit_in_the_editor_changes_only_its_cues_and_laying_out_again_is_asked_for() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    // Twelve sentences of eight words, 400 ms apart: the layout runs them together, cutting
    // cues where it likes (not at every sentence end).
    let mut words = Vec::new();
    let mut t = 0;
    for s in 0..12 {
        for k in 0..8 {
            let text = if k == 7 {
                format!("end{s}.")
            } else {
                format!("word{k}")
            };
            words.push(json!({"t": text, "s": t, "e": t + 300, "p": 0}));
            t += 340;
        }
        t += 400;
    }
    store_words(&server, &id, words);
    let web = Web::sign_in(&server, &org.owner);
    let api_cues = || -> Vec<Value> {
        let api = server
            .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
            .json();
        api["cues"].as_array().expect("cues").clone()
    };
    let data = || web.get_json(&format!("/editor/{id}/data")).json();
    let check_downloads = |label: &str| {
        for f in FORMATS {
            let api = server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format={f}"));
            let ours = web.get(&format!("/editor/{id}/download?format={f}"));
            assert_eq!(ours.body, api.body, "{label}: {f} differs");
        }
    };
    let mut rev = 0;
    // One edit; the API's cues before and after: every cue but `named` (from cue `k` of the list
    // before) is byte-identical, text and times, the later ones renumbered.
    let mut edit = |op: Value, k: usize, named: usize, made: usize| -> Vec<Value> {
        let before = api_cues();
        let mut body = op.clone();
        body["revision"] = json!(rev);
        let r = web.post_json(&format!("/editor/{id}/edit"), &body);
        assert_eq!(r.status, 200, "{op}: {}", r.text());
        rev = r.json()["transcript"]["revision"]
            .as_i64()
            .expect("revision");
        let after = api_cues();
        assert_eq!(after.len(), before.len() - named + made, "{op}");
        assert_eq!(after[..k], before[..k], "{op}: the cues before");
        let strip = |c: &Value| {
            let mut c = c.clone();
            c.as_object_mut().map(|o| o.remove("index"));
            c
        };
        let tail = before.len() - k - named;
        let (a, b) = (&after[after.len() - tail..], &before[before.len() - tail..]);
        assert_eq!(
            a.iter().map(strip).collect::<Vec<_>>(),
            b.iter().map(strip).collect::<Vec<_>>(),
            "{op}: the cues after"
        );
        check_downloads(&op.to_string());
        after
    };
    let cues = data()["cues"].as_array().expect("cues").clone();
    assert!(cues.len() >= 8, "{cues:?}");
    let range = |c: &Value| {
        (
            c["from"].as_u64().unwrap_or(0),
            c["to"].as_u64().unwrap_or(0),
        )
    };
    // A text edit of cue 3 that adds words: that cue alone.
    let (from, to) = range(&cues[3]);
    let text: Vec<String> = cues[3]["words"]
        .as_array()
        .expect("words")
        .iter()
        .map(|w| w["text"].as_str().unwrap_or("").to_string())
        .collect();
    // (Still ending its sentence: a cue that stops ending one changes the next cue's capital.)
    let (last, most) = text.split_last().expect("words");
    let longer = format!(
        "{} and a good many more words than before {last}",
        most.join(" ")
    );
    edit(
        json!({"op": "text", "from": from, "to": to, "text": longer}),
        3,
        1,
        1,
    );
    // Split cue 5 before its second word: exactly two cues.
    let cues = data()["cues"].as_array().expect("cues").clone();
    let (from, _) = range(&cues[5]);
    edit(json!({"op": "split", "at": from + 1}), 5, 1, 2);
    // Merge cues 1 and 2: exactly one.
    let cues = data()["cues"].as_array().expect("cues").clone();
    let (_, to) = range(&cues[1]);
    edit(json!({"op": "merge", "at": to}), 1, 2, 1);
    // A line break in cue 0: that cue, its lines only.
    let cues = data()["cues"].as_array().expect("cues").clone();
    let (from, _) = range(&cues[0]);
    let had = cues[0]["lines"].as_array().map_or(0, Vec::len);
    let after = edit(json!({"op": "linebreak", "at": from + 2}), 0, 1, 1);
    assert_eq!(
        after[0]["lines"].as_array().map(Vec::len),
        Some(had + 1),
        "{}",
        after[0]
    );
    // The last word of cue 6 to cue 7, then back: those two cues.
    let cues = data()["cues"].as_array().expect("cues").clone();
    let (_, to) = range(&cues[6]);
    let moved = cues[6]["words"]
        .as_array()
        .and_then(|w| w.last())
        .expect("word")["text"]
        .clone();
    let after = edit(json!({"op": "movelast", "at": to}), 6, 2, 2);
    assert_eq!(after[7]["words"][0]["text"], moved);
    let after = edit(json!({"op": "movefirst", "at": to - 1}), 6, 2, 2);
    assert_eq!(
        after[6]["words"]
            .as_array()
            .and_then(|w| w.last())
            .map(|w| w["text"].clone()),
        Some(moved)
    );
    // A narrower line: the settings change re-flows nothing the subtitler has edited.
    let before = api_cues();
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"revision": rev, "settings": {"maxCharsPerLine": 20}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    rev = r.json()["transcript"]["revision"]
        .as_i64()
        .expect("revision");
    let lines = |cs: &[Value]| cs.iter().map(|c| c["lines"].clone()).collect::<Vec<_>>();
    assert_eq!(lines(&api_cues()), lines(&before));
    // Laying everything out again is asked for: the dry run says how many cues change and saves
    // nothing; then it is done.
    let n = data()["words"].as_array().map(Vec::len);
    let words = data()["cues"]
        .as_array()
        .and_then(|c| c.last())
        .map(|c| c["to"].clone())
        .expect("cues");
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": rev, "op": "relayout", "from": 0, "to": words, "dryRun": true}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let preview = r.json();
    let changes = preview["changes"].as_u64().expect("changes");
    assert!(changes > 0, "{preview}");
    assert_eq!(
        data()["transcript"]["revision"],
        json!(rev),
        "a dry run saves nothing ({n:?})"
    );
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": rev, "op": "relayout", "from": 0, "to": words}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let after = api_cues();
    assert_eq!(
        after.len() as u64,
        preview["after"].as_u64().expect("after")
    );
    assert!(after.iter().all(|c| c["lines"].as_array().is_some_and(|l| l
        .iter()
        .all(|l| l.as_str().is_some_and(|l| l.chars().count() <= 20)))));
    check_downloads("after laying out again");
}

#[test]
fn an_end_nudged_under_what_reading_pace_needs_is_refused_saying_why_and_writes_no_revision() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    // One cue for both sentences (49 characters: 2.9 s at 17 a second, nearly all it has).
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let at = data["cues"][1]["from"].clone();
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 0, "op": "merge", "at": at}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let cue = r.json()["cues"][0].clone();
    let revisions = || {
        web.get_json(&format!("/editor/{id}/revisions")).json()["revisions"]
            .as_array()
            .map_or(0, |r| r.len())
    };
    let before = revisions();
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 1, "op": "nudge", "from": cue["from"], "to": cue["to"], "edge": "end", "frames": -1}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let msg = r.json()["error"].as_str().unwrap_or_default().to_string();
    assert!(
        msg.contains("end stays at") && msg.contains("characters a second"),
        "{msg}"
    );
    assert_eq!(revisions(), before, "a refused nudge writes no revision");
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    assert_eq!(data["transcript"]["revision"], 1);
    assert_eq!(data["cues"][0]["end"], cue["end"]);
    // A nudge the layout follows is saved, and carries no notice.
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 1, "op": "nudge", "from": cue["from"], "to": cue["to"], "edge": "end", "frames": 1}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json().get("notice").is_none());
    assert_eq!(revisions(), before + 1);
}

#[test]
fn a_typed_time_reaches_the_api_moving_a_neighbour_or_refused_and_nothing_changed_is_no_revision() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let ms = |v: &Value| v.as_i64().expect("ms");
    // The API's cues as (start, end) in ms.
    let api = || -> Vec<(i64, i64)> {
        server
            .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
            .json()["cues"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let t = |k: &str| (c[k].as_f64().expect("time") * 1000.0).round() as i64;
                (t("start"), t("end"))
            })
            .collect()
    };
    let revisions = || {
        web.get_json(&format!("/editor/{id}/revisions")).json()["revisions"]
            .as_array()
            .map_or(0, |r| r.len())
    };
    let before = api();
    assert!(before.len() >= 2, "{before:?}");
    let (c0, c1) = (data["cues"][0].clone(), data["cues"][1].clone());
    let settime = |rev: i64, c: &Value, edge: &str, time: i64| {
        web.post_json(
            &format!("/editor/{id}/edit"),
            &json!({"revision": rev, "op": "settime", "from": c["from"], "to": c["to"], "edge": edge, "time": time}),
        )
    };
    // Cue 2's start two frames later, typed 10 ms off the frame grid: on the grid in the API,
    // every other cue as it was. Its end stays, or moves on for the reading pace the cue needs,
    // which the answer says.
    let start = ms(&c1["start"]) + 80;
    let r = settime(0, &c1, "start", start + 10);
    assert_eq!(r.status, 200, "{}", r.text());
    let after = api();
    assert_eq!(after[1].0, start);
    // Chaining keeps a short gap closed: cue 1's end may follow, which the answer says too.
    let notice = r.json()["notice"].as_str().unwrap_or_default().to_string();
    for (k, edge, moved) in [
        (2, "end", after[1].1 != before[1].1),
        (1, "end", after[0].1 != before[0].1),
    ] {
        assert!(
            !moved || notice.contains(&format!("Cue {k}'s {edge} moved")),
            "{notice}"
        );
    }
    assert_eq!(after[0].0, before[0].0);
    assert_eq!(after[2..], before[2..]);
    let before = after;
    // Cue 1's end typed into cue 2: cue 2 starts the minimum gap (the job's frames, 40 ms each)
    // later, and the answer says so.
    let gap = 40
        * data["settings"]["minFramesBetweenSubtitles"]
            .as_i64()
            .expect("gap");
    let end = start + 40;
    let r = settime(1, &c0, "end", end);
    assert_eq!(r.status, 200, "{}", r.text());
    let notice = r.json()["notice"].as_str().unwrap_or_default().to_string();
    assert!(notice.contains("Cue 2's start moved"), "{notice}");
    let after = api();
    assert_eq!((after[0].1, after[1].0), (end, end + gap));
    // Cue 2 keeps its end, or it moves on for the reading pace it needs, which the answer says.
    assert!(
        after[1].1 == before[1].1 || notice.contains("Cue 2's end moved"),
        "{notice}"
    );
    let history = web.get_json(&format!("/editor/{id}/revisions")).json();
    assert!(
        history["revisions"][0]["note"].as_str().is_some_and(|n| n
            .starts_with("Set cue 1's end to")
            && n.contains("cue 2's start moved")),
        "{history}"
    );
    // Refused: an end past the next cue's end (it would be left no time), a start after its own
    // end, a time that is not one. No revision is written and the API is unchanged.
    let n = revisions();
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let (c0, c1) = (data["cues"][0].clone(), data["cues"][1].clone());
    let r = settime(2, &c0, "end", ms(&c1["end"]) + 400);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("cue 2 ends at"), "{}", r.text());
    let r = settime(2, &c1, "start", ms(&c1["end"]) + 40);
    assert_eq!(r.status, 400, "{}", r.text());
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 2, "op": "settime", "from": c0["from"], "to": c0["to"], "edge": "end", "time": "soon"}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    // Nothing to change: the time it has, a nudge of no frames, a text as it is.
    let r = settime(2, &c0, "end", ms(&c0["end"]));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("nothing to change"), "{}", r.text());
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 2, "op": "nudge", "from": c0["from"], "to": c0["to"], "edge": "end", "frames": 0}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let text = c0["words"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w["text"].as_str().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 2, "op": "text", "from": c0["from"], "to": c0["to"], "text": text}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("changes nothing"), "{}", r.text());
    assert_eq!(revisions(), n);
    assert_eq!(
        web.get_json(&format!("/editor/{id}/data")).json()["transcript"]["revision"],
        2
    );
    assert_eq!(api(), after);
}

#[test]
fn settings_changes_are_revisions_that_undo_and_restore_bring_back() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let longest = |s: &Server| -> usize {
        s.get(&org.key, &format!("/v1/jobs/{id}/transcript")).json()["cues"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["lines"].as_array().cloned().unwrap_or_default())
            .map(|l| l.as_str().unwrap_or("").chars().count())
            .max()
            .unwrap_or(0)
    };
    assert!(longest(&server) > 16);
    // Revision 1: 16 characters a line.
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"revision": 0, "settings": {"maxCharsPerLine": 16}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let d = r.json();
    assert_eq!(d["transcript"]["revision"], 1);
    assert!(longest(&server) <= 16);
    // A stale page's settings change is a conflict, like an edit.
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"revision": 0, "settings": {"maxCharsPerLine": 20}}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    // Revision 2: a word edited.
    let first = d["cues"][0].clone();
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 1, "op": "text", "from": first["from"], "to": first["to"], "text": "Hello there."}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let history = web.get_json(&format!("/editor/{id}/revisions")).json();
    let notes: Vec<String> = history["revisions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["note"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n == "Layout settings: maxCharsPerLine 16"),
        "{notes:?}"
    );
    // Restore revision 0: the words and the settings as they were.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 2, "restore": 0}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["maxCharsPerLine"], 42);
    assert!(longest(&server) > 16);
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    assert!(text.starts_with("Hello world."), "{text}");
    // Restore revision 2 (a redo): the edit and 16 characters again.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 3, "restore": 2, "note": "redo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["maxCharsPerLine"], 16);
    assert!(longest(&server) <= 16);
    let text = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript?format=text"))
        .text();
    assert!(text.starts_with("Hello there."), "{text}");
    // A stale page's restore of revision 0 is a conflict and changes neither the words nor the
    // settings (they are saved together, in one transaction).
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 3, "restore": 0}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(longest(&server) <= 16);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    assert_eq!(data["settings"]["maxCharsPerLine"], 16);
    assert_eq!(data["transcript"]["revision"], 4);
}

#[test]
fn an_undone_settings_change_stays_undone_after_another_edit_and_its_undo() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let chars = |web: &Web| -> Value {
        web.get_json(&format!("/editor/{id}/data")).json()["settings"]["maxCharsPerLine"].clone()
    };
    // 1: 16 characters a line; 2: undone (back to revision 0, 42 characters).
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"revision": 0, "settings": {"maxCharsPerLine": 16}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 1, "restore": 0, "note": "undo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(chars(&web), 42);
    // 3: a text edit; 4: that edit undone (back to revision 2). The settings of revision 2 are
    // the undone ones: 42, not the 16 of revision 1.
    let c = r.json()["cues"][0].clone();
    let r = web.post_json(
        &format!("/editor/{id}/edit"),
        &json!({"revision": 2, "op": "text", "from": c["from"], "to": c["to"], "text": "Hello there."}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(chars(&web), 42);
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 3, "restore": 2, "note": "undo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["maxCharsPerLine"], 42);
    // A reload (a fresh read) shows the same.
    assert_eq!(chars(&web), 42);
    // Redo of revision 1 brings 16 back, and restoring revision 2 then 42 again.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 4, "restore": 1, "note": "redo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(chars(&web), 16);
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 5, "restore": 2}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(chars(&web), 42);
}

/// The cues of an SRT or WebVTT file as (start, end) in milliseconds, and the file's other lines.
fn timings(file: &str) -> (Vec<(i64, i64)>, Vec<String>) {
    let ms = |t: &str| -> i64 {
        let t = t.trim().replace(',', ".");
        let (hms, frac) = t.split_once('.').expect("milliseconds");
        let secs = hms
            .split(':')
            .fold(0i64, |acc, p| acc * 60 + p.parse::<i64>().expect("time"));
        secs * 1000 + frac.parse::<i64>().expect("ms")
    };
    let mut cues = Vec::new();
    let mut other = Vec::new();
    for line in file.lines() {
        match line.split_once(" --> ") {
            Some((a, b)) => {
                let (end, rest) = b.split_once(' ').unwrap_or((b, ""));
                cues.push((ms(a), ms(end)));
                // What follows the end time (WebVTT cue settings) stays the same too.
                other.push(format!("--> {rest}"));
            }
            None => other.push(line.to_string()),
        }
    }
    (cues, other)
}

#[test]
fn the_projects_lead_in_moves_the_editors_downloads_only_and_undo_takes_it_back() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    let id = ready_job(&server, &org.key, "talk", &server.tone(3), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    // Short lines and cues of 0.6 s at most, so that the test transcript has several cues with
    // room before some of them, and 1 frame between them (revision 1).
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"settings": {"maxCharsPerLine": 12, "maxLinesPerSubtitle": 1, "minFramesBetweenSubtitles": 1, "maxDuration": 0.6}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["inCueLeadInFrames"], 0);
    let api = |f: &str| server.get(&org.key, &format!("/v1/jobs/{id}/subtitles?format={f}"));
    let ours = |f: &str| web.get(&format!("/editor/{id}/download?format={f}"));
    let before: Vec<Vec<u8>> = FORMATS.iter().map(|f| api(f).body).collect();
    let transcript = server
        .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
        .json();
    let job = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    for (f, b) in FORMATS.iter().zip(&before) {
        assert_eq!(&ours(f).body, b, "lead-in 0: the editor's {f} is the API's");
    }

    // Out of range, or not a whole number of frames: refused, naming the setting and its range.
    for bad in [json!(26), json!(-1), json!(2.5), json!("3"), json!(null)] {
        let r = web.post_json(
            &format!("/editor/{id}/settings"),
            &json!({"settings": {"inCueLeadInFrames": bad}}),
        );
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        let msg = r.json()["error"].as_str().unwrap_or("").to_string();
        assert!(
            msg.contains("settings.inCueLeadInFrames") && msg.contains("0 to 25"),
            "{bad}: {msg}"
        );
    }
    // Not one of the API's settings: a job cannot be created with it.
    let created = server.create_job(
        &org.key,
        &json!({"filename": "m", "contentType": "audio/wav", "sizeBytes": 10, "durationSeconds": 3,
                "settings": {"inCueLeadInFrames": 3}}),
    );
    assert_eq!(created.status, 400, "{}", created.text());
    assert!(
        created.text().contains("inCueLeadInFrames"),
        "{}",
        created.text()
    );

    // Revision 2: a lead-in of 3 frames.
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"revision": 1, "settings": {"inCueLeadInFrames": 3}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let d = r.json();
    assert_eq!(d["settings"]["inCueLeadInFrames"], 3);
    assert_eq!(d["transcript"]["revision"], 2);
    // The editor's own cues still start at their first words; the API's downloads, transcript and
    // job are as they were.
    assert_eq!(
        server
            .get(&org.key, &format!("/v1/jobs/{id}/transcript"))
            .json(),
        transcript
    );
    let now = server.get(&org.key, &format!("/v1/jobs/{id}")).json();
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&now), keys(&job));
    assert_eq!(now["settings"], job["settings"]);
    assert!(!now.to_string().contains("LeadIn"), "{now}");
    for (f, b) in FORMATS.iter().zip(&before) {
        assert_eq!(&api(f).body, b, "the API's {f} is unchanged");
    }
    // SRT and WebVTT from the editor: only cue starts differ, each 0 to 3 whole frames (40 ms at
    // 25 fps) earlier, never before 0 and never within 1 frame (minFramesBetweenSubtitles) of the
    // previous cue's end.
    for f in ["srt", "vtt"] {
        let (theirs, their_lines) = timings(&api(f).text());
        let mine = ours(f);
        assert_eq!(mine.status, 200);
        assert_eq!(mine.header("content-type"), api(f).header("content-type"));
        assert_eq!(
            mine.header("content-disposition"),
            api(f).header("content-disposition")
        );
        let (mine, my_lines) = timings(&mine.text());
        assert_eq!(my_lines, their_lines, "{f}: text and numbering unchanged");
        assert_eq!(mine.len(), theirs.len());
        assert!(theirs.len() >= 3, "{f}: {theirs:?}");
        let (mut moved, mut moved_after) = (0, 0);
        for (k, (m, t)) in mine.iter().zip(&theirs).enumerate() {
            assert_eq!(m.1, t.1, "{f} cue {k}: the end stays");
            let earlier = t.0 - m.0;
            assert!(
                (0..=120).contains(&earlier) && earlier % 40 == 0,
                "{f} cue {k}: {earlier} ms"
            );
            assert!(m.0 >= 0);
            if k > 0 {
                let prev_end = mine[k - 1].1;
                assert!(m.0 >= prev_end, "{f} cue {k} overlaps the one before");
                if earlier > 0 {
                    assert!(m.0 >= prev_end + 40, "{f} cue {k} moved into the gap");
                    moved_after += usize::from(earlier < 120 || m.0 == prev_end + 40);
                }
            }
            moved += usize::from(earlier > 0);
        }
        // The first cue starts at 0 (3 frames from 120 ms); a later one moves as far as the gap
        // lets it (1200 -> 1160 ms after a cue ending at 1120 ms).
        assert_eq!((mine[0].0, theirs[0].0), (0, 120), "{f}");
        assert!(moved > 1 && moved_after > 0, "{f}: {mine:?} {theirs:?}");
    }
    // Every other format changes too, the API's never.
    for f in FORMATS {
        assert_ne!(ours(f).body, api(f).body, "{f}");
    }
    let history = web.get_json(&format!("/editor/{id}/revisions")).json();
    assert_eq!(
        history["revisions"][0]["note"], "Layout settings: inCueLeadInFrames 3",
        "{history}"
    );

    // Undo (restore revision 1): no lead-in, the editor's download is the API's again.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 2, "restore": 1, "note": "undo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["inCueLeadInFrames"], 0);
    for (f, b) in FORMATS.iter().zip(&before) {
        assert_eq!(&ours(f).body, b, "after undo: {f}");
    }
    // Redo, then 0 set in the panel: the same.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 3, "restore": 2, "note": "redo"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["inCueLeadInFrames"], 3);
    assert_ne!(ours("srt").body, before[0]);
    // A stale restore changes neither the words nor the lead-in.
    let r = web.post_json(
        &format!("/editor/{id}/restore"),
        &json!({"revision": 3, "restore": 1, "note": "undo"}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    let d = web.get_json(&format!("/editor/{id}/data")).json();
    assert_eq!(d["settings"]["inCueLeadInFrames"], 3, "{}", d["settings"]);
    assert_ne!(ours("srt").body, before[0]);
    let r = web.post_json(
        &format!("/editor/{id}/settings"),
        &json!({"revision": 4, "settings": {"inCueLeadInFrames": 0, "maxCharsPerLine": 12, "maxDuration": 0.6}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["settings"]["inCueLeadInFrames"], 0);
    for (f, b) in FORMATS.iter().zip(&before) {
        assert_eq!(&ours(f).body, b, "lead-in 0 again: {f}");
        assert_eq!(&api(f).body, b, "{f}");
    }
}

#[test]
fn the_timeline_reads_pieces_of_the_peak_pyramid_not_the_whole_waveform() {
    let server = Server::start(&[]);
    let org = server.org(1000, &[]);
    // 60 s: 3,000 peaks at 50 a second, and one coarser level of 750 (each the largest of 4).
    let id = ready_job(&server, &org.key, "talk", &server.tone(60), "audio/wav");
    let web = Web::sign_in(&server, &org.owner);
    let data = web.get_json(&format!("/editor/{id}/data")).json();
    let peaks = &data["peaks"];
    assert_eq!(peaks["perSecond"], 50, "{peaks}");
    assert_eq!(peaks["factor"], 4, "{peaks}");
    let levels: Vec<u64> = peaks["levels"]
        .as_array()
        .expect("levels")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(levels.len(), 2, "{peaks}");
    let n0 = levels[0] as usize;
    assert!((2990..=3010).contains(&n0), "{peaks}");
    assert_eq!(levels[1] as usize, n0.div_ceil(4));
    let url = peaks["url"].as_str().expect("url");
    // Level 0 whole, as a page without the pyramid reads it.
    let whole = web.get(url);
    assert_eq!(whole.status, 200);
    assert_eq!(whole.body.len(), n0);
    assert!(whole.body.iter().any(|&v| v > 0), "a tone has a waveform");
    // A piece of level 0 is those bytes; level 1 is the largest of every 4.
    let piece = web.get(&format!("{url}?level=0&from=100&count=50"));
    assert_eq!(piece.status, 200);
    assert_eq!(piece.body, whole.body[100..150]);
    let level1 = web.get(&format!("{url}?level=1&from=0&count=2048"));
    assert_eq!(level1.status, 200);
    assert_eq!(level1.body.len(), levels[1] as usize);
    for (i, v) in level1.body.iter().enumerate() {
        let below = &whole.body[i * 4..(i * 4 + 4).min(n0)];
        assert_eq!(*v, *below.iter().max().expect("values"), "value {i}");
    }
    // Past the end is empty; a level the pyramid has not is 404; nonsense is 400.
    let past = web.get(&format!("{url}?level=1&from=100000&count=10"));
    assert_eq!((past.status, past.body.len()), (200, 0));
    assert_eq!(
        web.get(&format!("{url}?level=2&from=0&count=10")).status,
        404
    );
    for bad in ["level=x", "level=0&from=-1", "level=0&count=70000"] {
        assert_eq!(web.get(&format!("{url}?{bad}")).status, 400, "{bad}");
    }
}
