//! The per-key rate limit: N requests per rolling minute, counted in one-second buckets.
//!
//! Two counters behind [`RateLimit`]: [`RateLimiter`] in this process's memory (the SQLite
//! store's, one API process per data directory), and [`StoreLimiter`], which counts in the store
//! when the store keeps a count every API process shares (Postgres: `Store::rate_check`) and in
//! memory otherwise, or while the store cannot answer (a lost database must not make the API
//! refuse every request; it then answers 503 on the store calls that follow).
//!
//! A key's window holds at most 60 buckets, so memory stays bounded however high the limit is set
//! (the load benchmark raises it). `Retry-After` is the whole number of seconds until enough of
//! the oldest buckets have left the window for one more request to fit.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::store::Store;

/// Counts requests per key: `Ok` when one more is allowed now (and counted), else
/// `Err(seconds to wait)`. Refused requests do not count. May block (call from a blocking thread).
pub trait RateLimit: Send + Sync {
    /// Counts a request of `key`.
    fn check(&self, key: &str) -> Result<(), u64>;
}

impl RateLimit for RateLimiter {
    fn check(&self, key: &str) -> Result<(), u64> {
        RateLimiter::check(self, key)
    }
}

/// The store's shared count when it keeps one, else (or while it fails) this process's.
pub struct StoreLimiter {
    store: Arc<dyn Store>,
    limit: u32,
    local: RateLimiter,
}

impl StoreLimiter {
    /// A limiter of `limit` requests per rolling minute per key over `store`.
    pub fn new(store: Arc<dyn Store>, limit: u32) -> StoreLimiter {
        StoreLimiter {
            store,
            limit,
            local: RateLimiter::new(limit),
        }
    }
}

impl RateLimit for StoreLimiter {
    fn check(&self, key: &str) -> Result<(), u64> {
        match self.store.rate_check(key, self.limit) {
            Some(Ok(verdict)) => verdict,
            Some(Err(e)) => {
                tracing::warn!("shared rate limit unavailable, counting in this process: {e}");
                self.local.check(key)
            }
            None => self.local.check(key),
        }
    }
}

/// Length of the rolling window, seconds.
const WINDOW: u64 = 60;

/// Rolling-minute counters per API key.
pub struct RateLimiter {
    limit: u64,
    start: Instant,
    windows: Mutex<HashMap<String, VecDeque<(u64, u64)>>>,
}

impl RateLimiter {
    /// A limiter allowing `limit` requests per rolling minute per key.
    pub fn new(limit: u32) -> RateLimiter {
        RateLimiter {
            limit: u64::from(limit.max(1)),
            start: Instant::now(),
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a request of `key` now: `Ok` when it is allowed, else `Err(seconds to wait)`.
    pub fn check(&self, key: &str) -> Result<(), u64> {
        self.check_at(key, self.start.elapsed().as_secs())
    }

    /// Counts a request of `key` at second `now` of the limiter's clock.
    pub fn check_at(&self, key: &str, now: u64) -> Result<(), u64> {
        let Ok(mut windows) = self.windows.lock() else {
            // A poisoned lock means a panic elsewhere; failing open keeps the API usable.
            return Ok(());
        };
        if windows.len() > 100_000 {
            windows.retain(|_, w| w.back().is_some_and(|&(s, _)| s + WINDOW > now));
        }
        let window = windows.entry(key.to_string()).or_default();
        while window.front().is_some_and(|&(s, _)| s + WINDOW <= now) {
            window.pop_front();
        }
        let total: u64 = window.iter().map(|&(_, n)| n).sum();
        if total >= self.limit {
            // Drop buckets from the front until one more request fits.
            let need = total - self.limit + 1;
            let mut freed = 0;
            for &(second, n) in window.iter() {
                freed += n;
                if freed >= need {
                    return Err((second + WINDOW).saturating_sub(now).max(1));
                }
            }
            return Err(WINDOW);
        }
        match window.back_mut() {
            Some((s, n)) if *s == now => *n += 1,
            _ => window.push_back((now, 1)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_the_limit_per_rolling_minute_then_says_when_to_retry() {
        let rl = RateLimiter::new(3);
        assert_eq!(rl.check_at("k", 10), Ok(()));
        assert_eq!(rl.check_at("k", 20), Ok(()));
        assert_eq!(rl.check_at("k", 30), Ok(()));
        // The request of second 10 leaves the window at second 70.
        assert_eq!(rl.check_at("k", 31), Err(39));
        assert_eq!(rl.check_at("other", 31), Ok(()));
        assert_eq!(rl.check_at("k", 69), Err(1));
        assert_eq!(rl.check_at("k", 70), Ok(()));
        assert_eq!(rl.check_at("k", 70), Err(10));
    }

    #[test]
    fn refused_requests_do_not_count() {
        let rl = RateLimiter::new(1);
        assert_eq!(rl.check_at("k", 0), Ok(()));
        for t in 1..60 {
            assert!(rl.check_at("k", t).is_err());
        }
        assert_eq!(rl.check_at("k", 60), Ok(()));
    }
}
