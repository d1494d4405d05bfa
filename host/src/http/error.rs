//! `ApiError`: one variant per error code the API answers with, its status and its JSON body.
//!
//! `code_and_status` is the single place that maps a variant to its stable code and HTTP status,
//! so the contract's error table can be checked against one match.

use cuecraft_engine::FieldError;
use serde_json::{json, Map, Value};

/// Every error the API and the upload URL answer with.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ApiError {
    /// 400: the body is not JSON (or not a JSON object).
    InvalidJson(String),
    /// 400: the body is JSON but breaks the rules; every problem with its path.
    InvalidRequest(Vec<FieldError>),
    /// 400: a job id that is not 24 lowercase hex characters.
    InvalidJobId,
    /// 400: a transcriptId that is not 24 lowercase hex characters.
    InvalidTranscriptId,
    /// 400: transcript `format` other than `json` or `text`.
    InvalidFormat,
    /// 400: `maxChars` not an integer from 1 to 1000000.
    InvalidMaxChars,
    /// 400: subtitle `format` not one of the six values.
    UnsupportedFormat,
    /// 400: `offsetSeconds` not a number from -86400 to 86400.
    InvalidOffset,
    /// 401: no Authorization header.
    MissingApiKey,
    /// 401: an Authorization header that does not carry a key of the right shape.
    MalformedApiKey,
    /// 401: a key that is unknown or revoked.
    InvalidApiKey,
    /// 402: the organisation cannot pay for the job.
    InsufficientCredits {
        /// What the job costs.
        required_cents: i64,
        /// What the organisation has.
        available_cents: i64,
    },
    /// 403: the platform's monthly upload quota is used up.
    PlatformQuotaReached,
    /// 404: folderId is not a folder of the organisation.
    FolderNotFound,
    /// 404: presetId is not a preset of the organisation.
    PresetNotFound,
    /// 404: no such job in the key's organisation.
    JobNotFound,
    /// 404: the job has no such transcript; lists the ones it has.
    TranscriptNotFound {
        /// The job's transcripts, as in `Job.transcripts`.
        transcripts: Vec<Value>,
    },
    /// 409: the organisation has no active owner to own the job.
    NoActiveOwner,
    /// 409: the job is still running.
    JobNotReady {
        /// The job's status.
        status: String,
    },
    /// 409: the transcript asked for is still being created.
    TranscriptNotReady {
        /// The transcript's status.
        status: String,
    },
    /// 409: the job failed.
    JobFailed,
    /// 409: the transcript asked for failed.
    TranscriptFailed,
    /// 413: larger or longer than the plan allows; `details` says which limit and by how much.
    PlanLimitExceeded {
        /// `{limit, allowed, requested, exceededBy}`.
        details: Value,
    },
    /// 429: too many requests with this key; retry after this many seconds.
    RateLimited {
        /// Whole seconds until a request will be accepted again.
        retry_after: u64,
    },
    /// 501: `sourceUrl` was supplied.
    SourceUrlNotSupported,
    /// 503: credits could not be checked or charged.
    BillingUnavailable,
    /// 404: no such path.
    NotFound,
    /// 405: the path exists but not with this method.
    MethodNotAllowed {
        /// The methods the path takes, for the `Allow` header.
        allow: String,
    },
    /// 403 (upload): the URL's signature does not match.
    InvalidSignature,
    /// 410 (upload): the upload URL has expired; create a new job.
    UploadExpired,
    /// 415 (upload): the Content-Type differs from the declared contentType.
    ContentTypeMismatch {
        /// The declared content type.
        expected: String,
    },
    /// 400 (upload): the body length differs from the declared sizeBytes.
    LengthMismatch {
        /// The declared size.
        expected: u64,
    },
    /// 409 (upload): the media of this job has already been uploaded.
    AlreadyUploaded,
    /// 409 (upload): another upload of this job is streaming; retry if it fails.
    UploadInProgress,
    /// 413: a request body larger than any valid request (the job creation body).
    BodyTooLarge,
    /// 409: this `Idempotency-Key` was used with another body in the last 24 hours.
    IdempotencyKeyReused,
    /// 409: another request with this `Idempotency-Key` is still creating its job.
    IdempotencyKeyInUse,
    /// 400: the request is not HTTP/1.1 the server can read (request line, header syntax,
    /// framing, a missing or repeated `Host`); answered before routing (`front`).
    MalformedRequest(String),
    /// 414: the request target is longer than the server reads.
    UriTooLong,
    /// 431: the header section is larger than the server reads.
    HeadersTooLarge,
    /// 500: something broke on our side; the message is logged, not shown.
    Internal(String),
}

