//! The load benchmark of the Redis scheduler: it starts fresh servers and
//! worker processes, drives one load shape, and reports what it measured as
//! one JSON object per run. Our subjects run it in process; by hand it is
//! `workbench redis-bench` (see [`BenchArgs`]):
//!
//! ```text
//! workbench redis-bench [--shape drain|paced|ceiling|idle] [--url URL]
//!     [--workers 1,2,4] [--jobs 20000] [--window-ms 4000] [--lead-ms 1000]
//!     [--threads 4] [--shards 8] [--batch N] [--buffer N] [--poll-ms N] [--lease-ms N]
//!     [--cluster MASTERS [--replicas 1]] [--appendfsync everysec|always]
//!     [--durability async|fsync|replicas:N] [--durability-timeout-ms N]
//! ```
//!
//! - `drain`: `--jobs` no-op jobs already due, then the workers start;
//!   jobs/s from the first claim to the last ack (Redis clock);
//! - `paced`: the workers run, then `--jobs` no-op jobs due evenly over
//!   `--window-ms` from `--lead-ms` ahead; lateness (start − due, Redis
//!   clock) percentiles, and jobs/s from the first due time to the last ack;
//! - `ceiling`: the claim script alone claims a backlog of `--jobs`, back to
//!   back, `--batch` per call ([`schedulers_redis::claim_ceiling`]): jobs per
//!   second of Redis CPU, the most one Redis core hands out (the client's
//!   wall-clock rate beside it);
//! - `idle`: one worker, `--pending` jobs an hour ahead: its Redis round
//!   trips per second over `--seconds`.
//!
//! Drain and paced run once per count in `--workers`, each against a fresh
//! `redis-server` (unless `--url` is given), or a fresh local Redis Cluster
//! of `--cluster` masters (with `--replicas` each; Redis's counters are
//! summed over the masters). `--appendfsync` sets the fresh servers' AOF
//! policy and `--durability` the clients' (`fsync` on Redis 7.0 needs
//! `--appendfsync always`; `replicas:N` a Cluster with replicas). Every
//! report has Redis's own cost over the measured window (CPU time from
//! `INFO cpu`, calls per command from `INFO commandstats`, which counts the
//! commands scripts run too, and the scripts' time), the workers' round
//! trips, and the load average.
//!
//! The worker processes are `schedulers-redis-worker work` processes
//! ([`schedulers_redis::cli`]), started as this binary's `redis-worker`
//! subcommand with `--summary`: each counts its runs and lateness and
//! answers `stats` on its standard input.
//!
//! The report's format is also what BullMQ's harness prints
//! ([`crate::peers::bullmq`]); [`parse_report`] reads both.

// A benchmark of processes and servers: it waits and measures in real time.
// The scheduling decisions themselves are made on Redis's clock.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use schedulers_redis::cli::ConfigArgs;
use schedulers_redis::{
    claim_ceiling, Job, LocalCluster, LocalRedis, LocalServerError, RedisScheduler,
};
use serde_json::json;

use crate::record::{Measurement, Metric};
use crate::runner::RunError;
use crate::spec::{Distributed, Workload};

/// The load shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shape {
    /// A backlog already due, then the workers start: capacity.
    Drain,
    /// Jobs due evenly over a window, below capacity: lateness.
    Paced,
    /// The claim script alone, back to back: Redis's ceiling.
    Ceiling,
    /// One worker with nothing due: its round trips per second.
    Idle,
}

/// The AOF policy of the fresh servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Appendfsync {
    /// Redis's default: fsync once a second.
    Everysec,
    /// Fsync before every reply.
    Always,
}

