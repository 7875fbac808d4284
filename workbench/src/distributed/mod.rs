//! The distributed workload's subjects: capacity and latency of the durable
//! Redis scheduler (`schedulers::distributed`) with 1, 2 and 4 worker
//! processes (`redis-1w`, `redis-2w`, `redis-4w`), with acknowledged writes
//! (`redis-fsync-1w`), on a local Redis Cluster (`redis-cluster-2w`, and
//! `redis-cluster-wait-2w` with `WAIT 1`), and of BullMQ beside it
//! ([`bullmq`]: `bullmq-1w`, `bullmq-2w`, `bullmq-4w`), every measurement
//! against a fresh local `redis-server` (or Cluster). Everything Redis-specific of the
//! workbench is in this module.
//!
//! Each subject is a [`Runner`] like any other, run by the suite on
//! workloads with a `[distributed]` section (`workloads/distributed.toml`,
//! see [`Distributed`]). One repeat measures two shapes apart, because a
//! paced load shows only the offered rate:
//!
//! - **drain** (capacity): N no-op jobs already due, then the workers start;
//!   jobs/s from the first start to the last ack ([`Metric::DrainJobsPerS`]);
//! - **paced** (latency): N jobs due evenly over a window, below capacity;
//!   lateness (start − due, ms resolution) p50/p90/p99/max
//!   ([`Metric::PACED`], µs). Ours is on Redis's clock, BullMQ's on the
//!   host's (the same host).
//!
//! For both: Redis's CPU time per job (`INFO cpu` over the measured window),
//! Redis commands per job (`INFO commandstats`, which counts the commands
//! scripts run too), for ours the workers' round trips per job, and the jobs
//! that never ran ([`Metric::Missed`]: a repeat with any is left out of the
//! medians). Once per repeat, on `redis-1w`: the claim-script ceiling (our
//! claim script alone claims a backlog back to back, [`CEILING_BATCH`] per
//! call: jobs per second of Redis CPU, the most one Redis core hands out)
//! and an idle worker's round trips per second per shard.
//!
//! Our worker processes are this very binary (`workbench redis-worker …`,
//! which runs [`schedulers::distributed::harness`]): built with the
//! workbench, so no `cargo build` runs in the middle of a run, and the
//! worker is always the code the report describes. BullMQ runs through the
//! Node harness in `workbench/bullmq/`.
//!
//! No `redis-server`: every subject here is skipped with one note. No Node
//! or no packages installed in `workbench/bullmq`: BullMQ is skipped with
//! one note (`tests/distributed.rs` fails instead under CI).

pub mod bullmq;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use crate::record::{Measurement, Metric, Results, SubjectKind};
use crate::runner::{RunContext, RunError, Runner};
use crate::spec::{Distributed, Workload, WorkloadKind};
use crate::subjects::{Subject, Unavailable};

/// The hidden subcommand of the workbench binary that is the worker (and
/// the benchmark that drives the workers).
pub const WORKER_SUBCOMMAND: &str = "redis-worker";

/// Jobs per call of the claim script in the ceiling measurement: the
/// worker's default batch.
pub const CEILING_BATCH: u64 = 64;

/// The workbench executable, whose [`WORKER_SUBCOMMAND`] is the worker:
/// `workbench run` sets it to itself, a test to `CARGO_BIN_EXE_workbench`.
/// Unset, our subjects cannot run (and say so).
pub static WORKER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// The command that starts `exe` as a worker (or as the benchmark).
pub fn worker_command(exe: &Path) -> Vec<OsString> {
    vec![exe.into(), WORKER_SUBCOMMAND.into()]
}

/// One of our subjects: how many worker processes, against what server.
struct OurSubject {
    workers: u64,
    name: &'static str,
    about: &'static str,
    /// The benchmark's server and durability flags (none: a fresh single
    /// Redis, AOF everysec, `Durability::Async`).
    server: &'static [&'static str],
}

