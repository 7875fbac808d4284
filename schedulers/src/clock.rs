//! Time, as schedulers see it.
//!
//! [`Clock`] is the only seam to time in this crate: a scheduler's driver
//! thread reads `now` and decides how long to block through it, and nothing
//! else in the crate reads time. [`SystemClock`] is the real monotonic clock.
//! [`ManualClock`] is virtual time for tests and simulations: it moves only
//! when told to, wakes every scheduler attached to it when it does, and
//! [`ManualClock::advance`] returns only once those schedulers have finished
//! reacting, so a test can assert right after it without sleeping.

use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, Kind};

/// A source of time for schedulers.
///
/// Implemented by [`SystemClock`] and [`ManualClock`]. A custom clock only
/// needs [`Clock::now`]; the other methods let a virtual clock control and
/// observe the drivers that wait on it.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> Instant;

    /// The wall clock: what calendar schedules fire by. Unlike
    /// [`Clock::now`] it may step (NTP, an operator) and jump forward
    /// across a suspend, which the monotonic clock does not count.
    fn wall_now(&self) -> SystemTime {
        SystemTime::now()
    }

    /// How long, in real time, a driver that waits for `deadline` should
    /// block: `None` means "until woken", which is what a virtual clock wants,
    /// since only [`Wakeable::wake`] can move its time.
    fn wait_for(&self, deadline: Instant) -> Option<Duration> {
        Some(deadline.saturating_duration_since(self.now()))
    }

    /// Called once by each scheduler driver that waits on this clock.
    fn attach(&self, driver: Weak<dyn Wakeable>) {
        let _ = driver;
    }

    /// Called by a driver each time it has finished reacting and goes idle.
    fn on_idle(&self) {}
}

/// A scheduler driver as a virtual clock sees it: something to wake when
/// time moves and to ask whether it has finished reacting.
pub trait Wakeable: Send + Sync {
    /// Wakes the driver so that it reads the clock again. Must not lose the
    /// wake-up if the driver is just about to block.
    fn wake(&self);

    /// True when nothing is due at `now` that the driver has yet to start,
    /// and nothing it started is still running.
    fn is_idle(&self, now: Instant) -> bool;

    /// True when everything due at `now` has been started or handed to the
    /// driver's executor, though it may still be waiting there or running.
    ///
    /// [`ManualClock::advance`] called from inside a task waits for this
    /// rather than for [`Wakeable::is_idle`], which the calling task itself
    /// would hold off. A driver that runs its tasks on its own thread, where
    /// the caller may be, must not wait for itself: the default says it has
    /// caught up.
    fn is_caught_up(&self, now: Instant) -> bool {
        let _ = now;
        true
    }
}

/// How much later than the clock's reading at the call a scheduler on the
/// [`SystemClock`] counts a deadline from, at most (and a fraction of a
/// microsecond more at worst): on x86-64 it reads the CPU's counter
/// without waiting for the instructions before the read, which saves a
/// fifth of a schedule-and-cancel pair, and this covers how early such a
/// read can be. So a timer never runs before its deadline counted from
/// any clock reading made before the call, on any thread, and runs up to
/// this much later than one would.
pub const DEADLINE_RUNAHEAD: Duration = Duration::from_micros(2);

/// The real monotonic clock (`std::time::Instant`).
///
/// # Examples
///
/// ```
/// use schedulers::{Clock, SystemClock};
///
/// let clock = SystemClock;
/// let a = clock.now();
/// assert!(clock.now() >= a);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // This is the one place that reads real time.
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Virtual time for tests and simulations.
///
/// Starts at the real time of its creation and moves only through
/// [`ManualClock::advance`]. Cloning gives another handle to the same clock.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// use schedulers::{HeapTimer, ManualClock, SchedulerExt};
///
/// let clock = ManualClock::new();
/// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
/// let runs = Arc::new(AtomicUsize::new(0));
/// let r = runs.clone();
/// timer.schedule(Duration::from_secs(60), move || { r.fetch_add(1, Ordering::SeqCst); }).unwrap();
///
/// clock.advance(Duration::from_secs(59));
/// assert_eq!(runs.load(Ordering::SeqCst), 0); // never early
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(runs.load(Ordering::SeqCst), 1); // ran before advance returned
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    origin: Instant,
    elapsed: Mutex<Duration>,
    /// The wall clock at the origin.
    wall_origin: SystemTime,
    /// How far the wall clock was stepped or jumped away from `origin +
    /// elapsed`, in nanoseconds.
    wall_shift: Mutex<i128>,
    drivers: Mutex<Vec<Weak<dyn Wakeable>>>,
    /// Counts idle reports so that `settle` can block between checks.
    progress: Mutex<u64>,
    progressed: Condvar,
}

