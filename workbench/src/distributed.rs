//! The distributed workload: the durable Redis scheduler
//! (`schedulers::distributed`) with 1, 2 and 4 worker processes against one
//! local `redis-server`.
//!
//! It does not fit the in-process runner (its subjects are groups of
//! processes), so it runs beside the suite: the workbench builds the
//! `schedulers-redis-worker` binary with cargo, runs its `bench` mode once
//! per repeat (which starts its own `redis-server` on a free loopback port,
//! spawns the worker processes for each count in turn, schedules no-op jobs
//! due over a window and waits until every one was acked), and turns its
//! JSON lines into ordinary records: throughput (`fires_per_s`, jobs acked
//! per second from the first due time to the last ack) and lateness
//! percentiles (claim time − due time, both on Redis's clock, so
//! millisecond resolution).
//!
//! No `redis-server`, or no way to build the binary: the workload is
//! skipped with one note, never a failure of the run.

//! The distributed workload's subjects: the durable Redis scheduler
//! (`schedulers::distributed`) with 1, 2 and 4 worker processes against one
//! local `redis-server`. Everything Redis-specific of the workbench is in
//! this module.
//!
//! Each subject is a [`Runner`] like any other, run by the suite on
//! workloads with a `[distributed]` section (`workloads/distributed.toml`):
//! one repeat runs the `schedulers-redis-worker` binary's `bench` mode once
//! (which starts its own `redis-server` on a free loopback port, spawns the
//! worker processes, schedules no-op jobs due over the window and waits
//! until every one was acked) and turns its JSON line into measurements:
//! throughput (`fires_per_s`, jobs acked per second from the first due time
//! to the last ack) and lateness percentiles (claim time − due time, both
//! on Redis's clock, so millisecond resolution).
//!
//! No `redis-server`, or no way to build the binary: the subjects are
//! skipped with one note, never a failure of the run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use crate::record::{Measurement, Metric, SubjectKind};
use crate::runner::{RunContext, RunError, Runner};
use crate::spec::{Distributed, Workload, WorkloadKind};
use crate::subjects::{Subject, Unavailable};

/// Worker-process counts, one subject each.
pub const WORKERS: [u64; 3] = [1, 2, 4];

/// The subjects: `redis-1w`, `redis-2w`, `redis-4w`.
pub fn subjects() -> Vec<Subject> {
    WORKERS
        .iter()
        .map(|&w| {
            let name: &'static str = match w {
                1 => "redis-1w",
                2 => "redis-2w",
                _ => "redis-4w",
            };
            Subject {
                name,
                kind: SubjectKind::Algorithm,
                about: match w {
                    1 => "schedulers::distributed on one local Redis: 1 worker process, leases + fencing, at-least-once",
                    2 => "schedulers::distributed on one local Redis: 2 worker processes, leases + fencing, at-least-once",
                    _ => "schedulers::distributed on one local Redis: 4 worker processes, leases + fencing, at-least-once",
                },
                workloads: &[WorkloadKind::Distributed],
                runner: Arc::new(move || {
                    let exe = worker_binary().map_err(Unavailable)?;
                    Ok(Box::new(RedisRunner { exe, workers: w }) as Box<dyn Runner>)
                }),
                timers: None,
            }
        })
        .collect()
}

/// One subject: the benchmark with a given number of worker processes.
#[derive(Debug)]
struct RedisRunner {
    exe: PathBuf,
    workers: u64,
}

impl Runner for RedisRunner {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        let Some(d) = &workload.distributed else {
            return Err(RunError::Inconsistent(format!(
                "{} is not a distributed workload",
                workload.name
            )));
        };
        ctx.progress.set_length(1);
        let out = Command::new(&self.exe)
            .args(args(d, self.workers))
            .output()
            .map_err(|e| RunError::Child(format!("running {}: {e}", self.exe.display())))?;
        ctx.progress.set_position(1);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(RunError::Child(format!(
                "the benchmark failed: {}",
                err.trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with('{'))
            .ok_or_else(|| RunError::Child("the benchmark printed no results".into()))?;
        parse_line(line).map_err(RunError::Child)
    }
}

fn args(d: &Distributed, workers: u64) -> Vec<String> {
    [
        "bench".to_owned(),
        "--workers".to_owned(),
        workers.to_string(),
        "--jobs".to_owned(),
        d.jobs.to_string(),
        "--window-ms".to_owned(),
        (d.window.nanos() / 1_000_000).max(1).to_string(),
        "--threads".to_owned(),
        d.threads.to_string(),
        "--lead-ms".to_owned(),
        "1000".to_owned(),
    ]
    .to_vec()
}

/// One JSON line of `schedulers-redis-worker bench` as measurements:
/// throughput and lateness in µs (Redis gives milliseconds).
fn parse_line(line: &str) -> Result<Vec<Measurement>, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("bad benchmark output {line:?}: {e}"))?;
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(&v, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("benchmark output lacks {}: {line}", path.join(".")))
    };
    let ms = |p: &str| field(&["lateness_ms", p]).map(|x| x * 1000.0);
    Ok(vec![
        Measurement::new(Metric::FiresPerS, field(&["jobs_per_sec"])?),
        Measurement::new(Metric::LatenessP50, ms("p50")?),
        Measurement::new(Metric::LatenessP90, ms("p90")?),
        Measurement::new(Metric::LatenessP99, ms("p99")?),
        Measurement::new(Metric::LatenessMax, ms("max")?),
    ])
}

/// Builds `schedulers-redis-worker` (release, feature `redis`) once per
/// process and returns its path.
fn worker_binary() -> Result<PathBuf, String> {
    static EXE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    EXE.get_or_init(build_worker_binary).clone()
}

fn build_worker_binary() -> Result<PathBuf, String> {
    if which("redis-server").is_none() {
        return Err("redis-server is not installed (Debian: apt-get install redis-server)".into());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace root")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "workbench: building schedulers-redis-worker (cargo build --release --features redis)"
    );
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "schedulers",
            "--features",
            "redis",
        ])
        .args(["--bin", "schedulers-redis-worker"])
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !status.success() {
        return Err("cargo could not build schedulers-redis-worker".into());
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let exe = target.join("release").join("schedulers-redis-worker");
    if exe.is_file() {
        Ok(exe)
    } else {
        Err(format!("built, but {} is missing", exe.display()))
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn parses_a_benchmark_line() {
        let line = r#"{"workers":2,"jobs":100,"jobs_per_sec":2500.0,"lateness_ms":{"p50":1,"p90":3,"p99":7,"max":9}}"#;
        let got = parse_line(line).unwrap();
        assert!(got.contains(&Measurement::new(Metric::FiresPerS, 2500.0)));
        assert!(got.contains(&Measurement::new(Metric::LatenessP99, 7000.0)));
        assert!(parse_line(r#"{"workers":2}"#)
            .unwrap_err()
            .contains("jobs_per_sec"));
    }

    #[test]
    fn the_shipped_workload_maps_to_the_benchmark_arguments() {
        let w = crate::workloads::shipped()
            .unwrap()
            .into_iter()
            .find(|w| w.name == "distributed")
            .unwrap()
            .quick();
        let a = args(w.distributed.as_ref().unwrap(), 2);
        assert_eq!(
            a.join(" "),
            "bench --workers 2 --jobs 10000 --window-ms 4000 --threads 4 --lead-ms 1000"
        );
    }
}
