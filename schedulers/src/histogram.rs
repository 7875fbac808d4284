//! [`Histogram`]: a distribution of durations in bounded memory, as the
//! schedulers record lateness and run times.
//!
//! # Buckets
//!
//! Log-linear, as HdrHistogram's: values below 32 ns have a bucket each;
//! above, every power of two is cut into 32 buckets of equal width, so a
//! bucket is at most 1/32 (3.1%) of its values wide. Values up to 2^44 ns
//! (about 4.9 hours) have buckets of their own, 1,280 in all (10 KB);
//! longer ones count in the last bucket, and [`Histogram::max`] stays exact.
//! The count, the sum (so the mean) and the extremes are exact.
//!
//! A scheduler records into its own storage (per driver thread, see
//! `crate::observe`) and copies it into a `Histogram` for a snapshot.

use std::fmt;
use std::time::Duration;

/// Sub-buckets per power of two, as a power of two.
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
/// Values below `1 << TOP_BIT` have buckets of their own.
const TOP_BIT: u32 = 44;
/// Buckets of a histogram.
pub(crate) const BUCKETS: usize = (TOP_BIT - SUB_BITS + 1) as usize * SUB;

/// The bucket of `ns`.
#[inline]
pub(crate) fn bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let msb = 63 - ns.leading_zeros();
    if msb >= TOP_BIT {
        return BUCKETS - 1;
    }
    let shift = msb - SUB_BITS;
    // The octave (1.. for msb 5..) times SUB, plus the sub-bucket.
    ((shift + 1) as usize * SUB) + ((ns >> shift) as usize & (SUB - 1))
}

/// The smallest value of bucket `i`.
fn lowest(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let shift = (i / SUB - 1) as u32;
    ((SUB + i % SUB) as u64) << shift
}

/// The largest value of bucket `i` (the last bucket's is unbounded).
fn highest(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        return u64::MAX;
    }
    lowest(i + 1) - 1
}

