//! Tests of the Postgres store on a real server (pgtest: one cluster per test binary, one fresh
//! database per test).

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use super::*;

/// A fresh database migrated by the store's own migrations.
pub(crate) fn fresh() -> cuecraft_pgtest::TestDb {
    cuecraft_pgtest::fresh_db(|url| {
        let mut c = postgres::Client::connect(url, postgres::NoTls).map_err(|e| e.to_string())?;
        migrations::migrate(&mut c)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

fn store(db: &cuecraft_pgtest::TestDb) -> PostgresStore {
    PostgresStore::open(&db.url).unwrap_or_else(|e| panic!("open {}: {e}", db.url))
}

/// Runs `work` on `n` threads at once, each on its own value made by `make` beforehand (so a
/// failure to make one fails the test instead of leaving the others at the start line).
fn race<T: Send, R: Send>(
    n: usize,
    make: impl Fn() -> T,
    work: impl Fn(&mut T) -> R + Sync,
) -> Vec<R> {
    let values: Vec<T> = (0..n).map(|_| make()).collect();
    let barrier = Barrier::new(n);
    std::thread::scope(|scope| {
        let threads: Vec<_> = values
            .into_iter()
            .map(|mut v| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    barrier.wait();
                    work(&mut v)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn enqueue(s: &PostgresStore, job: &str, task: &str) -> bool {
    s.with(|c| {
        let mut tx = c.client.transaction()?;
        let added = queue::enqueue(&mut tx, job, task)?;
        tx.commit()?;
        Ok(added)
    })
    .expect("enqueue")
}

#[test]
fn migrations_run_once_even_when_processes_start_together() {
    let db = fresh();
    // The template is migrated: nothing is left to apply, from any number of racing starts.
    let applied: Vec<u32> = race(
        4,
        || db.connect(),
        |c| migrations::migrate(c).expect("migrate"),
    );
    assert_eq!(applied, [0, 0, 0, 0]);
    let mut c = db.connect();
    let versions: i64 = c
        .query_one("SELECT COUNT(*) FROM public.migrations", &[])
        .expect("count")
        .get(0);
    assert_eq!(versions, migrations::MAIN.len() as i64);
    let billing: i64 = c
        .query_one("SELECT COUNT(*) FROM billing.migrations", &[])
        .expect("count")
        .get(0);
    assert_eq!(billing, migrations::BILLING.len() as i64);

    // On an empty database, four racing starts apply every migration exactly once.
    let empty = cuecraft_pgtest::cluster(|_| Ok(())).fresh_db();
    {
        let mut c = empty.connect();
        c.batch_execute(
            "DROP SCHEMA billing CASCADE; DROP SCHEMA public CASCADE; CREATE SCHEMA public;",
        )
        .expect("empty the database");
    }
    let applied: u32 = race(
        4,
        || empty.connect(),
        |c| migrations::migrate(c).expect("migrate"),
    )
    .into_iter()
    .sum();
    assert_eq!(
        applied as usize,
        migrations::MAIN.len() + migrations::BILLING.len()
    );
}

#[test]
fn eight_racing_workers_never_claim_a_task_twice() {
    let db = fresh();
    let s = store(&db);
    const JOBS: usize = 400;
    for i in 0..JOBS {
        assert!(enqueue(&s, &format!("job{i:04}"), "job"));
    }
    assert!(!enqueue(&s, "job0000", "job"), "one row per job and task");
    // Each worker its own store, so its own connections, as separate processes have.
    let ids = std::sync::atomic::AtomicUsize::new(0);
    let results = race(
        8,
        || store(&db),
        |s| {
            let me = format!(
                "worker-{}",
                ids.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            );
            let mut got = Vec::new();
            loop {
                let claimed = s
                    .with(|c| queue::claim(c, &me, Duration::from_secs(60)))
                    .expect("claim");
                let Some(task) = claimed else { break };
                assert_eq!(task.attempts, 1, "{task:?} was claimed before");
                got.push(task.job_id.clone());
                assert!(s.with(|c| queue::finish(c, task.seq, &me)).expect("finish"));
            }
            got
        },
    );
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut per_worker = Vec::new();
    for got in results {
        per_worker.push(got.len());
        for job in got {
            *seen.entry(job).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), JOBS, "every task was claimed");
    assert!(seen.values().all(|&n| n == 1), "no task was claimed twice");
    assert!(
        per_worker.iter().filter(|&&n| n > 0).count() > 1,
        "the workers shared the work: {per_worker:?}"
    );
    assert_eq!(s.with(queue::len).expect("len"), 0);
}

#[test]
fn an_expired_lease_is_taken_over_and_the_old_worker_loses_the_row() {
    let db = fresh();
    let s = store(&db);
    enqueue(&s, "j1", "job");
    let first = s
        .with(|c| queue::claim(c, "dead", Duration::from_millis(300)))
        .expect("claim")
        .expect("a task");
    assert_eq!(
        s.with(|c| queue::claim(c, "other", Duration::from_secs(60)))
            .expect("claim"),
        None,
        "a leased row is not free"
    );
    std::thread::sleep(Duration::from_millis(400));
    let second = s
        .with(|c| queue::claim(c, "other", Duration::from_secs(60)))
        .expect("claim")
        .expect("the expired lease is free again");
    assert_eq!((second.seq, second.attempts), (first.seq, 2));
    assert!(
        !s.with(|c| queue::heartbeat(c, first.seq, "dead", Duration::from_secs(60)))
            .expect("heartbeat"),
        "the old worker's heartbeat says it lost the row"
    );
    assert!(!s
        .with(|c| queue::finish(c, first.seq, "dead"))
        .expect("finish"));
    assert!(s
        .with(|c| queue::finish(c, second.seq, "other"))
        .expect("finish"));
}

#[test]
fn heartbeats_keep_a_lease_and_a_released_row_waits_its_delay() {
    let db = fresh();
    let s = store(&db);
    enqueue(&s, "j1", "job");
    let lease = Duration::from_millis(300);
    let t = s
        .with(|c| queue::claim(c, "a", lease))
        .expect("claim")
        .expect("task");
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(100));
        assert!(s
            .with(|c| queue::heartbeat(c, t.seq, "a", lease))
            .expect("heartbeat"));
        assert_eq!(
            s.with(|c| queue::claim(c, "b", lease)).expect("claim"),
            None,
            "a renewed lease is kept past its first length"
        );
    }
    assert!(s
        .with(|c| queue::release(c, t.seq, "a", Duration::from_millis(300)))
        .expect("release"));
    assert_eq!(
        s.with(|c| queue::claim(c, "b", lease)).expect("claim"),
        None
    );
    std::thread::sleep(Duration::from_millis(400));
    let again = s
        .with(|c| queue::claim(c, "b", lease))
        .expect("claim")
        .expect("free after the delay");
    assert_eq!(again.seq, t.seq);
}

#[test]
fn enqueue_belongs_to_its_transaction_and_wakes_listeners_on_commit() {
    let db = fresh();
    let s = store(&db);
    let (tx, rx) = mpsc::channel::<()>();
    let tx = std::sync::Mutex::new(tx);
    let _listener = queue::Listener::start(
        s.main_pool(),
        Arc::new(move || {
            let _ = tx.lock().map(|t| t.send(()));
        }),
    )
    .expect("listener");
    // The wake-up after connecting.
    rx.recv_timeout(Duration::from_secs(5))
        .expect("listener connected");
    while rx.try_recv().is_ok() {}

    // Rolled back: no row, no notification.
    s.with(|c| {
        let mut t = c.client.transaction()?;
        t.execute(
            "CREATE TEMPORARY TABLE status_change (v INTEGER) ON COMMIT DROP",
            &[],
        )?;
        queue::enqueue(&mut t, "rolled-back", "job")?;
        t.rollback()
    })
    .expect("rolled back");
    assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
    assert_eq!(s.with(queue::len).expect("len"), 0);

    // Committed: the row and one wake-up.
    let started = Instant::now();
    assert!(enqueue(&s, "committed", "job"));
    rx.recv_timeout(Duration::from_secs(5))
        .expect("woken by NOTIFY");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(s.with(queue::len).expect("len"), 1);
}

#[test]
fn ledger_movements_are_idempotent_and_net_out() {
    let db = fresh();
    let s = store(&db);
    let b = |s: &PostgresStore| {
        s.with_billing(|c| ledger::balance(c, "o"))
            .expect("balance")
    };
    assert_eq!(
        s.with_billing(|c| ledger::add_credit(c, "o", 100))
            .expect("credit"),
        100
    );
    assert!(s
        .with_billing(|c| ledger::charge(c, "o", "j", 30))
        .expect("charge"));
    assert!(!s
        .with_billing(|c| ledger::charge(c, "o", "j", 30))
        .expect("charge"));
    assert_eq!(b(&s), 70);
    s.with_billing(|c| ledger::settle(c, "o", "j", 20))
        .expect("settle");
    s.with_billing(|c| ledger::settle(c, "o", "j", 50))
        .expect("settle");
    assert_eq!(b(&s), 80);
    s.with_billing(|c| ledger::refund(c, "o", "j"))
        .expect("refund");
    s.with_billing(|c| ledger::refund(c, "o", "j"))
        .expect("refund");
    assert_eq!(b(&s), 100);
    assert_eq!(
        s.with_billing(|c| ledger::rows(c, "j")).expect("rows"),
        [
            ("charge".to_string(), -30),
            ("settle".to_string(), 10),
            ("refund".to_string(), 20)
        ]
    );
}

#[test]
fn a_locked_ledger_fails_quickly_while_jobs_go_on() {
    let db = fresh();
    let s = store(&db);
    s.with_billing(|c| ledger::add_credit(c, "o", 5))
        .expect("credit");
    let mut locker = db.connect();
    let mut tx = locker.transaction().expect("begin");
    tx.batch_execute("LOCK TABLE billing.ledger IN ACCESS EXCLUSIVE MODE")
        .expect("lock");
    let started = Instant::now();
    let r = s.with_billing(|c| ledger::balance(c, "o"));
    assert!(r.is_err(), "a locked ledger is unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "and says so fast"
    );
    assert_eq!(s.with(queue::len).expect("the main schema answers"), 0);
    tx.rollback().expect("unlock");
    assert_eq!(
        s.with_billing(|c| ledger::balance(c, "o")).expect("back"),
        5
    );
}

#[test]
fn the_rate_limit_is_shared_by_every_process_of_a_database() {
    let db = fresh();
    let a = store(&db);
    let b = store(&db);
    assert_eq!(a.rate_check("k", 3).expect("check"), Ok(()));
    assert_eq!(b.rate_check("k", 3).expect("check"), Ok(()));
    assert_eq!(a.rate_check("k", 3).expect("check"), Ok(()));
    let refused = b.rate_check("k", 3).expect("check");
    let Err(wait) = refused else {
        panic!("the fourth request of the minute is refused, from either process")
    };
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(a.rate_check("other", 3).expect("check"), Ok(()));
    // Refused requests are not counted: the window still holds 3.
    let mut c = db.connect();
    let held: i64 = c
        .query_one(
            "SELECT SUM(n)::BIGINT FROM rate_buckets WHERE key = 'k'",
            &[],
        )
        .expect("sum")
        .get(0);
    assert_eq!(held, 3);
    // Requests of 60 s ago have left the window.
    c.execute(
        "UPDATE rate_buckets SET second = second - 60 WHERE key = 'k'",
        &[],
    )
    .expect("age");
    assert_eq!(b.rate_check("k", 3).expect("check"), Ok(()));
}

#[test]
fn racing_processes_cannot_both_take_the_last_place() {
    let db = fresh();
    let allowed: usize = race(
        8,
        || store(&db),
        |s| {
            (0..10)
                .filter(|_| s.rate_check("k", 25).expect("check").is_ok())
                .count()
        },
    )
    .into_iter()
    .sum();
    assert_eq!(allowed, 25);
}
