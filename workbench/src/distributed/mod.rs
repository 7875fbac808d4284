//! The distributed workload's subjects: capacity and latency of the durable
//! Redis scheduler (crate `schedulers-redis`) with 1, 2 and 4 worker
//! processes (`redis-1w`, `redis-2w`, `redis-4w`), with acknowledged writes
//! (`redis-fsync-1w`), and on a local Redis Cluster (`redis-cluster-2w`,
//! and `redis-cluster-wait-2w` with `WAIT 1`), every measurement against a
//! fresh local `redis-server` (or Cluster) started by the load benchmark
//! ([`mod@bench`]). BullMQ, their peer, is [`crate::peers::bullmq`].
//!
//! Each subject is a [`Runner`] like any other, run by the suite on
//! workloads with a `[distributed]` section (`workloads/distributed.toml`,
//! see [`Distributed`]). One repeat measures two shapes apart, because a
//! paced load shows only the offered rate:
//!
//! - **drain** (capacity): N no-op jobs already due, then the workers start;
//!   jobs/s from the first start to the last ack ([`Metric::DrainJobsPerS`](crate::record::Metric::DrainJobsPerS));
//! - **paced** (latency): N jobs due evenly over a window, below capacity;
//!   lateness (start − due, ms resolution) p50/p90/p99/max
//!   ([`Metric::PACED`](crate::record::Metric::PACED), µs). Ours is on Redis's clock, BullMQ's on the
//!   host's (the same host).
//!
//! For both: Redis's CPU time per job (`INFO cpu` over the measured window),
//! Redis commands per job (`INFO commandstats`, which counts the commands
//! scripts run too), for ours the workers' round trips per job, and the jobs
//! that never ran ([`Metric::Missed`](crate::record::Metric::Missed): a repeat with any is left out of the
//! medians). Once per repeat, on `redis-1w`: the claim-script ceiling (our
//! claim script alone claims a backlog back to back, [`CEILING_BATCH`] per
//! call: jobs per second of Redis CPU, the most one Redis core hands out)
//! and an idle worker's round trips per second per shard.
//!
//! Each step of a repeat is the command line of `workbench redis-bench`
//! that reproduces it by hand. Our worker processes are
//! this very binary (`workbench redis-worker …`, the command line of
//! `schedulers-redis-worker work`, [`schedulers_redis::cli`]): built with
//! the workbench, so no `cargo build` runs in the middle of a run, and the
//! worker is always the code the report describes.
//!
//! On the calendar workload, [`cron`] (`redis-cron`): calendar jobs and
//! one worker in this process.
//!
//! No `redis-server`: every subject here is skipped with one note.

pub mod bench;
pub mod cron;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use clap::Parser;

use self::bench::{one_repeat, section, window_ms, BenchArgs};
use crate::record::{Measurement, SubjectKind};
use crate::runner::{RunContext, RunError, Runner, Subject, Unavailable};
use crate::spec::{Distributed, Workload, WorkloadKind};

/// The hidden subcommand of the workbench binary that is the worker.
pub const WORKER_SUBCOMMAND: &str = "redis-worker";

/// Jobs per call of the claim script in the ceiling measurement: the
/// worker's default batch.
pub const CEILING_BATCH: u64 = 64;

/// The workbench executable, whose [`WORKER_SUBCOMMAND`] is the worker:
/// `workbench run` and `workbench redis-bench` set it to themselves, a test
/// to `CARGO_BIN_EXE_workbench`. Unset, our subjects cannot run (and say
/// so).
pub static WORKER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// The command that starts `exe` as a worker: `exe redis-worker`, followed
/// by `work` and its flags.
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
        about: "schedulers-redis on a fresh local Redis: 1 worker process, batched claims into a local buffer, \
         Pub/Sub wake-ups, pipelined acks, leases + fencing, at-least-once",
        server: &[],
    },
    OurSubject {
        workers: 2,
        name: "redis-2w",
        about: "schedulers-redis on a fresh local Redis: 2 worker processes, batched claims into a local buffer, \
         Pub/Sub wake-ups, pipelined acks, leases + fencing, at-least-once",
        server: &[],
    },
    OurSubject {
        workers: 4,
        name: "redis-4w",
        about: "schedulers-redis on a fresh local Redis: 4 worker processes, batched claims into a local buffer, \
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
/// `redis-cluster-2w`, `redis-cluster-wait-2w`, and on the calendar
/// workload [`cron::NAME`].
pub fn subjects() -> Vec<Subject> {
    let mut v: Vec<Subject> = OURS
        .iter()
        .map(|o| {
            let (workers, server) = (o.workers, o.server);
            Subject {
                name: o.name,
                kind: SubjectKind::Algorithm,
                about: o.about,
                workloads: &[WorkloadKind::Distributed],
                runner: Arc::new(move || {
                    if schedulers_redis::find_redis_server().is_none() {
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
        .collect();
    v.push(cron::subject());
    v
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
    /// Runs the benchmark with the flags `args` (as `workbench redis-bench
    /// ARGS` would) and reads its reports.
    fn bench(&self, args: &[String]) -> Result<Vec<Vec<Measurement>>, RunError> {
        let flags = BenchArgs::try_parse_from(
            std::iter::once("redis-bench").chain(args.iter().map(String::as_str)),
        )
        .map_err(|e| RunError::Inconsistent(format!("benchmark flags {args:?}: {e}")))?;
        let mut reports = Vec::new();
        bench::run(&flags, &self.worker, &mut |v| {
            reports.push(bench::measurements(&v))
        })?;
        let reports = reports.into_iter().collect::<Result<Vec<_>, _>>()?;
        if reports.is_empty() {
            return Err(RunError::Child("the benchmark reported nothing".into()));
        }
        Ok(reports)
    }
}

/// The benchmark's flags for each step of one repeat of ours with `workers`
/// processes against `server` (the benchmark's server flags): drain, paced,
/// and on one worker on a plain Redis the ceiling and the idle worker. Each
/// is the command line of `workbench redis-bench` that reproduces its step.
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

#[cfg(test)]
mod test {
    use super::*;

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
        // Every step of every subject is a command line the benchmark takes.
        for o in &OURS {
            for args in bench_args(d, o.workers, o.server) {
                let flags = std::iter::once("redis-bench").chain(args.iter().map(String::as_str));
                if let Err(e) = BenchArgs::try_parse_from(flags) {
                    panic!("{}: {args:?}: {e}", o.name);
                }
            }
        }
    }
}
