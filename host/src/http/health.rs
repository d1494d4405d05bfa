//! Health and readiness for load balancers and orchestrators: `GET /healthz` (the process is
//! alive: answered whenever it runs, touching nothing) and `GET /readyz` (it can do its work: the
//! store answers and has every migration this build knows, the media store answers, and in a
//! process with workers the recognizer was verified). Both answer JSON, outside `/v1`, without an
//! API key and outside the rate limit; `/readyz` answers 503 naming what is not ready.
//!
//! A readiness check costs a store round trip and a media-store request, so its result is kept
//! for a second and concurrent probes share one check: a flood of unauthenticated probes costs
//! the store at most one query a second. Each check gives up after [`CHECK_TIMEOUT`] (a store
//! that hangs is not ready). A failing check is logged once when it starts failing and once when
//! it passes again ([`Outage`]).
//!
//! `cuecraft worker --listen ADDR` serves the same two routes ([`serve`]).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::{Method, Response};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

use crate::http::{json_response, Body};
use crate::media::MediaStore;
use crate::ops::outage::Outage;
use crate::store::Store;

/// How long one check (the store's, the media store's) may take before it counts as failed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a readiness result is reused.
const CACHE_FOR: Duration = Duration::from_secs(1);

/// What `/readyz` checks, and its last result.
pub struct Health {
    store: Arc<dyn Store>,
    media: Arc<dyn MediaStore>,
    /// The recognizer of a process with workers (its name), verified before the process started
    /// (the whisper model's files against their SHA-256 sums); `None` in an API-only process.
    recognizer: Option<String>,
    last: tokio::sync::Mutex<Option<(Instant, Readiness)>>,
    store_outage: Outage,
    media_outage: Outage,
}

/// The outcome of one readiness check.
#[derive(Debug, Clone)]
pub struct Readiness {
    /// Whether every check passed.
    pub ready: bool,
    /// The JSON answer.
    pub body: Value,
}

impl Health {
    /// The checks of a process using `store` and `media`, with workers running `recognizer`
    /// (verified at start) or none.
    pub fn new(
        store: Arc<dyn Store>,
        media: Arc<dyn MediaStore>,
        recognizer: Option<String>,
    ) -> Health {
        Health {
            store,
            media,
            recognizer,
            last: tokio::sync::Mutex::new(None),
            store_outage: Outage::new("the store (readiness check)"),
            media_outage: Outage::new("the media store (readiness check)"),
        }
    }

    /// The readiness now (at most [`CACHE_FOR`] old).
    pub async fn readiness(&self) -> Readiness {
        let mut last = self.last.lock().await;
        if let Some((at, r)) = last.as_ref() {
            if at.elapsed() < CACHE_FOR {
                return r.clone();
            }
        }
        let r = self.check().await;
        *last = Some((Instant::now(), r.clone()));
        r
    }

    async fn check(&self) -> Readiness {
        let store = self.store.clone();
        let media = self.media.clone();
        let (migrations, media_check) = tokio::join!(
            blocking(move || store.migrations().map_err(|e| e.to_string())),
            blocking(move || {
                let started = Instant::now();
                let checked = media.check().map_err(|e| e.to_string());
                crate::ops::metrics::media_call("check", started);
                checked
            }),
        );
        let mut checks = Map::new();
        let mut not_ready = Vec::new();
        match migrations {
            Ok(schemas) => {
                self.store_outage.succeeded();
                checks.insert("store".into(), json!({"ok": true}));
                let behind: Vec<String> = schemas
                    .iter()
                    .filter(|s| !s.complete())
                    .map(|s| format!("{} at {} of {}", s.schema, s.applied, s.known))
                    .collect();
                let mut m = Map::new();
                m.insert("ok".into(), json!(behind.is_empty()));
                for s in &schemas {
                    m.insert(s.schema.into(), json!(format!("{}/{}", s.applied, s.known)));
                }
                if !behind.is_empty() {
                    m.insert(
                        "error".into(),
                        json!(format!("migrations not applied: {}", behind.join(", "))),
                    );
                    not_ready.push("migrations");
                }
                checks.insert("migrations".into(), Value::Object(m));
            }
            Err(e) => {
                self.store_outage.failed(&e);
                checks.insert(
                    "store".into(),
                    json!({"ok": false, "error": crate::redact::message(&e)}),
                );
                checks.insert(
                    "migrations".into(),
                    json!({"ok": false, "error": "unknown: the store does not answer"}),
                );
                not_ready.push("store");
                not_ready.push("migrations");
            }
        }
        match media_check {
            Ok(()) => {
                self.media_outage.succeeded();
                checks.insert("media".into(), json!({"ok": true}));
            }
            Err(e) => {
                self.media_outage.failed(&e);
                checks.insert(
                    "media".into(),
                    json!({"ok": false, "error": crate::redact::message(&e)}),
                );
                not_ready.push("media");
            }
        }
        if let Some(name) = &self.recognizer {
            checks.insert(
                "recognizer".into(),
                json!({"ok": true, "name": name, "verified": "at start"}),
            );
        }
        let ready = not_ready.is_empty();
        Readiness {
            ready,
            body: json!({
                "status": if ready { "ready" } else { "not ready" },
                "notReady": not_ready,
                "checks": checks,
            }),
        }
    }
}

/// Runs `f` on a blocking thread, failing after [`CHECK_TIMEOUT`].
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    match tokio::time::timeout(CHECK_TIMEOUT, tokio::task::spawn_blocking(f)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(format!("check failed: {e}")),
        Err(_) => Err(format!(
            "no answer within {} s",
            CHECK_TIMEOUT.as_secs_f64()
        )),
    }
}

/// Whether `path` is one of the routes answered here.
pub fn owns(path: &str) -> bool {
    path == "/healthz" || path == "/readyz"
}

/// Answers `/healthz` or `/readyz` (`path` is one of them: [`owns`]); GET and HEAD only.
pub async fn answer(health: &Health, method: &Method, path: &str) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return crate::http::error_response(&crate::ApiError::MethodNotAllowed {
            allow: "GET, HEAD".into(),
        });
    }
    if path == "/healthz" {
        return json_response(200, &json!({"status": "alive"}));
    }
    let r = health.readiness().await;
    json_response(if r.ready { 200 } else { 503 }, &r.body)
}

/// Serves `/healthz` and `/readyz` (the same answers as on the API's listener) on `listener`
/// until `shutdown` completes: the listener of `cuecraft worker --listen`, which serves nothing
/// else.
pub async fn serve(listener: TcpListener, health: Arc<Health>, shutdown: impl Future<Output = ()>) {
    let answer: crate::http::side::Answer = Arc::new(move |method, path| {
        let health = health.clone();
        Box::pin(async move {
            if owns(&path) {
                answer(&health, &method, &path).await
            } else {
                crate::http::error_response(&crate::ApiError::NotFound)
            }
        })
    });
    crate::http::side::serve(listener, answer, shutdown).await
}
