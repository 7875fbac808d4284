//! The job model: jobs are data, not closures.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schedulers::calendar::{Calendar, MissedRuns, OnPanic};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::plan::ZONE_WITHOUT_NAME;
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
    /// A calendar job ([`Job::on_calendar`]): at its calendar's first fire
    /// time after Redis's clock, read when the schedule call is made.
    NextFire,
}

/// A job to schedule: an id (the idempotency key), a kind (which handler
/// runs it), a JSON payload, when it is first due and, for a periodic job,
/// its period or calendar, and what it does about missed runs and failures.
///
/// A periodic job is fixed-rate ([`at_fixed_rate`](Job::at_fixed_rate)) or
/// a calendar job ([`on_calendar`](Job::on_calendar): a cron expression in
/// an IANA time zone); the last of the two called wins. Either may choose
/// a [`MissedRuns`] policy, a lateness tolerance and an [`OnPanic`] policy
/// (see [Calendar jobs](crate#calendar-jobs) for what they do on Redis).
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
///
/// // 09:00 on weekdays in Berlin; after an outage, run once for the latest
/// // missed morning.
/// use schedulers_redis::calendar::{Calendar, MissedRuns};
/// let standup = Job::new("standup", "remind")?
///     .on_calendar(&Calendar::parse_in("0 9 * * MON-FRI", "Europe/Berlin")?)?
///     .missed_runs(MissedRuns::OnceNow);
/// assert_eq!(standup.calendar().unwrap().to_string(), "0 9 * * MON-FRI in Europe/Berlin");
/// # Ok::<(), schedulers_redis::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Job {
    pub(crate) id: String,
    pub(crate) kind: String,
    pub(crate) payload: String,
    pub(crate) when: When,
    pub(crate) period_ms: i64,
    pub(crate) calendar: Option<Calendar>,
    pub(crate) missed: Option<MissedRuns>,
    pub(crate) tolerance: Option<Duration>,
    pub(crate) on_panic: Option<OnPanic>,
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
            calendar: None,
            missed: None,
            tolerance: None,
            on_panic: None,
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
    /// `initial_delay`, then every `period` on that grid (and no longer a
    /// calendar job). Runs missed while late are coalesced into one unless
    /// a [`missed_runs`](Job::missed_runs) policy is chosen: a fire claimed
    /// late runs once, for its own due time, and its ack moves the job to
    /// the first grid point after the ack.
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
        self.calendar = None;
        Ok(self)
    }

    /// Makes the job a calendar job: due at every fire time of `calendar`
    /// (a cron expression read in a time zone), the first one being the
    /// first after Redis's clock when the job is scheduled. No longer
    /// fixed-rate. After an outage it catches up unless another
    /// [`missed_runs`](Job::missed_runs) policy is chosen.
    ///
    /// The job stores the expression and the zone's IANA name; every worker
    /// reads them back with its own tz database (the system's, else the
    /// copy bundled with `jiff`), so keep the workers' tz databases in step.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchedule`] if the zone has no IANA name (a fixed
    /// offset, or a system zone that could not be named).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedulers_redis::calendar::Calendar;
    /// use schedulers_redis::{Job, When};
    ///
    /// let job = Job::new("tick", "tick")?.on_calendar(&Calendar::parse("*/5 * * * * ?")?)?;
    /// assert_eq!(job.when(), When::NextFire);
    /// assert_eq!(job.period(), None);
    /// # Ok::<(), schedulers_redis::Error>(())
    /// ```
    pub fn on_calendar(mut self, calendar: &Calendar) -> Result<Job, Error> {
        if calendar.zone().iana_name().is_none() {
            return Err(Error::InvalidSchedule(ZONE_WITHOUT_NAME));
        }
        self.calendar = Some(calendar.clone());
        self.period_ms = 0;
        self.when = When::NextFire;
        Ok(self)
    }

    /// What this periodic job does about fires that come due late (after an
    /// outage, or behind a backlog): see [`MissedRuns`], applied when a fire
    /// is first claimed more than the [lateness
    /// tolerance](Job::lateness_tolerance) after its due time. Without a
    /// choice a fixed-rate job coalesces (see
    /// [`at_fixed_rate`](Job::at_fixed_rate)) and a calendar job catches
    /// up. For periodic jobs only; [`MissedRuns::Delay`] for fixed-rate
    /// ones only (checked when scheduled).
    pub fn missed_runs(mut self, policy: MissedRuns) -> Job {
        self.missed = Some(policy);
        self
    }

    /// How late a fire may be first claimed and still count as on time
    /// (default [`DEFAULT_LATENESS_TOLERANCE`](crate::DEFAULT_LATENESS_TOLERANCE),
    /// 5 s): more than the workers' usual lateness (a backlog, a lost
    /// wake-up's poll interval). Counted in whole milliseconds. For
    /// periodic jobs only.
    pub fn lateness_tolerance(mut self, tolerance: Duration) -> Job {
        self.tolerance = Some(tolerance);
        self
    }

    /// What this periodic job does when a fire fails on its last attempt
    /// (its handler returned an error or panicked every time): with
    /// [`OnPanic::Stop`] (the default) the job is dead-lettered and its
    /// schedule stops; with [`OnPanic::Continue`] that fire is given up
    /// (the error stays in [`JobInfo::Live::last_error`]) and the job goes
    /// on to its next fire. A fire whose last attempt lost its lease (its
    /// workers killed or stalled) is dead-lettered either way. For periodic
    /// jobs only.
    pub fn on_panic(mut self, policy: OnPanic) -> Job {
        self.on_panic = Some(policy);
        self
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

    /// The calendar of a calendar job.
    pub fn calendar(&self) -> Option<&Calendar> {
        self.calendar.as_ref()
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
    /// The due time of this fire, ms since the epoch (Redis clock): the
    /// grid point the run stands for. A retry keeps the due time of the
    /// fire it retries. A late fire of a periodic job whose
    /// [`MissedRuns`] policy runs it for another point has that point's
    /// time: the latest missed one ([`MissedRuns::OnceNow`]), or the first
    /// claim ([`MissedRuns::Delay`]).
    pub due_ms: i64,
    /// The fencing token of this claim: it grows with every claim, reap and
    /// release of the job.
    pub fence: i64,
    /// 1 for the first attempt of this fire, 2 for the first retry, …
    pub attempt: i64,
    /// The period of a fixed-rate job in ms, 0 for a one-shot or calendar
    /// job.
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
        /// Due time of its next (or current) fire, ms since the epoch: as
        /// stored, so for a late fire that its missed-run policy runs for
        /// a later point ([`Fire::due_ms`]) the fire's own due time.
        due_ms: i64,
        /// When it is queued to run (later than `due_ms` for a retry).
        run_ms: i64,
        /// Period in ms, 0 for a one-shot or calendar job.
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
    /// A one-shot job (or a cancelled one, or a calendar job past its last
    /// fire time) is done and tombstoned.
    Done,
    /// A periodic job was rescheduled to this due time (also after a
    /// failed last attempt with [`OnPanic::Continue`], and after a fire its
    /// missed-run policy skipped).
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
