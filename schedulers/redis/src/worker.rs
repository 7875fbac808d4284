//! The worker: claims due jobs in batches into a local buffer, runs their
//! handlers on N threads, settles (acks) them in batches, keeps the leases
//! alive and reaps the expired leases of dead workers.
//!
//! Threads of one [`Worker`], each with its own connection:
//! - the **claimer** takes up to `batch` due jobs per script call into a
//!   bounded local buffer, whatever the number of idle handler threads,
//!   pipelining the calls of every due shard into one round trip. The buffer
//!   holds `buffer` jobs if that is set, else about 10 ms of the handlers'
//!   measured work, between 1 and 16 batches (see [`BufferSize`]). It knows
//!   each shard's earliest run time (from its claims, from a look at every
//!   shard once per `poll_interval`, and from wake-up hints)
//!   and sleeps until the earliest one, or until the buffer has room for a
//!   round (a quarter of it). At a backlog it keeps two rounds in flight,
//!   on two connections, so Redis runs one while it buffers the other. It
//!   plans each fire of a planned periodic job as it takes it (see
//!   [`plan`](crate::plan)), and hands a fire its missed-run policy skips
//!   straight to the settler;
//! - the **waker** listens to the shards' wake-up channels (Pub/Sub): a
//!   producer whose job becomes a shard's earliest one publishes its run
//!   time, so a sleeping claimer learns of it at once;
//! - `threads` **handler** threads take jobs from the buffer and run them
//!   (panics are caught and count as failures);
//! - the **settler** acks (or fails) finished runs and hands back unstarted
//!   ones at shutdown, everything that finished meanwhile in one round trip
//!   (one script call per shard);
//! - the **keeper** extends the leases of every held job (buffered, running
//!   or awaiting its ack) every `heartbeat`, in one round trip, and reaps
//!   expired leases of other workers every `reap_interval`.
//!
//! # Why Pub/Sub for wake-ups
//!
//! A worker must not poll Redis for work that is not due, yet must learn
//! at once when a producer adds a job earlier than anything it knew of. The
//! scripts publish the new earliest run time of a shard on the shard's
//! channel whenever it moves earlier. Pub/Sub reaches every sleeping worker
//! (a token in a list taken with a blocking pop reaches one, which may be
//! busy or dead, and a blocking pop holds a connection per shard on Redis
//! Cluster, where one pop cannot span slots), costs nothing while nothing
//! changes, and carries the time, so a worker sleeps exactly until then
//! instead of waking to look. Its messages are fire-and-forget, so they are
//! only hints: a worker that (re)subscribes looks at every shard at once,
//! and looks again every `poll_interval` whatever it heard; correctness
//! never depends on a message. On Redis Cluster the channel carries the
//! shard's hash tag, ready for sharded Pub/Sub (`SPUBLISH`).
//!
//! A run whose ack cannot reach Redis is not lost: its lease expires and the
//! job runs again (at-least-once). Every thread survives Redis going away:
//! it backs off and reconnects.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};

use crate::conn::{clone_error, Conn, Heard};
use crate::figures::{Figures, Outcome, WorkerMetrics};
use crate::job::{AckOutcome, Fire};
use crate::plan::{Decision, Planned, Schedule};
use crate::store::{ClaimSent, ClaimedFire, Op, RetryPolicy, Settled, Store, MAX_BATCH};
use crate::{Config, Error};

/// A handler's error: any error type, reported as text in the job's record.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

type Handler = Arc<dyn Fn(&Fire) -> Result<(), HandlerError> + Send + Sync>;
type Listener = Arc<dyn Fn(&WorkerEvent) + Send + Sync>;

/// Something a worker did, for logs, metrics and tests. All times are
/// Redis's clock, ms since the epoch.
#[derive(Debug, Clone)]
pub enum WorkerEvent {
    /// A handler is about to run (`fire.claimed_ms` is the claim time).
    Started {
        /// The run.
        fire: Fire,
        /// When it starts: the claim time plus the time the job waited in
        /// the worker's buffer (measured locally, so it can be early by the
        /// claim reply's transit, well under a millisecond on a LAN).
        at_ms: i64,
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
    /// A late fire of a periodic job whose policy is
    /// [`MissedRuns::Skip`](crate::calendar::MissedRuns::Skip) was passed
    /// over: its handler never ran.
    Skipped {
        /// The fire, at its due time (the first of those passed over).
        fire: Fire,
        /// How many fire times were passed over: this one and the others
        /// due by its first claim.
        skipped: u64,
        /// What the skip did: `Next(t)` (the job's next fire), `Done` (its
        /// calendar has no fire left, or it was cancelled), `Stale` (the
        /// lease was lost first; the next holder plans the same skip), or
        /// `Error`.
        outcome: AckOutcome,
        /// When (Redis clock; 0 if Redis could not be reached).
        at_ms: i64,
    },
    /// Talking to Redis failed; the thread backs off and retries.
    RedisError {
        /// What failed.
        message: String,
    },
}

/// A worker's traffic with Redis so far, and its buffer, from
/// [`Worker::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Round trips (a pipeline of many commands is one).
    pub round_trips: u64,
    /// Commands sent (each script call is one).
    pub commands: u64,
    /// Jobs claimed.
    pub claimed: u64,
    /// The local buffer's capacity now: the one set with
    /// [`WorkerBuilder::buffer`], or the one the handlers' pace sets.
    pub buffer: usize,
}

/// Builds a [`Worker`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedulers_redis::{Config, Worker};
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
/// # Ok::<(), schedulers_redis::Error>(())
/// ```
pub struct WorkerBuilder {
    url: String,
    config: Config,
    threads: usize,
    lease: Duration,
    heartbeat: Option<Duration>,
    reap: Option<Duration>,
    poll: Duration,
    batch: usize,
    buffer: Option<usize>,
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

