//! What a periodic or calendar task does about runs it missed, and about a
//! run that panicked: pure rules, so every driver and the Redis worker
//! apply the same one.

use std::num::NonZeroU64;
use std::time::Duration;

use jiff::Timestamp;

use super::error::CalendarError;
use super::zone::Calendar;

/// What a periodic or calendar task does when one of its deadlines comes
/// due late: the machine slept, the scheduler was down, or the previous run
/// took longer than the gap to this one.
///
/// The grid is the task's deadlines: `first + k × period` for a fixed-rate
/// task, the fire times for a calendar. The rule is applied when a deadline
/// comes due ([`MissedRuns::plan_fixed_rate`],
/// [`MissedRuns::plan_calendar`]), as Quartz applies misfire instructions
/// and tokio its `MissedTickBehavior`: a deadline is late when it comes due
/// more than a tolerance after its time, and then every grid point already
/// due by now is a missed run. Side by side with Quartz's and tokio's, in
/// the [guide](super::guide#missed-runs).
///
/// # Examples
///
/// ```
/// use std::num::NonZeroU64;
/// use std::time::Duration;
/// use schedulers::calendar::{MissedRuns, Plan};
///
/// // Every 10 ns from 0; the deadline 100 comes due at 135: 100, 110, 120
/// // and 130 are all due.
/// let (period, tolerance) = (NonZeroU64::new(10).unwrap(), Duration::ZERO);
/// let plan = |policy: MissedRuns| policy.plan_fixed_rate(period, 100, 135, tolerance);
/// // Run for 100 now; 110 is next (and late too: back to back).
/// assert_eq!(plan(MissedRuns::CatchUp), Plan { run_now: Some(100), next: Some(110), skipped: 0 });
/// // Run none of them; wait for 140.
/// assert_eq!(plan(MissedRuns::Skip), Plan { run_now: None, next: Some(140), skipped: 4 });
/// // Run once now, and the grid moves: 145 is next.
/// assert_eq!(plan(MissedRuns::Delay), Plan { run_now: Some(135), next: Some(145), skipped: 3 });
/// // Run once now for the latest, 130; 140 is next.
/// assert_eq!(plan(MissedRuns::OnceNow), Plan { run_now: Some(130), next: Some(140), skipped: 3 });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedRuns {
    /// Run every missed point, back to back, until caught up (Java's
    /// fixed-rate rule, this crate's default; tokio's `Burst`, Quartz's
    /// `IGNORE_MISFIRE_POLICY`). Nothing is skipped.
    #[default]
    CatchUp,
    /// Run none of the missed points: the next run is the first grid point
    /// after now (Quartz's `DO_NOTHING` and
    /// `RESCHEDULE_NEXT_WITH_REMAINING_COUNT`; not tokio's `Skip`, which is
    /// [`OnceNow`](MissedRuns::OnceNow)).
    Skip,
    /// Run once now, and move the grid to now: the following runs are
    /// `now + k × period` (tokio's `Delay`, Quartz's
    /// `RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT`). Fixed-rate only: a
    /// calendar's grid is the wall clock's and cannot move.
    Delay,
    /// Run once now, for the latest missed point, then go on with the grid
    /// where it was (Quartz's `FIRE_ONCE_NOW`, tokio's `Skip`).
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
    /// The panic is reported and the task keeps its schedule: its next
    /// deadline stands, as after any run.
    Continue,
}

impl OnPanic {
    /// Whether a task that panicked runs again.
    pub fn repeats(self) -> bool {
        self == OnPanic::Continue
    }
}

/// What a task does when a deadline comes due, from
/// [`MissedRuns::plan_fixed_rate`] or [`MissedRuns::plan_calendar`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Plan<T> {
    /// Run now, or not (`None`: the due deadline and the others missed are
    /// skipped). The value is the grid point the run stands for (Quartz's
    /// scheduled fire time, for a job's context); the run itself starts now.
    pub run_now: Option<T>,
    /// The task's next deadline, or `None` if its grid has no point left (a
    /// calendar past its last year; a fixed-rate grid past `u64::MAX`).
    /// When it comes due, plan again.
    pub next: Option<T>,
    /// Grid points passed over without a run.
    pub skipped: u64,
}

impl MissedRuns {
    /// What a fixed-rate task with `period` does when its deadline `due` (a
    /// grid point) comes due at `now`. Times are nanoseconds on any one axis
    /// (a driver's monotonic ticks). `due` is late if `now` is more than
    /// `tolerance` after it: make that more than the driver's usual
    /// lateness (its wake-up latency, a poll interval), or every run counts
    /// as missed. Constant time, however far behind.
    pub fn plan_fixed_rate(
        self,
        period: NonZeroU64,
        due: u64,
        now: u64,
        tolerance: Duration,
    ) -> Plan<u64> {
        let late = u128::from(now.saturating_sub(due)) > tolerance.as_nanos();
        plan(self, &Period(period.get()), due, now, late)
    }

