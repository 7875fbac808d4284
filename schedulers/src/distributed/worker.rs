//! The worker: claims due jobs, runs their handlers on N threads, keeps the
//! leases alive, acks, retries, reaps expired leases of dead workers.
//!
//! Threads of one [`Worker`]:
//! - a **poller** walks the shards (starting at a random one), reaps
//!   expired leases now and then, and claims at most as many due jobs as
//!   there are idle handler threads, so no claimed job waits in a queue
//!   while its lease runs. It sleeps until the earliest run time it saw
//!   (capped by `poll_interval`), or until a handler thread frees up;
//! - a **heartbeat** extends the lease of every running job every
//!   `heartbeat`; a refused extension marks the run's lease as lost;
//! - `threads` **handler** threads run handlers (panics are caught and
//!   count as failures) and then ack (success) or fail (error).
//!
//! Every thread has its own connection and survives Redis going away: it
//! backs off and reconnects. A run whose ack cannot reach Redis is not lost:
//! its lease expires and the job runs again (at-least-once).

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};

use super::client::{Conn, RetryPolicy, Store};
use super::job::{AckOutcome, Fire};
use super::{Config, DistError};

/// A handler's error: any error type, reported as text in the job's record.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

type Handler = Arc<dyn Fn(&Fire) -> Result<(), HandlerError> + Send + Sync>;
type Listener = Arc<dyn Fn(&WorkerEvent) + Send + Sync>;
/// Runs in progress: (shard, id) → (fire, lease-lost flag).
type Running = Mutex<HashMap<(u32, String), (Fire, Arc<AtomicBool>)>>;

/// Something a worker did, for logs, metrics and tests. All times are
/// Redis's clock, ms since the epoch.
#[derive(Debug, Clone)]
pub enum WorkerEvent {
    /// A handler is about to run (`fire.claimed_ms` is the claim time).
    Started {
        /// The run.
        fire: Fire,
    },
    /// A run ended and was acked (or failed, or refused).
    Finished {
        /// The run.
        fire: Fire,
        /// What the ack did.
        outcome: AckOutcome,
        /// When the ack ran (0 if Redis could not be reached).
        at_ms: i64,
        /// The handler's error, if it failed.
        error: Option<String>,
    },
    /// A lease extension was refused: another worker may run this fire.
    LeaseLost {
        /// The run.
        fire: Fire,
    },
    /// This worker's reaper took an expired lease away from its holder.
    Reaped {
        /// The job id.
        id: String,
        /// The fire's due time.
        due_ms: i64,
        /// The fence of the lost lease.
        fence: i64,
        /// `RETRY`, `DEAD` or `CANCELLED`.
        outcome: String,
        /// When (Redis clock).
        at_ms: i64,
    },
    /// A claimed job was handed back unstarted at shutdown.
    Released {
        /// The run.
        fire: Fire,
    },
    /// Talking to Redis failed; the thread backs off and retries.
    RedisError {
        /// What failed.
        message: String,
    },
}

/// Builds a [`Worker`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedulers::distributed::{Config, Worker};
///
/// #[derive(serde::Deserialize)]
/// struct Email { to: String }
///
/// let worker = Worker::builder("redis://127.0.0.1:6379/", Config::default().namespace("demo"))
///     .threads(4)
///     .lease(Duration::from_secs(30))
///     .handler("email", |fire| {
///         let email: Email = fire.payload()?;
///         println!("sending to {} (dedup key {})", email.to, fire.fire_id());
///         Ok(())
///     })
///     .start()?;
/// // ... later:
/// worker.shutdown();
/// worker.join();
/// # Ok::<(), schedulers::distributed::DistError>(())
/// ```
pub struct WorkerBuilder {
    url: String,
    config: Config,
    threads: usize,
    lease: Duration,
    heartbeat: Option<Duration>,
    poll: Duration,
    batch: usize,
    retry: RetryPolicy,
    handlers: HashMap<String, Handler>,
    listener: Option<Listener>,
    name: Option<String>,
}