    /// How often this worker reaps expired leases of dead or paused workers
    /// (default: a third of the lease). A killed worker's jobs run again
    /// after at most their lease plus this.
    pub fn reap_interval(mut self, d: Duration) -> Self {
        self.reap = Some(d);
        self
    }

    /// Longest time between two looks at every shard's earliest run time
    /// (default 1 s). Wake-up messages and the worker's own claims keep it
    /// informed in between; this look only bounds the delay after a lost
    /// message. An idle worker costs one command per shard per look.
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.poll = d;
        self
    }

    /// Most jobs claimed by one script call (default 64, at most 1000).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n;
        self
    }

    /// Capacity of the local buffer of claimed jobs not started yet. The
    /// worker claims a quarter of it at a time, whenever there is room (jobs
    /// buffered and claims in flight count). A larger buffer means
    /// fewer, larger claims per job at saturation; while jobs wait in it no
    /// other worker can take them. By default the capacity follows the
    /// handlers: about 10 ms of their measured work, between 1 and 16
    /// batches, so fast handlers get large claims and slow ones hold
    /// no more than a batch. Setting it fixes it.
    pub fn buffer(mut self, n: usize) -> Self {
        self.buffer = Some(n);
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

    /// Names the worker (default `worker-<pid>-<random>`); see
    /// [`Worker::name`].
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Starts the threads.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for zero threads, a lease under 3 ms, a
    /// heartbeat not shorter than the lease, a zero reap or poll interval, a
    /// batch outside 1..=1000, a zero buffer, or a retry policy with no
    /// attempt; [`Error::Redis`] for a bad URL. Redis need not be up:
    /// the worker connects when it can.
    pub fn start(self) -> Result<Worker, Error> {
        let lease_ms = self.lease.as_millis().min(i64::MAX as u128) as i64;
        let heartbeat = self.heartbeat.unwrap_or(self.lease / 3);
        let reap = self.reap.unwrap_or(self.lease / 3);
        let sizing = match self.buffer {
            Some(n) => BufferSize::fixed(n),
            None => BufferSize::adaptive(self.batch),
        };
        if self.threads == 0 {
            return Err(Error::InvalidConfig("threads must be at least 1"));
        }
        if lease_ms < 3 {
            return Err(Error::InvalidConfig("lease must be at least 3 ms"));
        }
        if heartbeat.is_zero() || heartbeat >= self.lease {
            return Err(Error::InvalidConfig(
                "heartbeat must be non-zero and shorter than the lease",
            ));
        }
        if reap.is_zero() || self.poll.is_zero() {
            return Err(Error::InvalidConfig(
                "reap and poll intervals must be non-zero",
            ));
        }
        if !(1..=MAX_BATCH).contains(&self.batch) {
            return Err(Error::InvalidConfig("batch must be within 1..=1000"));
        }
        if sizing.max == 0 {
            return Err(Error::InvalidConfig("buffer must be at least 1"));
        }
        if self.retry.max_attempts < 1
            || self.retry.backoff_base_ms < 0
            || self.retry.backoff_max_ms < 0
        {
            return Err(Error::InvalidConfig(
                "max attempts must be at least 1, backoffs non-negative",
            ));
        }
        let store = Store::new(&self.url, self.config)?;
        // The layout (and the durability) checked at start when Redis is up:
        // a worker that disagrees never runs. When Redis is down, every
        // thread checks on its first connection and does nothing until the
        // check passes.
        match store.now_ms(&mut store.conn()) {
            Err(e) if !e.is_transient() => return Err(e),
            _ => {}
        }
        let name = self
            .name
            .unwrap_or_else(|| format!("worker-{}-{:x}", std::process::id(), seed()));
        let (ctl_tx, ctl_rx) = unbounded::<Ctl>();
        let shared = Arc::new(Shared {
            store,
            name: name.clone(),
            lease_ms,
            heartbeat,
            reap,
            poll: self.poll,
            batch: self.batch,
            limit: AtomicUsize::new(sizing.limit),
            wants_room: AtomicBool::new(false),
            retry: self.retry,
            handlers: self.handlers,
            listener: self.listener,
            stop: AtomicBool::new(false),
            held: Mutex::new(HashMap::new()),
            queued: AtomicUsize::new(0),
            claimed: AtomicU64::new(0),
            ctl: ctl_tx,
            figures: Figures::new(&name),
        });
        let (buf_tx, buf_rx) = bounded::<Arc<Held>>(sizing.max);
        let (done_tx, done_rx) = unbounded::<Done>();
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let mut joins = Vec::new();
        let mut go = |name: &str, f: Box<dyn FnOnce() + Send>| -> Result<(), Error> {
            joins.push(spawn(name, f)?);
            Ok(())
        };
        for i in 0..self.threads {
            let (sh, rx, done) = (shared.clone(), buf_rx.clone(), done_tx.clone());
            go(
                &format!("dist-handler-{i}"),
                Box::new(move || handler_loop(&sh, &rx, &done)),
            )?;
        }
        {
            let sh = shared.clone();
            go("dist-settler", Box::new(move || settle_loop(&sh, &done_rx)))?;
        }
        {
            let (sh, stop) = (shared.clone(), stop_rx.clone());
            go("dist-keeper", Box::new(move || keep_loop(&sh, &stop)))?;
        }
        {
            let (sh, stop) = (shared.clone(), stop_rx);
            go("dist-waker", Box::new(move || wake_loop(&sh, &stop)))?;
        }
        {
            let sh = shared.clone();
            go(
                "dist-claimer",
                Box::new(move || claim_loop(&sh, sizing, &ctl_rx, buf_tx, &buf_rx, &done_tx)),
            )?;
        }
        Ok(Worker {
            shared,
            joins: Mutex::new(joins),
            stop: Mutex::new(Some(stop_tx)),
        })
    }
}

