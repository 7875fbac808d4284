//! The distributed workload: capacity and latency of the durable Redis
//! scheduler (`schedulers::distributed`) with 1, 2 and 4 worker processes,
//! and of BullMQ beside it, every measurement against a fresh local
//! `redis-server`.
//!
//! Two shapes, measured apart, because a paced load shows only the offered
//! rate:
//! - **drain** (capacity): N no-op jobs already due, then the workers start;
//!   jobs/s from the first start to the last ack, recorded as
//!   [`metric::FIRES_PER_S`];
//! - **paced** (latency): N jobs due evenly over a window, below capacity;
//!   lateness (start − due, ms resolution) p50/p90/p99/max, recorded as the
//!   `lateness_*` metrics in µs. Ours is on Redis's clock, BullMQ's on the
//!   host's (the same host).
//!
//! For both: Redis's CPU time per job (`INFO cpu` over the measured window),
//! Redis commands per job (`INFO commandstats`, which counts the commands
//! scripts run too), and for ours the workers' round trips per job. Once per
//! repeat, on `redis-1w`: the claim-script ceiling (our claim script alone
//! claims a backlog back to back, 64 per call: jobs per second of Redis CPU,
//! the most one Redis core hands out) and an idle worker's round trips per
//! second per shard.
//!
//! The worker processes are this very binary (`workbench redis-worker …`,
//! which runs [`schedulers::distributed::harness`]): built with the
//! workbench, so no `cargo build` runs in the middle of a measurement, and
//! the worker is always the code the report describes. BullMQ runs through
//! the Node harness in `workbench/bullmq/` ([`bullmq`]).
//!
//! No `redis-server`: the workload is skipped with one note. No Node or no
//! `npm ci` in `workbench/bullmq`: BullMQ is skipped with one note (the CI
//! test `tests/bullmq_peer.rs` insists instead).

pub mod bullmq;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::Command;

use crate::record::{
    metric, summarize, unit, Environment, Record, Results, SubjectInfo, SubjectKind, WorkloadInfo,
};

/// The workload's name in reports and on the command line.
pub const WORKLOAD: &str = "distributed";

/// The subject-name prefix of ours (`redis-1w`, `redis-2w`, …), also
/// accepted by `-s redis`.
pub const SUBJECT_PREFIX: &str = "redis";

/// The hidden subcommand of the workbench binary that is the worker.
pub const WORKER_SUBCOMMAND: &str = "redis-worker";

/// Metrics of this workload beyond [`metric::FIRES_PER_S`] (drain jobs/s)
/// and the lateness percentiles (paced).
pub mod dmetric {
    /// Redis CPU time per job while draining, µs.
    pub const CPU_DRAIN: &str = "redis_cpu_per_job_drain";
    /// Redis CPU time per job at the paced load, µs.
    pub const CPU_PACED: &str = "redis_cpu_per_job_paced";
    /// Redis commands per job while draining (scripts' inner commands too).
    pub const CALLS_DRAIN: &str = "redis_calls_per_job_drain";
    /// Redis commands per job at the paced load.
    pub const CALLS_PACED: &str = "redis_calls_per_job_paced";
    /// The workers' round trips per job while draining (ours only).
    pub const ROUND_TRIPS_DRAIN: &str = "round_trips_per_job_drain";
    /// The workers' round trips per job at the paced load (ours only).
    pub const ROUND_TRIPS_PACED: &str = "round_trips_per_job_paced";
    /// Jobs our claim script alone hands out per second of Redis CPU on the
    /// same Redis.
    pub const CLAIM_CEILING: &str = "claim_ceiling";
    /// Round trips per second per shard of an idle worker (10,000 jobs
    /// pending an hour ahead).
    pub const IDLE_ROUND_TRIPS: &str = "idle_round_trips_per_s_per_shard";
}

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Worker-process counts, one run of each shape each.
    pub workers: Vec<u64>,
    /// Jobs of the drain shape.
    pub drain_jobs: u64,
    /// Jobs of the paced shape.
    pub paced_jobs: u64,
    /// The paced jobs are due evenly over this window, ms.
    pub window_ms: u64,
    /// Handler threads per worker process (BullMQ: `concurrency`).
    pub threads: u64,
    /// Shards of the schedule.
    pub shards: u64,
    /// How long the idle worker is watched, s.
    pub idle_seconds: u64,
}