/// Our subjects: 1, 2 and 4 workers on one Redis; one worker with
/// `Durability::Fsync` on `appendfsync always` (the cost of acknowledged
/// writes per job); two workers on a local Cluster of 3 masters with a
/// replica each, asynchronous and with `WAIT 1` (Cluster versus one Redis,
/// and the cost of acknowledged replication).
const OURS: [OurSubject; 6] = [
    OurSubject {
        workers: 1,
        name: "redis-1w",
        about: "schedulers::distributed on a fresh local Redis: 1 worker process, batched claims into a local buffer, \
         Pub/Sub wake-ups, pipelined acks, leases + fencing, at-least-once",
        server: &[],
    },
    OurSubject {
        workers: 2,
        name: "redis-2w",
        about: "schedulers::distributed on a fresh local Redis: 2 worker processes, batched claims into a local buffer, \
         Pub/Sub wake-ups, pipelined acks, leases + fencing, at-least-once",
        server: &[],
    },
    OurSubject {
        workers: 4,
        name: "redis-4w",
        about: "schedulers::distributed on a fresh local Redis: 4 worker processes, batched claims into a local buffer, \
         Pub/Sub wake-ups, pipelined acks, leases + fencing, at-least-once",
        server: &[],
    },
    OurSubject {
        workers: 1,
        name: "redis-fsync-1w",
        about: "redis-1w with Durability::Fsync: Redis with appendfsync always (7.0 has no WAITAOF), so every \
         schedule, claim and ack is on disk before it is acknowledged",
        server: &["--appendfsync", "always", "--durability", "fsync"],
    },
    OurSubject {
        workers: 2,
        name: "redis-cluster-2w",
        about: "redis-2w on a fresh local Redis Cluster of 3 masters with a replica each (6 redis-servers on the same \
         cores): shards spread over the masters by hash tag, Durability::Async",
        server: &["--cluster", "3", "--replicas", "1"],
    },
    OurSubject {
        workers: 2,
        name: "redis-cluster-wait-2w",
        about: "redis-cluster-2w with Durability::Replicas(1): every write waits (WAIT 1) for its master's replica",
        server: &["--cluster", "3", "--replicas", "1", "--durability", "replicas:1"],
    },
];

/// Our subjects: `redis-1w`, `redis-2w`, `redis-4w`, `redis-fsync-1w`,
/// `redis-cluster-2w`, `redis-cluster-wait-2w`.
pub fn subjects() -> Vec<Subject> {
    OURS.iter()
        .map(|o| {
            let (workers, server) = (o.workers, o.server);
            Subject {
                name: o.name,
                kind: SubjectKind::Algorithm,
                about: o.about,
                workloads: &[WorkloadKind::Distributed],
                runner: Arc::new(move || {
                    if schedulers::distributed::find_redis_server().is_none() {
                        return Err(Unavailable::from(
                            "redis-server is not installed (Debian: apt-get install redis-server)",
                        ));
                    }
                    let exe = WORKER_EXE.get().ok_or_else(|| {
                        Unavailable::from(
                            "the worker is the workbench binary's `redis-worker` subcommand, and this is not the workbench binary",
                        )
                    })?;
                    Ok(Box::new(Ours {
                        worker: worker_command(exe),
                        workers,
                        server,
                    }) as Box<dyn Runner>)
                }),
                timers: None,
            }
        })
        .collect()
}

/// The `[distributed]` section of a workload the suite handed a runner.
fn section(workload: &Workload) -> Result<&Distributed, RunError> {
    workload.distributed.as_ref().ok_or_else(|| {
        RunError::Inconsistent(format!("{} is not a distributed workload", workload.name))
    })
}

/// The paced window in whole milliseconds (at least 1).
fn window_ms(d: &Distributed) -> u64 {
    (d.window.nanos() / 1_000_000).max(1)
}

/// One of our subjects: the benchmark with a given number of worker
/// processes.
#[derive(Debug)]
struct Ours {
    worker: Vec<OsString>,
    workers: u64,
    server: &'static [&'static str],
}

impl Runner for Ours {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        let steps = bench_args(section(workload)?, self.workers, self.server);
        ctx.progress.set_length(steps.len() as u64);
        let mut reports = Vec::new();
        for (i, args) in steps.iter().enumerate() {
            reports.extend(self.bench(args)?);
            ctx.progress.set_position(i as u64 + 1);
        }
        Ok(one_repeat(reports))
    }
}

