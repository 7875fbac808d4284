//! What a worker knows about itself: [`WorkerMetrics`], the same figures as
//! an in-process scheduler's ([`schedulers::Metrics`]) where they fit, by
//! job kind; and the same facades (`metrics`, `tracing`), under the same
//! names (see [`schedulers::observe`]).
//!
//! A durable job's name is its **kind**: every job has one, it names the
//! handler, and a deployment has a handful of them, as a metric label
//! wants. So the figures of a kind are those of its name, and the `task`
//! label of a series is the kind.
//!
//! Lateness is on Redis's clock: the fire's due time to its start, that is
//! its first claim's Redis time (`TIME`, in whole milliseconds: it may read
//! up to 1 ms early) plus the time the job waited in the worker's buffer
//! (measured locally). Run time is the handler's, measured locally.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers::{Histogram, NamedMetrics, MAX_NAMES};

/// Counter (`metrics` feature): handler runs that returned an error.
pub const FAILURES: &str = "schedulers_failures_total";
/// Counter (`metrics` feature): leases this worker lost (another worker may
/// run the fire).
pub const LEASES_LOST: &str = "schedulers_leases_lost_total";

/// A worker's figures at one moment, from [`Worker::metrics`](crate::Worker::metrics).
///
/// # Examples
///
/// ```no_run
/// use schedulers_redis::{Config, Worker};
///
/// let worker = Worker::builder("redis://127.0.0.1:6379/", Config::default())
///     .handler("email", |_| Ok(()))
///     .start()?;
/// let m = worker.metrics();
/// println!("{} runs, lateness p99 {:?}", m.fired, m.lateness.quantile(0.99));
/// # Ok::<(), schedulers_redis::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerMetrics {
    /// Handler runs started.
    pub fired: u64,
    /// Runs whose handler returned an error (retried, or dead-lettered).
    pub failed: u64,
    /// Runs whose handler panicked (counted as failures too).
    pub panicked: u64,
    /// Fire times of periodic jobs passed over by their missed-run policy.
    pub skipped: u64,
    /// Leases this worker lost (refused extensions or acks).
    pub leases_lost: u64,
    /// Times the claimer woke from a wait (for a due time, a wake-up
    /// message, room in its buffer, or its periodic look).
    pub wakeups: u64,
    /// Each run's lateness: its start minus its fire's due time, on Redis's
    /// clock (its first claim's `TIME`, in whole milliseconds, so up to
    /// 1 ms early, plus the time the job waited in the worker's buffer).
    pub lateness: Histogram,
    /// Each handler run's duration.
    pub run_time: Histogram,
    /// The same by job kind, in the order the kinds first ran; `rejected`
    /// is always 0 here (a producer's refusals are its own).
    pub by_kind: Vec<NamedMetrics>,
}

/// The figures of one kind (or of the kinds past [`MAX_NAMES`]).
struct Kind {
    name: Option<Arc<str>>,
    fired: AtomicU64,
    failed: AtomicU64,
    panicked: AtomicU64,
    skipped: AtomicU64,
    /// Handler threads record under this lock: a job costs far more.
    histograms: Mutex<(Histogram, Histogram)>,
    series: export::Series,
}

impl Kind {
    fn new(worker: &str, name: Option<Arc<str>>) -> Kind {
        let series = export::Series::new(
            worker,
            name.as_deref().unwrap_or(schedulers::observe::OTHER),
        );
        Kind {
            name,
            fired: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            histograms: Mutex::new((Histogram::new(), Histogram::new())),
            series,
        }
    }
}

/// How a handler run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    Failed,
    Panicked,
}

/// The kinds seen so far, in order, and the entry of those past
/// [`MAX_NAMES`].
#[derive(Default)]
struct Kinds {
    index: HashMap<Arc<str>, Arc<Kind>>,
    list: Vec<Arc<Kind>>,
    other: Option<Arc<Kind>>,
}

/// A worker's figures, recorded by its threads.
pub(crate) struct Figures {
    worker: Arc<str>,
    kinds: Mutex<Kinds>,
    leases_lost: AtomicU64,
    wakeups: AtomicU64,
    series: export::Worker,
}

impl Figures {
    pub(crate) fn new(worker: &str) -> Figures {
        Figures {
            worker: worker.into(),
            kinds: Mutex::new(Kinds::default()),
            leases_lost: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            series: export::Worker::new(worker),
        }
    }

    fn kind(&self, kind: &str) -> Arc<Kind> {
        let mut kinds = self.kinds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = kinds.index.get(kind) {
            return k.clone();
        }
        if kinds.list.len() < MAX_NAMES {
            let name: Arc<str> = kind.into();
            let k = Arc::new(Kind::new(&self.worker, Some(name.clone())));
            kinds.index.insert(name, k.clone());
            kinds.list.push(k.clone());
            return k;
        }
        let worker = &self.worker;
        kinds
            .other
            .get_or_insert_with(|| Arc::new(Kind::new(worker, None)))
            .clone()
    }

