//! A durable, multi-node scheduler on Redis or Redis Cluster.
//!
//! Jobs are data, not closures: an id (the idempotency key), a kind, a JSON
//! payload, a due time and, for periodic jobs, a period or a calendar (a
//! cron expression in an IANA time zone). Producers
//! schedule, cancel and inspect them with a [`RedisScheduler`]; any number of
//! [`Worker`] processes, each with N handler threads, claim and run them.
//! The schedule survives crashes of workers and restarts of Redis (with AOF),
//! runs on one Redis or a Redis Cluster, over TLS, with the durability each
//! client chooses.
//!
//! This crate stands beside `schedulers` (the in-process timers) and shares
//! one thing with it, the calendar ([`calendar`], re-exported: cron
//! expressions, time zones, the missed-run and panic policies), so a cron
//! expression fires at the same instants in a timer and in a durable job.
//! It depends on `schedulers` without its default features; an application
//! that wants a timer compiles none of Redis.
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
//!   original grid (`due + k·period`); runs missed while late are coalesced,
//!   unless the job chose a [`MissedRuns`](calendar::MissedRuns) policy.
//! - **Calendar jobs.** Each fire time of a job's calendar runs at least
//!   once, never before its time, and twice only as a redelivery with the
//!   same fire id; its next fire time is computed once per fire, by the
//!   worker whose ack holds the lease, and written under the fence (see
//!   [Calendar jobs](#calendar-jobs)). A missed-run policy decides what
//!   runs after an outage.
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
//!   schedule stops until it is cancelled and scheduled again; with
//!   [`OnPanic::Continue`](calendar::OnPanic::Continue) a fire whose last
//!   attempt failed is given up instead and the job goes on.
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
//! use schedulers_redis::{Config, Job, RedisScheduler, Worker};
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
//! # Ok::<(), schedulers_redis::Error>(())
//! ```
//!
//! # Calendar jobs
//!
//! [`Job::on_calendar`] (or [`RedisScheduler::schedule_calendar`]) makes a
//! job due at every fire time of a [`Calendar`](calendar::Calendar): a cron
//! expression, Unix or Quartz syntax, read in an IANA time zone, with the
//! DST rule and the syntax of the [calendar guide](calendar::guide). The job
//! stores the expression and the zone's name (a zone without one, such as a
//! fixed offset, is refused), and each worker reads them back with its own
//! tz database. Its first fire time is the first after Redis's clock when
//! it is scheduled (read by the producer).
//!
//! **The next fire is computed once.** Lua cannot read cron, so the worker
//! that claimed a fire computes, in Rust, what the fire runs for and the
//! job's next fire time, and sends the latter with its ack; the settle
//! script writes it only under the fence, as every ack. The computation
//! reads no clock of the worker's and no reading of Redis's that could be
//! stale: its inputs are the record's, namely the fire's due time and the
//! Redis time of the fire's *first* claim, which the claim script writes
//! into the record and retries, redeliveries and releases keep (see
//! [`plan`]). So every worker that ever holds a lease on the fire computes
//! the same run and the same next fire; a paused or killed worker's ack is
//! refused (`STALE`), and the script also refuses a plan that is not based
//! on the record's first claim or whose next fire is not later than the
//! fire, so fire ids only grow. The guarantee: each fire time runs at least
//! once (or is passed over by the job's missed-run policy), never before
//! it, and a second time only as a redelivery of the same fire (same fire
//! id, after a recorded lease loss). Tested with `kill -9` and
//! `SIGSTOP`/`SIGCONT` of workers around cron boundaries, on one Redis and
//! on a Cluster.
//!
//! **Missed runs.** A fire is late if its first claim comes more than the
//! job's [lateness tolerance](Job::lateness_tolerance) (default 5 s) after
//! its due time: the workers were down, or behind. Then the job's
//! [`MissedRuns`](calendar::MissedRuns) policy applies to every fire time
//! due by that claim, as the one rule of
//! [`MissedRuns::plan_calendar`](calendar::MissedRuns::plan_calendar) (and
//! `plan_fixed_rate`) says; on time, the fire runs and the next is the one
//! after it. A fire that has reached a handler is never skipped: retries
//! and redeliveries keep the first claim's plan.
//!
//! | Policy | After an outage | Fire id of the run |
//! |---|---|---|
//! | none (fixed-rate default) | one run, then the first grid point after that run's ack: every point missed meanwhile, also during a long run, is passed over | the oldest missed point |
//! | [`CatchUp`](calendar::MissedRuns::CatchUp) (calendar default) | every missed fire, back to back | each its own |
//! | [`Skip`](calendar::MissedRuns::Skip) | nothing; the next fire after the claim ([`WorkerEvent::Skipped`] counts them) | none |
//! | [`OnceNow`](calendar::MissedRuns::OnceNow) | one run, then the next fire after the claim | the latest missed point |
//! | [`Delay`](calendar::MissedRuns::Delay) (fixed rate only) | one run, and the grid moves to the claim (`claim + k·period`) | the claim time |
//!
//! **Failures.** A failing run (an error or a panic: the same here) is
//! retried with backoff up to `max_attempts`. Then
//! [`OnPanic::Stop`](calendar::OnPanic::Stop) (the default) dead-letters the
//! job, its schedule stopped until it is cancelled and scheduled again;
//! [`OnPanic::Continue`](calendar::OnPanic::Continue) gives that fire up,
//! keeps the error for [`RedisScheduler::inspect`], and moves the job to
//! its next fire ([`AckOutcome::Next`]). A fire whose last attempt lost its
//! lease (its workers killed or stalled) is dead-lettered either way:
//! nobody saw it fail, and a job that kills its workers should stop.
//!
//! ```no_run
//! use std::time::Duration;
//! use schedulers_redis::calendar::{Calendar, MissedRuns, OnPanic};
//! use schedulers_redis::{Config, Job, RedisScheduler, Worker};
//!
//! let url = "redis://127.0.0.1:6379/";
//! let config = Config::default().namespace("reports");
//!
//! let sched = RedisScheduler::connect(url, config.clone())?;
//! // 09:00 on weekdays in Berlin, summer time or not. After an outage, one
//! // digest for the latest missed morning; a failed digest does not stop
//! // the next ones.
//! let weekdays = Calendar::parse_in("0 0 9 ? * MON-FRI", "Europe/Berlin")?;
//! let digest = Job::new("digest", "digest")?
//!     .on_calendar(&weekdays)?
//!     .missed_runs(MissedRuns::OnceNow)
//!     .lateness_tolerance(Duration::from_secs(60))
//!     .on_panic(OnPanic::Continue);
//! let first = sched.schedule(&digest)?;
//! println!("first digest at {first} ms");
//!
//! let worker = Worker::builder(url, config)
//!     .handler("digest", |fire| {
//!         // `due_ms` is the morning this run stands for.
//!         println!("digest for {} (dedup key {})", fire.due_ms, fire.fire_id());
//!         Ok(())
//!     })
//!     .start()?;
//! # worker.shutdown();
//! # Ok::<(), schedulers_redis::Error>(())
//! ```
//!
//! The same example runs as the test `the_crate_docs_calendar_example_runs`.
//!
//! # Redis Cluster
//!
//! The same URL may name any node of a Redis Cluster: the first connection
//! asks it for `CLUSTER SLOTS` and from then on every command goes to the
//! master of its slot. A shard's keys share the hash tag `{tw:<ns>:<s>}`, so
//! each shard lives in one slot, on one master, and its scripts stay atomic;
//! the shards spread over the masters by their tags (16 shards on 3 masters
//! landed 6, 5 and 5 in the tests). A worker still pipelines one script call
//! per shard, now one pipeline per master, all written before any reply is
//! read: one round trip however many masters. `MOVED` (a failover, a
//! resharding) refreshes the slot map and sends the command again, `ASK` (a
//! slot in migration) sends it once to the named node after `ASKING`, a node
//! that does not know a script gets it by `EVAL`; a master that cannot be
//! reached fails only its own shards' commands, which are retried with
//! backoff while the others go on. Pub/Sub wake-ups work unchanged (a
//! `PUBLISH` reaches every node's subscribers); the subscription moves to
//! another node when its node dies. See `conn.rs` for why this routing is
//! not the `redis` crate's `ClusterConnection`.
//!
//! Time on a Cluster: every decision about a shard is made on the clock of
//! that shard's master (a delay is added to it there, by the schedule
//! script), so the masters' clocks matter only against each other's and only
//! through [`RedisScheduler::now_ms`]; run NTP on them.
//!
//! **Failover.** Replication is asynchronous: a master acknowledges a write
//! before its replica has it, so when a master dies its replica takes over
//! without the writes it had not received. Measured in one run (`cargo
//! test -p schedulers-redis -- a_master_killed_mid_run --nocapture`, 3
//! masters with a replica each on one machine): with the
//! replica 2.5 s behind when its master was killed, [`Durability::Async`]
//! lost 49 of 9,422 acknowledged schedules, acknowledged in the last 200 ms
//! before the kill (the rest of the backlog was still in the socket buffers
//! and reached the replica), and 46 fires ran twice under one fence (claims
//! rolled back); the replica took over 2.5 s after the kill. With the
//! replica in step (no pause) nothing was lost (0 of 14,446). With
//! [`Durability::Replicas(1)`](Durability::Replicas) the same failover lost
//! nothing acknowledged and ran nothing twice under one fence: every write
//! waits for `WAIT 1`. While the promoted master has no replica of its own,
//! such writes fail with [`Error::NotDurable`] and are retried.
//!
//! # TLS and passwords
//!
//! `redis://user:password@host:port/` authenticates with an ACL user (or
//! `requirepass`). A user can be held to one namespace: its keys all match
//! `{tw:<ns>:*` (shards and the layout key) and its wake-up channels
//! `{tw:<ns>:*`, so `ACL SETUSER app on >pw resetkeys ~{tw:app:* resetchannels
//! &{tw:app:* +@all` works, and the same user gets `NOPERM` on any other
//! namespace. (A user without `+cluster|slots` is taken for a standalone
//! server.) With the feature `tls`, `rediss://` connects with TLS
//! (rustls), trusting the system's roots or the CA of `Config::tls`; a
//! client certificate can be given for `tls-auth-clients yes`.
//!
//! # The recorded layout
//!
//! The first client of a namespace records its layout at
//! `{tw:<ns>:layout}`: format version, shard count, slice, tombstone
//! retention and outcome window. Every producer and worker compares its own
//! before its first command and fails with [`Error::LayoutMismatch`] if
//! it differs (a worker at start when Redis is up, else before it claims
//! anything), never splitting the schedule between shard counts. The
//! library, the worker binary and the workbench share one default shard
//! count, [`DEFAULT_SHARDS`]. Changing a layout means a new namespace.
//!
//! # Tombstones and outcomes
//!
//! What keeps a finished or cancelled id from being scheduled again is its
//! 62-bit fingerprint in a set of a time bucket (an eighth of
//! [`Config::tombstone_ttl`]), grown by linear hashing so every set stays an
//! `intset` (see [`scripts`]); the buckets expire whole. Measured (`cargo
//! test -p schedulers-redis -- a_finished_id_costs --nocapture`, 1e5 ids):
//! 913,408 B in
//! 528 intsets plus 832 B of bookkeeping, **9.1 B per id**, against about 105
//! B per id in a sorted set before. Per 1e6 jobs a day with the default
//! one-day retention that is about 9.1 MB (the old layout: 105 MB); at a
//! steady 2,500 jobs/s, 216e6 ids a day, about 2 GB (before: 22 GB). A
//! shorter retention shrinks it in proportion. An id is refused by mistake
//! only if another id of its shard shares its fingerprint, with probability
//! about n/2⁶² among n tombstones.
//!
//! The outcomes kept so that repeated calls answer what happened cost
//! nothing for one-shot acks (inferred, see [`scripts`]); a cancel, a
//! periodic ack, a failure or a release is logged for one to two
//! [`Config::outcome_window`]s (a minute by default) at about 84 B each
//! (measured on 1e5 entries), and a lapsed lease for as long as a
//! tombstone.
//!
//! # Durability
//!
//! [`Durability`] is chosen per client and applies to every write it makes
//! (schedules, cancels; for a worker, claims, acks, lease extensions and
//! reaps): `Async` acknowledges what the master applied; `Fsync` waits for
//! the master's AOF fsync (`WAITAOF 1 0` on Redis 7.2+; on older servers,
//! such as Debian's 7.0, the client requires `appendonly yes` with
//! `appendfsync always`, under which Redis replies only after the fsync, and
//! fails with [`Error::DurabilityUnavailable`] otherwise); `Replicas(n)`
//! waits for `WAIT n`. A write applied but not confirmed in
//! [`Config::durability_timeout`] fails with [`Error::NotDurable`] and is
//! retried (producers for [`Config::retry_for`], workers for up to 30 s); a
//! worker never runs a claim that was not confirmed (its lease lapses and
//! the job runs later).
//!
//! Measured by a simulated power loss (`cargo test -p schedulers-redis --
//! a_power_loss --nocapture`: workers and Redis killed together, the AOF
//! cut back with `redis-check-aof --truncate-to-timestamp` to what a power
//! loss leaves, Redis restarted, the schedule drained). Under `Async` on `appendfsync everysec`, with the
//! AOF cut 1–2 s back, acknowledged work was lost in every run: in the first,
//! 755 of 7,200 acknowledged schedules, 1,330 fires run again under the same
//! fence (claims and acks rolled back) and 1,440 jobs run after an
//! acknowledged cancel (later runs: 1,698 of 10,750 and 4,343 of 10,217
//! schedules). Under `Fsync` on `appendfsync always` the AOF is on disk up
//! to the loss, and nothing acknowledged was lost in any run (0 of 4,249,
//! 5,478, 5,142 schedules; no same-fence re-run, no run after a cancel). The
//! cost per job is in the workbench (`redis-fsync-1w` against `redis-1w`,
//! `redis-cluster-wait-2w` against `redis-cluster-2w`) and in the capacity
//! model below.
//!
//! # Capacity: one Redis, and past it
//!
//! A master runs scripts on one core, so its capacity is one core's worth
//! of Redis CPU per job: **jobs/s per master ≈ 10⁶ / (µs of Redis CPU per
//! job)**. Measured by the workbench (`cargo run --release -p workbench --
//! run -w distributed`, quick size, three repeats, at commit 80780f0; 2
//! cores shared with the workers and the producer, load 0.6–1.8): a backlog drained at 6.9 µs of Redis CPU per
//! job (claim and ack batched, one worker, 141k jobs/s, Redis busy nearly
//! all the drain), so one master tops out near 145k jobs/s (the claim
//! script alone: 235k); at a paced 2,500 jobs/s batches are small and a job
//! cost 46 µs, about an eighth of one core. `Fsync` on `appendfsync always`
//! cost 8.0 µs per drained job in the same run (drain −22%) and 88 µs per
//! paced job against 46, and `WAIT 1` on the Cluster 9.2 µs per drained job
//! against 9.3 µs asynchronous (drain −3%). These are backlogs of 2e4 jobs
//! (2,500 tombstones a shard, in 16 sets). The more tombstones a bucket
//! holds, the more an ack costs: once its sets outnumber the acks of one
//! settle call (a few dozen per shard), most acks add to a set of their
//! own, one `SADD` call each, and past the 256 sets a bucket starts with
//! the sets split as they grow. Measured with `cargo run --release -p
//! workbench -- redis-bench --shape drain --workers 1 --jobs 100000` (and
//! `--jobs 1000000`; commit 80780f0, two runs each): 1e5 jobs, 117-127k jobs/s at 7.6-8.2 µs a job (0.3 `SADD` calls a job); 1e6 jobs
//! (125k tombstones a shard, about 650 sets), 92-93k jobs/s at 10.3-10.5
//! µs a job (0.6-0.7 `SADD` calls a job).
//!
//! With `M` masters and `S ≥ M` shards spread evenly (S a multiple of M, or
//! S ≫ M: the master with the most shards is the bottleneck), capacity is
//! about `M ×` that of one master: the shards share no state, and a
//! worker's round trip reaches all masters at once (one pipeline each,
//! written before any is read). Ten masters at 6.9 µs per job would drain
//! about 1.4M jobs/s, or hold about 100k jobs/s at the paced cost, each
//! master half busy. The workers scale apart from Redis. On the test
//! machine's 2 cores a 3-master Cluster cannot show that scaling: its six
//! servers, two workers and the producer share two cores, and it drained
//! 115,607 jobs/s against one Redis's 121,212 with the same two workers,
//! with the same paced lateness (p50 0 ms, p99 1 ms).
//!
//! # Operating it
//!
//! **Moving slots** (`CLUSTER SETSLOT … MIGRATING`, `redis-cli --cluster
//! reshard`) of a namespace while its clients run is not supported: the
//! client follows `ASK`, `MOVED` and `TRYAGAIN`, but the scripts build the
//! keys of slices, tombstones and outcomes inside Lua from the shard's
//! prefix, and Redis checks only the declared keys against a slot in
//! migration, so a script half-way through one can fail after its first
//! writes. Stop a namespace's producers and workers while its slots move; a
//! failover moves a slot whole and needs nothing.
//! Redis 6.2 or later is required (`ZADD LT/GT`, `ZRANGE … BYSCORE`); the
//! tests run against the server they find (7.0 on Debian 12), standalone and
//! as a Cluster of 3 masters with a replica each.
//!
//! Run Redis with AOF and `maxmemory-policy noeviction` (eviction would
//! silently drop jobs); pick the durability above. Keep the lease at least
//! three heartbeats plus the longest pause you expect. Payloads travel with
//! every claim: [`Config::max_payload`] (default 4 MiB) refuses larger ones
//! with [`Error::PayloadTooLarge`].
//!
//! # Crate features
//!
//! | Feature | Default | Adds |
//! |---|---|---|
//! | `tls` | off | `rediss://` URLs: TLS with rustls and its `ring` provider, trusting the system's roots or a CA given in `Config::tls`. |
//! | `metrics` | off | Every worker's figures ([`Worker::metrics`]: runs, lateness on Redis's clock, run time, failures, panics, skips, lost leases, wake-ups, by job kind) in the [`metrics`](https://docs.rs/metrics) facade, under the in-process schedulers' names ([`schedulers::observe`]), with [`FAILURES`] and [`LEASES_LOST`] beside them; producers' refused schedules under `schedulers_rejected_total`. |
//! | `tracing` | off | A [`tracing`](https://docs.rs/tracing) span per handler run (`schedulers::run`, with the job's kind as `task`, its id, lateness, run time and outcome), an event per panic and per refused schedule. |
//! | `test-util` | off | For tests and benchmarks, not for production: throwaway servers (`LocalRedis`, `LocalCluster`, `find_redis_server`), `claim_ceiling` (the claim script alone, back to back), and the `schedulers-redis-worker` binary (a worker with no-op, sleeping and failing handlers that records what it does, or a throwaway Cluster) with its command line, `cli`. Pulls in `clap`. |
//!
//! The `redis` crate this one is built on needs Rust 1.88.