impl ApiError {
    /// The stable code and the HTTP status, in one match.
    pub fn code_and_status(&self) -> (&'static str, u16) {
        match self {
            ApiError::InvalidJson(_) => ("invalid_json", 400),
            ApiError::InvalidRequest(_) => ("invalid_request", 400),
            ApiError::InvalidJobId => ("invalid_job_id", 400),
            ApiError::InvalidTranscriptId => ("invalid_transcript_id", 400),
            ApiError::InvalidFormat => ("invalid_format", 400),
            ApiError::InvalidMaxChars => ("invalid_max_chars", 400),
            ApiError::UnsupportedFormat => ("unsupported_format", 400),
            ApiError::InvalidOffset => ("invalid_offset", 400),
            ApiError::MissingApiKey => ("missing_api_key", 401),
            ApiError::MalformedApiKey => ("malformed_api_key", 401),
            ApiError::InvalidApiKey => ("invalid_api_key", 401),
            ApiError::InsufficientCredits { .. } => ("insufficient_credits", 402),
            ApiError::PlatformQuotaReached => ("platform_quota_reached", 403),
            ApiError::FolderNotFound => ("folder_not_found", 404),
            ApiError::PresetNotFound => ("preset_not_found", 404),
            ApiError::JobNotFound => ("job_not_found", 404),
            ApiError::TranscriptNotFound { .. } => ("transcript_not_found", 404),
            ApiError::NoActiveOwner => ("no_active_owner", 409),
            ApiError::JobNotReady { .. } => ("job_not_ready", 409),
            ApiError::TranscriptNotReady { .. } => ("transcript_not_ready", 409),
            ApiError::JobFailed => ("job_failed", 409),
            ApiError::TranscriptFailed => ("transcript_failed", 409),
            ApiError::PlanLimitExceeded { .. } => ("plan_limit_exceeded", 413),
            ApiError::RateLimited { .. } => ("rate_limited", 429),
            ApiError::SourceUrlNotSupported => ("source_url_not_supported", 501),
            ApiError::BillingUnavailable => ("billing_unavailable", 503),
            ApiError::NotFound => ("not_found", 404),
            ApiError::MethodNotAllowed { .. } => ("method_not_allowed", 405),
            ApiError::InvalidSignature => ("invalid_signature", 403),
            ApiError::UploadExpired => ("upload_expired", 410),
            ApiError::ContentTypeMismatch { .. } => ("content_type_mismatch", 415),
            ApiError::LengthMismatch { .. } => ("length_mismatch", 400),
            ApiError::AlreadyUploaded => ("already_uploaded", 409),
            ApiError::UploadInProgress => ("upload_in_progress", 409),
            ApiError::BodyTooLarge => ("body_too_large", 413),
            ApiError::IdempotencyKeyReused => ("idempotency_key_reused", 409),
            ApiError::IdempotencyKeyInUse => ("idempotency_key_in_use", 409),
            ApiError::MalformedRequest(_) => ("malformed_request", 400),
            ApiError::UriTooLong => ("uri_too_long", 414),
            ApiError::HeadersTooLarge => ("headers_too_large", 431),
            ApiError::Internal(_) => ("internal_error", 500),
        }
    }

