//! Durations (latency, time to first token) counted in fixed log-linear buckets, so that the
//! console's percentiles come from a few hundred rollup rows instead of every record.
//!
//! A value `v` ≥ 0 µs falls in bucket `v` while `v < 32` (exact), and above that in one of 16
//! buckets of equal width splitting each power of two: `[2^e, 2^(e+1))` is cut into 16 buckets
//! `2^(e-4)` µs wide. A bucket is reported as its midpoint (the middle integer), so a reported
//! value is never further than half a bucket from any value in it: at most **1/32 (3.125 %)**
//! of the value. A nearest-rank percentile read from the merged histogram therefore lies within
//! 3.125 % of the exact nearest-rank percentile of the same records ([`ERROR_BOUND`]).
//!
//! The boundaries are integer arithmetic, identical on every replica and every platform; they
//! must never change, since stored counts are by bucket number.

use std::collections::BTreeMap;

/// The largest relative difference between a reported percentile and the exact one.
pub const ERROR_BOUND: f64 = 1.0 / 32.0;

/// Buckets per power of two (above 32 µs).
const SUB: i64 = 16;
const SUB_BITS: u32 = 4;

/// The bucket of `value` µs (a negative value counts as 0).
pub fn bucket(value: i64) -> i32 {
    let v = value.max(0);
    if v < 2 * SUB {
        return v as i32;
    }
    // e ≥ 5: v in [2^e, 2^(e+1)); its top 5 bits are 1mmmm.
    let e = 63 - v.leading_zeros() as i64;
    let shift = e - i64::from(SUB_BITS);
    (SUB * shift + (v >> shift)) as i32
}

/// The smallest value of `bucket` and its width.
fn span(bucket: i32) -> (i64, i64) {
    let b = i64::from(bucket.max(0));
    if b < 2 * SUB {
        return (b, 1);
    }
    let shift = b / SUB - 1;
    let mantissa = b % SUB + SUB;
    (mantissa << shift, 1 << shift)
}

/// The value reported for `bucket`: its middle integer.
pub fn value(bucket: i32) -> i64 {
    let (low, width) = span(bucket);
    low + (width - 1) / 2
}

/// Counts per bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram(BTreeMap<i32, u64>);

impl Histogram {
    pub fn record(&mut self, value: i64) {
        self.add(bucket(value), 1);
    }

    pub fn add(&mut self, bucket: i32, count: u64) {
        if count > 0 {
            *self.0.entry(bucket).or_default() += count;
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (&b, &n) in &other.0 {
            self.add(b, n);
        }
    }

    pub fn count(&self) -> u64 {
        self.0.values().sum()
    }

    /// Nearest-rank percentile `p` (the value of the bucket holding the `rank`-th smallest
    /// value, see [`super::stats::rank`]); `None` when empty.
    pub fn percentile(&self, p: u32) -> Option<i64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = rank(p, n);
        let mut below = 0;
        for (&b, &count) in &self.0 {
            below += count;
            if below > rank {
                return Some(value(b));
            }
        }
        None
    }
}

/// The two histograms of some records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Durations {
    pub latency: Histogram,
    /// Over the records that have a time to first token.
    pub ttft: Histogram,
}

impl Durations {
    pub fn merge(&mut self, other: &Durations) {
        self.latency.merge(&other.latency);
        self.ttft.merge(&other.ttft);
    }
}

/// A duration whose percentiles are asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Latency,
    Ttft,
}

impl Metric {
    /// Its number in the `metric` column of the duration histograms.
    pub fn code(self) -> i32 {
        match self {
            Self::Latency => 0,
            Self::Ttft => 1,
        }
    }

    pub fn of_code(code: i32) -> Option<Self> {
        match code {
            0 => Some(Self::Latency),
            1 => Some(Self::Ttft),
            _ => None,
        }
    }
}

/// The 0-based nearest rank of percentile `p` among `n` values (`n > 0`): the smallest value
/// with at least `p`% of the values at or below it.
pub fn rank(p: u32, n: u64) -> u64 {
    (u64::from(p) * n).div_ceil(100).max(1) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_reported_within_the_bound() {
        let mut values: Vec<i64> = (0..5_000).collect();
        values.extend((0..62).flat_map(|e| {
            let p = 1i64 << e;
            [p - 1, p, p + 1, p + p / 3, p + p / 2]
        }));
        values.push(i64::MAX);
        for v in values {
            let b = bucket(v);
            let (low, width) = span(b);
            assert!(low <= v && v - low < width, "{v} outside bucket {b}");
            let shown = value(b);
            let error = (shown - v).abs() as f64;
            assert!(error <= v as f64 * ERROR_BOUND, "{v} shown as {shown}");
        }
        // Buckets are contiguous and ordered like values.
        for b in 0..900 {
            let (low, width) = span(b);
            assert_eq!(span(b + 1).0, low + width, "bucket {b}");
            assert_eq!(bucket(low), b);
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(50), None);
        for v in 1..=10 {
            h.record(v);
        }
        assert_eq!(h.percentile(50), Some(5));
        assert_eq!(h.percentile(90), Some(9));
        assert_eq!(h.percentile(99), Some(10));
        h.record(1_000_000);
        let shown = h.percentile(100).unwrap();
        assert!((shown - 1_000_000).abs() <= 1_000_000 / 32, "{shown}");
    }

    #[test]
    fn nearest_ranks() {
        assert_eq!(rank(50, 1), 0);
        assert_eq!(rank(99, 1), 0);
        assert_eq!(rank(50, 4), 1);
        assert_eq!(rank(90, 10), 8);
        assert_eq!(rank(99, 10), 9);
        assert_eq!(rank(50, 5), 2);
        assert_eq!(rank(99, 1000), 989);
    }
}