impl Plan {
    /// The plan for a size profile: `quick` (drain 2e4 jobs; 1e4 paced over
    /// 4 s), `full` (drain 1e5; 5e4 paced over 20 s), or a factor of the full
    /// size. The paced rate, 2,500 jobs/s, stays below every subject's
    /// capacity on two cores.
    pub fn for_size(size: &str) -> Plan {
        let (drain_jobs, paced_jobs, window_ms) = match size {
            "quick" => (20_000, 10_000, 4_000),
            "full" => (100_000, 50_000, 20_000),
            f => {
                let factor = f.parse::<f64>().unwrap_or(1.0).clamp(0.001, 100.0);
                (
                    ((100_000.0 * factor) as u64).max(100),
                    ((50_000.0 * factor) as u64).max(100),
                    ((20_000.0 * factor) as u64).max(500),
                )
            }
        };
        Plan {
            workers: vec![1, 2, 4],
            drain_jobs,
            paced_jobs,
            window_ms,
            threads: 4,
            shards: 8,
            idle_seconds: 5,
        }
    }

    /// The report's description of the workload.
    pub fn info(&self) -> WorkloadInfo {
        let workers = self
            .workers
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        WorkloadInfo {
            name: WORKLOAD.to_owned(),
            description: format!(
                "durable no-op jobs on one Redis, {workers} worker process(es) of {} threads: drain {} jobs already due (capacity), \
                 and {} jobs due evenly over {} ms (lateness); BullMQ beside it",
                self.threads, self.drain_jobs, self.paced_jobs, self.window_ms
            ),
            models: "durable jobs shared by several worker processes (seeds 000 and 004: a Redis time wheel)".to_owned(),
            seed: 0,
            summary: vec![
                format!(
                    "drain {} jobs · paced {} jobs over {} ms · workers {workers} · {} threads (BullMQ concurrency) each · {} shards",
                    self.drain_jobs, self.paced_jobs, self.window_ms, self.threads, self.shards
                ),
                "fires/s = drain jobs/s (first start to last ack) · lateness = paced start − due (ms resolution) · \
                 a fresh redis-server per measurement; Redis CPU and commands per job from INFO"
                    .to_owned(),
            ],
            sweep: false,
        }
    }
}

/// Whether the distributed workload is selected by `-s`/`-w` lists (empty
/// means everything).
pub fn selected(subjects: &[String], workloads: &[String]) -> bool {
    (subjects.is_empty()
        || subjects
            .iter()
            .any(|s| s.starts_with(SUBJECT_PREFIX) || s.starts_with(bullmq::SUBJECT_PREFIX)))
        && (workloads.is_empty() || workloads.iter().any(|w| w == WORKLOAD))
}

/// Runs the plan `repeats` times and adds its subjects, workload, records
/// and notes to `results`; a reason it could not run becomes a note.
/// `worker` is the command that starts this binary's
/// [`WORKER_SUBCOMMAND`] (the program, then `redis-worker`).
pub fn run_into(
    results: &mut Results,
    plan: &Plan,
    repeats: usize,
    env: &Environment,
    worker: &[OsString],
) {
    match run(plan, repeats, env, worker) {
        Ok(run) => {
            results.subjects.extend(run.subjects);
            results.workloads.push(plan.info());
            results.records.extend(run.records);
            results.notes.extend(run.notes);
        }
        Err(why) => results.notes.push(format!("{WORKLOAD} skipped: {why}")),
    }
}

/// What [`run`] produced.
#[derive(Debug, Default)]
pub struct Run {
    /// The subjects that ran.
    pub subjects: Vec<SubjectInfo>,
    /// One record per (subject, metric), the median over repeats.
    pub records: Vec<Record>,
    /// Skips and ratios the reader should know.
    pub notes: Vec<String>,
}

