//! Criterion bench `ratelimit`: the cost of the per-key rate limit on one request, counted in
//! this process's memory (`RateLimiter`, the SQLite store's) and in Postgres (the shared count of
//! `PostgresStore::rate_check`: one round trip over a Unix socket to a local server started by
//! pgtest, one function call taking a transaction-scoped advisory lock and upserting a bucket).
//! 64 keys in rotation, a limit high enough never to refuse, as under load.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use cuecraft_host::http::ratelimit::RateLimiter;
use cuecraft_host::store::postgres::PostgresStore;

fn keys() -> Vec<String> {
    (0..64).map(|i| format!("key-{i:02}")).collect()
}

fn rate_limit(c: &mut Criterion) {
    let keys = keys();
    let mut group = c.benchmark_group("rate_limit");

    let memory = RateLimiter::new(u32::MAX);
    let mut i = 0;
    group.bench_function("memory", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(memory.check(&keys[i]))
        })
    });

    let db = cuecraft_pgtest::fresh_db(|url| {
        PostgresStore::open(url)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    let store = PostgresStore::open(&db.url).expect("open the Postgres store");
    let mut i = 0;
    group.bench_function("postgres", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(
                store
                    .shared_rate_check(&keys[i], u32::MAX)
                    .expect("rate check"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, rate_limit);
criterion_main!(benches);
