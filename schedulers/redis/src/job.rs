//! The job model: jobs are data, not closures.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::Error;

/// The longest job id accepted, in bytes.
pub const MAX_ID_LEN: usize = 512;

/// When a job is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// `delay` after Redis receives the schedule call (measured on Redis's
    /// clock, so the producer's clock does not matter).
    After(Duration),
    /// At an absolute time in milliseconds since the Unix epoch, on Redis's
    /// clock. A time in the past makes the job due at once.
    AtMs(i64),
}

/// A job to schedule: an id (the idempotency key), a kind (which handler
/// runs it), a JSON payload, when it is first due and, for a fixed-rate job,
/// its period.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers_redis::Job;
///
/// #[derive(serde::Serialize)]
/// struct Email { to: String }
///
/// let once = Job::new("welcome-42", "email")?
///     .payload(&Email { to: "a@example.com".into() })?
///     .after(Duration::from_secs(30));
/// assert_eq!(once.id(), "welcome-42");
///
/// let report = Job::new("nightly-report", "report")?
///     .at_fixed_rate(Duration::from_secs(60), Duration::from_secs(86_400))?;
/// assert_eq!(report.period(), Some(Duration::from_secs(86_400)));
/// # Ok::<(), schedulers_redis::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Job {
    pub(crate) id: String,
    pub(crate) kind: String,
    pub(crate) payload: String,
    pub(crate) when: When,
    pub(crate) period_ms: i64,
}

impl Job {
    /// A one-shot job due at once, with a `null` payload.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidId`] if `id` is empty or longer than
    /// [`MAX_ID_LEN`] bytes, or `kind` is empty.
    pub fn new(id: impl Into<String>, kind: impl Into<String>) -> Result<Job, Error> {
        let id = id.into();
        let kind = kind.into();
        if id.is_empty() || id.len() > MAX_ID_LEN {
            return Err(Error::InvalidId(format!("id of {} bytes", id.len())));
        }
        if kind.is_empty() {
            return Err(Error::InvalidId("empty kind".into()));
        }
        Ok(Job {
            id,
            kind,
            payload: "null".into(),
            when: When::After(Duration::ZERO),
            period_ms: 0,
        })
    }

    /// Sets the payload, serialised to JSON.
    ///
    /// # Errors
    ///
    /// [`Error::Payload`] if serialisation fails.
    pub fn payload<T: Serialize + ?Sized>(mut self, payload: &T) -> Result<Job, Error> {
        self.payload = serde_json::to_string(payload)?;
        Ok(self)
    }

    /// Makes the job due `delay` after Redis receives the schedule call.
    pub fn after(mut self, delay: Duration) -> Job {
        self.when = When::After(delay);
        self
    }

    /// Makes the job due at `time` (compared with Redis's clock).
    ///
    /// # Errors
    ///
    /// [`Error::DelayOverflow`] if `time` is before the epoch or too far
    /// away for i64 milliseconds.
    pub fn at(mut self, time: SystemTime) -> Result<Job, Error> {
        let ms = time
            .duration_since(UNIX_EPOCH)
            .map_err(|_| Error::DelayOverflow)?
            .as_millis();
        self.when = When::AtMs(i64::try_from(ms).map_err(|_| Error::DelayOverflow)?);
        Ok(self)
    }

    /// Makes the job due at `ms` milliseconds since the epoch (Redis clock).
    pub fn at_ms(mut self, ms: i64) -> Job {
        self.when = When::AtMs(ms);
        self
    }

    /// Makes the job periodic at a fixed rate: first due after
    /// `initial_delay`, then every `period` on that grid. Runs missed while
    /// no worker was available are coalesced into one.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroPeriod`] if `period` is under one millisecond,
    /// [`Error::DelayOverflow`] if it does not fit in i64 ms.
    pub fn at_fixed_rate(
        mut self,
        initial_delay: Duration,
        period: Duration,
    ) -> Result<Job, Error> {
        let p = i64::try_from(period.as_millis()).map_err(|_| Error::DelayOverflow)?;
        if p == 0 {
            return Err(Error::ZeroPeriod);
        }
        self.period_ms = p;
        self.when = When::After(initial_delay);
        Ok(self)
    }

    /// The job's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The job's kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// When the job is first due.
    pub fn when(&self) -> When {
        self.when
    }

