//! The producer's API: configuration and [`RedisScheduler`].

use std::sync::Mutex;
use std::time::Duration;

use super::conn::Conn;
use super::job::{CancelOutcome, Job, JobInfo};
use super::store::Store;
use super::DistError;

/// Where the schedule lives and how it is laid out. Producers and workers of
/// one schedule must use the same `namespace`, `shards` and `slice`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::distributed::Config;
///
/// let config = Config::default().namespace("billing").shards(16).slice(Duration::from_secs(60));
/// assert_eq!(config.shard_count(), 16);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) namespace: String,
    pub(crate) shards: u32,
    pub(crate) slice_ms: i64,
    pub(crate) tombstone_ms: i64,
    pub(crate) io_timeout: Duration,
}

impl Default for Config {
    /// Namespace `default`, 8 shards, one-minute slices, tombstones kept one
    /// day, 5 s connect/read/write timeout.
    fn default() -> Self {
        Config {
            namespace: "default".into(),
            shards: 8,
            slice_ms: 60_000,
            tombstone_ms: 86_400_000,
            io_timeout: Duration::from_secs(5),
        }
    }
}

impl Config {
    /// Sets the namespace (part of every key; separate namespaces are
    /// separate schedules).
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = ns.into();
        self
    }

    /// Sets the number of shards (each is one hash tag, so one Cluster slot).
    pub fn shards(mut self, n: u32) -> Self {
        self.shards = n;
        self
    }

    /// Sets the length of a time slice (rounded down to ms).
    pub fn slice(mut self, d: Duration) -> Self {
        self.slice_ms = d.as_millis().min(i64::MAX as u128) as i64;
        self
    }

    /// Sets how long the id of a finished or cancelled job stays reserved
    /// (re-scheduling it is refused meanwhile).
    pub fn tombstone_ttl(mut self, d: Duration) -> Self {
        self.tombstone_ms = d.as_millis().min(i64::MAX as u128) as i64;
        self
    }

    /// Sets the connect, read and write timeout of every connection.
    pub fn io_timeout(mut self, d: Duration) -> Self {
        self.io_timeout = d;
        self
    }

    /// The number of shards.
    pub fn shard_count(&self) -> u32 {
        self.shards
    }

    pub(crate) fn validate(&self) -> Result<(), DistError> {
        if self.namespace.is_empty() || self.namespace.contains(['{', '}']) {
            return Err(DistError::InvalidConfig(
                "namespace must be non-empty and free of braces",
            ));
        }
        if self.shards == 0 {
            return Err(DistError::InvalidConfig("shards must be at least 1"));
        }
        if self.slice_ms < 1 {
            return Err(DistError::InvalidConfig("slice must be at least 1 ms"));
        }
        if self.tombstone_ms < 1 {
            return Err(DistError::InvalidConfig(
                "tombstone ttl must be at least 1 ms",
            ));
        }
        if self.io_timeout.is_zero() {
            return Err(DistError::InvalidConfig("io timeout must not be zero"));
        }
        Ok(())
    }
}

/// A producer's handle on a schedule in Redis: schedule, cancel and inspect
/// jobs. Cheap to share between threads (one connection behind a mutex; open
/// several schedulers for parallel producers).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedulers::distributed::{CancelOutcome, Config, Job, RedisScheduler};
///
/// let sched = RedisScheduler::connect("redis://127.0.0.1:6379/", Config::default().namespace("demo"))?;
/// let due = sched.schedule(&Job::new("reminder-1", "remind")?.payload(&"hi")?.after(Duration::from_secs(10)))?;
/// println!("due at {due} ms on Redis's clock");
/// assert!(sched.inspect("reminder-1")?.is_some());
/// assert_eq!(sched.cancel("reminder-1")?, CancelOutcome::Cancelled);
/// # Ok::<(), schedulers::distributed::DistError>(())
/// ```
#[derive(Debug)]
pub struct RedisScheduler {
    store: Store,
    con: Mutex<Conn>,
}

