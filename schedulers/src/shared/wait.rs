//! How driver threads wait: timed or signalled, spinning through short
//! gaps within a budget; and their start and exit.

use std::sync::atomic::Ordering::Relaxed;

use std::sync::{MutexGuard, PoisonError};
use std::time::Duration;

use super::{DriverState, Shared};
use crate::clock::{nanos, NEVER};
use crate::core::{trim, IDLE_KEEP};

/// Gaps shorter than this are spun through rather than slept, within the
/// spin budget: a timed wait on Linux wakes 50 to 90 µs late, so sleeping
/// through a gap this short makes its task late by several gaps.
pub(super) const SHORT_GAP: Duration = Duration::from_micros(25);

/// The longest a cancelled task's closure waits for the scheduler to drop
/// it, once a driver thread is free, when its cancel left it to the driver
/// (see [`TaskHandle::cancel`](crate::TaskHandle::cancel)): after a look
/// that found such closures, a driver sleeps no longer than this, and the
/// first one left while it sleeps longer wakes it.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use schedulers::{HashedWheelTimer, ManualClock, Scheduler, Task, HOUSEKEEPING};
///
/// let clock = ManualClock::new();
/// let timer = HashedWheelTimer::builder().clock(clock.clone()).build()?;
/// let buffer = Arc::new([0u8; 1024]);
/// let handles: Vec<_> = (0..300_000)
///     .map(|_| {
///         let b = buffer.clone();
///         let task = Task::once(move || drop(b));
///         timer.submit(Duration::from_secs(30), task).unwrap()
///     })
///     .collect();
/// clock.advance(Duration::from_millis(1)); // the driver takes them in
/// assert!(handles.iter().all(|h| h.cancel()));
/// clock.advance(HOUSEKEEPING); // the driver drops what they captured
/// assert_eq!(Arc::strong_count(&buffer), 1);
/// # Ok::<(), schedulers::Error>(())
/// ```
pub const HOUSEKEEPING: Duration = Duration::from_millis(1);

/// The spin budget is counted per window of this many nanoseconds (a tenth
/// of a second), so a burst of short gaps spins until its share of the
/// window is spent, then sleeps.
pub(super) const SPIN_WINDOW: u64 = 100_000_000;

/// What the driver threads spun in the current window.
#[derive(Debug, Default)]
pub(super) struct SpinMeter {
    /// Start of the window, in ticks.
    since: u64,
    /// Nanoseconds spun in it.
    spent: u64,
}

impl SpinMeter {
    /// Whether a spin of `gap` ns at `now` stays within `budget` ns per
    /// window.
    pub(super) fn allows(&mut self, now: u64, gap: u64, budget: u64) -> bool {
        if now.saturating_sub(self.since) >= SPIN_WINDOW {
            *self = SpinMeter {
                since: now,
                spent: 0,
            };
        }
        self.spent.saturating_add(gap) <= budget
    }
}

/// A sleep at least this long gives back what a burst made the driver's
/// buffers hold (see `DriverState::trim`).
const TRIM_SLEEP: Duration = Duration::from_secs(1);

/// Shorter sleeps give it back once in this many: the regrowth costs a
/// burst of 10^5 about 0.3 ms (fresh pages), once in 64 of them.
pub(super) const TRIM_EVERY: u32 = 64;

impl DriverState {
    /// True if [`Shared::bury`] has closures to drop or keys to free (and
    /// so lets go of the lock).
    pub(crate) fn has_dead(&self) -> bool {
        !self.graveyard.is_empty() || !self.to_free.is_empty()
    }

    /// When the first of the waiting threads wakes by itself, if any waits.
    pub(crate) fn first_wake(&self) -> Option<u64> {
        self.sleeping.iter().copied().min()
    }

    /// Gives back what a burst made the driver's buffers hold, empty now,
    /// beyond [`IDLE_KEEP`], before a thread sleeps: a `long` sleep (or
    /// one in every [`TRIM_EVERY`]), so that a burst's buffers are not kept
    /// while nothing happens, nor while other timers keep the driver busy,
    /// and bursts that recur within a second reuse them.
    fn trim(&mut self, long: bool) {
        self.sleeps_untrimmed += 1;
        if !long && self.sleeps_untrimmed < TRIM_EVERY {
            return;
        }
        self.sleeps_untrimmed = 0;
        self.queue.trim();
        if self.ready.is_empty() && self.ready.capacity() > IDLE_KEEP {
            self.ready.shrink_to(IDLE_KEEP);
        }
        if self.early_moves.is_empty() && self.early_moves.capacity() > IDLE_KEEP {
            self.early_moves.shrink_to(IDLE_KEEP);
        }
        trim(&mut self.due);
        trim(&mut self.submitted);
        trim(&mut self.moved);
        trim(&mut self.cancelled);
        trim(&mut self.left);
        trim(&mut self.graveyard);
        trim(&mut self.to_free);
        trim(&mut self.new_calendars);
    }
}

