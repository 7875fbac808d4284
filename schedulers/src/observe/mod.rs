//! What a scheduler knows about itself, and how it tells the ecosystem's
//! facades: the names of its `metrics` series and the fields of its
//! `tracing` spans.
//!
//! The figures themselves are in [`Metrics`], from
//! [`Scheduler::metrics`](crate::Scheduler::metrics), whatever the
//! features. Each thread that runs a scheduler's tasks records their
//! lateness and run time in histograms of its own (plain loads and stores,
//! no lock), merged by a snapshot: every driver thread, and up to
//! [`GUEST_SHARDS`] other threads (an executor's), each of which keeps its
//! histograms for the last [`GUESTS_PER_THREAD`] schedulers it ran tasks
//! for. Threads past those share one set, with atomic adds. What that costs
//! is under [Cost](#cost).
//!
//! # `metrics` (feature `metrics`)
//!
//! Every scheduler reports to the [`metrics`](https://docs.rs/metrics)
//! facade, so an exporter installed by the application (Prometheus, OTLP,
//! statsd) picks its figures up. Every series has the label `scheduler`,
//! the scheduler's thread name (`thread_name` on its builder; give each
//! scheduler its own). The runs of a named task
//! ([`Task::named`](crate::Task::named)) go to series that also have the
//! label `task`, its name; unnamed tasks' runs to the series without it,
//! so that a sum over `task` counts every run once. Names past the first
//! [`MAX_NAMES`] share the label value [`OTHER`].
//!
//! | Name | Kind | Labels | What |
//! |---|---|---|---|
//! | [`RUNS`] | counter | `scheduler`, `task` | runs started |
//! | [`LATENESS`] | histogram (seconds) | `scheduler`, `task` | start minus deadline, per run |
//! | [`RUN_TIME`] | histogram (seconds) | `scheduler`, `task` | duration of each run |
//! | [`PANICS`] | counter | `scheduler`, `task` | runs that panicked |
//! | [`SKIPPED`] | counter | `scheduler`, `task` | runs passed over by a missed-run policy |
//! | [`REJECTED`] | counter | `scheduler`, `task` | tasks refused by `submit` |
//! | [`WAKEUPS`] | counter | `scheduler` | driver wake-ups |
//! | [`CANCELLED`] | counter | `scheduler` | successful cancels |
//! | [`PENDING`] | gauge | `scheduler`, `kind` (`one_shot`, `periodic`, `calendar`) | tasks waiting |
//!
//! What happens on the driver (runs, lateness, run times, panics, skips,
//! wake-ups) and rejections are reported as they happen. Cancels happen on
//! the callers' threads, which pay nothing for them, and `pending` is a
//! state: both are published whenever [`Metrics`] are taken, so call
//! [`Scheduler::metrics`](crate::Scheduler::metrics) at the exporter's
//! pace (every few seconds).
//!
//! The series are registered when the scheduler is built: install the
//! recorder first (as the `metrics` crate asks of every library).
//!
//! # `tracing` (feature `tracing`)
//!
//! Every run is a span, at level `DEBUG`, target `schedulers::run`, named
//! `run`, with the fields `scheduler`, `task` (a named task's name),
//! `lateness_ns`, and, when it ends, `run_ns` and `outcome` (`ok` or
//! `panicked`). Events logged by the task are inside it. A panic is also
//! an event at `WARN` (target `schedulers`), and a rejection one at
//! `DEBUG`, each with `scheduler`, `task` and `error`. With no subscriber
//! (or one that wants neither level) a span costs one load of the level
//! filter.
//!
//! # Cost
//!
//! Timing a run costs one reading of the time (a run in a batch starts
//! when the one before it on the same thread ended, so a batch reads the
//! time once per run) and two histogram updates. On the system clock that
//! reading is the CPU's time-stamp counter scaled to the clock, renewed
//! from a real clock read every 90 µs or so: about 9 ns where a clock read
//! takes 22 (x86_64 with an invariant counter; elsewhere, and on a custom
//! clock, a clock read). Measured by `cargo bench -p benches --bench
//! observe` (2-core VM, load 0.9, 2026-11-27), a trivial run in a batch,
//! timed against untimed:
//!
//! | thread | timed | untimed | timed by clock reads, before |
//! |---|---|---|---|
//! | `HeapTimer`'s | 42-48 ns | 39 ns | 66 ns |
//! | an executor's (`hier-on-pool-1`) | 50 ns | 44 ns | 71 ns |
//! | a pool worker's (`stpe-1`) | 46 ns | 44 ns | 71 ns |
//!
//! The workbench's `burst` (5e4 one-shots due together, quick size) fires
//! 13.8 M/s on `HeapTimer` with the counter, 10.2-10.5 M/s with clock
//! reads (same session). Runs that do real work do not notice; a scheduler
//! built only to fire trivial tasks by the million can still turn the
//! timing off with `run_figures(false)` on its builder (the histograms
//! then stay empty; every count is kept). Without the features, the
//! facades cost nothing.

