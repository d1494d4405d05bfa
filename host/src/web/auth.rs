//! Sign-in: one-time links (printed by `cuecraft admin member login-link`, 15 minutes, single
//! use), passwords a member sets on the account page, sessions in an HttpOnly cookie, sign-out.
//!
//! A link opens a confirmation page whose button uses the link (a POST), so a mail scanner or
//! chat preview that fetches the link does not spend it. The sign-in forms have no session yet,
//! so their CSRF token is a double-submit cookie (`SameSite=Strict`) matched by a form field.

use std::sync::Arc;

use crate::http::{App, Body};
use crate::store::Session;
use crate::util::{hex, now_ms, random_bytes};
use hyper::Response;

use super::{
    check_csrf, cookie, db, esc, field, html, page, password, redirect, require_session,
    session_of, set_cookie, WebError, WebRequest, PRE_COOKIE, SESSION_COOKIE,
};

/// Where to go after signing in: a local path only (never another site).
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n.to_string(),
        _ => "/projects".to_string(),
    }
}

/// The pre-session CSRF token: the cookie's when it has one, else a new one to set.
fn pre_token(req: &WebRequest) -> Result<(String, bool), WebError> {
    match req.cookie(PRE_COOKIE) {
        Some(t) if crate::store::is_token(&t) => Ok((t, false)),
        _ => Ok((hex(&random_bytes::<32>()?), true)),
    }
}

fn check_pre(req: &WebRequest) -> Result<(), WebError> {
    let cookie = req.cookie(PRE_COOKIE).unwrap_or_default();
    let form = req.form();
    let sent = field(&form, "_csrf").unwrap_or_default();
    if cookie.is_empty() || !password::constant_time_eq(cookie.as_bytes(), sent.as_bytes()) {
        return Err(WebError::Csrf);
    }
    Ok(())
}

fn with_pre(app: &App, mut resp: Response<Body>, token: &str, new: bool) -> Response<Body> {
    if new {
        set_cookie(
            &mut resp,
            &cookie(app, PRE_COOKIE, token, "/login", "Strict", 3600),
        );
    }
    resp
}

/// GET /login: the password form, and how to get a sign-in link.
pub async fn login_page(
    app: &Arc<App>,
    req: &WebRequest,
    problem: Option<&str>,
) -> Result<Response<Body>, WebError> {
    if problem.is_none() && session_of(app, req).await?.is_some() {
        return Ok(redirect("/projects"));
    }
    let (token, new) = pre_token(req)?;
    let params = req.params();
    let next = safe_next(field(&params, "next").or(field(&req.form(), "next")));
    let problem = problem
        .map(|p| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(p)))
        .unwrap_or_default();
    let body = format!(
        "<section class=\"signin\"><h1>Sign in</h1>{problem}\
         <form method=\"post\" action=\"/login\">\
         <input type=\"hidden\" name=\"_csrf\" value=\"{token}\">\
         <input type=\"hidden\" name=\"next\" value=\"{next}\">\
         <label>E-mail <input type=\"email\" name=\"email\" autocomplete=\"username\" required autofocus></label>\
         <label>Password <input type=\"password\" name=\"password\" autocomplete=\"current-password\" required></label>\
         <button type=\"submit\">Sign in</button></form>\
         <p class=\"hint\">No password yet? An owner prints you a one-time sign-in link with \
         <code>cuecraft admin member login-link --member ID</code> (valid 15 minutes); \
         set a password on your account page once signed in.</p></section>",
        next = esc(&next),
    );
    let status = if problem.is_empty() { 200 } else { 401 };
    Ok(with_pre(
        app,
        html(status, page("Sign in", None, &body, &[])),
        &token,
        new,
    ))
}

/// Starts a session for `member_id` and redirects to `next`.
async fn start_session(
    app: &Arc<App>,
    member_id: String,
    next: &str,
) -> Result<Response<Body>, WebError> {
    let (token, _csrf) = db(app, move |c| Ok(c.create_session(&member_id, now_ms())?)).await?;
    let mut resp = redirect(next);
    set_cookie(
        &mut resp,
        &cookie(
            app,
            SESSION_COOKIE,
            &token,
            "/",
            "Lax",
            crate::store::SESSION_TTL_MS / 1000,
        ),
    );
    set_cookie(
        &mut resp,
        &cookie(app, PRE_COOKIE, "", "/login", "Strict", 0),
    );
    Ok(resp)
}

/// POST /login: e-mail and password.
pub async fn password_login(app: &Arc<App>, req: &WebRequest) -> Result<Response<Body>, WebError> {
    check_pre(req)?;
    let form = req.form();
    let email = field(&form, "email").unwrap_or_default().trim().to_string();
    let pw = field(&form, "password").unwrap_or_default().to_string();
    let next = safe_next(field(&form, "next"));
    let candidates = db(app, move |c| Ok(c.password_candidates(&email)?)).await?;
    // Hashing is slow on purpose: off the async workers.
    let found = tokio::task::spawn_blocking(move || {
        candidates.into_iter().find_map(|(id, hash)| {
            let v = password::verify(&pw, &hash);
            // A hash of an earlier scheme (PBKDF2) or weaker parameters is replaced by an
            // Argon2id hash of the password just proven.
            v.ok.then(|| (id, v.rehash.then(|| password::hash(&pw).ok()).flatten()))
        })
    })
    .await
    .map_err(|e| WebError::Internal(e.to_string()))?;
    match found {
        Some((id, rehashed)) => {
            if let Some(hash) = rehashed {
                let member = id.clone();
                // A failure keeps the old hash, which still verifies: the next sign-in tries again.
                if let Err(e) = db(app, move |c| Ok(c.set_password(&member, &hash)?)).await {
                    tracing::warn!(member = %id, "could not upgrade a password hash: {e:?}");
                } else {
                    tracing::info!(member = %id, "password hash upgraded to Argon2id");
                }
            }
            start_session(app, id, &next).await
        }
        None => {
            login_page(
                app,
                req,
                Some("That e-mail address and password do not match."),
            )
            .await
        }
    }
}

