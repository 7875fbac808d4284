//! How driver threads wait: timed or signalled, spinning through short
//! gaps within a budget; and their start and exit.

use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use std::sync::{MutexGuard, PoisonError};
use std::time::Duration;

use super::{Inner, Shared};
use crate::clock::{nanos, Clock};

/// Gaps shorter than this are spun through rather than slept, within the
/// spin budget: a timed wait on Linux wakes 50 to 90 µs late, so sleeping
/// through a gap this short makes its task late by several gaps.
pub(super) const SHORT_GAP: Duration = Duration::from_micros(25);

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

impl Shared {
    /// Blocks a driver until woken or until `deadline` (ticks; `None`:
    /// until woken), after recording in `wake_at` when the waiting threads
    /// will look at the queue by themselves (the caller's deadline, or its
    /// leader's), so that a submission due earlier signals one of them.
    /// Every thread republishes before it sleeps, so the last one to sleep
    /// leaves the right value; while any is awake it reads 0.
    ///
    /// A deadline that has passed returns at once: the queue still has
    /// work for this instant (a cascade it spreads over polls), and a
    /// virtual clock would never wake a driver for it. With `may_spin`, a
    /// deadline closer than a wake-up is spun through (within the budget).
    pub(crate) fn wait<'a>(
        &'a self,
        mut inner: MutexGuard<'a, Inner>,
        deadline: Option<u64>,
        wake_at: u64,
        may_spin: bool,
    ) -> MutexGuard<'a, Inner> {
        if deadline.is_some_and(|d| d <= self.now()) {
            return inner;
        }
        let timeout = deadline
            .and_then(|d| self.timebase.instant(d))
            .and_then(|at| self.clock.wait_for(at));
        if let (Some(t), Some(d)) = (timeout, deadline) {
            let (now, gap) = (self.now(), nanos(t));
            if may_spin && t < SHORT_GAP && inner.spin.allows(now, gap, self.spin_per_window) {
                // A timed wait would wake later than this gap lasts.
                drop(inner);
                let mut at = now;
                while at < d {
                    std::hint::spin_loop();
                    at = self.now();
                }
                let mut inner = self.lock();
                inner.spin.spent += at - now;
                return inner;
            }
        }
        self.wake_at.store(wake_at, SeqCst);
        self.clock.on_idle();
        inner.waiting += 1;
        let mut inner = match timeout {
            Some(t) => {
                self.wakeup
                    .wait_timeout(inner, t)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => self
                .wakeup
                .wait(inner)
                .unwrap_or_else(PoisonError::into_inner),
        };
        inner.waiting -= 1;
        self.wakeups.fetch_add(1, Relaxed);
        self.wake_at.store(0, SeqCst);
        inner
    }

    /// Called first on every driver thread: sets its timer slack.
    pub(crate) fn on_driver_thread(&self) {
        crate::clock::set_timer_slack(self.timer_slack);
    }

    /// Times a driver thread woke from a wait.
    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.load(Relaxed)
    }

    /// A driver thread started.
    pub(crate) fn thread_started(&self, inner: &mut Inner) {
        inner.threads += 1;
    }

    /// A driver thread exits; the last one marks the scheduler terminated.
    pub(crate) fn thread_exited(&self, mut inner: MutexGuard<'_, Inner>) {
        inner.threads -= 1;
        if inner.threads == 0 {
            inner.terminated = true;
            self.terminated.notify_all();
        }
        drop(self.bury(inner));
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