#![allow(unreachable_pub)] // the names are public through `crate::observe`

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};

use crate::clock::lock;
use crate::error::Error;
use crate::histogram::{bucket, Histogram, BUCKETS};
use crate::metrics::{Metrics, NamedMetrics, MAX_NAMES};

#[cfg(feature = "metrics")]
mod export;
#[cfg(not(feature = "metrics"))]
#[path = "export_off.rs"]
mod export;
#[cfg(feature = "tracing")]
mod trace;
#[cfg(not(feature = "tracing"))]
#[path = "trace_off.rs"]
mod trace;

/// Counter: runs started.
pub const RUNS: &str = "schedulers_runs_total";
/// Histogram, seconds: start minus deadline, per run.
pub const LATENESS: &str = "schedulers_lateness_seconds";
/// Histogram, seconds: the duration of each run.
pub const RUN_TIME: &str = "schedulers_run_time_seconds";
/// Counter: runs that panicked.
pub const PANICS: &str = "schedulers_panics_total";
/// Counter: runs passed over by a missed-run policy.
pub const SKIPPED: &str = "schedulers_skipped_total";
/// Counter: tasks refused by `submit`.
pub const REJECTED: &str = "schedulers_rejected_total";
/// Counter: driver wake-ups.
pub const WAKEUPS: &str = "schedulers_wakeups_total";
/// Counter: successful cancels.
pub const CANCELLED: &str = "schedulers_cancelled_total";
/// Gauge: tasks waiting, by `kind`.
pub const PENDING: &str = "schedulers_pending";
/// The `task` label of the runs of tasks whose names came after the first
/// [`MAX_NAMES`].
pub const OTHER: &str = "_other";

/// Threads other than its drivers (an executor's) that get histograms of
/// their own for one scheduler's runs (20 KiB each); the rest share one.
pub const GUEST_SHARDS: usize = 16;
/// Schedulers whose histograms a thread other than their drivers keeps at
/// once: running tasks for one more, it takes new ones in place of the
/// oldest (while that scheduler has some left to give).
pub const GUESTS_PER_THREAD: usize = 4;

/// Numbers observers: a thread's shards are matched by it, never by an
/// address a later scheduler may take.
static OBSERVERS: AtomicU64 = AtomicU64::new(0);

