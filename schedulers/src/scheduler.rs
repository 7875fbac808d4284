//! The contract every scheduler keeps: the object-safe [`Scheduler`] trait,
//! the generic [`SchedulerExt`] layer over it, and the one implementation
//! every scheduler of this crate shares, over its [`AsShared`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::calendar::Calendar;
use crate::core::Key;
use crate::error::Rejected;
use crate::handle::Anchors;
use crate::handle::{ScheduledFuture, TaskHandle};
use crate::lanes::Spot;
use crate::metrics::Metrics;
use crate::shared::{Shared, When};
use crate::task::Task;

/// A scheduled executor: runs tasks after a delay, once or periodically.
///
/// The trait is object-safe, so a program can hold any of this crate's
/// schedulers as `Box<dyn Scheduler>`; the convenient generic methods
/// (`schedule`, `schedule_at_fixed_rate`, `schedule_with_fixed_delay`) come
/// from [`SchedulerExt`], implemented for every `Scheduler`, boxed or not.
///
/// Every implementation keeps the same promises:
///
/// - a task never starts before its deadline; a one-shot task runs at most
///   once; a task whose `cancel` returned true never starts again; nothing
///   is dropped silently;
/// - runs of one periodic task never overlap; fixed-rate catches up on
///   missed runs back to back; fixed-delay counts from the end of a run;
/// - a task waiting for a busy worker is still pending: cancel, reset and
///   `shutdown_now` reach it until a thread starts it;
/// - a panicking task never kills the scheduler: a periodic task that
///   panics stops repeating and its handle reports the panic; a panicking
///   destructor (of a closure, or of a value nobody collects) is contained
///   the same way;
/// - a successful cancel lets go of the task's closure, though handles
///   live on;
/// - tasks due at the same deadline (or, on a wheel, in the same tick) start
///   in submission order;
/// - bad input is a typed [`Error`](crate::Error), never a panic.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, Scheduler, SchedulerExt};
///
/// let timer: Box<dyn Scheduler> = Box::new(HeapTimer::new()?);
/// let answer = timer.schedule(Duration::from_millis(1), || 6 * 7).unwrap();
/// assert_eq!(answer.get().unwrap(), 42);
/// timer.shutdown();
/// assert!(timer.await_termination(Duration::from_secs(10)));
/// # Ok::<(), schedulers::Error>(())
/// ```
pub trait Scheduler: Send + Sync + fmt::Debug {
    /// Schedules `task` to first run after `delay`: at the earliest at the
    /// clock's time of this call plus `delay`. (On the system clock, the
    /// time of the call is estimated from the CPU's counter, never earlier
    /// than a reading of the clock and later by tens of nanoseconds as a
    /// rule, under a microsecond at most; [`TaskHandle::remaining`] asked on
    /// the same thread is never more than `delay`.)
    ///
    /// # Errors
    ///
    /// Hands the task back ([`Rejected::into_task`]) with the reason:
    /// [`Error::is_shutdown`](crate::Error::is_shutdown) after [`Scheduler::shutdown`];
    /// [`Error::is_delay_overflow`](crate::Error::is_delay_overflow) if the deadline does not fit the time
    /// range; [`Error::is_pending_limit`](crate::Error::is_pending_limit) if the scheduler already holds its
    /// configured limit of pending tasks.
    fn submit(&self, delay: Duration, task: Task) -> Result<TaskHandle, Rejected>;

    /// Schedules `task` to first run at `deadline`, an instant of the
    /// scheduler's clock (at once if it has passed).
    ///
    /// # Errors
    ///
    /// As [`Scheduler::submit`].
    fn submit_at(&self, deadline: Instant, task: Task) -> Result<TaskHandle, Rejected>;

    /// Takes no new work. Pending one-shot tasks still run; periodic tasks
    /// stop (their handles report cancelled). Returns at once; see
    /// [`Scheduler::await_termination`].
    fn shutdown(&self);

    /// Takes no new work and drops every pending task, returning handles to
    /// them: one-shots that never ran, and periodic tasks waiting for their
    /// next run (as the JDK's `shutdownNow` returns them). They report
    /// [`Error::is_abandoned`](crate::Error::is_abandoned) when waited on. A
    /// task that is running finishes; periodic ones do not repeat.
    fn shutdown_now(&self) -> Vec<TaskHandle>;

