//! The one error type of the crate.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Why an operation on a scheduler or a task failed.
///
/// The type is opaque on purpose: ask it what happened with the `is_*`
/// predicates. New causes can be added without breaking callers.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, Scheduler, SchedulerExt};
///
/// let timer = HeapTimer::new()?;
/// let err = timer.schedule_at_fixed_rate(Duration::ZERO, Duration::ZERO, || {}).unwrap_err();
/// assert!(err.is_zero_period());
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Clone)]
pub struct Error {
    kind: Kind,
    /// The name of the task it is about, if it has one ([`Task::named`](crate::Task::named)).
    task: Option<Arc<str>>,
}

#[derive(Clone)]
pub(crate) enum Kind {
    /// A builder or constructor was given a setting it cannot honour.
    InvalidSetting(Setting, Arc<str>),
    /// The operating system refused to start a thread.
    ThreadSpawn(Arc<str>),
    ZeroPeriod,
    DelayOverflow,
    Shutdown,
    PendingLimit(usize),
    Cancelled,
    Panicked(Arc<str>),
    Timeout,
    Abandoned,
    /// A missed-run or panic policy on a task that does not repeat.
    NotPeriodic(&'static str),
    /// A calendar that cannot be used as asked (see the source).
    Calendar(crate::calendar::CalendarError),
}

/// The settings a builder refuses rather than adjusts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    Tick,
    WheelSize,
    PoolSize,
    PendingLimit,
    ThreadName,
    SpinBudget,
    TimerSlack,
    PeriodicSlack,
}

impl Error {
    pub(crate) fn new(kind: Kind) -> Error {
        Error { kind, task: None }
    }

    /// The same error, about the task named `name` (if any).
    pub(crate) fn for_task(mut self, name: Option<&Arc<str>>) -> Error {
        if let Some(name) = name {
            self.task = Some(name.clone());
        }
        self
    }

    /// The name of the task the error is about, if the task has one
    /// ([`Task::named`](crate::Task::named)): set on a named task's panic
    /// and on its rejection. `Display` shows it too.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedulers::{HeapTimer, Scheduler, Task};
    ///
    /// let timer = HeapTimer::new()?;
    /// timer.shutdown();
    /// let task = Task::once(|| ()).named("flush-cache");
    /// let rejected = timer.submit(Duration::from_secs(1), task).unwrap_err();
    /// assert_eq!(rejected.error().task_name(), Some("flush-cache"));
    /// assert_eq!(
    ///     rejected.to_string(),
    ///     "task rejected: task \"flush-cache\": the scheduler has been shut down"
    /// );
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn task_name(&self) -> Option<&str> {
        self.task.as_deref()
    }

    /// A setting refused, with why (shown by `Display`).
    pub(crate) fn invalid(setting: Setting, why: impl Into<String>) -> Error {
        Error::new(Kind::InvalidSetting(setting, why.into().into()))
    }

    /// A thread the operating system would not start.
    pub(crate) fn spawn(what: &str, cause: &std::io::Error) -> Error {
        Error::new(Kind::ThreadSpawn(format!("{what}: {cause}").into()))
    }

    fn is_setting(&self, which: Setting) -> bool {
        matches!(self.kind, Kind::InvalidSetting(s, _) if s == which)
    }

    /// A builder (or [`Executor::pool`](crate::Executor::pool)) was given a
    /// setting it cannot honour; the `is_invalid_*` predicates say which.
    /// Settings are refused, never silently adjusted.
    pub fn is_invalid_setting(&self) -> bool {
        matches!(self.kind, Kind::InvalidSetting(..))
    }

    /// The tick is zero, below the scheduler's shortest, or so long that one
    /// turn of the wheel does not fit the time range.
    pub fn is_invalid_tick(&self) -> bool {
        self.is_setting(Setting::Tick)
    }

    /// The number of buckets per wheel is outside the range the
    /// wheel supports.
    pub fn is_invalid_wheel_size(&self) -> bool {
        self.is_setting(Setting::WheelSize)
    }

