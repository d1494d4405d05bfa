//! Fuzz target `job_request`: arbitrary bytes into the POST /jobs body validation. Whatever comes
//! in, the answer is a valid request or one of the 400/501 errors, never a panic, and a valid
//! request obeys every rule the contract states.
#![no_main]

use cuecraft_host::jobs::validate_create_request;
use cuecraft_host::ApiError;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match validate_create_request(data) {
        Ok(req) => {
            assert!((1..=5_368_709_120).contains(&req.size_bytes));
            assert!(req.duration_seconds.is_finite() && req.duration_seconds > 0.0);
            assert!(req.filename.chars().count() <= 255);
            assert!(!req.name.is_empty());
            assert!(req.content_type.starts_with("audio/") || req.content_type.starts_with("video/")
                || req.content_type.to_ascii_lowercase().starts_with("audio/")
                || req.content_type.to_ascii_lowercase().starts_with("video/"));
            assert!(req.settings.check_combined("settings").is_empty());
        }
        Err(ApiError::InvalidRequest(fields)) => assert!(!fields.is_empty()),
        Err(e) => assert!(matches!(
            e.code(),
            "invalid_json" | "source_url_not_supported"
        )),
    }
});
