//! Password hashing: PBKDF2-HMAC-SHA256 (RFC 8018) with a random 16-byte salt, stored as
//! `pbkdf2-sha256$ITERATIONS$SALT$HASH` (hex), compared in constant time. Written on the `hmac`
//! and `sha2` crates the host already uses for upload signatures.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::util::{hex, random_bytes};

/// Iterations for new hashes (OWASP's 2023 figure for PBKDF2-HMAC-SHA256 is 600,000; this is
/// lower to keep sign-in under ~100 ms on a small machine, and stored per hash so it can grow).
pub const ITERATIONS: u32 = 210_000;
/// The shortest password accepted.
pub const MIN_LEN: usize = 10;

fn pbkdf2(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mac = Hmac::<Sha256>::new_from_slice(password)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    // One 32-byte block: dkLen = hLen.
    let mut u = mac.clone();
    u.update(salt);
    u.update(&1u32.to_be_bytes());
    let mut block: [u8; 32] = u.finalize().into_bytes().into();
    let mut out = block;
    for _ in 1..iterations {
        let mut u = mac.clone();
        u.update(&block);
        block = u.finalize().into_bytes().into();
        for (o, b) in out.iter_mut().zip(block.iter()) {
            *o ^= b;
        }
    }
    out
}

/// Hashes a new password.
pub fn hash(password: &str) -> std::io::Result<String> {
    let salt = random_bytes::<16>()?;
    let dk = pbkdf2(password.as_bytes(), &salt, ITERATIONS);
    Ok(format!(
        "pbkdf2-sha256${ITERATIONS}${}${}",
        hex(&salt),
        hex(&dk)
    ))
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Whether `password` matches a stored hash (false for anything malformed).
pub fn verify(password: &str, stored: &str) -> bool {
    let mut parts = stored.split('$');
    let (Some("pbkdf2-sha256"), Some(iter), Some(salt), Some(want), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let (Ok(iter), Some(salt), Some(want)) = (iter.parse::<u32>(), unhex(salt), unhex(want)) else {
        return false;
    };
    if iter == 0 || iter > 10_000_000 || want.len() != 32 {
        return false;
    }
    let got = pbkdf2(password.as_bytes(), &salt, iter);
    constant_time_eq(&got, &want)
}

/// Compares two byte strings without an early exit on the first difference.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pbkdf2_matches_the_published_sha256_vectors() {
        // RFC 7914 section 11 (PBKDF2-HMAC-SHA256, P="passwd", S="salt", c=1, first 32 bytes).
        assert_eq!(
            hex(&pbkdf2(b"passwd", b"salt", 1)),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        );
        // RFC 7914: P="Password", S="NaCl", c=80000, first 32 bytes.
        assert_eq!(
            hex(&pbkdf2(b"Password", b"NaCl", 80_000)),
            "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
        );
    }

    #[test]
    fn a_hash_verifies_its_password_only() {
        let h = hash("correct horse").expect("random");
        assert!(verify("correct horse", &h));
        assert!(!verify("correct horsE", &h));
        assert!(!verify("correct horse", "pbkdf2-sha256$1$zz$00"));
        assert!(!verify("x", ""));
        assert_ne!(h, hash("correct horse").expect("random"), "salted");
    }
}
