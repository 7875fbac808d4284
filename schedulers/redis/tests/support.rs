//! What the tests share: servers (one, or the shared Cluster), worker
//! processes and their histories, and the invariant checker.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use schedulers_redis::calendar::jiff::Timestamp;
use schedulers_redis::calendar::Calendar;
use schedulers_redis::{
    find_redis_server, Config, Durability, Job, LocalRedis, RedisScheduler, Worker, WorkerBuilder,
    WorkerEvent,
};

/// Starts a server, or returns `None` (after saying why) when none is
/// installed outside CI. Under CI a missing server fails the test.
pub fn server() -> Option<LocalRedis> {
    server_with(false)
}

/// As [`server`], with `appendfsync always` when `always`.
pub fn server_with(always: bool) -> Option<LocalRedis> {
    redis_installed().then(|| LocalRedis::start_with_fsync(always).expect("start redis-server"))
}

/// True if `redis-server` is installed; false (after saying why) if not,
/// outside CI. Under CI a missing server fails the test.
pub fn redis_installed() -> bool {
    if find_redis_server().is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("redis-server is not installed, and CI is set: the distributed tests must run");
        }
        // Written to the real stderr (not eprintln!, which the harness
        // captures) so the skip shows in the test output.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SKIPPED: redis-server not found (install it or set REDIS_SERVER); distributed test not run\n",
        );
        return false;
    }
    true
}

/// Where a scenario runs: one server or the shared Cluster.
pub struct Backend {
    /// The URL clients start from.
    pub url: String,
    /// Where worker histories go.
    pub dir: PathBuf,
    /// The URL of every node (one for a single server).
    pub nodes: Vec<String>,
    /// A directory of its own to remove at the end (Cluster scenarios).
    own_dir: bool,
}

impl Backend {
    pub fn single(r: &LocalRedis) -> Backend {
        Backend {
            url: r.url(),
            dir: r.dir().to_owned(),
            nodes: vec![r.url()],
            own_dir: false,
        }
    }

