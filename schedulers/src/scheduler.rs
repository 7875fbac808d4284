//! The contract every scheduler keeps: the object-safe [`Scheduler`] trait,
//! the generic [`SchedulerExt`] layer over it, and [`Metrics`].

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, Timebase};
use crate::error::{Error, Kind, Setting};
use crate::handle::{ScheduledFuture, TaskHandle};
use crate::task::{CancelOutcome, Task, TaskRef};

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
/// - bad input is a typed [`Error`], never a panic.
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
    /// Schedules `task` to first run after `delay`.
    ///
    /// # Errors
    ///
    /// [`Error::is_shutdown`] after [`Scheduler::shutdown`];
    /// [`Error::is_delay_overflow`] if the deadline does not fit the time
    /// range; [`Error::is_pending_limit`] if the scheduler already holds its
    /// configured limit of pending tasks.
    fn submit(&self, delay: Duration, task: Task) -> Result<TaskHandle, Error>;

    /// Takes no new work. Pending one-shot tasks still run; periodic tasks
    /// stop (their handles report cancelled). Returns at once; see
    /// [`Scheduler::await_termination`].
    fn shutdown(&self);

    /// Takes no new work and drops every pending task, returning handles to
    /// those that never ran (they report [`Error::is_abandoned`] when waited
    /// on). A task that is running finishes; periodic ones do not repeat.
    fn shutdown_now(&self) -> Vec<TaskHandle>;

    /// True once `shutdown` or `shutdown_now` was called.
    fn is_shutdown(&self) -> bool;

    /// True once shut down and every thread of the scheduler has finished.
    fn is_terminated(&self) -> bool;

    /// Blocks until terminated or until `timeout` of real time has passed;
    /// returns whether it terminated.
    fn await_termination(&self, timeout: Duration) -> bool;

    /// Counters: pending, fired and cancelled tasks.
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
    fn schedule<F, T>(&self, delay: Duration, f: F) -> Result<ScheduledFuture<T>, Error>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit(delay, Task::once(f)).map(ScheduledFuture::new)
    }

    /// Runs `f` after `initial`, then every `period` after that first
    /// scheduled start (`initial + k * period`). A run that overruns is
    /// followed by the missed runs back to back, as Java does; runs never
    /// overlap.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `period` is zero, else as
    /// [`Scheduler::submit`].
    fn schedule_at_fixed_rate<F>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Result<TaskHandle, Error>
    where
        F: FnMut() + Send + 'static,
    {
        self.submit(initial, Task::fixed_rate(period, f)?)
    }

    /// Runs `f` after `initial`, then `delay` after the end of each run.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `delay` is zero, else as
    /// [`Scheduler::submit`].
    fn schedule_with_fixed_delay<F>(
        &self,
        initial: Duration,
        delay: Duration,
        f: F,
    ) -> Result<TaskHandle, Error>
    where
        F: FnMut() + Send + 'static,
    {
        self.submit(initial, Task::fixed_delay(delay, f)?)
    }
}

impl<S: Scheduler + ?Sized> SchedulerExt for S {}

/// A scheduler's counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Tasks waiting for their next run (not counting ones running now).
    pub pending: usize,
    /// Runs started: a periodic task counts once per run.
    pub fired: u64,
    /// Successful cancels.
    pub cancelled: u64,
}

/// What a scheduler's handles need from it: its shared state plus the two
/// queue operations that differ between algorithms.
pub(crate) trait Core: Send + Sync + 'static {
    fn base(&self) -> &Base;

    /// Queues a pending cell again at a new entry (after a reset moved it).
    fn requeue(&self, cell: &TaskRef, deadline: u64, seq: u64);

    /// Told after a cancel that stopped a future run; the counters are
    /// already updated. The stale entry may be removed now or later.
    fn cancelled(&self, cell: &TaskRef, outcome: CancelOutcome);
}