/// A distribution of durations, in nanoseconds, in bounded memory: counts
/// per bucket (each at most 3.1% of its values wide), and the exact count,
/// sum, minimum and maximum. See [`Metrics`](crate::Metrics) for the ones a
/// scheduler keeps.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::Histogram;
///
/// let mut h = Histogram::new();
/// for us in [10, 20, 30, 40, 1_000] {
///     h.record(Duration::from_micros(us));
/// }
/// assert_eq!(h.count(), 5);
/// assert_eq!(h.max(), Some(Duration::from_micros(1_000)));
/// assert_eq!(h.mean(), Some(Duration::from_micros(220)));
/// // A quantile is the highest value of its bucket (3.1% wide at most).
/// let p50 = h.quantile(0.5).unwrap();
/// assert!(p50 >= Duration::from_micros(30) && p50 <= Duration::from_micros(31));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Adds one value (durations beyond `u64::MAX` nanoseconds, 584
    /// years, count as that).
    pub fn record(&mut self, value: Duration) {
        self.record_ns(u64::try_from(value.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Adds one value in nanoseconds.
    pub fn record_ns(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
        self.count += 1;
        self.sum = self.sum.wrapping_add(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum = self.sum.wrapping_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Builds a histogram from its parts (the recorders' storage).
    pub(crate) fn from_parts(counts: Box<[u64]>, sum: u64, min: u64, max: u64) -> Histogram {
        let count = counts.iter().sum();
        Histogram {
            counts,
            count,
            sum,
            min,
            max,
        }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True if no value was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The sum of the values (wrapping after 584 years' worth).
    pub fn sum(&self) -> Duration {
        Duration::from_nanos(self.sum)
    }

    /// The exact mean, `None` if empty.
    pub fn mean(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos(self.sum / self.count))
    }

    /// The smallest value, `None` if empty.
    pub fn min(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos(self.min))
    }

    /// The largest value, `None` if empty.
    pub fn max(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos(self.max))
    }

    /// The value below which a fraction `q` (0 to 1, clamped) of the
    /// values lie: the highest value of the bucket holding the `q`-th
    /// value, at most the maximum. `None` if empty.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.count == 0 {
            return None;
        }
        let q = if q.is_nan() { 1.0 } else { q.clamp(0.0, 1.0) };
        // The rank of the value asked for, 1-based.
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let top = highest(i).min(self.max).max(self.min);
                return Some(Duration::from_nanos(top));
            }
        }
        Some(Duration::from_nanos(self.max))
    }

    /// The buckets that hold values: each one's lowest and highest value
    /// (nanoseconds; the last bucket's highest is `u64::MAX`) and count, in
    /// increasing order.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (lowest(i), highest(i), n))
    }
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl fmt::Debug for Histogram {
    /// A summary: count, mean, p50, p99, max.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Histogram");
        d.field("count", &self.count);
        if self.count > 0 {
            d.field("mean", &self.mean().unwrap_or_default())
                .field("p50", &self.quantile(0.5).unwrap_or_default())
                .field("p99", &self.quantile(0.99).unwrap_or_default())
                .field("max", &self.max().unwrap_or_default());
        }
        d.finish()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn every_value_lands_in_the_bucket_whose_bounds_hold_it() {
        let mut v = 0u64;
        while v < (1 << TOP_BIT) {
            let i = bucket(v);
            assert!(lowest(i) <= v && v <= highest(i), "{v} in bucket {i}");
            v = v * 9 / 8 + 1;
        }
        for v in [31, 32, 33, 63, 64, 65, (1 << 20) - 1, 1 << 20] {
            let i = bucket(v);
            assert!(lowest(i) <= v && v <= highest(i), "{v} in bucket {i}");
        }
        assert_eq!(bucket((1 << TOP_BIT) - 1), BUCKETS - 1);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn buckets_tile_the_range_and_are_at_most_a_32nd_of_their_values_wide() {
        for i in 0..BUCKETS - 1 {
            assert_eq!(highest(i) + 1, lowest(i + 1));
            let width = highest(i) - lowest(i) + 1;
            assert!(width == 1 || width * 32 <= lowest(i), "bucket {i}");
        }
        assert_eq!(lowest(0), 0);
    }

    #[test]
    fn quantiles_count_and_extremes_are_those_of_the_values() {
        let mut h = Histogram::new();
        assert_eq!(h.quantile(0.5), None);
        assert_eq!(h.mean(), None);
        for ns in 1..=1000u64 {
            h.record_ns(ns * 1000);
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.min(), Some(Duration::from_micros(1)));
        assert_eq!(h.max(), Some(Duration::from_micros(1000)));
        assert_eq!(h.mean(), Some(Duration::from_nanos(500_500)));
        for q in [0.01, 0.5, 0.9, 0.99, 1.0] {
            let want = (q * 1000.0) as u64 * 1000;
            let got = h.quantile(q).unwrap().as_nanos() as u64;
            assert!(
                got >= want && got <= want + want / 32,
                "q {q}: {got} for {want}"
            );
        }
        let p0 = h.quantile(0.0).unwrap();
        assert!(p0 >= Duration::from_micros(1) && p0 <= Duration::from_nanos(1007));
    }

    #[test]
    fn a_merge_is_the_histogram_of_both_sets_of_values() {
        let (mut a, mut b, mut both) = (Histogram::new(), Histogram::new(), Histogram::new());
        for ns in [5u64, 50, 500, 5_000_000] {
            a.record_ns(ns);
            both.record_ns(ns);
        }
        for ns in [7u64, 70_000, 1 << 50] {
            b.record_ns(ns);
            both.record_ns(ns);
        }
        a.merge(&b);
        assert_eq!(a, both);
        assert_eq!(
            a.max(),
            Some(Duration::from_nanos(1 << 50)),
            "exact past the range"
        );
        let listed: u64 = a.buckets().map(|(_, _, n)| n).sum();
        assert_eq!(listed, 7);
    }
}
