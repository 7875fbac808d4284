//! The real clock's reading from the CPU's time-stamp counter, for a
//! fraction of its cost: to time runs, and to count deadlines from.
//!
//! A driver that times its runs reads the clock once per run (see
//! `Shared::run_claimed`), and every schedule and reset reads it for its
//! deadline; `Instant::now()` costs about 22 ns here, a third of a
//! trivial run. On x86_64 the counter costs about 9 ns, and reads the
//! same oscillator Linux's monotonic clock reads when its clock source is
//! `tsc`. An estimate scales the counter since a *base* (a real reading
//! and the counter on either side of it, kept per thread) by a rate
//! calibrated against the real clock, and a new base is taken by a real
//! reading once the old one is [`RENEW`] counts old (about 90 µs).
//!
//! - [`now`], for runs' figures and a batch's run-to-run start, strays
//!   from the clock's reading by the rate's error over that span:
//!   nanoseconds, either way.
//! - [`at_least_now`], for deadlines, is never earlier than the clock's
//!   reading (a timer must never fire early) and later by [`RUNAHEAD`]
//!   and a fraction of a microsecond at most: it counts from the count
//!   read *before* the base's reading, at a rate raised by a margin, from
//!   bases at most [`RENEW_DEADLINE`] old, plus [`RUNAHEAD`] for a counter
//!   read unfenced. It uses the counter only while Linux's clock source
//!   is the counter (then the kernel has found every CPU's counter in
//!   step), and each new base checks the old one's estimate against its
//!   reading: one found short turns the counter off for deadlines for
//!   good.
//!
//! Until the rate is known (the first [`CALIBRATE`] of the process), on a
//! CPU whose counter does not run at a constant rate, and on other
//! architectures, both read the clock.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::clock::{nanos, Clock, SystemClock, Timebase, DEADLINE_RUNAHEAD};

/// Counts after which a base is renewed by a real reading.
const RENEW: u64 = 1 << 18;

/// Counts after which a base no longer serves a deadline (about 24 µs at
/// 2.7 GHz): what the deadline's margin grows over.
const RENEW_DEADLINE: u64 = 1 << 16;

/// How much faster than the calibrated rate a deadline's estimate runs,
/// as a shift: 2^-9, about 2,000 ppm. Linux slews its monotonic clock by
/// at most 500 ppm for NTP's frequency and as much again for its offset,
/// and the rate is measured to tens of ppm; over [`RENEW_DEADLINE`] the
/// margin is 48 ns at most.
const MARGIN_SHIFT: u32 = 9;

/// How much later than the counter's estimate a deadline is counted from
/// (ns, [`DEADLINE_RUNAHEAD`]), because [`at_least_now`] reads the counter
/// without a fence.
///
/// The CPU may read the counter before the instructions ahead of it are
/// done: by as long as the slowest of them still takes, a load from
/// memory or from a line another core just wrote. A clock reading another
/// thread took before it stored what this thread loaded just before its
/// schedule is then later than the count by up to that long (0.4 µs at
/// most, one deadline in fifty, on the 2-core VM this was built on, with
/// a line written by the other core; see
/// `tests::deadlines_are_later_than_readings_another_thread_made_first`).
/// A fence (`lfence`, as Linux reads the counter for its clock) closes
/// that gap, but it waits for all the work in flight: 20-25 ns of a 100 ns
/// schedule-and-cancel pair here. Counting 2 µs later instead costs
/// nothing but 2 µs of lateness, against a driver's wake-up latency of
/// tens of microseconds.
const RUNAHEAD: u64 = DEADLINE_RUNAHEAD.as_nanos() as u64;

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

/// Set for good if a deadline's estimate was ever found short of the
/// clock: from then on deadlines are counted from real readings.
static SHORT: AtomicBool = AtomicBool::new(false);

/// A thread's base: a real reading and the counter on either side of it.
#[derive(Clone, Copy)]
struct Base {
    before: u64,
    after: u64,
    /// The reading, in ticks of the timebase whose epoch is `epoch`.
    ticks: u64,
    epoch: Instant,
    /// The latest deadline estimate from this thread in that timebase:
    /// they never go back.
    floor: u64,
}

thread_local! {
    static BASE: Cell<Option<Base>> = const { Cell::new(None) };
}

