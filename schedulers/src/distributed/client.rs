//! The client API: configuration, connections, and the operations.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use redis::Value;

use super::job::{CancelOutcome, Fire, Job, JobInfo, JobState, When};
use super::keys::{shard_of, slice_of, ShardKeys};
use super::scripts::scripts;
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

/// Round trips to Redis made by this process (every [`Conn::with`] call is
/// one), for the load benchmark.
static ROUND_TRIPS: AtomicU64 = AtomicU64::new(0);

/// Round trips to Redis this process has made so far (a benchmark counter).
#[doc(hidden)]
pub fn round_trips() -> u64 {
    ROUND_TRIPS.load(Ordering::Relaxed)
}

/// A connection that re-opens itself after an I/O error.
pub(crate) struct Conn {
    client: redis::Client,
    timeout: Duration,
    con: Option<redis::Connection>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("connected", &self.con.is_some())
            .finish_non_exhaustive()
    }
}

impl Conn {
    pub(crate) fn new(client: redis::Client, timeout: Duration) -> Conn {
        Conn {
            client,
            timeout,
            con: None,
        }
    }

    /// Runs `f` on the connection (opening it if needed); drops the
    /// connection after a connection-level error so the next call reconnects.
    pub(crate) fn with<T>(
        &mut self,
        f: impl FnOnce(&mut redis::Connection) -> Result<T, DistError>,
    ) -> Result<T, DistError> {
        if self.con.is_none() {
            let con = self.client.get_connection_with_timeout(self.timeout)?;
            con.set_read_timeout(Some(self.timeout))?;
            con.set_write_timeout(Some(self.timeout))?;
            self.con = Some(con);
        }
        let con = self
            .con
            .as_mut()
            .ok_or_else(|| DistError::Protocol("no connection".into()))?;
        ROUND_TRIPS.fetch_add(1, Ordering::Relaxed);
        let r = f(con);
        if let Err(e) = &r {
            if e.is_connection() {
                self.con = None;
            }
        }
        r
    }
}

/// Internal handle on a schedule: config, keys and script calls. Shared by
/// [`RedisScheduler`] and the worker.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pub(crate) config: Config,
    pub(crate) shards: Vec<ShardKeys>,
    pub(crate) client: redis::Client,
}

/// Parameters of the retry policy the scripts apply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    pub(crate) max_attempts: i64,
    pub(crate) backoff_base_ms: i64,
    pub(crate) backoff_max_ms: i64,
}

/// A lease lost by the reaper's doing.
#[derive(Debug, Clone)]
pub(crate) struct Reaped {
    pub(crate) id: String,
    pub(crate) due_ms: i64,
    pub(crate) fence: i64,
    pub(crate) outcome: String,
}

impl Store {
    pub(crate) fn new(url: &str, config: Config) -> Result<Store, DistError> {
        config.validate()?;
        let client = redis::Client::open(url)?;
        let shards = (0..config.shards)
            .map(|s| ShardKeys::new(&config.namespace, s))
            .collect();
        Ok(Store {
            config,
            shards,
            client,
        })
    }

    pub(crate) fn conn(&self) -> Conn {
        Conn::new(self.client.clone(), self.config.io_timeout)
    }

    pub(crate) fn keys_of(&self, id: &str) -> &ShardKeys {
        &self.shards[shard_of(id, self.config.shards) as usize]
    }

