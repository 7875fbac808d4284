//! `schedulers-redis-worker`: a worker process of the distributed scheduler,
//! and a load benchmark that drives several of them.
//!
//! ```text
//! schedulers-redis-worker work --url URL [--ns NS] [--shards 4] [--slice-ms 60000]
//!     [--threads 4] [--lease-ms 30000] [--heartbeat-ms L/3] [--poll-ms 100]
//!     [--batch 64] [--max-attempts 5] [--backoff-ms 1000] [--history FILE] [--name NAME]
//! schedulers-redis-worker bench [--url URL] [--workers 1,2,4] [--jobs 20000]
//!     [--window-ms 0] [--lead-ms 1000] [--threads 4] [--shards 8]
//! ```
//!
//! `work` runs until its standard input closes, then shuts down gracefully.
//! Handlers: `noop`; `sleep` (payload: milliseconds to sleep); `fail`
//! (always fails). With `--history`, every worker event is appended to FILE
//! as one JSON line (times are Redis's clock), written before the next step
//! so a `kill -9` loses nothing already done.
//!
//! `bench` starts its own `redis-server` unless `--url` is given and, for
//! each count in `--workers` (one run each, in turn, one JSON line each),
//! spawns that many worker processes, schedules `--jobs` no-op jobs due uniformly
//! over `--window-ms` starting `--lead-ms` from now, waits until all ran, and
//! prints one JSON object: jobs/s (jobs over the time from the first due
//! time to the last ack) and lateness percentiles (claim time − due time,
//! both on Redis's clock).