fn spawn(name: &str, f: Box<dyn FnOnce() + Send>) -> Result<JoinHandle<()>, Error> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .map_err(|_| Error::InvalidConfig("could not spawn a worker thread"))
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    h.finish()
}

/// A claimed job this worker holds until it is settled: in the buffer,
/// running, or waiting for its ack. The keeper extends its lease.
struct Held {
    key: u64,
    fire: Fire,
    /// The plan of a planned periodic job's fire, for its settle.
    plan: Option<Planned>,
    /// When the claim reply arrived.
    claimed_at: Instant,
    /// The lease was refused or reaped: someone else may run the job.
    lost: AtomicBool,
    /// Handed to the settler: its lease ends by this worker's doing, so a
    /// refused extension from now on is no loss.
    settling: AtomicBool,
}

/// What wakes the claimer.
enum Ctl {
    /// The buffer has room for a round.
    Room,
    /// Shard `.0`'s earliest run time is now `.1` (a wake-up message).
    Hint(usize, i64),
    /// Wake-up messages may have been missed: look at every shard.
    Resync,
    /// Shutdown.
    Stop,
}

/// A held job on its way to the settler.
struct Done {
    held: Arc<Held>,
    op: Op,
}

struct Shared {
    store: Store,
    name: String,
    lease_ms: i64,
    heartbeat: Duration,
    reap: Duration,
    poll: Duration,
    batch: usize,
    /// The buffer's capacity now (set by the claimer's [`BufferSize`]); the
    /// claimer claims when it has room for a round ([`claim_round`]).
    limit: AtomicUsize,
    /// The claimer waits for room: the handler that makes room for a round
    /// wakes it.
    wants_room: AtomicBool,
    retry: RetryPolicy,
    handlers: HashMap<String, Handler>,
    listener: Option<Listener>,
    stop: AtomicBool,
    held: Mutex<HashMap<u64, Arc<Held>>>,
    /// Jobs in the buffer.
    queued: AtomicUsize,
    claimed: AtomicU64,
    ctl: Sender<Ctl>,
    figures: Figures,
}

