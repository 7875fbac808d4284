//! What a scheduler knows about itself: [`Metrics`], a snapshot of its
//! counters and distributions.

use std::sync::Arc;

use crate::histogram::Histogram;

/// The most task names a scheduler keeps figures of their own for
/// ([`Metrics::by_name`]); runs of tasks with further names count in one
/// entry without a name.
pub const MAX_NAMES: usize = 256;

/// A scheduler's figures at one moment, from
/// [`Scheduler::metrics`](crate::Scheduler::metrics).
///
/// Counters count from the scheduler's start. The driver records each run
/// as it ends, with no lock and no allocation: its **lateness** (when it
/// started, minus its deadline: the figure the workbench is built around)
/// and its **run time**, in [`Histogram`]s of bounded memory.
///
/// A snapshot takes the driver's lock briefly (as `pending` always did)
/// and copies the histograms (about 20 KB each for the scheduler, and each
/// name): cheap enough to take every second.
///
/// With the `metrics` feature the same figures go to the
/// [`metrics`](https://docs.rs/metrics) facade, and with `tracing` every run
/// is a span: see [`observe`](crate::observe) for the names.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, ManualClock, Scheduler, SchedulerExt};
///
/// let clock = ManualClock::new();
/// let timer = HeapTimer::builder().clock(clock.clone()).build()?;
/// timer.schedule(Duration::from_secs(1), || ()).unwrap();
/// timer.schedule_at_fixed_rate(Duration::from_secs(5), Duration::from_secs(5), || ()).unwrap();
/// clock.advance(Duration::from_secs(3)); // the one-shot runs 2 s late
/// let m = timer.metrics();
/// assert_eq!((m.fired, m.pending), (1, 1));
/// assert_eq!(m.pending_by_kind.periodic, 1);
/// assert_eq!(m.lateness.max(), Some(Duration::from_secs(2)));
/// assert_eq!(m.run_time.count(), 1);
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Tasks waiting for their next run (not counting ones running now).
    pub pending: usize,
    /// The same, by kind of task.
    pub pending_by_kind: PendingByKind,
    /// Runs started: a periodic task counts once per run.
    pub fired: u64,
    /// Successful cancels.
    pub cancelled: u64,
    /// Tasks the scheduler refused (shut down, pending limit, a deadline
    /// out of range, a calendar with no fire time left): the errors its
    /// `submit` returned.
    pub rejected: u64,
    /// Runs that panicked (whether the task then stopped or, with
    /// [`OnPanic::Continue`](crate::calendar::OnPanic::Continue), went on).
    pub panicked: u64,
    /// Runs of periodic and calendar tasks passed over by their
    /// [missed-run policy](crate::calendar::MissedRuns).
    pub skipped: u64,
    /// Times a driver thread woke from a wait (for a deadline, a caller's
    /// nudge, or shutdown): on paced loads, what decides the CPU per
    /// timer. Deadlines spun through rather than slept for do not count.
    pub wakeups: u64,
    /// How late each run started: when it started minus its deadline (the
    /// grid point, for a fixed-rate run), on the scheduler's clock. One
    /// value per run.
    pub lateness: Histogram,
    /// How long each run took (on the timer thread, a run's start is the
    /// previous run's end when they follow each other in a batch, so a
    /// few tens of nanoseconds of the scheduler's own work between them
    /// count in the later run).
    pub run_time: Histogram,
    /// The figures of named tasks ([`Task::named`](crate::Task::named)),
    /// one entry per name in the order the names first ran; their runs also
    /// count in the figures above.
    pub by_name: Vec<NamedMetrics>,
}

/// Tasks waiting, by kind ([`Metrics::pending_by_kind`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingByKind {
    /// One-shot tasks.
    pub one_shot: usize,
    /// Fixed-rate and fixed-delay tasks.
    pub periodic: usize,
    /// Calendar tasks.
    pub calendar: usize,
}

/// The figures of the tasks of one name ([`Metrics::by_name`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NamedMetrics {
    /// The name; `None` for the tasks whose names came after the first
    /// [`MAX_NAMES`].
    pub name: Option<Arc<str>>,
    /// Runs started.
    pub fired: u64,
    /// Runs that panicked.
    pub panicked: u64,
    /// Runs passed over by a missed-run policy.
    pub skipped: u64,
    /// Tasks of this name the scheduler refused.
    pub rejected: u64,
    /// How late each run started.
    pub lateness: Histogram,
    /// How long each run took.
    pub run_time: Histogram,
}
