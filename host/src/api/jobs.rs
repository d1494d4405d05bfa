//! POST /jobs and GET /jobs/{jobId}: request validation, the creation checks, and the Job shape.
//!
//! Order of the creation checks (each answers before the next runs, and a refused request creates
//! nothing): API key (401) -> rate limit (429) -> body size (413 `body_too_large`) -> JSON
//! (`invalid_json`) -> `sourceUrl` (501) -> field validation (`invalid_request`, every problem at
//! once) -> folder (404) -> preset (404) -> settings layered over the preset (`invalid_request`,
//! e.g. minDuration > maxDuration across the layers) -> owner (409 `no_active_owner`) -> plan limits
//! (413) -> platform quota (403) -> credits (503 `billing_unavailable` when the ledger cannot be
//! read, else 402) -> 201.

use std::sync::Arc;

use bytes::Bytes;
use cuecraft_engine::{FieldError, PartialSettings};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{json, Map, Value};

use crate::http::error::ApiError;
use crate::http::{json_response, App, Body, Caller, RequestId};
use crate::store::{JobRow, KeyClaim, NewJob, Store, TranscriptRow};
use crate::util::{is_id, new_id, now_ms, rfc3339};

/// Largest accepted creation body: a maximal valid request (1000 vocabulary terms of 100
/// characters, a 4000-character prompt, 100 rules) is well under this.
pub const MAX_BODY_BYTES: usize = 2 << 20;
/// The contract's largest upload, 5 GiB.
pub const MAX_SIZE_BYTES: u64 = 5_368_709_120;
/// Lifetime of an upload URL, milliseconds.
pub const UPLOAD_LIFETIME_MS: i64 = 3_600_000;

/// A valid job creation request.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRequest {
    /// The file's name.
    pub filename: String,
    /// `audio/*` or `video/*`.
    pub content_type: String,
    /// Exact size of the upload.
    pub size_bytes: u64,
    /// Declared duration, seconds (> 0).
    pub duration_seconds: f64,
    /// The job's name (default: the filename without its extension).
    pub name: String,
    /// A folder of the organisation.
    pub folder_id: Option<String>,
    /// A preset of the organisation.
    pub preset_id: Option<String>,
    /// The request's own settings (before layering over the preset).
    pub settings: PartialSettings,
}

const FIELDS: [&str; 9] = [
    "filename",
    "contentType",
    "sizeBytes",
    "durationSeconds",
    "name",
    "folderId",
    "presetId",
    "settings",
    "sourceUrl",
];

/// Whether `ct` is an `audio/*` or `video/*` media type without parameters.
fn is_media_type(ct: &str) -> bool {
    let Some((top, sub)) = ct.split_once('/') else {
        return false;
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    (top.eq_ignore_ascii_case("audio") || top.eq_ignore_ascii_case("video")) && token(sub)
}

/// The filename without its last extension (`talk.final.mp3` -> `talk.final`); the filename
/// itself when that would leave nothing.
pub fn default_name(filename: &str) -> String {
    match filename.rsplit_once('.') {
        Some((stem, _)) if !stem.trim().is_empty() => stem.to_string(),
        _ => filename.to_string(),
    }
}

fn integer(v: &Value) -> Option<i128> {
    if let Some(n) = v.as_i64() {
        return Some(n as i128);
    }
    if let Some(n) = v.as_u64() {
        return Some(n as i128);
    }
    v.as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() < 1e18)
        .map(|f| f as i128)
}

