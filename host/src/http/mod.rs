//! The HTTP side shared by the router and the handlers: the application state (`App`), the body
//! type, the caller, JSON responses. The router (`server`) imports the handlers (`crate::api`,
//! `crate::web`), and they import this module: the dependency points down only.

pub mod body;
pub mod claims;
pub mod error;
pub mod front;
pub mod health;
pub mod metrics;
pub mod ratelimit;
pub mod server;
pub mod side;

use std::path::PathBuf;
use std::sync::Arc;

use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::Value;

use crate::http::error::ApiError;
use crate::http::ratelimit::RateLimit;
pub use crate::store::Caller;
use crate::store::{Store, Wake};

pub use body::Body;

/// The server's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The data directory: databases, media, the signing secret.
    pub data_dir: PathBuf,
    /// The address clients reach the server at, without a trailing slash; the API is at
    /// `{public_url}/v1` and uploads at `{public_url}/upload/{jobId}`.
    pub public_url: String,
    /// Price of a minute of media, cents.
    pub price_cents_per_minute: i64,
    /// Whether a request's `X-Request-Id` header is taken as its id (`--trust-request-id`).
    pub trust_request_id: bool,
}

/// The id of a request (`X-Request-Id`), in its extensions for the handlers that record it.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Shared state of the running server.
pub struct App {
    /// Settings.
    pub config: Config,
    /// The databases.
    pub store: Arc<dyn Store>,
    /// The HMAC key of upload URLs.
    pub secret: Vec<u8>,
    /// Requests per rolling minute per key (blocking: called on blocking threads).
    pub limiter: Box<dyn RateLimit>,
    /// The signal of the work queue (the store's): notified after an upload enqueued its job.
    pub queue: Arc<dyn Wake>,
    /// The jobs whose upload is streaming (one PUT per job at a time).
    pub uploads: crate::http::claims::UploadClaims,
    /// Where media bytes live (a local directory or a bucket).
    pub media: Arc<dyn crate::media::MediaStore>,
    /// The readiness checks (`/readyz`).
    pub health: Arc<health::Health>,
}

impl App {
    /// Runs blocking database work off the async workers.
    pub async fn db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let store = self.store.clone();
        // The blocking thread logs inside the request's span, so its lines carry the request id.
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let out = span.in_scope(|| f(store.as_ref()));
            crate::ops::metrics::store_call("api", started);
            out
        })
        .await
        .map_err(|e| ApiError::Internal(format!("blocking task: {e}")))?
    }

    /// `{public_url}/v1`.
    pub fn api_base(&self) -> String {
        format!("{}/v1", self.config.public_url)
    }
}

/// A JSON response with `status`.
pub fn json_response(status: u16, value: &Value) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(Body::full(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

/// The JSON error response of `e`, with `Retry-After` or `Allow` where the code calls for them.
pub fn error_response(e: &ApiError) -> Response<Body> {
    if let ApiError::Internal(why) = e {
        tracing::error!("internal error: {why}");
    }
    let mut resp = json_response(e.status(), &e.body());
    match e {
        ApiError::RateLimited { retry_after } => {
            resp.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(*retry_after));
        }
        ApiError::MethodNotAllowed { allow } => {
            if let Ok(v) = HeaderValue::from_str(allow) {
                resp.headers_mut().insert(ALLOW, v);
            }
        }
        _ => {}
    }
    resp
}

/// Counts a request of `caller` against its key's rate limit: `rate_limited` when over it. May
/// block on the store (call it inside [`App::db`]).
pub fn admit(app: &App, caller: &Caller) -> Result<(), ApiError> {
    app.limiter
        .check(&caller.key_id)
        .map_err(|retry_after| ApiError::RateLimited { retry_after })
}
