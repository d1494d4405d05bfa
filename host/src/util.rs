//! Small helpers the host shares: random ids and keys, hex, SHA-256, UTC timestamps (RFC 3339),
//! URL queries and percent-encoding, and the file lock that tells a live writer's files from
//! those a crashed process left.
//!
//! Dates, queries and percent-encoding go through well-kept crates (`time`, `form_urlencoded`,
//! `percent-encoding`); ids, keys and hex are a few lines each, written here because the host
//! needs exactly one spelling of each (24-hex ids, `cc_live_` keys).

use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// `n` bytes from the kernel's random source.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf)
}

/// Lowercase hexadecimal of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Takes an exclusive `flock` on `f` without waiting; whether it was taken. The lock belongs to
/// the open file (not the path): it holds under a new name after a rename, it conflicts with
/// another open of the same file even in the same process, and the kernel drops it when the
/// process ends, a crash included. So a file whose lock can be taken has no live writer.
pub fn try_lock(f: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    #[allow(unsafe_code)]
    // SAFETY: flock on a descriptor this File owns and keeps open; no memory is passed.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    r == 0
}

/// A new record id: 12 random bytes as 24 lowercase hex characters.
pub fn new_id() -> std::io::Result<String> {
    Ok(hex(&random_bytes::<12>()?))
}

/// Whether `s` is an id: exactly 24 lowercase hex characters.
pub fn is_id(s: &str) -> bool {
    s.len() == 24
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The prefix every API key starts with, so that a pasted key is recognisable and a malformed one
/// can be told from an unknown one.
pub const KEY_PREFIX: &str = "cc_live_";

/// A new API key: the prefix and 32 random bytes as 64 lowercase hex characters.
pub fn new_api_key() -> std::io::Result<String> {
    Ok(format!("{KEY_PREFIX}{}", hex(&random_bytes::<32>()?)))
}

/// Whether `key` has the shape of an API key (prefix + 64 lowercase hex).
pub fn is_api_key_shape(key: &str) -> bool {
    key.strip_prefix(KEY_PREFIX).is_some_and(|rest| {
        rest.len() == 64
            && rest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> Vec<u8> {
    Sha256::digest(data).to_vec()
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The UTC date-time of a Unix time in milliseconds (`None` outside years -9999..=9999).
fn utc(ms: i64) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

/// `2026-11-21T02:20:39.123Z` for a Unix time in milliseconds (the `time` crate), always with
/// milliseconds and `Z`, the one spelling the API documents.
pub fn rfc3339(ms: i64) -> String {
    const FORMAT: &[time::format_description::BorrowedFormatItem<'static>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    utc(ms)
        .and_then(|t| t.format(FORMAT).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_string())
}

/// The Unix time in milliseconds of the first instant of the UTC month containing `ms`.
pub fn month_start_ms(ms: i64) -> i64 {
    utc(ms)
        .and_then(|t| t.replace_day(1).ok())
        .map(|t| t.replace_time(time::Time::MIDNIGHT))
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .unwrap_or(ms)
}

/// Parses an RFC 3339 date-time (`2024-01-31T09:00:00Z`, `...+02:00`, fractions allowed) to Unix
/// milliseconds (the `time` crate). A bare date (`2024-01-31`) is taken as midnight UTC.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    const DATE: &[time::format_description::BorrowedFormatItem<'static>] =
        time::macros::format_description!("[year]-[month]-[day]");
    let t = match time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339) {
        Ok(t) => t,
        Err(_) => time::Date::parse(s, DATE).ok()?.midnight().assume_utc(),
    };
    Some((t.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// What [`percent_encode`] escapes: every byte outside RFC 3986's unreserved set.
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes `s` for an RFC 5987 `filename*` value or a URL path segment: every byte
/// outside the unreserved set is escaped (the `percent-encoding` crate).
pub fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, NOT_UNRESERVED).to_string()
}

/// The query of a URL (or an `application/x-www-form-urlencoded` body) as decoded (name, value)
/// pairs, in order (the `form_urlencoded` crate: `+` is a space, invalid escapes are kept as
/// written, invalid UTF-8 is replaced).
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_through_rfc3339() {
        for ms in [
            0,
            1_700_000_000_123,
            951_782_400_000,
            -86_400_000,
            4_102_444_800_000,
        ] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms), "{}", rfc3339(ms));
        }
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn rfc3339_parser_takes_offsets_dates_and_refuses_garbage() {
        assert_eq!(
            parse_rfc3339("2024-01-31T10:00:00+01:00"),
            parse_rfc3339("2024-01-31T09:00:00Z")
        );
        assert_eq!(
            parse_rfc3339("2024-01-31"),
            parse_rfc3339("2024-01-31T00:00:00Z")
        );
        assert_eq!(
            parse_rfc3339("2024-01-31T09:00:00.5Z").map(|m| m % 1000),
            Some(500)
        );
        for bad in [
            "",
            "2024-13-01",
            "2024-01-31T25:00:00Z",
            "yesterday",
            "2024-01-31T09:00:00",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn month_start_is_the_first_of_the_month_utc() {
        let ms = parse_rfc3339("2026-11-21T02:20:39Z").unwrap_or(0);
        assert_eq!(rfc3339(month_start_ms(ms)), "2026-11-01T00:00:00.000Z");
    }

    #[test]
    fn ids_and_keys_have_their_documented_shapes() {
        let id = new_id().unwrap_or_default();
        assert!(is_id(&id), "{id}");
        assert!(!is_id("ABCDEF0123456789abcdef01"));
        let key = new_api_key().unwrap_or_default();
        assert!(is_api_key_shape(&key), "{key}");
        assert!(!is_api_key_shape("cc_live_abc"));
        assert!(!is_api_key_shape(&key.replace("cc_live_", "cc_test_")));
    }

    #[test]
    fn query_components_are_percent_decoded() {
        assert_eq!(
            parse_query("format=srt&language=zh%2DTW&x=a+b&flag"),
            vec![
                ("format".into(), "srt".into()),
                ("language".into(), "zh-TW".into()),
                ("x".into(), "a b".into()),
                ("flag".into(), String::new())
            ]
        );
        assert_eq!(parse_query("a=%zz%4"), vec![("a".into(), "%zz%4".into())]);
        assert_eq!(
            percent_encode("Ünïcode name.srt"),
            "%C3%9Cn%C3%AFcode%20name.srt"
        );
    }
}
