//! Runs a workload against one subject and measures it.
//!
//! A [`Subject`] is what the suite knows of a scheduler or a peer: its name,
//! its description, the workloads it runs, and how to get its [`Runner`]
//! (or why it cannot run here, [`Unavailable`]). Two levels, so that every
//! kind of subject fits:
//!
//! - [`Runner`]: "run this workload once and return what you measured". An
//!   out-of-process peer (the Java harness) implements it directly: it sends
//!   the workload as JSON and reads [`Measurement`]s back.
//! - [`Timers`]: the handful of operations an in-process subject offers
//!   (schedule, schedule periodic, cancel, reset, shut down). Every
//!   scheduler of this crate and every Rust peer implements it, and
//!   [`InProcess`] turns any of them into a `Runner` by executing the
//!   workload's timeline ([`timeline`]) or sweep ([`sweep`]) against it. So
//!   the algorithms and their peers are measured by the same code.
//!
//! # Honest measurement
//!
//! - A firing task does one thing: it stores the time into a cell of
//!   preallocated memory ([`Fire::hit`]); the lateness histogram is built
//!   after the run from those cells.
//! - Timelines time each call alone with two clock reads (`*_call`
//!   metrics); the cost of that timing loop is measured on its own
//!   ([`measure::timing_overhead`]), subtracted, and reported. Sweeps time
//!   loops of calls as a whole (`*_batch`), as a caller's loop runs them.
//! - Whole-process CPU per timer counts what a subject defers to its own
//!   threads (`cpu_per_timer`).
//! - Application-side storage (the vector of handles, the probe, the fire
//!   cells handed to the subject) is allocated and touched before memory is
//!   measured, and stays allocated until after the second reading.
//! - A subject is driven the way its users drive it ([`Timers::drive`]).

pub mod contention;
pub mod counter;
pub mod measure;
mod subject;
pub mod sweep;
pub mod timeline;

pub use subject::{RunnerFactory, Subject, Unavailable};

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::record::Measurement;
use crate::spec::{Kind, Workload};

/// Runs a workload once against one subject.
pub trait Runner {
    /// Runs `workload` once (one repeat) and returns every figure measured.
    ///
    /// # Errors
    ///
    /// A [`RunError`] if the subject refused an operation the workload
    /// needs or the run could not be carried out; the suite reports it and
    /// goes on.
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError>;
}

/// What a runner gets from the suite besides the workload.
#[derive(Clone, Debug)]
pub struct RunContext {
    /// Measured cost of the timing loop around one operation, ns.
    pub timing_overhead_ns: f64,
    /// A progress bar to advance (hidden when not on a terminal).
    pub progress: ProgressBar,
}

impl RunContext {
    /// A context with a hidden progress bar.
    pub fn quiet(timing_overhead_ns: f64) -> RunContext {
        RunContext {
            timing_overhead_ns,
            progress: ProgressBar::hidden(),
        }
    }
}

/// A run that could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The subject refused an operation.
    #[error("{op} refused at timer {at} of {of}: {source}")]
    Refused {
        /// Which operation.
        op: &'static str,
        /// The timer's index.
        at: usize,
        /// How many timers the run has.
        of: usize,
        /// The subject's own error.
        source: Refused,
    },
    /// The subject broke the contract the measurement relies on (a cancel
    /// of a pending timer that failed, a far-future timer that fired).
    #[error("{0}")]
    Inconsistent(String),
    /// A child process (the Java harness, the memory probe, the Redis
    /// benchmark) failed or answered nonsense.
    #[error("{0}")]
    Child(String),
    /// The workload is too large for this runner.
    #[error("{0}")]
    TooLarge(String),
}

/// A subject's refusal of an operation, with its own error inside.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Refused(pub Box<dyn std::error::Error + Send + Sync>);

impl Refused {
    /// A refusal explained in words.
    pub fn because(why: impl Into<String>) -> Refused {
        Refused(why.into().into())
    }
}

