//! The presigned upload: `PUT {public-url}/upload/{jobId}?expires=...&signature=...`.
//!
//! Checks, in order: job id shape (400 `invalid_job_id`), expires and signature present and the job
//! exists (403 `invalid_signature` / 404 `job_not_found`), signature over method, job id, expiry,
//! content type and length compared in constant time (403 `invalid_signature`), expiry (410
//! `upload_expired`), job still `uploading` (409 `already_uploaded`), Content-Type equal to the
//! declared one (415 `content_type_mismatch`), Content-Length equal to the declared size (400
//! `length_mismatch`), then the job's upload claim (409 `upload_in_progress` while another PUT to
//! the same job is streaming; the status is read again once claimed, so an upload that finished
//! meanwhile answers `already_uploaded`). The body then streams into a new media object
//! ([`crate::media::MediaStore::create`]: its own temporary file), counted as it arrives and
//! refused (400 `length_mismatch`) the moment it exceeds the declared size or when it ends short.
//! A refused upload releases the claim, drops its unfinished object and leaves the job in
//! `uploading`, so the same URL can be retried until it expires. A complete body is committed
//! (only the claim holder ever commits), the credits are charged (one ledger row, 503
//! `billing_unavailable` if the ledger cannot be written) and the job moves to `transcribing` and
//! into the work queue; the claim is released after that.
//!
//! This route receives the media of a local media directory. With a bucket the upload URL is the
//! bucket's own presigned PUT and the bytes never pass through this process: `pipeline::check_arrived`
//! moves the job on once the object is there (on `GET /jobs/{id}` and in the pipeline's sweep).

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response};

use crate::api::jobs::{job_json, signature_mac};
use crate::http::error::ApiError;
use crate::http::{json_response, App, Body};
use crate::media::{Object, ObjectWriter};
use crate::pipeline::UploadError;
use crate::store::{JobRow, Store};
use crate::util::{is_id, now_ms, parse_query};

/// How long an upload may go without a byte arriving.
const STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    s.as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [hi, lo] => {
                let digit = |c: u8| (c as char).to_digit(16);
                Some((digit(*hi)? * 16 + digit(*lo)?) as u8)
            }
            _ => None,
        })
        .collect()
}