/// Validates a job creation body. Pure: no database, no clock. Every problem is reported at once
/// with its path; `sourceUrl` in any form answers 501 before anything else is looked at.
pub fn validate_create_request(body: &[u8]) -> Result<CreateRequest, ApiError> {
    let value: Value = crate::json::value(body).map_err(|e| match e {
        crate::json::StrictError::Syntax(e) => ApiError::InvalidJson(e.to_string()),
        crate::json::StrictError::Duplicates(paths) => ApiError::InvalidRequest(
            paths
                .into_iter()
                .map(|p| FieldError::new(p, "appears more than once in its object"))
                .collect(),
        ),
    })?;
    let Some(obj) = value.as_object() else {
        return Err(ApiError::InvalidRequest(vec![FieldError::new(
            "body",
            "must be a JSON object",
        )]));
    };
    if obj.contains_key("sourceUrl") {
        return Err(ApiError::SourceUrlNotSupported);
    }
    let mut errs = Vec::new();
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            errs.push(FieldError::new(key.clone(), "unknown field"));
        }
    }
    let chars = |s: &str| s.chars().count();
    let get = |k: &str| obj.get(k).filter(|v| !v.is_null());

    let filename = match obj.get("filename") {
        None | Some(Value::Null) => {
            errs.push(FieldError::new("filename", "is required"));
            None
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            errs.push(FieldError::new("filename", "must not be empty"));
            None
        }
        Some(Value::String(s)) if chars(s) > 255 => {
            errs.push(FieldError::new(
                "filename",
                "must be at most 255 characters",
            ));
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errs.push(FieldError::new("filename", "must be a string"));
            None
        }
    };
    let content_type = match obj.get("contentType") {
        None | Some(Value::Null) => {
            errs.push(FieldError::new("contentType", "is required"));
            None
        }
        Some(Value::String(s)) if is_media_type(s) => Some(s.clone()),
        Some(Value::String(_)) => {
            errs.push(FieldError::new(
                "contentType",
                "must be an audio/* or video/* media type, such as audio/mpeg",
            ));
            None
        }
        Some(_) => {
            errs.push(FieldError::new("contentType", "must be a string"));
            None
        }
    };
    let size_bytes = match obj.get("sizeBytes") {
        None | Some(Value::Null) => {
            errs.push(FieldError::new("sizeBytes", "is required"));
            None
        }
        Some(v) => match integer(v) {
            Some(n) if (1..=MAX_SIZE_BYTES as i128).contains(&n) => Some(n as u64),
            Some(_) => {
                errs.push(FieldError::new(
                    "sizeBytes",
                    "must be from 1 to 5368709120 (5 GiB)",
                ));
                None
            }
            None => {
                errs.push(FieldError::new("sizeBytes", "must be an integer"));
                None
            }
        },
    };
    let duration_seconds = match obj.get("durationSeconds") {
        None | Some(Value::Null) => {
            errs.push(FieldError::new("durationSeconds", "is required"));
            None
        }
        Some(v) => match v.as_f64() {
            Some(d) if d.is_finite() && d > 0.0 => Some(d),
            Some(_) => {
                errs.push(FieldError::new("durationSeconds", "must be greater than 0"));
                None
            }
            None => {
                errs.push(FieldError::new("durationSeconds", "must be a number"));
                None
            }
        },
    };
    let name = match get("name") {
        None => None,
        Some(Value::String(s)) if s.trim().is_empty() => {
            errs.push(FieldError::new("name", "must not be empty"));
            None
        }
        Some(Value::String(s)) if chars(s) > 200 => {
            errs.push(FieldError::new("name", "must be at most 200 characters"));
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errs.push(FieldError::new("name", "must be a string"));
            None
        }
    };
    let mut id_field = |key: &str| match get(key) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errs.push(FieldError::new(key, "must be a string"));
            None
        }
    };
    let folder_id = id_field("folderId");
    let preset_id = id_field("presetId");
    let settings = match get("settings") {
        None => PartialSettings::default(),
        Some(v) => match PartialSettings::from_json(v, "settings") {
            Ok(s) => s,
            Err(list) => {
                errs.extend(list);
                PartialSettings::default()
            }
        },
    };
    match (filename, content_type, size_bytes, duration_seconds) {
        (Some(filename), Some(content_type), Some(size_bytes), Some(duration_seconds))
            if errs.is_empty() =>
        {
            Ok(CreateRequest {
                name: name.unwrap_or_else(|| default_name(&filename)),
                filename,
                content_type,
                size_bytes,
                duration_seconds,
                folder_id,
                preset_id,
                settings,
            })
        }
        _ => Err(ApiError::InvalidRequest(errs)),
    }
}

