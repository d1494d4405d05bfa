//! Failures of a dependency (the store, the media store, the queue's listening connection) logged
//! once when an outage starts and once when it ends, never once per attempt: a store that stops
//! for a minute gives two lines, whatever the number of retries meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The state of one dependency as seen by one part of the process.
#[derive(Debug)]
pub struct Outage {
    what: &'static str,
    down: AtomicBool,
    /// Failed attempts during the current outage.
    failures: AtomicU64,
}

impl Outage {
    /// A dependency called `what` in the log ("the store", "the queue listener's connection").
    pub const fn new(what: &'static str) -> Outage {
        Outage {
            what,
            down: AtomicBool::new(false),
            failures: AtomicU64::new(0),
        }
    }

    /// An attempt failed with `error`: logged (warning) when it starts an outage, counted
    /// otherwise. Returns whether this failure started the outage.
    pub fn failed(&self, error: &dyn std::fmt::Display) -> bool {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let started = !self.down.swap(true, Ordering::SeqCst);
        if started {
            tracing::warn!(
                dependency = self.what,
                "{} is unreachable: {error}; retrying with backoff, logged again when it is back",
                self.what
            );
        }
        started
    }

    /// An attempt succeeded: logged (info) when it ends an outage. Returns whether it did.
    pub fn succeeded(&self) -> bool {
        let ended = self.down.swap(false, Ordering::SeqCst);
        if ended {
            let failures = self.failures.swap(0, Ordering::Relaxed);
            tracing::info!(
                dependency = self.what,
                failures,
                "{} is reachable again after {failures} failed attempts",
                self.what
            );
        }
        ended
    }

    /// Whether the last attempt failed.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }
}

/// Exponential backoff between retries: `first`, doubling up to `max`, back to `first` on
/// [`Backoff::reset`].
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Starts at `first`, never above `max`.
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The wait before the next attempt (and doubles the one after).
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        wait
    }

    /// After a success: the next failure waits `first` again.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_reported_once_when_it_starts_and_once_when_it_ends() {
        let o = Outage::new("the store");
        assert!(!o.succeeded(), "no outage to end");
        assert!(o.failed(&"connection refused"));
        for _ in 0..1000 {
            assert!(!o.failed(&"connection refused"));
        }
        assert!(o.is_down());
        assert!(o.succeeded());
        assert!(!o.succeeded());
        assert!(o.failed(&"again"), "a new outage is reported again");
    }

    #[test]
    fn backoff_doubles_up_to_its_ceiling_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        let waits: Vec<u64> = (0..5).map(|_| b.next_wait().as_millis() as u64).collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        b.reset();
        assert_eq!(b.next_wait(), Duration::from_millis(100));
    }
}
