//! `GET /metrics` on `--metrics-listen ADDR` (serve and worker): the process's metrics
//! (`ops::metrics`) in the Prometheus text format, with the store's queue read at each scrape.
//! Not on the API's listener: the address is for the monitoring network only.

use std::sync::Arc;
use std::time::Duration;

use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Response, StatusCode};
use tokio::net::TcpListener;

use crate::http::Body;
use crate::store::Store;
use crate::util::now_ms;

/// How long a scrape waits for the store's queue figures.
const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// Answers `GET /metrics` (and HEAD); 404 for any other path.
pub async fn answer(store: Arc<dyn Store>, method: &Method, path: &str) -> Response<Body> {
    if path != "/metrics" {
        return crate::http::error_response(&crate::ApiError::NotFound);
    }
    if method != Method::GET && method != Method::HEAD {
        return crate::http::error_response(&crate::ApiError::MethodNotAllowed {
            allow: "GET, HEAD".into(),
        });
    }
    let read = tokio::task::spawn_blocking(move || store.queue_stats(now_ms()));
    let stats = match tokio::time::timeout(STORE_TIMEOUT, read).await {
        Ok(Ok(Ok(q))) => {
            let oldest = q
                .oldest_waiting_at
                .map(|at| Duration::from_millis((now_ms() - at).max(0) as u64));
            Some((q.waiting, q.running, oldest))
        }
        _ => None,
    };
    crate::ops::metrics::queue(stats);
    let Some(text) = crate::ops::metrics::render() else {
        return crate::http::error_response(&crate::ApiError::NotFound);
    };
    let mut resp = Response::new(Body::full(text.into_bytes()));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

/// Installs the recorder and serves `GET /metrics` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    store: Arc<dyn Store>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    crate::ops::metrics::install();
    let answer: crate::http::side::Answer = Arc::new(move |method, path| {
        let store = store.clone();
        Box::pin(async move { answer(store, &method, &path).await })
    });
    crate::http::side::serve(listener, answer, shutdown).await
}
