//! Password hashing: Argon2id (RFC 9106) with OWASP's parameters (19 MiB of memory, 2 passes, one
//! lane), stored as a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$SALT$HASH`), through RustCrypto's
//! `argon2` crate, which also compares in constant time.
//!
//! Hashes written before (PBKDF2-HMAC-SHA256, `pbkdf2-sha256$ITERATIONS$SALT$HASH` in hex) still
//! verify, through RustCrypto's `pbkdf2` crate, and are marked for an upgrade: the sign-in that
//! proves the password stores an Argon2id hash of it in their place ([`Verified::rehash`]), as
//! does a sign-in with an Argon2 hash of weaker parameters than today's.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use sha2::Sha256;

use crate::util::random_bytes;

/// Memory of a new hash, KiB (OWASP's first Argon2id configuration: m=19 MiB, t=2, p=1).
pub const MEMORY_KIB: u32 = 19 * 1024;
/// Passes of a new hash.
pub const PASSES: u32 = 2;
/// Lanes of a new hash.
pub const LANES: u32 = 1;
/// The shortest password accepted.
pub const MIN_LEN: usize = 10;

fn argon2() -> Argon2<'static> {
    let params = Params::new(MEMORY_KIB, PASSES, LANES, None)
        .unwrap_or_else(|_| unreachable!("OWASP's parameters are within Argon2's limits"));
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes a new password (Argon2id).
pub fn hash(password: &str) -> std::io::Result<String> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()?)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// What [`verify`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// The password matches.
    pub ok: bool,
    /// It matches a hash of an older scheme or weaker parameters: store [`hash`] of it instead.
    pub rehash: bool,
}

impl Verified {
    const NO: Verified = Verified {
        ok: false,
        rehash: false,
    };
}

/// Whether `password` matches a stored hash (no for anything malformed), and whether the stored
/// hash should be replaced by a new one.
pub fn verify(password: &str, stored: &str) -> Verified {
    if stored.starts_with("pbkdf2-sha256$") {
        return Verified {
            ok: verify_pbkdf2(password, stored),
            rehash: true,
        };
    }
    let Ok(parsed) = PasswordHash::new(stored) else {
        return Verified::NO;
    };
    if parsed.algorithm != argon2::ARGON2ID_IDENT {
        return Verified::NO;
    }
    let ok = Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok();
    let current = Params::try_from(&parsed)
        .is_ok_and(|p| p.m_cost() >= MEMORY_KIB && p.t_cost() >= PASSES && p.p_cost() >= LANES);
    Verified {
        ok,
        rehash: ok && !current,
    }
}

/// The PBKDF2-HMAC-SHA256 hashes of earlier versions: `pbkdf2-sha256$ITERATIONS$SALT$HASH`, salt
/// and hash in hex, a 32-byte hash.
fn verify_pbkdf2(password: &str, stored: &str) -> bool {
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
    let mut got = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), &salt, iter, &mut got);
    constant_time_eq(&got, &want)
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
    fn new_hashes_are_argon2id_with_owasp_parameters_and_verify_their_password_only() {
        let h = hash("correct horse").expect("random");
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert_eq!(
            verify("correct horse", &h),
            Verified {
                ok: true,
                rehash: false
            }
        );
        assert!(!verify("correct horsE", &h).ok);
        assert!(!verify("x", "").ok);
        assert!(!verify("x", "$argon2id$garbage").ok);
        assert_ne!(h, hash("correct horse").expect("random"), "salted");
    }

    #[test]
    fn pbkdf2_hashes_of_earlier_versions_verify_and_ask_for_a_rehash() {
        // "correct horse", salt 00..0f, 1,000 iterations, in the format earlier versions wrote
        // (made with Python's hashlib.pbkdf2_hmac, an implementation of its own).
        let stored = "pbkdf2-sha256$1000$000102030405060708090a0b0c0d0e0f$\
                      c914cc4f06cc6e8f46d157e3a1b5aa7abceebb17bb0444cd4c4ac16ca2ae9864";
        assert_eq!(
            verify("correct horse", stored),
            Verified {
                ok: true,
                rehash: true
            }
        );
        assert!(!verify("correct horsE", stored).ok);
        assert!(!verify("correct horse", "pbkdf2-sha256$1$zz$00").ok);
    }

    #[test]
    fn an_argon2_hash_of_weaker_parameters_asks_for_a_rehash() {
        let weak = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(8 * 1024, 1, 1, None).expect("params"),
        );
        let salt = SaltString::encode_b64(b"0123456789abcdef").expect("salt");
        let stored = weak
            .hash_password(b"correct horse", &salt)
            .expect("hash")
            .to_string();
        assert_eq!(
            verify("correct horse", &stored),
            Verified {
                ok: true,
                rehash: true
            }
        );
        assert_eq!(verify("wrong horse!", &stored), Verified::NO);
    }
}