/// One histogram's storage: counts per bucket, and the exact sum and
/// extremes, as atomics so that a snapshot can read them while a driver
/// records.
struct Recorder {
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Recorder {
    fn new() -> Recorder {
        Recorder {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }

    /// Records `ns`, on the one thread that writes this recorder: plain
    /// loads and stores.
    #[inline]
    fn record_owned(&self, ns: u64) {
        let count = &self.counts[bucket(ns)];
        count.store(count.load(Relaxed) + 1, Relaxed);
        self.sum
            .store(self.sum.load(Relaxed).wrapping_add(ns), Relaxed);
        if ns < self.min.load(Relaxed) {
            self.min.store(ns, Relaxed);
        }
        if ns > self.max.load(Relaxed) {
            self.max.store(ns, Relaxed);
        }
    }

    /// Records `ns` from any thread.
    fn record_shared(&self, ns: u64) {
        self.counts[bucket(ns)].fetch_add(1, Relaxed);
        self.sum.fetch_add(ns, Relaxed);
        self.min.fetch_min(ns, Relaxed);
        self.max.fetch_max(ns, Relaxed);
    }

    fn snapshot(&self) -> Histogram {
        let counts = self.counts.iter().map(|c| c.load(Relaxed)).collect();
        Histogram::from_parts(
            counts,
            self.sum.load(Relaxed),
            self.min.load(Relaxed),
            self.max.load(Relaxed),
        )
    }
}

/// The lateness and run times one thread records: a driver thread, or a
/// guest (see [`GUEST_SHARDS`]); or, for the scheduler's common shard,
/// every other thread.
#[repr(align(128))]
struct Shard {
    lateness: Recorder,
    run_time: Recorder,
}

impl Shard {
    fn new() -> Shard {
        Shard {
            lateness: Recorder::new(),
            run_time: Recorder::new(),
        }
    }

    /// Records a run, on the one thread that writes this shard.
    #[inline]
    fn record_owned(&self, lateness: u64, run: u64) {
        self.lateness.record_owned(lateness);
        self.run_time.record_owned(run);
    }
}

thread_local! {
    /// A driver thread's shard, and whose (its observer's number).
    static DRIVER: OnceCell<(u64, Arc<Shard>)> = const { OnceCell::new() };
    /// Another thread's shards, by observer, newest last; `None` where the
    /// observer had none left to give.
    static GUEST: RefCell<Vec<(u64, Option<Arc<Shard>>)>> = const { RefCell::new(Vec::new()) };
}

/// The figures of one name (or of the names past [`MAX_NAMES`]).
pub(crate) struct Named {
    name: Option<Arc<str>>,
    fired: AtomicU64,
    panicked: AtomicU64,
    skipped: AtomicU64,
    rejected: AtomicU64,
    figures: Shard,
    series: export::Series,
}

impl Named {
    fn new(scheduler: &str, name: Option<Arc<str>>) -> Named {
        let series = export::Series::new(scheduler, Some(name.as_deref().unwrap_or(OTHER)));
        Named {
            name,
            fired: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            figures: Shard::new(),
            series,
        }
    }

    fn snapshot(&self) -> NamedMetrics {
        NamedMetrics {
            name: self.name.clone(),
            fired: self.fired.load(Relaxed),
            panicked: self.panicked.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            rejected: self.rejected.load(Relaxed),
            lateness: self.figures.lateness.snapshot(),
            run_time: self.figures.run_time.snapshot(),
        }
    }
}

#[derive(Default)]
struct Names {
    index: HashMap<Arc<str>, usize>,
    list: Vec<Arc<Named>>,
    /// The names past `MAX_NAMES`.
    other: Option<Arc<Named>>,
}

/// What a scheduler records about itself beyond the driver's counters:
/// see the [module docs](self).
pub(crate) struct Observer {
    /// The scheduler's name in the facades (its thread name).
    label: Arc<str>,
    /// Its number (see [`OBSERVERS`]).
    id: u64,
    /// One per driver thread and per guest thread, in the order they came.
    shards: Mutex<Vec<Arc<Shard>>>,
    /// Guest shards given out (see [`GUEST_SHARDS`]).
    guests: AtomicUsize,
    /// Every other thread's runs.
    common: Shard,
    rejected: AtomicU64,
    names: Mutex<Names>,
    /// The unnamed tasks' series.
    series: export::Series,
    gauges: export::Gauges,
}

impl Observer {
    pub(crate) fn new(label: &str) -> Observer {
        export::describe();
        Observer {
            label: label.into(),
            id: OBSERVERS.fetch_add(1, Relaxed),
            shards: Mutex::new(Vec::new()),
            guests: AtomicUsize::new(0),
            common: Shard::new(),
            rejected: AtomicU64::new(0),
            names: Mutex::new(Names::default()),
            series: export::Series::new(label, None),
            gauges: export::Gauges::new(label),
        }
    }

    /// Called first on each driver thread: gives it a shard of its own.
    pub(crate) fn attach_driver_thread(&self) {
        let shard = Arc::new(Shard::new());
        let fresh = DRIVER
            .try_with(|d| d.set((self.id, shard.clone())).is_ok())
            .unwrap_or(false);
        if fresh {
            lock(&self.shards).push(shard);
        }
    }

    /// Records a run's lateness and run time (ns) in this thread's shard,
    /// or, if it has none, in the common one.
    #[inline]
    fn record(&self, lateness: u64, run: u64) {
        let me = self.id;
        let owned = DRIVER
            .try_with(|d| match d.get() {
                Some((owner, shard)) if *owner == me => {
                    shard.record_owned(lateness, run);
                    true
                }
                _ => false,
            })
            .unwrap_or(false);
        if !owned && !self.record_as_guest(lateness, run) {
            self.common.lateness.record_shared(lateness);
            self.common.run_time.record_shared(run);
        }
    }

    /// Records a run in this thread's guest shard, taking one if it has
    /// none yet (or the oldest's place); false if the observer had none
    /// to give.
    fn record_as_guest(&self, lateness: u64, run: u64) -> bool {
        GUEST
            .try_with(|guest| {
                let Ok(mut guest) = guest.try_borrow_mut() else {
                    return false;
                };
                let i = match guest.iter().position(|(id, _)| *id == self.id) {
                    Some(i) => i,
                    None => {
                        if guest.len() == GUESTS_PER_THREAD {
                            guest.remove(0);
                        }
                        guest.push((self.id, self.guest_shard()));
                        guest.len() - 1
                    }
                };
                // Only this thread writes it: it is dropped, never handed
                // on, when the thread lets it go.
                let Some(shard) = &guest[i].1 else {
                    return false;
                };
                shard.record_owned(lateness, run);
                true
            })
            .unwrap_or(false)
    }

    /// A shard of its own for a thread other than a driver, while there are
    /// some left to give.
    fn guest_shard(&self) -> Option<Arc<Shard>> {
        if self.guests.fetch_add(1, Relaxed) >= GUEST_SHARDS {
            return None;
        }
        let shard = Arc::new(Shard::new());
        lock(&self.shards).push(shard.clone());
        Some(shard)
    }

    /// The figures of `name`.
    fn named(&self, name: &Arc<str>) -> Arc<Named> {
        let mut names = lock(&self.names);
        if let Some(&i) = names.index.get(name) {
            return names.list[i].clone();
        }
        if names.list.len() < MAX_NAMES {
            let named = Arc::new(Named::new(&self.label, Some(name.clone())));
            let i = names.list.len();
            names.list.push(named.clone());
            names.index.insert(name.clone(), i);
            return named;
        }
        let label = &self.label;
        names
            .other
            .get_or_insert_with(|| Arc::new(Named::new(label, None)))
            .clone()
    }

    /// A run starts, `lateness` ns after its deadline (`None`: the
    /// scheduler does not time its runs): with `tracing`, its span is
    /// entered until [`Run::end`].
    #[inline]
    pub(crate) fn start_run(&self, name: Option<&Arc<str>>, lateness: Option<u64>) -> Run<'_> {
        let named = name.map(|name| self.named(name));
        let span = trace::Span::enter(&self.label, name.map(|n| &**n), lateness);
        Run {
            observer: self,
            named,
            lateness,
            span,
        }
    }

    /// A periodic task passed over `n` runs (its missed-run policy).
    pub(crate) fn skipped(&self, name: Option<&Arc<str>>, n: u64) {
        if n == 0 {
            return;
        }
        match name.map(|name| self.named(name)) {
            Some(named) => {
                named.skipped.fetch_add(n, Relaxed);
                named.series.skipped(n);
            }
            None => self.series.skipped(n),
        }
    }

    /// `submit` refused a task (named `name`, if it is) with `error`.
    pub(crate) fn rejected(&self, name: Option<&str>, error: &Error) {
        self.rejected.fetch_add(1, Relaxed);
        trace::rejected(&self.label, name, error);
        match name.map(|name| self.named(&Arc::from(name))) {
            Some(named) => {
                named.rejected.fetch_add(1, Relaxed);
                named.series.rejected();
            }
            None => self.series.rejected(),
        }
    }

    /// A driver thread woke from a wait.
    #[inline]
    pub(crate) fn wakeup(&self) {
        self.gauges.wakeup();
    }

    /// Fills in what the observer holds: rejections, the histograms, the
    /// named figures. Publishes the state-like figures (`pending`,
    /// cancels) to the `metrics` facade.
    pub(crate) fn complete(&self, metrics: &mut Metrics) {
        metrics.rejected = self.rejected.load(Relaxed);
        let mut lateness = self.common.lateness.snapshot();
        let mut run_time = self.common.run_time.snapshot();
        for shard in lock(&self.shards).iter() {
            lateness.merge(&shard.lateness.snapshot());
            run_time.merge(&shard.run_time.snapshot());
        }
        metrics.lateness = lateness;
        metrics.run_time = run_time;
        let names: Vec<Arc<Named>> = {
            let names = lock(&self.names);
            names.list.iter().chain(&names.other).cloned().collect()
        };
        metrics.by_name = names.iter().map(|named| named.snapshot()).collect();
        self.gauges.publish(metrics);
    }
}

/// A run under way (see [`Observer::start_run`]).
pub(crate) struct Run<'a> {
    observer: &'a Observer,
    named: Option<Arc<Named>>,
    lateness: Option<u64>,
    span: trace::Span,
}

