//! What a periodic or calendar task does about runs it missed, and about a
//! run that panicked: pure rules, so every driver and the Redis worker
//! apply the same one.

use std::num::NonZeroU64;

use jiff::Timestamp;

use super::error::CalendarError;
use super::zone::Calendar;

/// What a periodic or calendar task does when it falls behind its grid:
/// the machine slept, the scheduler was down, or a run took longer than the
/// gap to the next.
///
/// The grid is the task's deadlines: `last + k × period` for a fixed-rate
/// task, the fire times for a calendar. A task is behind when the grid
/// point after the one it last ran for is already past (strictly before
/// now); a point exactly at now is due, not missed. Side by side with
/// Quartz's misfire instructions and tokio's `MissedTickBehavior`, in the
/// [guide](super::guide#missed-runs).
///
/// # Examples
///
/// ```
/// use std::num::NonZeroU64;
/// use schedulers::calendar::{MissedRuns, NextRun};
///
/// // Every 10 ns, last run for 100, now 135: 110, 120 and 130 were missed.
/// let period = NonZeroU64::new(10).unwrap();
/// let catch_up = MissedRuns::CatchUp.plan_fixed_rate(period, 100, 135);
/// assert_eq!(catch_up.next, Some(NextRun { at: 110, scheduled: 110 }));
/// let skip = MissedRuns::Skip.plan_fixed_rate(period, 100, 135);
/// assert_eq!((skip.next, skip.skipped), (Some(NextRun { at: 140, scheduled: 140 }), 3));
/// let delay = MissedRuns::Delay.plan_fixed_rate(period, 100, 135);
/// assert_eq!((delay.next, delay.skipped), (Some(NextRun { at: 135, scheduled: 135 }), 2));
/// let once = MissedRuns::OnceNow.plan_fixed_rate(period, 100, 135);
/// assert_eq!((once.next, once.skipped), (Some(NextRun { at: 135, scheduled: 130 }), 2));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedRuns {
    /// Run every missed point, back to back, until caught up (Java's
    /// fixed-rate rule, and this crate's default). Nothing is skipped.
    #[default]
    CatchUp,
    /// Skip the missed points: the next run is the first grid point at or
    /// after now.
    Skip,
    /// Run once now, and move the grid to now: the following runs are
    /// `now + k × period`. Fixed-rate only: a calendar's grid is the wall
    /// clock's and cannot move.
    Delay,
    /// Run once now, then go on with the grid where it was (Quartz's
    /// fire-once-now): the run now stands for the latest missed point.
    OnceNow,
}

/// What a periodic or calendar task does when a run panics. Either way the
/// panic is reported and the scheduler survives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnPanic {
    /// The task stops repeating and its handle reports the panic (the
    /// executor's rule, and this crate's default).
    #[default]
    Stop,
    /// The panic is reported and the task keeps its schedule: the next run
    /// is planned by its [`MissedRuns`] as after any run.
    Continue,
}

impl OnPanic {
    /// Whether a task that panicked runs again.
    pub fn repeats(self) -> bool {
        self == OnPanic::Continue
    }
}

/// What a task does next, from [`MissedRuns::plan_fixed_rate`] or
/// [`MissedRuns::plan_calendar`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Plan<T> {
    /// The next run, or `None` if the grid has no point left: the task is
    /// done (a calendar past its last year; a fixed-rate grid past
    /// `u64::MAX`).
    pub next: Option<NextRun<T>>,
    /// Grid points passed over without a run.
    pub skipped: u64,
}

/// The next run of a task: when it starts, and which grid point it stands
/// for (Quartz's fire time and scheduled fire time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NextRun<T> {
    /// When the run starts: a grid point, or now for a run that makes up
    /// for missed ones.
    pub at: T,
    /// The grid point the run stands for: pass it back as `last` when
    /// planning the run after it.
    pub scheduled: T,
}

impl MissedRuns {
    /// The next run of a fixed-rate task with `period`, whose last run stood
    /// for the grid point `last`, planned at `now`. Times are nanoseconds on
    /// any one axis (a driver's monotonic ticks). Constant time, however far
    /// behind.
    pub fn plan_fixed_rate(self, period: NonZeroU64, last: u64, now: u64) -> Plan<u64> {
        plan(self, &Period(period.get()), last, now)
    }

