//! Behaviour that needs several processes on one Postgres store, run whatever the run's backend
//! (Postgres is installed by scripts/setup; each test gets its own database of the binary's
//! cluster).

use crate::common::{pg_db, Server};

#[test]
fn every_api_process_of_a_store_counts_against_one_rate_limit() {
    let db = pg_db();
    let a = Server::start_on(
        Some(&db),
        &["--workers", "0", "--rate-limit-per-minute", "10"],
    );
    let b = Server::start_on(
        Some(&db),
        &["--workers", "0", "--rate-limit-per-minute", "10"],
    );
    let org = a.org(0, &[]);
    let path = "/v1/jobs/0123456789abcdef01234567";
    for i in 0..10 {
        let server = if i % 2 == 0 { &a } else { &b };
        let r = server.get(&org.key, path);
        assert_eq!(
            r.status,
            404,
            "request {i} is within the limit: {}",
            r.text()
        );
    }
    for server in [&a, &b] {
        let r = server.get(&org.key, path);
        r.expect_error(429, "rate_limited");
        let retry: u64 = r
            .header("retry-after")
            .and_then(|v| v.parse().ok())
            .expect("Retry-After");
        assert!((1..=60).contains(&retry), "{retry}");
    }
    // Another key of the organisation has its own minute, on either process.
    let other = a.admin(&["key", "create", "--org", &org.id, "--member", &org.owner]);
    let other = other["key"].as_str().expect("key");
    assert_eq!(b.get(other, path).status, 404);
}