/// The operations an in-process subject offers the runner. Timers are
/// named by dense ids `0..capacity`, each scheduled at most once.
///
/// The runner's thread is the application: it calls these operations at
/// the workload's times, and between them hands the thread to
/// [`Timers::drive`], so that a subject whose timers are owned and polled
/// by the application's own thread (an event loop: tokio-util's
/// `DelayQueue` in its task, `nexus-timer`'s wheel) is driven the way its
/// users drive it, while a subject with its own threads simply waits.
pub trait Timers {
    /// Schedules one-shot timer `id` to call `fire.hit()` after `delay`.
    ///
    /// # Errors
    ///
    /// The subject refused (its own error inside).
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), Refused>;

    /// Schedules periodic timer `id`: first after `initial`, then every
    /// `period` (fixed-rate or fixed-delay, as `kind` says).
    ///
    /// # Errors
    ///
    /// The subject refused, or does not do this kind of timer.
    fn schedule_periodic(
        &mut self,
        id: usize,
        kind: Kind,
        initial: Duration,
        period: Duration,
        fire: Fire,
    ) -> Result<(), Refused>;

    /// Cancels timer `id`; true iff this stopped a future run.
    fn cancel(&mut self, id: usize) -> bool;

    /// Moves timer `id` to `delay` from now; true iff it was still pending.
    fn reset(&mut self, id: usize, delay: Duration) -> bool;

    /// Schedules calendar schedule `id`: `fire.hit()` at every wall-clock
    /// instant `cron` names, until it is cancelled (the `calendar`
    /// workload, [`crate::calendar`]).
    ///
    /// # Errors
    ///
    /// The subject refused; by default it has no calendar API
    /// ([`crate::calendar::NO_CALENDAR_API`]), and the run says so.
    fn schedule_cron(
        &mut self,
        id: usize,
        cron: &crate::calendar::Schedule,
        fire: Fire,
    ) -> Result<(), Refused> {
        let _ = (id, cron, fire);
        Err(Refused::because(crate::calendar::NO_CALENDAR_API))
    }

    /// Runs the application: calls `app.step` with this subject until it
    /// returns `None`, and between steps waits until the instant it
    /// returned. A subject with threads of its own calls
    /// [`drive_threaded`]; an event-loop subject polls its timers (and
    /// fires them) while it waits, on this thread.
    fn drive(&mut self, app: &mut dyn App);

    /// Drops everything pending and stops the subject's threads.
    fn shutdown(self: Box<Self>);

    /// The lateness the subject measured itself, of every run so far, if
    /// it keeps one (this crate's schedulers do: `Metrics::lateness`), for
    /// the cross-check against the workbench's own measurement.
    fn own_lateness(&self) -> Option<OwnLateness> {
        None
    }
}

/// A subject's own lateness figures ([`Timers::own_lateness`]), ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwnLateness {
    /// Runs measured.
    pub runs: u64,
    /// The exact mean.
    pub mean_ns: f64,
    /// The median (its histogram's bucket, at most 3.1% wide).
    pub p50_ns: f64,
    /// The 99th percentile (likewise).
    pub p99_ns: f64,
}

/// The application side of [`Timers::drive`].
pub trait App {
    /// Does everything due by now against `timers`; returns when it next
    /// has something to do, or `None` when it is finished.
    fn step(&mut self, timers: &mut dyn Timers) -> Option<Instant>;
}

/// [`Timers::drive`] for a subject with threads of its own: the
/// application's thread just sleeps between steps (on the
/// [`PACE`](measure::PACE) grid).
pub fn drive_threaded(timers: &mut dyn Timers, app: &mut dyn App) {
    while let Some(t) = app.step(timers) {
        measure::wait_for_event(t);
    }
}

/// A closure as an [`App`].
pub struct Steps<F>(pub F);

impl<F: FnMut(&mut dyn Timers) -> Option<Instant>> App for Steps<F> {
    fn step(&mut self, timers: &mut dyn Timers) -> Option<Instant> {
        (self.0)(timers)
    }
}

impl<F> fmt::Debug for Steps<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Steps")
    }
}

/// Runs `f` once inside `timers`' [`Timers::drive`] (so an event-loop
/// subject is in its context) and returns its result.
pub fn within<R>(timers: &mut dyn Timers, f: impl FnOnce(&mut dyn Timers) -> R) -> R {
    let mut f = Some(f);
    let mut out = None;
    timers.drive(&mut Steps(|t: &mut dyn Timers| {
        if let Some(f) = f.take() {
            out = Some(f(t));
        }
        None
    }));
    // `drive` calls the application at least once by contract; a subject
    // that did not is a bug in its adapter.
    out.unwrap_or_else(|| unreachable!("Timers::drive returned without running the application"))
}

/// Makes a fresh in-process subject able to hold `capacity` timers.
pub type TimersFactory = Arc<dyn Fn(usize) -> Box<dyn Timers> + Send + Sync>;

/// Any [`Timers`] as a [`Runner`]: executes the workload's timeline or sweep.
#[derive(Clone)]
pub struct InProcess {
    name: &'static str,
    make: TimersFactory,
}

