//! The record format: what a run measured, as written to `results.json`.
//!
//! `results.json` is the source of truth of a report: the HTML page and its
//! charts are rendered from it alone (`workbench report results.json`).
//!
//! A runner (an in-process scheduler or peer, or a child process such as the
//! Java harness) returns [`Measurement`]s for one (subject, workload,
//! repeat); the suite groups the repeats into [`Record`]s (median value,
//! every sample, spread) and stamps each with the run's [`Environment`] and
//! the workload's seed. A child process speaks the same format: it reads the
//! workload as JSON (`serde_json` of [`crate::spec::Workload`], durations as
//! `"<n>ns"` strings) and prints one JSON array of [`Measurement`]s.
//!
//! ```json
//! {"metric": "schedule", "value": 61.2, "unit": "ns/op", "size": null}
//! ```

use serde::{Deserialize, Serialize};

/// Bumped when the format changes incompatibly.
pub const FORMAT: u32 = 1;

/// One measured figure from one repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// What was measured: one of the names in [`metric`].
    pub metric: String,
    /// The figure.
    pub value: f64,
    /// Its unit: one of the names in [`unit`](mod@unit).
    pub unit: String,
    /// The pending count it was measured at (sweeps), else `None`.
    #[serde(default)]
    pub size: Option<u64>,
}

impl Measurement {
    /// A measurement without a size.
    pub fn new(metric: &str, value: f64, unit: &str) -> Measurement {
        Measurement {
            metric: metric.to_owned(),
            value,
            unit: unit.to_owned(),
            size: None,
        }
    }

    /// A measurement at a pending count.
    pub fn at(metric: &str, size: u64, value: f64, unit: &str) -> Measurement {
        Measurement {
            size: Some(size),
            ..Measurement::new(metric, value, unit)
        }
    }
}

/// Metric names. Lateness and jitter are in microseconds, costs in ns/op.
pub mod metric {
    /// Cost of scheduling one timer, ns/op (timing overhead subtracted).
    pub const SCHEDULE: &str = "schedule";
    /// Cost of one successful or failed cancel, ns/op.
    pub const CANCEL: &str = "cancel";
    /// Cost of one reset (move), ns/op.
    pub const RESET: &str = "reset";
    /// One-shot fires per second of the firing phase (first to last fire).
    pub const FIRES_PER_S: &str = "fires_per_s";
    /// One-shot timers that fired.
    pub const FIRED: &str = "fired";
    /// Runs of periodic timers.
    pub const RUNS: &str = "runs";
    /// Timers that should have fired but had not by the end of the grace
    /// period: a correct scheduler has 0.
    pub const MISSED: &str = "missed";
    /// Cancels that came too late (the timer had fired).
    pub const CANCEL_LATE: &str = "cancel_late";
    /// Lateness percentiles: fire time − deadline, µs.
    pub const LATENESS: [&str; 5] = [
        "lateness_p50",
        "lateness_p90",
        "lateness_p99",
        "lateness_p99.9",
        "lateness_max",
    ];
    /// CPU time of the whole process during the run, ms.
    pub const CPU: &str = "cpu";
    /// CPU time of the process minus the thread that drives the workload:
    /// what the scheduler's own threads burned, ms.
    pub const CPU_BACKGROUND: &str = "cpu_background";
    /// Resident memory per pending timer, bytes.
    pub const MEMORY: &str = "memory";
    /// Periodic start jitter percentiles, µs: for fixed-rate, each start
    /// minus its ideal grid point; for fixed-delay, each interval minus the
    /// period.
    pub const JITTER: [&str; 4] = ["jitter_p50", "jitter_p99", "jitter_p99.9", "jitter_max"];
    /// Periodic drift: mean over tasks of how far the last run has fallen
    /// behind the nominal schedule (start + k·period), ms.
    pub const DRIFT: &str = "drift";
    /// Periodic runs counted, as a fraction of the nominal count.
    pub const RUNS_RATIO: &str = "runs_ratio";
    /// The measured cost of reading the clock twice around an empty
    /// operation, ns: subtracted from every per-op cost, and reported.
    pub const TIMING_OVERHEAD: &str = "timing_overhead";

