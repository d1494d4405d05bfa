//! What the people running the service plug it into: the log (text or JSON lines, the request id
//! on every line of a request), one log line per outage of a dependency rather than one per
//! attempt, and the metrics (`GET /metrics`). Health and readiness (`/healthz`, `/readyz`) are
//! answered by `http::health`, which reads the store and the media store.
//!
//! The bottom room of the host: the store, the media store, the pipeline and the HTTP side all
//! report here, and it imports none of them.

pub mod log;
pub mod metrics;
pub mod outage;