/// The state every scheduler shares: time, sequence numbers, counters,
/// the pending limit and the shutdown flag.
#[derive(Debug)]
pub(crate) struct Base {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) timebase: Timebase,
    seq: AtomicU64,
    /// Signed: a periodic task re-armed by its runner can be cancelled a
    /// moment before the driver counts it pending again.
    pending: AtomicIsize,
    fired: AtomicU64,
    cancelled: AtomicU64,
    pending_limit: usize,
    shutdown: AtomicBool,
    /// Set by `shutdown_now`: nothing runs or repeats any more.
    stopped: AtomicBool,
    /// Whether periodic tasks keep running after `shutdown` (default false).
    pub(crate) keep_periodic: bool,
    /// Whether pending one-shot tasks still run after `shutdown` (default true).
    pub(crate) run_delayed: bool,
}

impl Base {
    pub(crate) fn new(common: &Common) -> Base {
        let clock = common.clock.clone();
        let timebase = Timebase::new(clock.now());
        Base {
            keep_periodic: common.keep_periodic,
            run_delayed: common.run_delayed,
            clock,
            timebase,
            seq: AtomicU64::new(0),
            pending: AtomicIsize::new(0),
            fired: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            pending_limit: common.pending_limit.unwrap_or(usize::MAX),
            shutdown: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        }
    }

    /// Now, in ticks (nanoseconds since the scheduler started).
    pub(crate) fn now(&self) -> u64 {
        self.timebase.ticks(self.clock.now())
    }

    /// A fresh sequence number: orders ties and names queue entries.
    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Relaxed)
    }

    /// Admits a new task due `delay` from now: checks shutdown, the delay
    /// and the pending limit, then counts it as pending and arms its cell.
    /// Returns `(deadline, seq)` for the queue entry.
    pub(crate) fn admit(&self, cell: &TaskRef, delay: Duration) -> Result<(u64, u64), Error> {
        if self.is_shutdown() {
            return Err(Error::new(Kind::Shutdown));
        }
        let deadline = Timebase::deadline(self.now(), delay)?;
        let limit = isize::try_from(self.pending_limit).unwrap_or(isize::MAX);
        if self.pending.fetch_add(1, Relaxed) >= limit {
            self.pending.fetch_sub(1, Relaxed);
            return Err(Error::new(Kind::PendingLimit(self.pending_limit)));
        }
        let seq = self.next_seq();
        cell.arm(deadline, seq);
        Ok((deadline, seq))
    }

    /// A cell left the pending set without running (it was dropped).
    pub(crate) fn unpend(&self) {
        self.pending.fetch_sub(1, Relaxed);
    }

    /// A pending task was claimed to run.
    pub(crate) fn fire(&self) {
        self.pending.fetch_sub(1, Relaxed);
        self.fired.fetch_add(1, Relaxed);
    }

    /// A periodic task went back to waiting.
    pub(crate) fn repend(&self) {
        self.pending.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_cancel(&self, outcome: CancelOutcome) {
        if outcome == CancelOutcome::WasPending {
            self.pending.fetch_sub(1, Relaxed);
        }
        self.cancelled.fetch_add(1, Relaxed);
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(SeqCst)
    }

    /// Sets the shutdown flag; true for the first caller.
    pub(crate) fn start_shutdown(&self) -> bool {
        !self.shutdown.swap(true, SeqCst)
    }

    /// Sets the shutdown and stopped flags (`shutdown_now`): from now on
    /// [`Base::drops_at_shutdown`] drops every task, whatever the policy.
    pub(crate) fn start_shutdown_now(&self) {
        self.stopped.store(true, SeqCst);
        self.shutdown.store(true, SeqCst);
    }

    pub(crate) fn metrics(&self) -> Metrics {
        Metrics {
            pending: usize::try_from(self.pending.load(Relaxed)).unwrap_or(0),
            fired: self.fired.load(Relaxed),
            cancelled: self.cancelled.load(Relaxed),
        }
    }

    /// Decides, at shutdown, whether a queued task is dropped (cancelled):
    /// everything after `shutdown_now`; otherwise periodic tasks unless kept,
    /// and one-shots not yet due unless delayed tasks are kept (the JDK's
    /// `onShutdown`: a one-shot already due still runs).
    pub(crate) fn drops_at_shutdown(&self, cell: &TaskRef) -> bool {
        if self.stopped.load(SeqCst) {
            true
        } else if cell.is_periodic() {
            !self.keep_periodic
        } else {
            !self.run_delayed && cell.deadline() > self.now()
        }
    }
}