/// The HMAC-SHA256 signature of an upload URL: over the method, job id, expiry (Unix seconds),
/// content type and length, as lowercase hex.
pub fn upload_signature(
    secret: &[u8],
    job_id: &str,
    expires: i64,
    content_type: &str,
    size: u64,
) -> String {
    use hmac::Mac;
    let mac = signature_mac(secret, job_id, expires, content_type, size);
    crate::util::hex(&mac.finalize().into_bytes())
}

/// The MAC state of an upload signature, for constant-time verification.
pub fn signature_mac(
    secret: &[u8],
    job_id: &str,
    expires: i64,
    content_type: &str,
    size: u64,
) -> hmac::Hmac<sha2::Sha256> {
    use hmac::Mac;
    // new_from_slice accepts keys of any length for HMAC, so this cannot fail.
    let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("PUT\n{job_id}\n{expires}\n{content_type}\n{size}").as_bytes());
    mac
}

/// The contract's Transcript object.
pub fn transcript_json(t: &TranscriptRow) -> Value {
    json!({
        "id": t.id,
        "language": t.language,
        "kind": t.kind,
        "label": t.label,
        "status": t.status,
    })
}

/// Loads a job of `org_id`: another organisation's job is `job_not_found`.
pub fn load_org_job(store: &dyn Store, org_id: &str, id: &str) -> Result<JobRow, ApiError> {
    match store.job(id)? {
        Some(job) if job.org_id == org_id => Ok(job),
        _ => Err(ApiError::JobNotFound),
    }
}

/// The links of a job.
pub fn links(app: &App, id: &str) -> Value {
    let base = app.api_base();
    json!({
        "self": format!("{base}/jobs/{id}"),
        "transcript": format!("{base}/jobs/{id}/transcript"),
        "subtitles": format!("{base}/jobs/{id}/subtitles?format=srt"),
        "editor": editor_url(app, id),
    })
}

/// Where a team member reviews the job.
pub fn editor_url(app: &App, id: &str) -> String {
    format!("{}/editor/{id}", app.config.public_url)
}

/// The contract's Job object.
pub fn job_json(app: &App, job: &JobRow, transcripts: &[TranscriptRow]) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(job.id));
    m.insert("name".into(), json!(job.name));
    m.insert("status".into(), json!(job.status));
    m.insert("error".into(), json!(job.error));
    m.insert("createdAt".into(), json!(rfc3339(job.created_at)));
    m.insert("updatedAt".into(), json!(rfc3339(job.updated_at)));
    m.insert(
        "media".into(),
        json!({
            "filename": job.filename,
            "contentType": job.content_type,
            "sizeBytes": job.size_bytes,
            "durationSeconds": job.measured_seconds.unwrap_or(job.declared_seconds),
        }),
    );
    m.insert("language".into(), json!(job.language));
    m.insert(
        "transcripts".into(),
        Value::Array(transcripts.iter().map(transcript_json).collect()),
    );
    m.insert("editorUrl".into(), json!(editor_url(app, &job.id)));
    m.insert("links".into(), links(app, &job.id));
    Value::Object(m)
}

