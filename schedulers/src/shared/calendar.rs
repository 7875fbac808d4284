//! Calendar tasks in the driver: their deadlines are wall-clock times, kept
//! by the driver beside the monotonic deadlines its queue orders, and
//! moved when the wall clock moves against the monotonic one (an NTP step,
//! an operator, a resume from suspend).

use std::sync::atomic::Ordering::Acquire;
use std::time::{Duration, SystemTime};

use super::{DriverState, Shared};
use crate::calendar::jiff::Timestamp;
use crate::clock::NEVER;
use crate::core::Key;
use crate::state;

/// How far the wall clock may move against the monotonic one before the
/// driver moves its calendar tasks' deadlines (an NTP slew stays within
/// it; a step, a resume does not).
pub(crate) const WALL_TOLERANCE: u64 = 10_000_000;

/// How often a driver with calendar tasks looks at the wall clock when
/// nothing else wakes it: the bound on how late a calendar task is after
/// the clock steps or the machine resumes.
pub(crate) const WALL_CHECK: u64 = 1_000_000_000;

impl Shared {
    /// The wall clock now, as a timestamp (the epoch if it reads earlier,
    /// which no calendar fires at).
    pub(crate) fn wall_now(&self) -> Timestamp {
        wall(self.clock.wall_now())
    }

    /// The monotonic deadline (ticks) of wall-clock time `at`, given the
    /// clocks now: due at once if it has passed.
    pub(crate) fn ticks_of(&self, at: Timestamp, now: u64, wall_now: Timestamp) -> u64 {
        if at <= wall_now {
            return now;
        }
        let ahead = at.duration_since(wall_now).unsigned_abs();
        now.saturating_add(crate::clock::nanos(ahead))
            .min(NEVER - 1)
    }

    /// The wall clock ahead of the monotonic one, in nanoseconds.
    fn wall_offset(&self) -> i128 {
        let wall = self.wall_now().as_nanosecond();
        wall - i128::from(self.now())
    }

    /// If the wall clock moved against the monotonic one by more than
    /// [`WALL_TOLERANCE`] since the last look, moves every queued calendar
    /// task to its wall-clock time (and forgets those that ended).
    pub(crate) fn check_wall(&self, driver: &mut DriverState) {
        if !self.wall_moved(driver) {
            return;
        }
        driver.wall_offset = self.wall_offset();
        let (now, wall_now) = (self.now(), self.wall_now());
        let slab = &self.slab;
        let live = |key: Key| {
            let w = slab.word(key).load(Acquire);
            state::is_calendar(w) && !state::is_terminal(w)
        };
        driver.calendars.retain(|&key, _| live(key));
        let moves: Vec<(Key, u64)> = driver
            .calendars
            .iter()
            .map(|(&key, &due)| (key, self.ticks_of(due, now, wall_now)))
            .collect();
        for (key, deadline) in moves {
            // A task not queued (due, or running) is planned from its
            // wall-clock time when it runs.
            driver.queue.reschedule(key, deadline);
        }
    }

    /// Whether the wall clock moved against the monotonic one since the
    /// driver last looked, with calendar tasks waiting.
    pub(crate) fn wall_moved(&self, driver: &DriverState) -> bool {
        !driver.calendars.is_empty()
            && (self.wall_offset() - driver.wall_offset).unsigned_abs() > u128::from(WALL_TOLERANCE)
    }

    /// When the driver must look at the wall clock again, if it has
    /// calendar tasks.
    pub(crate) fn wall_check_at(&self, driver: &DriverState) -> Option<u64> {
        (!driver.calendars.is_empty()).then(|| self.now().saturating_add(WALL_CHECK))
    }

    /// A calendar task's wall-clock deadline, as of the last plan.
    pub(crate) fn calendar_due(&self, driver: &DriverState, key: Key) -> Option<Timestamp> {
        if driver.calendars.is_empty() || !state::is_calendar(self.slab.word(key).load(Acquire)) {
            return None;
        }
        driver.calendars.get(&key).copied()
    }

    /// Records a calendar task's next wall-clock deadline; on the first,
    /// starts watching the wall clock from here.
    pub(crate) fn set_calendar_due(&self, driver: &mut DriverState, key: Key, due: Timestamp) {
        if driver.calendars.is_empty() {
            driver.wall_offset = self.wall_offset();
        }
        driver.calendars.insert(key, due);
    }
}

/// A wall-clock reading as a timestamp.
pub(crate) fn wall(at: SystemTime) -> Timestamp {
    Timestamp::try_from(at).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// `at` moved on by `d` (saturating at the end of the calendar's range).
pub(crate) fn wall_after(at: Timestamp, d: Duration) -> Timestamp {
    crate::calendar::jiff::SignedDuration::try_from(d)
        .ok()
        .and_then(|d| at.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}