    /// What a calendar task does when its fire time `due` comes due at `now`
    /// (both wall-clock instants); late as for
    /// [`plan_fixed_rate`](MissedRuns::plan_fixed_rate). The first
    /// deadline of a calendar task is plainly `calendar.next_after(now)`.
    ///
    /// Late, it takes one [`Calendar::next_after`] per fire time due by now
    /// to count them (a run every second missed for a day: 86,400 steps, a
    /// few ms).
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
    /// use std::time::Duration;
    /// use schedulers::calendar::{jiff::Timestamp, Calendar, MissedRuns};
    ///
    /// let hourly = Calendar::parse("0 * * * *")?;
    /// let due: Timestamp = "2024-05-01T09:00:00Z".parse().unwrap();
    /// let now: Timestamp = "2024-05-01T11:30:00Z".parse().unwrap(); // back after an outage
    /// let plan = MissedRuns::Skip.plan_calendar(&hourly, due, now, Duration::from_secs(1))?;
    /// assert_eq!(plan.run_now, None);
    /// assert_eq!(plan.next.unwrap().to_string(), "2024-05-01T12:00:00Z");
    /// assert_eq!(plan.skipped, 3); // 09:00, 10:00, 11:00
    /// # Ok::<(), schedulers::calendar::CalendarError>(())
    /// ```
    pub fn plan_calendar(
        self,
        calendar: &Calendar,
        due: Timestamp,
        now: Timestamp,
        tolerance: Duration,
    ) -> Result<Plan<Timestamp>, CalendarError> {
        self.check_calendar()?;
        let late = now > due && now.duration_since(due).unsigned_abs() > tolerance;
        Ok(plan(self, calendar, due, now, late))
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

    /// The points from `due` (a point) up to `now`, inclusive.
    fn behind(&self, due: Self::Instant, now: Self::Instant) -> Behind<Self::Instant>;
}

/// The grid points a task missed, from a due one up to now.
struct Behind<T> {
    /// How many (at least one: `due`).
    missed: u64,
    /// The latest.
    latest: T,
    /// The first point after now, if the grid has one.
    next: Option<T>,
}

/// The one rule, for every grid.
fn plan<G: Grid>(
    policy: MissedRuns,
    grid: &G,
    due: G::Instant,
    now: G::Instant,
    late: bool,
) -> Plan<G::Instant> {
    let on_time = Plan {
        run_now: Some(due),
        next: grid.next_after(due),
        skipped: 0,
    };
    match policy {
        _ if !late => on_time,
        MissedRuns::CatchUp => on_time,
        MissedRuns::Skip => {
            let behind = grid.behind(due, now);
            Plan {
                run_now: None,
                next: behind.next,
                skipped: behind.missed,
            }
        }
        // The grid moves: a fixed-rate grid's next point is a period after
        // any instant given.
        MissedRuns::Delay => Plan {
            run_now: Some(now),
            next: grid.next_after(now),
            skipped: grid.behind(due, now).missed - 1,
        },
        MissedRuns::OnceNow => {
            let behind = grid.behind(due, now);
            Plan {
                run_now: Some(behind.latest),
                next: behind.next,
                skipped: behind.missed - 1,
            }
        }
    }
}

/// A fixed-rate grid: a point every `period` nanoseconds from any point.
struct Period(u64);

impl Grid for Period {
    type Instant = u64;

    fn next_after(&self, t: u64) -> Option<u64> {
        t.checked_add(self.0)
    }

    fn behind(&self, due: u64, now: u64) -> Behind<u64> {
        let missed = (now - due) / self.0 + 1;
        Behind {
            missed,
            latest: due + (missed - 1) * self.0,
            next: missed.checked_mul(self.0).and_then(|d| d.checked_add(due)),
        }
    }
}

impl Grid for Calendar {
    type Instant = Timestamp;

    fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        Calendar::next_after(self, t)
    }

    fn behind(&self, due: Timestamp, now: Timestamp) -> Behind<Timestamp> {
        let mut behind = Behind {
            missed: 1,
            latest: due,
            next: Calendar::next_after(self, due),
        };
        while let Some(p) = behind.next.filter(|&p| p <= now) {
            behind.missed += 1;
            behind.latest = p;
            behind.next = Calendar::next_after(self, p);
        }
        behind
    }
}