/// The system clock's time in `timebase`'s ticks, estimated from the
/// counter (see the [module docs](self)).
pub(crate) fn now(timebase: &Timebase) -> u64 {
    let Some(count) = counter() else {
        return timebase.ticks(SystemClock.now());
    };
    let rate = RATE.load(Relaxed);
    if let Some(base) = BASE.get() {
        let mid = base.before + (base.after - base.before) / 2;
        let since = count.wrapping_sub(mid);
        if rate != 0 && since < RENEW && base.epoch == timebase.epoch() {
            return base.ticks.saturating_add(scale(since, rate));
        }
    }
    renew(timebase, count)
}

/// The system clock's time in `timebase`'s ticks, estimated from the
/// counter, never earlier than a reading of the clock taken before it and
/// later than one by [`RUNAHEAD`] and a fraction of a microsecond at most
/// (the base's bracket, tens of nanoseconds as a rule and 0.4 µs at worst,
/// and the rate's margin, 48 ns at most); never earlier than this thread's
/// last one either. What a deadline is counted from (see the
/// [module docs](self)).
pub(crate) fn at_least_now(timebase: &Timebase) -> u64 {
    let Some(count) = deadline_counter() else {
        return timebase.ticks(SystemClock.now());
    };
    let rate = RATE.load(Relaxed);
    let estimate = match BASE.get() {
        Some(base)
            if rate != 0
                && count.wrapping_sub(base.before) < RENEW_DEADLINE
                && base.epoch == timebase.epoch() =>
        {
            upper(&base, count, rate).saturating_add(RUNAHEAD)
        }
        // A real reading, fenced in the clock: no runahead.
        _ => renew(timebase, count),
    };
    match BASE.get() {
        Some(mut base) if base.epoch == timebase.epoch() => {
            base.floor = base.floor.max(estimate);
            BASE.set(Some(base));
            base.floor
        }
        _ => estimate,
    }
}

/// `base`'s estimate at `count` for a deadline: from the count before
/// its reading, at `rate` raised by the margin, rounded up.
fn upper(base: &Base, count: u64, rate: u64) -> u64 {
    let rate = rate + (rate >> MARGIN_SHIFT);
    base.ticks
        .saturating_add(scale(count.wrapping_sub(base.before), rate) + 1)
}

/// `counts` in nanoseconds at `rate`.
fn scale(counts: u64, rate: u64) -> u64 {
    ((u128::from(counts) * u128::from(rate)) >> 32) as u64
}

/// Reads the clock, counted `count` before the reading; keeps the two as
/// this thread's base if nothing came between them (a preemption would
/// make every estimate from it wrong by that long), after checking the
/// old base's deadline estimates against the reading.
fn renew(timebase: &Timebase, count: u64) -> u64 {
    let real = SystemClock.now();
    let ticks = timebase.ticks(real);
    let Some(after) = fenced_counter() else {
        return ticks;
    };
    if after.wrapping_sub(count) >= PAIR {
        return ticks;
    }
    let old = BASE.get().filter(|base| base.epoch == timebase.epoch());
    if old.is_some_and(|old| falls_short(&old, after, ticks, RATE.load(Relaxed))) {
        SHORT.store(true, Relaxed);
    }
    let floor = old.map_or(0, |old| old.floor);
    BASE.set(Some(Base {
        before: count,
        after,
        ticks,
        epoch: timebase.epoch(),
        floor,
    }));
    calibrate(real, count + (after - count) / 2);
    ticks
}

/// True if `base`'s deadline estimate at `after` (a count taken after a
/// real reading of `ticks`) falls short of that reading, while the base
/// was recent enough to serve deadlines: then the estimates were too.
fn falls_short(base: &Base, after: u64, ticks: u64, rate: u64) -> bool {
    let recent = after.wrapping_sub(base.before) < 2 * RENEW_DEADLINE;
    rate != 0 && recent && upper(base, after, rate) < ticks
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

/// The counter, unfenced (see [`RUNAHEAD`]), while Linux's clock source is
/// the counter and no deadline estimate was found short.
fn deadline_counter() -> Option<u64> {
    static TSC_CLOCK: OnceLock<bool> = OnceLock::new();
    let tsc_clock = *TSC_CLOCK.get_or_init(|| {
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|source| source.trim() == "tsc")
    });
    if !tsc_clock || SHORT.load(Relaxed) {
        return None;
    }
    counter()
}

