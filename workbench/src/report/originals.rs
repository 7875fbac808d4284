//! Each of our algorithms beside the Java original it clones: the pairs
//! (one per workload and figure both have) and the semantic differences we
//! chose. The report renders them; this module only computes.

use crate::peers::java::PEERS as JAVA_PEERS;
use crate::record::{Metric, Results, SubjectKind, Unit};

/// One of our algorithms and the Java original it clones.
#[derive(Clone, Copy, Debug)]
pub struct Original {
    /// Our type, as in the crate docs.
    pub ours: &'static str,
    /// Subject names that are this algorithm; failing those, the algorithm
    /// whose description names the type ([`Original::ours`]).
    pub names: &'static [&'static str],
    /// The Java peers it is compared with; with several, the best one per
    /// figure (`None`: the best of every Java peer).
    pub originals: Option<&'static [&'static str]>,
    /// The semantic differences we chose, one sentence each.
    pub differences: &'static [&'static str],
}

impl Original {
    /// Which of `algorithms` (name, description) is this algorithm: by its
    /// usual short names, else the one whose description names the type.
    pub fn algorithm<'a>(&self, algorithms: &[(&'a str, &str)]) -> Option<&'a str> {
        let by_name = self
            .names
            .iter()
            .find_map(|n| algorithms.iter().find(|(name, _)| name == n));
        by_name
            .or_else(|| {
                algorithms.iter().find(|(_, about)| {
                    about
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|w| w == self.ours)
                })
            })
            .map(|(name, _)| *name)
    }
}

/// The algorithms of a run as (name, description), the form
/// [`Original::algorithm`] looks them up in.
pub fn algorithms_of(results: &Results) -> Vec<(&str, &str)> {
    results
        .subjects
        .iter()
        .filter(|s| s.kind == SubjectKind::Algorithm)
        .map(|s| (s.name.as_str(), s.about.as_str()))
        .collect()
}