impl Run<'_> {
    /// The run panicked with `error` (reported to `tracing` inside the
    /// run's span).
    pub(crate) fn panicked(&self, error: &Error) {
        let name = self.named.as_ref().and_then(|n| n.name.as_deref());
        self.span.panicked(&self.observer.label, name, error);
    }

    /// The run ended after `run` ns (`None`: untimed), panicked or not:
    /// records it.
    #[inline]
    pub(crate) fn end(self, run: Option<u64>, panicked: bool) {
        let observer = self.observer;
        let timed = self.lateness.zip(run);
        if let Some((lateness, run)) = timed {
            observer.record(lateness, run);
        }
        match &self.named {
            Some(named) => {
                named.fired.fetch_add(1, Relaxed);
                named.panicked.fetch_add(u64::from(panicked), Relaxed);
                if let Some((lateness, run)) = timed {
                    named.figures.lateness.record_shared(lateness);
                    named.figures.run_time.record_shared(run);
                }
                named.series.run(timed, panicked);
            }
            None => observer.series.run(timed, panicked),
        }
        self.span.end(run, panicked);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A driver thread's records and other threads' meet in one snapshot,
    /// and each thread's recorder is its own.
    #[test]
    fn shards_and_the_common_recorder_merge_into_one_snapshot() {
        let observer = Arc::new(Observer::new("test"));
        let o = observer.clone();
        std::thread::spawn(move || {
            o.attach_driver_thread();
            for ns in [10, 20, 30] {
                o.start_run(None, Some(ns)).end(Some(ns * 2), false);
            }
        })
        .join()
        .unwrap();
        // Not a driver thread: a guest shard.
        let name: Arc<str> = "named".into();
        observer
            .start_run(Some(&name), Some(1_000))
            .end(Some(5), true);
        let mut m = Metrics::default();
        observer.complete(&mut m);
        assert_eq!(lock(&observer.shards).len(), 2);
        assert_eq!(m.lateness.count(), 4);
        assert_eq!(m.lateness.sum().as_nanos(), 1_060);
        assert_eq!(m.run_time.max().unwrap().as_nanos(), 60);
        assert_eq!(m.run_time.min().unwrap().as_nanos(), 5);
        assert_eq!(m.by_name.len(), 1);
        let named = &m.by_name[0];
        assert_eq!((named.fired, named.panicked), (1, 1));
        assert_eq!(named.lateness.max().unwrap().as_nanos(), 1_000);
    }

    /// Threads past [`GUEST_SHARDS`] record in the common shard, and a
    /// thread that runs tasks for more schedulers than it keeps shards for
    /// takes new ones: no run goes unrecorded either way.
    #[test]
    fn guests_past_the_limits_lose_no_run() {
        let observers: Vec<Arc<Observer>> = (0..GUESTS_PER_THREAD + 1)
            .map(|_| Arc::new(Observer::new("test")))
            .collect();
        let threads = GUEST_SHARDS + 3;
        std::thread::scope(|s| {
            for t in 0..threads as u64 {
                let observers = &observers;
                s.spawn(move || {
                    // Round robin: each observer's turn evicts its shard
                    // from this thread's list before its next.
                    for round in 0..3 {
                        for o in observers {
                            o.start_run(None, Some(t)).end(Some(round), false);
                        }
                    }
                });
            }
        });
        for o in &observers {
            let mut m = Metrics::default();
            o.complete(&mut m);
            assert_eq!(m.lateness.count(), 3 * threads as u64);
            assert_eq!(m.run_time.sum().as_nanos(), threads as u128 * 3);
            assert_eq!(lock(&o.shards).len(), GUEST_SHARDS);
        }
    }

    #[test]
    fn names_past_the_limit_share_one_entry_without_a_name() {
        let observer = Observer::new("test");
        for i in 0..MAX_NAMES + 3 {
            let name: Arc<str> = format!("job-{i}").into();
            observer.start_run(Some(&name), Some(0)).end(Some(0), false);
        }
        let mut m = Metrics::default();
        observer.complete(&mut m);
        assert_eq!(m.by_name.len(), MAX_NAMES + 1);
        let other = m.by_name.last().unwrap();
        assert_eq!((other.name.as_deref(), other.fired), (None, 3));
        assert_eq!(m.lateness.count(), MAX_NAMES as u64 + 3);
    }
}