/// GET /jobs/{jobId}, the endpoint clients poll: the key lookup, the rate limit and the job load
/// share one blocking trip and one connection, in the order of every other endpoint (401, 429,
/// then `invalid_job_id`, `job_not_found`). The key is still read on every request, so a
/// revocation takes effect at once.
pub async fn get(app: Arc<App>, key_hash: Vec<u8>, id: String) -> Result<Response<Body>, ApiError> {
    let state = app.clone();
    let (job, transcripts, progress) = app
        .db(move |store| {
            let caller = store.find_key(&key_hash)?.ok_or(ApiError::InvalidApiKey)?;
            crate::http::admit(&state, &caller)?;
            if !is_id(&id) {
                return Err(ApiError::InvalidJobId);
            }
            let job = load_org_job(store, &caller.org_id, &id)?;
            let t = store.transcripts(&id)?;
            let progress = if job.status == "transcribing" {
                store.progress(std::slice::from_ref(&id))?.pop()
            } else {
                None
            };
            Ok((job, t, progress))
        })
        .await?;
    if job.status == "uploading" && app.media.takes_direct_uploads() {
        // Uploaded to the bucket? Then the job moves on now, not at the next sweep.
        let media = app.media.clone();
        let waiting = job.clone();
        let moved = app
            .db(move |store| {
                let moved = crate::pipeline::check_arrived(store, media.as_ref(), &waiting)
                    .map_err(ApiError::Internal)?;
                if !moved {
                    return Ok(None);
                }
                let job = store.job(&waiting.id)?;
                let t = store.transcripts(&waiting.id)?;
                Ok(job.map(|j| (j, t)))
            })
            .await;
        match moved {
            Ok(Some((job, transcripts))) => {
                app.queue.notify();
                return Ok(json_response(200, &job_json(&app, &job, &transcripts)));
            }
            Ok(None) => {}
            // The job is still as read; the sweep tries again.
            Err(e) => tracing::warn!(job = %job.id, "checking the upload: {e:?}"),
        }
    }
    let mut response = json_response(200, &job_json(&app, &job, &transcripts));
    // Outside the contract's job shape, which stays as it is: how far recognition has come,
    // for `cuecraft submit` and any client that wants to show it.
    if let Some((_, p)) = progress {
        let value = progress_header(&p, crate::util::now_ms());
        if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
            response.headers_mut().insert(PROGRESS_HEADER, value);
        }
    }
    Ok(response)
}

/// What the main-database checks of a creation decided.
struct Prepared {
    settings: PartialSettings,
    owner: String,
}

/// The organisation's plan limits.
fn plan_check(store: &dyn Store, org_id: &str, req: &CreateRequest) -> Result<(), ApiError> {
    let (max_bytes, max_seconds) = store.plan_limits(org_id)?;
    if req.size_bytes as i64 > max_bytes {
        return Err(ApiError::PlanLimitExceeded {
            details: json!({
                "limit": "maxBytes",
                "allowed": max_bytes,
                "requested": req.size_bytes,
                "exceededBy": req.size_bytes as i64 - max_bytes,
            }),
        });
    }
    if req.duration_seconds > max_seconds {
        return Err(ApiError::PlanLimitExceeded {
            details: json!({
                "limit": "maxSeconds",
                "allowed": max_seconds,
                "requested": req.duration_seconds,
                "exceededBy": req.duration_seconds - max_seconds,
            }),
        });
    }
    Ok(())
}

/// The platform's monthly quota: declared bytes of this month's jobs that were uploaded or still
/// may be (their URL has not expired), plus this request.
fn quota_check(store: &dyn Store, req: &CreateRequest, now: i64) -> Result<(), ApiError> {
    let Some(quota) = store.monthly_quota()? else {
        return Ok(());
    };
    let used = store.bytes_this_month(crate::util::month_start_ms(now), now)?;
    if used.saturating_add(req.size_bytes as i64) > quota {
        return Err(ApiError::PlatformQuotaReached);
    }
    Ok(())
}

/// The job's owner: the key's creator while an active member, else the longest-standing active
/// owner of the organisation.
fn owner_of(store: &dyn Store, caller: &Caller) -> Result<String, ApiError> {
    store
        .job_owner(&caller.org_id, &caller.member_id)?
        .ok_or(ApiError::NoActiveOwner)
}