    /// One value of every variant, for checks of the code table (the OpenAPI test, docs).
    pub fn catalogue() -> Vec<ApiError> {
        vec![
            ApiError::InvalidJson(String::new()),
            ApiError::InvalidRequest(Vec::new()),
            ApiError::InvalidJobId,
            ApiError::InvalidTranscriptId,
            ApiError::InvalidFormat,
            ApiError::InvalidMaxChars,
            ApiError::UnsupportedFormat,
            ApiError::InvalidOffset,
            ApiError::MissingApiKey,
            ApiError::MalformedApiKey,
            ApiError::InvalidApiKey,
            ApiError::InsufficientCredits {
                required_cents: 0,
                available_cents: 0,
            },
            ApiError::PlatformQuotaReached,
            ApiError::FolderNotFound,
            ApiError::PresetNotFound,
            ApiError::JobNotFound,
            ApiError::TranscriptNotFound {
                transcripts: Vec::new(),
            },
            ApiError::NoActiveOwner,
            ApiError::JobNotReady {
                status: String::new(),
            },
            ApiError::TranscriptNotReady {
                status: String::new(),
            },
            ApiError::JobFailed,
            ApiError::TranscriptFailed,
            ApiError::PlanLimitExceeded {
                details: Value::Null,
            },
            ApiError::RateLimited { retry_after: 1 },
            ApiError::SourceUrlNotSupported,
            ApiError::BillingUnavailable,
            ApiError::NotFound,
            ApiError::MethodNotAllowed {
                allow: String::new(),
            },
            ApiError::InvalidSignature,
            ApiError::UploadExpired,
            ApiError::ContentTypeMismatch {
                expected: String::new(),
            },
            ApiError::LengthMismatch { expected: 0 },
            ApiError::AlreadyUploaded,
            ApiError::UploadInProgress,
            ApiError::BodyTooLarge,
            ApiError::IdempotencyKeyReused,
            ApiError::IdempotencyKeyInUse,
            ApiError::MalformedRequest(String::new()),
            ApiError::UriTooLong,
            ApiError::HeadersTooLarge,
            ApiError::Internal(String::new()),
        ]
    }