impl Ours {
    /// Runs `workbench redis-worker bench ARGS` and parses its report lines.
    fn bench(&self, args: &[String]) -> Result<Vec<Vec<Measurement>>, RunError> {
        let (exe, prefix) = self
            .worker
            .split_first()
            .ok_or_else(|| RunError::Child("no worker command".into()))?;
        let out = Command::new(exe)
            .args(prefix)
            .arg("bench")
            .args(args)
            .output()
            .map_err(|e| RunError::Child(format!("running {}: {e}", exe.to_string_lossy())))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(RunError::Child(format!(
                "the benchmark failed: {}",
                err.trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let reports: Vec<Vec<Measurement>> = text
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(parse_report)
            .collect::<Result<_, _>>()?;
        if reports.is_empty() {
            return Err(RunError::Child("the benchmark printed no results".into()));
        }
        Ok(reports)
    }
}

/// The `bench` argument lists of one repeat of ours with `workers`
/// processes against `server` (the benchmark's server flags): drain, paced,
/// and on one worker on a plain Redis the ceiling and the idle worker.
fn bench_args(d: &Distributed, workers: u64, server: &[&str]) -> Vec<Vec<String>> {
    let shape = |shape: &str, jobs: u64| {
        let mut a = vec![
            "--shape".to_owned(),
            shape.to_owned(),
            "--workers".to_owned(),
            workers.to_string(),
            "--jobs".to_owned(),
            jobs.to_string(),
            "--threads".to_owned(),
            d.threads.to_string(),
            "--shards".to_owned(),
            d.shards.to_string(),
        ];
        if shape == "paced" {
            a.extend(["--window-ms".to_owned(), window_ms(d).to_string()]);
        }
        a.extend(server.iter().map(|s| (*s).to_owned()));
        a
    };
    let mut steps = vec![shape("drain", d.drain), shape("paced", d.paced)];
    if workers == 1 && server.is_empty() {
        steps.push(
            [
                "--shape",
                "ceiling",
                "--batch",
                &CEILING_BATCH.to_string(),
                "--jobs",
                &d.drain.to_string(),
                "--shards",
                &d.shards.to_string(),
            ]
            .map(str::to_owned)
            .to_vec(),
        );
        steps.push(
            [
                "--shape",
                "idle",
                "--shards",
                &d.shards.to_string(),
                "--seconds",
                &d.idle.0.as_secs().max(1).to_string(),
            ]
            .map(str::to_owned)
            .to_vec(),
        );
    }
    steps
}

/// One repeat's measurements from its shapes' reports: the jobs missed by
/// every shape summed into one figure (one sample per repeat).
fn one_repeat(reports: Vec<Vec<Measurement>>) -> Vec<Measurement> {
    let mut missed = None;
    let mut out = Vec::new();
    for m in reports.into_iter().flatten() {
        if m.metric == Metric::Missed {
            *missed.get_or_insert(0.0) += m.value;
        } else {
            out.push(m);
        }
    }
    out.extend(missed.map(|n| Measurement::new(Metric::Missed, n)));
    out
}

/// A report line of either benchmark that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BadReport {
    /// Not JSON.
    #[error("bad benchmark output {line:?}: {source}")]
    Json {
        /// The line.
        line: String,
        /// Why.
        source: serde_json::Error,
    },
    /// A field is missing or not a number.
    #[error("benchmark output lacks {field}: {line}")]
    Lacks {
        /// The field's path (`lateness_ms.p99`).
        field: String,
        /// The line.
        line: String,
    },
    /// A shape this workbench does not know.
    #[error("unknown shape {shape:?}: {line}")]
    Shape {
        /// The shape named.
        shape: String,
        /// The line.
        line: String,
    },
}

impl From<BadReport> for RunError {
    fn from(e: BadReport) -> RunError {
        RunError::Child(e.to_string())
    }
}

/// Parses one JSON line of `workbench redis-worker bench` or of
/// `bullmq/bench.mjs` into measurements: drain and paced give their figures
/// and the jobs that did not run ([`Metric::Missed`]), `ceiling` and `idle`
/// one figure each.
///
/// # Errors
///
/// [`BadReport`], naming the line and what it lacks.
pub fn parse_report(line: &str) -> Result<Vec<Measurement>, BadReport> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|source| BadReport::Json {
        line: line.to_owned(),
        source,
    })?;
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(&v, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| BadReport::Lacks {
                field: path.join("."),
                line: line.to_owned(),
            })
    };
    let shape = v
        .get("shape")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| BadReport::Lacks {
            field: "shape".into(),
            line: line.to_owned(),
        })?;
    let m = Measurement::new;
    let mut out = Vec::new();
    match shape {
        "drain" | "paced" => {
            let drain = shape == "drain";
            let jobs = field(&["jobs"])?;
            let calls: f64 = v["redis"]["calls"]
                .as_object()
                .map(|m| m.values().filter_map(serde_json::Value::as_f64).sum())
                .unwrap_or(0.0);
            let (cpu, calls_per_job, round_trips) = if drain {
                (
                    Metric::RedisCpuDrain,
                    Metric::RedisCallsDrain,
                    Metric::RoundTripsDrain,
                )
            } else {
                (
                    Metric::RedisCpuPaced,
                    Metric::RedisCallsPaced,
                    Metric::RoundTripsPaced,
                )
            };
            out.push(m(cpu, field(&["redis", "cpu_us_per_job"])?));
            out.push(m(calls_per_job, calls / jobs.max(1.0)));
            if let Some(r) = v["round_trips_per_job"].as_f64() {
                out.push(m(round_trips, r));
            }
            if drain {
                out.push(m(Metric::DrainJobsPerS, field(&["jobs_per_sec"])?));
            } else {
                for ((metric, _), key) in Metric::PACED.iter().zip(["p50", "p90", "p99", "max"]) {
                    out.push(m(*metric, field(&["lateness_ms", key])? * 1000.0));
                }
            }
            // At-least-once: a job may run twice, never less than once.
            out.push(m(Metric::Missed, (jobs - field(&["runs"])?).max(0.0)));
        }
        "ceiling" => out.push(m(Metric::ClaimCeiling, field(&["jobs_per_sec"])?)),
        "idle" => out.push(m(
            Metric::IdleRoundTrips,
            field(&["round_trips_per_s_per_shard"])?,
        )),
        other => {
            return Err(BadReport::Shape {
                shape: other.to_owned(),
                line: line.to_owned(),
            })
        }
    }
    Ok(out)
}