    /// A pool of zero threads.
    pub fn is_invalid_pool_size(&self) -> bool {
        self.is_setting(Setting::PoolSize)
    }

    /// A pending limit of zero: no task could ever be scheduled.
    pub fn is_invalid_pending_limit(&self) -> bool {
        self.is_setting(Setting::PendingLimit)
    }

    /// A thread name with a NUL byte, which the operating system refuses.
    pub fn is_invalid_thread_name(&self) -> bool {
        self.is_setting(Setting::ThreadName)
    }

    /// A spin budget of more than one second per second.
    pub fn is_invalid_spin_budget(&self) -> bool {
        self.is_setting(Setting::SpinBudget)
    }

    /// A timer slack of zero or of more than a second.
    pub fn is_invalid_timer_slack(&self) -> bool {
        self.is_setting(Setting::TimerSlack)
    }

    /// A periodic slack of more than a second.
    pub fn is_invalid_periodic_slack(&self) -> bool {
        self.is_setting(Setting::PeriodicSlack)
    }

    /// The operating system refused to start a thread the scheduler needs
    /// (the message says which, and why).
    pub fn is_thread_spawn(&self) -> bool {
        matches!(self.kind, Kind::ThreadSpawn(_))
    }

    pub(crate) fn from_panic(payload: &(dyn Any + Send)) -> Error {
        let message: Arc<str> = if let Some(s) = payload.downcast_ref::<&str>() {
            Arc::from(*s)
        } else if let Some(s) = payload.downcast_ref::<String>() {
            Arc::from(s.as_str())
        } else {
            Arc::from("non-string panic payload")
        };
        Error::new(Kind::Panicked(message))
    }

    /// A periodic task was given a period (or delay between runs) of zero.
    pub fn is_zero_period(&self) -> bool {
        matches!(self.kind, Kind::ZeroPeriod)
    }

    /// The delay does not fit the scheduler's time range (for example
    /// `Duration::MAX`): its deadline would overflow.
    pub fn is_delay_overflow(&self) -> bool {
        matches!(self.kind, Kind::DelayOverflow)
    }

    /// The scheduler was shut down before the call, so it takes no new work.
    pub fn is_shutdown(&self) -> bool {
        matches!(self.kind, Kind::Shutdown)
    }

    /// The scheduler already holds its configured maximum of pending tasks.
    pub fn is_pending_limit(&self) -> bool {
        matches!(self.kind, Kind::PendingLimit(_))
    }