    /// True if a lower value is better (false for throughput-like metrics).
    pub fn lower_is_better(metric: &str) -> bool {
        !matches!(metric, FIRES_PER_S | FIRED | RUNS | RUNS_RATIO)
    }
}

/// Unit names.
pub mod unit {
    /// Nanoseconds per operation.
    pub const NS_OP: &str = "ns/op";
    /// Microseconds.
    pub const US: &str = "µs";
    /// Milliseconds.
    pub const MS: &str = "ms";
    /// Nanoseconds.
    pub const NS: &str = "ns";
    /// Bytes per pending timer.
    pub const BYTES: &str = "B/timer";
    /// Fires per second.
    pub const PER_S: &str = "fires/s";
    /// A plain count.
    pub const COUNT: &str = "count";
    /// A ratio (1 = as expected).
    pub const RATIO: &str = "ratio";
}

/// One figure of one (scheduler, workload): the median over repeats, with
/// every sample, the run's environment and the workload's seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The subject: a scheduler of this crate or a peer.
    pub scheduler: String,
    /// The workload's name.
    pub workload: String,
    /// What was measured (see [`metric`]).
    pub metric: String,
    /// The median over repeats.
    pub value: f64,
    /// The unit (see [`unit`](mod@unit)).
    pub unit: String,
    /// The pending count, for sweeps.
    #[serde(default)]
    pub size: Option<u64>,
    /// Every repeat's value.
    pub samples: Vec<f64>,
    /// (max − min) / median over the repeats; 0 for one repeat.
    pub spread: f64,
    /// The workload's seed.
    pub seed: u64,
    /// Where and when it ran.
    pub env: Environment,
}

/// Where and when a run happened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// CPU model name.
    pub cpu: String,
    /// Logical cores available.
    pub cores: usize,
    /// `rustc --version` of the toolchain.
    pub rustc: String,
    /// `git rev-parse --short HEAD`, with `-dirty` for uncommitted changes.
    pub commit: String,
    /// UTC date and time the run started (`2026-01-31T12:00:00Z`).
    pub date: String,
    /// Operating system and kernel.
    pub os: String,
    /// The run's profile: `quick`, `full` or `custom`.
    pub profile: String,
}

/// Whether a subject is one of this crate's algorithms or a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubjectKind {
    /// A scheduler of the `schedulers` crate.
    Algorithm,
    /// Another implementation, measured for comparison.
    Peer,
}

/// A subject as the report names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectInfo {
    /// Short name (`heap`, `tokio-sleep`).
    pub name: String,
    /// Algorithm or peer.
    pub kind: SubjectKind,
    /// One line: what it is and how the runner drives it.
    pub about: String,
}

/// A workload as the report describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// The workload's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The real situation it models.
    pub models: String,
    /// Its seed.
    pub seed: u64,
    /// The effective parameters, one line per group.
    pub summary: Vec<String>,
    /// Whether it is a sweep over pending counts.
    pub sweep: bool,
}

/// The whole of `results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// [`FORMAT`].
    pub format: u32,
    /// The run's id (also its directory name).
    pub run_id: String,
    /// Where and when.
    pub env: Environment,
    /// Repeats per (subject, workload).
    pub repeats: usize,
    /// Wall-clock seconds the whole run took.
    pub wall_seconds: f64,
    /// Measured cost of the timing loop around one operation, ns: already
    /// subtracted from every per-operation cost of a timeline workload.
    #[serde(default)]
    pub timing_overhead_ns: f64,
    /// The subjects measured, in order.
    pub subjects: Vec<SubjectInfo>,
    /// The workloads run, in order.
    pub workloads: Vec<WorkloadInfo>,
    /// Every figure.
    pub records: Vec<Record>,
    /// Things the reader should know: skipped peers, failures, scaling.
    pub notes: Vec<String>,
}

impl Results {
    /// The record for (subject, workload, metric, size), if any.
    pub fn get(
        &self,
        subject: &str,
        workload: &str,
        metric: &str,
        size: Option<u64>,
    ) -> Option<&Record> {
        self.records.iter().find(|r| {
            r.scheduler == subject && r.workload == workload && r.metric == metric && r.size == size
        })
    }

