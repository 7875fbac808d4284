//! The command line of `schedulers-redis-worker` (and of `workbench
//! redis-worker`): a worker process of the distributed scheduler, and a load
//! benchmark that drives several of them. A function, so that any binary can
//! be the worker: [`run`] takes the arguments and the command that starts the
//! same binary again for the benchmark's worker processes.
//!
//! ```text
//! <binary> work --url URL [--ns NS] [--shards 8] [--slice-ms 60000]
//!     [--durability async|fsync|replicas:N] [--durability-timeout-ms 2000]
//!     [--io-timeout-ms 5000]
//!     [--threads 4] [--lease-ms 30000] [--heartbeat-ms L/3] [--poll-ms 1000]
//!     [--batch 64] [--buffer N] [--max-attempts 5] [--backoff-ms 1000]
//!     [--history FILE] [--summary 1] [--name NAME]
//! <binary> cluster [--masters 3] [--replicas 1]
//! <binary> bench [--shape drain|paced|ceiling|idle] [--url URL]
//!     [--workers 1,2,4] [--jobs 20000] [--window-ms 4000] [--lead-ms 1000]
//!     [--threads 4] [--shards 8] [--batch N] [--buffer N] [--poll-ms N] [--lease-ms N]
//!     [--cluster MASTERS [--replicas 1]] [--appendfsync everysec|always]
//!     [--durability async|fsync|replicas:N] [--durability-timeout-ms N]
//! ```
//!
//! `work` runs until its standard input closes, then shuts down gracefully.
//! Handlers: `noop`; `sleep` (payload: milliseconds to sleep); `fail`
//! (always fails). With `--history`, every worker event is appended to FILE
//! as one JSON line (times are Redis's clock), written before the next step
//! so a `kill -9` loses nothing already done. With `--summary`, the worker
//! counts runs and lateness in memory and prints them as one `summary` JSON
//! line when it exits. A `stats` line on its standard input prints its
//! Redis round trips so far and its buffer's capacity.
//!
//! `bench` runs one load shape and prints one JSON object per run:
//! - `drain`: `--jobs` no-op jobs already due, then the workers start;
//!   jobs/s from the first claim to the last ack (Redis clock);
//! - `paced`: the workers run, then `--jobs` no-op jobs due evenly over
//!   `--window-ms` from `--lead-ms` ahead; lateness (start − due, Redis
//!   clock) percentiles, and jobs/s from the first due time to the last ack;
//! - `ceiling`: the claim script alone claims a backlog of `--jobs`, back to
//!   back, `--batch` per call: jobs per second of Redis CPU, the most one
//!   Redis core hands out (the client's wall-clock rate beside it);
//! - `idle`: one worker, 10,000 jobs pending an hour ahead: its Redis round
//!   trips per second.
//!
//! Drain and paced run once per count in `--workers`, each against a fresh
//! `redis-server` (unless `--url` is given), or a fresh local Redis Cluster
//! of `--cluster` masters (with `--replicas` each; Redis's counters are
//! summed over the masters). `--appendfsync` sets the fresh servers' AOF
//! policy and `--durability` the clients' (`fsync` on Redis 7.0 needs
//! `--appendfsync always`; `replicas:N` a Cluster with replicas). Every report has Redis's own
//! cost over the measured window (CPU time from `INFO cpu`, calls per
//! command from `INFO commandstats`, which counts the commands scripts run
//! too, and the scripts' time), the workers' round trips, and the load
//! average.

// A process harness and benchmark: it waits and measures in real time. The
// scheduling decisions themselves are made by the library on Redis's clock.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::probe::claim_ceiling;
use super::{
    AckOutcome, Config, DistError, Durability, Fire, Job, LocalCluster, LocalRedis, RedisScheduler,
    Worker, WorkerEvent, DEFAULT_SHARDS,
};

/// Runs the command line `args` (`work …` or `bench …`, without the program
/// name). `respawn` is the command that starts this same command line again
/// (the program and whatever arguments come before `work`): `bench` starts
/// its worker processes with it.
///
/// # Errors
///
/// A message saying what failed (bad arguments, Redis unreachable, a worker
/// that did not start).
pub fn run(args: &[String], respawn: &[OsString]) -> Result<(), String> {
    if respawn.is_empty() {
        return Err("no command to start worker processes with".into());
    }
    let opts = |rest: &[String]| Opts::parse(rest, respawn);
    match args.first().map(String::as_str) {
        Some("work") => work(&opts(&args[1..])),
        Some("bench") => bench(&opts(&args[1..])),
        Some("cluster") => cluster(&opts(&args[1..])),
        _ => Err("usage: work|bench|cluster [--flag value]...".to_owned()),
    }
}