/// What the reader should know beside the figures of each distributed
/// workload of `results`: how close one worker drains to the claim-script
/// ceiling, and how it compares with BullMQ at the same concurrency.
pub fn notes(results: &Results) -> Vec<String> {
    let (ours, peer) = (OURS[0].name, bullmq::SUBJECTS[0].1);
    let mut out = Vec::new();
    for w in &results.workloads {
        let value = |s: &str, m| results.value(s, &w.name, m, None);
        let Some(drain) = value(ours, Metric::DrainJobsPerS) else {
            continue;
        };
        if let Some(c) = value(ours, Metric::ClaimCeiling) {
            out.push(format!(
                "{}: {ours} drains at {:.0}% of the claim-script ceiling measured on the same Redis ({drain:.0} of {c:.0} jobs/s)",
                w.name,
                100.0 * drain / c
            ));
        }
        if let Some(b) = value(peer, Metric::DrainJobsPerS) {
            out.push(format!(
                "{}: {ours} drains {:.1}× as fast as {peer} (BullMQ) at the same concurrency ({drain:.0} vs {b:.0} jobs/s)",
                w.name,
                drain / b
            ));
        }
        // What acknowledged writes cost, and a Cluster against one Redis.
        for (base, variant, what) in [
            (
                "redis-1w",
                "redis-fsync-1w",
                "Durability::Fsync (appendfsync always) against Async",
            ),
            (
                "redis-2w",
                "redis-cluster-2w",
                "a 3-master Cluster against one Redis",
            ),
            (
                "redis-cluster-2w",
                "redis-cluster-wait-2w",
                "Durability::Replicas(1) (WAIT 1) against Async on the Cluster",
            ),
        ] {
            let fig = |s: &str| {
                (
                    value(s, Metric::DrainJobsPerS),
                    value(s, Metric::RedisCpuDrain),
                    value(s, Metric::PacedP50),
                    value(s, Metric::PacedP99),
                )
            };
            if let (
                (Some(d0), Some(c0), Some(p50a), Some(p99a)),
                (Some(d1), Some(c1), Some(p50b), Some(p99b)),
            ) = (fig(base), fig(variant))
            {
                out.push(format!(
                    "{}: {what}: {variant} drains {d1:.0} jobs/s against {base}'s {d0:.0} ({:+.0}%), \
                     Redis CPU per drained job {c1:.1} µs against {c0:.1} µs, paced p50/p99 {:.0}/{:.0} ms against {:.0}/{:.0} ms",
                    w.name,
                    100.0 * (d1 - d0) / d0,
                    p50b / 1000.0,
                    p99b / 1000.0,
                    p50a / 1000.0,
                    p99a / 1000.0,
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    const DRAIN: &str = r#"{"shape":"drain","workers":2,"jobs":100,"runs":100,"jobs_per_sec":25000.0,"lateness_ms":{"p50":1,"p90":3,"p99":7,"max":9},"round_trips_per_job":0.05,"redis":{"cpu_us_per_job":30.5,"calls":{"evalsha":10,"zadd":40}}}"#;

    #[test]
    fn parses_every_shape() {
        let r = parse_report(DRAIN).unwrap();
        let has = |r: &[Measurement], m, v| r.contains(&Measurement::new(m, v));
        assert!(has(&r, Metric::DrainJobsPerS, 25000.0));
        assert!(has(&r, Metric::RedisCpuDrain, 30.5));
        assert!(has(&r, Metric::RedisCallsDrain, 0.5));
        assert!(has(&r, Metric::RoundTripsDrain, 0.05));
        assert!(has(&r, Metric::Missed, 0.0));
        let paced = parse_report(&DRAIN.replace("\"drain\"", "\"paced\"")).unwrap();
        assert!(has(&paced, Metric::PacedP99, 7000.0));
        assert!(has(&paced, Metric::PacedMax, 9000.0));
        assert!(has(&paced, Metric::RedisCpuPaced, 30.5));
        assert!(!paced.iter().any(|m| m.metric == Metric::DrainJobsPerS));
        assert_eq!(
            parse_report(r#"{"shape":"ceiling","jobs_per_sec":50000}"#).unwrap(),
            [Measurement::new(Metric::ClaimCeiling, 50000.0)]
        );
        assert_eq!(
            parse_report(r#"{"shape":"idle","round_trips_per_s_per_shard":0.4}"#).unwrap(),
            [Measurement::new(Metric::IdleRoundTrips, 0.4)]
        );
        let e = parse_report(r#"{"shape":"drain","workers":2}"#).unwrap_err();
        assert!(e.to_string().contains("lacks jobs"), "{e}");
        assert!(matches!(
            parse_report(r#"{"shape":"storm"}"#),
            Err(BadReport::Shape { .. })
        ));
    }

    #[test]
    fn jobs_that_did_not_run_are_missed_and_counted_once_per_repeat() {
        let short = parse_report(&DRAIN.replace("\"runs\":100", "\"runs\":97")).unwrap();
        let paced = parse_report(
            &DRAIN
                .replace("\"drain\"", "\"paced\"")
                .replace("\"runs\":100", "\"runs\":99"),
        )
        .unwrap();
        let rep = one_repeat(vec![short, paced]);
        let missed: Vec<f64> = rep
            .iter()
            .filter(|m| m.metric == Metric::Missed)
            .map(|m| m.value)
            .collect();
        assert_eq!(missed, [4.0]);
        // A job run twice (a lease lost) is not a negative miss.
        let twice = parse_report(&DRAIN.replace("\"runs\":100", "\"runs\":101")).unwrap();
        assert!(twice.contains(&Measurement::new(Metric::Missed, 0.0)));
    }

    #[test]
    fn the_shipped_workload_maps_to_the_benchmark_arguments() {
        let w = crate::workloads::shipped()
            .unwrap()
            .into_iter()
            .find(|w| w.name == "distributed")
            .unwrap()
            .quick();
        let d = w.distributed.as_ref().unwrap();
        let lines: Vec<String> = bench_args(d, 1, &[]).iter().map(|a| a.join(" ")).collect();
        assert_eq!(
            lines,
            [
                "--shape drain --workers 1 --jobs 20000 --threads 4 --shards 8",
                "--shape paced --workers 1 --jobs 10000 --threads 4 --shards 8 --window-ms 4000",
                "--shape ceiling --batch 64 --jobs 20000 --shards 8",
                "--shape idle --shards 8 --seconds 5",
            ]
        );
        // The ceiling and the idle worker once per repeat, on one worker.
        assert_eq!(bench_args(d, 4, &[]).len(), 2);
        let fsync = &OURS[3];
        let lines: Vec<String> = bench_args(d, fsync.workers, fsync.server)
            .iter()
            .map(|a| a.join(" "))
            .collect();
        assert_eq!(
            lines,
            [
                "--shape drain --workers 1 --jobs 20000 --threads 4 --shards 8 --appendfsync always --durability fsync",
                "--shape paced --workers 1 --jobs 10000 --threads 4 --shards 8 --window-ms 4000 --appendfsync always --durability fsync",
            ]
        );
    }
}