    /// Whether the subject is a peer.
    pub fn is_peer(&self, subject: &str) -> bool {
        self.subjects
            .iter()
            .any(|s| s.name == subject && s.kind == SubjectKind::Peer)
    }

    /// The best value among the peers for (workload, metric, size): lowest,
    /// or highest for throughput-like metrics.
    pub fn best_peer(&self, workload: &str, metric: &str, size: Option<u64>) -> Option<f64> {
        let values = self
            .records
            .iter()
            .filter(|r| {
                r.workload == workload
                    && r.metric == metric
                    && r.size == size
                    && self.is_peer(&r.scheduler)
            })
            .map(|r| r.value);
        if metric::lower_is_better(metric) {
            values.reduce(f64::min)
        } else {
            values.reduce(f64::max)
        }
    }

    /// Median spread over every record with more than one sample: how noisy
    /// the machine was.
    pub fn median_spread(&self) -> Option<f64> {
        let mut s: Vec<f64> = self
            .records
            .iter()
            .filter(|r| r.samples.len() > 1)
            .map(|r| r.spread)
            .collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        Some(s[s.len() / 2])
    }
}

/// Combines one metric's samples (one per repeat) into (median, spread).
pub fn summarize(samples: &[f64]) -> (f64, f64) {
    let mut s: Vec<f64> = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return (f64::NAN, 0.0);
    }
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    let spread = if n > 1 && median.abs() > f64::EPSILON {
        (s[n - 1] - s[0]) / median.abs()
    } else {
        0.0
    };
    (median, spread)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn summarize_takes_median_and_relative_range() {
        assert_eq!(summarize(&[3.0, 1.0, 2.0]), (2.0, 1.0));
        assert_eq!(summarize(&[4.0, 2.0]), (3.0, 2.0 / 3.0));
        assert_eq!(summarize(&[5.0]), (5.0, 0.0));
    }

    fn record(subject: &str, metric: &str, value: f64) -> Record {
        Record {
            scheduler: subject.into(),
            workload: "w".into(),
            metric: metric.into(),
            value,
            unit: unit::NS_OP.into(),
            size: None,
            samples: vec![value],
            spread: 0.0,
            seed: 1,
            env: Environment::default(),
        }
    }

    #[test]
    fn the_best_peer_is_the_lowest_cost_and_the_highest_throughput() {
        let subject = |name: &str, kind| SubjectInfo {
            name: name.into(),
            kind,
            about: String::new(),
        };
        let r = Results {
            format: FORMAT,
            run_id: "t".into(),
            env: Environment::default(),
            repeats: 1,
            wall_seconds: 0.0,
            timing_overhead_ns: 0.0,
            subjects: vec![
                subject("ours", SubjectKind::Algorithm),
                subject("p1", SubjectKind::Peer),
                subject("p2", SubjectKind::Peer),
            ],
            workloads: vec![],
            records: vec![
                record("ours", metric::SCHEDULE, 10.0),
                record("p1", metric::SCHEDULE, 40.0),
                record("p2", metric::SCHEDULE, 20.0),
                record("ours", metric::FIRES_PER_S, 5.0),
                record("p1", metric::FIRES_PER_S, 7.0),
                record("p2", metric::FIRES_PER_S, 3.0),
            ],
            notes: vec![],
        };
        // Our own algorithm never counts as the best peer.
        assert_eq!(r.best_peer("w", metric::SCHEDULE, None), Some(20.0));
        assert_eq!(r.best_peer("w", metric::FIRES_PER_S, None), Some(7.0));
        assert_eq!(r.best_peer("w", metric::CANCEL, None), None);
        assert_eq!(
            r.get("p1", "w", metric::SCHEDULE, None).map(|x| x.value),
            Some(40.0)
        );
    }

    #[test]
    fn measurements_round_trip_through_json() {
        let m = vec![
            Measurement::new(metric::SCHEDULE, 61.5, unit::NS_OP),
            Measurement::at(metric::MEMORY, 1000, 80.0, unit::BYTES),
        ];
        let text = serde_json::to_string(&m).unwrap();
        let back: Vec<Measurement> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        // A child process may leave `size` out.
        let m: Measurement =
            serde_json::from_str(r#"{"metric":"cancel","value":1,"unit":"ns/op"}"#).unwrap();
        assert_eq!(m.size, None);
    }
}