/// The settings every scheduler's builder has.
#[derive(Clone, Debug)]
pub(crate) struct Common {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) pending_limit: Option<usize>,
    pub(crate) keep_periodic: bool,
    pub(crate) run_delayed: bool,
    pub(crate) thread_name: String,
}

impl Common {
    pub(crate) fn new(thread_name: &str) -> Common {
        Common {
            clock: Arc::new(crate::clock::SystemClock),
            pending_limit: None,
            keep_periodic: false,
            run_delayed: true,
            thread_name: thread_name.to_owned(),
        }
    }
}

impl Common {
    /// Checks the settings every builder shares.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.pending_limit == Some(0) {
            return Err(Error::invalid(
                Setting::PendingLimit,
                "0 would refuse every task; leave it unset for no limit",
            ));
        }
        if self.thread_name.contains('\0') {
            return Err(Error::invalid(
                Setting::ThreadName,
                format!("{:?} contains a NUL byte", self.thread_name),
            ));
        }
        Ok(())
    }
}

/// Starts a named thread, or says why the operating system would not.
pub(crate) fn spawn(name: String, body: impl FnOnce() + Send + 'static) -> Result<(), Error> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(body)
        .map(drop)
        .map_err(|e| Error::spawn(&format!("thread {name:?}"), &e))
}

/// A wheel's tick in nanoseconds, if it is at least `min` and one turn of
/// `slots` ticks fits the time range (`u64` nanoseconds, 584 years): the
/// rule Netty applies (`tickDuration * ticksPerWheel` must fit a `long`).
pub(crate) fn wheel_tick(tick: Duration, min: Duration, slots: usize) -> Result<u64, Error> {
    if tick < min {
        return Err(Error::invalid(
            Setting::Tick,
            format!("{tick:?} is shorter than the shortest tick, {min:?}"),
        ));
    }
    u64::try_from(tick.as_nanos())
        .ok()
        .filter(|&ns| ns.checked_mul(slots as u64).is_some())
        .ok_or_else(|| {
            Error::invalid(
                Setting::Tick,
                format!("{tick:?} times {slots} slots does not fit the time range of 584 years"),
            )
        })
}

/// The builder methods every scheduler shares; expects a `common: Common` field.
macro_rules! common_builder_methods {
    () => {
        /// The clock the scheduler reads: [`SystemClock`](crate::SystemClock)
        /// by default, a [`ManualClock`](crate::ManualClock) for tests and
        /// simulations.
        pub fn clock(mut self, clock: impl crate::Clock) -> Self {
            self.common.clock = std::sync::Arc::new(clock);
            self
        }

        /// The most tasks that may wait at once; beyond it `submit` fails
        /// with [`Error::is_pending_limit`](crate::Error::is_pending_limit).
        /// Unlimited by default; zero is refused by `build`
        /// ([`Error::is_invalid_pending_limit`](crate::Error::is_invalid_pending_limit)).
        pub fn pending_limit(mut self, limit: usize) -> Self {
            self.common.pending_limit = Some(limit);
            self
        }

        /// The name of the scheduler's thread (a prefix where it has several).
        /// A name with a NUL byte is refused by `build`
        /// ([`Error::is_invalid_thread_name`](crate::Error::is_invalid_thread_name)).
        pub fn thread_name(mut self, name: impl Into<String>) -> Self {
            self.common.thread_name = name.into();
            self
        }

        /// Whether periodic tasks keep running after `shutdown` (default
        /// false, as Java's `ScheduledThreadPoolExecutor`).
        pub fn continue_existing_periodic_tasks_after_shutdown(mut self, keep: bool) -> Self {
            self.common.keep_periodic = keep;
            self
        }

        /// Whether pending one-shot tasks still run after `shutdown`
        /// (default true, as Java's `ScheduledThreadPoolExecutor`).
        pub fn execute_existing_delayed_tasks_after_shutdown(mut self, run: bool) -> Self {
            self.common.run_delayed = run;
            self
        }
    };
}
pub(crate) use common_builder_methods;