/// The counter, not read before earlier instructions are done.
fn fenced_counter() -> Option<u64> {
    // SAFETY: `lfence` exists on every x86_64 CPU (SSE2) and only orders
    // this thread's instructions.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_lfence();
    }
    counter()
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
        let slack = 1_000;
        let mut last = 0;
        bracketed(now, |before, estimate, after| {
            assert!(
                before.saturating_sub(slack) <= estimate && estimate <= after + slack,
                "{before} <= {estimate} <= {after}"
            );
            assert!(
                estimate + slack >= last,
                "went back: {last} then {estimate}"
            );
            last = estimate;
        });
        if counter().is_some() {
            assert_ne!(RATE.load(Relaxed), 0, "calibrated after 30 ms");
        }
    }

    /// A deadline's estimate is never earlier than a real reading taken
    /// before it (no slack at all), later than one taken after it by the
    /// runahead and a microsecond at most (loose, as above), and never
    /// goes back; and no base was ever found short meanwhile.
    #[test]
    fn deadline_estimates_are_never_early() {
        let mut last = 0;
        bracketed(at_least_now, |before, estimate, after| {
            assert!(before <= estimate, "early: {estimate} < {before}");
            let most = after + RUNAHEAD + 1_000;
            assert!(estimate <= most, "{estimate} > {after} + 3 µs");
            assert!(estimate >= last, "went back: {last} then {estimate}");
            last = estimate;
        });
        assert!(
            !SHORT.load(Relaxed),
            "a base's deadline estimates fell short"
        );
    }

    /// What [`RUNAHEAD`] is for: one thread stores real readings as fast as
    /// it can, another loads each and counts a deadline at once. The load
    /// waits for the other core's line, and the unfenced counter may be
    /// read before it arrives, so without the runahead some deadlines come
    /// before the reading they loaded (one in fifty here, by up to 0.4 µs).
    #[test]
    fn deadlines_are_later_than_readings_another_thread_made_first() {
        use std::sync::atomic::Ordering::{Acquire, Release};
        let timebase = Timebase::new(SystemClock.now());
        let latest = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let (mut checked, mut early) = (0_u64, Vec::new());
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Relaxed) {
                    latest.store(timebase.ticks(SystemClock.now()), Release);
                }
            });
            let start = SystemClock.now();
            while checked < 200_000
                || SystemClock.now().saturating_duration_since(start) < 3 * CALIBRATE
            {
                let seen = latest.load(Acquire);
                let deadline = at_least_now(&timebase);
                if deadline < seen {
                    early.push(seen - deadline);
                }
                checked += 1;
            }
            stop.store(true, Relaxed);
        });
        assert!(
            early.is_empty(),
            "{} of {checked} deadlines came before a reading loaded first, by up to {} ns",
            early.len(),
            early.iter().max().unwrap_or(&0)
        );
    }

    /// Calls `estimate` between two real readings, again and again for
    /// three calibration periods (so that most estimates come after it)
    /// and some hundreds of times however slow the machine, and hands
    /// `check` each reading before, estimate and reading after.
    fn bracketed(estimate: fn(&Timebase) -> u64, mut check: impl FnMut(u64, u64, u64)) {
        let timebase = Timebase::new(SystemClock.now());
        let start = SystemClock.now();
        let mut checked = 0;
        while checked < 200 || SystemClock.now().saturating_duration_since(start) < 3 * CALIBRATE {
            let before = timebase.ticks(SystemClock.now());
            let estimate = estimate(&timebase);
            let after = timebase.ticks(SystemClock.now());
            check(before, estimate, after);
            checked += 1;
        }
    }

    /// The check a new base makes of the old one: short only if the old
    /// base's deadline estimate at the new count is below the new reading,
    /// and only while the old base was recent enough to be used.
    #[test]
    fn a_base_falls_short_only_below_the_reading() {
        let base = Base {
            before: 1_000,
            after: 1_100,
            ticks: 5_000,
            epoch: SystemClock.now(),
            floor: 0,
        };
        let one_ns = 1 << 32;
        // 1,000 counts of 1 ns with the margin and the rounding: 1,002 ns.
        assert_eq!(upper(&base, 2_000, one_ns), 6_002);
        assert!(!falls_short(&base, 2_000, 6_002, one_ns));
        assert!(falls_short(&base, 2_000, 6_003, one_ns));
        assert!(
            !falls_short(&base, 2_000, 6_003, 0),
            "no rate, no estimates"
        );
        let stale = 1_000 + 2 * RENEW_DEADLINE;
        assert!(
            !falls_short(&base, stale, u64::MAX, one_ns),
            "too old to be used"
        );
    }
}
