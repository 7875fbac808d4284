//! Handles to scheduled tasks: [`TaskHandle`] and the typed
//! [`ScheduledFuture`].

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Timebase;
use crate::error::Error;
use crate::scheduler::Core;
use crate::task::{CancelOutcome, TaskRef};

/// A handle to one scheduled task: cancel it, move it, ask about it, wait
/// for it. Cloning gives another handle to the same task; dropping every
/// handle does not cancel the task.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, ManualClock, SchedulerExt};
///
/// let clock = ManualClock::new();
/// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
/// let handle = timer.schedule(Duration::from_secs(30), || {}).unwrap();
/// assert_eq!(handle.remaining(), Duration::from_secs(30));
///
/// // A heartbeat arrived: push the idle timeout out again.
/// clock.advance(Duration::from_secs(20));
/// assert!(handle.reset(Duration::from_secs(30)).unwrap());
/// assert_eq!(handle.remaining(), Duration::from_secs(30));
///
/// assert!(handle.cancel());
/// assert!(handle.is_cancelled() && handle.is_done());
/// assert!(!handle.cancel()); // only the first cancel stops anything
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Clone)]
pub struct TaskHandle {
    cell: TaskRef,
    core: Arc<dyn Core>,
}

impl TaskHandle {
    pub(crate) fn new(cell: TaskRef, core: Arc<dyn Core>) -> TaskHandle {
        TaskHandle { cell, core }
    }

    /// Stops every future run of the task. Returns true iff this call
    /// stopped a run that would otherwise have started: the task was pending,
    /// or it is periodic and running now (its next run will not happen).
    /// A one-shot task that already started cannot be cancelled.
    ///
    /// A successful cancel lets go of the task's closure (and whatever it
    /// captured) at once, or when the run under way ends, even while
    /// handles to the task live on.
    pub fn cancel(&self) -> bool {
        let outcome = self.cell.cancel();
        if outcome.stopped() {
            self.core.base().count_cancel(outcome);
            self.core.cancelled(&self.cell, outcome);
            if outcome == CancelOutcome::WasPending {
                self.cell.release();
            }
        }
        outcome.stopped()
    }

    /// Lets go of the closure of a task that will never run (one returned by
    /// `shutdown_now`); outside the scheduler's locks.
    pub(crate) fn bury(&self) {
        self.cell.bury();
    }

    /// True if a cancel stopped the task.
    pub fn is_cancelled(&self) -> bool {
        self.cell.is_cancelled()
    }

    /// True once the task will never run again: it completed, panicked or
    /// was cancelled.
    pub fn is_done(&self) -> bool {
        self.cell.is_done()
    }

    /// True while the task waits for its next run.
    pub fn is_pending(&self) -> bool {
        self.cell.is_pending()
    }

    /// Time left until the next run: zero once it is due, running or over.
    pub fn remaining(&self) -> Duration {
        if !self.cell.is_pending() {
            return Duration::ZERO;
        }
        let now = self.core.base().now();
        Duration::from_nanos(self.cell.deadline().saturating_sub(now))
    }

    /// Moves the next run to `delay` from now, earlier or later (go-zero's
    /// `MoveTimer`, tokio's `reset`). A periodic task continues on the grid
    /// of its new start. Returns `Ok(false)` and changes nothing if the task
    /// is not pending (it is running, over, or cancelled).
    ///
    /// # Errors
    ///
    /// [`Error::is_delay_overflow`] if the new deadline does not fit the
    /// time range.
    pub fn reset(&self, delay: Duration) -> Result<bool, Error> {
        let base = self.core.base();
        let deadline = Timebase::deadline(base.now(), delay)?;
        let seq = base.next_seq();
        if !self.cell.reseq(seq, deadline) {
            return Ok(false);
        }
        self.core.requeue(&self.cell, deadline, seq);
        Ok(true)
    }

    /// Blocks until the task will never run again.
    ///
    /// # Errors
    ///
    /// [`Error::is_cancelled`], [`Error::is_panic`] (with the message) or
    /// [`Error::is_abandoned`] if it did not complete normally. A periodic
    /// task only ever ends with an error: cancelled or panicked.
    pub fn wait(&self) -> Result<(), Error> {
        self.cell.wait(None)
    }

    /// As [`TaskHandle::wait`], giving up after `timeout` of real time.
    ///
    /// # Errors
    ///
    /// As [`TaskHandle::wait`], or [`Error::is_timeout`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<(), Error> {
        self.cell.wait(Some(timeout))
    }
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TaskHandle").field(&self.cell).finish()
    }
}

/// A handle to a one-shot task whose value can be waited for, like Java's
/// `ScheduledFuture`. Derefs to [`TaskHandle`] for cancel, reset and the rest.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, SchedulerExt};
///
/// let timer = HeapTimer::new()?;
/// let sum = timer.schedule(Duration::from_millis(1), || 2 + 2).unwrap();
/// assert_eq!(sum.get().unwrap(), 4);
///
/// let boom = timer.schedule(Duration::ZERO, || -> u32 { panic!("no luck") }).unwrap();
/// let err = boom.get().unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.panic_message(), Some("no luck"));
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct ScheduledFuture<T> {
    handle: TaskHandle,
    _value: PhantomData<fn() -> T>,
}

impl<T: Send + 'static> ScheduledFuture<T> {
    pub(crate) fn new(handle: TaskHandle) -> ScheduledFuture<T> {
        ScheduledFuture {
            handle,
            _value: PhantomData,
        }
    }

    /// Blocks until the task finished and returns its value.
    ///
    /// # Errors
    ///
    /// As [`TaskHandle::wait`]: cancelled, panicked (the panic comes back
    /// as an error, not a crash) or abandoned.
    pub fn get(self) -> Result<T, Error> {
        self.handle.wait()?;
        self.take()
    }

    /// As [`ScheduledFuture::get`], giving up after `timeout` of real time.
    ///
    /// # Errors
    ///
    /// As [`ScheduledFuture::get`], or [`Error::is_timeout`]; on timeout the
    /// future is lost, but a clone of its [`TaskHandle`] still works.
    pub fn get_timeout(self, timeout: Duration) -> Result<T, Error> {
        self.handle.wait_timeout(timeout)?;
        self.take()
    }

    fn take(self) -> Result<T, Error> {
        match self.handle.cell.take_output().map(|v| v.downcast::<T>()) {
            Some(Ok(v)) => Ok(*v),
            // `ScheduledFuture<T>` is only made for cells built with a `T`
            // job, and `get` consumes the only typed handle.
            _ => unreachable!("a completed task's value is taken once, with its own type"),
        }
    }

    /// The untyped handle, for code that does not need the value.
    pub fn into_handle(self) -> TaskHandle {
        self.handle
    }
}

impl<T> Deref for ScheduledFuture<T> {
    type Target = TaskHandle;
    fn deref(&self) -> &TaskHandle {
        &self.handle
    }
}

impl<T> fmt::Debug for ScheduledFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScheduledFuture")
            .field(&self.handle.cell)
            .finish()
    }
}