    /// A plain connection to every node (for `CLIENT KILL` and the like).
    pub fn node_connections(&self) -> Vec<redis::Connection> {
        self.nodes
            .iter()
            .map(|u| {
                redis::Client::open(u.as_str())
                    .unwrap()
                    .get_connection()
                    .unwrap()
            })
            .collect()
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if self.own_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The Cluster the Cluster scenarios share: 3 masters, a replica each, kept
/// by a `schedulers-redis-worker cluster` process whose standard input this
/// process holds open until it exits.
pub struct SharedCluster {
    pub url: String,
    pub ports: Vec<u16>,
    _supervisor: Mutex<(Child, ChildStdin)>,
}

impl SharedCluster {
    /// A backend for one scenario, with a history directory of its own.
    pub fn backend(&self, name: &str) -> Backend {
        let dir = std::env::temp_dir().join(format!(
            "schedulers-cluster-test-{}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Backend {
            url: self.url.clone(),
            dir,
            nodes: self
                .ports
                .iter()
                .map(|p| format!("redis://127.0.0.1:{p}/"))
                .collect(),
            own_dir: true,
        }
    }
}

/// Starts the shared Cluster on first use; `None` when Redis is not
/// installed outside CI.
pub fn shared_cluster() -> Option<&'static SharedCluster> {
    static C: OnceLock<SharedCluster> = OnceLock::new();
    if !redis_installed() {
        return None;
    }
    Some(C.get_or_init(|| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_schedulers-redis-worker"))
            .args(["cluster", "--masters", "3", "--replicas", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the cluster supervisor");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the cluster's ready line");
        let mut words = line.split_whitespace();
        assert_eq!(
            words.next(),
            Some("ready"),
            "the cluster did not start: {line:?}"
        );
        let url = words.next().expect("seed url").to_owned();
        let ports = words.map(|p| p.parse().expect("port")).collect();
        let stdin = child.stdin.take().expect("stdin");
        SharedCluster {
            url,
            ports,
            _supervisor: Mutex::new((child, stdin)),
        }
    }))
}

/// True when no job of the namespace is left in Redis (all acked or
/// cancelled): the number of job records over all shards is zero.
pub fn drained(url: &str, o: &WorkerOpts) -> bool {
    RedisScheduler::connect(url, o.config().retry_for(Duration::ZERO))
        .and_then(|s| s.job_count())
        .is_ok_and(|n| n == 0)
}

/// The layout of the in-process tests: 4 shards, slices of 500 ms.
pub fn config(ns: &str) -> Config {
    Config::default()
        .namespace(ns)
        .shards(4)
        .slice(Duration::from_millis(500))
}

/// The events an in-process worker emitted.
pub type Log = Arc<Mutex<Vec<WorkerEvent>>>;

/// An in-process worker on namespace `ns` (short lease, quick polls and
/// backoffs) that logs every event to `log`.
pub fn worker(url: &str, ns: &str, log: &Log) -> WorkerBuilder {
    let log = log.clone();
    Worker::builder(url, config(ns))
        .threads(2)
        .lease(Duration::from_millis(600))
        .poll_interval(Duration::from_millis(10))
        .backoff(Duration::from_millis(10), Duration::from_millis(40))
        .on_event(move |e| log.lock().unwrap().push(e.clone()))
}

/// Schedules a no-op job, due now, under each of `ids`, in batches.
pub fn schedule_noops_now(s: &RedisScheduler, ids: impl IntoIterator<Item = String>) {
    let jobs: Vec<Job> = ids
        .into_iter()
        .map(|id| Job::new(id, "noop").unwrap())
        .collect();
    for chunk in jobs.chunks(5000) {
        assert!(s.schedule_many(chunk).unwrap().iter().all(Result::is_ok));
    }
}

/// Polls `cond` every 10 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Settings of a worker process.
#[derive(Clone, Debug)]
pub struct WorkerOpts {
    pub ns: String,
    pub shards: u32,
    pub slice_ms: u64,
    pub threads: u32,
    pub lease_ms: u64,
    pub heartbeat_ms: u64,
    pub poll_ms: u64,
    pub backoff_ms: u64,
    pub max_attempts: u32,
    /// Jobs claimed per call and local buffer size (the library's defaults
    /// when `None`).
    pub batch: Option<u64>,
    pub buffer: Option<u64>,
    /// `async`, `fsync` or `replicas:N`, and its timeout.
    pub durability: Durability,
    pub durability_timeout_ms: u64,
}

impl WorkerOpts {
    pub fn new(ns: &str) -> WorkerOpts {
        WorkerOpts {
            ns: ns.into(),
            shards: 4,
            slice_ms: 500,
            threads: 4,
            lease_ms: 600,
            heartbeat_ms: 150,
            poll_ms: 20,
            backoff_ms: 50,
            max_attempts: 10,
            batch: None,
            buffer: None,
            durability: Durability::Async,
            durability_timeout_ms: 2000,
        }
    }

    pub fn config(&self) -> Config {
        Config::default()
            .namespace(self.ns.clone())
            .shards(self.shards)
            .slice(Duration::from_millis(self.slice_ms))
            .durability(self.durability)
            .durability_timeout(Duration::from_millis(self.durability_timeout_ms))
    }
}

/// A worker process. Dropping it kills it.
pub struct WorkerProc {
    pub name: String,
    pub history: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl WorkerProc {
    /// Spawns a worker and waits until it says it is ready.
    pub fn spawn(url: &str, dir: &Path, name: &str, o: &WorkerOpts) -> WorkerProc {
        let history = dir.join(format!("{name}.jsonl"));
        let n = |x: u64| x.to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_schedulers-redis-worker"))
            .args(["work", "--url", url, "--ns", &o.ns, "--name", name])
            .args([
                "--shards",
                &n(o.shards.into()),
                "--slice-ms",
                &n(o.slice_ms),
            ])
            .args([
                "--threads",
                &n(o.threads.into()),
                "--lease-ms",
                &n(o.lease_ms),
            ])
            .args([
                "--heartbeat-ms",
                &n(o.heartbeat_ms),
                "--poll-ms",
                &n(o.poll_ms),
            ])
            .args([
                "--backoff-ms",
                &n(o.backoff_ms),
                "--max-attempts",
                &n(o.max_attempts.into()),
            ])
            .args(o.batch.iter().flat_map(|b| ["--batch".to_owned(), n(*b)]))
            .args(o.buffer.iter().flat_map(|b| ["--buffer".to_owned(), n(*b)]))
            .args(["--durability".to_owned(), o.durability.to_string()])
            .args([
                "--durability-timeout-ms".to_owned(),
                n(o.durability_timeout_ms),
            ])
            .arg("--history")
            .arg(&history)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn schedulers-redis-worker");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read ready line");
        assert!(
            line.starts_with("ready"),
            "worker {name} did not start: {line:?}"
        );
        let stdin = child.stdin.take();
        WorkerProc {
            name: name.into(),
            history,
            child,
            stdin,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends a signal by name (`STOP`, `CONT`) with kill(1).
    pub fn signal(&self, sig: &str) {
        signal(self.pid(), sig);
    }

    /// Graceful stop: closes stdin, waits up to 20 s for the exit.
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill9();
        panic!("worker {} did not stop within 20 s", self.name);
    }

    /// This worker's events so far.
    pub fn events(&self) -> Vec<Event> {
        read_history(&self.history)
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a signal by name (`STOP`, `CONT`) to a process with kill(1).
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(ok.success(), "kill -{sig} {pid} failed");
}

/// One line of a worker's history.
#[derive(Clone, Debug)]
pub struct Event {
    /// `start`, `end`, `lost`, `reaped`, `released`, `skipped`.
    pub ev: String,
    pub worker: String,
    pub id: String,
    /// The fire id the handler was given (empty for `reaped`).
    pub fire: String,
    pub due: i64,
    pub fence: i64,
    pub attempt: i64,
    pub claimed: i64,
    pub shard: u32,
    pub outcome: String,
    pub at: i64,
    /// The job's next due time an `end` or `skipped` wrote (outcome `next`).
    pub next: Option<i64>,
    /// Fire times a `skipped` passed over.
    pub skipped: u64,
}

impl Event {
    pub fn fire_id(&self) -> String {
        format!("{}:{}", self.id, self.due)
    }
}

/// Reads one history file (a line cut by `kill -9` is ignored).
pub fn read_history(path: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            let i = |k: &str| v[k].as_i64().unwrap_or_default();
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            Event {
                ev: s("ev"),
                worker: s("w"),
                id: s("id"),
                fire: s("fire"),
                due: i("due"),
                fence: i("fence"),
                attempt: i("att"),
                claimed: i("claimed"),
                shard: i("shard") as u32,
                outcome: s("outcome"),
                at: i("at"),
                next: v["next"].as_i64(),
                skipped: v["skipped"].as_u64().unwrap_or_default(),
            }
        })
        .collect()
}

/// Every event of every worker.
pub fn all_events(workers: &[&WorkerProc]) -> Vec<Event> {
    workers.iter().flat_map(|w| w.events()).collect()
}

/// What the test knows about a job it scheduled.
#[derive(Clone, Debug)]
pub struct Expect {
    /// The first due time (ms, Redis clock).
    pub due: i64,
    /// Where its fires fall.
    pub grid: Grid,
    /// Redis time read right after a cancel returned (the cancel ran at or
    /// before it), if the job was cancelled.
    pub cancelled_at: Option<i64>,
}

/// The due times a job's fires may have.
#[derive(Clone, Debug)]
pub enum Grid {
    /// A one-shot job: its due time only.
    Once,
    /// A fixed-rate job: the first due time plus multiples of the period (ms).
    Rate(i64),
    /// A calendar job: its fire times.
    Calendar(Calendar),
    /// A job whose grid may move (`MissedRuns::Delay`): any time from the
    /// first due time on.
    Moves,
}

impl Expect {
    pub fn once(due: i64) -> Expect {
        Expect::on(due, Grid::Once)
    }

    pub fn rate(due: i64, period: i64) -> Expect {
        Expect::on(due, Grid::Rate(period))
    }

    pub fn calendar(due: i64, calendar: &Calendar) -> Expect {
        Expect::on(due, Grid::Calendar(calendar.clone()))
    }

    pub fn on(due: i64, grid: Grid) -> Expect {
        Expect {
            due,
            grid,
            cancelled_at: None,
        }
    }
}

/// Whether `ms` (Redis time) is a fire time of `cal`.
pub fn fires_at(cal: &Calendar, ms: i64) -> bool {
    let t = Timestamp::from_millisecond(ms).unwrap();
    cal.next_after(Timestamp::from_millisecond(ms - 1).unwrap()) == Some(t)
}

/// The fire times of `cal` from `from` to `to` (ms, both inclusive).
pub fn fire_times(cal: &Calendar, from: i64, to: i64) -> Vec<i64> {
    cal.fire_times(Timestamp::from_millisecond(from - 1).unwrap())
        .map(|z| z.timestamp().as_millisecond())
        .take_while(|&t| t <= to)
        .collect()
}

/// What the checker counted.
#[derive(Debug, Default)]
pub struct Summary {
    /// Starts per job id.
    pub runs: HashMap<String, usize>,
    /// Fire ids that ran more than once.
    pub repeated_fires: usize,
    /// Lease losses recorded (reaped, lost, stale).
    pub lease_losses: usize,
}

/// The invariant checker. Over the recorded history:
/// 1. every job that was not cancelled ran at least once and its last run
///    was acked (`done` or `next`);
/// 2. no run started before its due time, and a one-shot job's fire has its
///    scheduled due time; a periodic job's fires are on its grid (a
///    calendar's fire times);
/// 3. nothing started after a successful cancel;
/// 4. a fire id ran again only after a recorded lease loss (reaped, lost or
///    stale ack) or a recorded failure (retry) of the earlier run: a loss
///    of the same job and fence (one fence is one lease, of one fire).
///
/// Returns the counts, or panics listing every violation.
pub fn check(events: &[Event], jobs: &BTreeMap<String, Expect>) -> Summary {
    check_with(events, jobs, true)
}

/// [`check`] for a test that drops connections: an ack whose reply was lost
/// is recorded as an error although Redis applied it, so rule 1 is only
/// "ran at least once"; the test checks completion in Redis instead.
pub fn check_lost_replies(events: &[Event], jobs: &BTreeMap<String, Expect>) -> Summary {
    check_with(events, jobs, false)
}

fn check_with(events: &[Event], jobs: &BTreeMap<String, Expect>, require_ack: bool) -> Summary {
    let mut bad = Vec::new();
    let mut starts: HashMap<&str, Vec<&Event>> = HashMap::new();
    let mut acked: HashMap<&str, bool> = HashMap::new();
    // (job id, fence) pairs whose lease was recorded as lost or failed. By
    // job, not fire id: a reap names the due time stored, which a
    // missed-run policy may have run for another point of the grid.
    let mut released: HashMap<(String, i64), &str> = HashMap::new();
    let mut summary = Summary::default();
    for e in events {
        if !e.fire.is_empty() && e.fire != e.fire_id() {
            bad.push(format!(
                "{}: handler got fire id {} for due {}",
                e.id, e.fire, e.due
            ));
        }
        match e.ev.as_str() {
            "start" => starts.entry(&e.id).or_default().push(e),
            "end" => {
                if e.at != 0 && e.at < e.claimed {
                    bad.push(format!(
                        "{}: acked at {} before its claim at {}",
                        e.id, e.at, e.claimed
                    ));
                }
                if e.outcome == "done" || e.outcome == "next" || e.outcome == "cancelled" {
                    acked.insert(&e.id, true);
                }
                if e.outcome == "stale" || e.outcome == "retry" {
                    released.insert((e.id.clone(), e.fence), "end");
                }
            }
            "reaped" | "lost" => {
                released.insert((e.id.clone(), e.fence), "loss");
            }
            _ => {}
        }
    }
    summary.lease_losses = events
        .iter()
        .filter(|e| e.ev == "reaped" || e.ev == "lost" || (e.ev == "end" && e.outcome == "stale"))
        .count();
    for (id, exp) in jobs {
        let runs = starts.get(id.as_str()).cloned().unwrap_or_default();
        summary.runs.insert(id.clone(), runs.len());
        if exp.cancelled_at.is_none() && runs.is_empty() {
            bad.push(format!("{id}: not cancelled, but never ran"));
        }
        if require_ack
            && exp.cancelled_at.is_none()
            && !acked.get(id.as_str()).copied().unwrap_or(false)
        {
            bad.push(format!(
                "{id}: not cancelled, but no acked run ({} starts)",
                runs.len()
            ));
        }
        let mut by_fire: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
        for r in &runs {
            if r.claimed < r.due {
                bad.push(format!(
                    "{id}: claimed at {} before its due time {}",
                    r.claimed, r.due
                ));
            }
            match &exp.grid {
                Grid::Once if r.due != exp.due => bad.push(format!(
                    "{id}: fire due {} but scheduled for {}",
                    r.due, exp.due
                )),
                Grid::Rate(period) if r.due < exp.due || (r.due - exp.due) % period != 0 => bad
                    .push(format!(
                        "{id}: fire due {} is off the grid {} + k·{period}",
                        r.due, exp.due
                    )),
                Grid::Calendar(cal) if r.due < exp.due || !fires_at(cal, r.due) => bad.push(
                    format!("{id}: fire due {} is not a fire time of {cal}", r.due),
                ),
                Grid::Moves if r.due < exp.due => bad.push(format!(
                    "{id}: fire due {} before the first due time {}",
                    r.due, exp.due
                )),
                _ => {}
            }
            if let Some(t) = exp.cancelled_at {
                if r.claimed > t {
                    bad.push(format!(
                        "{id}: claimed at {} after the cancel (done by {t})",
                        r.claimed
                    ));
                }
            }
            by_fire.entry(r.fire_id()).or_default().push(r);
        }
        for (fire, mut rs) in by_fire {
            if rs.len() < 2 {
                continue;
            }
            summary.repeated_fires += 1;
            rs.sort_by_key(|r| r.fence);
            for r in &rs[..rs.len() - 1] {
                if !released.contains_key(&(r.id.clone(), r.fence)) {
                    bad.push(format!(
                        "{fire}: ran again after fence {} (worker {}) with no recorded lease loss",
                        r.fence, r.worker
                    ));
                }
            }
        }
    }
    for id in starts.keys() {
        if !jobs.contains_key(*id) {
            bad.push(format!("{id}: ran but was never scheduled"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} invariant violations:\n{}",
        bad.len(),
        bad.join("\n")
    );
    summary
}

/// Runs each scenario (a function of a [`Backend`]) as a test on a server of
/// its own, in `one_server`, and on the shared Cluster, in `cluster`.
macro_rules! on_one_server_and_on_the_cluster {
    ($($name:ident),* $(,)?) => {
        mod one_server {
            $(
                #[test]
                fn $name() {
                    let Some(redis) = crate::support::server() else { return };
                    super::$name(&crate::support::Backend::single(&redis));
                }
            )*
        }
        mod cluster {
            $(
                #[test]
                fn $name() {
                    let Some(c) = crate::support::shared_cluster() else { return };
                    super::$name(&c.backend(stringify!($name)));
                }
            )*
        }
    };
}
