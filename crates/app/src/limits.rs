//! Per-organization limits a runaway client or agent cannot pass (each
//! configurable, `None` for none):
//! - a request rate: a token bucket per organization on each node (a node
//!   admits `requests_per_second` sustained and `request_burst` at once; N
//!   nodes behind a balancer admit up to N times that);
//! - turns active at once (queued or running, on every node: counted in the
//!   store when an input would add one, unless a recent count shows the
//!   organization far below its limit: [`ActiveTurns`]);
//! - sandboxes live at once (running or paused), on each node (environments
//!   live on the node that runs them): checked when one would start.
//!
//! Both answer 429 with a `Retry-After`: unlike a session's full queue, they
//! clear by themselves.

use crate::{App, Error, Result};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Past this many organizations' buckets, the full ones are forgotten.
const BUCKETS_KEPT: usize = 10_000;

/// The limits, per organization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrgLimits {
    /// Requests per second, sustained, on each node.
    pub requests_per_second: Option<f64>,
    /// Requests admitted at once before the rate applies (the bucket's size).
    pub request_burst: u32,
    /// Turns queued or running at once across the organization.
    pub active_turns: Option<u32>,
    /// Sandboxes (running or paused) at once, on each node.
    pub live_sandboxes: Option<u32>,
}

impl Default for OrgLimits {
    fn default() -> Self {
        Self {
            requests_per_second: Some(500.0),
            request_burst: 1000,
            active_turns: Some(500),
            live_sandboxes: Some(500),
        }
    }
}

impl OrgLimits {
    /// No limits (benchmarks, embedders that limit elsewhere).
    pub fn none() -> Self {
        Self { requests_per_second: None, request_burst: 0, active_turns: None, live_sandboxes: None }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The request buckets of this node.
#[derive(Debug, Default)]
pub struct RequestRate {
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RequestRate {
    /// Takes one request of `org` from its bucket, or says how long until one is there.
    pub fn admit(&self, limits: &OrgLimits, org: &str) -> Result<(), Duration> {
        let Some(rate) = limits.requests_per_second.filter(|r| *r > 0.0) else { return Ok(()) };
        let burst = f64::from(limits.request_burst.max(1));
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= BUCKETS_KEPT && !buckets.contains_key(org) {
            buckets.retain(|_, b| b.tokens + b.at.elapsed().as_secs_f64() * rate < burst);
        }
        let bucket = buckets.entry(org.to_string()).or_insert(Bucket { tokens: burst, at: now });
        bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
    }
}

/// How long a count of an organization's active turns stands in for the store's.
const COUNT_FRESH: Duration = Duration::from_millis(500);

/// Recent counts of each organization's active turns, so that an
/// organization far below its limit is not counted in the store at every
/// input (a query on the way to the model's request): a count read less
/// than [`COUNT_FRESH`] ago, plus the turns this node admitted since, stands
/// in for the store's while it stays a tenth of the limit (one at least)
/// below it. Closer to the limit, the store counts every time, as before.
/// The estimate never misses a turn this node admitted; turns that ended
/// since only make it cautious, and other nodes' new ones are the store's
/// to count within [`COUNT_FRESH`].
#[derive(Debug, Default)]
pub struct ActiveTurns {
    counts: Mutex<HashMap<String, (i64, Instant)>>,
}

impl ActiveTurns {
    /// Admits one more turn of `org` on a fresh count far enough below
    /// `limit`; false when the store must count.
    fn admit_far_below(&self, org: &str, limit: i64) -> bool {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        match counts.get_mut(org) {
            Some((active, at)) if at.elapsed() < COUNT_FRESH && *active < limit - (limit / 10).max(1) => {
                *active += 1;
                true
            }
            _ => false,
        }
    }

    /// The store counted `active` turns of `org`, the admitted one included.
    fn counted(&self, org: &str, active: i64) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() >= BUCKETS_KEPT && !counts.contains_key(org) {
            counts.retain(|_, (_, at)| at.elapsed() < COUNT_FRESH);
        }
        counts.insert(org.to_string(), (active, Instant::now()));
    }
}

/// The 429 of a request past its organization's rate.
pub fn too_many_requests(limits: &OrgLimits, wait: Duration) -> Error {
    let rate = limits.requests_per_second.unwrap_or_default();
    Error::RateLimited {
        code: "rate_limit_exceeded",
        message: format!("Too many requests for this organization (limit {rate} per second); retry shortly."),
        retry_after: wait,
    }
}

impl App {
    /// 429 when the organization already has as many active turns as it may.
    /// Counted in the store, so on every node, unless a recent count shows it
    /// far below its limit ([`ActiveTurns`]); turns being written at this
    /// very moment may be missed, so simultaneous inputs can pass the limit
    /// by their number.
    pub(crate) async fn check_active_turns(&self, org: &str) -> Result<()> {
        let Some(limit) = self.limits.active_turns.map(i64::from) else { return Ok(()) };
        if self.active_turns.admit_far_below(org, limit) {
            return Ok(());
        }
        let active = self.store.count_active_turns(org).await?;
        if active < limit {
            self.active_turns.counted(org, active + 1);
            return Ok(());
        }
        Err(Error::RateLimited {
            code: "too_many_active_turns",
            message: format!(
                "This organization has {active} turns queued or running, its limit; retry when some have ended."
            ),
            retry_after: Duration::from_secs(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recent_count_admits_only_far_below_the_limit_and_only_while_fresh() {
        let turns = ActiveTurns::default();
        assert!(!turns.admit_far_below("org_a", 500), "no count yet: the store counts");
        turns.counted("org_a", 448);
        assert!(turns.admit_far_below("org_a", 500), "449 of 500: far enough below");
        assert!(turns.admit_far_below("org_a", 500), "450 of 500");
        assert!(!turns.admit_far_below("org_a", 500), "within a tenth of the limit: the store counts");
        assert!(!turns.admit_far_below("org_b", 500), "each organization has its own count");
        turns.counted("org_a", 1);
        assert!(!turns.admit_far_below("org_a", 2), "a limit of two is always counted in the store");
        turns.counted("org_c", 0);
        std::thread::sleep(COUNT_FRESH);
        assert!(!turns.admit_far_below("org_c", 500), "a stale count is not used");
    }

    #[test]
    fn a_bucket_admits_its_burst_then_the_rate() {
        let limits = OrgLimits { requests_per_second: Some(10.0), request_burst: 3, ..OrgLimits::none() };
        let rate = RequestRate::default();
        for _ in 0..3 {
            assert!(rate.admit(&limits, "org_a").is_ok());
        }
        let wait = rate.admit(&limits, "org_a").unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(100), "{wait:?}");
        assert!(rate.admit(&limits, "org_b").is_ok(), "each organization has its own bucket");
        std::thread::sleep(Duration::from_millis(120));
        assert!(rate.admit(&limits, "org_a").is_ok(), "refilled at the rate");
        assert!(RequestRate::default().admit(&OrgLimits::none(), "org_a").is_ok());
    }
}