/// Whether two content types name the same type (case and surrounding blanks ignored).
fn same_type(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Moves a job whose media is in place to `transcribing` ([`crate::pipeline::accept_upload`]):
/// 503 `billing_unavailable` when the ledger cannot be written.
pub fn complete_upload(store: &dyn Store, job: &JobRow) -> Result<bool, ApiError> {
    crate::pipeline::accept_upload(store, job).map_err(|e| match e {
        UploadError::Billing(e) => {
            tracing::warn!("billing unavailable while charging {}: {e}", job.id);
            ApiError::BillingUnavailable
        }
        UploadError::Store(e) => ApiError::from(e),
    })
}

/// PUT /upload/{jobId}.
pub async fn put(
    app: Arc<App>,
    req: Request<Incoming>,
    id: String,
    query: &str,
) -> Result<Response<Body>, ApiError> {
    if !is_id(&id) {
        return Err(ApiError::InvalidJobId);
    }
    let mut expires = None;
    let mut signature = None;
    for (k, v) in parse_query(query) {
        match k.as_str() {
            "expires" if expires.is_none() => expires = Some(v),
            "signature" if signature.is_none() => signature = Some(v),
            _ => {}
        }
    }
    let lookup = id.clone();
    let job = app
        .db(move |store| Ok(store.job(&lookup)?))
        .await?
        .ok_or(ApiError::JobNotFound)?;
    let expires: i64 = expires
        .and_then(|e| e.parse().ok())
        .ok_or(ApiError::InvalidSignature)?;
    let signature = signature
        .and_then(|s| decode_hex(&s))
        .ok_or(ApiError::InvalidSignature)?;
    {
        use hmac::Mac;
        signature_mac(
            &app.secret,
            &job.id,
            expires,
            &job.content_type,
            job.size_bytes as u64,
        )
        .verify_slice(&signature)
        .map_err(|_| ApiError::InvalidSignature)?;
    }
    if now_ms() > expires.saturating_mul(1000) {
        return Err(ApiError::UploadExpired);
    }
    if job.status != "uploading" {
        return Err(ApiError::AlreadyUploaded);
    }
    let sent_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !same_type(sent_type, &job.content_type) {
        return Err(ApiError::ContentTypeMismatch {
            expected: job.content_type.clone(),
        });
    }
    let expected = job.size_bytes as u64;
    if let Some(len) = req.headers().get(CONTENT_LENGTH) {
        let len: Option<u64> = len.to_str().ok().and_then(|s| s.trim().parse().ok());
        if len != Some(expected) {
            return Err(ApiError::LengthMismatch { expected });
        }
    }

    // One upload per job at a time: a second PUT while this one streams is refused at once, so it
    // can never replace the winner's media. The status is read again under the claim: an upload
    // that completed between the first read and the claim has moved the job on.
    let claim = app
        .uploads
        .claim(&job.id)
        .ok_or(ApiError::UploadInProgress)?;
    let lookup = job.id.clone();
    let still_uploading = app
        .db(move |store| Ok(store.job(&lookup)?))
        .await?
        .is_some_and(|j| j.status == "uploading");
    if !still_uploading {
        return Err(ApiError::AlreadyUploaded);
    }

    // The object removes its temporary file unless committed, also when the connection drops
    // and this future is dropped mid-body.
    let in_flight = crate::ops::metrics::Upload::start();
    let media = app.media.clone();
    let jid = job.id.clone();
    let object = tokio::task::spawn_blocking(move || media.create(&jid, Object::Original))
        .await
        .map_err(|e| ApiError::Internal(format!("blocking task: {e}")))?
        .map_err(|e| ApiError::Internal(format!("creating the upload's media object: {e}")))?;
    stream_to(req.into_body(), object, expected).await?;
    let job_for_db = job.clone();
    let media = app.media.clone();
    let done = app
        .db(move |store| {
            let moved = complete_upload(store, &job_for_db);
            if let Err(ApiError::BillingUnavailable) = moved {
                // Not charged, so not accepted: the client retries the same URL later.
                let _ = media.delete_job(&job_for_db.id);
            }
            let moved = moved?;
            let job = store.job(&job_for_db.id)?.ok_or(ApiError::JobNotFound)?;
            let transcripts = store.transcripts(&job.id)?;
            Ok((moved, job, transcripts))
        })
        .await?;
    let (moved, job, transcripts) = done;
    drop(in_flight);
    drop(claim);
    if !moved {
        return Err(ApiError::AlreadyUploaded);
    }
    app.queue.notify();
    tracing::info!(job = %job.id, bytes = expected, "upload complete");
    Ok(json_response(200, &job_json(&app, &job, &transcripts)))
}

/// Chunks in flight between the network and the disk writer: with hyper's 1 MiB read buffer this
/// bounds the memory an upload can hold to a few MiB, whatever its size.
const WRITE_QUEUE: usize = 4;

/// Streams `body` into `object`, refusing it the moment it holds more than `expected` bytes, or
/// when it ends with fewer; commits the object only when exactly `expected` bytes arrived.
///
/// A blocking thread writes while the next chunks arrive, so the network and the disk overlap. The
/// file is not fsynced: a process crash keeps it (the page cache survives), and after a power loss
/// a damaged file fails its job with a full refund, the same guarantee the WAL database gives.
async fn stream_to(
    mut body: Incoming,
    object: Box<dyn ObjectWriter>,
    expected: u64,
) -> Result<(), ApiError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(WRITE_QUEUE);
    // The writer thread hands the object back for the commit; if this future is dropped, the
    // thread ends when the channel closes and drops the object, which removes its file.
    let writer = tokio::task::spawn_blocking(move || {
        let mut object = object;
        while let Some(chunk) = rx.blocking_recv() {
            object.write_all(&chunk)?;
        }
        object.flush()?;
        Ok::<_, std::io::Error>(object)
    });
    let received = receive(&mut body, expected, tx).await;
    // The sender is gone (dropped by `receive`), so the writer ends once it has drained.
    let written = writer
        .await
        .map_err(|e| ApiError::Internal(format!("upload writer: {e}")))?;
    let received = received?;
    let object = written.map_err(|e| ApiError::Internal(format!("writing the upload: {e}")))?;
    if received != expected {
        return Err(ApiError::LengthMismatch { expected });
    }
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let committed = object.commit();
        crate::ops::metrics::media_call("commit_upload", started);
        committed
    })
    .await
    .map_err(|e| ApiError::Internal(format!("blocking task: {e}")))?
    .map_err(|e| ApiError::Internal(format!("storing the upload: {e}")))
}

/// Reads the body into `tx`, counting; stops at the first byte past `expected`.
async fn receive(
    body: &mut Incoming,
    expected: u64,
    tx: tokio::sync::mpsc::Sender<bytes::Bytes>,
) -> Result<u64, ApiError> {
    let mut received: u64 = 0;
    loop {
        // A client that stops sending for a minute has gone away; its upload is refused.
        let next = tokio::time::timeout(STALL_TIMEOUT, body.frame())
            .await
            .map_err(|_| {
                tracing::info!("upload stalled; refusing it");
                ApiError::LengthMismatch { expected }
            })?;
        let Some(frame) = next else {
            return Ok(received);
        };
        let frame = frame.map_err(|e| {
            tracing::info!("upload interrupted: {e}");
            ApiError::LengthMismatch { expected }
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        received += data.len() as u64;
        if received > expected {
            return Err(ApiError::LengthMismatch { expected });
        }
        if tx.send(data).await.is_err() {
            // The writer stopped: its error is reported by the caller.
            return Ok(received);
        }
    }
}
