//! The HTTP server: routing, authentication, the rate limit, response hygiene and graceful
//! shutdown. Handlers live in `crate::api` (one module per resource) and `crate::web`.

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Method, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::http::error::ApiError;
use crate::http::{admit, error_response, App, Body, RequestId};
use crate::ops::log::SafePath;
use crate::util::{is_api_key_shape, sha256};

/// The API's routes under `/v1`, as (method, path template). The router, the `Allow` header and
/// the OpenAPI check all read this one table.
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/jobs"),
    ("GET", "/jobs/{jobId}"),
    ("GET", "/jobs/{jobId}/transcript"),
    ("GET", "/jobs/{jobId}/subtitles"),
    ("GET", "/openapi.json"),
];

/// The presigned upload route, outside `/v1` because it is not an API path.
pub const UPLOAD_ROUTE: (&str, &str) = ("PUT", "/upload/{jobId}");

/// Routes that are answered without an API key.
const PUBLIC_ROUTES: &[&str] = &["/openapi.json"];

/// Whether `path` matches `template` (`{x}` matches one non-empty segment); the captured segment.
fn match_template<'a>(template: &str, path: &'a str) -> Option<Option<&'a str>> {
    let mut t = template.split('/');
    let mut p = path.split('/');
    let mut captured = None;
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(captured),
            (Some(ts), Some(ps)) => {
                if ts.starts_with('{') && ts.ends_with('}') {
                    if ps.is_empty() {
                        return None;
                    }
                    captured = Some(ps);
                } else if ts != ps {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

/// A matched route: its template and the captured job id, if any.
#[derive(Debug, PartialEq, Eq)]
pub struct Matched<'a> {
    /// The route template, as in [`ROUTES`].
    pub template: &'static str,
    /// The `{jobId}` segment.
    pub id: Option<&'a str>,
    /// Whether the route is the upload route.
    pub upload: bool,
}

/// Finds the route for `method` and `path`: `not_found` when no template matches the path,
/// `method_not_allowed` (with the allowed methods) when one does for another method.
pub fn route<'a>(method: &str, path: &'a str) -> Result<Matched<'a>, ApiError> {
    let (table, rest, upload): (&[(&str, &'static str)], &str, bool) =
        if let Some(rest) = path.strip_prefix("/v1") {
            (ROUTES, rest, false)
        } else {
            (std::slice::from_ref(&UPLOAD_ROUTE), path, true)
        };
    let mut allowed = Vec::new();
    for &(m, template) in table {
        if let Some(id) = match_template(template, rest) {
            if m == method {
                return Ok(Matched {
                    template,
                    id,
                    upload,
                });
            }
            allowed.push(m);
            // `handle` answers HEAD wherever GET is routed.
            if m == "GET" {
                allowed.push("HEAD");
            }
        }
    }
    if allowed.is_empty() {
        Err(ApiError::NotFound)
    } else {
        Err(ApiError::MethodNotAllowed {
            allow: allowed.join(", "),
        })
    }
}

/// The SHA-256 of the bearer key of `headers`: `missing_api_key` / `malformed_api_key`. Pure, so
/// it answers before any database work.
fn bearer_key_hash(headers: &HeaderMap) -> Result<Vec<u8>, ApiError> {
    let Some(value) = headers.get(hyper::header::AUTHORIZATION) else {
        return Err(ApiError::MissingApiKey);
    };
    let value = value
        .to_str()
        .map_err(|_| ApiError::MalformedApiKey)?
        .trim();
    if value.is_empty() {
        return Err(ApiError::MissingApiKey);
    }
    let (scheme, key) = value.split_once(' ').ok_or(ApiError::MalformedApiKey)?;
    let key = key.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || !is_api_key_shape(key) {
        return Err(ApiError::MalformedApiKey);
    }
    Ok(sha256(key.as_bytes()))
}

async fn dispatch(app: Arc<App>, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    if crate::web::owns(&path) {
        return crate::web::handle(app, req).await;
    }
    let matched = route(method.as_str(), &path)?;
    let id = matched.id.map(str::to_string);
    if matched.upload {
        return crate::api::uploads::put(app, req, id.unwrap_or_default(), &query).await;
    }
    if PUBLIC_ROUTES.contains(&matched.template) {
        return Ok(crate::api::openapi::openapi_response());
    }
    let key_hash = bearer_key_hash(req.headers())?;
    if (&method, matched.template) == (&Method::GET, "/jobs/{jobId}") {
        // The polling hot path: key lookup, rate limit and job load in one database trip.
        return crate::api::jobs::get(app, key_hash, id.unwrap_or_default()).await;
    }
    let state = app.clone();
    let caller = app
        .db(move |store| {
            let caller = store.find_key(&key_hash)?.ok_or(ApiError::InvalidApiKey)?;
            admit(&state, &caller)?;
            Ok(caller)
        })
        .await?;
    match (method, matched.template) {
        (Method::POST, "/jobs") => crate::api::jobs::create(app, caller, req).await,
        (Method::GET, "/jobs/{jobId}/transcript") => {
            crate::api::results::transcript(
                app,
                caller,
                id.unwrap_or_default(),
                &query,
                req.headers(),
            )
            .await
        }
        (Method::GET, "/jobs/{jobId}/subtitles") => {
            crate::api::results::subtitles(app, caller, id.unwrap_or_default(), &query).await
        }
        _ => Err(ApiError::NotFound),
    }
}

/// Answers one request: every response, error or not, carries `Cache-Control: no-store`.
///
/// HEAD is answered here for every route at once (RFC 9110 9.3.2): the request is handled as a
/// GET, and the response keeps its status and headers, `Content-Length` included, without a body.
pub async fn handle(
    app: Arc<App>,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    if crate::http::health::owns(&path) {
        // Before the key, the rate limit and the web application: a probe needs none of them.
        let mut resp =
            respond(async { Ok(crate::http::health::answer(&app.health, &method, &path).await) })
                .await;
        if method == Method::HEAD {
            without_body(&mut resp);
        }
        return Ok(resp);
    }
    if method == Method::HEAD {
        *req.method_mut() = Method::GET;
    }
    let given = req
        .headers()
        .get(X_REQUEST_ID)
        .and_then(|v| v.to_str().ok());
    let id = crate::ops::log::request_id(given, app.config.trust_request_id);
    req.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!("request", request_id = %id);
    let started = std::time::Instant::now();
    let mut resp = respond(dispatch(app, req)).instrument(span.clone()).await;
    if method == Method::HEAD {
        without_body(&mut resp);
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(X_REQUEST_ID, value);
    }
    crate::ops::metrics::http_request(
        route_label(&method, &path, resp.status().as_u16()),
        method.as_str(),
        resp.status().as_u16(),
        started.elapsed(),
    );
    span.in_scope(|| {
        tracing::info!(
            %method,
            path = %SafePath(&path),
            status = resp.status().as_u16(),
            ms = started.elapsed().as_millis() as u64,
            "request"
        )
    });
    Ok(resp)
}

/// The route of a request as the metrics label it: the API's and the upload's route templates,
/// the web application's pages by their first segment; everything unmatched as one label, so a
/// scan of random paths adds no series.
fn route_label(method: &Method, path: &str, status: u16) -> &'static str {
    if !crate::web::owns(path) {
        return match route(method.as_str(), path) {
            Ok(m) if m.upload => "/upload/{jobId}",
            Ok(m) => ROUTE_LABELS
                .iter()
                .find(|(t, _)| *t == m.template)
                .map_or("/v1", |(_, label)| label),
            Err(_) => "unmatched",
        };
    }
    if status == 404 || status == 405 {
        return "unmatched";
    }
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    WEB_LABELS
        .iter()
        .find(|(segment, _)| *segment == first)
        .map_or("web", |(_, label)| label)
}

/// [`ROUTES`] with their `/v1` prefix, as `&'static str` labels.
const ROUTE_LABELS: &[(&str, &str)] = &[
    ("/jobs", "/v1/jobs"),
    ("/jobs/{jobId}", "/v1/jobs/{jobId}"),
    ("/jobs/{jobId}/transcript", "/v1/jobs/{jobId}/transcript"),
    ("/jobs/{jobId}/subtitles", "/v1/jobs/{jobId}/subtitles"),
    ("/openapi.json", "/v1/openapi.json"),
];

/// The web application's areas, by the first segment of the path.
const WEB_LABELS: &[(&str, &str)] = &[
    ("", "/"),
    ("account", "/account"),
    ("login", "/login"),
    ("logout", "/logout"),
    ("projects", "/projects"),
    ("editor", "/editor"),
    ("assets", "/assets"),
];

/// The request id header: taken from a trusted proxy (`--trust-request-id`), always answered.
pub const X_REQUEST_ID: &str = "x-request-id";

/// Drops the body of `resp`, its length kept in `Content-Length` as a GET would have sent it.
fn without_body(resp: &mut Response<Body>) {
    use hyper::body::Body as _;
    let len = resp.body().size_hint().exact().unwrap_or(0);
    resp.headers_mut()
        .insert(hyper::header::CONTENT_LENGTH, HeaderValue::from(len));
    *resp.body_mut() = Body::empty();
}

/// The one place every application response passes through: the handler's response, the JSON
/// error of its error, or a JSON 500 `internal_error` when it panicked (rather than a connection
/// closed without an answer); each with `Cache-Control: no-store`.
///
/// A request hyper could not parse never reaches hyper: `front` answers it with the same JSON
/// errors. A connection whose request head does not arrive within the header read timeout is
/// closed without a response.
pub async fn respond(
    handler: impl Future<Output = Result<Response<Body>, ApiError>>,
) -> Response<Body> {
    let mut resp = match CatchPanic(Box::pin(handler)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => error_response(&e),
        Err(why) => error_response(&ApiError::Internal(format!("handler panicked: {why}"))),
    };
    resp.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Polls a future, turning a panic inside it into `Err(message)`.
struct CatchPanic<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        // The future is not polled again after a panic, so no broken state is observed.
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Err(payload) => {
                let why = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Poll::Ready(Err(why))
            }
        }
    }
}