impl Shared {
    /// Blocks a driver until woken or until `deadline` (ticks; `None`:
    /// until woken), after publishing `wake_at`, when it will look at the
    /// queue by itself (the caller's deadline, or its leader's), or the
    /// first wake-up of the threads waiting already if that comes first, so
    /// that a submission due earlier signals one of them. Awake, it
    /// publishes 0 (it looks before it sleeps or runs tasks; see
    /// [`Shared::stop_looking`]).
    ///
    /// The thread never sleeps past the earliest deadline waiting in a
    /// lane, nor for longer than a housekeeping period with a closure left
    /// to it that it has not looked at: it returns to take them in (see
    /// [`crate::wake`]).
    ///
    /// A deadline that has passed returns at once: the queue still has
    /// work for this instant (a cascade it spreads over polls), and a
    /// virtual clock would never wake a driver for it. With `may_spin`, a
    /// deadline closer than a wake-up is spun through (within the budget).
    pub(crate) fn wait<'a>(
        &'a self,
        driver: MutexGuard<'a, DriverState>,
        deadline: Option<u64>,
        wake_at: u64,
        may_spin: bool,
    ) -> MutexGuard<'a, DriverState> {
        // What ended meanwhile goes before the driver sleeps: until then
        // the scheduler is not idle. Burying lets go of the lock, and what
        // came in that gap (a shutdown, the end of the last task in
        // flight) signalled no sleeper, none slept yet: so after a burial
        // the caller looks again.
        let buried = driver.has_dead();
        let mut driver = self.bury(driver);
        let now = self.now();
        if buried || deadline.is_some_and(|d| d <= now) || std::mem::take(&mut driver.nudged) {
            return driver;
        }
        // Closures left to the driver came since the last sleep: more may
        // follow, and they wait for the driver's next look (see
        // `keep_house`).
        let (mut deadline, mut wake_at) = (deadline, wake_at);
        if std::mem::take(&mut driver.swept) {
            let look = now.saturating_add(nanos(HOUSEKEEPING));
            deadline = Some(deadline.map_or(look, |d| d.min(look)));
            wake_at = wake_at.min(look);
        }
        let timeout = deadline
            .and_then(|d| self.timebase.instant(d))
            .and_then(|at| self.clock.wait_for(at));
        if let (Some(t), Some(d)) = (timeout, deadline) {
            let gap = nanos(t);
            if may_spin && t < SHORT_GAP && driver.spin.allows(now, gap, self.spin_per_window) {
                // A timed wait would wake later than this gap lasts.
                drop(driver);
                let mut at = now;
                while at < d {
                    std::hint::spin_loop();
                    at = self.now();
                }
                let mut driver = self.lock();
                driver.spin.spent += at - now;
                return driver;
            }
        }
        // Work pushed while this thread was awake, due before it would
        // wake; or a closure left to it after it looked (or after it took
        // the marks already: then the look finds none).
        let long = deadline.is_none_or(|d| d > now.saturating_add(nanos(HOUSEKEEPING)));
        if !self
            .wake
            .sleep_until(wake_at, driver.first_wake(), &self.lanes, long)
        {
            return driver;
        }
        self.clock.on_idle();
        driver.trim(deadline.is_none_or(|d| d > now.saturating_add(nanos(TRIM_SLEEP))));
        driver.waiting += 1;
        // When this thread wakes by itself: never, if it waits for a signal
        // (a follower publishes its leader's wake-up, not its own).
        let own = deadline.unwrap_or(NEVER);
        driver.sleeping.push(own);
        let mut driver = match timeout {
            Some(t) => {
                self.wakeup
                    .wait_timeout(driver, t)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => self
                .wakeup
                .wait(driver)
                .unwrap_or_else(PoisonError::into_inner),
        };
        driver.waiting -= 1;
        if let Some(i) = driver.sleeping.iter().position(|&w| w == own) {
            driver.sleeping.swap_remove(i);
        }
        driver.nudged = false;
        self.wakeups.fetch_add(1, Relaxed);
        self.observer.wakeup();
        self.wake.awake();
        driver
    }

    /// A pool thread is about to run tasks with the driver's lock released,
    /// so it no longer looks at the lanes: if other threads wait, callers
    /// must wake one of them for work due before they wake by themselves
    /// (see [`crate::wake`]). True if a lane holds such work already: then
    /// the thread wakes one, after it lets go of the lock.
    pub(crate) fn stop_looking(&self, driver: &DriverState) -> bool {
        driver
            .first_wake()
            .is_some_and(|others| self.wake.stop_looking(others, &self.lanes))
    }

    /// Called first on every driver thread: sets its timer slack, and gives
    /// it figures of its own to record its runs in.
    pub(crate) fn on_driver_thread(&self) {
        crate::clock::set_timer_slack(self.timer_slack);
        self.observer.attach_driver_thread();
    }

    /// Times a driver thread woke from a wait.
    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.load(Relaxed)
    }

    /// A driver thread started.
    pub(crate) fn thread_started(&self, driver: &mut DriverState) {
        driver.threads += 1;
    }

    /// A driver thread exits (or never started); the last one of a shut
    /// down scheduler marks it terminated.
    pub(crate) fn thread_exited(&self, mut driver: MutexGuard<'_, DriverState>) {
        driver.threads -= 1;
        self.terminate_if_done(&mut driver);
        drop(self.bury(driver));
        self.wakeup.notify_all();
        self.clock.on_idle();
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The meter lets a window spin up to its budget, counting each spin
    /// as it is asked for, and starts afresh in the next window.
    #[test]
    fn spinning_stops_when_the_window_budget_is_spent() {
        let mut meter = SpinMeter::default();
        let budget = 10_000;
        assert!(meter.allows(0, 6_000, budget));
        meter.spent += 6_000;
        assert!(meter.allows(1_000, 4_000, budget));
        meter.spent += 4_000;
        assert!(
            !meter.allows(2_000, 1, budget),
            "the window's budget is spent"
        );
        assert!(meter.allows(SPIN_WINDOW, 5_000, budget), "a new window");
        assert!(
            !SpinMeter::default().allows(0, 1, 0),
            "a zero budget never spins"
        );
    }
}