/// How long `settle` waits, in real time, before it gives up on a driver
/// that never goes idle (a task stuck in a loop, say).
const SETTLE_LIMIT: Duration = Duration::from_secs(120);

impl ManualClock {
    /// A clock at the current real time that moves only when advanced.
    pub fn new() -> ManualClock {
        ManualClock::with_wall(SystemTime::now())
    }

    /// A clock whose wall clock starts at `wall` (a calendar test's "now");
    /// its monotonic time starts at the current real time, as with
    /// [`ManualClock::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use schedulers::{Clock, ManualClock};
    ///
    /// let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// let clock = ManualClock::with_wall(start);
    /// clock.advance(Duration::from_secs(5));
    /// assert_eq!(clock.wall_now(), start + Duration::from_secs(5));
    /// clock.suspend(Duration::from_secs(60)); // the machine slept a minute
    /// assert_eq!(clock.wall_now(), start + Duration::from_secs(65));
    /// assert_eq!(clock.elapsed(), Duration::from_secs(5));
    /// ```
    pub fn with_wall(wall: SystemTime) -> ManualClock {
        ManualClock {
            inner: Arc::new(ManualInner {
                origin: SystemClock.now(),
                elapsed: Mutex::new(Duration::ZERO),
                wall_origin: wall,
                wall_shift: Mutex::new(0),
                drivers: Mutex::new(Vec::new()),
                progress: Mutex::new(0),
                progressed: Condvar::new(),
            }),
        }
    }

    /// Virtual time elapsed since the clock was created.
    pub fn elapsed(&self) -> Duration {
        *lock(&self.inner.elapsed)
    }

    /// Moves time forward by `d`, wakes every attached scheduler, and waits
    /// until all of them have finished reacting: every task due by the new
    /// time has run (or, on a pool, finished) before this returns.
    ///
    /// `advance(Duration::ZERO)` only waits; use it after scheduling a task
    /// that is already due. Time saturates at the latest instant the
    /// platform can represent (hundreds of billions of years away on Linux):
    /// advancing past it leaves the clock there, and never panics.
    ///
    /// Called from inside a running task (to model a task that takes time),
    /// it moves time, wakes the schedulers and waits only until each has
    /// handed what is now due to its executor (see
    /// [`Wakeable::is_caught_up`]): it cannot wait for those runs, since they
    /// may be queued behind the calling task itself.
    ///
    /// # Panics
    ///
    /// Panics if the schedulers are still busy after two minutes of real
    /// time: a task that never returns would otherwise hang the test.
    pub fn advance(&self, d: Duration) {
        {
            let mut elapsed = lock(&self.inner.elapsed);
            *elapsed = latest(self.inner.origin, *elapsed, elapsed.saturating_add(d));
        }
        for driver in self.drivers() {
            driver.wake();
        }
        if inside_task() {
            self.wait_for_drivers(|d, now| d.is_caught_up(now));
        } else {
            self.settle();
        }
    }

    /// Sets the wall clock to `wall` (an operator's `date -s`, an NTP step),
    /// forward or back; monotonic time does not move. Wakes every attached
    /// scheduler and waits until they have reacted, as
    /// [`ManualClock::advance`] does: a calendar task whose wall-clock time
    /// has come runs before this returns.
    pub fn set_wall(&self, wall: SystemTime) {
        {
            let now = self.wall_now();
            let by = match wall.duration_since(now) {
                Ok(ahead) => ahead.as_nanos() as i128,
                Err(behind) => -(behind.duration().as_nanos() as i128),
            };
            *lock(&self.inner.wall_shift) += by;
        }
        self.advance(Duration::ZERO);
    }

    /// The machine sleeps for `d` and resumes: the wall clock moves on by
    /// `d`, monotonic time does not (Linux's `CLOCK_MONOTONIC`, which
    /// `Instant` reads, stops during a suspend). Wakes the schedulers as
    /// [`ManualClock::set_wall`] does.
    pub fn suspend(&self, d: Duration) {
        *lock(&self.inner.wall_shift) += d.as_nanos() as i128;
        self.advance(Duration::ZERO);
    }