    /// The next run of a calendar task, whose last run stood for the fire
    /// time `last`, planned at `now` (both wall-clock instants). The first
    /// run of a calendar task is plainly `calendar.next_after(now)`.
    ///
    /// Takes one [`Calendar::next_after`] per missed fire time to count
    /// them (a run every second missed for a day: 86,400 steps, a few ms).
    ///
    /// # Errors
    ///
    /// One that [`is_delay_on_calendar`](CalendarError::is_delay_on_calendar)
    /// for [`MissedRuns::Delay`]; refuse it when the task is scheduled, with
    /// [`MissedRuns::check_calendar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedulers::calendar::{jiff::Timestamp, Calendar, MissedRuns};
    ///
    /// let hourly = Calendar::parse("0 * * * *")?;
    /// let last: Timestamp = "2024-05-01T08:00:00Z".parse().unwrap();
    /// let now: Timestamp = "2024-05-01T11:30:00Z".parse().unwrap(); // back after an outage
    /// let plan = MissedRuns::Skip.plan_calendar(&hourly, last, now)?;
    /// assert_eq!(plan.next.unwrap().at.to_string(), "2024-05-01T12:00:00Z");
    /// assert_eq!(plan.skipped, 3); // 09:00, 10:00, 11:00
    /// # Ok::<(), schedulers::calendar::CalendarError>(())
    /// ```
    pub fn plan_calendar(
        self,
        calendar: &Calendar,
        last: Timestamp,
        now: Timestamp,
    ) -> Result<Plan<Timestamp>, CalendarError> {
        self.check_calendar()?;
        Ok(plan(self, calendar, last, now))
    }

    /// Whether the policy applies to calendar tasks: all but
    /// [`MissedRuns::Delay`] do.
    ///
    /// # Errors
    ///
    /// One that [`is_delay_on_calendar`](CalendarError::is_delay_on_calendar)
    /// for [`MissedRuns::Delay`].
    pub fn check_calendar(self) -> Result<(), CalendarError> {
        match self {
            MissedRuns::Delay => Err(CalendarError::delay_on_calendar()),
            _ => Ok(()),
        }
    }
}

/// The points of a task's grid, as the rule needs them.
trait Grid {
    type Instant: Copy + Ord;

    /// The first point strictly after `t`.
    fn next_after(&self, t: Self::Instant) -> Option<Self::Instant>;

    /// The points from `first` (a point) up to `now`, exclusive.
    fn behind(&self, first: Self::Instant, now: Self::Instant) -> Behind<Self::Instant>;
}

/// The grid points a task missed, from a first one up to now.
struct Behind<T> {
    /// How many (at least one).
    missed: u64,
    /// The latest.
    latest: T,
    /// The first point at or after now, if the grid has one.
    next: Option<T>,
}

/// The one rule, for every grid.
fn plan<G: Grid>(policy: MissedRuns, grid: &G, last: G::Instant, now: G::Instant) -> Plan<G::Instant> {
    let run = |at, scheduled| Some(NextRun { at, scheduled });
    let Some(first) = grid.next_after(last) else {
        return Plan {
            next: None,
            skipped: 0,
        };
    };
    if first >= now {
        return Plan {
            next: run(first, first),
            skipped: 0,
        };
    }
    match policy {
        MissedRuns::CatchUp => Plan {
            next: run(first, first),
            skipped: 0,
        },
        MissedRuns::Skip => {
            let behind = grid.behind(first, now);
            Plan {
                next: behind.next.and_then(|p| run(p, p)),
                skipped: behind.missed,
            }
        }
        // One late run, now, makes up for the first missed point.
        MissedRuns::Delay => Plan {
            next: run(now, now),
            skipped: grid.behind(first, now).missed - 1,
        },
        MissedRuns::OnceNow => {
            let behind = grid.behind(first, now);
            Plan {
                next: run(now, behind.latest),
                skipped: behind.missed - 1,
            }
        }
    }
}

/// A fixed-rate grid: `last + k × period`, in nanoseconds.
struct Period(u64);

impl Grid for Period {
    type Instant = u64;

    fn next_after(&self, t: u64) -> Option<u64> {
        t.checked_add(self.0)
    }

    fn behind(&self, first: u64, now: u64) -> Behind<u64> {
        let missed = (now - first - 1) / self.0 + 1;
        Behind {
            missed,
            latest: first + (missed - 1) * self.0,
            next: missed
                .checked_mul(self.0)
                .and_then(|d| d.checked_add(first)),
        }
    }
}

impl Grid for Calendar {
    type Instant = Timestamp;

    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        Calendar::next_after(self, t)
    }

    fn behind(&self, first: Timestamp, now: Timestamp) -> Behind<Timestamp> {
        let mut behind = Behind {
            missed: 1,
            latest: first,
            next: Calendar::next_after(self, first),
        };
        while let Some(p) = behind.next.filter(|&p| p < now) {
            behind.missed += 1;
            behind.latest = p;
            behind.next = Calendar::next_after(self, p);
        }
        behind
    }
}