/// GET /login/{token}: the confirmation page of a sign-in link.
pub async fn link_page(
    app: &Arc<App>,
    req: &WebRequest,
    token: &str,
) -> Result<Response<Body>, WebError> {
    let t = token.to_string();
    let usable = db(app, move |c| Ok(c.login_link_usable(&t, now_ms())?)).await?;
    if !usable {
        let body = "<section class=\"signin\"><h1>This sign-in link cannot be used</h1>\
            <p>Sign-in links work once and for 15 minutes. Ask an owner for a new one, or \
            <a href=\"/login\">sign in with your password</a>.</p></section>";
        return Ok(html(
            410,
            page("Sign-in link used or expired", None, body, &[]),
        ));
    }
    let (pre, new) = pre_token(req)?;
    let body = format!(
        "<section class=\"signin\"><h1>Sign in to cuecraft</h1>\
         <form method=\"post\" action=\"/login/{token}\">\
         <input type=\"hidden\" name=\"_csrf\" value=\"{pre}\">\
         <button type=\"submit\" id=\"use-link\" autofocus>Continue</button></form>\
         <p class=\"hint\">This link works once.</p></section>",
        token = esc(token),
    );
    Ok(with_pre(
        app,
        html(200, page("Sign in", None, &body, &[])),
        &pre,
        new,
    ))
}

/// POST /login/{token}: uses the link and starts a session.
pub async fn link_login(
    app: &Arc<App>,
    req: &WebRequest,
    token: &str,
) -> Result<Response<Body>, WebError> {
    check_pre(req)?;
    let t = token.to_string();
    let member = db(app, move |c| Ok(c.consume_login_link(&t, now_ms())?)).await?;
    match member {
        Some(m) => start_session(app, m.id, "/projects").await,
        None => {
            let body = "<section class=\"signin\"><h1>This sign-in link cannot be used</h1>\
                <p>Sign-in links work once and for 15 minutes. Ask an owner for a new one.</p></section>";
            Ok(html(
                410,
                page("Sign-in link used or expired", None, body, &[]),
            ))
        }
    }
}

/// POST /logout.
pub async fn logout(app: &Arc<App>, req: &WebRequest) -> Result<Response<Body>, WebError> {
    let session = require_session(app, req).await?;
    check_csrf(req, &session)?;
    if let Some(token) = req.cookie(SESSION_COOKIE) {
        db(app, move |c| Ok(c.delete_session(&token)?)).await?;
    }
    let mut resp = redirect("/login");
    set_cookie(&mut resp, &cookie(app, SESSION_COOKIE, "", "/", "Lax", 0));
    Ok(resp)
}

fn account_body(session: &Session, note: Option<&str>) -> String {
    let note = note
        .map(|n| format!("<p class=\"notice\" role=\"status\">{}</p>", esc(n)))
        .unwrap_or_default();
    format!(
        "<section class=\"account\"><h1>Your account</h1>{note}\
         <dl><dt>E-mail</dt><dd>{email}</dd><dt>Organisation</dt><dd>{org}</dd>\
         <dt>Role</dt><dd>{role}</dd></dl>\
         <h2>Password</h2><form method=\"post\" action=\"/account/password\">\
         <input type=\"hidden\" name=\"_csrf\" value=\"{csrf}\">\
         <label>New password (at least {min} characters) \
         <input type=\"password\" name=\"password\" autocomplete=\"new-password\" minlength=\"{min}\" required></label>\
         <button type=\"submit\">Set password</button></form></section>",
        email = esc(&session.member.email),
        org = esc(&session.member.org_name),
        role = esc(&session.member.role),
        csrf = esc(&session.csrf),
        min = password::MIN_LEN,
    )
}

/// GET /account.
pub async fn account_page(app: &Arc<App>, req: &WebRequest) -> Result<Response<Body>, WebError> {
    let session = require_session(app, req).await?;
    let saved = field(&req.params(), "saved").is_some();
    let body = account_body(&session, saved.then_some("Password saved."));
    Ok(html(200, page("Account", Some(&session), &body, &[])))
}

/// POST /account/password.
pub async fn set_password(app: &Arc<App>, req: &WebRequest) -> Result<Response<Body>, WebError> {
    let session = require_session(app, req).await?;
    check_csrf(req, &session)?;
    let form = req.form();
    let pw = field(&form, "password").unwrap_or_default().to_string();
    if pw.chars().count() < password::MIN_LEN {
        let body = account_body(
            &session,
            Some(&format!(
                "A password needs at least {} characters.",
                password::MIN_LEN
            )),
        );
        return Ok(html(400, page("Account", Some(&session), &body, &[])));
    }
    let hash = tokio::task::spawn_blocking(move || password::hash(&pw))
        .await
        .map_err(|e| WebError::Internal(e.to_string()))??;
    let id = session.member.id.clone();
    db(app, move |c| Ok(c.set_password(&id, &hash)?)).await?;
    Ok(redirect("/account?saved=1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_followed_after_sign_in() {
        assert_eq!(safe_next(Some("/editor/abc")), "/editor/abc");
        assert_eq!(safe_next(Some("//evil.example/")), "/projects");
        assert_eq!(safe_next(Some("https://evil.example/")), "/projects");
        assert_eq!(safe_next(Some("/\\evil.example")), "/projects");
        assert_eq!(safe_next(None), "/projects");
    }
}
