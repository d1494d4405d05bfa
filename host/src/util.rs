//! Small helpers the host shares: random ids and keys, hex, SHA-256, UTC timestamps (RFC 3339).
//!
//! Written here rather than pulled in as dependencies because each is a few lines and the host
//! needs exactly one spelling of each (24-hex ids, `Z` timestamps with milliseconds).

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

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) to days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-11-21T02:20:39.123Z` for a Unix time in milliseconds.
pub fn rfc3339(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

/// The Unix time in milliseconds of the first instant of the UTC month containing `ms`.
pub fn month_start_ms(ms: i64) -> i64 {
    let (y, m, _) = civil_from_days(ms.div_euclid(86_400_000));
    days_from_civil(y, m, 1) * 86_400_000
}

/// Parses an RFC 3339 date-time (`2024-01-31T09:00:00Z`, `...+02:00`, fractions allowed) to Unix
/// milliseconds. A bare date (`2024-01-31`) is taken as midnight UTC.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = s.get(from..from + len)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    if b.len() == 10 {
        return Some(days * 86_400_000);
    }
    if !matches!(b[10], b'T' | b't' | b' ') || b.len() < 19 || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &s[start..i.min(start + 3)];
        frac_ms = digits.parse::<i64>().ok()? * 10i64.pow(3 - digits.len() as u32);
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') if b.len() == i + 1 => 0,
        Some(sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
            let oh = num(i + 1, 2)?;
            let om = num(i + 4, 2)?;
            let total = oh * 60 + om;
            if *sign == b'+' {
                total
            } else {
                -total
            }
        }
        _ => return None,
    };
    Some(
        days * 86_400_000 + h * 3_600_000 + mi * 60_000 + sec * 1000 + frac_ms
            - offset_min * 60_000,
    )
}

/// Percent-decodes a URL query component (`+` is a space). Invalid escapes are kept as written.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let h = |c: u8| (c as char).to_digit(16);
                match (h(b[i + 1]), h(b[i + 2])) {
                    (Some(x), Some(y)) => {
                        out.push((x * 16 + y) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes `s` for an RFC 5987 `filename*` value or a URL path segment: every byte
/// outside the unreserved set is escaped.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The query of a URL as decoded (name, value) pairs, in order.
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
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
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(
            percent_encode("Ünïcode name.srt"),
            "%C3%9Cn%C3%AFcode%20name.srt"
        );
    }
}
