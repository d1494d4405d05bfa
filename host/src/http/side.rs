//! A side listener: a few GET routes on an address of their own, outside the API's accept loop,
//! rate limit and keys (`cuecraft worker --listen` for health, `--metrics-listen` for metrics).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::http::Body;

/// The answer to one request of a side listener, from its method and path.
pub type Answer = Arc<
    dyn Fn(Method, String) -> std::pin::Pin<Box<dyn Future<Output = Response<Body>> + Send>>
        + Send
        + Sync,
>;

/// Serves `answer` on `listener` until `shutdown` completes; every response `no-store`.
pub async fn serve(listener: TcpListener, answer: Answer, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => return,
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let answer = answer.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<Incoming>| {
                let answer = answer.clone();
                async move {
                    let mut resp = answer(req.method().clone(), req.uri().path().to_string()).await;
                    resp.headers_mut()
                        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
                    Ok::<_, std::convert::Infallible>(resp)
                }
            });
            let _ = http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
