//! The work queue on Postgres: claims with `FOR UPDATE SKIP LOCKED` and a lease, heartbeats,
//! expired leases taken over, and NOTIFY to wake idle workers.
//!
//! A row is free when its `lease_until` is NULL or past. `claim` takes the oldest free row and
//! sets its worker and lease in one statement; the row lock taken by the inner `SELECT ... FOR
//! UPDATE SKIP LOCKED` makes racing workers pass over each other's rows instead of waiting, and
//! Postgres re-checks the condition on the newest version of a row another worker has just
//! claimed, so no row is ever claimed twice. A worker renews its lease with `heartbeat` while the
//! step runs; one killed with -9 stops renewing, and its row is free again when the lease runs out.
//! A step to be retried later is released with a delay (its lease is simply set to end then).
//! Times are the caller's (the `Store` trait's rule: one decision, one clock reading), so the
//! machines of a deployment keep their clocks in step (NTP): a lease is tens of seconds, and a
//! clock that is off by less than that cannot take a live lease over.
//!
//! `enqueue` runs in the caller's transaction (the one changing the job's status) and sends
//! `NOTIFY cuecraft_queue`, which Postgres delivers only if that transaction commits.
//! [`Listener`] keeps one dedicated connection in `LISTEN` and calls its wake-up on each
//! notification; workers still poll on a timeout, so a lost connection only slows them down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::GenericClient;

use super::pool::{Conn, Pool};
use crate::ops::outage::{Backoff, Outage};
use crate::store::{QueueStats, Task};

/// The channel of queue notifications.
pub const CHANNEL: &str = "cuecraft_queue";

/// Sends the queue's notification; Postgres delivers it when the caller's transaction commits
/// (and never when it rolls back).
pub fn notify(tx: &mut impl GenericClient) -> Result<(), postgres::Error> {
    tx.execute("SELECT pg_notify($1, '')", &[&CHANNEL])?;
    Ok(())
}

/// Adds a task for `job_id` unless one is queued already, inside the caller's transaction, and
/// notifies the listeners on commit. Returns whether a row was added.
pub fn enqueue(
    tx: &mut impl GenericClient,
    job_id: &str,
    task: &str,
    now: i64,
) -> Result<bool, postgres::Error> {
    let n = tx.execute(
        "INSERT INTO queue (job_id, task, enqueued_at) VALUES ($1, $2, $3)
         ON CONFLICT (job_id, task) DO NOTHING",
        &[&job_id, &task, &now],
    )?;
    if n == 1 {
        notify(tx)?;
    }
    Ok(n == 1)
}