    /// A handler run of a job of `kind` (id `id`) starts, `lateness` after
    /// its due time: with `tracing`, its span is entered until
    /// [`Run::end`].
    pub(crate) fn start_run(&self, kind: &str, id: &str, lateness: Duration) -> Run {
        let span = export::Span::enter(&self.worker, kind, id, lateness);
        Run {
            kind: self.kind(kind),
            lateness,
            span,
        }
    }

    /// A periodic job of `kind` passed over `n` fire times.
    pub(crate) fn skipped(&self, kind: &str, n: u64) {
        let k = self.kind(kind);
        k.skipped.fetch_add(n, Relaxed);
        k.series.skipped(n);
    }

    /// This worker lost a lease.
    pub(crate) fn lease_lost(&self) {
        self.leases_lost.fetch_add(1, Relaxed);
        self.series.lease_lost();
    }

    /// The claimer woke from a wait.
    pub(crate) fn wakeup(&self) {
        self.wakeups.fetch_add(1, Relaxed);
        self.series.wakeup();
    }

    pub(crate) fn snapshot(&self) -> WorkerMetrics {
        let kinds: Vec<Arc<Kind>> = {
            let kinds = self.kinds.lock().unwrap_or_else(|p| p.into_inner());
            kinds.list.iter().chain(&kinds.other).cloned().collect()
        };
        let mut m = WorkerMetrics {
            leases_lost: self.leases_lost.load(Relaxed),
            wakeups: self.wakeups.load(Relaxed),
            ..WorkerMetrics::default()
        };
        for k in kinds {
            let (lateness, run_time) = k
                .histograms
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let mut named = NamedMetrics::default();
            named.name = k.name.clone();
            named.fired = k.fired.load(Relaxed);
            named.panicked = k.panicked.load(Relaxed);
            named.skipped = k.skipped.load(Relaxed);
            named.lateness = lateness;
            named.run_time = run_time;
            m.fired += named.fired;
            m.failed += k.failed.load(Relaxed);
            m.panicked += named.panicked;
            m.skipped += named.skipped;
            m.lateness.merge(&named.lateness);
            m.run_time.merge(&named.run_time);
            m.by_kind.push(named);
        }
        m
    }
}

/// A handler run under way (see [`Figures::start_run`]).
pub(crate) struct Run {
    kind: Arc<Kind>,
    lateness: Duration,
    span: export::Span,
}

impl Run {
    /// The run ended after `run_time`, as `outcome` says (`error`: the
    /// failure's text).
    pub(crate) fn end(self, run_time: Duration, outcome: Outcome, error: Option<&str>) {
        let k = &self.kind;
        k.fired.fetch_add(1, Relaxed);
        match outcome {
            Outcome::Ok => {}
            Outcome::Failed => {
                k.failed.fetch_add(1, Relaxed);
            }
            Outcome::Panicked => {
                k.failed.fetch_add(1, Relaxed);
                k.panicked.fetch_add(1, Relaxed);
            }
        }
        {
            let mut h = k.histograms.lock().unwrap_or_else(|p| p.into_inner());
            h.0.record(self.lateness);
            h.1.record(run_time);
        }
        k.series.run(self.lateness, run_time, outcome);
        self.span.end(run_time, outcome, error);
    }
}

#[cfg(feature = "metrics")]
mod export {
    //! The `metrics` facade: the series of one worker.

    use std::time::Duration;

    use metrics::{Counter, Histogram, Unit};
    use schedulers::observe::{LATENESS, PANICS, RUNS, RUN_TIME, SKIPPED, WAKEUPS};

    use super::{Outcome, FAILURES, LEASES_LOST};

    pub(super) struct Series {
        runs: Counter,
        lateness: Histogram,
        run_time: Histogram,
        panics: Counter,
        failures: Counter,
        skipped: Counter,
    }

    impl Series {
        pub(super) fn new(worker: &str, kind: &str) -> Series {
            let labels = [("scheduler", worker.to_owned()), ("task", kind.to_owned())];
            Series {
                runs: metrics::counter!(RUNS, &labels),
                lateness: metrics::histogram!(LATENESS, &labels),
                run_time: metrics::histogram!(RUN_TIME, &labels),
                panics: metrics::counter!(PANICS, &labels),
                failures: metrics::counter!(FAILURES, &labels),
                skipped: metrics::counter!(SKIPPED, &labels),
            }
        }

        pub(super) fn run(&self, lateness: Duration, run_time: Duration, outcome: Outcome) {
            self.runs.increment(1);
            self.lateness.record(lateness.as_secs_f64());
            self.run_time.record(run_time.as_secs_f64());
            if outcome != Outcome::Ok {
                self.failures.increment(1);
            }
            if outcome == Outcome::Panicked {
                self.panics.increment(1);
            }
        }

