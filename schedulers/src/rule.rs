//! How a task repeats, what it does about missed runs and panics
//! ([`Rule`], kept with the closure in its body), and what its closure may
//! do about its own future runs ([`TaskContext`]).

use std::cell::Cell;
use std::time::Duration;

use crate::calendar::{Calendar, MissedRuns, OnPanic};
use crate::clock::nanos;

/// How a task repeats: nanoseconds for the fixed kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    Once,
    FixedRate(u64),
    FixedDelay(u64),
    /// At the fire times of the rule's calendar.
    Calendar,
}

/// How late a deadline may come due before it counts as missed, unless a
/// task says otherwise ([`Task::missed_run_tolerance`](crate::Task::missed_run_tolerance)): more than a
/// driver's usual lateness (tens of microseconds), less than a period worth
/// the name.
pub const DEFAULT_MISSED_RUN_TOLERANCE: Duration = Duration::from_millis(5);

/// How a periodic or calendar task repeats, and what it does about missed
/// runs and panics. It lives with the closure in the task's body, which
/// only the thread running (or submitting) the task reads.
#[derive(Clone, Debug)]
pub(crate) struct Rule {
    pub(crate) repeat: Repeat,
    pub(crate) missed: MissedRuns,
    /// Nanoseconds a deadline may come due late before it counts as missed.
    pub(crate) tolerance: u64,
    pub(crate) on_panic: OnPanic,
    pub(crate) calendar: Option<Box<Calendar>>,
}

impl Rule {
    pub(crate) fn new(repeat: Repeat, calendar: Option<Calendar>) -> Rule {
        Rule {
            repeat,
            missed: MissedRuns::default(),
            tolerance: nanos(DEFAULT_MISSED_RUN_TOLERANCE),
            on_panic: OnPanic::default(),
            calendar: calendar.map(Box::new),
        }
    }
}

/// What a periodic task's closure may do about its own future runs.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, ManualClock, Scheduler, Task};
///
/// let clock = ManualClock::new();
/// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
/// let mut left = 3;
/// let countdown = Task::fixed_rate_with(Duration::from_secs(1), move |run| {
///     left -= 1;
///     if left == 0 {
///         run.stop(); // Netty's `timeout.cancel()` from inside `run`
///     }
/// })
/// .unwrap();
/// let handle = timer.submit(Duration::ZERO, countdown).unwrap();
/// clock.advance(Duration::from_secs(10));
/// assert!(handle.is_done() && !handle.is_cancelled());
/// assert!(handle.wait().is_ok()); // it ended by itself
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct TaskContext {
    stop: Cell<bool>,
}

impl TaskContext {
    /// No run after this one: the task ends, completed, when this run does.
    pub fn stop(&self) {
        self.stop.set(true);
    }

    /// True once [`TaskContext::stop`] was called in this run.
    pub fn is_stopped(&self) -> bool {
        self.stop.get()
    }
}
