//! GET /editor/{id}/media: the job's editor proxy (WebM video or audio), with HTTP Range.

use std::sync::Arc;

use hyper::header::{HeaderValue, ACCEPT_RANGES, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE};
use hyper::Response;

use crate::http::{App, Body};
use crate::media::{MediaStore, Object};

use super::super::{db, require_session, WebError, WebRequest};
use super::{check_id, visible};

/// The largest piece of media one range response carries; the browser asks for the rest.
pub(super) const MAX_RANGE: u64 = 8 << 20;

/// The media proxy is streamed in pieces of this size (one range read of the media store each):
/// a response holds a few of them in memory, whatever the proxy's size.
pub(super) const MEDIA_PIECE: u64 = 1 << 20;

/// A parsed `Range: bytes=...` header for a file of `len` bytes: (first, last) inclusive, or
/// `Err(())` when it cannot be satisfied (416).
pub fn parse_range(header: &str, len: u64) -> Option<Result<(u64, u64), ()>> {
    let spec = header.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        // Several ranges: answer the whole file instead (allowed by RFC 9110).
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let range = if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        if n == 0 || len == 0 {
            return Some(Err(()));
        }
        (len.saturating_sub(n), len - 1)
    } else {
        let first: u64 = a.parse().ok()?;
        let last = if b.is_empty() {
            len.saturating_sub(1)
        } else {
            b.parse::<u64>().ok()?.min(len.saturating_sub(1))
        };
        if first >= len || last < first {
            return Some(Err(()));
        }
        (first, last)
    };
    Some(Ok(range))
}

/// The job's editor proxy in the media store: (object, size, content type), `None` when there is
/// none (not ready yet, or ffmpeg could not make one). Blocking.
pub(super) fn proxy(
    media: &dyn MediaStore,
    job_id: &str,
) -> Result<Option<(Object, u64, &'static str)>, WebError> {
    for (object, ct) in [
        (Object::VideoProxy, "video/webm"),
        (Object::AudioProxy, "audio/webm"),
    ] {
        let size = media
            .size(job_id, object)
            .map_err(|e| WebError::Internal(format!("media store: {e}")))?;
        if let Some(size) = size {
            return Ok(Some((object, size, ct)));
        }
    }
    Ok(None)
}

/// GET /editor/{id}/media: the proxy, with HTTP Range.
pub async fn media(app: &Arc<App>, req: &WebRequest, id: &str) -> Result<Response<Body>, WebError> {
    check_id(id)?;
    let session = require_session(app, req).await?;
    let viewer = session.member.clone();
    let jid = id.to_string();
    db(app, move |c| visible(c, &viewer, &jid).map(|_| ())).await?;
    let store = app.media.clone();
    let jid = id.to_string();
    let range = req
        .headers
        .get(hyper::header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let found = {
        let store = store.clone();
        let jid = jid.clone();
        tokio::task::spawn_blocking(move || proxy(store.as_ref(), &jid))
            .await
            .map_err(|e| WebError::Internal(e.to_string()))??
    };
    let (object, len, ct) = found.ok_or(WebError::NotFound)?;
    // The bytes `first..first + n` of the proxy, streamed from the media store a piece at a
    // time (a range read each: a file's seek and read, a bucket's ranged GET).
    let stream = |first: u64, n: u64| {
        Body::stream(n, MEDIA_PIECE, move |at, piece| {
            store.read_range(&jid, object, first + at, piece)
        })
    };
    let (status, body, content_range) = match range.as_deref().and_then(|r| parse_range(r, len)) {
        None => (200, stream(0, len), None),
        Some(Err(())) => (416, Body::empty(), Some(format!("bytes */{len}"))),
        Some(Ok((first, last))) => {
            let last = last.min(first + MAX_RANGE - 1);
            let n = last - first + 1;
            (
                206,
                stream(first, n),
                Some(format!("bytes {first}-{last}/{len}")),
            )
        }
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    let headers = resp.headers_mut();
    let content_type = if status == 416 {
        "text/plain; charset=utf-8"
    } else {
        ct
    };
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if status != 416 {
        headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    }
    if let Some(v) = content_range.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.insert(CONTENT_RANGE, v);
    }
    let length = hyper::body::Body::size_hint(resp.body())
        .exact()
        .unwrap_or(0);
    resp.headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(length));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_rfc9110() {
        assert_eq!(parse_range("bytes=0-", 10), Some(Ok((0, 9))));
        assert_eq!(parse_range("bytes=2-4", 10), Some(Ok((2, 4))));
        assert_eq!(parse_range("bytes=-3", 10), Some(Ok((7, 9))));
        assert_eq!(parse_range("bytes=5-100", 10), Some(Ok((5, 9))));
        assert_eq!(parse_range("bytes=10-", 10), Some(Err(())));
        assert_eq!(parse_range("bytes=0-1,3-4", 10), None);
        assert_eq!(parse_range("items=0-1", 10), None);
    }
}