    /// Waits until every attached scheduler has finished reacting to the
    /// current time, without moving it.
    ///
    /// # Panics
    ///
    /// As [`ManualClock::advance`].
    pub fn settle(&self) {
        self.wait_for_drivers(|d, now| d.is_idle(now));
    }

    /// Blocks until `done` holds for every attached driver, re-checking each
    /// time a driver reports progress through [`Clock::on_idle`].
    fn wait_for_drivers(&self, done: impl Fn(&dyn Wakeable, Instant) -> bool) {
        let start = SystemClock.now();
        loop {
            let seen = *lock(&self.inner.progress);
            let now = self.now();
            // A task may move time while the drivers are looked at (an
            // advance from inside it): what they did then is judged by the
            // time they did it at, so look again if time moved meanwhile.
            if self.drivers().iter().all(|d| done(d.as_ref(), now)) && self.now() == now {
                return;
            }
            if SystemClock.now().duration_since(start) > SETTLE_LIMIT {
                panic!(
                    "ManualClock: schedulers still busy after {SETTLE_LIMIT:?}; is a task stuck?"
                );
            }
            let guard = lock(&self.inner.progress);
            if *guard == seen {
                // Bounded, so that a report lost between the check and this
                // wait costs a few milliseconds, never a hang.
                let _ = self
                    .inner
                    .progressed
                    .wait_timeout(guard, Duration::from_millis(5))
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }

    fn drivers(&self) -> Vec<Arc<dyn Wakeable>> {
        let mut drivers = lock(&self.inner.drivers);
        drivers.retain(|d| d.strong_count() > 0);
        drivers.iter().filter_map(Weak::upgrade).collect()
    }
}

/// The latest of `want` and the durations down to `known` (which fits) that
/// still make an `Instant` after `origin`: virtual time saturates there.
fn latest(origin: Instant, known: Duration, want: Duration) -> Duration {
    if origin.checked_add(want).is_some() {
        return want;
    }
    // Bisect on nanoseconds: `lo` always fits, `hi` never does.
    let (mut lo, mut hi) = (known.as_nanos(), want.as_nanos());
    let at = |n: u128| {
        let secs = u64::try_from(n / 1_000_000_000).unwrap_or(u64::MAX);
        Duration::new(secs, (n % 1_000_000_000) as u32)
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if origin.checked_add(at(mid)).is_some() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    at(lo)
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.inner.origin + self.elapsed()
    }

    fn wall_now(&self) -> SystemTime {
        let shift = *lock(&self.inner.wall_shift);
        let at = self.inner.wall_origin + self.elapsed();
        let magnitude =
            Duration::from_nanos(u64::try_from(shift.unsigned_abs()).unwrap_or(u64::MAX));
        let moved = if shift >= 0 {
            at.checked_add(magnitude)
        } else {
            at.checked_sub(magnitude)
        };
        moved.unwrap_or(at)
    }

    fn wait_for(&self, _deadline: Instant) -> Option<Duration> {
        None
    }

    fn attach(&self, driver: Weak<dyn Wakeable>) {
        lock(&self.inner.drivers).push(driver);
    }

    fn on_idle(&self) {
        *lock(&self.inner.progress) += 1;
        self.inner.progressed.notify_all();
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Instant {
        (**self).now()
    }
    fn wall_now(&self) -> SystemTime {
        (**self).wall_now()
    }
    fn wait_for(&self, deadline: Instant) -> Option<Duration> {
        (**self).wait_for(deadline)
    }
    fn attach(&self, driver: Weak<dyn Wakeable>) {
        (**self).attach(driver)
    }
    fn on_idle(&self) {
        (**self).on_idle()
    }
}

/// Locks a mutex, ignoring poison: every critical section in this crate
/// leaves its data consistent, and task panics are caught outside locks.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Blocks until `done(&state)` holds or `timeout` of real time passes
/// (`await_termination`); returns whether it held.
pub(crate) fn wait_until<T>(
    mutex: &Mutex<T>,
    cond: &Condvar,
    timeout: Duration,
    done: impl Fn(&T) -> bool,
) -> bool {
    let give_up = SystemClock.now().checked_add(timeout);
    let mut state = lock(mutex);
    while !done(&state) {
        let left = match give_up {
            Some(end) => end.saturating_duration_since(SystemClock.now()),
            None => Duration::from_secs(3600), // "forever": wait in long steps
        };
        if left.is_zero() {
            return false;
        }
        state = cond
            .wait_timeout(state, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    true
}

/// Converts between a clock's `Instant`s and the `u64` nanosecond ticks the
/// pure cores work in, counted from the scheduler's creation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timebase {
    epoch: Instant,
}

impl Timebase {
    pub(crate) fn new(epoch: Instant) -> Timebase {
        Timebase { epoch }
    }

    /// The instant tick 0 is.
    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Nanoseconds since the epoch: 0 for earlier instants, and at most one
    /// short of [`NEVER`], which time therefore never reaches.
    pub(crate) fn ticks(&self, t: Instant) -> u64 {
        nanos(t.saturating_duration_since(self.epoch)).min(NEVER - 1)
    }

    /// The instant `ticks` nanoseconds after the epoch, or `None` if it is
    /// beyond what `Instant` can hold ("never").
    pub(crate) fn instant(&self, ticks: u64) -> Option<Instant> {
        self.epoch.checked_add(Duration::from_nanos(ticks))
    }

    /// The deadline at instant `at` (due at once if already past), or a
    /// delay-overflow error if it is beyond the time range.
    pub(crate) fn deadline_at(&self, at: Instant) -> Result<u64, Error> {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos())
            .ok()
            .filter(|&t| t < NEVER)
            .ok_or_else(|| Error::new(Kind::DelayOverflow))
    }

    /// The deadline `delay` after `now`, or a delay-overflow error.
    pub(crate) fn deadline(now: u64, delay: Duration) -> Result<u64, Error> {
        now.checked_add(nanos(delay))
            .filter(|&t| t < NEVER)
            .ok_or_else(|| Error::new(Kind::DelayOverflow))
    }
}

/// A deadline that is never reached: where a periodic task whose period
/// overflows the time range parks.
pub(crate) const NEVER: u64 = u64::MAX;

/// A period as a signed count of nanoseconds, saturated to the range.
pub(crate) const fn nanos(d: Duration) -> u64 {
    // In u64 (a u128 product costs a call on the submit path).
    match d.as_secs().checked_mul(1_000_000_000) {
        Some(secs) => secs.saturating_add(d.subsec_nanos() as u64),
        None => u64::MAX,
    }
}

/// Tells Linux how late it may wake this thread's timed waits: its default
/// of 50 µs would be added to every timer thread's lateness. Best effort;
/// elsewhere, or if refused, nothing changes.
pub(crate) fn set_timer_slack(slack: Duration) {
    #[cfg(target_os = "linux")]
    {
        let _ = nix::sys::prctl::set_timerslack(nanos(slack));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = slack;
}

thread_local! {
    static INSIDE_TASK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as running a task, for [`inside_task`].
pub(crate) struct InsideTask(bool);

impl InsideTask {
    pub(crate) fn enter() -> InsideTask {
        InsideTask(INSIDE_TASK.with(|c| c.replace(true)))
    }
}

impl Drop for InsideTask {
    fn drop(&mut self) {
        INSIDE_TASK.with(|c| c.set(self.0));
    }
}

/// True on a thread that is running a scheduled task right now.
pub(crate) fn inside_task() -> bool {
    INSIDE_TASK.with(Cell::get)
}

#[cfg(test)]
mod test {
    use super::*;

    /// Virtual time saturates at the latest instant the platform can hold:
    /// no panic, no wrap, and "never" stays unreached.
    #[test]
    fn advance_saturates_at_the_end_of_time() {
        let clock = ManualClock::new();
        let start = clock.now();
        clock.advance(Duration::MAX);
        let end = clock.now();
        assert!(end > start);
        clock.advance(Duration::MAX);
        clock.advance(Duration::from_secs(1));
        assert_eq!(clock.now(), end, "time stays at its end");
        assert!(clock.elapsed() > Duration::from_secs(600 * 365 * 24 * 3600));
        let timebase = Timebase::new(start);
        assert!(timebase.ticks(end) < NEVER, "the end of time is not never");
        assert!(Timebase::deadline(timebase.ticks(end), Duration::ZERO).is_ok());
    }
}
