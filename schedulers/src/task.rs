//! What a timer runs: [`Task`], the closure the scheduler stores in its
//! slot, and how a run ends.
//!
//! A task's closure is kept in a [`Body`]: in place when it captures at
//! most [`INLINE_BYTES`](crate::INLINE_BYTES) bytes (an id and an `Arc`, say),
//! boxed beyond, so the common task allocates nothing. A one-shot closure is
//! consumed by its run, and the value a
//! [`ScheduledFuture`](crate::ScheduledFuture) waits for takes its place; a
//! periodic one stays for the next run.

use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crate::body::Body;
pub(crate) use crate::body::Ran;
use crate::calendar::{Calendar, MissedRuns, OnPanic};
use crate::clock::{nanos, InsideTask};
use crate::error::{Error, Kind};

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
/// task says otherwise ([`Task::missed_run_tolerance`]): more than a
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

/// Runs a claimed body on this thread once, catching a panic (see
/// [`Body::run`]).
pub(crate) fn run(body: &mut Body) -> Ran {
    let _inside = InsideTask::enter();
    body.run(&TaskContext::default())
}

/// Empties a body in place, containing a panicking destructor (see
/// `Body`'s `Drop`).
pub(crate) fn clear_contained(body: &mut Body) {
    let _ = catch_unwind(AssertUnwindSafe(|| body.clear()));
}

/// A task ready to be handed to any [`Scheduler`](crate::Scheduler): the
/// closure and how it repeats. Most code uses
/// [`SchedulerExt`](crate::SchedulerExt) instead, which builds the `Task`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, Scheduler, Task};
///
/// let timer: Box<dyn Scheduler> = Box::new(HeapTimer::new()?);
/// let task = Task::fixed_rate(Duration::from_millis(10), || {}).unwrap();
/// let handle = timer.submit(Duration::from_millis(5), task).unwrap();
/// assert!(handle.cancel());
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct Task {
    pub(crate) body: Body,
}

impl Task {
    fn new(body: Body) -> Task {
        Task { body }
    }

    /// A one-shot task; its value, if any, is dropped. Use
    /// [`SchedulerExt::schedule`](crate::SchedulerExt::schedule) to get the
    /// value back through a [`ScheduledFuture`](crate::ScheduledFuture).
    pub fn once<F, T>(f: F) -> Task
    where
        F: FnOnce() -> T + Send + 'static,
        T: 'static,
    {
        Task::new(Body::once(f))
    }

    /// Runs the task once on the calling thread, now: what a caller does
    /// with a task a scheduler refused (the JDK's `CallerRunsPolicy`). A
    /// periodic task runs once.
    ///
    /// # Panics
    ///
    /// If the task panics, with its message.
    pub fn run(mut self) {
        if let Ran::Panicked(error) = run(&mut self.body) {
            panic!("{}", error.panic_message().unwrap_or("the task panicked"));
        }
    }