    /// True once `shutdown` or `shutdown_now` was called.
    fn is_shutdown(&self) -> bool;

    /// True once shut down, every task the shutdown kept has run, and
    /// every thread of the scheduler has finished. (A pool whose first
    /// worker is still starting waits for it to run what was kept.)
    fn is_terminated(&self) -> bool;

    /// Blocks until terminated or until `timeout` of real time has passed;
    /// returns whether it terminated.
    fn await_termination(&self, timeout: Duration) -> bool;

    /// What the scheduler knows about itself: tasks pending (by kind),
    /// fired, cancelled, rejected, panicked, skipped; driver wake-ups; the
    /// lateness and run time of every run; the same by task name. Cheap
    /// enough to call every second (see [`Metrics`]).
    fn metrics(&self) -> Metrics;
}

/// The generic convenience layer over [`Scheduler`].
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// use schedulers::{HeapTimer, ManualClock, SchedulerExt};
///
/// let clock = ManualClock::new();
/// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
/// let ticks = Arc::new(AtomicUsize::new(0));
/// let t = ticks.clone();
/// let handle = timer
///     .schedule_at_fixed_rate(Duration::ZERO, Duration::from_secs(1), move || {
///         t.fetch_add(1, Ordering::SeqCst);
///     })
///     .unwrap();
/// clock.advance(Duration::from_millis(2500)); // runs at 0 s, 1 s, 2 s
/// assert_eq!(ticks.load(Ordering::SeqCst), 3);
/// assert!(handle.cancel());
/// # Ok::<(), schedulers::Error>(())
/// ```
pub trait SchedulerExt: Scheduler {
    /// Runs `f` once after `delay`; the returned future yields its value.
    ///
    /// # Errors
    ///
    /// As [`Scheduler::submit`].
    fn schedule<F, T>(&self, delay: Duration, f: F) -> Result<ScheduledFuture<T>, Rejected>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit(delay, Task::with_output(f))
            .map(ScheduledFuture::new)
    }

    /// Runs `f` once at `deadline`, an instant of the scheduler's clock;
    /// the returned future yields its value.
    ///
    /// # Errors
    ///
    /// As [`Scheduler::submit`].
    fn schedule_at<F, T>(&self, deadline: Instant, f: F) -> Result<ScheduledFuture<T>, Rejected>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit_at(deadline, Task::with_output(f))
            .map(ScheduledFuture::new)
    }

    /// Runs `f` after `initial`, then every `period` after that first
    /// scheduled start (`initial + k * period`). A run that overruns is
    /// followed by the missed runs back to back, as Java does; runs never
    /// overlap.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`](crate::Error::is_zero_period) if `period` is zero, else as
    /// [`Scheduler::submit`].
    fn schedule_at_fixed_rate<F>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Result<TaskHandle, Rejected>
    where
        F: FnMut() + Send + 'static,
    {
        self.submit(initial, Task::fixed_rate(period, f)?)
    }

    /// As [`SchedulerExt::schedule_at_fixed_rate`], starting at `start`,
    /// an instant of the scheduler's clock (`java.util.Timer`'s
    /// `scheduleAtFixedRate(task, firstTime, period)`).
    ///
    /// # Errors
    ///
    /// As [`SchedulerExt::schedule_at_fixed_rate`].
    fn schedule_at_fixed_rate_from<F>(
        &self,
        start: Instant,
        period: Duration,
        f: F,
    ) -> Result<TaskHandle, Rejected>
    where
        F: FnMut() + Send + 'static,
    {
        self.submit_at(start, Task::fixed_rate(period, f)?)
    }

    /// Runs `f` after `initial`, then `delay` after the end of each run.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`](crate::Error::is_zero_period) if `delay` is zero, else as
    /// [`Scheduler::submit`].
    fn schedule_with_fixed_delay<F>(
        &self,
        initial: Duration,
        delay: Duration,
        f: F,
    ) -> Result<TaskHandle, Rejected>
    where
        F: FnMut() + Send + 'static,
    {
        self.submit(initial, Task::fixed_delay(delay, f)?)
    }

    /// As [`SchedulerExt::schedule_with_fixed_delay`], starting at `start`,
    /// an instant of the scheduler's clock.
    ///
    /// # Errors
    ///
    /// As [`SchedulerExt::schedule_with_fixed_delay`].
    fn schedule_with_fixed_delay_from<F>(
        &self,
        start: Instant,
        delay: Duration,
        f: F,
    ) -> Result<TaskHandle, Rejected>
    where
        F: FnMut() + Send + 'static,
    {
        self.submit_at(start, Task::fixed_delay(delay, f)?)
    }

    /// Runs `f` at every fire time of `calendar` (a cron expression in a
    /// time zone), by the wall clock: Quartz's `CronTrigger`. Runs never
    /// overlap; one that ends after the next fire time is followed by the
    /// missed ones back to back. For another
    /// [missed-run policy](crate::calendar::MissedRuns) or
    /// [panic policy](crate::calendar::OnPanic), build the task with
    /// [`Task::calendar`] and submit it. The [guide](crate::calendar::guide)
    /// has the details: daylight saving, clock steps, suspend.
    ///
    /// # Errors
    ///
    /// [`Error::is_calendar`](crate::Error::is_calendar) if the calendar
    /// has no fire time left (its years are over), else as
    /// [`Scheduler::submit`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use schedulers::calendar::Calendar;
    /// use schedulers::{HeapTimer, ManualClock, SchedulerExt};
    ///
    /// // Monday 2024-03-04, 08:59:30 UTC.
    /// let clock = ManualClock::with_wall(SystemTime::UNIX_EPOCH + Duration::from_secs(1_709_542_770));
    /// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
    /// let weekdays = Calendar::parse_in("0 9 * * MON-FRI", "UTC").unwrap();
    /// let standup = timer.schedule_calendar(weekdays, || println!("stand-up")).unwrap();
    /// assert_eq!(standup.remaining(), Duration::from_secs(30));
    /// clock.advance(Duration::from_secs(30)); // 09:00 Monday: it runs
    /// assert_eq!(standup.remaining(), Duration::from_secs(24 * 3600));
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    fn schedule_calendar<F>(&self, calendar: Calendar, f: F) -> Result<TaskHandle, Rejected>
    where
        F: FnMut() + Send + 'static,
    {
        self.submit(Duration::ZERO, Task::calendar(calendar, f))
    }
}