impl RedisScheduler {
    /// Opens a scheduler on the Redis server at `url` (`redis://host:port/db`).
    /// The connection is made on first use.
    ///
    /// # Errors
    ///
    /// [`DistError::InvalidConfig`] for a bad config, [`DistError::Redis`]
    /// for a malformed URL.
    pub fn connect(url: &str, config: Config) -> Result<RedisScheduler, DistError> {
        let store = Store::new(url, config)?;
        let con = Mutex::new(store.conn());
        Ok(RedisScheduler { store, con })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&Store, &mut Conn) -> Result<T, DistError>,
    ) -> Result<T, DistError> {
        let mut con = self.con.lock().unwrap_or_else(|p| p.into_inner());
        f(&self.store, &mut con)
    }

    /// Schedules a job and returns its first due time, ms since the epoch on
    /// Redis's clock.
    ///
    /// # Errors
    ///
    /// [`DistError::AlreadyScheduled`] if the id is pending, running or
    /// dead; [`DistError::Tombstoned`] if it finished or was cancelled within
    /// the tombstone TTL; [`DistError::DelayOverflow`]; [`DistError::Redis`].
    pub fn schedule(&self, job: &Job) -> Result<i64, DistError> {
        self.with(|s, c| s.schedule(c, job))
    }

    /// Schedules a one-shot job `delay` after now (Redis clock).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule), plus [`DistError::Payload`].
    pub fn schedule_after<T: serde::Serialize + ?Sized>(
        &self,
        id: &str,
        kind: &str,
        payload: &T,
        delay: Duration,
    ) -> Result<i64, DistError> {
        self.schedule(&Job::new(id, kind)?.payload(payload)?.after(delay))
    }

    /// Schedules a one-shot job at `at_ms` ms since the epoch (Redis clock).
    ///
    /// # Errors
    ///
    /// As [`schedule_after`](Self::schedule_after).
    pub fn schedule_at<T: serde::Serialize + ?Sized>(
        &self,
        id: &str,
        kind: &str,
        payload: &T,
        at_ms: i64,
    ) -> Result<i64, DistError> {
        self.schedule(&Job::new(id, kind)?.payload(payload)?.at_ms(at_ms))
    }

    /// Schedules a fixed-rate job: first due after `initial_delay`, then every
    /// `period` on that grid, missed runs coalesced.
    ///
    /// # Errors
    ///
    /// As [`schedule_after`](Self::schedule_after), plus
    /// [`DistError::ZeroPeriod`].
    pub fn schedule_at_fixed_rate<T: serde::Serialize + ?Sized>(
        &self,
        id: &str,
        kind: &str,
        payload: &T,
        initial_delay: Duration,
        period: Duration,
    ) -> Result<i64, DistError> {
        self.schedule(
            &Job::new(id, kind)?
                .payload(payload)?
                .at_fixed_rate(initial_delay, period)?,
        )
    }

    /// Schedules many jobs, pipelined (one round trip per batch). Returns
    /// one result per job, in order.
    ///
    /// # Errors
    ///
    /// The outer error is a connection failure (some jobs may have been
    /// stored: scheduling again is safe and reports them as
    /// [`DistError::AlreadyScheduled`]); per-job errors are as for
    /// [`schedule`](Self::schedule).
    pub fn schedule_many(&self, jobs: &[Job]) -> Result<Vec<Result<i64, DistError>>, DistError> {
        self.with(|s, c| s.schedule_many(c, jobs))
    }

    /// Cancels a job by id. Exact and permanent: a job reported
    /// [`CancelOutcome::Cancelled`] never runs again; one reported
    /// [`CancelOutcome::InFlight`] finishes its current run and never runs
    /// again. The id stays reserved for the tombstone TTL.
    ///
    /// # Errors
    ///
    /// [`DistError::Redis`] if Redis cannot be reached (cancel is
    /// idempotent: retry it).
    pub fn cancel(&self, id: &str) -> Result<CancelOutcome, DistError> {
        self.with(|s, c| s.cancel(c, id))
    }

    /// A snapshot of a job, or `None` if the id is unknown.
    ///
    /// # Errors
    ///
    /// [`DistError::Redis`], or [`DistError::Protocol`] for a malformed
    /// record.
    pub fn inspect(&self, id: &str) -> Result<Option<JobInfo>, DistError> {
        self.with(|s, c| s.inspect(c, id))
    }

    /// Redis's clock, ms since the epoch: the clock every due time is
    /// compared with.
    ///
    /// # Errors
    ///
    /// [`DistError::Redis`].
    pub fn now_ms(&self) -> Result<i64, DistError> {
        self.with(|s, c| s.now_ms(c))
    }

    /// The ids in the dead-letter set, with the time they died (ms).
    ///
    /// # Errors
    ///
    /// [`DistError::Redis`].
    pub fn dead_letters(&self) -> Result<Vec<(String, i64)>, DistError> {
        self.with(|s, c| s.dead_letters(c))
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.store.config
    }
}
