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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::record::{
    metric, summarize, unit, Environment, Record, Results, SubjectInfo, SubjectKind, WorkloadInfo,
};

/// The workload's name in reports and on the command line.
pub const WORKLOAD: &str = "distributed";

/// The subject-name prefix (`redis-1w`, `redis-2w`, …), also accepted by
/// `-s redis`.
pub const SUBJECT_PREFIX: &str = "redis";

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Worker-process counts, one run each.
    pub workers: Vec<u64>,
    /// Jobs per run.
    pub jobs: u64,
    /// Due times spread evenly over this window, ms.
    pub window_ms: u64,
    /// Handler threads per worker process.
    pub threads: u64,
}

impl Plan {
    /// The plan for a size profile: `quick` (1e4 jobs over 4 s), `full`
    /// (1e5 over 20 s), or a factor of the full size.
    pub fn for_size(size: &str) -> Plan {
        let (jobs, window_ms) = match size {
            "quick" => (10_000, 4_000),
            "full" => (100_000, 20_000),
            f => {
                let factor = f.parse::<f64>().unwrap_or(1.0).clamp(0.001, 100.0);
                (
                    ((100_000.0 * factor) as u64).max(100),
                    ((20_000.0 * factor) as u64).max(500),
                )
            }
        };
        Plan {
            workers: vec![1, 2, 4],
            jobs,
            window_ms,
            threads: 4,
        }
    }

    /// The report's description of the workload.
    pub fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: WORKLOAD.to_owned(),
            description: format!(
                "{} no-op jobs due evenly over {} ms on the Redis scheduler, run by {} worker process(es) of {} threads",
                self.jobs,
                self.window_ms,
                self.workers.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
                self.threads
            ),
            models: "durable jobs shared by several worker processes (seeds 000 and 004: a Redis time wheel)".to_owned(),
            seed: 0,
            summary: vec![format!(
                "jobs {} · window {} ms · workers {:?} · {} threads each · 8 shards · lateness = claim − due on Redis's clock (ms resolution)",
                self.jobs, self.window_ms, self.workers, self.threads
            )],
            sweep: false,
        }
    }
}

/// Whether the distributed workload is selected by `-s`/`-w` lists (empty
/// means everything).
pub fn selected(subjects: &[String], workloads: &[String]) -> bool {
    (subjects.is_empty() || subjects.iter().any(|s| s.starts_with(SUBJECT_PREFIX)))
        && (workloads.is_empty() || workloads.iter().any(|w| w == WORKLOAD))
}

/// Runs the plan `repeats` times and adds its subjects, workload and
/// records to `results`; a reason it could not run becomes a note.
pub fn run_into(results: &mut Results, plan: &Plan, repeats: usize, env: &Environment) {
    match run(plan, repeats, env) {
        Ok(records) => {
            for w in &plan.workers {
                results.subjects.push(SubjectInfo {
                    name: subject_name(*w),
                    kind: SubjectKind::Algorithm,
                    about: format!(
                        "schedulers::distributed on Redis: {w} worker process(es) × {} threads, leases + fencing, at-least-once",
                        plan.threads
                    ),
                });
            }
            results.workloads.push(plan.info());
            results.records.extend(records);
        }
        Err(why) => results.notes.push(format!("{WORKLOAD} skipped: {why}")),
    }
}

fn subject_name(workers: u64) -> String {
    format!("{SUBJECT_PREFIX}-{workers}w")
}

/// Builds the worker binary and runs the benchmark; one record per
/// (worker count, metric), the median over repeats.
pub fn run(plan: &Plan, repeats: usize, env: &Environment) -> Result<Vec<Record>, String> {
    let exe = worker_binary()?;
    let mut samples: BTreeMap<(u64, &'static str), Vec<f64>> = BTreeMap::new();
    for rep in 0..repeats.max(1) {
        eprintln!(
            "workbench: {WORKLOAD}: repeat {}/{} ({} jobs, workers {:?})",
            rep + 1,
            repeats.max(1),
            plan.jobs,
            plan.workers
        );
        let workers = plan
            .workers
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let out = Command::new(&exe)
            .args(["bench", "--workers", &workers])
            .args([
                "--jobs",
                &plan.jobs.to_string(),
                "--window-ms",
                &plan.window_ms.to_string(),
            ])
            .args(["--threads", &plan.threads.to_string(), "--lead-ms", "1000"])
            .output()
            .map_err(|e| format!("running {}: {e}", exe.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!("the benchmark failed: {}", err.trim()));
        }
        for line in String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with('{'))
        {
            for (w, name, value) in parse_line(line)? {
                samples.entry((w, name)).or_default().push(value);
            }
        }
    }
    if samples.is_empty() {
        return Err("the benchmark printed no results".into());
    }
    Ok(samples
        .into_iter()
        .map(|((w, name), values)| {
            let (value, spread) = summarize(&values);
            let unit = if name == metric::FIRES_PER_S {
                unit::PER_S
            } else {
                unit::US
            };
            Record {
                scheduler: subject_name(w),
                workload: WORKLOAD.to_owned(),
                metric: name.to_owned(),
                value,
                unit: unit.to_owned(),
                size: None,
                samples: values,
                spread,
                seed: 0,
                env: env.clone(),
            }
        })
        .collect())
}

/// One JSON line of `schedulers-redis-worker bench` as (workers, metric,
/// value): throughput and lateness in µs (Redis gives milliseconds).
fn parse_line(line: &str) -> Result<Vec<(u64, &'static str, f64)>, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("bad benchmark output {line:?}: {e}"))?;
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(&v, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("benchmark output lacks {}: {line}", path.join(".")))
    };
    let workers = field(&["workers"])? as u64;
    let [p50, p90, p99, _, max] = metric::LATENESS;
    Ok(vec![
        (workers, metric::FIRES_PER_S, field(&["jobs_per_sec"])?),
        (workers, p50, field(&["lateness_ms", "p50"])? * 1000.0),
        (workers, p90, field(&["lateness_ms", "p90"])? * 1000.0),
        (workers, p99, field(&["lateness_ms", "p99"])? * 1000.0),
        (workers, max, field(&["lateness_ms", "max"])? * 1000.0),
    ])
}

/// Builds `schedulers-redis-worker` (release, feature `redis`) and returns
/// its path.
fn worker_binary() -> Result<PathBuf, String> {
    if which("redis-server").is_none() {
        return Err("redis-server is not installed (Debian: apt-get install redis-server)".into());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace root")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("workbench: {WORKLOAD}: building schedulers-redis-worker (cargo build --release --features redis)");
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
        assert!(got.contains(&(2, metric::FIRES_PER_S, 2500.0)));
        assert!(got.contains(&(2, "lateness_p99", 7000.0)));
        assert!(parse_line(r#"{"workers":2}"#)
            .unwrap_err()
            .contains("jobs_per_sec"));
    }

    #[test]
    fn selection_follows_the_lists() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(selected(&[], &[]));
        assert!(selected(&s(&["redis"]), &[]));
        assert!(!selected(&s(&["heap"]), &[]));
        assert!(!selected(&[], &s(&["burst"])));
        assert!(selected(
            &s(&["heap", "redis-2w"]),
            &s(&["burst", "distributed"])
        ));
    }
}
