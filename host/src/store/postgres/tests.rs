//! Tests of the Postgres store on a real server (pgtest: one cluster per test binary, one fresh
//! database per test).

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use super::*;
use crate::store::{Store, StoreError};
use crate::util::now_ms;

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
        let added = queue::enqueue(&mut tx, job, task, now_ms())?;
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
    let empty = fresh();
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
    const JOBS: usize = 1000;
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
            // Rows stay claimed (leased for a minute) until every worker has found none
            // free, so a row claimed twice would show up twice.
            while let Some(task) = s.claim_task(&me, now_ms(), 60_000).expect("claim") {
                got.push(task.job_id);
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
    let mut c = db.connect();
    let reclaimed: i64 = c
        .query_one("SELECT COUNT(*) FROM queue WHERE attempts <> 1", &[])
        .expect("count")
        .get(0);
    assert_eq!(reclaimed, 0);
}

#[test]
fn an_expired_lease_is_taken_over_and_the_old_worker_loses_the_row() {
    let db = fresh();
    let s = store(&db);
    enqueue(&s, "j1", "job");
    let t0 = now_ms();
    let first = s
        .claim_task("dead", t0, 30_000)
        .expect("claim")
        .expect("a task");
    assert!(
        s.claim_task("other", t0 + 29_999, 30_000)
            .expect("claim")
            .is_none(),
        "a leased row is not free"
    );
    let second = s
        .claim_task("other", t0 + 30_000, 30_000)
        .expect("claim")
        .expect("the expired lease is free again");
    assert_eq!(second.seq, first.seq);
    assert!(
        !s.extend_lease(first.seq, "dead", t0 + 90_000)
            .expect("extend"),
        "the old worker's heartbeat says it lost the row"
    );
    assert!(
        s.claim_task("third", t0 + 59_999, 30_000)
            .expect("claim")
            .is_none(),
        "the new lease holds"
    );
    let mut c = db.connect();
    let attempts: i32 = c
        .query_one("SELECT attempts FROM queue WHERE seq = $1", &[&first.seq])
        .expect("attempts")
        .get(0);
    assert_eq!(attempts, 2);
}

#[test]
fn heartbeats_keep_a_lease_and_a_released_row_waits_its_delay() {
    let db = fresh();
    let s = store(&db);
    enqueue(&s, "j1", "job");
    let t0 = now_ms();
    let t = s.claim_task("a", t0, 1_000).expect("claim").expect("task");
    for i in 1..6 {
        let now = t0 + i * 800;
        assert!(s.extend_lease(t.seq, "a", now + 1_000).expect("extend"));
        assert!(
            s.claim_task("b", now + 500, 1_000)
                .expect("claim")
                .is_none(),
            "a renewed lease is kept past its first length"
        );
    }
    let later = t0 + 10_000;
    s.release_task(t.seq, "a", later + 2_000).expect("release");
    assert!(s
        .claim_task("b", later + 1_999, 1_000)
        .expect("claim")
        .is_none());
    let again = s
        .claim_task("b", later + 2_000, 1_000)
        .expect("claim")
        .expect("free after the delay");
    assert_eq!(again.seq, t.seq);
    // Another worker cannot release or extend a row it does not hold.
    s.release_task(t.seq, "a", later).expect("release");
    assert!(s
        .claim_task("c", later + 2_500, 1_000)
        .expect("claim")
        .is_none());
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
        queue::enqueue(&mut t, "rolled-back", "job", now_ms())?;
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
    let r = s.balance("o");
    assert!(
        matches!(r, Err(StoreError::Unavailable(_))),
        "a locked ledger is unavailable: {r:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "and says so fast"
    );
    assert_eq!(s.queue_len().expect("the main schema answers"), 0);
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
    assert_eq!(a.shared_rate_check("k", 3).expect("check"), Ok(()));
    assert_eq!(b.shared_rate_check("k", 3).expect("check"), Ok(()));
    assert_eq!(a.shared_rate_check("k", 3).expect("check"), Ok(()));
    let refused = b.shared_rate_check("k", 3).expect("check");
    let Err(wait) = refused else {
        panic!("the fourth request of the minute is refused, from either process")
    };
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(a.shared_rate_check("other", 3).expect("check"), Ok(()));
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
    assert_eq!(b.shared_rate_check("k", 3).expect("check"), Ok(()));
}