    /// The period of a fixed-rate job.
    pub fn period(&self) -> Option<Duration> {
        (self.period_ms > 0).then(|| Duration::from_millis(self.period_ms as u64))
    }
}

/// One run of a job, as a handler receives it.
#[derive(Debug, Clone)]
pub struct Fire {
    /// The job id.
    pub id: String,
    /// The job kind.
    pub kind: String,
    /// The payload, as JSON text.
    pub payload: String,
    /// The due time of this fire, ms since the epoch (Redis clock). A retry
    /// keeps the due time of the fire it retries.
    pub due_ms: i64,
    /// The fencing token of this claim: it grows with every claim, reap and
    /// release of the job.
    pub fence: i64,
    /// 1 for the first attempt of this fire, 2 for the first retry, …
    pub attempt: i64,
    /// The period of a fixed-rate job in ms, 0 for a one-shot job.
    pub period_ms: i64,
    /// When the claim was made (Redis clock, ms).
    pub claimed_ms: i64,
    /// The shard the job lives in.
    pub shard: u32,
}

impl Fire {
    /// The fire id `id:due_ms`: the same for every attempt of one fire
    /// (including redeliveries after a lost lease), different for each run of
    /// a periodic job. Give it to the receiving side to deduplicate.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedulers_redis::Fire;
    ///
    /// let fire = Fire {
    ///     id: "a".into(), kind: "k".into(), payload: "null".into(), due_ms: 1000,
    ///     fence: 1, attempt: 1, period_ms: 0, claimed_ms: 1001, shard: 0,
    /// };
    /// assert_eq!(fire.fire_id(), "a:1000");
    /// ```
    pub fn fire_id(&self) -> String {
        format!("{}:{}", self.id, self.due_ms)
    }

    /// Deserialises the payload.
    ///
    /// # Errors
    ///
    /// [`Error::Payload`] if the payload is not a `T`.
    pub fn payload<T: DeserializeOwned>(&self) -> Result<T, Error> {
        Ok(serde_json::from_str(&self.payload)?)
    }
}

/// What [`cancel`](crate::RedisScheduler::cancel) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was pending (or dead-lettered) and is gone: it will not run.
    Cancelled,
    /// A run of the job is in progress; it is the last one (a periodic job
    /// is not rescheduled, a lost lease does not lead to a retry).
    InFlight,
    /// The job already finished or was cancelled (its tombstone is live).
    AlreadyGone,
    /// No job with this id is known.
    NotFound,
}

/// The state of a job as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for its run time.
    Scheduled,
    /// Claimed by a worker, under lease.
    Leased,
    /// Failed every attempt; in the dead-letter set.
    Dead,
}

/// A snapshot of one job, from [`inspect`](crate::RedisScheduler::inspect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobInfo {
    /// The job exists.
    Live {
        /// Its kind.
        kind: String,
        /// Its payload (JSON).
        payload: String,
        /// Its state.
        state: JobState,
        /// Due time of its next (or current) fire, ms since the epoch.
        due_ms: i64,
        /// When it is queued to run (later than `due_ms` for a retry).
        run_ms: i64,
        /// Period in ms, 0 for a one-shot job.
        period_ms: i64,
        /// Attempts made at the current fire.
        attempt: i64,
        /// Current fencing token.
        fence: i64,
        /// Lease expiry if leased.
        lease_until_ms: Option<i64>,
        /// A cancel arrived while a run was in flight.
        cancel_requested: bool,
        /// The last failure, if any.
        last_error: Option<String>,
    },
    /// The job finished or was cancelled; its id stays reserved until
    /// `until_ms`.
    Tombstone {
        /// Tombstone expiry, ms since the epoch.
        until_ms: i64,
    },
}

/// What happened when a worker finished a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckOutcome {
    /// A one-shot job (or a cancelled one) is done and tombstoned.
    Done,
    /// A periodic job was rescheduled to this due time.
    Next(i64),
    /// The handler failed; the job will be retried after a backoff.
    Retry,
    /// The handler failed on its last attempt; the job is dead-lettered.
    Dead,
    /// The job was cancelled during the run; it is gone.
    Cancelled,
    /// The worker no longer held the lease (it expired and the job was or
    /// will be run again): the result was refused.
    Stale,
    /// Redis could not be reached; the lease will expire and the job run
    /// again.
    Error(String),
}
