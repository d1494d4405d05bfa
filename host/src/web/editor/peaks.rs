//! GET /editor/{id}/peaks: the waveform's peaks, whole or a piece of one level of the pyramid.

use std::sync::Arc;

use hyper::Response;

use crate::http::{App, Body};
use crate::media::peaks::read_level;
use crate::media::Object;

use super::super::{db, require_session, respond_bytes, WebError, WebRequest};
use super::{check_id, visible};

/// The most values one request reads (the page asks for 2,048 at a time).
const MOST: u64 = 1 << 16;

/// What a request asks for: `?level=L&from=I&count=N` (one byte per value, clipped to the level),
/// or nothing for level 0 whole (one byte per 1/50 s; the page of an older server reads that).
fn piece(req: &WebRequest) -> Result<Option<(usize, u64, u64)>, WebError> {
    let params = req.params();
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let Some(level) = get("level") else {
        return Ok(None);
    };
    let bad = |what: &str| WebError::BadRequest(format!("peaks: {what}"));
    let level: usize = level
        .parse()
        .ok()
        .filter(|l| *l < 64)
        .ok_or_else(|| bad("level must be a small whole number"))?;
    let from: u64 = get("from")
        .unwrap_or("0")
        .parse()
        .map_err(|_| bad("from must be a whole number"))?;
    let count: u64 = get("count")
        .map(str::parse)
        .transpose()
        .map_err(|_| bad("count must be a whole number"))?
        .unwrap_or(MOST);
    if count > MOST {
        return Err(bad("count is at most 65536"));
    }
    Ok(Some((level, from, count)))
}

/// GET /editor/{id}/peaks: level 0 whole, or `count` values of level `level` from `from`.
pub async fn peaks(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let piece = piece(req)?;
    let session = require_session(app, req).await?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    db(app, move |c| visible(c, &viewer, &jid).map(|_| ())).await?;
    let store = app.media.clone();
    let jid = id.to_string();
    let bytes = tokio::task::spawn_blocking(move || match piece {
        None => store.read(&jid, Object::Peaks),
        Some((level, from, count)) => read_level(store.as_ref(), &jid, level, from, count),
    })
    .await
    .map_err(|e| WebError::Internal(e.to_string()))?
    .map_err(|e| WebError::Internal(format!("media store: {e}")))?
    .ok_or(WebError::NotFound)?;
    Ok(respond_bytes(200, "application/octet-stream", bytes))
}