impl InProcess {
    /// A runner for the subject `name` (as registered in
    /// [`crate::subjects`]) that makes a fresh subject with `make` for every
    /// repeat (and every sweep size).
    pub fn new(name: &'static str, make: TimersFactory) -> InProcess {
        InProcess { name, make }
    }
}

/// The `workbench` executable, when the suite runs from it: sweeps then
/// measure memory per timer in a fresh child process
/// (`workbench memory-probe`), where no memory freed by an earlier run can
/// be reused and hide the cost. Unset (in tests), memory is measured in
/// process from the resident set, which can undercount.
pub static MEMORY_PROBE_EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

impl fmt::Debug for InProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcess").finish_non_exhaustive()
    }
}

impl Runner for InProcess {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        match (&workload.sweep, &workload.calendar) {
            (Some(sweep), _) => sweep::run(self.name, &self.make, workload.seed, sweep, ctx),
            (None, Some(calendar)) => {
                crate::calendar::run(self.name, &self.make, workload, calendar, ctx)
            }
            (None, None) => timeline::run(&self.make, workload, ctx),
        }
    }
}

/// Where firing tasks write: one cell per one-shot timer, a ring of cells
/// per periodic timer, allocated before the run.
#[derive(Debug)]
pub struct Probe {
    epoch: Instant,
    once: Box<[AtomicU64]>,
    runs: Box<[AtomicU32]>,
    times: Box<[AtomicU64]>,
    cap: usize,
    /// One-shot fires: sharded per thread, so that a subject firing on two
    /// threads at once does not pay for a counter line bouncing between
    /// cores (the workbench's cost, not the subject's).
    fired: counter::Sharded,
}

impl Probe {
    /// Room for `once` one-shot timers and `periodic` periodic ones with up
    /// to `cap` recorded runs each; times count from `epoch`.
    pub fn new(epoch: Instant, once: usize, periodic: usize, cap: usize) -> Arc<Probe> {
        let zeros = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>();
        Arc::new(Probe {
            epoch,
            once: zeros(once),
            runs: (0..periodic).map(|_| AtomicU32::new(0)).collect(),
            times: zeros(periodic * cap),
            cap,
            fired: counter::Sharded::default(),
        })
    }

    /// The [`Fire`] for one-shot cell `cell`.
    pub fn once(self: &Arc<Self>, cell: usize) -> Fire {
        Fire {
            probe: self.clone(),
            cell: cell as u32,
            periodic: false,
        }
    }

    /// The [`Fire`] for periodic cell `cell`.
    pub fn periodic(self: &Arc<Self>, cell: usize) -> Fire {
        Fire {
            probe: self.clone(),
            cell: cell as u32,
            periodic: true,
        }
    }

    /// The instant every recorded time counts from.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// One-shot fires so far.
    pub fn fired(&self) -> u64 {
        self.fired.sum()
    }

    /// When one-shot `cell` fired, in ns since the epoch.
    pub fn fired_at(&self, cell: usize) -> Option<u64> {
        match self.once[cell].load(Relaxed) {
            0 => None,
            t => Some(t - 1),
        }
    }

    /// How many times periodic `cell` ran, and the recorded start times.
    pub fn runs(&self, cell: usize) -> (u32, Vec<u64>) {
        let n = self.runs[cell].load(Relaxed);
        let kept = (n as usize).min(self.cap);
        let base = cell * self.cap;
        (
            n,
            (0..kept)
                .map(|k| self.times[base + k].load(Relaxed))
                .collect(),
        )
    }
}

/// What a firing task calls: stores the time into its preallocated cell.
#[derive(Clone, Debug)]
pub struct Fire {
    probe: Arc<Probe>,
    cell: u32,
    periodic: bool,
}

impl Fire {
    /// Records one fire (one run, for a periodic timer). A one-shot store
    /// plus one increment on the firing thread's own counter shard; a
    /// periodic run is the run counter plus one store.
    #[inline]
    pub fn hit(&self) {
        let p = &*self.probe;
        let t = u64::try_from(measure::now().saturating_duration_since(p.epoch).as_nanos())
            .unwrap_or(u64::MAX - 1);
        let cell = self.cell as usize;
        if self.periodic {
            let k = p.runs[cell].fetch_add(1, Relaxed) as usize;
            if k < p.cap {
                p.times[cell * p.cap + k].store(t, Relaxed);
            }
        } else {
            p.once[cell].store(t + 1, Relaxed);
            p.fired.add(1);
        }
    }
}
