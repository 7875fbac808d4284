//! The record format: what a run measured, as written to `results.json`.
//!
//! `results.json` is the source of truth of a report: the HTML page and its
//! charts are rendered from it alone (`workbench report results.json`).
//!
//! A runner (an in-process scheduler or peer, or a child process such as the
//! Java harness) returns [`Measurement`]s for one (subject, workload,
//! repeat); the suite groups the repeats into [`Record`]s (median over the
//! clean repeats, every sample, spread, unstable flag), stamps each with the
//! run's [`Environment`] and the workload's seed, and keeps one [`RunInfo`]
//! per repeat (how it went, the load average). A child process speaks the
//! same format: it reads the workload as JSON (`serde_json` of
//! [`crate::spec::Workload`], durations as `"<n>ns"` strings) and prints one
//! JSON array of [`Measurement`]s.
//!
//! ```json
//! {"metric": "schedule_call", "value": 61.2, "size": null}
//! ```

use serde::{Deserialize, Serialize};

pub use crate::metric::{Better, Metric, Unit};

/// Bumped when the format changes incompatibly.
pub const FORMAT: u32 = 2;

/// One measured figure from one repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// What was measured.
    pub metric: Metric,
    /// The figure, in the metric's unit.
    pub value: f64,
    /// The pending count it was measured at (sweeps), else `None`.
    #[serde(default)]
    pub size: Option<u64>,
}

impl Measurement {
    /// A measurement without a size.
    pub fn new(metric: Metric, value: f64) -> Measurement {
        Measurement {
            metric,
            value,
            size: None,
        }
    }

    /// A measurement at a pending count.
    pub fn at(metric: Metric, size: u64, value: f64) -> Measurement {
        Measurement {
            size: Some(size),
            ..Measurement::new(metric, value)
        }
    }
}

/// One repeat's value of a figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Which repeat (0-based).
    pub repeat: usize,
    /// The value.
    pub value: f64,
    /// False when the repeat missed timers: shown, never in the median.
    pub clean: bool,
}

/// A number, or NaN for `null` (how serde_json writes NaN).
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One figure of one (scheduler, workload): the median over clean repeats,
/// with every sample, the run's environment and the workload's seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The subject: a scheduler of this crate or a peer.
    pub scheduler: String,
    /// The workload's name.
    pub workload: String,
    /// What was measured.
    pub metric: Metric,
    /// The metric's unit (written out for readers of the file).
    pub unit: Unit,
    /// The pending count, for sweeps.
    #[serde(default)]
    pub size: Option<u64>,
    /// The median over the clean repeats (NaN if none was clean: JSON has
    /// no NaN, so it is written as `null` and read back as NaN).
    #[serde(deserialize_with = "nan_if_null")]
    pub value: f64,
    /// Every repeat's value, clean or not.
    pub samples: Vec<Sample>,
    /// (max − min) / median over the clean repeats; 0 for one.
    pub spread: f64,
    /// The clean repeats disagree beyond the run's noise (see
    /// [`Results::noise`]): read the figure with care.
    pub unstable: bool,
    /// The workload's seed.
    pub seed: u64,
    /// Where and when it ran.
    pub env: Environment,
}

impl Record {
    /// The clean samples' values.
    pub fn clean_values(&self) -> Vec<f64> {
        self.samples
            .iter()
            .filter(|s| s.clean)
            .map(|s| s.value)
            .collect()
    }
}

/// How one repeat of one (subject, workload) went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every timer that should have fired did.
    Ok,
    /// Some timers never fired: the repeat's figures are shown, not used.
    Missed {
        /// How many.
        missed: u64,
    },
    /// The run could not be carried out.
    Failed {
        /// Why.
        error: String,
    },
}