/// Our algorithms as the originals table names them, one per type and in
/// its order (`heap`, `stpe`, `wheel`, `hier`): the four the default
/// selection runs and every chart draws; the variants (`heap-slack50`,
/// `wheel-tick`, …) are left to `--all` and the tables.
pub fn principal<'a>(algorithms: &[(&'a str, &str)]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for o in ORIGINALS {
        if let Some(a) = o.algorithm(algorithms) {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// The originals of `algorithm` (one of [`principal`]'s), one list per
/// row of the originals table that names it (a row's several
/// configurations of one original, such as the JDK executor's four); a
/// row whose original is "the best Java peer" gives none.
pub fn originals_of(algorithm: &str, algorithms: &[(&str, &str)]) -> Vec<&'static [&'static str]> {
    ORIGINALS
        .iter()
        .filter(|o| o.algorithm(algorithms) == Some(algorithm))
        .filter_map(|o| o.originals)
        .collect()
}

/// Each algorithm of the `schedulers` crate with its original.
pub const ORIGINALS: &[Original] = &[
    Original {
        ours: "HeapTimer",
        names: &["heap", "heap-timer", "heap_timer"],
        originals: Some(&["jdk-timer"]),
        differences: &[
            "monotonic nanosecond deadlines, not wall-clock milliseconds: never fires before its deadline (Timer can, by up to 1 ms: the `early` count)",
            "equal deadlines run in submission order (Timer's heap does not)",
            "fixed-delay counts from the end of a run (Timer: from its start)",
            "a panicking task is reported on its handle and the timer lives on (a throwing TimerTask kills the Timer)",
            "lazy cancel with a bounded automatic purge (Timer keeps cancelled tasks until they reach the head or purge())",
            "native reset (move); Timer needs cancel + a new TimerTask",
        ],
    },
    Original {
        ours: "ScheduledThreadPool",
        names: &["thread-pool", "stpe", "pool", "scheduled-thread-pool", "thread_pool"],
        originals: Some(&["jdk-stpe-1", "jdk-stpe-1-roc", "jdk-stpe-2", "jdk-stpe-2-roc"]),
        differences: &[
            "cancel stays lazy by default (as the JDK's removeOnCancel=false) but the queue is purged automatically once dead entries outnumber live ones; the JDK keeps them until they reach the head or purge() runs",
            "remove_on_cancel and purge() work as in the JDK; after shutdown a cancel removes its entry at once",
            "native reset (move); the JDK needs cancel + a new schedule",
            "delays are checked (typed error on overflow), not clamped; shutdown_now's tasks report being abandoned instead of blocking forever",
            "same ordering (deadline, then submission sequence), leader/follower queue, fixed-rate catch-up and fixed-delay from the end of a run",
        ],
    },
    Original {
        ours: "ScheduledThreadPool as a job scheduler",
        names: &["stpe", "thread-pool", "pool", "scheduled-thread-pool", "thread_pool"],
        originals: Some(&["quartz"]),
        differences: &[
            "Quartz in memory is the same design (a queue ordered by next fire time, one scheduler thread, a pool of workers: the seed calls it Timer plus a thread pool), with a job framework around each fire; both run 2 workers here",
            "monotonic nanosecond deadlines; Quartz takes wall-clock millisecond Dates and fires a trigger once within 2 ms of its time, so up to about 3 ms early",
            "a schedule due before the one the driver waits for wakes it at once; Quartz's scheduler thread keeps waiting for the trigger it holds unless that one is more than 7 ms away",
            "a due task goes straight to a worker; Quartz acquires one trigger at a time and makes a JobExecutionContext and a job instance for every fire",
            "missed fixed-rate runs are caught up back to back; Quartz catches up within its 60 s misfire threshold and skips beyond it",
            "native fixed-delay and reset; Quartz has neither (its jobs re-arm their own trigger; reset is rescheduleJob, a new trigger)",
            "no persistence and no cluster here: Quartz's JDBC store and cluster are measured apart (quartz-pg-*) beside the Redis scheduler",
        ],
    },
    Original {
        ours: "HashedWheelTimer",
        names: &["hashed-wheel", "hashed", "wheel", "hashed_wheel"],
        originals: Some(&["netty-1ms", "netty-100ms"]),
        differences: &[
            "periodic tasks, reset and typed results are native (Netty has one-shot timeouts only; its users re-arm from the task, as the harness does)",
            "deadlines round up to the tick, so never early; timers of one tick run in submission order, even after a reset",
            "a default tick of 1 ms and a larger wheel (Netty: 100 ms, 512 buckets); ticks down to 1 µs (Netty raises anything under 1 ms to 1 ms)",
            "a panicking task is reported on its handle (Netty logs it); shutdown keeps pending one-shots by default (Netty's stop returns them unrun)",
        ],
    },
    Original {
        ours: "HierarchicalWheelTimer",
        names: &["hierarchical", "hier", "hierarchical-wheel", "kafka"],
        originals: None,
        differences: &[
            "Kafka's SystemTimer has no Java peer here (it is not a general scheduler: no periodic tasks, no return values): each figure is compared with the best Java peer",
            "never early, at most one tick late (Kafka may run a task up to a tick early); a bucket expires at its earliest timer",
            "no polling reaper: the driver blocks until the earliest bucket and a submit into an earlier one wakes it",
            "periodic tasks, reset, typed errors, ties in submission order within a tick, panics reported on the handle",
        ],
    },
];

/// The figures the pairing table shows, in order.
pub const PAIRED_METRICS: &[Metric] = &[
    Metric::ScheduleCall,
    Metric::CancelCall,
    Metric::ResetCall,
    Metric::ScheduleBatch,
    Metric::CancelBatch,
    Metric::ResetBatch,
    Metric::CpuPerTimer,
    Metric::LatenessP50,
    Metric::LatenessP99,
    Metric::JitterP99,
    Metric::Memory,
    Metric::ContendedPairsPerS,
];

/// One row of the pairing table: our algorithm against its original on one
/// (workload, metric, size).
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// Our type (`HeapTimer`).
    pub ours: &'static str,
    /// Our subject's name in the results.
    pub subject: String,
    /// The Java peer compared with (the best one, when several).
    pub original: String,
    /// The workload.
    pub workload: String,
    /// The metric.
    pub metric: Metric,
    /// The pending count, for sweeps.
    pub size: Option<u64>,
    /// Unit of both values.
    pub unit: Unit,
    /// Ours.
    pub value: f64,
    /// The original's.
    pub original_value: f64,
    /// `value / original_value`: below 1 is better for costs and lateness.
    pub ratio: f64,
}

