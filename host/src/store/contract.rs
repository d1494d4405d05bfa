//! Checks of the [`Store`] contract that every backend must pass, run by each backend's tests on
//! a real database (SQLite file, PostgreSQL server), so the backends cannot drift apart.

use std::sync::Barrier;

use super::{KeyClaim, NewJob, NewOrgOwner, Store, StoreError, IDEMPOTENCY_TTL_MS};

fn job(id: &str) -> NewJob {
    NewJob {
        id: id.into(),
        org_id: "idem-o".into(),
        owner_member_id: "idem-m".into(),
        api_key_id: "idem-k".into(),
        folder_id: None,
        preset_id: None,
        name: "n".into(),
        filename: "n.wav".into(),
        content_type: "audio/wav".into(),
        size_bytes: 10,
        declared_seconds: 1.0,
        price_cents_per_minute: 1,
        settings: "{}".into(),
        language: "en".into(),
        upload_expires_at: 0,
        created_at: 0,
    }
}

/// `Idempotency-Key` claims: new, in flight, replayed, reused; per organisation; forgotten after
/// a day, after a failure, or when abandoned; exactly one of 16 racing claims is new.
pub fn idempotency(s: &dyn Store) {
    s.create_org_with_owner(&NewOrgOwner {
        org_id: "idem-o",
        org_name: "Org",
        max_bytes: 1 << 30,
        max_seconds: 36000.0,
        member_id: "idem-m",
        email: "m@example.com",
        key_id: "idem-k",
        key_hash: b"idem-hash",
        now: 0,
    })
    .expect("org");
    let claim = |key: &str, hash: &[u8], now| {
        s.claim_idempotency_key("idem-o", key, hash, now)
            .expect("claim")
    };

    assert_eq!(claim("key", b"a", 1000), KeyClaim::New);
    assert_eq!(claim("key", b"a", 1001), KeyClaim::InFlight);
    assert_eq!(claim("key", b"b", 1002), KeyClaim::Reused);
    s.insert_job_for_key(&job("j1"), "key", b"a", "{\"id\":\"j1\"}")
        .expect("insert");
    assert!(s.job("j1").expect("job").is_some());
    assert_eq!(
        claim("key", b"a", 1003),
        KeyClaim::Replay("{\"id\":\"j1\"}".into())
    );
    assert_eq!(claim("key", b"b", 1004), KeyClaim::Reused);
    // Another organisation's key of the same name is its own.
    assert_eq!(
        s.claim_idempotency_key("idem-o2", "key", b"b", 1005).ok(),
        Some(KeyClaim::New)
    );
    // A day later the key is free again.
    assert_eq!(claim("key", b"b", 1000 + IDEMPOTENCY_TTL_MS), KeyClaim::New);

    // A failed request releases its claim.
    assert_eq!(claim("k2", b"a", 0), KeyClaim::New);
    s.release_idempotency_key("idem-o", "k2", b"a")
        .expect("release");
    assert_eq!(claim("k2", b"a", 10), KeyClaim::New);
    assert_eq!(claim("k2", b"a", 20), KeyClaim::InFlight);
    // Its request died: after a minute without a response the key is taken afresh, and the
    // first request can no longer complete it.
    assert_eq!(claim("k2", b"a", 70_000), KeyClaim::New);
    s.insert_job_for_key(&job("j2"), "k2", b"a", "second")
        .expect("the new claim completes");
    assert!(matches!(
        s.insert_job_for_key(&job("j3"), "k2", b"a", "first"),
        Err(StoreError::Conflict(_))
    ));
    assert!(s.job("j3").expect("job").is_none(), "nothing half-written");

    let barrier = Barrier::new(16);
    let claims: Vec<KeyClaim> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    s.claim_idempotency_key("idem-o", "race", b"a", 5)
                        .expect("claim")
                })
            })
            .collect();
        threads.into_iter().filter_map(|t| t.join().ok()).collect()
    });
    assert_eq!(claims.len(), 16);
    let new = claims.iter().filter(|c| **c == KeyClaim::New).count();
    let in_flight = claims.iter().filter(|c| **c == KeyClaim::InFlight).count();
    assert_eq!((new, in_flight), (1, 15), "{claims:?}");
}