    /// The stable identifier clients switch on.
    pub fn code(&self) -> &'static str {
        self.code_and_status().0
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.code_and_status().1
    }

    /// The message for a person.
    pub fn message(&self) -> String {
        match self {
            ApiError::InvalidJson(why) => format!("the body is not valid JSON: {why}"),
            ApiError::InvalidRequest(fields) => match fields.len() {
                1 => "the request has 1 invalid field".to_string(),
                n => format!("the request has {n} invalid fields"),
            },
            ApiError::InvalidJobId => {
                "the job id must be 24 lowercase hexadecimal characters".into()
            }
            ApiError::InvalidTranscriptId => {
                "transcriptId must be 24 lowercase hexadecimal characters".into()
            }
            ApiError::InvalidFormat => "format must be json or text".into(),
            ApiError::InvalidMaxChars => "maxChars must be an integer from 1 to 1000000".into(),
            ApiError::UnsupportedFormat => {
                "format must be one of srt, vtt, webvtt, ttml, ass, ebu-stl".into()
            }
            ApiError::InvalidOffset => "offsetSeconds must be a number from -86400 to 86400".into(),
            ApiError::MissingApiKey => {
                "an API key is required: send Authorization: Bearer <key>".into()
            }
            ApiError::MalformedApiKey => {
                "the Authorization header does not carry a well-formed API key".into()
            }
            ApiError::InvalidApiKey => "the API key is unknown or revoked".into(),
            ApiError::InsufficientCredits {
                required_cents,
                available_cents,
            } => format!(
                "the job costs {required_cents} cents and the organisation has {available_cents}"
            ),
            ApiError::PlatformQuotaReached => {
                "the platform's monthly upload quota is used up".into()
            }
            ApiError::FolderNotFound => "no such folder in this organisation".into(),
            ApiError::PresetNotFound => "no such preset in this organisation".into(),
            ApiError::JobNotFound => "no such job in this organisation".into(),
            ApiError::TranscriptNotFound { .. } => "the job has no such transcript".into(),
            ApiError::NoActiveOwner => "the organisation has no active owner to own the job".into(),
            ApiError::JobNotReady { status } => {
                format!("the job is still running ({status}); keep polling")
            }
            ApiError::TranscriptNotReady { status } => {
                format!("the transcript is still being created ({status}); keep polling")
            }
            ApiError::JobFailed => "the job failed".into(),
            ApiError::TranscriptFailed => "the transcript failed".into(),
            ApiError::PlanLimitExceeded { .. } => {
                "the file is larger or longer than the plan allows".into()
            }
            ApiError::RateLimited { retry_after } => {
                format!("rate limit exceeded; retry in {retry_after} s")
            }
            ApiError::SourceUrlNotSupported => {
                "sourceUrl is not supported: upload the file to the upload URL".into()
            }
            ApiError::BillingUnavailable => "credits could not be checked; retry later".into(),
            ApiError::NotFound => "no such path".into(),
            ApiError::MethodNotAllowed { allow } => {
                format!("method not allowed; this path takes {allow}")
            }
            ApiError::InvalidSignature => "the upload URL's signature is not valid".into(),
            ApiError::UploadExpired => "the upload URL has expired; create a new job".into(),
            ApiError::ContentTypeMismatch { expected } => {
                format!("the upload must be sent with Content-Type: {expected}")
            }
            ApiError::LengthMismatch { expected } => {
                format!("the upload body must be exactly {expected} bytes")
            }
            ApiError::AlreadyUploaded => "the media of this job has already been uploaded".into(),
            ApiError::UploadInProgress => {
                "another upload of this job is in progress; retry the same URL if it fails".into()
            }
            ApiError::BodyTooLarge => "the request body is too large".into(),
            ApiError::IdempotencyKeyReused => {
                "this Idempotency-Key was used with a different body in the last 24 hours".into()
            }
            ApiError::IdempotencyKeyInUse => {
                "another request with this Idempotency-Key is still being processed; retry".into()
            }
            ApiError::MalformedRequest(why) => format!("the request is not valid HTTP/1.1: {why}"),
            ApiError::UriTooLong => "the request target is too long".into(),
            ApiError::HeadersTooLarge => {
                "the request's header section is too large (64 KiB or 100 fields at most)".into()
            }
            ApiError::Internal(_) => "internal error".into(),
        }
    }

    /// The JSON error body: `{error, code}` plus the code's extra fields.
    pub fn body(&self) -> Value {
        let mut m = Map::new();
        m.insert("error".into(), Value::from(self.message()));
        m.insert("code".into(), Value::from(self.code()));
        match self {
            ApiError::InvalidRequest(fields) => {
                let list = fields
                    .iter()
                    .map(|f| json!({"field": f.field, "message": f.message}))
                    .collect();
                m.insert("fields".into(), Value::Array(list));
            }
            ApiError::InsufficientCredits {
                required_cents,
                available_cents,
            } => {
                m.insert("requiredCents".into(), json!(required_cents));
                m.insert("availableCents".into(), json!(available_cents));
            }
            ApiError::TranscriptNotFound { transcripts } => {
                m.insert("transcripts".into(), Value::Array(transcripts.clone()));
            }
            ApiError::JobNotReady { status } | ApiError::TranscriptNotReady { status } => {
                m.insert("status".into(), json!(status));
            }
            ApiError::PlanLimitExceeded { details } => {
                m.insert("details".into(), details.clone());
            }
            ApiError::RateLimited { retry_after } => {
                m.insert("retryAfter".into(), json!(retry_after));
            }
            _ => {}
        }
        Value::Object(m)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for ApiError {}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_carry_code_message_and_extras() {
        let e = ApiError::InsufficientCredits {
            required_cents: 30,
            available_cents: 5,
        };
        assert_eq!(e.status(), 402);
        let body = e.body();
        assert_eq!(body["code"], "insufficient_credits");
        assert_eq!(body["requiredCents"], 30);
        assert_eq!(body["availableCents"], 5);
        let e = ApiError::JobNotReady {
            status: "transcribing".into(),
        };
        assert_eq!((e.code(), e.status()), ("job_not_ready", 409));
        assert_eq!(e.body()["status"], "transcribing");
    }
}