/// Pairs each algorithm with its original on every workload and every
/// metric of [`PAIRED_METRICS`] both have (sweeps: the largest common size).
/// Where an algorithm has several originals, the best of them per figure.
pub fn pairs(results: &Results) -> Vec<Pair> {
    let mut out = Vec::new();
    let all_java: Vec<&str> = JAVA_PEERS.iter().map(|p| p.name).collect();
    let algorithms = algorithms_of(results);
    for o in ORIGINALS {
        let Some(subject) = o.algorithm(&algorithms) else {
            continue;
        };
        let candidates: &[&str] = o.originals.unwrap_or(&all_java);
        for w in &results.workloads {
            for &m in PAIRED_METRICS {
                let size = results
                    .records
                    .iter()
                    .filter(|r| r.workload == w.name && r.metric == m && r.scheduler == *subject)
                    .filter_map(|r| r.size)
                    .filter(|s| {
                        candidates
                            .iter()
                            .any(|c| results.get(c, &w.name, m, Some(*s)).is_some())
                    })
                    .max();
                let Some(mine) = results.value(subject, &w.name, m, size) else {
                    continue;
                };
                let best = candidates
                    .iter()
                    .filter_map(|c| results.value(c, &w.name, m, size).map(|v| (*c, v)))
                    .reduce(|a, b| if m.is_better(b.1, a.1) { b } else { a });
                let Some((orig, ov)) = best else { continue };
                let ratio = if ov.abs() > f64::EPSILON {
                    mine / ov
                } else {
                    f64::NAN
                };
                out.push(Pair {
                    ours: o.ours,
                    subject: subject.to_owned(),
                    original: orig.to_owned(),
                    workload: w.name.clone(),
                    metric: m,
                    size,
                    unit: m.unit(),
                    value: mine,
                    original_value: ov,
                    ratio,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::record::{Record, FORMAT};
    use serde_json::json;

    // Built through serde so that fields added later with defaults do not
    // break these tests.
    fn rec(s: &str, w: &str, m: &str, v: f64, size: Option<u64>) -> Record {
        serde_json::from_value(json!({
            "scheduler": s, "workload": w, "metric": m, "value": v, "unit": "ns/op", "size": size,
            "samples": [{"repeat": 0, "value": v, "clean": true}], "spread": 0.0, "unstable": false, "seed": 1, "env": env(),
        }))
        .unwrap()
    }

    fn env() -> serde_json::Value {
        json!({"cpu": "", "cores": 1, "rustc": "", "commit": "", "date": "", "os": "", "profile": "quick"})
    }

    fn results(records: Vec<Record>) -> Results {
        let subj = |n: &str, kind: &str| json!({"name": n, "kind": kind, "about": if n == "wh" { "HashedWheelTimer: Netty clone" } else { "" }});
        let wl = |n: &str| json!({"name": n, "description": "", "models": "", "seed": 1, "summary": [], "sweep": false, "verdict": "lateness_p99"});
        serde_json::from_value(json!({
            "format": FORMAT, "run_id": "t", "env": env(), "repeats": 1, "wall_seconds": 1.0,
            "partial": false, "load_start": [0.0, 0.0, 0.0], "timing_overhead_ns": 0.0, "runs": [],
            "subjects": [
                subj("heap", "algorithm"), subj("stpe", "algorithm"), subj("hierarchical", "algorithm"),
                subj("wh", "algorithm"), subj("jdk-timer", "peer"), subj("jdk-stpe-1", "peer"), subj("jdk-stpe-2-roc", "peer"),
                subj("netty-1ms", "peer"),
            ],
            "workloads": [wl("burst"), wl("scale")],
            "records": records,
            "notes": [],
        }))
        .unwrap()
    }

    #[test]
    fn pairs_each_algorithm_with_its_original_and_the_best_of_several() {
        let r = results(vec![
            rec("heap", "burst", "schedule_call", 50.0, None),
            rec("jdk-timer", "burst", "schedule_call", 200.0, None),
            rec("stpe", "burst", "schedule_call", 90.0, None),
            rec("jdk-stpe-1", "burst", "schedule_call", 300.0, None),
            rec("jdk-stpe-2-roc", "burst", "schedule_call", 180.0, None),
            // Sweeps pair at the largest size both have.
            rec("heap", "scale", "cancel_call", 30.0, Some(1000)),
            rec("heap", "scale", "cancel_call", 60.0, Some(100_000)),
            rec("heap", "scale", "cancel_call", 90.0, Some(1_000_000)),
            rec("jdk-timer", "scale", "cancel_call", 20.0, Some(1000)),
            rec("jdk-timer", "scale", "cancel_call", 120.0, Some(100_000)),
            // The hierarchical wheel meets the best Java peer of all.
            rec("hierarchical", "burst", "schedule_call", 60.0, None),
            rec("wh", "burst", "schedule_call", 80.0, None),
            rec("netty-1ms", "burst", "schedule_call", 40.0, None),
        ]);
        let p = pairs(&r);
        let find = |ours: &str, w: &str, m: Metric| {
            p.iter()
                .find(|x| x.ours == ours && x.workload == w && x.metric == m)
                .cloned()
        };
        let heap = find("HeapTimer", "burst", Metric::ScheduleCall).unwrap();
        assert_eq!((heap.original.as_str(), heap.ratio), ("jdk-timer", 0.25));
        let stpe = find("ScheduledThreadPool", "burst", Metric::ScheduleCall).unwrap();
        assert_eq!(
            (stpe.original.as_str(), stpe.ratio),
            ("jdk-stpe-2-roc", 0.5)
        );
        let sweep = find("HeapTimer", "scale", Metric::CancelCall).unwrap();
        assert_eq!((sweep.size, sweep.ratio), (Some(100_000), 0.5));
        let hier = find("HierarchicalWheelTimer", "burst", Metric::ScheduleCall).unwrap();
        assert_eq!(
            (hier.original.as_str(), hier.original_value),
            ("netty-1ms", 40.0)
        );
        assert!(
            find("HashedWheelTimer", "scale", Metric::CancelCall).is_none(),
            "no figure of the wheel there"
        );
        // Found by the type name in its description; its Netty peer did better.
        let wheel = find("HashedWheelTimer", "burst", Metric::ScheduleCall).unwrap();
        assert_eq!(
            (wheel.subject.as_str(), wheel.original.as_str(), wheel.ratio),
            ("wh", "netty-1ms", 2.0)
        );
    }
}
