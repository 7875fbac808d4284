//! A durable, multi-node scheduler on Redis (feature `redis`).
//!
//! Jobs are data, not closures: an id (the idempotency key), a kind, a JSON
//! payload, a due time and, for fixed-rate jobs, a period. Producers
//! schedule, cancel and inspect them with a [`RedisScheduler`]; any number of
//! [`Worker`] processes, each with N handler threads, claim and run them.
//! The schedule survives crashes of workers and restarts of Redis (with AOF).
//!
//! # Guarantees
//!
//! - **At least once.** A claim leases the job with a fencing token; the
//!   worker extends the lease while the handler runs and acks at the end. A
//!   lease that expires (worker killed, paused, partitioned) is reaped by
//!   any worker and the job runs again; the stale holder's extension and
//!   ack are refused ([`AckOutcome::Stale`]). Handlers get a fire id
//!   (`id:due_ms`, [`Fire::fire_id`]) that is the same for every delivery of
//!   one fire, for deduplication downstream.
//! - **Never early.** Every time decision is made inside a Lua script on
//!   Redis's clock (`TIME`), in milliseconds, so workers' clocks and skew do
//!   not matter.
//! - **Catch-up.** A claim takes everything due up to now, oldest first
//!   within a shard (the poller visits the shards in turn), so after any
//!   outage all overdue jobs fire. Fixed-rate jobs stay on their
//!   original grid (`due + k·period`); runs missed while late are coalesced.
//! - **Exact, permanent cancel.** [`RedisScheduler::cancel`] either removes a
//!   pending job (it never runs) or flags a running one (that run is the
//!   last), and tombstones the id so a late re-schedule cannot revive it
//!   (for [`Config::tombstone_ttl`]).
//! - **Repeats answer what happened.** Every call may be repeated after a
//!   lost reply (a broken connection, a restart, a failover): a schedule
//!   finds the job its first attempt stored (its token), a cancel gets its
//!   first answer, and a worker's repeated ack gets the outcome of its first
//!   attempt, not `STALE`: the fence names the lease, and every lease end is
//!   logged for an outcome window (see [Outcomes](#tombstones-and-outcomes)).
//!   So histories tell "applied" ([`AckOutcome::Done`]) from "lease lost"
//!   ([`AckOutcome::Stale`]). Producers repeat transient failures themselves
//!   for [`Config::retry_for`], workers for up to 30 s.
//! - **Retries.** A failing handler (error or panic) is retried with
//!   exponential backoff; after `max_attempts` the job moves to a
//!   dead-letter set ([`RedisScheduler::dead_letters`]). A lost lease counts
//!   as an attempt, so a job that kills its workers ends there too. A
//!   periodic job that exhausts its attempts is dead-lettered as well: its
//!   schedule stops until it is cancelled and scheduled again.
//!
//! # How it works
//!
//! Jobs are spread over a fixed number of shards by a hash of their id. All
//! keys of a shard share one hash tag `{tw:<ns>:<shard>}` (one Redis Cluster
//! slot), so every script is atomic on one node. A shard stores run times in
//! time-sliced sorted sets (one per `slice` of time, default one minute)
//! indexed by a sorted set of slices scored by their earliest run time; see
//! [`keys`] for the layout and [`scripts`] for the scripts. A worker claims
//! a batch of due jobs per script call (`ZRANGE … BYSCORE -inf now` over the
//! due slices) into a local buffer its handler threads drain, acks finished
//! runs in batches, and pipelines the calls of all shards, so at saturation
//! a job costs well under one round trip. It sleeps until the earliest run
//! time it knows of; producers announce earlier jobs on a Pub/Sub channel
//! (see [`Worker`] for why), so an idle worker costs about one command per
//! shard per second. Costs per job in Redis: schedule O(log n) in its slice,
//! claim and ack O(log n) each, plus a few microseconds of record handling.
//!
//! Differences from the seeds (`xiaoxuxiansheng/timewheel` and the
//! leader-based wheel): no leader, no per-node clock, no delete-marker that
//! expires, no one-second window that loses missed seconds, and a
//! lease + fence instead of at-most-once `ZREMRANGEBYSCORE`.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use schedulers::distributed::{Config, Job, RedisScheduler, Worker};
//!
//! let url = "redis://127.0.0.1:6379/";
//! let config = Config::default().namespace("shop");
//!
//! let sched = RedisScheduler::connect(url, config.clone())?;
//! sched.schedule(&Job::new("cart-91-reminder", "remind")?.payload(&91)?.after(Duration::from_secs(3600)))?;
//! sched.schedule_at_fixed_rate("stats", "stats", &(), Duration::ZERO, Duration::from_secs(60))?;
//!
//! let worker = Worker::builder(url, config)
//!     .threads(8)
//!     .handler("remind", |fire| {
//!         let cart: u64 = fire.payload()?;
//!         println!("remind cart {cart}, dedup key {}", fire.fire_id());
//!         Ok(())
//!     })
//!     .handler("stats", |_| Ok(()))
//!     .start()?;
//! # worker.shutdown();
//! # Ok::<(), schedulers::distributed::DistError>(())
//! ```
//!
//! # Operating it
//!
//! Redis 6.2 or later is required (`ZADD LT/GT`, `ZRANGE … BYSCORE`); the
//! tests run against the server they find (7.0 on Debian 12).
//!
//! The client talks to one Redis node (a standalone server, or a primary
//! behind a proxy). The key layout is valid on Redis Cluster (one hash tag
//! per shard) but the sync client used here does not follow `MOVED`
//! redirections; a cluster deployment needs a cluster-aware connection.
//!
//! Run Redis with AOF (`everysec` may lose about a second of acked writes on
//! power loss) and `maxmemory-policy noeviction` (eviction would silently
//! drop jobs). Keep the lease at least three heartbeats plus the longest
//! pause you expect. The delay of [`Job::after`] counts from the moment
//! Redis receives the call.

mod client;
mod config;
mod conn;
mod error;
pub mod harness;
mod job;
pub mod keys;
mod local;
mod probe;
pub mod scripts;
mod store;
mod worker;

pub use client::RedisScheduler;
#[cfg(feature = "redis-tls")]
pub use config::Tls;
pub use config::{Config, Durability, DEFAULT_MAX_PAYLOAD, DEFAULT_SHARDS};
pub use error::DistError;
pub use job::{AckOutcome, CancelOutcome, Fire, Job, JobInfo, JobState, When, MAX_ID_LEN};
pub use keys::shard_of;
pub use local::{find_redis_server, ClusterNode, LocalCluster, LocalRedis, LocalRedisBuilder};
pub use worker::{HandlerError, Worker, WorkerBuilder, WorkerEvent, WorkerStats};