        pub(super) fn skipped(&self, n: u64) {
            self.skipped.increment(n);
        }
    }

    pub(super) struct Worker {
        wakeups: Counter,
        leases_lost: Counter,
    }

    impl Worker {
        pub(super) fn new(worker: &str) -> Worker {
            metrics::describe_counter!(
                FAILURES,
                Unit::Count,
                "Handler runs that returned an error or panicked"
            );
            metrics::describe_counter!(LEASES_LOST, Unit::Count, "Leases a worker lost");
            Worker {
                wakeups: metrics::counter!(WAKEUPS, "scheduler" => worker.to_owned()),
                leases_lost: metrics::counter!(LEASES_LOST, "scheduler" => worker.to_owned()),
            }
        }

        pub(super) fn wakeup(&self) {
            self.wakeups.increment(1);
        }

        pub(super) fn lease_lost(&self) {
            self.leases_lost.increment(1);
        }
    }

    pub(super) use super::trace::Span;
}

#[cfg(not(feature = "metrics"))]
mod export {
    //! Without the `metrics` feature: nothing, at no cost.

    use std::time::Duration;

    use super::Outcome;

    pub(super) struct Series;

    impl Series {
        pub(super) fn new(_: &str, _: &str) -> Series {
            Series
        }

        pub(super) fn run(&self, _: Duration, _: Duration, _: Outcome) {}

        pub(super) fn skipped(&self, _: u64) {}
    }

    pub(super) struct Worker;

    impl Worker {
        pub(super) fn new(_: &str) -> Worker {
            Worker
        }

        pub(super) fn wakeup(&self) {}

        pub(super) fn lease_lost(&self) {}
    }

    pub(super) use super::trace::Span;
}

#[cfg(feature = "tracing")]
mod trace {
    //! The `tracing` facade: a span per handler run (target
    //! `schedulers::run`, as in-process runs), a `WARN` event per panic.

    use std::time::Duration;

    use tracing::field::Empty;

    use super::Outcome;

    pub(crate) struct Span(tracing::span::EnteredSpan);

    impl Span {
        pub(crate) fn enter(worker: &str, kind: &str, id: &str, lateness: Duration) -> Span {
            let span = tracing::debug_span!(
                target: "schedulers::run",
                "run",
                scheduler = worker,
                task = kind,
                job = id,
                lateness_ns = lateness.as_nanos() as u64,
                run_ns = Empty,
                outcome = Empty,
            );
            Span(span.entered())
        }

        pub(crate) fn end(self, run_time: Duration, outcome: Outcome, error: Option<&str>) {
            if outcome == Outcome::Panicked {
                tracing::warn!(target: "schedulers", error, "task panicked");
            }
            let span = self.0;
            span.record("run_ns", run_time.as_nanos() as u64);
            let outcome = match outcome {
                Outcome::Ok => "ok",
                Outcome::Failed => "failed",
                Outcome::Panicked => "panicked",
            };
            span.record("outcome", outcome);
        }
    }

    /// A producer's schedule was refused.
    pub(crate) fn rejected(kind: &str, id: &str, error: &crate::Error) {
        tracing::debug!(target: "schedulers", scheduler = "redis", task = kind, job = id, %error, "task rejected");
    }
}

#[cfg(not(feature = "tracing"))]
mod trace {
    //! Without the `tracing` feature: no spans, no events.

    use std::time::Duration;

    use super::Outcome;

    pub(crate) struct Span;

    impl Span {
        pub(crate) fn enter(_: &str, _: &str, _: &str, _: Duration) -> Span {
            Span
        }

        pub(crate) fn end(self, _: Duration, _: Outcome, _: Option<&str>) {}
    }

    pub(crate) fn rejected(_: &str, _: &str, _: &crate::Error) {}
}

/// A producer's schedule of `job` was refused with `error` (not a failure
/// to reach Redis): counted under [`REJECTED`](schedulers::observe::REJECTED)
/// with the `task` label its kind, and a `DEBUG` event.
pub(crate) fn rejected(job: &crate::Job, error: &crate::Error) {
    use crate::Error as E;
    if !matches!(
        error,
        E::AlreadyScheduled(_)
            | E::Tombstoned(_)
            | E::DelayOverflow
            | E::InvalidSchedule(_)
            | E::Calendar(_)
            | E::PayloadTooLarge { .. }
    ) {
        return;
    }
    trace::rejected(job.kind(), job.id(), error);
    #[cfg(feature = "metrics")]
    metrics::counter!(
        schedulers::observe::REJECTED,
        "scheduler" => "redis",
        "task" => job.kind().to_owned()
    )
    .increment(1);
}