#[test]
fn racing_processes_cannot_both_take_the_last_place() {
    let db = fresh();
    let allowed: usize = race(
        8,
        || store(&db),
        |s| {
            (0..10)
                .filter(|_| s.shared_rate_check("k", 25).expect("check").is_ok())
                .count()
        },
    )
    .into_iter()
    .sum();
    assert_eq!(allowed, 25);
}

#[test]
fn a_job_goes_through_every_transition_and_the_web_reads_it() {
    use crate::store::{
        Cursor, Formatted, Member, NewJob, NewOrgOwner, ProjectQuery, Recognized, Saved, Sort,
        WordsEdit,
    };
    let db = fresh();
    let s = store(&db);
    assert!(s.is_empty().expect("empty"));
    let key_hash = crate::util::sha256(b"key");
    s.create_org_with_owner(&NewOrgOwner {
        org_id: "o1",
        org_name: "Acme",
        max_bytes: 1 << 30,
        max_seconds: 3600.0,
        member_id: "m1",
        email: "Owner@Example.com",
        key_id: "k1",
        key_hash: &key_hash,
        now: 1_000,
    })
    .expect("org");
    assert!(!s.is_empty().expect("empty"));
    assert_eq!(s.plan_limits("o1").expect("limits"), (1 << 30, 3600.0));
    assert!(matches!(
        s.plan_limits("nope"),
        Err(StoreError::NotFound(_))
    ));
    let caller = s.find_key(&key_hash).expect("key").expect("found");
    assert_eq!(
        (caller.org_id.as_str(), caller.member_id.as_str()),
        ("o1", "m1")
    );
    assert_eq!(
        s.job_owner("o1", "m1").expect("owner").as_deref(),
        Some("m1")
    );
    s.create_folder("f1", "o1", "Folder", 1_000)
        .expect("folder");
    assert!(s.folder_in_org("o1", "f1").expect("folder"));
    s.add_member("m2", "o1", "m@example.com", "member", 2_000)
        .expect("member");
    s.add_folder_member("f1", "m2").expect("add");
    s.add_folder_member("f1", "m2").expect("idempotent");
    s.set_monthly_quota(500).expect("quota");
    s.set_monthly_quota(600).expect("quota");
    assert_eq!(s.monthly_quota().expect("quota"), Some(600));

    let job = |id: &str, name: &str, folder: Option<&str>, at: i64| NewJob {
        id: id.into(),
        org_id: "o1".into(),
        owner_member_id: "m1".into(),
        api_key_id: "k1".into(),
        folder_id: folder.map(str::to_string),
        preset_id: None,
        name: name.into(),
        filename: "a.wav".into(),
        content_type: "audio/wav".into(),
        size_bytes: 100,
        declared_seconds: 3.0,
        price_cents_per_minute: 10,
        settings: "{}".into(),
        language: "en".into(),
        upload_expires_at: at + 3_600_000,
        created_at: at,
        request_id: None,
    };
    s.insert_job(&job("j1", "beta", None, 10_000)).expect("job");
    s.insert_job(&job("j2", "alpha", Some("f1"), 11_000))
        .expect("job");
    assert!(matches!(
        s.insert_job(&job("j1", "again", None, 12_000)),
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.bytes_this_month(0, 20_000).expect("bytes"), 200);
    assert_eq!(s.uploading_jobs().expect("uploading").len(), 2);

    assert!(s.start_transcribing("j1", 20_000).expect("start"));
    assert!(!s.start_transcribing("j1", 20_000).expect("only once"));
    let task = s
        .claim_task("w", 20_000, 30_000)
        .expect("claim")
        .expect("task");
    assert_eq!((task.job_id.as_str(), task.kind.as_str()), ("j1", "job"));
    s.store_original(
        "j1",
        &Recognized {
            transcript_id: "t1".into(),
            language: "en".into(),
            words: "[1]".into(),
            measured_seconds: 2.5,
            frame_num: 25,
            frame_den: 1,
        },
        21_000,
    )
    .expect("original");
    let j = s.job("j1").expect("job").expect("found");
    assert_eq!(
        (j.status.as_str(), j.frame_num, j.measured_seconds),
        ("formatting", Some(25), Some(2.5))
    );
    assert_eq!(
        s.original_words("j1").expect("words"),
        Some(("en".to_string(), "[1]".to_string()))
    );
    s.finish_formatting(
        "j1",
        &Formatted {
            clean_id: "t2".into(),
            clean_label: "Clean version".into(),
            language: "en".into(),
            highlights: None,
            chapters: None,
        },
        task.seq,
        22_000,
    )
    .expect("format");
    assert_eq!(s.job("j1").expect("job").expect("found").status, "ready");
    let clean = s
        .claim_task("w", 22_000, 30_000)
        .expect("claim")
        .expect("clean");
    assert_eq!(clean.kind, "clean");
    let src = s.clean_source("j1").expect("source").expect("found");
    assert_eq!(
        (src.status.as_str(), src.words.as_str()),
        ("pending", "[1]")
    );
    s.mark_processing("t2").expect("processing");
    s.finish_clean("t2", "[2]", clean.seq).expect("clean");
    assert_eq!(s.queue_len().expect("len"), 0);
    let kinds: Vec<String> = s
        .transcripts("j1")
        .expect("transcripts")
        .into_iter()
        .map(|t| t.kind)
        .collect();
    assert_eq!(kinds, ["original", "clean"]);

    // A failing job: everything not ready fails with it, and its queue row goes.
    assert!(s.start_transcribing("j2", 23_000).expect("start"));
    let t = s
        .claim_task("w", 23_000, 30_000)
        .expect("claim")
        .expect("task");
    s.fail_job("j2", "broken", t.seq, 24_000).expect("fail");
    let j2 = s.job("j2").expect("job").expect("found");
    assert_eq!(
        (j2.status.as_str(), j2.error.as_deref()),
        ("failed", Some("broken"))
    );
    assert_eq!(s.requeue_unfinished(25_000).expect("requeue"), 0);

    // The editor: words, a compare-and-swap save, history, a translation.
    let words = s
        .transcript_words("j1", None)
        .expect("words")
        .expect("ready");
    assert_eq!((words.transcript_id.as_str(), words.revision), ("t1", 0));
    assert_eq!(
        s.transcript_head("j1", Some("t2")).expect("head"),
        Some(("t2".to_string(), 0))
    );
    let edit = |expected| WordsEdit {
        job_id: "j1",
        transcript_id: "t1",
        expected,
        from: 0,
        remove: 1,
        insert: "[3]",
        change: "{}",
        member_id: "m1",
        note: "Edited",
        settings: None,
        lead_in_frames: None,
        now: 30_000,
    };
    assert_eq!(s.save_words(&edit(0)).expect("save"), Saved::Revision(1));
    assert_eq!(s.save_words(&edit(0)).expect("save"), Saved::Conflict(1));
    assert_eq!(s.revisions("t1").expect("history").len(), 2);
    assert_eq!(
        s.revision_entries("t1", 1).expect("entries"),
        ["[1]".to_string(), "{}".to_string()]
    );
    let before = s.job("j1").expect("job").expect("found").updated_at;
    let tr = s
        .add_translation("j1", "nl", "Translation (nl)", "[4]", 0)
        .expect("translation");
    assert_eq!(s.ready_transcripts("j1").expect("ready").len(), 3);
    assert!(s.job("j1").expect("job").expect("found").updated_at > before);
    assert!(s
        .transcript_words("j1", Some(&tr))
        .expect("words")
        .is_some());
    s.set_job_settings("j1", "{\"x\":1}", 0).expect("settings");

    // Sessions, sign-in links and passwords.
    let link = s.create_login_link("m1", 40_000).expect("link");
    assert!(s.login_link_usable(&link, 40_001).expect("usable"));
    let member = s
        .consume_login_link(&link, 40_002)
        .expect("use")
        .expect("member");
    assert_eq!(member.org_name, "Acme");
    assert!(s.consume_login_link(&link, 40_003).expect("use").is_none());
    let (token, csrf) = s.create_session("m1", 40_000).expect("session");
    let session = s.session(&token, 40_001).expect("session").expect("live");
    assert_eq!(session.csrf, csrf);
    s.set_password("m1", "hash").expect("password");
    assert_eq!(
        s.password_candidates("owner@EXAMPLE.com")
            .expect("candidates"),
        [("m1".to_string(), "hash".to_string())]
    );

    // The project list: every sort, a cursor, a member's view.
    let owner = session.member.clone();
    let page = |viewer: &Member, sort, after| {
        s.list_projects(
            viewer,
            &ProjectQuery {
                search: None,
                status: None,
                folder: None,
                sort,
                after,
                limit: 1,
            },
        )
        .expect("list")
        .into_iter()
        .map(|p| p.id)
        .collect::<Vec<_>>()
    };
    assert_eq!(page(&owner, Sort::Name, None), ["j2", "j1"]);
    assert_eq!(
        page(
            &owner,
            Sort::Name,
            Some(Cursor::Name("alpha".into(), "j2".into()))
        ),
        ["j1"]
    );
    assert_eq!(page(&owner, Sort::Created, None), ["j2", "j1"]);
    assert_eq!(
        page(
            &owner,
            Sort::Updated,
            Some(Cursor::Time(i64::MAX, "z".into()))
        )
        .len(),
        2
    );
    let searched = s
        .list_projects(
            &owner,
            &ProjectQuery {
                search: Some("ALP".into()),
                status: Some("failed".into()),
                folder: Some("f1".into()),
                sort: Sort::Created,
                after: None,
                limit: 10,
            },
        )
        .expect("list");
    assert_eq!(searched.len(), 1);
    assert_eq!(searched[0].folder.as_deref(), Some("Folder"));
    let m2 = s.active_member("m2").expect("member").expect("active");
    assert_eq!(
        page(&m2, Sort::Created, None),
        ["j2"],
        "a member sees their folder's job"
    );
    assert!(s.visible_job(&m2, "j1").expect("visible").is_none());
    assert_eq!(s.folders(&m2).expect("folders").len(), 1);
    assert_eq!(
        s.project_statuses(&m2, &["j1".into(), "j2".into()])
            .expect("statuses")
            .len(),
        1
    );

    // Leaving ends the member's sessions; revoking a key is immediate and remembered.
    assert_eq!(s.remove_member("m1", 50_000).expect("remove"), 50_000);
    assert_eq!(s.remove_member("m1", 60_000).expect("again"), 50_000);
    assert!(s.session(&token, 50_001).expect("session").is_none());
    assert_eq!(s.revoke_key("k1", 50_000).expect("revoke"), 50_000);
    assert_eq!(s.revoke_key("k1", 60_000).expect("again"), 50_000);
    assert!(s.find_key(&key_hash).expect("key").is_none());
    assert!(matches!(
        s.revoke_key("nope", 1),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn work_enqueued_by_one_process_wakes_the_idle_workers_of_another() {
    let db = fresh();
    let api = store(&db);
    let worker = store(&db);
    let wake = worker.wake();
    // The first look starts the listener, which signals once connected.
    let e0 = wake.epoch();
    wake.wait(e0, Duration::from_secs(10));
    let seen = wake.epoch();
    assert!(seen > e0, "the listener connected");
    let started = Instant::now();
    enqueue(&api, "j1", "job");
    wake.wait(seen, Duration::from_secs(10));
    assert!(wake.epoch() > seen, "woken by the other process's NOTIFY");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "woken at once, not by the poll: {:?}",
        started.elapsed()
    );
}

#[test]
fn names_with_nul_and_the_escape_character_come_back_exactly() {
    use crate::store::NewJob;
    let db = fresh();
    let s = store(&db);
    s.create_org("o", "Org", 1, 1.0, 0).expect("org");
    s.add_member("m", "o", "a@example.com", "owner", 0)
        .expect("member");
    for (i, name) in ["a\0b", "\u{FFFE}0", "\u{FFFE}", "x\u{FFFE}\u{FFFE}\0"]
        .into_iter()
        .enumerate()
    {
        let id = format!("j{i}");
        s.insert_job(&NewJob {
            id: id.clone(),
            org_id: "o".into(),
            owner_member_id: "m".into(),
            api_key_id: "k".into(),
            folder_id: None,
            preset_id: None,
            name: name.into(),
            filename: format!("{name}.wav"),
            content_type: "audio/wav".into(),
            size_bytes: 1,
            declared_seconds: 1.0,
            price_cents_per_minute: 1,
            settings: "{}".into(),
            language: "en".into(),
            upload_expires_at: 1,
            created_at: 0,
            request_id: None,
        })
        .expect("insert");
        let job = s.job(&id).expect("job").expect("found");
        assert_eq!(
            (job.name.as_str(), job.filename),
            (name, format!("{name}.wav"))
        );
    }
    assert!(s.password_candidates("a\0").expect("candidates").is_empty());
}

#[test]
fn the_postgres_store_keeps_the_idempotency_contract() {
    let db = fresh();
    let s = store(&db);
    crate::store::contract::idempotency(&s);
}

#[test]
fn the_postgres_store_keeps_the_speaker_names_contract() {
    let db = fresh();
    crate::store::contract::speaker_names(&store(&db));
}

#[test]
fn the_postgres_store_keeps_the_shot_changes_contract() {
    let db = fresh();
    crate::store::contract::shot_changes(&store(&db));
}

#[test]
fn the_postgres_store_keeps_the_queue_stats_contract() {
    let db = fresh();
    crate::store::contract::queue_stats(&store(&db));
}

#[test]
fn the_postgres_store_keeps_the_word_pages_contract() {
    let db = fresh();
    let s = store(&db);
    crate::store::contract::word_pages(&s, crate::store::pages::Geometry::DEFAULT.target);
    // Pages of three words with keys two apart: splits, merges and renumbering all the time.
    let db = fresh();
    let mut s = store(&db);
    s.pages = crate::store::pages::Geometry {
        target: 3,
        spacing: 2,
    };
    crate::store::contract::word_pages(&s, 3);
}

#[test]
fn migration_3_moves_stored_lists_into_pages_byte_for_byte() {
    // A database of the version before: the lists in `transcripts.words`.
    let db = fresh();
    let long: Vec<String> = (0..2500)
        .map(|k| {
            format!(
                "{{\"t\":\"w{k} \\u00e9 \\\"\",\"s\":{k},\"e\":{},\"p\":0}}",
                k + 1
            )
        })
        .collect();
    let long = format!("[{}]", long.join(","));
    {
        let mut c = db.connect();
        c.batch_execute(
            "DROP SCHEMA IF EXISTS billing CASCADE; DROP SCHEMA public CASCADE; CREATE SCHEMA public;",
        )
        .expect("empty the database");
        migrations::apply(&mut c, "public", &migrations::MAIN[..2]).expect("migrate to 2");
        c.batch_execute(
            "INSERT INTO orgs VALUES ('o', 'O', 1, 1, 0);
             INSERT INTO members (id, org_id, email, role, joined_at) VALUES ('m', 'o', 'e', 'owner', 0);
             INSERT INTO jobs (id, org_id, owner_member_id, api_key_id, name, filename, content_type,
                size_bytes, declared_seconds, price_cents_per_minute, settings, status, language,
                upload_expires_at, created_at, updated_at)
             VALUES ('j', 'o', 'm', 'k', 'n', 'f', 'audio/wav', 1, 1, 1, '{}', 'ready', 'en', 0, 0, 0);",
        )
        .expect("rows");
        for (seq, (id, words)) in [
            ("t-long", Some(long.as_str())),
            ("t-empty", Some("[]")),
            ("t-pending", None),
        ]
        .iter()
        .enumerate()
        {
            c.execute(
                "INSERT INTO transcripts (id, job_id, seq, language, kind, status, words, created_at)
                 VALUES ($1, 'j', $2, 'en', 'translation', 'ready', $3, 0)",
                &[id, &(seq as i64 + 1), words],
            )
            .expect("transcript");
        }
    }
    let s = store(&db);
    let read = |id: &str| {
        s.transcript_words("j", Some(id))
            .expect("read")
            .expect("ready")
            .words
    };
    assert_eq!(read("t-long"), long);
    assert_eq!(read("t-empty"), "[]");
    assert_eq!(read("t-pending"), "[]");
    let mut c = db.connect();
    let counts: Vec<i64> = c
        .query(
            "SELECT n FROM word_pages WHERE transcript_id = 't-long' ORDER BY page",
            &[],
        )
        .expect("pages")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(counts, [1000, 1000, 500]);
    assert!(c.query("SELECT words FROM transcripts", &[]).is_err());
    // Splices work on the moved pages.
    s.save_words(&crate::store::WordsEdit {
        job_id: "j",
        transcript_id: "t-long",
        expected: 0,
        from: 999,
        remove: 2,
        insert: "[]",
        change: "{}",
        member_id: "m",
        note: "n",
        settings: None,
        lead_in_frames: None,
        now: 1,
    })
    .expect("save");
    let mut words = crate::words::split_encoded(&long).expect("list");
    words.drain(999..1001);
    assert_eq!(read("t-long"), format!("[{}]", words.join(",")));
}

#[test]
fn migration_9_marks_every_cue_of_a_file_timed_by_hand() {
    let db = fresh();
    {
        let mut c = db.connect();
        c.batch_execute(
            "DROP SCHEMA IF EXISTS billing CASCADE; DROP SCHEMA public CASCADE; CREATE SCHEMA public;",
        )
        .expect("empty the database");
        migrations::apply(&mut c, "public", &migrations::MAIN[..8]).expect("migrate to 8");
        c.batch_execute(crate::store::contract::BEFORE_TIMED_PER_CUE)
            .expect("rows");
    }
    crate::store::contract::timed_per_cue(&store(&db));
}

/// A cluster of its own listening on 127.0.0.1 with TLS from a test CA (certificate for
/// `localhost` only), shared by this binary's TLS tests, and its certificates.
fn tls_cluster() -> &'static (
    cuecraft_pgtest::TestCerts,
    &'static cuecraft_pgtest::Cluster,
) {
    static CLUSTER: std::sync::OnceLock<(
        cuecraft_pgtest::TestCerts,
        &'static cuecraft_pgtest::Cluster,
    )> = std::sync::OnceLock::new();
    CLUSTER.get_or_init(|| {
        let certs = cuecraft_pgtest::TestCerts::make();
        let cluster = cuecraft_pgtest::tcp_cluster(Some((&certs.cert, &certs.key)), migrate);
        (certs, cluster)
    })
}

fn migrate(url: &str) -> Result<(), String> {
    let mut c = postgres::Client::connect(url, postgres::NoTls).map_err(|e| e.to_string())?;
    migrations::migrate(&mut c)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Whether the server sees the store's connection as encrypted, and with which TLS version.
fn ssl_of(s: &PostgresStore) -> (bool, Option<String>) {
    s.with(|c| {
        let row = c.client.query_one(
            "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )?;
        Ok((row.get(0), row.get(1)))
    })
    .expect("pg_stat_ssl")
}

#[test]
fn the_store_keeps_its_contract_over_tls_checked_to_a_ca_file() {
    let (certs, cluster) = tls_cluster();
    let open = |db: &cuecraft_pgtest::TestDb| {
        let url = format!(
            "{}?sslmode=verify-full&sslrootcert={}",
            db.tcp_url("localhost"),
            certs.ca.display()
        );
        PostgresStore::open(&url).unwrap_or_else(|e| panic!("open {url}: {e:#}"))
    };
    // Each contract on a database of its own, as the tests over the socket run them.
    let db = cluster.fresh_db();
    crate::store::contract::idempotency(&open(&db));
    let db = cluster.fresh_db();
    crate::store::contract::queue_stats(&open(&db));
    let db = cluster.fresh_db();
    let s = open(&db);
    crate::store::contract::word_pages(&s, crate::store::pages::Geometry::DEFAULT.target);
    // The queue's listener connects the same way: woken by another process's NOTIFY.
    let wake = s.wake();
    let e0 = wake.epoch();
    wake.wait(e0, Duration::from_secs(10));
    let seen = wake.epoch();
    assert!(seen > e0, "the listener connected");
    enqueue(&store(&db), "j1", "job");
    wake.wait(seen, Duration::from_secs(10));
    assert!(wake.epoch() > seen, "woken through the TLS listener");

    // The server's view: every connection of the store's database is encrypted.
    let (ssl, version) = ssl_of(&s);
    assert!(ssl, "pg_stat_ssl.ssl of the store's connection");
    assert!(version.is_some_and(|v| v.starts_with("TLSv1.")));
    let mut admin = db.connect();
    let (over_tcp, encrypted): (i64, i64) = {
        let row = admin
            .query_one(
                "SELECT COUNT(*), COUNT(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a \
                 JOIN pg_stat_ssl s USING (pid) WHERE a.datname = $1 AND a.client_port IS NOT NULL \
                 AND a.client_port > 0",
                &[&db.name],
            )
            .expect("pg_stat_activity");
        (row.get(0), row.get(1))
    };
    assert!(over_tcp >= 2, "the pool and the listener: {over_tcp}");
    assert_eq!(encrypted, over_tcp, "every TCP connection is encrypted");
}

#[test]
fn verify_full_refuses_another_ca_or_host_name_and_the_weaker_modes_do_what_libpq_does() {
    let (certs, cluster) = tls_cluster();
    let db = cluster.fresh_db();
    let open = |host: &str, query: String| {
        PostgresStore::open(&format!("{}?{query}", db.tcp_url(host))).map_err(|e| format!("{e:#}"))
    };
    let ca = certs.ca.display().to_string();
    let other = certs.other_ca.display().to_string();

    let refused = |r: Result<PostgresStore, String>| match r {
        Ok(_) => panic!("connected"),
        Err(e) => e,
    };
    let e = refused(open(
        "localhost",
        format!("sslmode=verify-full&sslrootcert={other}"),
    ));
    assert!(
        e.contains("TLS handshake") && e.contains("invalid peer certificate: UnknownIssuer"),
        "{e}"
    );
    // The certificate names localhost, not 127.0.0.1.
    let e = refused(open(
        "127.0.0.1",
        format!("sslmode=verify-full&sslrootcert={ca}"),
    ));
    assert!(
        e.contains("TLS handshake") && e.contains("not valid for name"),
        "{e}"
    );
    let e = refused(open(
        "localhost",
        "sslmode=verify-ca&sslrootcert=/nonexistent.pem".into(),
    ));
    assert!(e.contains("/nonexistent.pem"), "{e}");

    // verify-ca checks the chain only; require (without a CA) and prefer check nothing, and
    // require with a CA checks the chain, as libpq does; all are encrypted.
    for (host, query) in [
        ("127.0.0.1", format!("sslmode=verify-ca&sslrootcert={ca}")),
        ("127.0.0.1", "sslmode=require".to_string()),
        ("localhost", "sslmode=prefer".to_string()),
        ("localhost", String::new()),
    ] {
        let s = open(host, query.clone()).unwrap_or_else(|e| panic!("{query}: {e}"));
        assert!(ssl_of(&s).0, "{query}: encrypted");
    }
    let e = refused(open(
        "localhost",
        format!("sslmode=require&sslrootcert={other}"),
    ));
    assert!(e.contains("UnknownIssuer"), "{e}");
    let s = open("localhost", "sslmode=disable".into()).expect("disable");
    assert!(!ssl_of(&s).0, "sslmode=disable is not encrypted");
}

#[test]
fn sslmode_require_is_refused_by_a_server_without_tls() {
    let cluster = cuecraft_pgtest::tcp_cluster(None, migrate);
    let db = cluster.fresh_db();
    let url = |query: &str| format!("{}?{query}", db.tcp_url("localhost"));
    for query in ["sslmode=require", "sslmode=verify-full"] {
        let e = match PostgresStore::open(&url(query)) {
            Ok(_) => panic!("{query}: connected without TLS"),
            Err(e) => format!("{e:#}"),
        };
        assert!(e.contains("server does not support TLS"), "{query}: {e}");
    }
    // prefer (the default) goes on without.
    let s = PostgresStore::open(&url("sslmode=prefer")).expect("prefer");
    assert!(!ssl_of(&s).0);
}
