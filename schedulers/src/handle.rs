//! Handles to scheduled tasks: [`TaskHandle`] and the typed
//! [`ScheduledFuture`].

use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::core::Key;
use crate::error::{Error, Kind};
use crate::lanes::{Spot, LANES};
use crate::shared::{Shared, When};
use crate::state;

/// A handle to one scheduled task: cancel it, move it, ask about it, wait
/// for it. Cloning gives another handle to the same task; dropping every
/// handle does not cancel the task.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, ManualClock, Scheduler, Task};
///
/// let clock = ManualClock::new();
/// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
/// let handle = timer.submit(Duration::from_secs(30), Task::once(|| {})).unwrap();
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
pub struct TaskHandle {
    anchor: Arc<Anchor>,
    key: Key,
    /// Where the task's submission may still wait for the driver.
    spot: Spot,
}

/// What handles hold to reach their scheduler: one per lane, so that
/// threads making and dropping handles at once do not share the reference
/// count of one `Arc` (a cache line every handle would bounce between
/// cores).
#[repr(align(128))]
pub(crate) struct Anchor {
    shared: Arc<Shared>,
}

/// A scheduler's anchors, one per lane. Held by the scheduler, not by its
/// `Shared` (which they keep alive).
pub(crate) struct Anchors {
    all: Box<[Arc<Anchor>]>,
}

impl Anchors {
    pub(crate) fn new(shared: &Arc<Shared>) -> Anchors {
        Anchors {
            all: (0..LANES)
                .map(|_| {
                    Arc::new(Anchor {
                        shared: shared.clone(),
                    })
                })
                .collect(),
        }
    }

    /// A handle to the task under `key` (holding one of its references),
    /// its entry waiting at `spot`, made on the calling thread.
    pub(crate) fn handle(&self, key: Key, spot: Spot) -> TaskHandle {
        let anchor = self.all[crate::lanes::mine()].clone();
        TaskHandle { anchor, key, spot }
    }
}

impl fmt::Debug for Anchors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Anchors").finish_non_exhaustive()
    }
}

impl TaskHandle {
    fn shared(&self) -> &Shared {
        &self.anchor.shared
    }

    /// Stops every future run of the task. Returns true iff this call
    /// stopped a run that would otherwise have started: the task was pending,
    /// or it is periodic and running now (its next run will not happen).
    /// A one-shot task that already started cannot be cancelled.
    ///
    /// A successful cancel drops the task's closure (and what it captured)
    /// at once, on this thread, unless the task is running (then when its
    /// run ends), or the scheduler holds 262,144 timers or more: then its
    /// driver drops it, within [`HOUSEKEEPING`](crate::HOUSEKEEPING) once a
    /// driver thread is free, so that this call waits for the timer's state
    /// word alone. One CAS and no lock of the scheduler's.
    pub fn cancel(&self) -> bool {
        self.shared().cancel(self.key, self.spot)
    }

    /// Cancels the task and gives up this handle: [`TaskHandle::cancel`]
    /// then a drop, for less. A timer set and cleared before the
    /// scheduler's driver took it in (a timeout cleared within about a
    /// millisecond), held by this handle alone, is cancelled and its slot
    /// freed under one lock of the caller's own, with one locked
    /// instruction instead of three; any other takes a cancel and a drop.
    /// Returns what `cancel` returns.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedulers::{HeapTimer, Scheduler, Task};
    ///
    /// let timer = HeapTimer::new()?;
    /// let timeout = timer.submit(Duration::from_secs(30), Task::once(|| ())).unwrap();
    /// // The response came: the timeout and its handle are done with.
    /// assert!(timeout.cancel_and_drop());
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn cancel_and_drop(mut self) -> bool {
        let key = std::mem::replace(&mut self.key, GIVEN_UP);
        self.shared().cancel_and_release(key, self.spot)
    }

    /// True if a cancel stopped the task.
    pub fn is_cancelled(&self) -> bool {
        matches!(
            self.shared().state(self.key),
            state::CANCELLED | state::RUNNING_CANCELLED
        )
    }

    /// True once the task will never run again: it completed, panicked or
    /// was cancelled.
    pub fn is_done(&self) -> bool {
        matches!(
            self.shared().state(self.key),
            state::DONE | state::PANICKED | state::CANCELLED
        )
    }

    /// True while the task waits for its next run.
    pub fn is_pending(&self) -> bool {
        self.shared().state(self.key) == state::SCHEDULED
    }

    /// Time left until the next run: zero once it is due, running or over.
    pub fn remaining(&self) -> Duration {
        self.shared().remaining(self.key)
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
        self.shared().reset(self.key, When::After(delay))
    }

    /// As [`TaskHandle::reset`], to `deadline`, an instant of the
    /// scheduler's clock (at once if it has passed).
    ///
    /// # Errors
    ///
    /// [`Error::is_delay_overflow`] if `deadline` is beyond the time range.
    pub fn reset_at(&self, deadline: Instant) -> Result<bool, Error> {
        self.shared().reset(self.key, When::At(deadline))
    }

