//! The `metrics` facade: the series of one scheduler (see the
//! [module docs](super) for the names).

use metrics::{Counter, Gauge, Histogram, Unit};

use super::{CANCELLED, LATENESS, PANICS, PENDING, REJECTED, RUNS, RUN_TIME, SKIPPED, WAKEUPS};
use crate::metrics::Metrics;

/// Nanoseconds as the facade's seconds.
fn seconds(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

/// Describes every series to the installed recorder (units, help texts).
pub(super) fn describe() {
    metrics::describe_counter!(RUNS, Unit::Count, "Runs started");
    metrics::describe_histogram!(LATENESS, Unit::Seconds, "Start minus deadline, per run");
    metrics::describe_histogram!(RUN_TIME, Unit::Seconds, "Duration of each run");
    metrics::describe_counter!(PANICS, Unit::Count, "Runs that panicked");
    metrics::describe_counter!(
        SKIPPED,
        Unit::Count,
        "Runs passed over by a missed-run policy"
    );
    metrics::describe_counter!(REJECTED, Unit::Count, "Tasks refused by submit");
    metrics::describe_counter!(WAKEUPS, Unit::Count, "Driver wake-ups");
    metrics::describe_counter!(CANCELLED, Unit::Count, "Successful cancels");
    metrics::describe_gauge!(PENDING, Unit::Count, "Tasks waiting, by kind");
}

/// The per-run series of a scheduler's unnamed tasks, or of one name.
pub(super) struct Series {
    runs: Counter,
    lateness: Histogram,
    run_time: Histogram,
    panics: Counter,
    skipped: Counter,
    rejected: Counter,
}

impl Series {
    pub(super) fn new(scheduler: &str, task: Option<&str>) -> Series {
        let scheduler = scheduler.to_owned();
        match task {
            None => Series {
                runs: metrics::counter!(RUNS, "scheduler" => scheduler.clone()),
                lateness: metrics::histogram!(LATENESS, "scheduler" => scheduler.clone()),
                run_time: metrics::histogram!(RUN_TIME, "scheduler" => scheduler.clone()),
                panics: metrics::counter!(PANICS, "scheduler" => scheduler.clone()),
                skipped: metrics::counter!(SKIPPED, "scheduler" => scheduler.clone()),
                rejected: metrics::counter!(REJECTED, "scheduler" => scheduler),
            },
            Some(task) => {
                let labels = [("scheduler", scheduler), ("task", task.to_owned())];
                Series {
                    runs: metrics::counter!(RUNS, &labels),
                    lateness: metrics::histogram!(LATENESS, &labels),
                    run_time: metrics::histogram!(RUN_TIME, &labels),
                    panics: metrics::counter!(PANICS, &labels),
                    skipped: metrics::counter!(SKIPPED, &labels),
                    rejected: metrics::counter!(REJECTED, &labels),
                }
            }
        }
    }

    #[inline]
    pub(super) fn run(&self, lateness: u64, run: u64, panicked: bool) {
        self.runs.increment(1);
        self.lateness.record(seconds(lateness));
        self.run_time.record(seconds(run));
        if panicked {
            self.panics.increment(1);
        }
    }

    pub(super) fn skipped(&self, n: u64) {
        self.skipped.increment(n);
    }

    pub(super) fn rejected(&self) {
        self.rejected.increment(1);
    }
}

/// A scheduler's series that no run carries: wake-ups, cancels, pending.
pub(super) struct Gauges {
    wakeups: Counter,
    cancelled: Counter,
    /// One-shot, periodic, calendar.
    pending: [Gauge; 3],
}

impl Gauges {
    pub(super) fn new(scheduler: &str) -> Gauges {
        let s = scheduler.to_owned();
        let pending =
            |kind: &'static str| metrics::gauge!(PENDING, "scheduler" => s.clone(), "kind" => kind);
        Gauges {
            wakeups: metrics::counter!(WAKEUPS, "scheduler" => s.clone()),
            cancelled: metrics::counter!(CANCELLED, "scheduler" => s.clone()),
            pending: [
                pending("one_shot"),
                pending("periodic"),
                pending("calendar"),
            ],
        }
    }

    #[inline]
    pub(super) fn wakeup(&self) {
        self.wakeups.increment(1);
    }

    /// Publishes the state-like figures of a snapshot.
    pub(super) fn publish(&self, m: &Metrics) {
        self.cancelled.absolute(m.cancelled);
        let kinds = &m.pending_by_kind;
        for (gauge, n) in self
            .pending
            .iter()
            .zip([kinds.one_shot, kinds.periodic, kinds.calendar])
        {
            gauge.set(n as f64);
        }
    }
}