    fn invocation<'a>(
        &self,
        script: &'a redis::Script,
        k: &ShardKeys,
    ) -> redis::ScriptInvocation<'a> {
        let mut inv = script.prepare_invoke();
        for key in k.fixed() {
            inv.key(key);
        }
        inv.arg(&k.prefix).arg(self.config.slice_ms);
        inv
    }

    pub(crate) fn now_ms(&self, con: &mut Conn) -> Result<i64, DistError> {
        con.with(|c| {
            let (s, us): (i64, i64) = redis::cmd("TIME").query(c)?;
            Ok(s * 1000 + us / 1000)
        })
    }

    /// Schedules `job`; returns its first due time (ms, Redis clock).
    pub(crate) fn schedule(&self, con: &mut Conn, job: &Job) -> Result<i64, DistError> {
        let due = match job.when {
            When::AtMs(ms) => ms,
            When::After(d) => {
                let d = i64::try_from(d.as_millis()).map_err(|_| DistError::DelayOverflow)?;
                self.now_ms(con)?
                    .checked_add(d)
                    .ok_or(DistError::DelayOverflow)?
            }
        };
        // Lua numbers are doubles: keep times well inside 2^53.
        if !(0..(1i64 << 52)).contains(&due) {
            return Err(DistError::DelayOverflow);
        }
        let k = self.keys_of(&job.id);
        let sl = slice_of(due, self.config.slice_ms);
        let mut inv = self.invocation(&scripts().schedule, k);
        inv.key(k.slice(sl));
        inv.arg(&job.id)
            .arg(&job.kind)
            .arg(&job.payload)
            .arg(due)
            .arg(job.period_ms)
            .arg(sl);
        let reply: Value = con.with(|c| Ok(inv.invoke(c)?))?;
        let (status, _now, _) = status_reply(&reply)?;
        match status.as_str() {
            "OK" => Ok(due),
            "EXISTS" => Err(DistError::AlreadyScheduled(job.id.clone())),
            "TOMBSTONE" => Err(DistError::Tombstoned(job.id.clone())),
            other => Err(DistError::Protocol(format!("schedule: {other}"))),
        }
    }

    pub(crate) fn cancel(&self, con: &mut Conn, id: &str) -> Result<CancelOutcome, DistError> {
        let k = self.keys_of(id);
        let mut inv = self.invocation(&scripts().cancel, k);
        inv.arg(id).arg(self.config.tombstone_ms);
        let reply: Value = con.with(|c| Ok(inv.invoke(c)?))?;
        let (status, _, _) = status_reply(&reply)?;
        match status.as_str() {
            "CANCELLED" => Ok(CancelOutcome::Cancelled),
            "INFLIGHT" => Ok(CancelOutcome::InFlight),
            "GONE" => Ok(CancelOutcome::AlreadyGone),
            "NOTFOUND" => Ok(CancelOutcome::NotFound),
            other => Err(DistError::Protocol(format!("cancel: {other}"))),
        }
    }

    pub(crate) fn inspect(&self, con: &mut Conn, id: &str) -> Result<Option<JobInfo>, DistError> {
        let k = self.keys_of(id);
        let mut inv = self.invocation(&scripts().inspect, k);
        inv.arg(id);
        let reply: Value = con.with(|c| Ok(inv.invoke(c)?))?;
        let items = array(&reply)?;
        let now = int(items.first())?;
        let meta = opt_str(items.get(1))?;
        let payload = opt_str(items.get(2))?.unwrap_or_else(|| "null".into());
        let tomb = opt_str(items.get(3))?;
        if let Some(meta) = meta {
            let m: serde_json::Value = serde_json::from_str(&meta)?;
            let num = |f: &str| {
                m.get(f)
                    .and_then(serde_json::Value::as_f64)
                    .map(|x| x as i64)
            };
            let state = match m.get("st").and_then(|v| v.as_str()) {
                Some("s") => JobState::Scheduled,
                Some("l") => JobState::Leased,
                Some("d") => JobState::Dead,
                other => return Err(DistError::Protocol(format!("state {other:?}"))),
            };
            return Ok(Some(JobInfo::Live {
                kind: m
                    .get("k")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned(),
                payload,
                state,
                due_ms: num("due").unwrap_or_default(),
                run_ms: num("run").unwrap_or_default(),
                period_ms: num("per").unwrap_or_default(),
                attempt: num("att").unwrap_or_default(),
                fence: num("fen").unwrap_or_default(),
                lease_until_ms: num("lu"),
                cancel_requested: num("can") == Some(1),
                last_error: m.get("err").and_then(|v| v.as_str()).map(str::to_owned),
            }));
        }
        match tomb {
            Some(t) => {
                let until: f64 = t
                    .parse()
                    .map_err(|_| DistError::Protocol(format!("tombstone {t}")))?;
                let until = until as i64;
                Ok((until > now).then_some(JobInfo::Tombstone { until_ms: until }))
            }
            None => Ok(None),
        }
    }

    /// The first `k` slices of a shard's index, oldest first, with the
    /// earliest run time of the first.
    pub(crate) fn slices(
        &self,
        con: &mut Conn,
        shard: usize,
        k: usize,
    ) -> Result<(Vec<String>, Option<i64>), DistError> {
        let keys = &self.shards[shard];
        con.with(|c| {
            let v: Vec<(String, f64)> = redis::cmd("ZRANGE")
                .arg(&keys.idx)
                .arg(0)
                .arg(k.saturating_sub(1))
                .arg("WITHSCORES")
                .query(c)?;
            let head = v.first().map(|(_, s)| *s as i64);
            Ok((v.into_iter().map(|(m, _)| m).collect(), head))
        })
    }

    /// Claims up to `limit` due jobs of a shard. Returns (now, next run time
    /// in the shard or None, fires).
    pub(crate) fn claim(
        &self,
        con: &mut Conn,
        shard: usize,
        slices: &[String],
        limit: usize,
        lease_ms: i64,
        worker: &str,
    ) -> Result<(i64, Option<i64>, Vec<Fire>), DistError> {
        let k = &self.shards[shard];
        let mut inv = self.invocation(&scripts().claim, k);
        for s in slices {
            let n: i64 = s
                .parse()
                .map_err(|_| DistError::Protocol(format!("slice {s}")))?;
            inv.key(k.slice(n));
        }
        inv.arg(limit).arg(lease_ms).arg(worker);
        for s in slices {
            inv.arg(s);
        }
        let reply: Value = con.with(|c| Ok(inv.invoke(c)?))?;
        let items = array(&reply)?;
        let now = int(items.first())?;
        let head = int(items.get(1))?;
        let mut fires = Vec::new();
        for it in items.iter().skip(2) {
            let f = array(it)?;
            fires.push(Fire {
                id: string(f.first())?,
                kind: string(f.get(1))?,
                payload: string(f.get(2))?,
                due_ms: int(f.get(3))?,
                fence: int(f.get(4))?,
                attempt: int(f.get(5))?,
                period_ms: int(f.get(6))?,
                claimed_ms: now,
                shard: k.shard,
            });
        }
        Ok((now, (head >= 0).then_some(head), fires))
    }

    fn holder_call(
        &self,
        con: &mut Conn,
        script: &redis::Script,
        fire: &Fire,
        extra: impl FnOnce(&mut redis::ScriptInvocation<'_>),
    ) -> Result<(String, i64, Option<i64>), DistError> {
        let k = &self.shards[fire.shard as usize];
        let mut inv = self.invocation(script, k);
        inv.arg(&fire.id).arg(fire.fence);
        extra(&mut inv);
        let reply: Value = con.with(|c| Ok(inv.invoke(c)?))?;
        status_reply(&reply)
    }

    pub(crate) fn extend(
        &self,
        con: &mut Conn,
        fire: &Fire,
        lease_ms: i64,
        p: RetryPolicy,
    ) -> Result<bool, DistError> {
        let ttl = self.config.tombstone_ms;
        let (s, _, _) = self.holder_call(con, &scripts().extend, fire, |inv| {
            inv.arg(lease_ms)
                .arg(ttl)
                .arg(p.max_attempts)
                .arg(p.backoff_base_ms)
                .arg(p.backoff_max_ms);
        })?;
        Ok(s == "OK")
    }

    /// Acks a run: (status, Redis now, next due for a periodic job).
    pub(crate) fn ack(
        &self,
        con: &mut Conn,
        fire: &Fire,
        p: RetryPolicy,
    ) -> Result<(String, i64, Option<i64>), DistError> {
        let ttl = self.config.tombstone_ms;
        self.holder_call(con, &scripts().ack, fire, |inv| {
            inv.arg(ttl)
                .arg(p.max_attempts)
                .arg(p.backoff_base_ms)
                .arg(p.backoff_max_ms);
        })
    }

    pub(crate) fn fail(
        &self,
        con: &mut Conn,
        fire: &Fire,
        p: RetryPolicy,
        reason: &str,
    ) -> Result<(String, i64), DistError> {
        let ttl = self.config.tombstone_ms;
        let (s, now, _) = self.holder_call(con, &scripts().fail, fire, |inv| {
            inv.arg(ttl)
                .arg(p.max_attempts)
                .arg(p.backoff_base_ms)
                .arg(p.backoff_max_ms)
                .arg(reason);
        })?;
        Ok((s, now))
    }

    pub(crate) fn release(&self, con: &mut Conn, fire: &Fire) -> Result<(String, i64), DistError> {
        let ttl = self.config.tombstone_ms;
        let (s, now, _) = self.holder_call(con, &scripts().release, fire, |inv| {
            inv.arg(ttl);
        })?;
        Ok((s, now))
    }

    pub(crate) fn reap(
        &self,
        con: &mut Conn,
        shard: usize,
        limit: usize,
        p: RetryPolicy,
    ) -> Result<(i64, Vec<Reaped>), DistError> {
        let k = &self.shards[shard];
        let mut inv = self.invocation(&scripts().reap, k);
        inv.arg(limit)
            .arg(self.config.tombstone_ms)
            .arg(p.max_attempts)
            .arg(p.backoff_base_ms)
            .arg(p.backoff_max_ms);
        let reply: Value = con.with(|c| Ok(inv.invoke(c)?))?;
        let items = array(&reply)?;
        let now = int(items.first())?;
        let mut out = Vec::new();
        for it in items.iter().skip(1) {
            let f = array(it)?;
            out.push(Reaped {
                id: string(f.first())?,
                due_ms: int(f.get(1))?,
                fence: int(f.get(2))?,
                outcome: string(f.get(3))?,
            });
        }
        Ok((now, out))
    }
}