    /// The deadline of the next run, while the task waits for it; `None`
    /// once it is due, running or over.
    pub fn deadline(&self) -> Option<Instant> {
        self.shared().deadline_instant(self.key)
    }

    /// A guard that cancels the task when dropped, as tokio-util's
    /// `AbortOnDropHandle`: for a timeout that must not outlive the request
    /// it guards.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedulers::{HeapTimer, Scheduler, Task};
    ///
    /// let timer = HeapTimer::new()?;
    /// let timeout = timer.submit(Duration::from_secs(30), Task::once(|| ())).unwrap();
    /// {
    ///     let _guard = timeout.clone().cancel_on_drop();
    ///     // ... the request completes in time ...
    /// }
    /// assert!(timeout.is_cancelled());
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn cancel_on_drop(self) -> CancelOnDrop {
        CancelOnDrop(Some(self))
    }

    /// Blocks until the task will never run again.
    ///
    /// # Errors
    ///
    /// [`Error::is_cancelled`], [`Error::is_panic`] (with the message) or
    /// [`Error::is_abandoned`] if it did not complete normally. A periodic
    /// task only ever ends with an error: cancelled or panicked.
    pub fn wait(&self) -> Result<(), Error> {
        self.shared().wait_for_end(self.key, None)
    }

    /// As [`TaskHandle::wait`], giving up after `timeout` of real time.
    ///
    /// # Errors
    ///
    /// As [`TaskHandle::wait`], or [`Error::is_timeout`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<(), Error> {
        self.shared().wait_for_end(self.key, Some(timeout))
    }
}

/// Two handles are equal when they name the same task.
impl PartialEq for TaskHandle {
    fn eq(&self, other: &TaskHandle) -> bool {
        std::ptr::eq(self.shared(), other.shared()) && self.key == other.key
    }
}

impl Eq for TaskHandle {}

impl Hash for TaskHandle {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.shared() as *const Shared as usize).hash(state);
        self.key.hash(state);
    }
}

impl Clone for TaskHandle {
    fn clone(&self) -> TaskHandle {
        self.shared().acquire(self.key);
        TaskHandle {
            anchor: self.anchor.clone(),
            key: self.key,
            spot: self.spot,
        }
    }
}

/// The key of a handle whose reference [`TaskHandle::cancel_and_drop`]
/// let go of already.
const GIVEN_UP: Key = Key::MAX;

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if self.key != GIVEN_UP {
            self.shared().release(self.key);
        }
    }
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("key", &self.key)
            .field("state", &state::name(self.shared().state(self.key)))
            .finish()
    }
}

/// Cancels its task when dropped; see [`TaskHandle::cancel_on_drop`].
#[derive(Debug)]
pub struct CancelOnDrop(Option<TaskHandle>);

impl CancelOnDrop {
    /// The guarded handle.
    pub fn handle(&self) -> &TaskHandle {
        self.0.as_ref().expect("present until dropped or detached")
    }

    /// Disarms the guard: the task is left to run, and its handle returned.
    pub fn detach(mut self) -> TaskHandle {
        self.0.take().expect("present until dropped or detached")
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.cancel_and_drop();
        }
    }
}

/// A handle to a one-shot task whose value can be waited for, like Java's
/// `ScheduledFuture`: block on it with [`ScheduledFuture::get`], or `.await`
/// it from any async runtime (it is a [`Future`]). Cancel, reset and the
/// rest go through [`ScheduledFuture::handle`].
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
///
/// let never = timer.schedule(Duration::from_secs(60), || ()).unwrap();
/// assert!(never.handle().cancel());
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct ScheduledFuture<T> {
    handle: TaskHandle,
    /// The value waits in the task's slot (see `crate::body`).
    value: PhantomData<fn() -> T>,
}

impl<T: Send + 'static> ScheduledFuture<T> {
    /// The future of a task made by `Task::with_output::<_, T>`.
    pub(crate) fn new(handle: TaskHandle) -> ScheduledFuture<T> {
        ScheduledFuture {
            handle,
            value: PhantomData,
        }
    }

    /// The task's handle: cancel, reset, ask about it.
    pub fn handle(&self) -> &TaskHandle {
        &self.handle
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

    fn take(&self) -> Result<T, Error> {
        // A task that completed stored its value before it was marked done.
        self.handle
            .shared()
            .take_output(self.handle.key)
            .ok_or_else(|| Error::new(Kind::Panicked("the value was already taken".into())))
    }

    /// The untyped handle, for code that does not need the value.
    pub fn into_handle(self) -> TaskHandle {
        self.handle
    }
}

/// Resolves when the task has ended: with its value, or with the error
/// [`ScheduledFuture::get`] would give. Runtime-agnostic: the scheduler's
/// thread wakes the future's waker.
impl<T: Send + 'static> Future for ScheduledFuture<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.handle.shared().poll_end(self.handle.key, cx.waker()) {
            None => Poll::Pending,
            Some(Ok(())) => Poll::Ready(self.take()),
            Some(Err(e)) => Poll::Ready(Err(e)),
        }
    }
}

impl<T> fmt::Debug for ScheduledFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScheduledFuture")
            .field(&self.handle)
            .finish()
    }
}
