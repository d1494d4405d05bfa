//! GET /editor/{id}/peaks: the waveform's peaks.

use std::sync::Arc;

use hyper::Response;

use crate::http::{App, Body};
use crate::media::Object;

use super::super::{db, require_session, respond_bytes, WebError, WebRequest};
use super::{check_id, visible};

/// GET /editor/{id}/peaks: the waveform's peaks, one byte per 1/50 s.
pub async fn peaks(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    db(app, move |c| visible(c, &viewer, &jid).map(|_| ())).await?;
    let store = app.media.clone();
    let jid = id.to_string();
    let bytes = tokio::task::spawn_blocking(move || store.read(&jid, Object::Peaks))
        .await
        .map_err(|e| WebError::Internal(e.to_string()))?
        .map_err(|e| WebError::Internal(format!("media store: {e}")))?
        .ok_or(WebError::NotFound)?;
    Ok(respond_bytes(200, "application/octet-stream", bytes))
}