fn prepare(
    store: &dyn Store,
    caller: &Caller,
    req: &CreateRequest,
    now: i64,
) -> Result<Prepared, ApiError> {
    if let Some(folder) = &req.folder_id {
        if !store.folder_in_org(&caller.org_id, folder)? {
            return Err(ApiError::FolderNotFound);
        }
    }
    let preset = match &req.preset_id {
        None => PartialSettings::default(),
        Some(preset) => {
            let stored = store
                .preset_settings(&caller.org_id, preset)?
                .ok_or(ApiError::PresetNotFound)?;
            let value: Value = serde_json::from_str(&stored)
                .map_err(|e| ApiError::Internal(format!("preset {preset}: {e}")))?;
            PartialSettings::from_json(&value, "settings").map_err(|_| {
                ApiError::Internal(format!("preset {preset} holds invalid settings"))
            })?
        }
    };
    let settings = req.settings.over(&preset);
    let combined = settings.check_combined("settings");
    if !combined.is_empty() {
        return Err(ApiError::InvalidRequest(combined));
    }
    let owner = owner_of(store, caller)?;
    plan_check(store, &caller.org_id, req)?;
    quota_check(store, req, now)?;
    Ok(Prepared { settings, owner })
}

/// How long a request waits for another request with its `Idempotency-Key` to finish creating
/// the job (milliseconds, normally) before answering 409 `idempotency_key_in_use`.
const IDEMPOTENCY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The `Idempotency-Key` header of a request: `None` when absent; else one header of 1 to 255
/// visible ASCII characters (400 `invalid_request` otherwise).
pub fn idempotency_key(headers: &hyper::HeaderMap) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all("idempotency-key").iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    let bad = |message: &str| {
        ApiError::InvalidRequest(vec![FieldError {
            field: "Idempotency-Key".into(),
            message: message.into(),
        }])
    };
    if values.next().is_some() {
        return Err(bad("send the Idempotency-Key header once"));
    }
    let bytes = first.as_bytes();
    if bytes.is_empty() || bytes.len() > 255 || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(bad(
            "the Idempotency-Key must be 1 to 255 visible ASCII characters, without spaces",
        ));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// What identifies a creation request's body for its `Idempotency-Key`: the SHA-256 of the
/// body's JSON with members sorted and whitespace dropped, so that the same request serialised
/// differently counts as the same body.
fn body_hash(body: &[u8]) -> Vec<u8> {
    let canonical = serde_json::from_slice::<Value>(body)
        .map(|v| v.to_string().into_bytes())
        .unwrap_or_else(|_| body.to_vec());
    crate::util::sha256(&canonical).to_vec()
}

/// POST /jobs. With an `Idempotency-Key`, the same key and body within 24 hours answers the first
/// response again (header `Idempotent-Replayed: true`) without creating a second job; the key
/// with another body is 409 `idempotency_key_reused`. A request answered with an error records
/// nothing, so its retry is decided afresh.
pub async fn create(
    app: Arc<App>,
    caller: Caller,
    req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let key = idempotency_key(req.headers())?;
    let request_id = req.extensions().get::<RequestId>().map(|r| r.0.clone());
    let body: Bytes = match Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(ApiError::BodyTooLarge)
        }
        Err(e) => {
            return Err(ApiError::InvalidJson(format!(
                "could not read the body: {e}"
            )))
        }
    };
    let request = validate_create_request(&body)?;
    let hash = body_hash(&body);
    let for_closure = app.clone();
    let (replayed, response) = app
        .db(move |store| {
            let app = for_closure;
            let Some(key) = key else {
                let made = create_job(store, &app, &caller, &request, &request_id, None)?;
                return Ok((false, made));
            };
            let deadline = std::time::Instant::now() + IDEMPOTENCY_WAIT;
            loop {
                match store.claim_idempotency_key(&caller.org_id, &key, &hash, now_ms())? {
                    KeyClaim::New => break,
                    KeyClaim::Replay(first) => return Ok((true, first)),
                    KeyClaim::Reused => return Err(ApiError::IdempotencyKeyReused),
                    KeyClaim::InFlight if std::time::Instant::now() < deadline => {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    KeyClaim::InFlight => return Err(ApiError::IdempotencyKeyInUse),
                }
            }
            let made = create_job(
                store,
                &app,
                &caller,
                &request,
                &request_id,
                Some((&key, &hash)),
            );
            if made.is_err() {
                if let Err(e) = store.release_idempotency_key(&caller.org_id, &key, &hash) {
                    tracing::warn!("could not release idempotency key: {e}");
                }
            }
            Ok((false, made?))
        })
        .await?;
    let value: Value = serde_json::from_str(&response)
        .map_err(|e| ApiError::Internal(format!("stored response: {e}")))?;
    let mut resp = json_response(201, &value);
    if !replayed {
        crate::ops::metrics::job_created();
    }
    if replayed {
        resp.headers_mut().insert(
            "idempotent-replayed",
            hyper::header::HeaderValue::from_static("true"),
        );
    }
    Ok(resp)
}