/// The benchmark's flags: `workbench redis-bench --help`.
#[derive(Clone, Debug, Parser)]
#[command(name = "redis-bench")]
pub struct BenchArgs {
    /// The load shape.
    #[arg(long, value_enum, default_value_t = Shape::Paced)]
    pub shape: Shape,
    /// An existing Redis (default: a fresh local server per run).
    #[arg(long, conflicts_with = "cluster")]
    pub url: Option<String>,
    /// Worker process counts, one run each (drain, paced).
    #[arg(long, value_delimiter = ',', default_value = "1",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub workers: Vec<u64>,
    /// Jobs (default: 20,000; 100,000 for the ceiling).
    #[arg(long)]
    pub jobs: Option<u64>,
    /// The paced window, in ms.
    #[arg(long, value_name = "MS", default_value_t = 4000)]
    pub window_ms: u64,
    /// How far ahead of now the paced window opens, in ms.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub lead_ms: u64,
    /// Handler threads per worker process.
    #[arg(long, default_value_t = 4)]
    pub threads: u64,
    /// Jobs per claim call (workers; the ceiling's default: 64).
    #[arg(long)]
    pub batch: Option<usize>,
    /// The workers' local buffer (default: adaptive).
    #[arg(long)]
    pub buffer: Option<usize>,
    /// The workers' poll interval, in ms.
    #[arg(long, value_name = "MS")]
    pub poll_ms: Option<u64>,
    /// The workers' lease, in ms.
    #[arg(long, value_name = "MS")]
    pub lease_ms: Option<u64>,
    /// A fresh local Cluster of this many masters instead of one server.
    #[arg(long, value_name = "MASTERS")]
    pub cluster: Option<usize>,
    /// Replicas of each master of `--cluster`.
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// The AOF policy of the fresh servers.
    #[arg(long, value_enum, default_value_t = Appendfsync::Everysec)]
    pub appendfsync: Appendfsync,
    /// `idle`: seconds measured.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub seconds: u64,
    /// `idle`: jobs pending an hour ahead.
    #[arg(long, default_value_t = 10_000)]
    pub pending: u64,
    /// Layout and durability of every client (producer and workers).
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Why a benchmark run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A call of the scheduler failed.
    #[error("redis scheduler: {0}")]
    Scheduler(#[from] schedulers_redis::Error),
    /// A fresh server or Cluster did not start.
    #[error("local server: {0}")]
    Server(#[from] LocalServerError),
    /// Reading Redis's own counters failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A worker process could not be started or misbehaved.
    #[error("worker process: {0}")]
    Worker(String),
    /// Jobs were still pending when the run gave up.
    #[error("{0} jobs still pending after 600 s")]
    NotDrained(u64),
}

impl From<BenchError> for RunError {
    fn from(e: BenchError) -> RunError {
        RunError::Child(e.to_string())
    }
}

/// Runs the benchmark `args` describes and hands each run's report to
/// `report`. `worker` is the command that starts a worker process (a
/// program and the arguments before `work`'s flags).
///
/// # Errors
///
/// [`BenchError`]: a server, a worker process or Redis failed.
pub fn run(
    args: &BenchArgs,
    worker: &[OsString],
    report: &mut dyn FnMut(serde_json::Value),
) -> Result<(), BenchError> {
    match args.shape {
        Shape::Drain | Shape::Paced => {
            for &workers in &args.workers {
                // A fresh server per run (unless --url): nothing left over
                // from the previous run, and clean counters.
                let server = Server::new(args)?;
                report(bench_one(args, worker, &server, workers)?);
            }
            Ok(())
        }
        Shape::Ceiling => ceiling(args).map(report),
        Shape::Idle => idle(args, worker).map(report),
    }
}

/// A namespace no earlier run of this process used.
fn namespace(kind: &str, workers: u64) -> String {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    format!("{kind}-{}-{n}-{workers}", std::process::id())
}

fn percentile(hist: &BTreeMap<i64, u64>, p: f64) -> i64 {
    let total: u64 = hist.values().sum();
    if total == 0 {
        return 0;
    }
    let rank = ((total as f64 * p).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (v, n) in hist {
        seen += n;
        if seen >= rank {
            return *v;
        }
    }
    hist.keys().next_back().copied().unwrap_or(0)
}

/// A worker process of a benchmark run: killed on drop.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Proc {
    fn spawn(worker: &[OsString], args: &[String]) -> Result<Proc, BenchError> {
        let (exe, prefix) = worker
            .split_first()
            .ok_or_else(|| BenchError::Worker("no command to start workers with".into()))?;
        let mut child = Command::new(exe)
            .args(prefix)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::Worker(format!("{}: {e}", exe.to_string_lossy())))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| BenchError::Worker("no stdout".into()))?,
        );
        let mut p = Proc {
            child,
            stdin,
            stdout,
        };
        let line = p.line()?;
        if !line.starts_with("ready") {
            return Err(BenchError::Worker(format!("did not start: {line:?}")));
        }
        Ok(p)
    }

    fn line(&mut self) -> Result<String, BenchError> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| BenchError::Worker(e.to_string()))?;
        Ok(line)
    }

    /// The worker's counters now.
    fn counters(&mut self) -> Result<serde_json::Value, BenchError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| BenchError::Worker("stdin closed".into()))?;
        stdin
            .write_all(b"stats\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| BenchError::Worker(e.to_string()))?;
        let line = self.line()?;
        let v = line
            .strip_prefix("stats ")
            .ok_or_else(|| BenchError::Worker(format!("expected a stats line, got {line:?}")))?;
        serde_json::from_str(v).map_err(|e| BenchError::Worker(e.to_string()))
    }

    /// Graceful stop; returns the worker's summary.
    fn finish(&mut self) -> Result<serde_json::Value, BenchError> {
        drop(self.stdin.take());
        loop {
            let line = self.line()?;
            if line.is_empty() {
                return Err(BenchError::Worker("exited without a summary".into()));
            }
            if let Some(v) = line.strip_prefix("summary ") {
                let _ = self.child.wait();
                return serde_json::from_str(v).map_err(|e| BenchError::Worker(e.to_string()));
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Redis's own counters: calls and time per command (`INFO commandstats`,
/// which also counts the commands scripts run) and its CPU time.
#[derive(Debug, Default)]
pub(super) struct RedisCounters {
    calls: BTreeMap<String, u64>,
    usec: BTreeMap<String, u64>,
    /// Redis's CPU time (user + system), seconds.
    pub(super) cpu_s: f64,
}

/// Plain connections to every master (one for a single server): Redis's
/// counters are summed over them.
struct Masters(Vec<redis::Connection>);

fn redis_counters(m: &mut Masters) -> Result<RedisCounters, BenchError> {
    let mut sum = RedisCounters::default();
    for con in &mut m.0 {
        let c = node_counters(con)?;
        for (k, v) in c.calls {
            *sum.calls.entry(k).or_default() += v;
        }
        for (k, v) in c.usec {
            *sum.usec.entry(k).or_default() += v;
        }
        sum.cpu_s += c.cpu_s;
    }
    Ok(sum)
}

pub(super) fn node_counters(con: &mut redis::Connection) -> Result<RedisCounters, BenchError> {
    let text: String = redis::cmd("INFO")
        .arg("commandstats")
        .arg("cpu")
        .query(con)?;
    let mut c = RedisCounters::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cmdstat_") {
            let Some((name, fields)) = rest.split_once(':') else {
                continue;
            };
            for f in fields.split(',') {
                match f.split_once('=') {
                    Some(("calls", v)) => {
                        c.calls.insert(name.to_owned(), v.parse().unwrap_or(0));
                    }
                    Some(("usec", v)) => {
                        c.usec.insert(name.to_owned(), v.parse().unwrap_or(0));
                    }
                    _ => {}
                }
            }
        } else if let Some(v) = line
            .strip_prefix("used_cpu_sys:")
            .or_else(|| line.strip_prefix("used_cpu_user:"))
        {
            c.cpu_s += v.trim().parse::<f64>().unwrap_or(0.0);
        }
    }
    Ok(c)
}

/// Resets Redis's counters and reads them: the start of a measured window.
fn open_window(m: &mut Masters) -> Result<RedisCounters, BenchError> {
    for con in &mut m.0 {
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(con)?;
    }
    redis_counters(m)
}

/// Schedules `n` no-op jobs `<prefix><i>`, each timed by `when(i, job)`.
fn schedule_noops(
    sched: &RedisScheduler,
    prefix: &str,
    n: u64,
    when: impl Fn(u64, Job) -> Job,
) -> Result<(), BenchError> {
    let list: Vec<Job> = (0..n)
        .map(|i| Job::new(format!("{prefix}{i}"), "noop").map(|j| when(i, j)))
        .collect::<Result<_, _>>()?;
    for r in sched.schedule_many(&list)? {
        r?;
    }
    Ok(())
}

/// Commands the benchmark itself sends (not the workers).
const OWN_COMMANDS: [&str; 4] = ["hlen", "info", "config|resetstat", "time"];

fn redis_delta(before: &RedisCounters, after: &RedisCounters, jobs: u64) -> serde_json::Value {
    let mut by = serde_json::Map::new();
    let mut script_usec = 0u64;
    for (name, calls) in &after.calls {
        if OWN_COMMANDS.contains(&name.as_str()) {
            continue;
        }
        let d = calls - before.calls.get(name).copied().unwrap_or(0).min(*calls);
        if d > 0 {
            by.insert(name.clone(), json!(d));
        }
        if name == "evalsha" || name == "eval" {
            script_usec += after.usec.get(name).copied().unwrap_or(0)
                - before.usec.get(name).copied().unwrap_or(0);
        }
    }
    let cpu_ms = (after.cpu_s - before.cpu_s) * 1000.0;
    let per_job = |x: f64| if jobs == 0 { 0.0 } else { x / jobs as f64 };
    json!({
        "cpu_ms": round2(cpu_ms),
        "cpu_us_per_job": round2(per_job(cpu_ms * 1000.0)),
        "script_us_per_job": round2(per_job(script_usec as f64)),
        "calls": by,
    })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A Redis for one run: the given URL, or a fresh local server, or a fresh
/// local Cluster.
struct Server {
    url: String,
    /// The URL of every master.
    masters: Vec<String>,
    _local: Option<LocalRedis>,
    _cluster: Option<LocalCluster>,
}

impl Server {
    fn new(args: &BenchArgs) -> Result<Server, BenchError> {
        let node =
            LocalRedis::builder().appendfsync_always(args.appendfsync == Appendfsync::Always);
        Ok(match (&args.url, args.cluster) {
            (Some(u), _) => Server {
                url: u.clone(),
                masters: vec![u.clone()],
                _local: None,
                _cluster: None,
            },
            (None, Some(m)) => {
                let c = LocalCluster::start_with(m, args.replicas, node)?;
                let masters = c
                    .topology()?
                    .into_iter()
                    .filter(|n| n.master)
                    .map(|n| format!("redis://127.0.0.1:{}/", n.port))
                    .collect();
                Server {
                    url: c.url(),
                    masters,
                    _local: None,
                    _cluster: Some(c),
                }
            }
            (None, None) => {
                let s = node.start()?;
                Server {
                    url: s.url(),
                    masters: vec![s.url()],
                    _local: Some(s),
                    _cluster: None,
                }
            }
        })
    }

    fn masters(&self) -> Result<Masters, BenchError> {
        let cons = self
            .masters
            .iter()
            .map(|u| redis::Client::open(u.as_str()).and_then(|c| c.get_connection()))
            .collect::<Result<_, _>>()?;
        Ok(Masters(cons))
    }

    /// What the run's report says of the server.
    fn describe(&self, args: &BenchArgs) -> serde_json::Value {
        json!({
            "masters": self.masters.len(),
            "appendfsync": match args.appendfsync {
                Appendfsync::Everysec => "everysec",
                Appendfsync::Always => "always",
            },
            "durability": args.config.durability.to_string(),
        })
    }
}

/// The flags of a `work` process of a benchmark run.
fn work_args(args: &BenchArgs, url: &str, ns: &str, name: &str) -> Vec<String> {
    let mut a: Vec<String> = [
        "work",
        "--url",
        url,
        "--ns",
        ns,
        "--name",
        name,
        "--summary",
    ]
    .map(str::to_owned)
    .to_vec();
    a.extend(["--threads".into(), args.threads.to_string()]);
    a.extend(args.config.to_args());
    for (flag, v) in [
        ("--batch", args.batch.map(|n| n as u64)),
        ("--buffer", args.buffer.map(|n| n as u64)),
        ("--poll-ms", args.poll_ms),
        ("--lease-ms", args.lease_ms),
    ] {
        if let Some(v) = v {
            a.extend([flag.to_owned(), v.to_string()]);
        }
    }
    a
}

fn spawn_workers(
    args: &BenchArgs,
    worker: &[OsString],
    url: &str,
    ns: &str,
    n: u64,
) -> Result<Vec<Proc>, BenchError> {
    (0..n)
        .map(|i| Proc::spawn(worker, &work_args(args, url, ns, &format!("w{i}"))))
        .collect()
}

/// Waits until no job record is left in any shard.
fn wait_drained(sched: &RedisScheduler) -> Result<(), BenchError> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let left = sched.job_count()?;
        if left == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(BenchError::NotDrained(left));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn bench_one(
    args: &BenchArgs,
    worker: &[OsString],
    server: &Server,
    workers: u64,
) -> Result<serde_json::Value, BenchError> {
    let drain = args.shape == Shape::Drain;
    let jobs = args.jobs.unwrap_or(20_000);
    let window = if drain { 0 } else { args.window_ms as i64 };
    let lead = args.lead_ms as i64;
    let ns = namespace("bench", workers);
    let url = server.url.as_str();
    let mut con = server.masters()?;
    let sched = RedisScheduler::connect(url, args.config.config(&ns))?;
    let schedule = |start: i64| {
        schedule_noops(&sched, "j", jobs, |i, j| {
            j.at_ms(
                start
                    + if jobs > 1 {
                        window * i as i64 / (jobs as i64 - 1)
                    } else {
                        0
                    },
            )
        })
    };
    let first_due;
    let mut procs;
    if drain {
        // The backlog is in Redis before any worker starts.
        first_due = sched.now_ms()?;
        schedule(first_due)?;
        procs = Vec::new();
    } else {
        procs = spawn_workers(args, worker, url, &ns, workers)?;
        first_due = sched.now_ms()? + lead;
        schedule(first_due)?;
        // The window opens at the first due time.
        while sched.now_ms()? < first_due {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let before = open_window(&mut con)?;
    if drain {
        procs = spawn_workers(args, worker, url, &ns, workers)?;
    }
    let rt_before: Vec<serde_json::Value> = if drain {
        vec![json!({"round_trips": 0}); procs.len()]
    } else {
        procs
            .iter_mut()
            .map(Proc::counters)
            .collect::<Result<_, _>>()?
    };
    wait_drained(&sched)?;
    let after = redis_counters(&mut con)?;
    let rt_after: Vec<serde_json::Value> = procs
        .iter_mut()
        .map(Proc::counters)
        .collect::<Result<_, _>>()?;
    let load = load_average();
    let summaries: Vec<serde_json::Value> = procs
        .iter_mut()
        .map(Proc::finish)
        .collect::<Result<_, _>>()?;
    let mut lateness = BTreeMap::new();
    let mut runs = 0u64;
    let mut first_claim = i64::MAX;
    let mut last_ack = i64::MIN;
    let mut per_worker = Vec::new();
    for s in &summaries {
        runs += s["runs"].as_u64().unwrap_or(0);
        per_worker.push(s["runs"].as_u64().unwrap_or(0));
        for pair in s["lateness_ms"].as_array().into_iter().flatten() {
            *lateness
                .entry(pair[0].as_i64().unwrap_or(0))
                .or_insert(0u64) += pair[1].as_u64().unwrap_or(0);
        }
        if let Some(t) = s["first_claim"].as_i64() {
            first_claim = first_claim.min(t);
        }
        if let Some(t) = s["last_ack"].as_i64() {
            last_ack = last_ack.max(t);
        }
    }
    let round_trips: u64 = rt_before
        .iter()
        .zip(&rt_after)
        .map(|(b, a)| {
            a["round_trips"].as_u64().unwrap_or(0) - b["round_trips"].as_u64().unwrap_or(0)
        })
        .sum();
    // Drain: from the first claim (the backlog is waiting) to the last ack;
    // paced: from the first due time to the last ack.
    let from = if drain { first_claim } else { first_due };
    let elapsed = (last_ack - from).max(1);
    Ok(json!({
        "shape": if drain { "drain" } else { "paced" },
        "workers": workers, "threads_per_worker": args.threads, "shards": args.config.shards, "jobs": jobs,
        "window_ms": window, "runs": runs, "runs_per_worker": per_worker,
        "elapsed_ms": elapsed,
        "jobs_per_sec": (jobs as f64 * 1000.0 / elapsed as f64).round(),
        "lateness_ms": {
            "p50": percentile(&lateness, 0.50), "p90": percentile(&lateness, 0.90),
            "p99": percentile(&lateness, 0.99), "max": lateness.keys().next_back().copied().unwrap_or(0),
        },
        "round_trips_per_job": round2(round_trips as f64 / jobs.max(1) as f64),
        "redis": redis_delta(&before, &after, jobs),
        "server": server.describe(args),
        "load": load,
    }))
}

/// The claim-script ceiling: claims a backlog with the claim script alone.
fn ceiling(args: &BenchArgs) -> Result<serde_json::Value, BenchError> {
    let server = Server::new(args)?;
    let jobs = args.jobs.unwrap_or(100_000);
    let batch = args.batch.unwrap_or(64);
    let config = args.config.config(&namespace("ceiling", 0));
    let sched = RedisScheduler::connect(&server.url, config.clone())?;
    let now = sched.now_ms()?;
    schedule_noops(&sched, "c", jobs, |_, j| j.at_ms(now))?;
    let mut con = server.masters()?;
    let before = open_window(&mut con)?;
    let c = claim_ceiling(&server.url, config, batch)?;
    let after = redis_counters(&mut con)?;
    let wall_s = c.wall.as_secs_f64();
    let redis = redis_delta(&before, &after, c.claimed);
    let script_us = redis["script_us_per_job"].as_f64().unwrap_or(0.0);
    let cpu_us = redis["cpu_us_per_job"].as_f64().unwrap_or(0.0);
    let rate = |us: f64| if us > 0.0 { (1e6 / us).round() } else { 0.0 };
    Ok(json!({
        "shape": "ceiling", "jobs": jobs, "claimed": c.claimed, "batch": batch, "shards": args.config.shards,
        "claim_calls": c.calls, "wall_ms": round2(wall_s * 1000.0),
        // The ceiling: jobs per second of Redis CPU spent claiming
        // (scripts, parsing, replies), what one Redis core hands out
        // doing nothing else. A wall-clock rate from one client would
        // measure the client too, and the machine's other load.
        "jobs_per_sec": rate(cpu_us),
        // The same from the scripts' own time only.
        "script_jobs_per_sec": rate(script_us),
        // Back to back from one client (each round waits for its reply).
        "client_jobs_per_sec": (c.claimed as f64 / wall_s).round(),
        "redis": redis,
        "load": load_average(),
    }))
}

/// An idle worker: nothing due; counts its Redis calls per second.
fn idle(args: &BenchArgs, worker: &[OsString]) -> Result<serde_json::Value, BenchError> {
    let server = Server::new(args)?;
    let secs = args.seconds;
    let ns = namespace("idle", 1);
    let sched = RedisScheduler::connect(&server.url, args.config.config(&ns))?;
    // Pending jobs far in the future: an idle worker's cost must not depend
    // on how many there are.
    schedule_noops(&sched, "p", args.pending, |_, j| {
        j.after(Duration::from_secs(3600))
    })?;
    let mut procs = spawn_workers(args, worker, &server.url, &ns, 1)?;
    std::thread::sleep(Duration::from_secs(2));
    let mut con = server.masters()?;
    let before = open_window(&mut con)?;
    let rt0 = procs[0].counters()?;
    std::thread::sleep(Duration::from_secs(secs));
    let rt1 = procs[0].counters()?;
    let after = redis_counters(&mut con)?;
    let rts = rt1["round_trips"].as_u64().unwrap_or(0) - rt0["round_trips"].as_u64().unwrap_or(0);
    let per_s = |x: f64| round2(x / secs as f64);
    let redis = redis_delta(&before, &after, 1);
    let shards = args.config.shards;
    procs[0].finish()?;
    Ok(json!({
        "shape": "idle", "shards": shards, "pending": args.pending, "seconds": secs,
        "round_trips_per_s": per_s(rts as f64),
        "round_trips_per_s_per_shard": per_s(rts as f64 / f64::from(shards)),
        "redis_cpu_ms_per_s": per_s(redis["cpu_ms"].as_f64().unwrap_or(0.0)),
        "redis_calls": redis["calls"],
        "load": load_average(),
    }))
}

/// The `[distributed]` section of a workload the suite handed a runner.
pub(crate) fn section(workload: &Workload) -> Result<&Distributed, RunError> {
    workload.distributed.as_ref().ok_or_else(|| {
        RunError::Inconsistent(format!("{} is not a distributed workload", workload.name))
    })
}

/// The paced window in whole milliseconds (at least 1).
pub(crate) fn window_ms(d: &Distributed) -> u64 {
    (d.window.nanos() / 1_000_000).max(1)
}

/// One repeat's measurements from its shapes' reports: the jobs missed by
/// every shape summed into one figure (one sample per repeat).
pub(crate) fn one_repeat(reports: Vec<Vec<Measurement>>) -> Vec<Measurement> {
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

/// Parses one JSON line of `workbench redis-bench` or of
/// `bullmq/bench.mjs` into measurements (see [`measurements`]).
///
/// # Errors
///
/// [`BadReport`], naming the line and what it lacks.
pub fn parse_report(line: &str) -> Result<Vec<Measurement>, BadReport> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|source| BadReport::Json {
        line: line.to_owned(),
        source,
    })?;
    measurements(&v)
}

/// The measurements of one report: drain and paced give their figures and
/// the jobs that did not run ([`Metric::Missed`]), `ceiling` and `idle` one
/// figure each.
///
/// # Errors
///
/// [`BadReport`], naming the report and what it lacks.
pub fn measurements(v: &serde_json::Value) -> Result<Vec<Measurement>, BadReport> {
    let line = || v.to_string();
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(v, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| BadReport::Lacks {
                field: path.join("."),
                line: line(),
            })
    };
    let shape = v
        .get("shape")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| BadReport::Lacks {
            field: "shape".into(),
            line: line(),
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
                line: line(),
            })
        }
    }
    Ok(out)
}