/// One repeat of one (subject, workload).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The subject.
    pub subject: String,
    /// The workload.
    pub workload: String,
    /// Which repeat (0-based).
    pub repeat: usize,
    /// How it went.
    #[serde(flatten)]
    pub status: RunStatus,
    /// The 1-minute load average when it finished.
    pub load: f64,
    /// A cache line's round trip between two cores when it finished, ns
    /// (see `runner::measure::handoff_ns`); 0 if not measured.
    #[serde(default)]
    pub handoff_ns: f64,
    /// How long it took, seconds.
    pub seconds: f64,
    /// Seconds spent before it starting the subject (its runner and the
    /// discarded warm-up run): on a subject's first run of a repeat, else 0.
    /// The default selection's time budget and the progress estimate read it.
    #[serde(default)]
    pub start: f64,
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
    /// The figures the verdict ranks subjects by, one row each (written as
    /// one name when there is one, as results files before the distributed
    /// workload had two).
    #[serde(with = "crate::metric::one_or_many")]
    pub verdict: Vec<Metric>,
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
    /// Wall-clock seconds the whole run took (so far, if partial).
    pub wall_seconds: f64,
    /// True while the run is going on, or if it stopped before the end:
    /// the file then holds what was measured so far.
    pub partial: bool,
    /// The 1-, 5- and 15-minute load averages when the run started.
    pub load_start: [f64; 3],
    /// Measured cost of the timing loop around one operation, ns: already
    /// subtracted from every per-call cost.
    pub timing_overhead_ns: f64,
    /// The subjects measured, in order.
    pub subjects: Vec<SubjectInfo>,
    /// The workloads run, in order.
    pub workloads: Vec<WorkloadInfo>,
    /// Every figure.
    pub records: Vec<Record>,
    /// Every repeat of every (subject, workload), in the order they ran.
    pub runs: Vec<RunInfo>,
    /// Things the reader should know: skipped peers, failures, scaling.
    pub notes: Vec<String>,
    /// Which subjects ran on which workloads, and how to run the rest
    /// (absent in files written before the default selection).
    #[serde(default)]
    pub selection: Option<SelectionInfo>,
    /// Repeats of every (subject, workload) finished so far: a partial
    /// file with one or more holds a first verdict over every workload.
    #[serde(default)]
    pub repeats_done: usize,
    /// What this machine's hardware takes at the least for the steps the
    /// per-call figures are made of, measured as the run started (absent
    /// in files written before it was).
    #[serde(default)]
    pub floors: Option<Floors>,
}

/// The least this machine takes for the steps a timer call is made of, ns
/// (see `runner::measure::floors`): no figure can be below what its work
/// needs of them. A schedule on the system clock reads the time in a way
/// that cannot come before the call (`ordered_counter`, or `clock_read`);
/// a call that is safe from any thread takes at least one locked
/// instruction (`locked_rmw`); one cancel at 1e6 pending timers in random
/// order finds its timer in no cache, so it waits for memory (`memory`),
/// but a loop of them overlaps those waits (`cancel_stream`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Floors {
    /// A reading of the monotonic clock (`Instant::now`).
    pub clock_read: f64,
    /// A reading of the CPU's counter that waits for the instructions
    /// before it (`lfence; rdtsc`); 0 where there is none (not x86-64).
    pub ordered_counter: f64,
    /// A locked read-modify-write (`fetch_add`) of a line in this core's
    /// cache.
    pub locked_rmw: f64,
    /// A load whose address the load before it read, at random over
    /// 64 MiB (more than the caches hold).
    pub memory: f64,
    /// A cancel in a loop of random-order cancels at 1e6 pending timers,
    /// stripped to a read of the caller's handle and a CAS of the state
    /// word it names: the misses of several cancels overlap. 0 in a run
    /// made before it was measured.
    #[serde(default)]
    pub cancel_stream: f64,
    /// The CPU a thread spends per wake-up from a timed wait of 1 ms on a
    /// condition variable, woken by its timeout: what each of a driver
    /// thread's wake-ups (`run_wakeups_per_s`) costs at the least. 0 in a
    /// run made before it was measured.
    #[serde(default)]
    pub timed_wake: f64,
}

/// The selection a run measured, as the page and the terminal state it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectionInfo {
    /// `default`, `all` or `chosen` (subjects named on the command line).
    pub name: String,
    /// The rule, in one paragraph.
    pub rule: String,
    /// One line per workload: who ran it and why (the default selection).
    pub lines: Vec<String>,
    /// The subjects that did not run at all.
    pub left_out: Vec<String>,
    /// The command that runs the rest, with its expected duration.
    pub rest: String,
}

impl Results {
    /// Results with nothing measured yet, marked partial.
    pub fn new(run_id: String, env: Environment, repeats: usize) -> Results {
        Results {
            format: FORMAT,
            run_id,
            env,
            repeats,
            wall_seconds: 0.0,
            partial: true,
            load_start: [0.0; 3],
            timing_overhead_ns: 0.0,
            subjects: Vec::new(),
            workloads: Vec::new(),
            records: Vec::new(),
            runs: Vec::new(),
            notes: Vec::new(),
            selection: None,
            repeats_done: 0,
            floors: None,
        }
    }

    /// The least and greatest cross-core round trip measured after a
    /// repeat, ns (`None` if none was).
    pub fn handoff_range(&self) -> Option<(f64, f64)> {
        let measured = self
            .runs
            .iter()
            .map(|r| r.handoff_ns)
            .filter(|&ns| ns > 0.0);
        measured.fold(None, |range, ns| match range {
            None => Some((ns, ns)),
            Some((lo, hi)) => Some((f64::min(lo, ns), f64::max(hi, ns))),
        })
    }

