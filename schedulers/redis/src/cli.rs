//! The command line of `schedulers-redis-worker` (feature `test-util`): a
//! worker process for tests and benchmarks, and a throwaway Cluster kept for
//! as long as its caller holds a pipe. The types are public so that another
//! binary can be the worker too: the workbench's `redis-worker` subcommand
//! is [`WorkArgs`] and [`work`], so its load benchmark starts workers built
//! with it.
//!
//! ```text
//! schedulers-redis-worker work --url URL [--ns NS] [--shards 8] [--slice-ms 60000]
//!     [--durability async|fsync|replicas:N] [--durability-timeout-ms 2000]
//!     [--io-timeout-ms 5000]
//!     [--threads 4] [--lease-ms 30000] [--heartbeat-ms L/3] [--poll-ms 1000]
//!     [--batch 64] [--buffer N] [--max-attempts 5] [--backoff-ms 1000]
//!     [--history FILE] [--summary] [--name NAME]
//! schedulers-redis-worker cluster [--masters 3] [--replicas 1]
//! ```
//!
//! `work` prints `ready <name>` once it runs, and runs until its standard
//! input closes, then shuts down gracefully. Handlers: `noop`; `sleep`
//! (payload: milliseconds to sleep); `fail` (always fails). With
//! `--history`, every worker event is appended to FILE as one JSON line
//! (times are Redis's clock), written before the next step so a `kill -9`
//! loses nothing already done. With `--summary`, the worker counts runs and
//! lateness in memory and prints them as one `summary <JSON>` line when it
//! exits. A `stats` line on its standard input prints `stats <JSON>`: its
//! Redis round trips so far and its buffer's capacity.
//!
//! `cluster` starts a [`LocalCluster`], prints `ready <seed url> <port>…`
//! (every node's port) and keeps it until its standard input closes: a test
//! process that holds the pipe gets the Cluster killed when it exits,
//! however it exits.
//!
//! # Examples
//!
//! ```
//! use clap::Parser;
//! use schedulers_redis::cli::{Cli, Command};
//! use schedulers_redis::Durability;
//!
//! let cli = Cli::try_parse_from([
//!     "schedulers-redis-worker", "work", "--url", "redis://127.0.0.1:6379/",
//!     "--durability", "replicas:1", "--threads", "2",
//! ])?;
//! let Command::Work(work) = cli.command else { unreachable!() };
//! assert_eq!(work.config.config(&work.ns).durability_mode(), Durability::Replicas(1));
//! assert_eq!(work.threads, 2);
//!
//! // A bad value is refused with the flag's name and what it wants.
//! let err = Cli::try_parse_from(["w", "work", "--url", "u", "--threads", "many"]).unwrap_err();
//! assert!(err.to_string().contains("--threads"));
//! # Ok::<(), clap::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::{
    AckOutcome, Config, Durability, Error, Fire, LocalCluster, LocalServerError, Worker,
    WorkerEvent, DEFAULT_SHARDS,
};

/// `schedulers-redis-worker`: a worker process of the Redis scheduler for
/// tests and benchmarks, or a throwaway Redis Cluster.
#[derive(Debug, Parser)]
#[command(name = "schedulers-redis-worker", version)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
// Parsed once per process: boxing `WorkArgs` would only cost its readers.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Runs a worker with the handlers `noop`, `sleep` (payload: ms) and
    /// `fail` until standard input closes.
    Work(WorkArgs),
    /// Starts a local Redis Cluster and keeps it until standard input
    /// closes.
    Cluster(ClusterArgs),
}

/// The layout and durability of a client, the namespace aside: what
/// producers and workers of one namespace must agree on, and how long to
/// wait for Redis. A flag not given keeps the library's default, so a worker
/// and a producer on defaults agree.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Shards of the namespace.
    #[arg(long, default_value_t = DEFAULT_SHARDS)]
    pub shards: u32,
    /// Time slice of the run-time sets, in ms (default: the library's).
    #[arg(long, value_name = "MS")]
    pub slice_ms: Option<u64>,
    /// `async`, `fsync` or `replicas:N`.
    #[arg(long, default_value_t = Durability::Async)]
    pub durability: Durability,
    /// How long a write waits for its durability, in ms (default: the
    /// library's).
    #[arg(long, value_name = "MS")]
    pub durability_timeout_ms: Option<u64>,
    /// Timeout of one Redis command, in ms (default: the library's).
    #[arg(long, value_name = "MS")]
    pub io_timeout_ms: Option<u64>,
}

