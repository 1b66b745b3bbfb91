//! The building blocks: a [`Counter`], a [`Histogram`] of durations and a
//! [`Family`] of series by label value. Counters and histograms are atomics
//! (recording never blocks); a family takes a read lock to find a series, so
//! hot paths look theirs up once (a turn finds its model's series when it
//! starts) and record through the `Arc` after that.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A monotonic count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A histogram of durations over fixed bucket bounds (seconds).
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, then the overflow (above the last bound); not
    /// cumulative, so an observation touches one bucket. The total count is
    /// their sum, so it always agrees with the buckets.
    buckets: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
}

/// A histogram as rendered: cumulative counts per bound, the count and the sum.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    pub cumulative: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl Histogram {
    /// `bounds` are increasing upper bounds in seconds.
    pub fn new(bounds: &'static [f64]) -> Self {
        let buckets = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Self { bounds, buckets, sum_nanos: AtomicU64::new(0) }
    }

    pub fn observe(&self, d: Duration) {
        let seconds = d.as_secs_f64();
        let at = self.bounds.iter().position(|b| seconds <= *b).unwrap_or(self.bounds.len());
        if let Some(bucket) = self.buckets.get(at) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0;
        let mut cumulative = Vec::with_capacity(self.bounds.len());
        for (bound, bucket) in self.bounds.iter().zip(self.buckets.iter()) {
            running += bucket.load(Ordering::Relaxed);
            cumulative.push((*bound, running));
        }
        let overflow = self.buckets.last().map_or(0, |b| b.load(Ordering::Relaxed));
        let sum_seconds = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        HistogramSnapshot { cumulative, count: running + overflow, sum_seconds }
    }
}

/// Series by label value, at most `cap` of them: a value first seen when the
/// family is full is counted under `overflow` instead, so a family never
/// grows with what users send.
pub struct Family<K, V> {
    series: RwLock<BTreeMap<K, Arc<V>>>,
    make: fn() -> V,
    cap: usize,
    overflow: K,
}

impl<K: Ord + Clone, V> Family<K, V> {
    pub fn new(cap: usize, overflow: K, make: fn() -> V) -> Self {
        Self { series: RwLock::default(), make, cap, overflow }
    }

    /// The series of `key`, created on first use.
    pub fn get<Q>(&self, key: &Q) -> Arc<V>
    where
        K: Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(found) = self.series.read().unwrap_or_else(|e| e.into_inner()).get(key) {
            return Arc::clone(found);
        }
        let mut series = self.series.write().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = series.get(key) {
            return Arc::clone(found);
        }
        let key = if series.len() < self.cap { key.to_owned() } else { self.overflow.clone() };
        Arc::clone(series.entry(key).or_insert_with(|| Arc::new((self.make)())))
    }

    /// Every series, in key order.
    pub fn snapshot(&self) -> Vec<(K, Arc<V>)> {
        let series = self.series.read().unwrap_or_else(|e| e.into_inner());
        series.iter().map(|(k, v)| (k.clone(), Arc::clone(v))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: &[f64] = &[0.01, 0.1, 1.0];

    #[test]
    fn a_histogram_renders_cumulative_buckets_whose_total_is_the_count() {
        let h = Histogram::new(BOUNDS);
        for ms in [5, 50, 50, 500, 5000] {
            h.observe(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.cumulative, vec![(0.01, 1), (0.1, 3), (1.0, 4)]);
        assert_eq!(s.count, 5);
        assert!((s.sum_seconds - 5.605).abs() < 1e-9, "{}", s.sum_seconds);
    }

    #[test]
    fn a_full_family_counts_new_values_as_the_overflow() {
        let f: Family<String, Counter> = Family::new(2, "other".into(), Counter::default);
        f.get("a").inc();
        f.get("b").inc();
        f.get("c").inc();
        f.get("d").inc();
        f.get("a").inc();
        let seen: Vec<(String, u64)> = f.snapshot().into_iter().map(|(k, v)| (k, v.get())).collect();
        assert_eq!(seen, vec![("a".into(), 2), ("b".into(), 1), ("other".into(), 2)]);
    }
}