    /// The record for (subject, workload, metric, size), if any.
    pub fn get(
        &self,
        subject: &str,
        workload: &str,
        metric: Metric,
        size: Option<u64>,
    ) -> Option<&Record> {
        self.records.iter().find(|r| {
            r.scheduler == subject && r.workload == workload && r.metric == metric && r.size == size
        })
    }

    /// The median of a figure, if it has a clean one.
    pub fn value(
        &self,
        subject: &str,
        workload: &str,
        metric: Metric,
        size: Option<u64>,
    ) -> Option<f64> {
        self.get(subject, workload, metric, size)
            .map(|r| r.value)
            .filter(|v| v.is_finite())
    }

    /// Whether the subject is a peer.
    pub fn is_peer(&self, subject: &str) -> bool {
        self.subjects
            .iter()
            .any(|s| s.name == subject && s.kind == SubjectKind::Peer)
    }

    /// The best value among the peers for (workload, metric, size).
    pub fn best_peer(&self, workload: &str, metric: Metric, size: Option<u64>) -> Option<f64> {
        self.records
            .iter()
            .filter(|r| {
                r.workload == workload
                    && r.metric == metric
                    && r.size == size
                    && r.value.is_finite()
                    && self.is_peer(&r.scheduler)
            })
            .map(|r| r.value)
            .reduce(|a, b| if metric.is_better(b, a) { b } else { a })
    }

    /// The run's noise: the median spread over every record with more than
    /// one clean sample.
    pub fn noise(&self) -> Option<f64> {
        let mut s: Vec<f64> = self
            .records
            .iter()
            .filter(|r| r.samples.iter().filter(|s| s.clean).count() > 1)
            .map(|r| r.spread)
            .collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        Some(s[s.len() / 2])
    }

    /// The repeats of (subject, workload) that did not go well.
    pub fn bad_runs<'a>(
        &'a self,
        subject: &'a str,
        workload: &'a str,
    ) -> impl Iterator<Item = &'a RunInfo> + 'a {
        self.runs.iter().filter(move |r| {
            r.subject == subject && r.workload == workload && r.status != RunStatus::Ok
        })
    }
}

/// Raw per-repeat measurements, grouped into [`Record`]s on demand.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    order: Vec<Key>,
    values: std::collections::HashMap<Key, Vec<Sample>>,
}

/// (subject, workload, metric, size).
type Key = (String, String, Metric, Option<u64>);

impl Samples {
    /// Adds one repeat's measurements of (subject, workload).
    pub fn add(
        &mut self,
        subject: &str,
        workload: &str,
        repeat: usize,
        clean: bool,
        ms: &[Measurement],
    ) {
        for m in ms {
            let key = (subject.to_owned(), workload.to_owned(), m.metric, m.size);
            let v = self.values.entry(key.clone()).or_insert_with(|| {
                self.order.push(key);
                Vec::new()
            });
            v.push(Sample {
                repeat,
                value: m.value,
                clean,
            });
        }
    }