// A process harness and benchmark: it waits and measures in real time. The
// scheduling decisions themselves are made by the library on Redis's clock.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use schedulers::distributed::{
    AckOutcome, Config, DistError, Fire, Job, LocalRedis, RedisScheduler, Worker, WorkerEvent,
};
use serde_json::json;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("work") => work(&Opts::parse(&args[1..])),
        Some("bench") => bench(&Opts::parse(&args[1..])),
        _ => Err("usage: schedulers-redis-worker work|bench [--flag value]...".to_owned()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("schedulers-redis-worker: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Opts(HashMap<String, String>);

impl Opts {
    fn parse(args: &[String]) -> Opts {
        let mut m = HashMap::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if let Some(k) = a.strip_prefix("--") {
                m.insert(k.to_owned(), it.next().cloned().unwrap_or_default());
            }
        }
        Opts(m)
    }
    fn str(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    fn num(&self, k: &str, default: u64) -> Result<u64, String> {
        match self.0.get(k) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{k} wants a number, got {v:?}")),
        }
    }
    fn config(&self) -> Result<Config, String> {
        Ok(Config::default()
            .namespace(self.str("ns").unwrap_or("default"))
            .shards(self.num("shards", 4)? as u32)
            .slice(Duration::from_millis(self.num("slice-ms", 60_000)?)))
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
    let backoff = Duration::from_millis(o.num("backoff-ms", 1000)?);
    let mut b = Worker::builder(url, o.config()?)
        .name(name.clone())
        .threads(o.num("threads", 4)? as usize)
        .lease(Duration::from_millis(lease))
        .heartbeat(Duration::from_millis(o.num("heartbeat-ms", lease / 3)?))
        .poll_interval(Duration::from_millis(o.num("poll-ms", 100)?))
        .batch(o.num("batch", 64)? as usize)
        .max_attempts(o.num("max-attempts", 5)? as u32)
        .backoff(backoff, backoff * 64)
        .handler("noop", |_| Ok(()))
        .handler("sleep", |f| {
            let ms: u64 = f.payload()?;
            std::thread::sleep(Duration::from_millis(ms));
            Ok(())
        })
        .handler("fail", |_| Err("this kind always fails".into()));
    if let Some(h) = history {
        let w = name.clone();
        b = b.on_event(move |e| match e {
            WorkerEvent::Started { fire } => h.write(fire_json("start", &w, fire)),
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
    }
    let worker = b.start().map_err(e2s)?;
    println!("ready {name}");
    let _ = std::io::stdout().flush();
    // Run until standard input closes.
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    worker.shutdown();
    worker.join();
    Ok(())
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bench(o: &Opts) -> Result<(), String> {
    let list: Vec<u64> = o
        .str("workers")
        .unwrap_or("1")
        .split(',')
        .map(|w| {
            w.trim()
                .parse()
                .map_err(|_| format!("--workers wants numbers like 1,2,4, got {w:?}"))
        })
        .collect::<Result<_, _>>()?;
    let _server;
    let url = match o.str("url") {
        Some(u) => u.to_owned(),
        None => {
            let s = LocalRedis::start().map_err(e2s)?;
            let u = s.url();
            _server = s;
            u
        }
    };
    for workers in list {
        if workers == 0 {
            return Err("--workers must be at least 1".into());
        }
        bench_one(o, &url, workers)?;
    }
    Ok(())
}

fn bench_one(o: &Opts, url: &str, workers: u64) -> Result<(), String> {
    let jobs = o.num("jobs", 20_000)?;
    let window = o.num("window-ms", 0)? as i64;
    let lead = o.num("lead-ms", 1000)? as i64;
    let threads = o.num("threads", 4)?;
    let shards = o.num("shards", 8)?;
    let ns = format!("bench-{}-{workers}", std::process::id());
    let config = Config::default()
        .namespace(ns.clone())
        .shards(shards as u32);
    let dir =
        std::env::temp_dir().join(format!("schedulers-bench-{}-{workers}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut procs = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for i in 0..workers {
        let hist = dir.join(format!("w{i}.jsonl"));
        let mut child = Command::new(&exe)
            .args([
                "work",
                "--url",
                url,
                "--ns",
                &ns,
                "--shards",
                &shards.to_string(),
            ])
            .args([
                "--threads",
                &threads.to_string(),
                "--lease-ms",
                "10000",
                "--poll-ms",
                "50",
            ])
            .args(["--batch", "256", "--name", &format!("w{i}")])
            .arg("--history")
            .arg(&hist)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        let out = child.stdout.take().ok_or("no stdout")?;
        BufReader::new(out)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        procs.push(Proc(child));
        files.push(hist);
    }
    let sched = RedisScheduler::connect(url, config).map_err(e2s)?;
    let now = sched.now_ms().map_err(e2s)?;
    let start = now + lead;
    let list: Vec<Job> = (0..jobs)
        .map(|i| {
            let due = start
                + if jobs > 1 {
                    window * i as i64 / (jobs as i64 - 1)
                } else {
                    0
                };
            Job::new(format!("j{i}"), "noop").map(|j| j.at_ms(due))
        })
        .collect::<Result<_, _>>()
        .map_err(e2s)?;
    for r in sched.schedule_many(&list).map_err(e2s)? {
        r.map_err(e2s)?;
    }
    // Wait until every job has been acked: no meta left in any shard.
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let mut con = client.get_connection().map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let mut left = 0u64;
        for s in 0..shards {
            let n: u64 = redis::cmd("HLEN")
                .arg(format!("{{tw:{ns}:{s}}}:m"))
                .query(&mut con)
                .map_err(|e| e.to_string())?;
            left += n;
        }
        if left == 0 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{left} jobs still pending after 300 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for p in &mut procs {
        drop(p.0.stdin.take());
    }
    for p in &mut procs {
        let _ = p.0.wait();
    }
    let mut lateness = Vec::new();
    let mut runs = 0u64;
    let mut first_due = i64::MAX;
    let mut last_ack = i64::MIN;
    let mut per_worker = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| e.to_string())?;
        let mut mine = 0u64;
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
            let g = |k: &str| v[k].as_i64().unwrap_or_default();
            match v["ev"].as_str() {
                Some("start") => {
                    lateness.push(g("claimed") - g("due"));
                    first_due = first_due.min(g("due"));
                    runs += 1;
                    mine += 1;
                }
                Some("end") => last_ack = last_ack.max(g("at")),
                _ => {}
            }
        }
        per_worker.push(mine);
    }
    let _ = std::fs::remove_dir_all(&dir);
    lateness.sort_unstable();
    let elapsed = (last_ack - first_due).max(1);
    let report = json!({
        "workers": workers, "threads_per_worker": threads, "shards": shards, "jobs": jobs,
        "window_ms": window, "runs": runs, "runs_per_worker": per_worker,
        "elapsed_ms": elapsed,
        "jobs_per_sec": (jobs as f64 * 1000.0 / elapsed as f64).round(),
        "lateness_ms": {
            "p50": percentile(&lateness, 0.50), "p90": percentile(&lateness, 0.90),
            "p99": percentile(&lateness, 0.99), "max": lateness.last().copied().unwrap_or(0),
        },
    });
    println!("{report}");
    Ok(())
}