    /// The task was cancelled, so it has no value to wait for.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.kind, Kind::Cancelled)
    }

    /// The task panicked; [`Error::panic_message`] says with what.
    pub fn is_panic(&self) -> bool {
        matches!(self.kind, Kind::Panicked(_))
    }

    /// A wait with a time limit ran out before the task finished.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, Kind::Timeout)
    }

    /// The task was returned by `shutdown_now` and will never run.
    pub fn is_abandoned(&self) -> bool {
        matches!(self.kind, Kind::Abandoned)
    }

    /// A missed-run or panic policy was set on a one-shot task, which has no
    /// future runs to apply it to.
    pub fn is_not_periodic(&self) -> bool {
        matches!(self.kind, Kind::NotPeriodic(_))
    }

    /// A calendar task cannot be scheduled or set up as asked: its
    /// calendar has no fire time left after the start, or it was given a
    /// missed-run policy only fixed-rate tasks have
    /// ([`MissedRuns::Delay`](crate::calendar::MissedRuns::Delay)).
    /// [`Error::calendar_error`] says which.
    pub fn is_calendar(&self) -> bool {
        matches!(self.kind, Kind::Calendar(_))
    }

    /// The calendar's own error, for [`Error::is_calendar`].
    pub fn calendar_error(&self) -> Option<&crate::calendar::CalendarError> {
        match &self.kind {
            Kind::Calendar(e) => Some(e),
            _ => None,
        }
    }

    /// The panic message of a task that panicked, if it was a string.
    pub fn panic_message(&self) -> Option<&str> {
        match &self.kind {
            Kind::Panicked(message) => Some(message),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.task {
            write!(f, "task {name:?}: ")?;
        }
        match &self.kind {
            Kind::InvalidSetting(setting, why) => {
                let name = match setting {
                    Setting::Tick => "tick",
                    Setting::WheelSize => "wheel size",
                    Setting::PoolSize => "pool size",
                    Setting::PendingLimit => "pending limit",
                    Setting::ThreadName => "thread name",
                    Setting::SpinBudget => "spin budget",
                    Setting::TimerSlack => "timer slack",
                    Setting::PeriodicSlack => "periodic slack",
                };
                write!(f, "invalid {name}: {why}")
            }
            Kind::ThreadSpawn(what) => write!(f, "could not start a thread: {what}"),
            Kind::ZeroPeriod => {
                f.write_str("the period of a periodic task must be greater than zero")
            }
            Kind::DelayOverflow => {
                f.write_str("the delay is too large: the deadline would overflow")
            }
            Kind::Shutdown => f.write_str("the scheduler has been shut down"),
            Kind::PendingLimit(limit) => {
                write!(
                    f,
                    "the scheduler already holds its limit of {limit} pending tasks"
                )
            }
            Kind::Cancelled => f.write_str("the task was cancelled"),
            Kind::Panicked(message) => write!(f, "the task panicked: {message}"),
            Kind::Timeout => f.write_str("timed out waiting for the task"),
            Kind::Abandoned => {
                f.write_str("the task was removed by shutdown_now and will never run")
            }
            Kind::NotPeriodic(what) => {
                write!(
                    f,
                    "a one-shot task has no {what}: only periodic and calendar tasks do"
                )
            }
            Kind::Calendar(e) => write!(f, "calendar: {e}"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({self})")
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Calendar(e) => Some(e),
            _ => None,
        }
    }
}

/// A task the scheduler did not take, handed back with the reason, so the
/// caller can run it elsewhere (the JDK's `RejectedExecutionHandler` use
/// case, crossbeam's `SendError<T>` habit).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, Scheduler, Task};
///
/// let timer = HeapTimer::new()?;
/// timer.shutdown();
/// let rejected = timer.submit(Duration::from_secs(1), Task::once(|| "late")).unwrap_err();
/// assert!(rejected.is_shutdown());
/// // Run it on the caller's thread instead.
/// rejected.into_task().unwrap().run();
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct Rejected {
    error: Error,
    /// Behind a mutex only so that `Rejected` is `Sync`, as errors carried
    /// across threads (`anyhow`, `Box<dyn Error + Send + Sync>`) must be.
    task: std::sync::Mutex<Option<crate::Task>>,
}

impl Rejected {
    pub(crate) fn new(error: Error, task: Option<crate::Task>) -> Rejected {
        let name = task.as_ref().and_then(|task| task.body.name());
        Rejected {
            error: error.for_task(name),
            task: std::sync::Mutex::new(task),
        }
    }

    /// Why the task was refused.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The task that was refused: `None` only when it could not be made at
    /// all (a zero period).
    pub fn into_task(self) -> Option<crate::Task> {
        self.task
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The reason, dropping the task.
    pub fn into_error(self) -> Error {
        self.error
    }

    /// As [`Error::is_shutdown`].
    pub fn is_shutdown(&self) -> bool {
        self.error.is_shutdown()
    }

    /// As [`Error::is_pending_limit`].
    pub fn is_pending_limit(&self) -> bool {
        self.error.is_pending_limit()
    }

    /// As [`Error::is_delay_overflow`].
    pub fn is_delay_overflow(&self) -> bool {
        self.error.is_delay_overflow()
    }

    /// As [`Error::is_zero_period`].
    pub fn is_zero_period(&self) -> bool {
        self.error.is_zero_period()
    }
}

impl From<Error> for Rejected {
    fn from(error: Error) -> Rejected {
        Rejected::new(error, None)
    }
}

impl From<Rejected> for Error {
    fn from(rejected: Rejected) -> Error {
        rejected.error
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task rejected: {}", self.error)
    }
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl std::error::Error for Rejected {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