impl ConfigArgs {
    /// The client configuration these flags describe, for namespace `ns`.
    pub fn config(&self, ns: &str) -> Config {
        let mut c = Config::default()
            .namespace(ns)
            .shards(self.shards)
            .durability(self.durability);
        if let Some(ms) = self.slice_ms {
            c = c.slice(Duration::from_millis(ms));
        }
        if let Some(ms) = self.durability_timeout_ms {
            c = c.durability_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = self.io_timeout_ms {
            c = c.io_timeout(Duration::from_millis(ms));
        }
        c
    }

    /// These flags as arguments, for a process to be started with the same
    /// configuration.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            "--shards".to_owned(),
            self.shards.to_string(),
            "--durability".to_owned(),
            self.durability.to_string(),
        ];
        for (flag, v) in [
            ("--slice-ms", self.slice_ms),
            ("--durability-timeout-ms", self.durability_timeout_ms),
            ("--io-timeout-ms", self.io_timeout_ms),
        ] {
            if let Some(v) = v {
                a.extend([flag.to_owned(), v.to_string()]);
            }
        }
        a
    }
}

/// The flags of `work`.
#[derive(Debug, Clone, Args)]
pub struct WorkArgs {
    /// The Redis URL (any node of a Cluster).
    #[arg(long)]
    pub url: String,
    /// The namespace.
    #[arg(long, default_value = "default")]
    pub ns: String,
    /// Layout and durability.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The worker's name in events and histories (default: `w<pid>`).
    #[arg(long)]
    pub name: Option<String>,
    /// Handler threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Lease of a claimed job, in ms.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub lease_ms: u64,
    /// Lease extension interval, in ms (default: the library's, a third of
    /// the lease).
    #[arg(long, value_name = "MS")]
    pub heartbeat_ms: Option<u64>,
    /// Poll interval when nothing is heard, in ms (default: the library's).
    #[arg(long, value_name = "MS")]
    pub poll_ms: Option<u64>,
    /// Jobs claimed per script call (default: the library's).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Local buffer of claimed jobs (default: adaptive).
    #[arg(long)]
    pub buffer: Option<usize>,
    /// Attempts before a job is dead-lettered.
    #[arg(long, default_value_t = 5)]
    pub max_attempts: u32,
    /// First retry backoff, in ms (the longest is 64 times this).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub backoff_ms: u64,
    /// Appends every worker event to this file, one JSON line each.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Counts runs and lateness, printed as one `summary` line at exit
    /// (ignored with `--history`).
    #[arg(long)]
    pub summary: bool,
}

/// The flags of `cluster`.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Masters (at least 3).
    #[arg(long, default_value_t = 3)]
    pub masters: usize,
    /// Replicas of each master.
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
}

/// Why [`work`] or [`cluster`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CliError {
    /// The worker could not start.
    Worker(Error),
    /// The history file could not be opened.
    History {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The local Cluster could not start.
    LocalServer(LocalServerError),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Worker(e) => write!(f, "the worker did not start: {e}"),
            CliError::History { path, source } => write!(f, "{}: {source}", path.display()),
            CliError::LocalServer(e) => write!(f, "the cluster did not start: {e}"),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Worker(e) => Some(e),
            CliError::History { source, .. } => Some(source),
            CliError::LocalServer(e) => Some(e),
        }
    }
}