/// One report line of either benchmark (ours or BullMQ's), as figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// `drain`, `paced`, `ceiling` or `idle`.
    pub shape: String,
    /// Worker processes.
    pub workers: u64,
    /// `(metric, value)` pairs.
    pub figures: Vec<(&'static str, f64)>,
}

/// Parses one JSON line of `redis-worker bench` or `bullmq/bench.mjs`.
///
/// # Errors
///
/// A message naming the line and the field it lacks.
pub fn parse_report(line: &str) -> Result<Report, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("bad benchmark output {line:?}: {e}"))?;
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(&v, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("benchmark output lacks {}: {line}", path.join(".")))
    };
    let shape = v
        .get("shape")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| format!("benchmark output lacks shape: {line}"))?
        .to_owned();
    let mut figures = Vec::new();
    match shape.as_str() {
        "drain" | "paced" => {
            let drain = shape == "drain";
            let jobs = field(&["jobs"])?.max(1.0);
            let calls: f64 = v["redis"]["calls"]
                .as_object()
                .map(|m| m.values().filter_map(serde_json::Value::as_f64).sum())
                .unwrap_or(0.0);
            let (cpu, calls_m, rt) = if drain {
                (
                    dmetric::CPU_DRAIN,
                    dmetric::CALLS_DRAIN,
                    dmetric::ROUND_TRIPS_DRAIN,
                )
            } else {
                (
                    dmetric::CPU_PACED,
                    dmetric::CALLS_PACED,
                    dmetric::ROUND_TRIPS_PACED,
                )
            };
            figures.push((cpu, field(&["redis", "cpu_us_per_job"])?));
            figures.push((calls_m, calls / jobs));
            if let Some(r) = v["round_trips_per_job"].as_f64() {
                figures.push((rt, r));
            }
            if drain {
                figures.push((metric::FIRES_PER_S, field(&["jobs_per_sec"])?));
            } else {
                let [p50, p90, p99, _, max] = metric::LATENESS;
                for (m, k) in [(p50, "p50"), (p90, "p90"), (p99, "p99"), (max, "max")] {
                    figures.push((m, field(&["lateness_ms", k])? * 1000.0));
                }
            }
        }
        "ceiling" => figures.push((dmetric::CLAIM_CEILING, field(&["jobs_per_sec"])?)),
        "idle" => figures.push((
            dmetric::IDLE_ROUND_TRIPS,
            field(&["round_trips_per_s_per_shard"])?,
        )),
        other => return Err(format!("unknown shape {other:?}: {line}")),
    }
    let workers = v["workers"].as_u64().unwrap_or(1);
    Ok(Report {
        shape,
        workers,
        figures,
    })
}

fn unit_of(m: &str) -> &'static str {
    match m {
        metric::FIRES_PER_S | dmetric::CLAIM_CEILING => "jobs/s",
        dmetric::CPU_DRAIN | dmetric::CPU_PACED => "µs/job",
        dmetric::CALLS_DRAIN | dmetric::CALLS_PACED => "calls/job",
        dmetric::ROUND_TRIPS_DRAIN | dmetric::ROUND_TRIPS_PACED => "round trips/job",
        dmetric::IDLE_ROUND_TRIPS => "round trips/s",
        _ => unit::US,
    }
}

/// Our subject's name for `workers` processes.
pub fn subject_name(workers: u64) -> String {
    format!("{SUBJECT_PREFIX}-{workers}w")
}