struct Opts {
    flags: HashMap<String, String>,
    respawn: Vec<OsString>,
}

impl Opts {
    fn parse(args: &[String], respawn: &[OsString]) -> Opts {
        let mut flags = HashMap::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if let Some(k) = a.strip_prefix("--") {
                flags.insert(k.to_owned(), it.next().cloned().unwrap_or_default());
            }
        }
        Opts {
            flags,
            respawn: respawn.to_vec(),
        }
    }
    fn has(&self, k: &str) -> bool {
        self.flags.contains_key(k)
    }
    fn str(&self, k: &str) -> Option<&str> {
        self.flags.get(k).map(String::as_str)
    }
    fn opt(&self, k: &str) -> Result<Option<u64>, String> {
        self.flags.get(k).map(|_| self.num(k, 0)).transpose()
    }
    fn num(&self, k: &str, default: u64) -> Result<u64, String> {
        match self.flags.get(k) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{k} wants a number, got {v:?}")),
        }
    }
    /// The layout from the flags; a flag not given keeps the library's
    /// default, so a worker and a producer on defaults agree.
    fn config(&self) -> Result<Config, String> {
        let mut c = Config::default().namespace(self.str("ns").unwrap_or("default"));
        if let Some(n) = self.opt("shards")? {
            c = c.shards(u32::try_from(n).map_err(|_| "--shards is too large")?);
        }
        if let Some(ms) = self.opt("slice-ms")? {
            c = c.slice(Duration::from_millis(ms));
        }
        if let Some(d) = self.str("durability") {
            c = c.durability(parse_durability(d)?);
        }
        if let Some(ms) = self.opt("durability-timeout-ms")? {
            c = c.durability_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = self.opt("io-timeout-ms")? {
            c = c.io_timeout(Duration::from_millis(ms));
        }
        Ok(c)
    }
}

/// `async`, `fsync` or `replicas:N`.
fn parse_durability(s: &str) -> Result<Durability, String> {
    match s {
        "async" => Ok(Durability::Async),
        "fsync" => Ok(Durability::Fsync),
        _ => s
            .strip_prefix("replicas:")
            .and_then(|n| n.parse().ok())
            .map(Durability::Replicas)
            .ok_or_else(|| format!("--durability wants async, fsync or replicas:N, got {s:?}")),
    }
}

fn e2s(e: DistError) -> String {
    e.to_string()
}

/// Appends JSON lines to a file, one `write` per line.
struct History(Mutex<File>);

impl History {
    fn write(&self, v: serde_json::Value) {
        let mut line = v.to_string();
        line.push('\n');
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // A history that cannot be written is reported, not fatal.
        if let Err(e) = f.write_all(line.as_bytes()) {
            eprintln!("history: {e}");
        }
    }
}

fn fire_json(ev: &str, w: &str, f: &Fire) -> serde_json::Value {
    json!({"ev": ev, "w": w, "id": f.id, "fire": f.fire_id(), "due": f.due_ms, "fence": f.fence, "att": f.attempt,
           "claimed": f.claimed_ms, "shard": f.shard, "per": f.period_ms})
}

fn outcome_str(o: &AckOutcome) -> String {
    match o {
        AckOutcome::Done => "done".into(),
        AckOutcome::Next(_) => "next".into(),
        AckOutcome::Retry => "retry".into(),
        AckOutcome::Dead => "dead".into(),
        AckOutcome::Cancelled => "cancelled".into(),
        AckOutcome::Stale => "stale".into(),
        AckOutcome::Error(_) => "error".into(),
    }
}

/// What a worker process counts for the benchmark (`--summary`).
#[derive(Default)]
struct Tally {
    runs: u64,
    /// Lateness in ms (start − due, Redis clock) → count.
    lateness: BTreeMap<i64, u64>,
    first_claim: Option<i64>,
    last_ack: Option<i64>,
    acked: u64,
}

impl Tally {
    fn started(&mut self, fire: &Fire, at_ms: i64) {
        self.runs += 1;
        *self.lateness.entry(at_ms - fire.due_ms).or_default() += 1;
        self.first_claim = Some(
            self.first_claim
                .map_or(fire.claimed_ms, |t| t.min(fire.claimed_ms)),
        );
    }