/// Runs `work`: a worker until standard input closes (see the
/// [module](self) docs for what it prints).
///
/// # Errors
///
/// [`CliError::History`] if the history file cannot be opened;
/// [`CliError::Worker`] if the worker cannot start (as
/// [`WorkerBuilder::start`](crate::WorkerBuilder::start)).
pub fn work(args: &WorkArgs) -> Result<(), CliError> {
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("w{}", std::process::id()));
    let history = match &args.history {
        Some(path) => Some(History(Mutex::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| CliError::History {
                    path: path.clone(),
                    source,
                })?,
        ))),
        None => None,
    };
    let tally = Arc::new(Mutex::new(Tally::default()));
    let backoff = Duration::from_millis(args.backoff_ms);
    let mut b = Worker::builder(&args.url, args.config.config(&args.ns))
        .name(name.clone())
        .threads(args.threads)
        .lease(Duration::from_millis(args.lease_ms))
        .max_attempts(args.max_attempts)
        .backoff(backoff, backoff * 64)
        .handler("noop", |_| Ok(()))
        .handler("sleep", |f| {
            let ms: u64 = f.payload()?;
            // The handler stands for work that takes this long.
            std::thread::sleep(Duration::from_millis(ms));
            Ok(())
        })
        .handler("fail", |_| Err("this kind always fails".into()));
    // Tuning flags not given keep the library's defaults.
    if let Some(ms) = args.heartbeat_ms {
        b = b.heartbeat(Duration::from_millis(ms));
    }
    if let Some(ms) = args.poll_ms {
        b = b.poll_interval(Duration::from_millis(ms));
    }
    if let Some(n) = args.batch {
        b = b.batch(n);
    }
    if let Some(n) = args.buffer {
        b = b.buffer(n);
    }
    if let Some(h) = history {
        let w = name.clone();
        b = b.on_event(move |e| h.record(&w, e));
    } else if args.summary {
        let t = tally.clone();
        b = b.on_event(move |e| {
            let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
            match e {
                WorkerEvent::Started { fire, at_ms } => t.started(fire, *at_ms),
                WorkerEvent::Finished { outcome, at_ms, .. } => t.finished(outcome, *at_ms),
                _ => {}
            }
        });
    }
    let worker = b.start().map_err(CliError::Worker)?;
    say(&format!("ready {name}"));
    // Run until standard input closes; a `stats` line asks for the counters.
    for line in std::io::stdin().lock().lines() {
        match line {
            Ok(l) if l.trim() == "stats" => say(&format!("stats {}", counters(&worker))),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    worker.shutdown();
    worker.join();
    if args.summary {
        let mut v = tally.lock().unwrap_or_else(|p| p.into_inner()).json();
        v["counters"] = counters(&worker);
        say(&format!("summary {v}"));
    }
    Ok(())
}

/// Runs `cluster`: a [`LocalCluster`] until standard input closes.
///
/// # Errors
///
/// [`CliError::LocalServer`] if the Cluster does not start (as
/// [`LocalCluster::start`]).
pub fn cluster(args: &ClusterArgs) -> Result<(), CliError> {
    let c = LocalCluster::start(args.masters, args.replicas).map_err(CliError::LocalServer)?;
    let ports: Vec<String> = c.nodes().iter().map(|n| n.port().to_string()).collect();
    say(&format!("ready {} {}", c.url(), ports.join(" ")));
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    drop(c);
    Ok(())
}

/// One line on standard output, flushed: the caller waits for it.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // The caller reads the pipe; if it has gone, there is no one to tell.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// Appends JSON lines to a file, one `write` per line.
struct History(Mutex<File>);

impl History {
    /// Records one event of worker `w`.
    fn record(&self, w: &str, e: &WorkerEvent) {
        let v = match e {
            WorkerEvent::Started { fire, at_ms } => {
                let mut v = fire_json("start", w, fire);
                v["at"] = json!(at_ms);
                v
            }
            WorkerEvent::Finished {
                fire,
                outcome,
                at_ms,
                ..
            } => {
                let mut v = fire_json("end", w, fire);
                v["outcome"] = json!(outcome_str(outcome));
                if let AckOutcome::Next(t) = outcome {
                    v["next"] = json!(t);
                }
                v["at"] = json!(at_ms);
                v
            }
            WorkerEvent::Skipped {
                fire,
                skipped,
                outcome,
                at_ms,
            } => {
                let mut v = fire_json("skipped", w, fire);
                v["outcome"] = json!(outcome_str(outcome));
                v["skipped"] = json!(skipped);
                if let AckOutcome::Next(t) = outcome {
                    v["next"] = json!(t);
                }
                v["at"] = json!(at_ms);
                v
            }
            WorkerEvent::LeaseLost { fire } => fire_json("lost", w, fire),
            WorkerEvent::Released { fire } => fire_json("released", w, fire),
            WorkerEvent::Reaped {
                id,
                due_ms,
                fence,
                outcome,
                at_ms,
            } => json!({
                "ev": "reaped", "w": w, "id": id, "due": due_ms, "fence": fence,
                "outcome": outcome, "at": at_ms}),
            WorkerEvent::RedisError { .. } => return,
        };
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

fn outcome_str(o: &AckOutcome) -> &'static str {
    match o {
        AckOutcome::Done => "done",
        AckOutcome::Next(_) => "next",
        AckOutcome::Retry => "retry",
        AckOutcome::Dead => "dead",
        AckOutcome::Cancelled => "cancelled",
        AckOutcome::Stale => "stale",
        AckOutcome::Error(_) => "error",
    }
}

/// What a worker process counts for a benchmark (`--summary`).
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

#[cfg(test)]
mod test {
    use clap::{CommandFactory, Parser};

    use super::{Cli, Command};
    use crate::Durability;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn config_flags_pass_through_to_a_worker_process() {
        let cli = Cli::try_parse_from([
            "w",
            "work",
            "--url",
            "redis://x/",
            "--shards",
            "3",
            "--slice-ms",
            "500",
            "--durability",
            "replicas:2",
        ])
        .unwrap();
        let Command::Work(w) = cli.command else {
            panic!("not work: {cli:?}")
        };
        assert_eq!(w.config.durability, Durability::Replicas(2));
        let again = Cli::try_parse_from(
            ["w", "work", "--url", "redis://x/"]
                .into_iter()
                .map(str::to_owned)
                .chain(w.config.to_args()),
        )
        .unwrap();
        let Command::Work(again) = again.command else {
            panic!("not work")
        };
        assert_eq!(format!("{:?}", again.config), format!("{:?}", w.config));
        assert!(
            Cli::try_parse_from(["w", "work", "--url", "u", "--durability", "always"]).is_err()
        );
        assert!(
            Cli::try_parse_from(["w", "work"]).is_err(),
            "--url is required"
        );
    }
}