/// Claims the oldest row that is free at `now` for `worker` until `now + lease_ms`.
pub fn claim(
    conn: &mut Conn,
    worker: &str,
    now: i64,
    lease_ms: i64,
) -> Result<Option<Task>, postgres::Error> {
    let st = conn.prepared(
        "UPDATE queue SET worker = $1, lease_until = $2, attempts = attempts + 1
         WHERE seq = (SELECT seq FROM queue WHERE lease_until IS NULL OR lease_until <= $3
                      ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING seq, job_id, task",
    )?;
    let row = conn
        .client
        .query_opt(&st, &[&worker, &now.saturating_add(lease_ms), &now])?;
    Ok(row.map(|r| Task {
        seq: r.get(0),
        job_id: r.get(1),
        kind: r.get(2),
    }))
}

/// Extends `worker`'s lease on `seq` to `until`; false when the row is no longer this worker's
/// (its lease ran out and another worker took it, or it is gone).
pub fn extend(
    conn: &mut Conn,
    seq: i64,
    worker: &str,
    until: i64,
) -> Result<bool, postgres::Error> {
    let st = conn.prepared("UPDATE queue SET lease_until = $1 WHERE seq = $2 AND worker = $3")?;
    Ok(conn.client.execute(&st, &[&until, &seq, &worker])? == 1)
}

/// Lets a row go, claimable again from `not_before` (a step that will be retried).
pub fn release(
    conn: &mut Conn,
    seq: i64,
    worker: &str,
    not_before: i64,
) -> Result<(), postgres::Error> {
    let st = conn.prepared(
        "UPDATE queue SET worker = NULL, lease_until = $1 WHERE seq = $2 AND worker = $3",
    )?;
    conn.client.execute(&st, &[&not_before, &seq, &worker])?;
    Ok(())
}

/// Deletes a row whose work is done.
pub fn finish(tx: &mut impl GenericClient, seq: i64) -> Result<(), postgres::Error> {
    tx.execute("DELETE FROM queue WHERE seq = $1", &[&seq])?;
    Ok(())
}

/// How many rows are queued (claimed or not).
pub fn len(conn: &mut Conn) -> Result<i64, postgres::Error> {
    let st = conn.prepared("SELECT COUNT(*) FROM queue")?;
    Ok(conn.client.query_one(&st, &[])?.get(0))
}

/// [`crate::store::Store::queue_stats`]: a row waits when no worker holds it or its lease ran out.
pub fn stats(conn: &mut Conn, now: i64) -> Result<QueueStats, postgres::Error> {
    let st = conn.prepared(
        "SELECT COUNT(*) FILTER (WHERE worker IS NULL OR lease_until <= $1),
                COUNT(*) FILTER (WHERE worker IS NOT NULL AND lease_until > $1),
                MIN(enqueued_at) FILTER (WHERE worker IS NULL OR lease_until <= $1)
         FROM queue",
    )?;
    let row = conn.client.query_one(&st, &[&now])?;
    Ok(QueueStats {
        waiting: row.get(0),
        running: row.get(1),
        oldest_waiting_at: row.get(2),
    })
}

/// A thread holding a connection in `LISTEN cuecraft_queue`, calling `wake` on every
/// notification (and once after each reconnection, since notifications sent while it was away
/// are lost). Stopped when dropped.
pub struct Listener {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    /// Starts listening with connections from `pool` (outside its count).
    pub fn start(pool: Arc<Pool>, wake: Arc<dyn Fn() + Send + Sync>) -> std::io::Result<Listener> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("queue-listener".into())
            .spawn(move || listen(&pool, &*wake, &flag))?;
        Ok(Listener {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn listen(pool: &Pool, wake: &(dyn Fn() + Send + Sync), stop: &AtomicBool) {
    // How often the thread looks at its stop flag while no notification comes.
    const TICK: Duration = Duration::from_millis(250);
    let outage = Outage::new("the queue listener's Postgres connection");
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    while !stop.load(Ordering::SeqCst) {
        let mut client = match pool.connect().and_then(|mut c| {
            c.batch_execute(&format!("LISTEN {CHANNEL}"))?;
            Ok(c)
        }) {
            Ok(c) => c,
            Err(e) => {
                // Workers poll the queue meanwhile.
                outage.failed(&e);
                sleep_unless_stopped(backoff.next_wait(), stop);
                continue;
            }
        };
        outage.succeeded();
        backoff.reset();
        // Notifications sent while the connection was away are lost: look at the queue now.
        wake();
        // Until the connection fails: then a new one, after the backoff (a stopped server makes
        // every read fail at once, so going round without a pause would spin and log forever).
        'connected: while !stop.load(Ordering::SeqCst) {
            {
                let mut notifications = client.notifications();
                let mut iter = notifications.timeout_iter(TICK);
                loop {
                    match iter.next() {
                        Ok(Some(_)) => wake(),
                        Ok(None) => break,
                        Err(e) => {
                            outage.failed(&e);
                            break 'connected;
                        }
                    }
                }
            }
            if client.is_closed() {
                outage.failed(&"the connection was closed");
                break;
            }
        }
        drop(client);
        sleep_unless_stopped(backoff.next_wait(), stop);
    }
}

/// Sleeps `wait`, waking early (within 50 ms) when `stop` is set.
fn sleep_unless_stopped(wait: Duration, stop: &AtomicBool) {
    let until = std::time::Instant::now() + wait;
    while !stop.load(Ordering::SeqCst) {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
