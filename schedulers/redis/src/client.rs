//! The producer's API: [`RedisScheduler`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::conn::Conn;
use crate::job::{CancelOutcome, Job, JobInfo};
use crate::store::{token, Store};
use crate::{Config, Error};

/// A producer's handle on a schedule in Redis: schedule, cancel and inspect
/// jobs. Cheap to share between threads (one connection behind a mutex; open
/// several schedulers for parallel producers).
///
/// Every call survives a restart of Redis or a failover: after a connection
/// failure it reconnects and repeats the call with backoff for
/// [`Config::retry_for`]. Repeating is safe because every call is
/// idempotent: a repeated schedule that finds the job stored with the same
/// kind, period and payload (by its first attempt) reports success, the id
/// being the idempotency key; a cancel's outcome is logged under a token of
/// the call, so a repeat gets the first answer.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedulers_redis::{CancelOutcome, Config, Job, RedisScheduler};
///
/// let sched = RedisScheduler::connect("redis://127.0.0.1:6379/", Config::default().namespace("demo"))?;
/// let due = sched.schedule(&Job::new("reminder-1", "remind")?.payload(&"hi")?.after(Duration::from_secs(10)))?;
/// println!("due at {due} ms on Redis's clock");
/// assert!(sched.inspect("reminder-1")?.is_some());
/// assert_eq!(sched.cancel("reminder-1")?, CancelOutcome::Cancelled);
/// # Ok::<(), schedulers_redis::Error>(())
/// ```
#[derive(Debug)]
pub struct RedisScheduler {
    store: Store,
    con: Mutex<Conn>,
}

impl RedisScheduler {
    /// Opens a scheduler on the Redis server at `url`
    /// (`redis://[user:password@]host:port/db`, or `rediss://` with the
    /// `tls` feature; on a Cluster, any node), connects, and checks the
    /// namespace's recorded layout (recording it if this is the first
    /// client).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a bad config or a `rediss://` URL
    /// without the `tls` feature; [`Error::LayoutMismatch`] if the
    /// namespace was laid out differently; [`Error::Redis`] for a
    /// malformed URL or when Redis cannot be reached (after retrying for
    /// [`Config::retry_for`]); [`Error::DurabilityUnavailable`] if a node
    /// cannot give the chosen durability.
    pub fn connect(url: &str, config: Config) -> Result<RedisScheduler, Error> {
        let store = Store::new(url, config)?;
        let con = Mutex::new(store.conn());
        let sched = RedisScheduler { store, con };
        sched.now_ms()?;
        Ok(sched)
    }

    /// Runs `f` on the connection; after a transient failure (a broken
    /// connection, a server loading its data, a failover in progress, a
    /// write not confirmed durable) waits and runs it again, until it
    /// succeeds, fails otherwise, or [`Config::retry_for`] has passed.
    fn with<T>(
        &self,
        mut f: impl FnMut(&Store, &mut Conn, bool) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut con = self.con.lock().unwrap_or_else(|p| p.into_inner());
        let give_up = Instant::now() + self.store.config.retry_for;
        let mut backoff = Duration::from_millis(10);
        let mut repeat = false;
        loop {
            match f(&self.store, &mut con, repeat) {
                Err(e) if e.is_transient() && Instant::now() + backoff < give_up => {
                    repeat = true;
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                r => return r,
            }
        }
    }

    /// Schedules a job and returns its first due time, ms since the epoch on
    /// the clock of the Redis node that owns the job's shard (a delay is
    /// added to that clock there).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyScheduled`] if the id is pending, running or
    /// dead (scheduled by another call); [`Error::Tombstoned`] if it
    /// finished or was cancelled within the tombstone TTL (also when this
    /// call's own first attempt was applied and the job already ran before a
    /// retry); [`Error::PayloadTooLarge`]; [`Error::DelayOverflow`];
    /// [`Error::NotDurable`] if Redis did not confirm the chosen
    /// durability; [`Error::Redis`] when Redis cannot be reached within
    /// [`Config::retry_for`].
    pub fn schedule(&self, job: &Job) -> Result<i64, Error> {
        let scheduled = self.with(|s, c, repeat| s.schedule(c, job, repeat));
        if let Err(e) = &scheduled {
            crate::figures::rejected(job, e);
        }
        scheduled
    }

    /// Schedules a one-shot job `delay` after now (Redis clock).
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule), plus [`Error::Payload`].
    pub fn schedule_after<T: serde::Serialize + ?Sized>(
        &self,
        id: &str,
        kind: &str,
        payload: &T,
        delay: Duration,
    ) -> Result<i64, Error> {
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
    ) -> Result<i64, Error> {
        self.schedule(&Job::new(id, kind)?.payload(payload)?.at_ms(at_ms))
    }