#[cfg(test)]
mod test {
    use clap::{CommandFactory, Parser};

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
    fn the_command_line_is_checked() {
        BenchArgs::command().debug_assert();
        let a = BenchArgs::try_parse_from([
            "redis-bench",
            "--shape",
            "drain",
            "--workers",
            "1,2",
            "--durability",
            "replicas:1",
            "--batch",
            "32",
        ])
        .unwrap();
        assert_eq!((a.shape, a.workers.as_slice()), (Shape::Drain, &[1, 2][..]));
        let w = work_args(&a, "redis://x/", "n", "w0");
        let flags = w.join(" ");
        assert!(flags.contains("--durability replicas:1"), "{flags}");
        assert!(flags.contains("--batch 32"), "{flags}");
        assert!(flags.contains("--summary"), "{flags}");
        // What the workers are started with is what their command line takes.
        schedulers_redis::cli::Cli::try_parse_from(std::iter::once("w".to_owned()).chain(w))
            .unwrap();
        for bad in [
            &["--workers", "0"][..],
            &["--shape", "storm"],
            &["--url", "redis://x/", "--cluster", "3"],
            &["--appendfsync", "never"],
        ] {
            assert!(
                BenchArgs::try_parse_from(std::iter::once(&"redis-bench").chain(bad)).is_err(),
                "{bad:?}"
            );
        }
    }
}