impl<S: Scheduler + ?Sized> SchedulerExt for S {}

/// What each scheduler of this crate gives the one [`Scheduler`]
/// implementation they share: its [`Shared`] state (where every call goes)
/// and what it does with a task just accepted.
pub(crate) trait AsShared: Send + Sync + fmt::Debug {
    /// The state the scheduler's threads and handles share.
    fn shared(&self) -> &Arc<Shared>;

    /// What its handles hold.
    fn anchors(&self) -> &Anchors;

    /// Gives out the handle of a task just accepted under `key` (which
    /// holds a reference for it), its entry waiting at `spot`. A [`ScheduledThreadPool`](crate::ScheduledThreadPool)
    /// starts a worker here.
    fn accept(&self, key: Key, spot: Spot) -> Result<TaskHandle, Rejected> {
        Ok(self.anchors().handle(key, spot))
    }
}

impl<D: AsShared> Scheduler for D {
    fn submit(&self, delay: Duration, task: Task) -> Result<TaskHandle, Rejected> {
        let submitted = self.shared().submit(When::After(delay), task);
        submitted
            .and_then(|(key, spot)| self.accept(key, spot))
            .map_err(|rejected| self.shared().rejected(rejected))
    }

    fn submit_at(&self, deadline: Instant, task: Task) -> Result<TaskHandle, Rejected> {
        let submitted = self.shared().submit(When::At(deadline), task);
        submitted
            .and_then(|(key, spot)| self.accept(key, spot))
            .map_err(|rejected| self.shared().rejected(rejected))
    }

    fn shutdown(&self) {
        self.shared().shutdown()
    }

    fn shutdown_now(&self) -> Vec<TaskHandle> {
        let keys = self.shared().shutdown_now();
        keys.into_iter()
            .map(|key| self.anchors().handle(key, Spot::NONE))
            .collect()
    }

    fn is_shutdown(&self) -> bool {
        self.shared().is_shutdown()
    }

    fn is_terminated(&self) -> bool {
        self.shared().is_terminated()
    }

    fn await_termination(&self, timeout: Duration) -> bool {
        self.shared().await_termination(timeout)
    }

    fn metrics(&self) -> Metrics {
        self.shared().metrics()
    }
}