/// Serves `listener` until `shutdown` completes, then lets open connections finish (up to 10 s).
pub async fn run(listener: TcpListener, app: Arc<App>, shutdown: impl Future<Output = ()>) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        while conns.try_join_next().is_some() {}
        let (stream, _) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: wait a little rather than spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let mut stop = stop_rx.clone();
        conns.spawn(async move {
            let svc = service_fn(move |req| handle(app.clone(), req));
            let conn = http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                // A refused head ends the input hyper sees (`front`): the requests before it are
                // still answered, then the refusal.
                .half_close(true)
                .max_buf_size(1 << 20)
                .serve_connection(TokioIo::new(crate::http::front::Front::new(stream)), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    let _ = stop_tx.send(true);
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(10), drain)
        .await
        .is_err()
    {
        tracing::warn!("connections still open after 10 s; closing them");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::openapi::{openapi_response, OPENAPI};
    use crate::http::json_response;
    use hyper::header::CONTENT_TYPE;

    #[test]
    fn every_route_has_its_own_metrics_label_and_unknown_paths_share_one() {
        for (method, template) in ROUTES {
            let path = format!(
                "/v1{}",
                template.replace("{jobId}", "0123456789abcdef01234567")
            );
            let method = Method::from_bytes(method.as_bytes()).expect("method");
            assert_eq!(route_label(&method, &path, 200), format!("/v1{template}"));
        }
        let id = "0123456789abcdef01234567";
        assert_eq!(
            route_label(&Method::PUT, &format!("/upload/{id}"), 200),
            "/upload/{jobId}"
        );
        assert_eq!(
            route_label(&Method::GET, "/v1/nothing/here", 404),
            "unmatched"
        );
        assert_eq!(
            route_label(&Method::GET, "/wp-admin/x.php", 404),
            "unmatched"
        );
        assert_eq!(
            route_label(&Method::GET, &format!("/editor/{id}/data"), 200),
            "/editor"
        );
        assert_eq!(
            route_label(&Method::GET, &format!("/login/{}", "ab".repeat(32)), 200),
            "/login"
        );
    }
    use hyper::StatusCode;
    use serde_json::Value;
    use std::collections::{BTreeMap, BTreeSet};

    fn openapi() -> Value {
        serde_json::from_str(OPENAPI).expect("host/openapi.json is JSON")
    }

    /// Every (METHOD, path) of the document: API paths relative to `/v1`, the upload path at the
    /// root (it carries its own `servers`).
    fn documented_routes(doc: &Value) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
                if item.get(method).is_some() {
                    out.insert((method.to_ascii_uppercase(), path.clone()));
                }
            }
        }
        out
    }

    #[test]
    fn openapi_paths_and_methods_match_the_router() {
        let doc = openapi();
        assert!(doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")));
        assert_eq!(doc["info"]["version"], "1.0.0");
        let mut routed: BTreeSet<(String, String)> = ROUTES
            .iter()
            .map(|(m, p)| (m.to_string(), p.to_string()))
            .collect();
        routed.insert((UPLOAD_ROUTE.0.to_string(), UPLOAD_ROUTE.1.to_string()));
        assert_eq!(documented_routes(&doc), routed);
        // Each documented route really is answered by the router, and only with its method.
        for (method, path) in &routed {
            let concrete = path.replace("{jobId}", "0123456789abcdef01234567");
            let full = if (method.as_str(), path.as_str()) == UPLOAD_ROUTE {
                concrete
            } else {
                format!("/v1{concrete}")
            };
            assert!(route(method, &full).is_ok(), "{method} {full}");
            assert!(matches!(
                route("PATCH", &full),
                Err(ApiError::MethodNotAllowed { .. })
            ));
        }
        // Public routes are exactly those the document marks `security: []`.
        for (method, path) in &routed {
            let op = &doc["paths"][path][method.to_ascii_lowercase()];
            let public = op["security"].as_array().is_some_and(|s| s.is_empty());
            let is_api_public = PUBLIC_ROUTES.contains(&path.as_str());
            let is_upload = (method.as_str(), path.as_str()) == UPLOAD_ROUTE;
            assert_eq!(public, is_api_public || is_upload, "{method} {path}");
        }
    }

    #[test]
    fn openapi_error_codes_match_the_error_enum() {
        let doc = openapi();
        let ours: BTreeMap<&str, u16> = ApiError::catalogue()
            .iter()
            .map(|e| e.code_and_status())
            .collect();
        assert_eq!(ours.len(), ApiError::catalogue().len(), "codes are unique");
        let listed: BTreeSet<&str> = doc["components"]["schemas"]["ErrorCode"]["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(listed, ours.keys().copied().collect::<BTreeSet<_>>());
        // Every response that lists codes lists them under our status for them.
        let mut responses: Vec<(String, Value)> = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                for (status, resp) in op["responses"].as_object().into_iter().flatten() {
                    let resp = match resp["$ref"].as_str() {
                        Some(r) => {
                            let name = r.rsplit('/').next().unwrap_or_default();
                            doc["components"]["responses"][name].clone()
                        }
                        None => resp.clone(),
                    };
                    responses.push((format!("{method} {path} {status}"), resp));
                }
            }
        }
        let mut checked = 0;
        for (at, resp) in responses {
            let status: u16 = at
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            for code in resp["x-error-codes"].as_array().into_iter().flatten() {
                let code = code.as_str().unwrap_or_default();
                assert_eq!(ours.get(code), Some(&status), "{at}: {code}");
                checked += 1;
            }
        }
        assert!(
            checked > 30,
            "only {checked} codes were listed per response"
        );
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    fn body_json(resp: Response<Body>) -> Value {
        use http_body_util::BodyExt;
        let bytes = block_on(resp.into_body().collect())
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    #[test]
    fn a_panicking_handler_gets_a_json_500_that_is_not_cached() {
        let resp = block_on(respond(async {
            if std::hint::black_box(true) {
                panic!("handler bug");
            }
            Ok(json_response(200, &Value::Null))
        }));
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(resp.headers()[CACHE_CONTROL], "no-store");
        assert!(resp.headers()[CONTENT_TYPE]
            .to_str()
            .is_ok_and(|t| t.starts_with("application/json")));
        let body = body_json(resp);
        assert_eq!(body["code"], "internal_error");
        assert_eq!(
            body["error"], "internal error",
            "the panic message is logged, not shown"
        );
    }

    #[test]
    fn errors_and_successes_alike_are_not_cached() {
        let resp = block_on(respond(async { Err(ApiError::JobNotFound) }));
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.headers()[CACHE_CONTROL], "no-store");
        assert_eq!(body_json(resp)["code"], "job_not_found");
        let resp = block_on(respond(async { Ok(openapi_response()) }));
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()[CACHE_CONTROL], "no-store");
    }

    #[test]
    fn routes_capture_the_job_id_and_tell_404_from_405() {
        let m = route("GET", "/v1/jobs/abc/transcript");
        assert_eq!(
            m.ok(),
            Some(Matched {
                template: "/jobs/{jobId}/transcript",
                id: Some("abc"),
                upload: false
            })
        );
        assert_eq!(route("GET", "/v1/nothing").err(), Some(ApiError::NotFound));
        assert_eq!(route("GET", "/v1/jobs/").err(), Some(ApiError::NotFound));
        assert_eq!(
            route("DELETE", "/v1/jobs/abc").err(),
            Some(ApiError::MethodNotAllowed {
                allow: "GET, HEAD".into()
            })
        );
        assert_eq!(
            route("GET", "/v1/jobs").err(),
            Some(ApiError::MethodNotAllowed {
                allow: "POST".into()
            })
        );
        assert!(route("PUT", "/upload/abc").is_ok_and(|m| m.upload));
        assert_eq!(
            route("POST", "/upload/abc").err(),
            Some(ApiError::MethodNotAllowed {
                allow: "PUT".into()
            })
        );
    }
}