impl std::fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field("config", &self.config)
            .field("threads", &self.threads)
            .field("lease", &self.lease)
            .field("kinds", &self.handlers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl WorkerBuilder {
    /// Number of handler threads (default 4).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// Lease length (default 30 s). A worker that stops heartbeating for
    /// this long loses its jobs to other workers. Keep it at least 3× the
    /// heartbeat plus the worst pause you expect.
    pub fn lease(mut self, d: Duration) -> Self {
        self.lease = d;
        self
    }

    /// Heartbeat period (default: a third of the lease).
    pub fn heartbeat(mut self, d: Duration) -> Self {
        self.heartbeat = Some(d);
        self
    }

    /// Longest sleep of the poller between two looks at Redis (default
    /// 100 ms). The poller sleeps less when it knows the next run time.
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.poll = d;
        self
    }

    /// Most jobs claimed by one script call (default 64).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n;
        self
    }

    /// Attempts of one fire before it is dead-lettered (default 5). A lost
    /// lease counts as an attempt.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.retry.max_attempts = i64::from(n);
        self
    }

    /// Backoff before retry `n` is `base · 2^(n-1)`, at most `max`
    /// (defaults 1 s and 5 min).
    pub fn backoff(mut self, base: Duration, max: Duration) -> Self {
        self.retry.backoff_base_ms = base.as_millis().min(i64::MAX as u128) as i64;
        self.retry.backoff_max_ms = max.as_millis().min(i64::MAX as u128) as i64;
        self
    }

    /// Registers the handler of a kind. A claimed job whose kind has no
    /// handler fails (and so is retried, then dead-lettered): every worker of
    /// a namespace should know every kind.
    pub fn handler<F>(mut self, kind: &str, f: F) -> Self
    where
        F: Fn(&Fire) -> Result<(), HandlerError> + Send + Sync + 'static,
    {
        self.handlers.insert(kind.to_owned(), Arc::new(f));
        self
    }

    /// Receives every [`WorkerEvent`], on the thread that caused it. Keep it
    /// short.
    pub fn on_event<F>(mut self, f: F) -> Self
    where
        F: Fn(&WorkerEvent) + Send + Sync + 'static,
    {
        self.listener = Some(Arc::new(f));
        self
    }

    /// Names the worker (stored in the lease meta; default host-pid-random).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Starts the threads.
    ///
    /// # Errors
    ///
    /// [`DistError::InvalidConfig`] for zero threads, a lease under 3 ms, a
    /// heartbeat not shorter than the lease, a zero batch or poll interval,
    /// or a retry policy with no attempt; [`DistError::Redis`] for a bad URL.
    /// Redis need not be up: the worker connects when it can.
    pub fn start(self) -> Result<Worker, DistError> {
        let lease_ms = self.lease.as_millis().min(i64::MAX as u128) as i64;
        let heartbeat = self.heartbeat.unwrap_or(self.lease / 3);
        if self.threads == 0 {
            return Err(DistError::InvalidConfig("threads must be at least 1"));
        }
        if lease_ms < 3 {
            return Err(DistError::InvalidConfig("lease must be at least 3 ms"));
        }
        if heartbeat.is_zero() || heartbeat >= self.lease {
            return Err(DistError::InvalidConfig(
                "heartbeat must be non-zero and shorter than the lease",
            ));
        }
        if self.batch == 0 || self.poll.is_zero() {
            return Err(DistError::InvalidConfig(
                "batch and poll interval must be non-zero",
            ));
        }
        if self.retry.max_attempts < 1
            || self.retry.backoff_base_ms < 0
            || self.retry.backoff_max_ms < 0
        {
            return Err(DistError::InvalidConfig(
                "max attempts must be at least 1, backoffs non-negative",
            ));
        }
        let store = Store::new(&self.url, self.config)?;
        let name = self
            .name
            .unwrap_or_else(|| format!("worker-{}-{:x}", std::process::id(), seed()));
        let shared = Arc::new(Shared {
            store,
            name,
            lease_ms,
            heartbeat,
            poll: self.poll,
            batch: self.batch,
            retry: self.retry,
            threads: self.threads,
            handlers: self.handlers,
            listener: self.listener,
            stop: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            running: Mutex::new(HashMap::new()),
        });
        let (job_tx, job_rx) = bounded::<Fire>(self.threads);
        let (wake_tx, wake_rx) = bounded::<()>(self.threads + 1);
        let (hb_tx, hb_rx) = bounded::<()>(1);
        let mut joins = Vec::new();
        for i in 0..self.threads {
            let sh = shared.clone();
            let rx = job_rx.clone();
            let wake = wake_tx.clone();
            joins.push(spawn(&format!("dist-handler-{i}"), move || {
                handler_loop(&sh, &rx, &wake)
            })?);
        }
        drop(job_rx);
        {
            let sh = shared.clone();
            joins.push(spawn("dist-heartbeat", move || {
                heartbeat_loop(&sh, &hb_rx)
            })?);
        }
        {
            let sh = shared.clone();
            joins.push(spawn("dist-poller", move || {
                poll_loop(&sh, job_tx, &wake_rx)
            })?);
        }
        Ok(Worker {
            shared,
            joins: Mutex::new(joins),
            wake: wake_tx,
            heartbeat: hb_tx,
        })
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, DistError> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .map_err(|_| DistError::InvalidConfig("could not spawn a worker thread"))
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    h.finish()
}