fn array(v: &Value) -> Result<&[Value], DistError> {
    match v {
        Value::Array(a) => Ok(a),
        other => Err(DistError::Protocol(format!(
            "expected an array, got {other:?}"
        ))),
    }
}

fn int(v: Option<&Value>) -> Result<i64, DistError> {
    match v {
        Some(Value::Int(i)) => Ok(*i),
        Some(Value::BulkString(b)) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .map(|f| f as i64)
            .ok_or_else(|| DistError::Protocol("expected a number".into())),
        other => Err(DistError::Protocol(format!(
            "expected an integer, got {other:?}"
        ))),
    }
}

fn string(v: Option<&Value>) -> Result<String, DistError> {
    match v {
        Some(Value::BulkString(b)) => Ok(String::from_utf8_lossy(b).into_owned()),
        Some(Value::SimpleString(s)) => Ok(s.clone()),
        Some(Value::Int(i)) => Ok(i.to_string()),
        other => Err(DistError::Protocol(format!(
            "expected a string, got {other:?}"
        ))),
    }
}

fn opt_str(v: Option<&Value>) -> Result<Option<String>, DistError> {
    match v {
        None | Some(Value::Nil) => Ok(None),
        v => string(v).map(Some),
    }
}

fn status_reply(v: &Value) -> Result<(String, i64, Option<i64>), DistError> {
    let a = array(v)?;
    let third = match a.get(2) {
        Some(x) => Some(int(Some(x))?),
        None => None,
    };
    Ok((string(a.first())?, int(a.get(1))?, third))
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
        self.with(|s, c| {
            let now = s.now_ms(c)?;
            let script = &scripts().schedule;
            c.with(|con| {
                script.prepare_invoke().load(con)?;
                Ok(())
            })?;
            let mut out = Vec::with_capacity(jobs.len());
            for chunk in jobs.chunks(1000) {
                let mut pipe = redis::pipe();
                let mut dues = Vec::with_capacity(chunk.len());
                for job in chunk {
                    let due = match job.when {
                        When::AtMs(ms) => ms,
                        When::After(d) => {
                            now.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                        }
                    };
                    if !(0..(1i64 << 52)).contains(&due) {
                        dues.push(Err(DistError::DelayOverflow));
                        continue;
                    }
                    let k = s.keys_of(&job.id);
                    let sl = slice_of(due, s.config.slice_ms);
                    let mut cmd = redis::cmd("EVALSHA");
                    cmd.arg(script.get_hash()).arg(7);
                    for key in k.fixed() {
                        cmd.arg(key);
                    }
                    cmd.arg(k.slice(sl)).arg(&k.prefix).arg(s.config.slice_ms);
                    cmd.arg(&job.id)
                        .arg(&job.kind)
                        .arg(&job.payload)
                        .arg(due)
                        .arg(job.period_ms)
                        .arg(sl);
                    pipe.add_command(cmd);
                    dues.push(Ok(due));
                }
                let replies: Vec<Value> = c.with(|con| Ok(pipe.query(con)?))?;
                let mut replies = replies.into_iter();
                for (job, due) in chunk.iter().zip(dues) {
                    let r = due.and_then(|due| {
                        let v = replies
                            .next()
                            .ok_or_else(|| DistError::Protocol("short pipeline reply".into()))?;
                        let (status, _, _) = status_reply(&v)?;
                        match status.as_str() {
                            "OK" => Ok(due),
                            "EXISTS" => Err(DistError::AlreadyScheduled(job.id.clone())),
                            "TOMBSTONE" => Err(DistError::Tombstoned(job.id.clone())),
                            other => Err(DistError::Protocol(format!("schedule: {other}"))),
                        }
                    });
                    out.push(r);
                }
            }
            Ok(out)
        })
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
        self.with(|s, c| {
            let mut out = Vec::new();
            for k in &s.shards {
                let v: Vec<(String, f64)> = c.with(|con| {
                    Ok(redis::cmd("ZRANGE")
                        .arg(&k.dead)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES")
                        .query(con)?)
                })?;
                out.extend(v.into_iter().map(|(id, t)| (id, t as i64)));
            }
            Ok(out)
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.store.config
    }
}