/// Checks, prices and inserts a job; returns the 201 body as JSON text. With a claimed
/// idempotency key, the job and its recorded response are written in one transaction.
fn create_job(
    store: &dyn Store,
    app: &App,
    caller: &Caller,
    request: &CreateRequest,
    request_id: &Option<String>,
    key: Option<(&str, &[u8])>,
) -> Result<String, ApiError> {
    let now = now_ms();
    let price = app.config.price_cents_per_minute;
    let prepared = prepare(store, caller, request, now)?;
    let required = crate::billing::required_cents(request.duration_seconds, price);
    let available = store.balance(&caller.org_id).map_err(|e| {
        crate::ops::metrics::ledger_error();
        tracing::warn!("billing unavailable: {e}");
        ApiError::BillingUnavailable
    })?;
    if available < required {
        return Err(ApiError::InsufficientCredits {
            required_cents: required,
            available_cents: available,
        });
    }
    let id = new_id().map_err(|e| ApiError::Internal(format!("random: {e}")))?;
    let expires_at = now + UPLOAD_LIFETIME_MS;
    let language = prepared.settings.resolve().language;
    let job = NewJob {
        id: id.clone(),
        org_id: caller.org_id.clone(),
        owner_member_id: prepared.owner,
        api_key_id: caller.key_id.clone(),
        folder_id: request.folder_id.clone(),
        preset_id: request.preset_id.clone(),
        name: request.name.clone(),
        filename: request.filename.clone(),
        content_type: request.content_type.clone(),
        size_bytes: request.size_bytes as i64,
        declared_seconds: request.duration_seconds,
        price_cents_per_minute: price,
        settings: prepared.settings.to_json().to_string(),
        language,
        upload_expires_at: expires_at,
        created_at: now,
        request_id: request_id.clone(),
    };
    let expires = expires_at.div_euclid(1000);
    let sig = upload_signature(
        &app.secret,
        &id,
        expires,
        &job.content_type,
        job.size_bytes as u64,
    );
    // A bucket signs its own PUT URL (the bytes then never pass through this process); a local
    // directory receives them on `PUT /upload/{id}`, signed with the server's secret.
    let presigned = app
        .media
        .presign_upload(&id, &job.content_type, job.size_bytes as u64, expires)
        .map_err(|e| ApiError::Internal(format!("presigning the upload: {e}")))?;
    let upload_url = presigned.unwrap_or_else(|| {
        format!(
            "{}/upload/{}?expires={expires}&signature={sig}",
            app.config.public_url, id
        )
    });
    let response = json!({
        "id": id,
        "status": "uploading",
        "name": job.name,
        "editorUrl": editor_url(app, &id),
        "upload": {
            "method": "PUT",
            "url": upload_url,
            "headers": {
                "Content-Type": job.content_type,
                "Content-Length": job.size_bytes.to_string(),
            },
            "expiresAt": rfc3339(expires * 1000),
        },
        "links": links(app, &id),
    })
    .to_string();
    match key {
        None => store.insert_job(&job)?,
        Some((key, hash)) => store.insert_job_for_key(&job, key, hash, &response)?,
    }
    Ok(response)
}