#[cfg(feature = "test-util")]
pub mod cli;
mod client;
mod config;
mod conn;
mod error;
mod figures;
mod job;
pub mod keys;
#[cfg(feature = "test-util")]
mod local;
pub mod plan;
#[cfg(feature = "test-util")]
mod probe;
pub mod scripts;
mod store;
mod worker;

pub use client::RedisScheduler;
#[cfg(feature = "tls")]
pub use config::Tls;
pub use config::{Config, Durability, DEFAULT_MAX_PAYLOAD, DEFAULT_SHARDS};
pub use error::Error;
pub use figures::{WorkerMetrics, FAILURES, LEASES_LOST};
pub use job::{AckOutcome, CancelOutcome, Fire, Job, JobInfo, JobState, When, MAX_ID_LEN};
pub use keys::shard_of;
#[cfg(feature = "test-util")]
pub use local::{
    find_redis_server, ClusterNode, LocalCluster, LocalRedis, LocalRedisBuilder, LocalServerError,
};
pub use plan::DEFAULT_LATENESS_TOLERANCE;
#[cfg(feature = "test-util")]
pub use probe::{claim_ceiling, Ceiling};
/// Calendar schedules (cron expressions in IANA time zones) and the
/// missed-run and panic policies, from the `schedulers` crate: what
/// [`Job::on_calendar`], [`Job::missed_runs`] and [`Job::on_panic`] take.
pub use schedulers::calendar;
pub use schedulers::{Histogram, NamedMetrics};
pub use worker::{HandlerError, Worker, WorkerBuilder, WorkerEvent, WorkerStats};