impl Shared {
    /// Builds and emits an event, only if someone listens.
    fn emit(&self, e: impl FnOnce() -> WorkerEvent) {
        if let Some(l) = &self.listener {
            l(&e());
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// This worker lost the lease of `fire`: counted and reported.
    fn lost(&self, fire: &Fire) {
        self.figures.lease_lost();
        self.emit(|| WorkerEvent::LeaseLost { fire: fire.clone() });
    }

    fn redis_error(&self, e: &Error) {
        self.emit(|| WorkerEvent::RedisError {
            message: e.to_string(),
        });
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Held>>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn forget(&self, h: &Held) {
        self.held().remove(&h.key);
    }
}

/// A running worker. Dropping it shuts it down and waits for it.
pub struct Worker {
    shared: Arc<Shared>,
    joins: Mutex<Vec<JoinHandle<()>>>,
    /// Dropped at shutdown: wakes the keeper and the waker.
    stop: Mutex<Option<Sender<()>>>,
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
            reap: None,
            poll: Duration::from_secs(1),
            batch: 64,
            buffer: None,
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

    /// Number of jobs claimed and not yet settled (buffered, running, or
    /// waiting for their ack).
    pub fn in_flight(&self) -> usize {
        self.shared.held().len()
    }

    /// The worker's traffic with Redis so far, and its buffer's capacity.
    pub fn stats(&self) -> WorkerStats {
        let c = self.shared.store.counters();
        WorkerStats {
            round_trips: c.round_trips.load(Ordering::Relaxed),
            commands: c.commands.load(Ordering::Relaxed),
            claimed: self.shared.claimed.load(Ordering::Relaxed),
            buffer: self.shared.limit.load(Ordering::Relaxed),
        }
    }

    /// What the worker knows about itself: its runs, their lateness (on
    /// Redis's clock) and run time, failures, panics, skips, lost leases
    /// and wake-ups, in all and by job kind (see [`WorkerMetrics`]). Cheap
    /// enough to call every second.
    pub fn metrics(&self) -> WorkerMetrics {
        self.shared.figures.snapshot()
    }

    /// Stops claiming. Claimed jobs not started yet are handed back to
    /// other workers at once; running handlers finish and ack. Returns at
    /// once; see [`join`](Self::join).
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        let _ = self.shared.ctl.send(Ctl::Stop);
        drop(self.stop.lock().unwrap_or_else(|p| p.into_inner()).take());
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

/// Redis's clock as last read, mapped to the local monotonic clock.
struct RedisClock {
    ms: i64,
    at: Instant,
}

impl RedisClock {
    fn set(&mut self, ms: i64, at: Instant) {
        self.ms = ms;
        self.at = at;
    }

    /// Redis's clock now, estimated. It lags the true time by the reply's
    /// transit, so a sleep until a due time never ends early.
    fn now_ms(&self) -> i64 {
        self.ms + self.at.elapsed().as_millis() as i64
    }

    /// The local instant Redis's clock reads `ms`.
    fn instant_of(&self, ms: i64) -> Instant {
        self.at + Duration::from_millis(ms.saturating_sub(self.ms).max(0) as u64)
    }
}

/// How long a window the handlers' pace is measured over.
const PACE_WINDOW: Duration = Duration::from_millis(10);

/// How much of the handlers' work an adaptive buffer holds.
const BUFFER_WORK: Duration = Duration::from_millis(10);

/// The most batches an adaptive buffer holds.
const BUFFER_BATCHES: usize = 16;

/// The buffer's capacity: fixed, or adapted to the handlers' pace. At a
/// backlog, a buffer of one batch was claimed 32 jobs at a time (half of
/// it, one round at a time then), and between claims Redis waited for the
/// worker: one worker with no-op handlers drained 78-81k jobs/s with that
/// buffer and 93-103k with this adaptive one (alternating runs on one
/// machine; Redis CPU per job 9.7-10.2 µs against 8.5-9.2, since each
/// script call carries more). But a buffer of 1,024 in front of 4 handlers
/// that take 100 ms a job keeps its last job from other workers for 25 s.
/// Holding about 10 ms of the handlers' measured work serves both: never
/// less than a batch (the default before), never more than 16.
#[derive(Debug, Clone, Copy)]
struct BufferSize {
    min: usize,
    max: usize,
    /// The capacity now.
    limit: usize,
    /// Start of the current pace window, and the jobs taken by then.
    since: Option<(Instant, u64)>,
}

impl BufferSize {
    fn fixed(n: usize) -> Self {
        BufferSize {
            min: n,
            max: n,
            limit: n,
            since: None,
        }
    }

    fn adaptive(batch: usize) -> Self {
        BufferSize {
            min: batch,
            max: batch * BUFFER_BATCHES,
            limit: batch,
            since: None,
        }
    }

    /// Updates the capacity from `taken`, the number of jobs the handlers
    /// have taken from the buffer so far, at `now`; returns the capacity.
    fn observe(&mut self, taken: u64, now: Instant) -> usize {
        if self.min == self.max {
            return self.limit;
        }
        match self.since {
            Some((t0, n0)) if now.duration_since(t0) >= PACE_WINDOW => {
                let per_s = taken.saturating_sub(n0) as f64 / now.duration_since(t0).as_secs_f64();
                let want = (per_s * BUFFER_WORK.as_secs_f64()).round() as usize;
                self.limit = want.clamp(self.min, self.max);
                self.since = Some((now, taken));
            }
            Some(_) => {}
            None => self.since = Some((now, taken)),
        }
        self.limit
    }
}

/// Divides `room` among due shards: shards whose last claim came back
/// short have little due, so each gets an even share; backlogged ones
/// (their last claim was full) get whole batches with what is left.
fn allocate(room: usize, due: &[usize], backlogged: &[bool], batch: usize) -> Vec<(usize, usize)> {
    let (full, light): (Vec<usize>, Vec<usize>) = due.iter().partition(|&&s| backlogged[s]);
    let share = (room / light.len().max(1)).clamp(1, batch);
    let wants = light.iter().map(|&s| (s, share));
    let mut left = room;
    let mut asks = Vec::new();
    for (s, want) in wants.chain(full.iter().map(|&s| (s, batch))) {
        if left == 0 {
            break;
        }
        let take = want.min(left);
        asks.push((s, take));
        left -= take;
    }
    asks
}

/// Claim rounds in flight at once, each on its own connection: while the
/// claimer reads and buffers one round's jobs, Redis runs the next. With one
/// round at a time, Redis waited for the claimer after every round (one
/// worker with no-op handlers kept Redis 82-87% busy).
const CLAIMS_IN_FLIGHT: usize = 2;

/// The jobs one claim round asks for: a quarter of the buffer, so that two
/// rounds fit in flight beside the jobs still buffered.
fn claim_round(limit: usize) -> usize {
    limit.div_ceil(4)
}

/// A claim round sent and not yet read.
struct Round {
    con: usize,
    sent: ClaimSent,
    asked: usize,
}

/// The claimer's state: what it knows of the shards and its rounds in flight.
struct Claimer<'a> {
    sh: &'a Shared,
    /// To the settler, for fires that run no handler (skipped, unplannable).
    done: Sender<Done>,
    cons: Vec<Conn>,
    flight: VecDeque<Round>,
    heads: Vec<Option<i64>>,
    backlogged: Vec<bool>,
    clock: RedisClock,
    next_key: u64,
    buf: Sender<Arc<Held>>,
}

impl Claimer<'_> {
    /// Sends a round of claims on a connection with nothing in flight.
    fn send(&mut self, asks: &[(usize, usize)]) -> Result<(), Error> {
        let con = (0..CLAIMS_IN_FLIGHT)
            .find(|c| self.flight.iter().all(|r| r.con != *c))
            .ok_or_else(|| Error::Protocol("every claim connection is busy".into()))?;
        let sent = self
            .sh
            .store
            .claim_send(&mut self.cons[con], asks, self.sh.lease_ms)?;
        self.flight.push_back(Round {
            con,
            asked: asks.iter().map(|a| a.1).sum(),
            sent,
        });
        Ok(())
    }

    /// Reads the oldest round in flight and buffers its jobs; returns how
    /// many it got, or the first error after buffering what the others got.
    fn take(&mut self) -> Option<Result<usize, Error>> {
        let Round { con, sent, .. } = self.flight.pop_front()?;
        let limits: Vec<usize> = sent.asks.iter().map(|a| a.1).collect();
        let replies = match self.sh.store.claim_recv(&mut self.cons[con], sent) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let at = Instant::now();
        let mut got = 0;
        let mut failed = None;
        for (reply, limit) in replies.into_iter().zip(limits) {
            let c = match reply {
                Ok(c) => c,
                Err(e) => {
                    failed = Some(e);
                    continue;
                }
            };
            if c.now > self.clock.ms {
                self.clock.set(c.now, at);
            }
            self.heads[c.shard] = c.head;
            self.backlogged[c.shard] = c.fires.len() >= limit;
            got += c.fires.len();
            // Planned outside the lock: a late fire's plan steps through
            // every fire time it missed.
            let routed: Vec<_> = c.fires.into_iter().map(route).collect();
            let mut held = self.sh.held();
            for (fire, plan, op) in routed {
                self.next_key += 1;
                let h = Arc::new(Held {
                    key: self.next_key,
                    fire,
                    plan,
                    claimed_at: at,
                    lost: AtomicBool::new(false),
                    settling: AtomicBool::new(false),
                });
                held.insert(self.next_key, h.clone());
                if let Some(op) = op {
                    let _ = self.done.send(Done { held: h, op });
                    continue;
                }
                self.sh.queued.fetch_add(1, Ordering::AcqRel);
                // Never blocks: no more than the room was claimed.
                let _ = self.buf.send(h);
            }
        }
        self.sh.claimed.fetch_add(got as u64, Ordering::Relaxed);
        Some(failed.map_or(Ok(got), Err))
    }

    /// Reads every round in flight; the first error, after all are read.
    fn take_all(&mut self) -> Result<(), Error> {
        let mut first = None;
        while let Some(r) = self.take() {
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

fn claim_loop(
    sh: &Shared,
    mut sizing: BufferSize,
    ctl: &Receiver<Ctl>,
    buf: Sender<Arc<Held>>,
    buf_rx: &Receiver<Arc<Held>>,
    done: &Sender<Done>,
) {
    let n = sh.store.shards.len();
    let mut c = Claimer {
        sh,
        done: done.clone(),
        cons: (0..CLAIMS_IN_FLIGHT).map(|_| sh.store.conn()).collect(),
        flight: VecDeque::new(),
        heads: vec![None; n],
        backlogged: vec![false; n],
        clock: RedisClock {
            ms: 0,
            at: Instant::now(),
        },
        next_key: 0,
        buf,
    };
    let mut look_at = Instant::now();
    let mut start = (seed() % n as u64) as usize;
    let mut backoff = Duration::from_millis(10);
    while !sh.stopped() {
        let step = (|| -> Result<Option<Instant>, Error> {
            if Instant::now() >= look_at {
                // A look needs a connection with nothing in flight.
                c.take_all()?;
                let (now, h) = sh.store.heads(&mut c.cons[0])?;
                c.clock.set(now, Instant::now());
                c.heads = h;
                look_at = Instant::now() + sh.poll;
            }
            let mut queued = sh.queued.load(Ordering::SeqCst);
            let taken = sh
                .claimed
                .load(Ordering::Relaxed)
                .saturating_sub(queued as u64);
            let limit = sizing.observe(taken, Instant::now());
            sh.limit.store(limit, Ordering::Relaxed);
            let round = claim_round(limit);
            if c.flight.is_empty() && queued + round > limit {
                // Ask to be woken, then look again: a handler that made
                // room before seeing the flag shows here.
                sh.wants_room.store(true, Ordering::SeqCst);
                queued = sh.queued.load(Ordering::SeqCst);
            }
            let asked: usize = c.flight.iter().map(|r| r.asked).sum();
            let room = limit.saturating_sub(queued + asked);
            let may_claim = room >= round;
            let est = c.clock.now_ms();
            let due: Vec<usize> = (0..n)
                .map(|i| (start + i) % n)
                .filter(|&s| c.heads[s].is_some_and(|h| h <= est))
                .collect();
            if may_claim && !due.is_empty() && c.flight.len() < CLAIMS_IN_FLIGHT {
                let asks = allocate(round, &due, &c.backlogged, sh.batch);
                // A second round only where a backlog waits: beside a round
                // in flight, a shard with little due would answer empty.
                if c.flight.is_empty() || asks.iter().all(|&(s, _)| c.backlogged[s]) {
                    start = (start + asks.len()) % n;
                    c.send(&asks)?;
                    return Ok(None);
                }
            }
            if let Some(got) = c.take() {
                // More may be due at once; a claim that found nothing waits
                // for the next millisecond rather than spinning.
                let idle = got? == 0 && c.flight.is_empty();
                return Ok(idle.then(|| Instant::now() + Duration::from_millis(1)));
            }
            let mut until = look_at;
            if may_claim {
                if let Some(h) = c.heads.iter().flatten().min() {
                    until = until.min(c.clock.instant_of(*h));
                }
            }
            Ok(Some(until))
        })();
        let until = match step {
            Ok(None) => continue,
            Ok(Some(until)) => {
                backoff = Duration::from_millis(10);
                until
            }
            Err(e) => {
                sh.redis_error(&e);
                // Look at everything again once Redis answers.
                look_at = Instant::now();
                backoff = (backoff * 2).min(Duration::from_millis(500));
                Instant::now() + backoff / 2
            }
        };
        let woke = ctl.recv_deadline(until);
        sh.figures.wakeup();
        match woke {
            Ok(Ctl::Hint(s, due)) => c.heads[s] = Some(c.heads[s].map_or(due, |h| h.min(due))),
            Ok(Ctl::Resync) => look_at = Instant::now(),
            Ok(Ctl::Room | Ctl::Stop) | Err(_) => {}
        }
    }
    // Shutdown: the rounds in flight are buffered, the handlers end once
    // the buffer is empty, and what never started goes back to Redis at
    // once.
    if let Err(e) = c.take_all() {
        sh.redis_error(&e);
    }
    drop(c);
    while let Ok(h) = buf_rx.try_recv() {
        sh.queued.fetch_sub(1, Ordering::AcqRel);
        let _ = done.send(Done {
            held: h,
            op: Op::Release,
        });
    }
}

fn handler_loop(sh: &Shared, jobs: &Receiver<Arc<Held>>, done: &Sender<Done>) {
    while let Ok(h) = jobs.recv() {
        let left = sh.queued.fetch_sub(1, Ordering::SeqCst) - 1;
        // Read before the swap: with room for a round, most jobs find no
        // one waiting, and a read leaves the flag's cache line shared.
        let limit = sh.limit.load(Ordering::Relaxed);
        if left + claim_round(limit) <= limit
            && sh.wants_room.load(Ordering::SeqCst)
            && sh.wants_room.swap(false, Ordering::SeqCst)
        {
            let _ = sh.ctl.send(Ctl::Room);
        }
        if sh.stopped() {
            let _ = done.send(Done {
                held: h,
                op: Op::Release,
            });
            continue;
        }
        if h.lost.load(Ordering::Acquire) {
            // Its lease was lost while it waited: someone else runs it.
            sh.forget(&h);
            continue;
        }
        let fire = &h.fire;
        let waited = h.claimed_at.elapsed();
        sh.emit(|| WorkerEvent::Started {
            fire: fire.clone(),
            at_ms: fire.claimed_ms + waited.as_millis() as i64,
        });
        // On Redis's clock: the claim's time, plus the wait in the buffer.
        let late_ms = u64::try_from(fire.claimed_ms.saturating_sub(fire.due_ms)).unwrap_or(0);
        let run = sh.figures.start_run(
            &fire.kind,
            &fire.id,
            Duration::from_millis(late_ms) + waited,
        );
        let start = Instant::now();
        let (op, outcome) = match sh.handlers.get(&fire.kind) {
            None => (
                Op::Fail(format!("no handler for kind {:?}", fire.kind), h.plan),
                Outcome::Failed,
            ),
            Some(f) => match catch_unwind(AssertUnwindSafe(|| f(fire))) {
                Ok(Ok(())) => (Op::Ack(h.plan), Outcome::Ok),
                Ok(Err(e)) => (Op::Fail(e.to_string(), h.plan), Outcome::Failed),
                Err(p) => (Op::Fail(panic_message(&*p), h.plan), Outcome::Panicked),
            },
        };
        let error = match &op {
            Op::Fail(why, _) => Some(why.as_str()),
            _ => None,
        };
        run.end(start.elapsed(), outcome, error);
        let _ = done.send(Done { held: h, op });
    }
}

/// Most leases settled in one round trip.
const SETTLE_BATCH: usize = 4096;

/// How long a settle that fails transiently (a dropped connection, a
/// failover, a write not confirmed durable) is tried again, with a backoff
/// of 10 ms doubling to 1 s, before its error is reported. Long enough for
/// a Cluster failover and a restart of Redis; the lease decides meanwhile
/// (a lease that lapses is reaped and the settle answers STALE).
const SETTLE_RETRY_FOR: Duration = Duration::from_secs(30);

/// How long the settler waits for more finished runs after the first: acks
/// are not urgent (the lease covers them), and a settle costs one script
/// call per shard, so at a paced load of a few thousand jobs a second over 8
/// shards this turns about one call per job into one per several. At a
/// backlog a settle carries what 5 ms finish (about 500 jobs at 100k jobs/s,
/// some 60 per script call); a linger of 1 ms kept Redis busier but cost as
/// much more per job in smaller settles, and drained no faster.
const SETTLE_LINGER: Duration = Duration::from_millis(5);

/// A finished run on its way to Redis, and how long it has been trying.
struct Settling {
    done: Done,
    since: Instant,
    backoff: Duration,
    retry_at: Instant,
}

fn settle_loop(sh: &Shared, done: &Receiver<Done>) {
    let mut con = sh.store.conn();
    // Settles that failed transiently (a dropped connection, a failover, a
    // write not confirmed durable), waiting for their next try: they go
    // with a later batch, so a master failing over does not hold up the
    // settles of the others.
    let mut retrying: Vec<Settling> = Vec::new();
    let mut open = true;
    while open || !retrying.is_empty() {
        let mut batch: Vec<Settling> = Vec::new();
        let next_retry = retrying.iter().map(|r| r.retry_at).min();
        let first = match (open, next_retry) {
            (true, None) => done.recv().map_err(|_| RecvTimeoutError::Disconnected),
            (true, Some(at)) => done.recv_deadline(at),
            (false, _) => Err(RecvTimeoutError::Timeout),
        };
        match first {
            Ok(d) => batch.push(Settling::new(d)),
            Err(RecvTimeoutError::Disconnected) => open = false,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if !batch.is_empty() {
            let until = Instant::now() + SETTLE_LINGER;
            while batch.len() < SETTLE_BATCH {
                match done.try_recv() {
                    Ok(d) => batch.push(Settling::new(d)),
                    // Shutting down: hand back without waiting.
                    Err(_) if sh.stopped() => break,
                    Err(_) => match done.recv_deadline(until) {
                        Ok(d) => batch.push(Settling::new(d)),
                        Err(_) => break,
                    },
                }
            }
        }
        let now = Instant::now();
        let (due, later): (Vec<Settling>, Vec<Settling>) =
            retrying.drain(..).partition(|r| r.retry_at <= now || !open);
        retrying = later;
        batch.extend(due);
        if !batch.is_empty() {
            retrying.extend(settle_batch(sh, &mut con, batch, !open));
        }
    }
}

impl Settling {
    fn new(done: Done) -> Settling {
        done.held.settling.store(true, Ordering::Release);
        let now = Instant::now();
        Settling {
            done,
            since: now,
            backoff: Duration::from_millis(10),
            retry_at: now,
        }
    }
}

/// Settles `batch` in one round trip and reports the outcomes; returns the
/// settles to try again (transient failures within [`SETTLE_RETRY_FOR`],
/// unless `last`). Settling is idempotent: a repeat of an applied settle
/// gets the original outcome from Redis's outcome log, so the history
/// records what happened, not "lost".
fn settle_batch(sh: &Shared, con: &mut Conn, batch: Vec<Settling>, last: bool) -> Vec<Settling> {
    let items: Vec<(&Fire, &Op)> = batch
        .iter()
        .map(|s| (&s.done.held.fire, &s.done.op))
        .collect();
    let results = match sh.store.settle(con, &items, sh.retry) {
        Ok(r) => r,
        Err(e) => {
            let msg = e.to_string();
            items.iter().map(|_| Err(clone_error(&e, &msg))).collect()
        }
    };
    drop(items);
    let mut again = Vec::new();
    let mut finished = Vec::new();
    for (mut st, r) in batch.into_iter().zip(results) {
        let in_time = !last && st.since.elapsed() < SETTLE_RETRY_FOR;
        let retry = match &r {
            Err(e) if e.is_transient() => {
                sh.redis_error(e);
                in_time
            }
            // Applied on the master, not confirmed durable: ask again (the
            // repeat gets the same outcome and waits again); in the end,
            // report what the master did.
            Ok((_, _, Some(why))) => {
                sh.redis_error(&Error::NotDurable(why.clone()));
                in_time
            }
            _ => false,
        };
        if retry {
            st.retry_at = Instant::now() + st.backoff;
            st.backoff = (st.backoff * 2).min(Duration::from_millis(1000));
            again.push(st);
        } else {
            finished.push((
                st.done,
                r.map(|(s, now, _)| (s, now)).map_err(|e| e.to_string()),
            ));
        }
    }
    report_settled(sh, finished);
    again
}

/// A settle's end: the outcome and Redis's clock, or why it failed.
type SettleEnd = Result<(Settled, i64), String>;

fn report_settled(sh: &Shared, finished: Vec<(Done, SettleEnd)>) {
    for (d, r) in finished {
        sh.forget(&d.held);
        let fire = &d.held.fire;
        let (outcome, at_ms) = match &r {
            Ok((s, now)) => (
                match s {
                    Settled::Done => AckOutcome::Done,
                    Settled::Next(t) => AckOutcome::Next(*t),
                    Settled::Retry => AckOutcome::Retry,
                    Settled::Dead => AckOutcome::Dead,
                    Settled::Cancelled => AckOutcome::Cancelled,
                    Settled::Stale => AckOutcome::Stale,
                    Settled::Released => AckOutcome::Error("released".into()),
                    Settled::Unknown => AckOutcome::Error(
                        "the lease ended more than an outcome window ago; how is no longer recorded"
                            .into(),
                    ),
                },
                *now,
            ),
            Err(e) => (AckOutcome::Error(e.clone()), 0),
        };
        match d.op {
            Op::Release => match r {
                Ok((Settled::Released | Settled::Cancelled, _)) => {
                    sh.emit(|| WorkerEvent::Released { fire: fire.clone() })
                }
                // Refused: the lease was lost already. Unreachable: the
                // lease will expire and the job be reaped. Nothing is lost.
                Ok(_) => {}
                Err(message) => sh.emit(|| WorkerEvent::RedisError { message }),
            },
            Op::Skip(_, skipped) => {
                if outcome == AckOutcome::Stale && !d.held.lost.swap(true, Ordering::AcqRel) {
                    sh.lost(fire);
                }
                if !matches!(outcome, AckOutcome::Stale | AckOutcome::Error(_)) {
                    sh.figures.skipped(&fire.kind, skipped);
                }
                sh.emit(|| WorkerEvent::Skipped {
                    fire: fire.clone(),
                    skipped,
                    outcome,
                    at_ms,
                });
            }
            Op::Ack(_) | Op::Fail(..) => {
                if outcome == AckOutcome::Stale && !d.held.lost.swap(true, Ordering::AcqRel) {
                    sh.lost(fire);
                }
                let error = match &d.op {
                    Op::Fail(why, _) => Some(why.clone()),
                    _ => None,
                };
                sh.emit(|| WorkerEvent::Finished {
                    fire: fire.clone(),
                    outcome,
                    at_ms,
                    error,
                });
            }
        }
    }
}

fn keep_loop(sh: &Shared, stop: &Receiver<()>) {
    let mut con = sh.store.conn();
    let mut next_beat = Instant::now() + sh.heartbeat;
    // Reap at once: after an outage of every worker, orphaned leases are
    // recovered without waiting a whole interval.
    let mut next_reap = Instant::now();
    loop {
        let stopping = sh.stopped();
        if stopping && sh.held().is_empty() {
            return;
        }
        let now = Instant::now();
        if now >= next_beat {
            heartbeat(sh, &mut con);
            next_beat = now + sh.heartbeat;
        }
        if !stopping && now >= next_reap {
            match sh.store.reap(&mut con, 1000, sh.retry) {
                Ok(per_shard) => {
                    for r in per_shard {
                        match r {
                            Ok(reaped) => {
                                for r in reaped {
                                    sh.emit(|| WorkerEvent::Reaped {
                                        id: r.id,
                                        due_ms: r.due_ms,
                                        fence: r.fence,
                                        outcome: r.outcome,
                                        at_ms: r.at_ms,
                                    });
                                }
                            }
                            Err(e) => sh.redis_error(&e),
                        }
                    }
                }
                Err(e) => sh.redis_error(&e),
            }
            next_reap = now + sh.reap;
        }
        if stopping {
            // The last held jobs are being settled: look again soon.
            std::thread::sleep(Duration::from_millis(10).min(sh.heartbeat));
        } else {
            let _ = stop.recv_deadline(next_beat.min(next_reap));
        }
    }
}

/// Extends the lease of every held job in one round trip; a refusal marks
/// the job lost.
fn heartbeat(sh: &Shared, con: &mut Conn) {
    let held: Vec<Arc<Held>> = sh
        .held()
        .values()
        .filter(|h| !h.lost.load(Ordering::Acquire) && !h.settling.load(Ordering::Acquire))
        .cloned()
        .collect();
    if held.is_empty() {
        return;
    }
    let fires: Vec<&Fire> = held.iter().map(|h| &h.fire).collect();
    match sh.store.extend(con, &fires, sh.lease_ms, sh.retry) {
        Ok(results) => {
            for (h, r) in held.iter().zip(results) {
                match r {
                    Ok(true) => {}
                    Ok(false) => {
                        // A job handed to the settler since the snapshot
                        // may have no lease any more, rightly.
                        if !h.settling.load(Ordering::Acquire)
                            && !h.lost.swap(true, Ordering::AcqRel)
                        {
                            sh.lost(&h.fire);
                        }
                    }
                    Err(e) => sh.redis_error(&e),
                }
            }
        }
        Err(e) => sh.redis_error(&e),
    }
}

fn wake_loop(sh: &Shared, stop: &Receiver<()>) {
    let channels: Vec<String> = sh.store.shards.iter().map(|k| k.wake.clone()).collect();
    let shard_of: HashMap<&str, usize> = channels
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let mut backoff = Duration::from_millis(10);
    while !sh.stopped() {
        let r = sh
            .store
            .endpoint()
            .listen(&channels, Duration::from_millis(100), |heard| {
                match heard {
                    Heard::Subscribed => {
                        backoff = Duration::from_millis(10);
                        let _ = sh.ctl.send(Ctl::Resync);
                    }
                    Heard::Message { channel, payload } => {
                        if let (Some(&s), Ok(due)) =
                            (shard_of.get(channel.as_str()), payload.parse::<i64>())
                        {
                            let _ = sh.ctl.send(Ctl::Hint(s, due));
                        }
                    }
                    Heard::Quiet => {}
                }
                !sh.stopped()
            });
        if let Err(e) = r {
            sh.redis_error(&e);
            let _ = stop.recv_timeout(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }
}

/// What the claimer does with a claimed fire: its plan if the worker plans
/// it (the fire then stands for the plan's grid point), and the op that
/// settles it at once when no handler is to run: a skip, or a failure when
/// the fire cannot be planned here (a calendar this process cannot read).
fn route(claimed: ClaimedFire) -> (Fire, Option<Planned>, Option<Op>) {
    let ClaimedFire {
        mut fire,
        first_ms,
        schedule,
    } = claimed;
    let decision = Schedule::decode(&schedule).and_then(|s| match s {
        Some(s) => s.plan(fire.due_ms, first_ms, fire.period_ms),
        None => Ok(None),
    });
    match decision {
        Ok(None) => (fire, None, None),
        Ok(Some(Decision::Run { due_ms, plan })) => {
            fire.due_ms = due_ms;
            (fire, Some(plan), None)
        }
        Ok(Some(Decision::Skip { plan, skipped })) => {
            (fire, Some(plan), Some(Op::Skip(plan, skipped)))
        }
        Err(e) => {
            let why = format!("the fire could not be planned: {e}");
            (fire, None, Some(Op::Fail(why, None)))
        }
    }
}

/// What a failed run records for a handler that panicked: the panic's
/// message when it is a string (as `panic!` makes it).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "non-string panic payload"
    };
    format!("the task panicked: {message}")
}

#[cfg(test)]
mod test {
    use std::time::{Duration, Instant};

    use super::{allocate, BufferSize};

    #[test]
    fn an_adaptive_buffer_holds_10_ms_of_the_handlers_work_between_1_and_16_batches() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut b = BufferSize::adaptive(64);
        assert_eq!(b.observe(0, ms(0)), 64, "a batch before any pace is known");
        // Within the first window nothing changes, whatever was taken.
        assert_eq!(b.observe(5_000, ms(9)), 64);
        // 40k jobs/s: 400 jobs in 10 ms.
        assert_eq!(b.observe(400, ms(10)), 400);
        // 1M jobs/s: capped at 16 batches.
        assert_eq!(b.observe(20_400, ms(30)), 1024);
        // Slow handlers (100 jobs/s): never below a batch.
        assert_eq!(b.observe(20_401, ms(40)), 64);
        // A long idle stretch counts as one slow window.
        assert_eq!(b.observe(20_401, ms(60_000)), 64);
    }

    #[test]
    fn a_fixed_buffer_ignores_the_pace() {
        let t0 = Instant::now();
        let mut b = BufferSize::fixed(8);
        assert_eq!(b.observe(0, t0), 8);
        assert_eq!(b.observe(1_000_000, t0 + Duration::from_secs(1)), 8);
    }

    #[test]
    fn allocation_never_exceeds_the_room() {
        let backlogged = [false, true, false, true];
        for room in 0..200 {
            let asks = allocate(room, &[0, 1, 2, 3], &backlogged, 64);
            assert!(asks.iter().map(|a| a.1).sum::<usize>() <= room);
            assert!(asks.iter().all(|a| a.1 >= 1 && a.1 <= 64));
        }
    }

    #[test]
    fn light_shards_share_and_backlogged_ones_take_batches() {
        assert_eq!(
            allocate(64, &[0, 2], &[false; 4], 64),
            vec![(0, 32), (2, 32)]
        );
        assert_eq!(
            allocate(64, &[1, 3], &[false, true, false, true], 64),
            vec![(1, 64)]
        );
        assert_eq!(
            allocate(100, &[0, 1], &[false, true], 64),
            vec![(0, 64), (1, 36)]
        );
    }
}