    /// Schedules a fixed-rate job: first due after `initial_delay`, then every
    /// `period` on that grid, missed runs coalesced (see
    /// [`Job::at_fixed_rate`]; choose otherwise with [`Job::missed_runs`]
    /// and [`schedule`](Self::schedule)).
    ///
    /// # Errors
    ///
    /// As [`schedule_after`](Self::schedule_after), plus
    /// [`Error::ZeroPeriod`].
    pub fn schedule_at_fixed_rate<T: serde::Serialize + ?Sized>(
        &self,
        id: &str,
        kind: &str,
        payload: &T,
        initial_delay: Duration,
        period: Duration,
    ) -> Result<i64, Error> {
        self.schedule(
            &Job::new(id, kind)?
                .payload(payload)?
                .at_fixed_rate(initial_delay, period)?,
        )
    }

    /// Schedules a calendar job: due at every fire time of `calendar` (a
    /// cron expression in an IANA time zone), the first one being the
    /// first after Redis's clock now; missed runs caught up, a fire failing
    /// its last attempt dead-letters the job (choose otherwise with
    /// [`Job::missed_runs`] and [`Job::on_panic`], and
    /// [`schedule`](Self::schedule)). Returns the first due time.
    ///
    /// # Errors
    ///
    /// As [`schedule_after`](Self::schedule_after), plus
    /// [`Error::InvalidSchedule`] for a zone without an IANA name or a
    /// calendar with no fire time left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedulers_redis::calendar::Calendar;
    /// use schedulers_redis::{Config, RedisScheduler};
    ///
    /// let sched = RedisScheduler::connect("redis://127.0.0.1:6379/", Config::default())?;
    /// let payday = Calendar::parse_in("0 0 9 LW * ?", "America/New_York")?; // 09:00 on the last weekday
    /// let first = sched.schedule_calendar("payroll", "payroll", &(), &payday)?;
    /// println!("first run at {first} ms");
    /// # Ok::<(), schedulers_redis::Error>(())
    /// ```
    pub fn schedule_calendar<T: serde::Serialize + ?Sized>(
        &self,
        id: &str,
        kind: &str,
        payload: &T,
        calendar: &schedulers::calendar::Calendar,
    ) -> Result<i64, Error> {
        self.schedule(
            &Job::new(id, kind)?
                .payload(payload)?
                .on_calendar(calendar)?,
        )
    }

    /// Schedules many jobs, pipelined (one round trip per batch). Returns
    /// one result per job, in order.
    ///
    /// # Errors
    ///
    /// The outer error is a connection failure that outlasted
    /// [`Config::retry_for`] (some jobs may have been stored: scheduling
    /// them again is safe and reports them as
    /// [`Error::AlreadyScheduled`]); per-job errors are as for
    /// [`schedule`](Self::schedule). A transient per-job failure (one node
    /// of a Cluster down) retries the whole batch; the jobs already stored
    /// report success again.
    pub fn schedule_many(&self, jobs: &[Job]) -> Result<Vec<Result<i64, Error>>, Error> {
        let scheduled = self.with(|s, c, repeat| {
            let r = s.schedule_many(c, jobs, repeat)?;
            match r
                .iter()
                .find_map(|x| x.as_ref().err().filter(|e| e.is_transient()))
            {
                Some(e) => Err(crate::conn::clone_error(e, &e.to_string())),
                None => Ok(r),
            }
        });
        if let Ok(each) = &scheduled {
            for (job, r) in jobs.iter().zip(each) {
                if let Err(e) = r {
                    crate::figures::rejected(job, e);
                }
            }
        }
        scheduled
    }

    /// Cancels a job by id. Exact and permanent: a job reported
    /// [`CancelOutcome::Cancelled`] never runs again; one reported
    /// [`CancelOutcome::InFlight`] finishes its current run and never runs
    /// again. The id stays reserved for the tombstone TTL.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] if Redis cannot be reached within
    /// [`Config::retry_for`]; [`Error::NotDurable`] if Redis did not
    /// confirm the chosen durability (cancel is idempotent: retry it).
    pub fn cancel(&self, id: &str) -> Result<CancelOutcome, Error> {
        let token = token();
        self.with(|s, c, _| s.cancel(c, id, &token))
    }

    /// A snapshot of a job, or `None` if the id is unknown.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`], or [`Error::Protocol`] for a malformed
    /// record.
    pub fn inspect(&self, id: &str) -> Result<Option<JobInfo>, Error> {
        self.with(|s, c, _| s.inspect(c, id))
    }

    /// Redis's clock, ms since the epoch: the clock every due time is
    /// compared with.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`].
    pub fn now_ms(&self) -> Result<i64, Error> {
        self.with(|s, c, _| s.now_ms(c))
    }

    /// The ids in the dead-letter set, with the time they died (ms).
    ///
    /// # Errors
    ///
    /// [`Error::Redis`].
    pub fn dead_letters(&self) -> Result<Vec<(String, i64)>, Error> {
        self.with(|s, c, _| s.dead_letters(c))
    }

    /// How many jobs are stored: pending, running or dead-lettered (not
    /// tombstones). Zero once every job has run or been cancelled.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`].
    pub fn job_count(&self) -> Result<u64, Error> {
        self.with(|s, c, _| s.job_count(c))
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.store.config
    }
}
