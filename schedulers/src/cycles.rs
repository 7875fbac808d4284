//! Timing runs by the CPU's time-stamp counter: the real clock's reading,
//! for a third of its cost.
//!
//! A driver that times its runs reads the clock once per run (see
//! `Shared::run_claimed`); `Instant::now()` costs about 22 ns here, a
//! third of a trivial run. On x86_64 the counter costs about 9 ns, and
//! reads the same oscillator Linux's monotonic clock reads when its clock
//! source is `tsc`. [`now`] scales the counter since a *base* (a real
//! reading and the counter around it, kept per thread) by a rate
//! calibrated against the real clock, and takes a new base by a real
//! reading whenever the old one is [`RENEW`] counts old (about 90 µs), so
//! a reading strays from the clock's by at most the rate's error over that
//! span: nanoseconds.
//!
//! Only for figures and the run-to-run bookkeeping of a batch, never for
//! a deadline: an estimate may fall a little short of the clock. Until
//! the rate is known (the first [`CALIBRATE`] of the process), on a CPU
//! whose counter does not run at a constant rate, and on other
//! architectures, [`now`] reads the clock.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::clock::{nanos, Clock, SystemClock, Timebase};

/// Counts after which a base is renewed by a real reading.
const RENEW: u64 = 1 << 18;

/// The most counts a real reading may take, between the counter's
/// readings on either side, for the three to make a base (a real reading
/// takes about 70 counts): a base is off by half of that at most, 0.2 µs
/// at 3 GHz.
const PAIR: u64 = 1 << 10;

/// How long after the first reading the rate is first calibrated: long
/// enough that the two readings' own spread (tens of nanoseconds) is a
/// few parts in a million of it.
const CALIBRATE: Duration = Duration::from_millis(10);

/// Nanoseconds per count, in 32.32 fixed point; 0 while not calibrated.
static RATE: AtomicU64 = AtomicU64::new(0);

/// The first base of the process: what the rate is measured from.
static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();

/// How far from the anchor (ns) the rate was last measured: it is measured
/// again only from twice as far, so that the threads renewing their bases
/// store it a few dozen times in a process's life, not every 90 µs.
static MEASURED_AT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's base: the counter, the real reading it brackets, and
    /// the epoch of the timebase that reading is in ticks of.
    static BASE: Cell<Option<(u64, u64, Instant)>> = const { Cell::new(None) };
}

/// The system clock's time in `timebase`'s ticks, estimated from the
/// counter (see the [module docs](self)).
pub(crate) fn now(timebase: &Timebase) -> u64 {
    let Some(count) = counter() else {
        return timebase.ticks(SystemClock.now());
    };
    let rate = RATE.load(Relaxed);
    if let Some((base, ticks, epoch)) = BASE.get() {
        let since = count.wrapping_sub(base);
        if rate != 0 && since < RENEW && epoch == timebase.epoch() {
            let elapsed = (u128::from(since) * u128::from(rate)) >> 32;
            return ticks.saturating_add(elapsed as u64);
        }
    }
    let real = SystemClock.now();
    let ticks = timebase.ticks(real);
    if let Some(after) = counter() {
        // A pair only if nothing came between its readings (a preemption
        // would make every estimate from it short by that long).
        if after.wrapping_sub(count) < PAIR {
            let count = count + after.wrapping_sub(count) / 2;
            BASE.set(Some((count, ticks, timebase.epoch())));
            calibrate(real, count);
        }
    }
    ticks
}

/// Measures the rate from the anchor to this reading, once it is at
/// least [`CALIBRATE`] away, and again each time it is twice as far as
/// the last measure (ever more precisely).
fn calibrate(real: Instant, count: u64) {
    let (at, first) = *ANCHOR.get_or_init(|| (real, count));
    let elapsed = nanos(real.saturating_duration_since(at));
    let counts = count.wrapping_sub(first);
    let due = MEASURED_AT
        .load(Relaxed)
        .saturating_mul(2)
        .max(nanos(CALIBRATE));
    if elapsed < due || counts == 0 || counts > u64::MAX / 2 {
        return;
    }
    MEASURED_AT.store(elapsed, Relaxed);
    let rate = (u128::from(elapsed) << 32) / u128::from(counts);
    RATE.store(u64::try_from(rate).unwrap_or(0), Relaxed);
}

/// The time-stamp counter, on a CPU whose counter runs at a constant rate
/// whatever the power state (CPUID's "invariant TSC").
#[cfg(target_arch = "x86_64")]
fn counter() -> Option<u64> {
    static INVARIANT: OnceLock<bool> = OnceLock::new();
    let invariant = *INVARIANT.get_or_init(|| {
        use std::arch::x86_64::__cpuid;
        // Leaf 0x8000_0000 says which extended leaves exist.
        __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    });
    // SAFETY: `rdtsc` exists on every x86_64 CPU and only reads the
    // counter.
    invariant.then(|| unsafe { std::arch::x86_64::_rdtsc() })
}

#[cfg(not(target_arch = "x86_64"))]
fn counter() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An estimate lies between real readings taken before and after it,
    /// give or take a microsecond (the bound is loose so that a loaded
    /// machine cannot fail it: the estimate is renewed every 90 µs, and
    /// the rate is measured over at least 10 ms), and estimates never go
    /// back.
    #[test]
    fn estimates_follow_the_clock() {
        let timebase = Timebase::new(SystemClock.now());
        let slack = 1_000;
        let mut last = 0;
        let start = SystemClock.now();
        let mut checked = 0;
        while SystemClock.now().saturating_duration_since(start) < 3 * CALIBRATE {
            let before = timebase.ticks(SystemClock.now());
            let estimate = now(&timebase);
            let after = timebase.ticks(SystemClock.now());
            assert!(
                before.saturating_sub(slack) <= estimate && estimate <= after + slack,
                "{before} <= {estimate} <= {after}"
            );
            assert!(
                estimate + slack >= last,
                "went back: {last} then {estimate}"
            );
            last = estimate;
            checked += 1;
        }
        assert!(checked > 100);
        if counter().is_some() {
            assert_ne!(RATE.load(Relaxed), 0, "calibrated after 30 ms");
        }
    }
}
