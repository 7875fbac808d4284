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
use std::time::Duration;

use crate::body::Body;
pub(crate) use crate::body::Ran;
use crate::clock::{nanos, InsideTask};
use crate::error::{Error, Kind};

/// How a task repeats: nanoseconds for the periodic kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    Once,
    FixedRate(u64),
    FixedDelay(u64),
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

    /// True for the periodic kinds.
    pub(crate) fn is_periodic(&self) -> bool {
        self.body.repeat() != Repeat::Once
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
        let repeat = Repeat::FixedRate(positive(period)?);
        let mut f = f;
        Ok(Task::new(Body::periodic(repeat, move |_: &TaskContext| {
            f()
        })))
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
        let repeat = Repeat::FixedDelay(positive(delay)?);
        let mut f = f;
        Ok(Task::new(Body::periodic(repeat, move |_: &TaskContext| {
            f()
        })))
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
        let repeat = Repeat::FixedRate(positive(period)?);
        Ok(Task::new(Body::periodic(repeat, f)))
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
        let repeat = Repeat::FixedDelay(positive(delay)?);
        Ok(Task::new(Body::periodic(repeat, f)))
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
            .field("repeat", &self.body.repeat())
            .finish_non_exhaustive()
    }
}