struct Shared {
    store: Store,
    name: String,
    lease_ms: i64,
    heartbeat: Duration,
    poll: Duration,
    batch: usize,
    retry: RetryPolicy,
    threads: usize,
    handlers: HashMap<String, Handler>,
    listener: Option<Listener>,
    stop: AtomicBool,
    /// Claimed and not yet acked.
    busy: AtomicUsize,
    /// Runs in progress, for the heartbeat.
    running: Running,
}

impl Shared {
    fn emit(&self, e: WorkerEvent) {
        if let Some(l) = &self.listener {
            l(&e);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn redis_error(&self, e: &DistError) {
        self.emit(WorkerEvent::RedisError {
            message: e.to_string(),
        });
    }
}

/// A running worker. Dropping it shuts it down and waits for it.
pub struct Worker {
    shared: Arc<Shared>,
    joins: Mutex<Vec<JoinHandle<()>>>,
    wake: Sender<()>,
    heartbeat: Sender<()>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// Starts building a worker for the schedule at `url` laid out by
    /// `config`.
    pub fn builder(url: &str, config: Config) -> WorkerBuilder {
        WorkerBuilder {
            url: url.to_owned(),
            config,
            threads: 4,
            lease: Duration::from_secs(30),
            heartbeat: None,
            poll: Duration::from_millis(100),
            batch: 64,
            retry: RetryPolicy {
                max_attempts: 5,
                backoff_base_ms: 1000,
                backoff_max_ms: 300_000,
            },
            handlers: HashMap::new(),
            listener: None,
            name: None,
        }
    }

    /// The worker's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Number of jobs claimed and not yet acked.
    pub fn in_flight(&self) -> usize {
        self.shared.busy.load(Ordering::Acquire)
    }

    /// Stops claiming. Running handlers finish and ack; claimed jobs not
    /// started yet are released to other workers. Returns at once; see
    /// [`join`](Self::join).
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        let _ = self.wake.try_send(());
        let _ = self.heartbeat.try_send(());
    }

    /// Waits until every thread of the worker has ended (call
    /// [`shutdown`](Self::shutdown) first, or this waits forever).
    pub fn join(&self) {
        let joins = std::mem::take(&mut *self.joins.lock().unwrap_or_else(|p| p.into_inner()));
        for j in joins {
            let _ = j.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shutdown();
        self.join();
    }
}

/// Sleeps `d` unless woken (a handler freed up, or shutdown).
fn nap(wake: &Receiver<()>, d: Duration) {
    let _ = wake.recv_timeout(d);
}

fn poll_loop(sh: &Shared, jobs: Sender<Fire>, wake: &Receiver<()>) {
    let mut con = sh.store.conn();
    let n = sh.store.shards.len();
    let mut start = (seed() % n as u64) as usize;
    // Reaping is paced on Redis's clock: every quarter lease while busy, on
    // every idle look otherwise.
    let reap_every = (sh.lease_ms / 4).max(1);
    let mut last_reap: Option<i64> = None;
    let mut last_now = 0i64;
    let mut idle = true;
    let mut backoff = Duration::from_millis(10);
    while !sh.stopped() {
        let result: Result<Duration, DistError> = (|| {
            if idle || last_reap.is_none_or(|t| last_now - t >= reap_every) {
                for s in 0..n {
                    let (now, reaped) = sh.store.reap(&mut con, s, 1000, sh.retry)?;
                    last_now = now;
                    for r in reaped {
                        sh.emit(WorkerEvent::Reaped {
                            id: r.id,
                            due_ms: r.due_ms,
                            fence: r.fence,
                            outcome: r.outcome,
                            at_ms: now,
                        });
                    }
                }
                last_reap = Some(last_now);
            }
            let mut sleep = sh.poll;
            let mut claimed_any = false;
            for i in 0..n {
                let free = sh.threads.saturating_sub(sh.busy.load(Ordering::Acquire));
                if free == 0 || sh.stopped() {
                    break;
                }
                let s = (start + i) % n;
                let (slices, head) = sh.store.slices(&mut con, s, 4)?;
                match head {
                    None => continue,
                    // Not due yet by the last Redis time we saw (plus a poll
                    // interval of slack): skip the claim, sleep until then.
                    Some(h) if h > last_now + sh.poll.as_millis() as i64 => {
                        sleep = sleep.min(Duration::from_millis((h - last_now) as u64));
                        continue;
                    }
                    Some(_) => {}
                }
                let limit = free.min(sh.batch);
                let (now, next, fires) =
                    sh.store
                        .claim(&mut con, s, &slices, limit, sh.lease_ms, &sh.name)?;
                last_now = now;
                if !fires.is_empty() {
                    claimed_any = true;
                }
                for fire in fires {
                    sh.busy.fetch_add(1, Ordering::AcqRel);
                    if jobs.send(fire).is_err() {
                        return Ok(Duration::ZERO);
                    }
                }
                if let Some(next) = next {
                    let wait = Duration::from_millis((next - now).max(0) as u64);
                    sleep = sleep.min(wait);
                }
            }
            start = (start + 1) % n;
            idle = !claimed_any;
            Ok(if claimed_any { Duration::ZERO } else { sleep })
        })();
        match result {
            Ok(d) => {
                backoff = Duration::from_millis(10);
                let full = sh.busy.load(Ordering::Acquire) >= sh.threads;
                if full {
                    // Wait for a handler to free up (it sends a wake).
                    nap(wake, sh.poll);
                } else if !d.is_zero() {
                    nap(wake, d);
                }
            }
            Err(e) => {
                sh.redis_error(&e);
                nap(wake, backoff);
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
        }
    }
    // Dropping `jobs` lets the handler threads drain and end.
}

fn handler_loop(sh: &Shared, jobs: &Receiver<Fire>, wake: &Sender<()>) {
    let mut con = sh.store.conn();
    while let Ok(fire) = jobs.recv() {
        if sh.stopped() {
            release(sh, &mut con, fire);
        } else {
            run(sh, &mut con, fire);
        }
        sh.busy.fetch_sub(1, Ordering::AcqRel);
        let _ = wake.try_send(());
    }
}

fn release(sh: &Shared, con: &mut Conn, fire: Fire) {
    match sh.store.release(con, &fire) {
        Ok(_) => sh.emit(WorkerEvent::Released { fire }),
        // The lease will expire and the job be reaped: nothing is lost.
        Err(e) => sh.redis_error(&e),
    }
}

fn run(sh: &Shared, con: &mut Conn, fire: Fire) {
    let key = (fire.shard, fire.id.clone());
    let lost = Arc::new(AtomicBool::new(false));
    sh.running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key.clone(), (fire.clone(), lost.clone()));
    sh.emit(WorkerEvent::Started { fire: fire.clone() });
    let result: Result<(), String> = match sh.handlers.get(&fire.kind) {
        None => Err(format!("no handler for kind {:?}", fire.kind)),
        Some(h) => match catch_unwind(AssertUnwindSafe(|| h(&fire))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(p) => Err(crate::Error::from_panic(&*p).to_string()),
        },
    };
    sh.running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&key);
    // One call to Redis, repeated once on a fresh connection if the first
    // one failed at the connection level (a dropped connection, a failover).
    // If the first call was applied and only its reply was lost, the repeat
    // answers STALE, so a STALE after a retry means "unknown", not "lost".
    let call = |con: &mut Conn| match &result {
        Ok(()) => sh.store.ack(con, &fire, sh.retry).map(|(s, now, next)| {
            let o = match (s.as_str(), next) {
                ("DONE", _) => AckOutcome::Done,
                ("NEXT", Some(n)) => AckOutcome::Next(n),
                ("STALE", _) => AckOutcome::Stale,
                (other, _) => AckOutcome::Error(format!("unexpected ack reply {other}")),
            };
            (o, now)
        }),
        Err(why) => sh.store.fail(con, &fire, sh.retry, why).map(|(s, now)| {
            let o = match s.as_str() {
                "RETRY" => AckOutcome::Retry,
                "DEAD" => AckOutcome::Dead,
                "CANCELLED" => AckOutcome::Cancelled,
                "STALE" => AckOutcome::Stale,
                other => AckOutcome::Error(format!("unexpected fail reply {other}")),
            };
            (o, now)
        }),
    };
    let (outcome, at_ms) = match call(con) {
        Ok(r) => r,
        Err(e) if e.is_connection() => {
            sh.redis_error(&e);
            match call(con) {
                Ok((AckOutcome::Stale, now)) => (
                    AckOutcome::Error(format!(
                        "{e}; the repeated call was refused, so the first one may have been applied"
                    )),
                    now,
                ),
                Ok(r) => r,
                Err(e) => (AckOutcome::Error(e.to_string()), 0),
            }
        }
        Err(e) => (AckOutcome::Error(e.to_string()), 0),
    };
    if matches!(outcome, AckOutcome::Stale) && !lost.swap(true, Ordering::AcqRel) {
        sh.emit(WorkerEvent::LeaseLost { fire: fire.clone() });
    }
    sh.emit(WorkerEvent::Finished {
        fire,
        outcome,
        at_ms,
        error: result.err(),
    });
}

fn heartbeat_loop(sh: &Shared, stop: &Receiver<()>) {
    let mut con = sh.store.conn();
    loop {
        let stopping = sh.stopped();
        let running: Vec<(Fire, Arc<AtomicBool>)> = sh
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        if stopping && running.is_empty() && sh.busy.load(Ordering::Acquire) == 0 {
            return;
        }
        for (fire, lost) in running {
            if lost.load(Ordering::Acquire) {
                continue;
            }
            match sh.store.extend(&mut con, &fire, sh.lease_ms, sh.retry) {
                Ok(true) => {}
                Ok(false) => {
                    // A run that ended between the snapshot and the
                    // extension was acked (its lease is gone for that
                    // reason); its handler thread reports any real loss.
                    let key = (fire.shard, fire.id.clone());
                    let still_running = sh
                        .running
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(&key)
                        .is_some_and(|(f, _)| f.fence == fire.fence);
                    if still_running && !lost.swap(true, Ordering::AcqRel) {
                        sh.emit(WorkerEvent::LeaseLost { fire });
                    }
                }
                Err(e) => sh.redis_error(&e),
            }
        }
        // Wait one heartbeat, or less once shutting down so the thread ends
        // soon after the last run.
        let wait = if stopping {
            sh.heartbeat.min(Duration::from_millis(20))
        } else {
            sh.heartbeat
        };
        let _ = stop.recv_timeout(wait);
    }
}