/// Runs `worker bench` with `args` and parses its report lines.
fn our_bench(worker: &[OsString], args: &[String]) -> Result<Vec<Report>, String> {
    let (exe, prefix) = worker.split_first().ok_or("no worker command")?;
    let out = Command::new(exe)
        .args(prefix)
        .arg("bench")
        .args(args)
        .output()
        .map_err(|e| format!("running {}: {e}", exe.to_string_lossy()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("the benchmark failed: {}", err.trim()));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(parse_report)
        .collect()
}

/// Builds, measures and summarises: the drain and paced shapes for every
/// worker count (ours, then BullMQ's), the ceiling and the idle worker,
/// `repeats` times.
///
/// # Errors
///
/// Why the workload cannot run at all (no `redis-server`, our benchmark
/// failed). BullMQ being unavailable is a note, not an error.
pub fn run(
    plan: &Plan,
    repeats: usize,
    env: &Environment,
    worker: &[OsString],
) -> Result<Run, String> {
    if schedulers::distributed::find_redis_server().is_none() {
        return Err("redis-server is not installed (Debian: apt-get install redis-server)".into());
    }
    let repeats = repeats.max(1);
    let workers = plan
        .workers
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let common = |shape: &str, jobs: u64| -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--shape".into(),
            shape.into(),
            "--workers".into(),
            workers.clone(),
            "--jobs".into(),
            jobs.to_string(),
            "--threads".into(),
            plan.threads.to_string(),
            "--shards".into(),
            plan.shards.to_string(),
        ];
        if shape == "paced" {
            a.extend(["--window-ms".into(), plan.window_ms.to_string()]);
        }
        a
    };
    let bull = bullmq::Harness::find();
    let mut out = Run::default();
    if let Err(why) = &bull {
        out.notes.push(format!("bullmq skipped: {why}"));
    }
    let mut samples: BTreeMap<(String, &'static str), Vec<f64>> = BTreeMap::new();
    let mut add = |subject: String, r: &Report| {
        for (m, v) in &r.figures {
            samples.entry((subject.clone(), m)).or_default().push(*v);
        }
    };
    for rep in 1..=repeats {
        let step = |what: &str| {
            eprintln!("workbench: {WORKLOAD}: repeat {rep}/{repeats}: {what}");
        };
        step(&format!(
            "ours, drain {} jobs, workers {workers}",
            plan.drain_jobs
        ));
        for r in our_bench(worker, &common("drain", plan.drain_jobs))? {
            add(subject_name(r.workers), &r);
        }
        step(&format!(
            "ours, paced {} jobs over {} ms, workers {workers}",
            plan.paced_jobs, plan.window_ms
        ));
        for r in our_bench(worker, &common("paced", plan.paced_jobs))? {
            add(subject_name(r.workers), &r);
        }
        step("claim-script ceiling and an idle worker");
        let ceiling: Vec<String> = ["--shape", "ceiling", "--batch", "64", "--jobs"]
            .into_iter()
            .map(str::to_owned)
            .chain([
                plan.drain_jobs.to_string(),
                "--shards".into(),
                plan.shards.to_string(),
            ])
            .collect();
        for r in our_bench(worker, &ceiling)? {
            add(subject_name(1), &r);
        }
        let idle: Vec<String> = ["--shape", "idle", "--shards"]
            .into_iter()
            .map(str::to_owned)
            .chain([
                plan.shards.to_string(),
                "--seconds".into(),
                plan.idle_seconds.to_string(),
            ])
            .collect();
        for r in our_bench(worker, &idle)? {
            add(subject_name(1), &r);
        }
        if let Ok(h) = &bull {
            for &w in &plan.workers {
                for (shape, jobs) in [("drain", plan.drain_jobs), ("paced", plan.paced_jobs)] {
                    step(&format!("bullmq, {shape} {jobs} jobs, {w} worker(s)"));
                    match h.run(shape, w, jobs, plan.window_ms, plan.threads) {
                        Ok(r) => add(bullmq::subject_name(w), &r),
                        Err(why) => out
                            .notes
                            .push(format!("bullmq-{w}w {shape} (repeat {rep}) failed: {why}")),
                    }
                }
            }
        }
    }
    for &w in &plan.workers {
        out.subjects.push(SubjectInfo {
            name: subject_name(w),
            kind: SubjectKind::Algorithm,
            about: format!(
                "schedulers::distributed on Redis: {w} worker process(es) × {} threads, batched claims into a local buffer, leases + fencing, at-least-once",
                plan.threads
            ),
        });
    }
    if bull.is_ok() {
        for &w in &plan.workers {
            out.subjects.push(SubjectInfo {
                name: bullmq::subject_name(w),
                kind: SubjectKind::Peer,
                about: format!(
                    "BullMQ {} (Node): {w} worker process(es), Worker concurrency {}, delayed jobs added with Queue.addBulk, default job options",
                    bull.as_ref().map_or("", |h| h.version.as_str()),
                    plan.threads
                ),
            });
        }
    }
    let median = |subject: &str, m: &str| {
        samples
            .iter()
            .find(|((s, k), _)| s == subject && *k == m)
            .map(|(_, v)| summarize(v).0)
    };
    let ours = median(&subject_name(1), metric::FIRES_PER_S);
    if let (Some(d), Some(c)) = (ours, median(&subject_name(1), dmetric::CLAIM_CEILING)) {
        out.notes.push(format!(
            "{WORKLOAD}: one worker drains at {:.0}% of the claim-script ceiling measured on the same Redis ({d:.0} of {c:.0} jobs/s)",
            100.0 * d / c
        ));
    }
    if let (Some(d), Some(b)) = (ours, median(&bullmq::subject_name(1), metric::FIRES_PER_S)) {
        out.notes.push(format!(
            "{WORKLOAD}: one worker drains {:.1}× as fast as BullMQ at the same concurrency ({d:.0} vs {b:.0} jobs/s)",
            d / b
        ));
    }
    out.records = samples
        .into_iter()
        .map(|((subject, m), values)| {
            let (value, spread) = summarize(&values);
            Record {
                scheduler: subject,
                workload: WORKLOAD.to_owned(),
                metric: m.to_owned(),
                value,
                unit: unit_of(m).to_owned(),
                size: None,
                samples: values,
                spread,
                seed: 0,
                env: env.clone(),
            }
        })
        .collect();
    Ok(out)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn parses_every_shape() {
        let drain = r#"{"shape":"drain","workers":2,"jobs":100,"jobs_per_sec":25000.0,"lateness_ms":{"p50":1,"p90":3,"p99":7,"max":9},"round_trips_per_job":0.05,"redis":{"cpu_us_per_job":30.5,"calls":{"evalsha":10,"zadd":40}}}"#;
        let r = parse_report(drain).unwrap();
        assert_eq!((r.shape.as_str(), r.workers), ("drain", 2));
        assert!(r.figures.contains(&(metric::FIRES_PER_S, 25000.0)));
        assert!(r.figures.contains(&(dmetric::CPU_DRAIN, 30.5)));
        assert!(r.figures.contains(&(dmetric::CALLS_DRAIN, 0.5)));
        assert!(r.figures.contains(&(dmetric::ROUND_TRIPS_DRAIN, 0.05)));
        let paced = drain.replace("\"drain\"", "\"paced\"");
        let r = parse_report(&paced).unwrap();
        assert!(r.figures.contains(&("lateness_p99", 7000.0)));
        assert!(!r.figures.iter().any(|(m, _)| *m == metric::FIRES_PER_S));
        assert!(
            parse_report(r#"{"shape":"ceiling","jobs_per_sec":50000}"#)
                .unwrap()
                .figures
                == [(dmetric::CLAIM_CEILING, 50000.0)]
        );
        assert!(parse_report(r#"{"shape":"drain","workers":2}"#)
            .unwrap_err()
            .contains("lacks"));
    }

    #[test]
    fn selection_follows_the_lists() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(selected(&[], &[]));
        assert!(selected(&s(&["redis"]), &[]));
        assert!(selected(&s(&["bullmq"]), &[]));
        assert!(!selected(&s(&["heap"]), &[]));
        assert!(!selected(&[], &s(&["burst"])));
        assert!(selected(
            &s(&["heap", "redis-2w"]),
            &s(&["burst", "distributed"])
        ));
    }
}