    /// A one-shot task whose value stays in its slot for its
    /// [`ScheduledFuture`](crate::ScheduledFuture).
    pub(crate) fn with_output<F, T>(f: F) -> Task
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Task::new(Body::with_output(f))
    }

    /// A task that starts every `period`, counted from its first scheduled
    /// start: runs missed because of a slow run happen back to back.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `period` is zero.
    pub fn fixed_rate<F>(period: Duration, f: F) -> Result<Task, Error>
    where
        F: FnMut() + Send + 'static,
    {
        let rule = Rule::new(Repeat::FixedRate(positive(period)?), None);
        let mut f = f;
        Ok(Task::new(Body::periodic(rule, move |_: &TaskContext| f())))
    }

    /// A task that starts `delay` after its previous run ended.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `delay` is zero.
    pub fn fixed_delay<F>(delay: Duration, f: F) -> Result<Task, Error>
    where
        F: FnMut() + Send + 'static,
    {
        let rule = Rule::new(Repeat::FixedDelay(positive(delay)?), None);
        let mut f = f;
        Ok(Task::new(Body::periodic(rule, move |_: &TaskContext| f())))
    }

    /// As [`Task::fixed_rate`], with a closure that receives a
    /// [`TaskContext`] and can stop its own future runs.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `period` is zero.
    pub fn fixed_rate_with<F>(period: Duration, f: F) -> Result<Task, Error>
    where
        F: FnMut(&TaskContext) + Send + 'static,
    {
        let rule = Rule::new(Repeat::FixedRate(positive(period)?), None);
        Ok(Task::new(Body::periodic(rule, f)))
    }

    /// As [`Task::fixed_delay`], with a closure that receives a
    /// [`TaskContext`] and can stop its own future runs.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `delay` is zero.
    pub fn fixed_delay_with<F>(delay: Duration, f: F) -> Result<Task, Error>
    where
        F: FnMut(&TaskContext) + Send + 'static,
    {
        let rule = Rule::new(Repeat::FixedDelay(positive(delay)?), None);
        Ok(Task::new(Body::periodic(rule, f)))
    }

    /// A task that runs at the fire times of `calendar` (a cron expression
    /// in a time zone, see [`crate::calendar`]), by the wall clock: also
    /// after the clock steps or the machine resumes from a suspend. Its
    /// first run is the first fire time after the delay it is submitted
    /// with; runs never overlap, and one that ends after the next fire time
    /// is followed by the missed runs as its
    /// [`missed_runs`](Task::missed_runs) policy says (back to back, by
    /// default).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use schedulers::calendar::Calendar;
    /// use schedulers::{HeapTimer, ManualClock, Scheduler, Task};
    ///
    /// // 2024-03-01 08:59:00 UTC
    /// let clock = ManualClock::with_wall(SystemTime::UNIX_EPOCH + Duration::from_secs(1_709_283_540));
    /// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
    /// let nine = Calendar::parse_in("0 9 * * *", "UTC").unwrap();
    /// let report = timer.submit(Duration::ZERO, Task::calendar(nine, || println!("report"))).unwrap();
    /// assert_eq!(report.remaining(), Duration::from_secs(60));
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn calendar<F>(calendar: Calendar, f: F) -> Task
    where
        F: FnMut() + Send + 'static,
    {
        let mut f = f;
        Task::calendar_with(calendar, move |_: &TaskContext| f())
    }

    /// As [`Task::calendar`], with a closure that receives a
    /// [`TaskContext`] and can stop its own future runs.
    pub fn calendar_with<F>(calendar: Calendar, f: F) -> Task
    where
        F: FnMut(&TaskContext) + Send + 'static,
    {
        Task::new(Body::periodic(
            Rule::new(Repeat::Calendar, Some(calendar)),
            f,
        ))
    }

    /// What the task does when one of its deadlines comes due late (see
    /// [`MissedRuns`]; the default is [`MissedRuns::CatchUp`], the Java
    /// executors' rule for fixed-rate tasks). A deadline is late when it
    /// comes due more than the task's
    /// [tolerance](Task::missed_run_tolerance) after its time. Fixed-delay
    /// tasks are never late: their next run is counted from the end of the
    /// last.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_periodic`] for a one-shot task;
    /// [`Error::is_calendar`] for [`MissedRuns::Delay`] on a calendar task
    /// (its grid is the wall clock's and cannot move).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedulers::calendar::MissedRuns;
    /// use schedulers::Task;
    ///
    /// // A gauge read every second: after a stall, one reading is enough.
    /// let task = Task::fixed_rate(Duration::from_secs(1), || {})?
    ///     .missed_runs(MissedRuns::OnceNow)?;
    /// # drop(task);
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn missed_runs(mut self, policy: MissedRuns) -> Result<Task, Error> {
        let rule = self.rule_mut("missed-run policy")?;
        if rule.repeat == Repeat::Calendar {
            policy
                .check_calendar()
                .map_err(|e| Error::new(Kind::Calendar(e)))?;
        }
        rule.missed = policy;
        Ok(self)
    }

    /// How late a deadline may come due before it counts as missed (default
    /// [`DEFAULT_MISSED_RUN_TOLERANCE`], 5 ms): more than the scheduler's
    /// usual lateness, or every run would count as missed.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_periodic`] for a one-shot task.
    pub fn missed_run_tolerance(mut self, tolerance: Duration) -> Result<Task, Error> {
        self.rule_mut("missed-run tolerance")?.tolerance = nanos(tolerance);
        Ok(self)
    }

    /// What the task does when a run panics: [`OnPanic::Stop`] (the
    /// default, the executors' rule: it stops repeating and its handle
    /// reports the panic) or [`OnPanic::Continue`] (the panic is counted in
    /// [`Metrics::panicked`](crate::Metrics) and the schedule goes on).
    ///
    /// # Errors
    ///
    /// [`Error::is_not_periodic`] for a one-shot task.
    pub fn on_panic(mut self, policy: OnPanic) -> Result<Task, Error> {
        self.rule_mut("panic policy")?.on_panic = policy;
        Ok(self)
    }

    /// Names the task (replacing a name it had). The name goes with every
    /// run into the scheduler's figures ([`Metrics::by_name`](crate::Metrics)),
    /// its `tracing` spans and its `metrics` series (the `task` label), and
    /// into the errors about it ([`Error::task_name`]): a panic, a
    /// rejection. An unnamed task costs nothing for it; a named one costs
    /// an allocation. Use a small set of names (one per kind of job, as
    /// for a metric label, not one per task): a scheduler keeps separate
    /// figures for its first [`MAX_NAMES`](crate::MAX_NAMES) names.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedulers::{HeapTimer, ManualClock, Scheduler, Task};
    ///
    /// let clock = ManualClock::new();
    /// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
    /// let sweep = Task::fixed_rate(Duration::from_secs(60), || ()).unwrap().named("sweep");
    /// assert_eq!(sweep.name(), Some("sweep"));
    /// timer.submit(Duration::ZERO, sweep).unwrap();
    /// clock.advance(Duration::from_secs(120));
    /// let sweeps = &timer.metrics().by_name[0];
    /// assert_eq!((sweeps.name.as_deref(), sweeps.fired), (Some("sweep"), 3));
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Task {
        let body = std::mem::take(&mut self.body);
        self.body = Body::named(name.into(), body);
        self
    }

    /// The task's name, if [`Task::named`] gave it one.
    pub fn name(&self) -> Option<&str> {
        self.body.name().map(|name| &**name)
    }

    fn rule_mut(&mut self, what: &'static str) -> Result<&mut Rule, Error> {
        self.body
            .rule_mut()
            .ok_or_else(|| Error::new(Kind::NotPeriodic(what)))
    }
}

fn positive(d: Duration) -> Result<u64, Error> {
    match nanos(d) {
        0 => Err(Error::new(Kind::ZeroPeriod)),
        n => Ok(n),
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("name", &self.name())
            .field("repeat", &self.body.repeat())
            .finish_non_exhaustive()
    }
}