    fn finished(&mut self, outcome: &AckOutcome, at_ms: i64) {
        if matches!(outcome, AckOutcome::Done | AckOutcome::Next(_)) {
            self.acked += 1;
            self.last_ack = Some(self.last_ack.map_or(at_ms, |t| t.max(at_ms)));
        }
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "runs": self.runs, "acked": self.acked,
            "lateness_ms": self.lateness.iter().map(|(k, v)| [*k, *v as i64]).collect::<Vec<_>>(),
            "first_claim": self.first_claim, "last_ack": self.last_ack,
        })
    }
}

/// The worker's own Redis counters and buffer capacity, printed on request
/// (`stats` on stdin).
fn counters(w: &Worker) -> serde_json::Value {
    let s = w.stats();
    json!({"round_trips": s.round_trips, "commands": s.commands, "claimed": s.claimed, "buffer": s.buffer})
}

fn work(o: &Opts) -> Result<(), String> {
    let url = o.str("url").ok_or("--url is required")?;
    let name = o
        .str("name")
        .map(str::to_owned)
        .unwrap_or_else(|| format!("w{}", std::process::id()));
    let lease = o.num("lease-ms", 30_000)?;
    let history = match o.str("history") {
        Some(p) => Some(History(Mutex::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("{p}: {e}"))?,
        ))),
        None => None,
    };
    let tally = Arc::new(Mutex::new(Tally::default()));
    let backoff = Duration::from_millis(o.num("backoff-ms", 1000)?);
    let mut b = Worker::builder(url, o.config()?)
        .name(name.clone())
        .threads(o.num("threads", 4)? as usize)
        .lease(Duration::from_millis(lease))
        .max_attempts(o.num("max-attempts", 5)? as u32)
        .backoff(backoff, backoff * 64)
        .handler("noop", |_| Ok(()))
        .handler("sleep", |f| {
            let ms: u64 = f.payload()?;
            std::thread::sleep(Duration::from_millis(ms));
            Ok(())
        })
        .handler("fail", |_| Err("this kind always fails".into()));
    // Tuning flags not given keep the library's defaults.
    if let Some(ms) = o.opt("heartbeat-ms")? {
        b = b.heartbeat(Duration::from_millis(ms));
    }
    if let Some(ms) = o.opt("poll-ms")? {
        b = b.poll_interval(Duration::from_millis(ms));
    }
    if let Some(n) = o.opt("batch")? {
        b = b.batch(n as usize);
    }
    if let Some(n) = o.opt("buffer")? {
        b = b.buffer(n as usize);
    }
    if let Some(h) = history {
        let w = name.clone();
        b = b.on_event(move |e| match e {
            WorkerEvent::Started { fire, at_ms } => {
                let mut v = fire_json("start", &w, fire);
                v["at"] = json!(at_ms);
                h.write(v)
            }
            WorkerEvent::Finished {
                fire,
                outcome,
                at_ms,
                ..
            } => {
                let mut v = fire_json("end", &w, fire);
                v["outcome"] = json!(outcome_str(outcome));
                v["at"] = json!(at_ms);
                h.write(v)
            }
            WorkerEvent::LeaseLost { fire } => h.write(fire_json("lost", &w, fire)),
            WorkerEvent::Released { fire } => h.write(fire_json("released", &w, fire)),
            WorkerEvent::Reaped {
                id,
                due_ms,
                fence,
                outcome,
                at_ms,
            } => h.write(json!({
                "ev": "reaped", "w": w, "id": id, "due": due_ms, "fence": fence,
                "outcome": outcome, "at": at_ms})),
            WorkerEvent::RedisError { .. } => {}
        });
    } else if o.has("summary") {
        let t = tally.clone();
        b = b.on_event(move |e| match e {
            WorkerEvent::Started { fire, at_ms } => t
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .started(fire, *at_ms),
            WorkerEvent::Finished { outcome, at_ms, .. } => t
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .finished(outcome, *at_ms),
            _ => {}
        });
    }
    let worker = b.start().map_err(e2s)?;
    println!("ready {name}");
    let _ = std::io::stdout().flush();
    // Run until standard input closes; a `stats` line asks for the counters.
    for line in std::io::stdin().lock().lines() {
        match line {
            Ok(l) if l.trim() == "stats" => {
                println!("stats {}", counters(&worker));
                let _ = std::io::stdout().flush();
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    worker.shutdown();
    worker.join();
    if o.has("summary") {
        let mut v = tally.lock().unwrap_or_else(|p| p.into_inner()).json();
        v["counters"] = counters(&worker);
        println!("summary {v}");
    }
    Ok(())
}

/// `cluster`: starts a [`LocalCluster`], prints `ready <seed url> <port>…`
/// (every node's port), and keeps it until standard input closes. A test
/// process that holds the pipe gets the Cluster killed when it exits, however
/// it exits.
fn cluster(o: &Opts) -> Result<(), String> {
    let c = LocalCluster::start(
        o.num("masters", 3)? as usize,
        o.num("replicas", 1)? as usize,
    )
    .map_err(e2s)?;
    let ports: Vec<String> = c.nodes().iter().map(|n| n.port().to_string()).collect();
    println!("ready {} {}", c.url(), ports.join(" "));
    let _ = std::io::stdout().flush();
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    drop(c);
    Ok(())
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
    fn spawn(respawn: &[OsString], args: &[String]) -> Result<Proc, String> {
        let (exe, prefix) = respawn.split_first().ok_or("no command")?;
        let mut child = Command::new(exe)
            .args(prefix)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", exe.to_string_lossy()))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut p = Proc {
            child,
            stdin,
            stdout,
        };
        let line = p.line()?;
        if !line.starts_with("ready") {
            return Err(format!("worker did not start: {line:?}"));
        }
        Ok(p)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        Ok(line)
    }

    /// The worker's counters now.
    fn counters(&mut self) -> Result<serde_json::Value, String> {
        let stdin = self.stdin.as_mut().ok_or("worker stdin closed")?;
        stdin
            .write_all(b"stats\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| e.to_string())?;
        let line = self.line()?;
        let v = line
            .strip_prefix("stats ")
            .ok_or_else(|| format!("expected a stats line, got {line:?}"))?;
        serde_json::from_str(v).map_err(|e| e.to_string())
    }

    /// Graceful stop; returns the worker's summary.
    fn finish(&mut self) -> Result<serde_json::Value, String> {
        drop(self.stdin.take());
        loop {
            let line = self.line()?;
            if line.is_empty() {
                return Err("worker exited without a summary".into());
            }
            if let Some(v) = line.strip_prefix("summary ") {
                let _ = self.child.wait();
                return serde_json::from_str(v).map_err(|e| e.to_string());
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
struct RedisCounters {
    calls: BTreeMap<String, u64>,
    usec: BTreeMap<String, u64>,
    cpu_s: f64,
}

/// Plain connections to every master (one for a single server): Redis's
/// counters are summed over them.
struct Masters(Vec<redis::Connection>);

fn redis_counters(m: &mut Masters) -> Result<RedisCounters, String> {
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

fn node_counters(con: &mut redis::Connection) -> Result<RedisCounters, String> {
    let text: String = redis::cmd("INFO")
        .arg("commandstats")
        .arg("cpu")
        .query(con)
        .map_err(|e| e.to_string())?;
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
fn open_window(m: &mut Masters) -> Result<RedisCounters, String> {
    for con in &mut m.0 {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(con)
            .map_err(|e| e.to_string())?;
    }
    redis_counters(m)
}

/// Schedules `n` no-op jobs `<prefix><i>`, each timed by `when(i, job)`.
fn schedule_noops(
    sched: &RedisScheduler,
    prefix: &str,
    n: u64,
    when: impl Fn(u64, Job) -> Job,
) -> Result<(), String> {
    let list: Vec<Job> = (0..n)
        .map(|i| Job::new(format!("{prefix}{i}"), "noop").map(|j| when(i, j)))
        .collect::<Result<_, _>>()
        .map_err(e2s)?;
    for r in sched.schedule_many(&list).map_err(e2s)? {
        r.map_err(e2s)?;
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

/// A Redis for one run: the given URL, or a fresh local server
/// (`--appendfsync always|everysec`), or with `--cluster M` a fresh local
/// Cluster of M masters with `--replicas R` (default 1) each.
struct Server {
    url: String,
    /// The URL of every master.
    masters: Vec<String>,
    _local: Option<LocalRedis>,
    _cluster: Option<LocalCluster>,
}

impl Server {
    fn new(o: &Opts) -> Result<Server, String> {
        let always = match o.str("appendfsync") {
            None | Some("everysec") => false,
            Some("always") => true,
            Some(other) => {
                return Err(format!(
                    "--appendfsync wants always or everysec, got {other:?}"
                ))
            }
        };
        let node = LocalRedis::builder().appendfsync_always(always);
        Ok(match (o.str("url"), o.opt("cluster")?) {
            (Some(u), _) => Server {
                url: u.to_owned(),
                masters: vec![u.to_owned()],
                _local: None,
                _cluster: None,
            },
            (None, Some(m)) => {
                let c = LocalCluster::start_with(m as usize, o.num("replicas", 1)? as usize, node)
                    .map_err(e2s)?;
                let masters = c
                    .topology()
                    .map_err(e2s)?
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
                let s = node.start().map_err(e2s)?;
                Server {
                    url: s.url(),
                    masters: vec![s.url()],
                    _local: Some(s),
                    _cluster: None,
                }
            }
        })
    }

    fn masters(&self) -> Result<Masters, String> {
        self.masters
            .iter()
            .map(|u| {
                redis::Client::open(u.as_str())
                    .and_then(|c| c.get_connection())
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()
            .map(Masters)
    }

    /// What the run's report says of the server.
    fn describe(&self, o: &Opts) -> serde_json::Value {
        json!({
            "masters": self.masters.len(),
            "appendfsync": o.str("appendfsync").unwrap_or("everysec"),
            "durability": o.str("durability").unwrap_or("async"),
        })
    }
}

fn bench(o: &Opts) -> Result<(), String> {
    let shape = o.str("shape").unwrap_or("paced");
    match shape {
        "drain" | "paced" => {
            let list: Vec<u64> = o
                .str("workers")
                .unwrap_or("1")
                .split(',')
                .map(|w| match w.trim().parse() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(format!("--workers wants counts like 1,2,4, got {w:?}")),
                })
                .collect::<Result<_, _>>()?;
            for workers in list {
                // A fresh server per run (unless --url): nothing left over
                // from the previous run, and clean counters.
                let server = Server::new(o)?;
                let report = bench_one(o, &server, shape == "drain", workers)?;
                println!("{report}");
            }
            Ok(())
        }
        "ceiling" => ceiling(o),
        "idle" => idle(o),
        other => Err(format!(
            "--shape wants drain, paced, ceiling or idle, got {other:?}"
        )),
    }
}

/// The arguments of a `work` process of a benchmark run.
fn work_args(o: &Opts, url: &str, ns: &str, name: &str) -> Result<Vec<String>, String> {
    let mut a: Vec<String> = [
        "work",
        "--url",
        url,
        "--ns",
        ns,
        "--name",
        name,
        "--summary",
        "1",
    ]
    .map(str::to_owned)
    .to_vec();
    a.extend(["--threads".into(), o.num("threads", 4)?.to_string()]);
    a.extend([
        "--shards".into(),
        o.num("shards", DEFAULT_SHARDS.into())?.to_string(),
    ]);
    for k in [
        "batch",
        "buffer",
        "poll-ms",
        "lease-ms",
        "durability",
        "durability-timeout-ms",
    ] {
        if let Some(v) = o.str(k) {
            a.extend([format!("--{k}"), v.to_owned()]);
        }
    }
    Ok(a)
}

fn spawn_workers(o: &Opts, url: &str, ns: &str, n: u64) -> Result<Vec<Proc>, String> {
    (0..n)
        .map(|i| Proc::spawn(&o.respawn, &work_args(o, url, ns, &format!("w{i}"))?))
        .collect()
}

/// Waits until no job record is left in any shard.
fn wait_drained(sched: &RedisScheduler) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let left = sched.job_count().map_err(e2s)?;
        if left == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{left} jobs still pending after 600 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The producer's configuration of a run: the layout and durability flags
/// of the workers, in namespace `ns`.
fn bench_config(o: &Opts, ns: &str) -> Result<Config, String> {
    Ok(o.config()?
        .namespace(ns)
        .shards(o.num("shards", DEFAULT_SHARDS.into())? as u32))
}

fn bench_one(
    o: &Opts,
    server: &Server,
    drain: bool,
    workers: u64,
) -> Result<serde_json::Value, String> {
    let jobs = o.num("jobs", 20_000)?;
    let window = if drain {
        0
    } else {
        o.num("window-ms", 4000)? as i64
    };
    let lead = o.num("lead-ms", 1000)? as i64;
    let shards = o.num("shards", DEFAULT_SHARDS.into())?;
    let ns = format!("bench-{}-{workers}", std::process::id());
    let config = bench_config(o, &ns)?;
    let url = server.url.as_str();
    let mut con = server.masters()?;
    let sched = RedisScheduler::connect(url, config).map_err(e2s)?;
    let schedule = |start: i64| -> Result<(), String> {
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
        first_due = sched.now_ms().map_err(e2s)?;
        schedule(first_due)?;
        procs = Vec::new();
    } else {
        procs = spawn_workers(o, url, &ns, workers)?;
        first_due = sched.now_ms().map_err(e2s)? + lead;
        schedule(first_due)?;
        // The window opens at the first due time.
        while sched.now_ms().map_err(e2s)? < first_due {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let before = open_window(&mut con)?;
    if drain {
        procs = spawn_workers(o, url, &ns, workers)?;
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
        "workers": workers, "threads_per_worker": o.num("threads", 4)?, "shards": shards, "jobs": jobs,
        "window_ms": window, "runs": runs, "runs_per_worker": per_worker,
        "elapsed_ms": elapsed,
        "jobs_per_sec": (jobs as f64 * 1000.0 / elapsed as f64).round(),
        "lateness_ms": {
            "p50": percentile(&lateness, 0.50), "p90": percentile(&lateness, 0.90),
            "p99": percentile(&lateness, 0.99), "max": lateness.keys().next_back().copied().unwrap_or(0),
        },
        "round_trips_per_job": round2(round_trips as f64 / jobs.max(1) as f64),
        "redis": redis_delta(&before, &after, jobs),
        "server": server.describe(o),
        "load": load,
    }))
}

/// The claim-script ceiling: claims a backlog with the claim script alone.
fn ceiling(o: &Opts) -> Result<(), String> {
    let server = Server::new(o)?;
    let jobs = o.num("jobs", 100_000)?;
    let batch = o.num("batch", 64)? as usize;
    let shards = o.num("shards", DEFAULT_SHARDS.into())?;
    let config = Config::default()
        .namespace(format!("ceiling-{}", std::process::id()))
        .shards(shards as u32);
    let sched = RedisScheduler::connect(&server.url, config.clone()).map_err(e2s)?;
    let now = sched.now_ms().map_err(e2s)?;
    schedule_noops(&sched, "c", jobs, |_, j| j.at_ms(now))?;
    let mut con = server.masters()?;
    let before = open_window(&mut con)?;
    let c = claim_ceiling(&server.url, config, batch).map_err(e2s)?;
    let after = redis_counters(&mut con)?;
    let wall_s = c.wall.as_secs_f64();
    let redis = redis_delta(&before, &after, c.claimed);
    let script_us = redis["script_us_per_job"].as_f64().unwrap_or(0.0);
    let cpu_us = redis["cpu_us_per_job"].as_f64().unwrap_or(0.0);
    let rate = |us: f64| if us > 0.0 { (1e6 / us).round() } else { 0.0 };
    println!(
        "{}",
        json!({
            "shape": "ceiling", "jobs": jobs, "claimed": c.claimed, "batch": batch, "shards": shards,
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
        })
    );
    Ok(())
}

/// An idle worker: nothing due; counts its Redis calls per second.
fn idle(o: &Opts) -> Result<(), String> {
    let server = Server::new(o)?;
    let shards = o.num("shards", DEFAULT_SHARDS.into())?;
    let secs = o.num("seconds", 10)?;
    let ns = format!("idle-{}", std::process::id());
    let sched = RedisScheduler::connect(
        &server.url,
        Config::default()
            .namespace(ns.clone())
            .shards(shards as u32),
    )
    .map_err(e2s)?;
    // Pending jobs far in the future: an idle worker's cost must not depend
    // on how many there are.
    let pending = o.num("pending", 10_000)?;
    schedule_noops(&sched, "p", pending, |_, j| {
        j.after(Duration::from_secs(3600))
    })?;
    let mut procs = spawn_workers(o, &server.url, &ns, 1)?;
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
    println!(
        "{}",
        json!({
            "shape": "idle", "shards": shards, "pending": pending, "seconds": secs,
            "round_trips_per_s": per_s(rts as f64),
            "round_trips_per_s_per_shard": per_s(rts as f64 / shards as f64),
            "redis_cpu_ms_per_s": per_s(redis["cpu_ms"].as_f64().unwrap_or(0.0)),
            "redis_calls": redis["calls"],
            "load": load_average(),
        })
    );
    procs[0].finish()?;
    Ok(())
}