/// The response header of `GET /jobs/{id}` that tells a `transcribing` job's progress.
pub const PROGRESS_HEADER: &str = "cuecraft-progress";

/// `share=0.420; seconds-left=183`: the share of the recording recognised and, once there is an
/// estimate, the seconds left counted from `now` (the estimate was made when the row was written).
pub fn progress_header(p: &crate::store::JobProgress, now: i64) -> String {
    let mut value = format!("share={:.3}", p.share.clamp(0.0, 1.0));
    if let Some(left) = p.seconds_left_at(now) {
        value.push_str(&format!("; seconds-left={left:.0}"));
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(body: &str) -> Vec<String> {
        match validate_create_request(body.as_bytes()) {
            Err(ApiError::InvalidRequest(f)) => f.into_iter().map(|e| e.field).collect(),
            other => panic!("expected invalid_request, got {other:?}"),
        }
    }

    #[test]
    fn a_minimal_request_is_valid_and_named_after_the_file() {
        let r = validate_create_request(
            br#"{"filename":"talk.final.mp3","contentType":"audio/mpeg","sizeBytes":10,"durationSeconds":1.5}"#,
        );
        let r = r.expect("valid");
        assert_eq!(r.name, "talk.final");
        assert_eq!(r.size_bytes, 10);
    }

    #[test]
    fn every_problem_is_named_with_its_path() {
        let mut f = fields(
            r#"{"filename":"","contentType":"text/plain","sizeBytes":0,"durationSeconds":0,
                "name":5,"extra":1,"settings":{"maxCharsPerLine":5,"bogus":true,
                "forbiddenCharacters":[{"chars":""}]}}"#,
        );
        f.sort();
        assert_eq!(
            f,
            [
                "contentType",
                "durationSeconds",
                "extra",
                "filename",
                "name",
                "settings.bogus",
                "settings.forbiddenCharacters[0].chars",
                "settings.forbiddenCharacters[0].replacement",
                "settings.maxCharsPerLine",
                "sizeBytes"
            ]
        );
        assert_eq!(
            fields("{}"),
            ["filename", "contentType", "sizeBytes", "durationSeconds"]
        );
    }

    #[test]
    fn json_errors_and_source_url_come_first() {
        assert_eq!(
            validate_create_request(b"{")
                .map(|_| ())
                .map_err(|e| e.code()),
            Err("invalid_json")
        );
        assert_eq!(
            validate_create_request(br#"{"sourceUrl":"http://x","bad":1}"#)
                .map(|_| ())
                .map_err(|e| e.code()),
            Err("source_url_not_supported")
        );
        assert_eq!(fields("[1]"), ["body"]);
    }

    #[test]
    fn size_limits_are_inclusive() {
        let req = |size: &str| {
            format!(
                r#"{{"filename":"a.wav","contentType":"audio/wav","sizeBytes":{size},"durationSeconds":1}}"#
            )
        };
        assert!(validate_create_request(req("5368709120").as_bytes()).is_ok());
        assert_eq!(fields(&req("5368709121")), ["sizeBytes"]);
        assert_eq!(fields(&req("1.5")), ["sizeBytes"]);
    }

    #[test]
    fn signatures_change_with_every_signed_part() {
        let base = upload_signature(b"k", "a", 1, "audio/wav", 5);
        assert_ne!(base, upload_signature(b"k", "b", 1, "audio/wav", 5));
        assert_ne!(base, upload_signature(b"k", "a", 2, "audio/wav", 5));
        assert_ne!(base, upload_signature(b"k", "a", 1, "audio/mpeg", 5));
        assert_ne!(base, upload_signature(b"k", "a", 1, "audio/wav", 6));
        assert_ne!(base, upload_signature(b"j", "a", 1, "audio/wav", 5));
        assert_eq!(base.len(), 64);
    }
}
