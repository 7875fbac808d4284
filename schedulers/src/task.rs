//! What a timer runs: [`Task`], the type-erased closure the scheduler
//! stores in its slot, and how a run ends.
//!
//! A closure is boxed once, when the task is made; a closure that captures
//! nothing is a zero-sized box and allocates nothing. A one-shot closure is
//! consumed by its run; a periodic one comes back for the next. A task that
//! returns a value gets an output cell only when a
//! [`ScheduledFuture`](crate::ScheduledFuture) asks for one.

use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{lock, nanos, InsideTask};
use crate::error::{Error, Kind};

/// How a task repeats: nanoseconds for the periodic kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    Once,
    FixedRate(u64),
    FixedDelay(u64),
}

/// A closure as the scheduler stores it.
pub(crate) trait Body: Send {
    /// Runs once: a periodic body hands itself back for its next run.
    fn run(self: Box<Self>) -> Option<Box<dyn Body>>;

    fn repeat(&self) -> Repeat;

    /// Why the task failed, for a slot that holds a failure instead of a
    /// closure.
    fn failure(&self) -> Option<&Error> {
        None
    }
}

struct Once<F>(F);

impl<F: FnOnce() + Send> Body for Once<F> {
    fn run(self: Box<Self>) -> Option<Box<dyn Body>> {
        (self.0)();
        None
    }
    fn repeat(&self) -> Repeat {
        Repeat::Once
    }
}

struct Periodic<F> {
    repeat: Repeat,
    f: F,
}

impl<F: FnMut() + Send + 'static> Body for Periodic<F> {
    fn run(mut self: Box<Self>) -> Option<Box<dyn Body>> {
        (self.f)();
        Some(self)
    }
    fn repeat(&self) -> Repeat {
        self.repeat
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

struct PeriodicWith<F> {
    repeat: Repeat,
    f: F,
}

impl<F: FnMut(&TaskContext) + Send + 'static> Body for PeriodicWith<F> {
    fn run(mut self: Box<Self>) -> Option<Box<dyn Body>> {
        let context = TaskContext::default();
        (self.f)(&context);
        if context.is_stopped() {
            None
        } else {
            Some(self)
        }
    }
    fn repeat(&self) -> Repeat {
        self.repeat
    }
}

/// Kept in the slot of a task that panicked, so its handles can report it.
pub(crate) struct Failure(pub(crate) Error);

impl Body for Failure {
    fn run(self: Box<Self>) -> Option<Box<dyn Body>> {
        None
    }
    fn repeat(&self) -> Repeat {
        Repeat::Once
    }
    fn failure(&self) -> Option<&Error> {
        Some(&self.0)
    }
}

/// How a run ended.
pub(crate) enum Ran {
    /// A one-shot task finished.
    Done,
    /// A periodic task finished this run; here it is for the next.
    Again(Box<dyn Body>),
    /// The task panicked.
    Panicked(Error),
}

/// Runs a claimed body on this thread, catching a panic (from the closure,
/// or from dropping what it returned).
pub(crate) fn run(body: Box<dyn Body>) -> Ran {
    let _inside = InsideTask::enter();
    match catch_unwind(AssertUnwindSafe(|| body.run())) {
        Ok(Some(body)) => Ran::Again(body),
        Ok(None) => Ran::Done,
        Err(payload) => Ran::Panicked(Error::from_panic(payload.as_ref())),
    }
}

/// Drops something that may hold user code (a closure and what it
/// captured) without letting a panicking destructor unwind into the
/// scheduler. Returns the panic, if there was one.
pub(crate) fn drop_contained<T>(value: T) -> Option<Error> {
    catch_unwind(AssertUnwindSafe(move || drop(value)))
        .err()
        .map(|payload| Error::from_panic(payload.as_ref()))
}

/// The value of a one-shot task, for its [`ScheduledFuture`](crate::ScheduledFuture).
pub(crate) struct Output<T> {
    value: Mutex<Option<T>>,
}

impl<T> Output<T> {
    pub(crate) fn take(&self) -> Option<T> {
        lock(&self.value).take()
    }
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
    pub(crate) body: Box<dyn Body>,
    /// The closure has drop glue, so a cancel drops it at once.
    pub(crate) needs_drop: bool,
}

impl Task {
    fn new<B: Body + 'static>(body: B) -> Task {
        Task {
            needs_drop: std::mem::needs_drop::<B>(),
            body: Box::new(body),
        }
    }

    /// A one-shot task; its value, if any, is dropped. Use
    /// [`SchedulerExt::schedule`](crate::SchedulerExt::schedule) to get the
    /// value back through a [`ScheduledFuture`](crate::ScheduledFuture).
    pub fn once<F, T>(f: F) -> Task
    where
        F: FnOnce() -> T + Send + 'static,
        T: 'static,
    {
        Task::new(Once(move || {
            f();
        }))
    }

    /// Runs the task once on the calling thread, now: what a caller does
    /// with a task a scheduler refused (the JDK's `CallerRunsPolicy`). A
    /// periodic task runs once. A panic propagates to the caller.
    pub fn run(self) {
        let _ = self.body.run();
    }

    /// A one-shot task whose value lands in an output cell.
    pub(crate) fn with_output<F, T>(f: F) -> (Task, Arc<Output<T>>)
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let output = Arc::new(Output {
            value: Mutex::new(None),
        });
        let cell = output.clone();
        let task = Task::new(Once(move || {
            let value = f();
            *lock(&cell.value) = Some(value);
        }));
        (task, output)
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
        Ok(Task::new(Periodic { repeat, f }))
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
        Ok(Task::new(Periodic { repeat, f }))
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
        Ok(Task::new(PeriodicWith { repeat, f }))
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
        Ok(Task::new(PeriodicWith { repeat, f }))
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