    /// One record per figure, in the order the figures first came; marked
    /// unstable where the spread exceeds the noise of the whole set (twice
    /// the median spread, and at least 10%).
    pub fn records(&self, seed_of: impl Fn(&str) -> u64, env: &Environment) -> Vec<Record> {
        let mut out: Vec<Record> = self
            .order
            .iter()
            .map(|key| {
                let samples = self.values[key].clone();
                let clean: Vec<f64> = samples
                    .iter()
                    .filter(|s| s.clean)
                    .map(|s| s.value)
                    .collect();
                let (value, spread) = summarize(&clean);
                let (subject, workload, metric, size) = key.clone();
                Record {
                    seed: seed_of(&workload),
                    scheduler: subject,
                    workload,
                    metric,
                    unit: metric.unit(),
                    size,
                    value,
                    samples,
                    spread,
                    unstable: false,
                    env: env.clone(),
                }
            })
            .collect();
        let mut spreads: Vec<f64> = out
            .iter()
            .filter(|r| r.clean_values().len() > 1)
            .map(|r| r.spread)
            .collect();
        spreads.sort_by(f64::total_cmp);
        if let Some(&noise) = spreads.get(spreads.len() / 2) {
            let limit = (2.0 * noise).max(0.10);
            for r in &mut out {
                r.unstable = r.clean_values().len() > 1 && r.spread > limit;
            }
        }
        out
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

    fn results(records: Vec<Record>) -> Results {
        let subject = |name: &str, kind| SubjectInfo {
            name: name.into(),
            kind,
            about: String::new(),
        };
        Results {
            subjects: vec![
                subject("ours", SubjectKind::Algorithm),
                subject("p1", SubjectKind::Peer),
                subject("p2", SubjectKind::Peer),
            ],
            records,
            partial: false,
            ..Results::new("t".into(), Environment::default(), 1)
        }
    }

    #[test]
    fn the_best_peer_is_the_lowest_cost_and_the_highest_throughput() {
        let mut s = Samples::default();
        for (subject, m, v) in [
            ("ours", Metric::ScheduleCall, 10.0),
            ("p1", Metric::ScheduleCall, 40.0),
            ("p2", Metric::ScheduleCall, 20.0),
            ("ours", Metric::FiresPerS, 5.0),
            ("p1", Metric::FiresPerS, 7.0),
            ("p2", Metric::FiresPerS, 3.0),
        ] {
            s.add(subject, "w", 0, true, &[Measurement::new(m, v)]);
        }
        let r = results(s.records(|_| 1, &Environment::default()));
        // Our own algorithm never counts as the best peer.
        assert_eq!(r.best_peer("w", Metric::ScheduleCall, None), Some(20.0));
        assert_eq!(r.best_peer("w", Metric::FiresPerS, None), Some(7.0));
        assert_eq!(r.best_peer("w", Metric::CancelCall, None), None);
        assert_eq!(r.value("p1", "w", Metric::ScheduleCall, None), Some(40.0));
    }

    #[test]
    fn a_repeat_that_missed_timers_is_shown_but_not_in_the_median() {
        let mut s = Samples::default();
        let m = |v| [Measurement::new(Metric::LatenessP50, v)];
        s.add("a", "w", 0, true, &m(100.0));
        s.add("a", "w", 1, false, &m(9000.0));
        s.add("a", "w", 2, true, &m(110.0));
        let recs = s.records(|_| 1, &Environment::default());
        assert_eq!(recs[0].value, 105.0);
        assert_eq!(recs[0].samples.len(), 3);
        assert!(!recs[0].samples[1].clean);
        // Nothing clean: no median at all, rather than a dirty one.
        let mut s = Samples::default();
        s.add("a", "w", 0, false, &m(1.0));
        assert!(s.records(|_| 1, &Environment::default())[0].value.is_nan());
    }

    #[test]
    fn a_figure_whose_repeats_disagree_beyond_the_noise_is_unstable() {
        let mut s = Samples::default();
        for (i, metric) in [Metric::ScheduleCall, Metric::CancelCall, Metric::ResetCall]
            .into_iter()
            .enumerate()
        {
            for (rep, v) in [100.0, 102.0, 101.0].into_iter().enumerate() {
                s.add(
                    "a",
                    "w",
                    rep,
                    true,
                    &[Measurement::new(metric, v + i as f64)],
                );
            }
        }
        for (rep, v) in [100.0, 300.0, 110.0].into_iter().enumerate() {
            s.add("a", "w", rep, true, &[Measurement::new(Metric::Memory, v)]);
        }
        let recs = s.records(|_| 1, &Environment::default());
        let unstable: Vec<Metric> = recs
            .iter()
            .filter(|r| r.unstable)
            .map(|r| r.metric)
            .collect();
        assert_eq!(unstable, vec![Metric::Memory]);
    }

    #[test]
    fn a_figure_without_a_clean_repeat_survives_a_round_trip() {
        let mut s = Samples::default();
        s.add("a", "w", 0, false, &[Measurement::new(Metric::Missed, 3.0)]);
        let recs = s.records(|_| 1, &Environment::default());
        let text = serde_json::to_string(&recs).unwrap();
        assert!(text.contains("\"value\":null"), "{text}");
        let back: Vec<Record> = serde_json::from_str(&text).unwrap();
        assert!(back[0].value.is_nan());
        assert_eq!(back[0].samples, recs[0].samples);
    }

    #[test]
    fn measurements_round_trip_through_json() {
        let m = vec![
            Measurement::new(Metric::ScheduleCall, 61.5),
            Measurement::at(Metric::Memory, 1000, 80.0),
        ];
        let text = serde_json::to_string(&m).unwrap();
        let back: Vec<Measurement> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        // A child process may leave `size` out; an unknown metric is refused.
        let m: Measurement =
            serde_json::from_str(r#"{"metric":"cancel_call","value":1,"unit":"ns/op"}"#).unwrap();
        assert_eq!(m.size, None);
        assert!(serde_json::from_str::<Measurement>(r#"{"metric":"nope","value":1}"#).is_err());
    }
}
