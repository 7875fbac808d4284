//! The operations on a schedule in Redis: each builds its script calls,
//! sends them (the worker's batch operations pipelined over the shards, one
//! round trip for all), and decodes the replies. Shared by
//! [`RedisScheduler`](crate::RedisScheduler) and the worker.

use std::sync::Arc;

use redis::Value;

use crate::conn::{clone_error, Conn, Endpoint, InFlight, IoCounters, Req, ScriptSrc};
use crate::job::{CancelOutcome, Fire, Job, JobInfo, JobState, When};
use crate::keys::{fingerprint, shard_of, ShardKeys};
use crate::plan::{Planned, Schedule};
use crate::scripts::scripts;
use crate::{Config, Error};

/// Most jobs one batch script call handles: Lua's `unpack` takes a few
/// thousand values, and a call must stay short (Redis runs one at a time).
pub(crate) const MAX_BATCH: usize = 1000;

/// Values per job in a claim reply: id, record, payload.
const CLAIMED_FIELDS: usize = 3;

/// One result per item of a batch operation; the outer error of such an
/// operation is a failed round trip (any subset of the items may have been
/// applied).
pub(crate) type PerItem<T> = Vec<Result<T, Error>>;

/// Claims sent and not yet read: [`Store::claim_recv`] reads them.
pub(crate) struct ClaimSent {
    /// The `(shard, limit)` of each claim.
    pub(crate) asks: Vec<(usize, usize)>,
    calls: Vec<Req>,
    sent: InFlight,
}

/// Internal handle on a schedule: config, keys and script calls.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pub(crate) config: Config,
    pub(crate) shards: Vec<ShardKeys>,
    endpoint: Endpoint,
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
    pub(crate) at_ms: i64,
}

/// What one shard's claim returned.
#[derive(Debug)]
pub(crate) struct Claimed {
    pub(crate) shard: usize,
    /// Redis's clock when the claim ran.
    pub(crate) now: i64,
    /// The earliest run time left in the shard.
    pub(crate) head: Option<i64>,
    pub(crate) fires: Vec<ClaimedFire>,
}

/// A claimed fire, due at its record's due time, and what its record says
/// for planning it.
#[derive(Debug)]
pub(crate) struct ClaimedFire {
    pub(crate) fire: Fire,
    /// Redis's clock at the fire's first claim.
    pub(crate) first_ms: i64,
    /// The schedule beyond the period, as stored (empty for most jobs).
    pub(crate) schedule: String,
}

/// How a lease ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// The run succeeded; the plan of a planned job.
    Ack(Option<Planned>),
    /// The run failed, for this reason; the plan of a planned job (for
    /// `OnPanic::Continue`), if the worker could make one.
    Fail(String, Option<Planned>),
    /// The job was never started: hand it back.
    Release,
    /// A missed-run policy runs nothing for this fire: the job moves to
    /// the plan's next. With the number of fire times passed over (for the
    /// worker's event; not sent).
    Skip(Planned, u64),
}

impl Op {
    /// Sent as a bare `{id, fence, fingerprint}`: the bulk of the traffic.
    fn plain_ack(&self) -> bool {
        *self == Op::Ack(None)
    }
}

/// What [`Store::settle`] did with one lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Settled {
    Done,
    Next(i64),
    Retry,
    Dead,
    Cancelled,
    Released,
    Stale,
    /// The lease ended more than an outcome window ago: how is not known.
    Unknown,
}

/// What a settle did with one lease: the outcome, Redis's clock then, and
/// why its durability fell short if it did.
pub(crate) type SettleReply = (Settled, i64, Option<String>);

/// A token that tells a call's retries from other clients' calls: 48
/// random bits in hex.
pub(crate) fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(N.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    format!("{:012x}", h.finish() >> 16)
}

/// The largest due time (ms) the scripts take: Lua numbers are doubles, so
/// times stay well inside 2^53.
const MAX_DUE_MS: i64 = 1 << 52;

impl Store {
    pub(crate) fn new(url: &str, config: Config) -> Result<Store, Error> {
        config.validate()?;
        let endpoint = Endpoint::new(url, &config)?;
        let shards = (0..config.shards)
            .map(|s| ShardKeys::new(&config.namespace, s))
            .collect();
        Ok(Store {
            config,
            shards,
            endpoint,
        })
    }

    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub(crate) fn conn(&self) -> Conn {
        self.endpoint.conn()
    }

    pub(crate) fn counters(&self) -> &IoCounters {
        self.endpoint.counters()
    }

    pub(crate) fn keys_of(&self, id: &str) -> &ShardKeys {
        &self.shards[shard_of(id, self.config.shards) as usize]
    }

    /// An `EVALSHA` of `script` on shard `k`: its seven fixed keys, the
    /// prefix, slice length, tombstone retention and outcome window, then
    /// what `args` adds.
    fn call(
        &self,
        script: &'static ScriptSrc,
        k: &ShardKeys,
        write: bool,
        args: impl FnOnce(&mut redis::Cmd),
    ) -> Req {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&script.sha)
            .arg(7)
            .arg(&k.fixed()[..])
            .arg(&*k.prefix)
            .arg(self.config.slice_ms)
            .arg(self.config.tombstone_ms)
            .arg(self.config.window_ms);
        args(&mut cmd);
        Req {
            route: Some(k.prefix.clone()),
            cmd,
            script: Some(script),
            write,
        }
    }

    pub(crate) fn now_ms(&self, con: &mut Conn) -> Result<i64, Error> {
        let (s, us): (i64, i64) = con.query(None, redis::cmd("TIME"))?;
        Ok(s * 1000 + us / 1000)
    }

    /// The schedule call of `job`; `repeat` when an earlier attempt of the
    /// same call may have been applied; `now` is Redis's clock, for the
    /// first fire of a calendar job.
    fn schedule_call(&self, job: &Job, repeat: bool, now: Option<i64>) -> Result<Req, Error> {
        if job.payload.len() > self.config.max_payload {
            return Err(Error::PayloadTooLarge {
                id: job.id.clone(),
                bytes: job.payload.len(),
                limit: self.config.max_payload,
            });
        }
        let schedule = Schedule::text_of(job)?;
        let (mode, ms) = match job.when {
            When::NextFire => {
                let (Some(cal), Some(now)) = (&job.calendar, now) else {
                    return Err(Error::InvalidSchedule(
                        "a job due at its next fire time needs a calendar",
                    ));
                };
                let now = schedulers::calendar::jiff::Timestamp::from_millisecond(now)
                    .map_err(|_| Error::DelayOverflow)?;
                match cal.next_after(now).map(|t| t.as_millisecond()) {
                    Some(ms) if ms < MAX_DUE_MS => ("a", ms),
                    Some(_) => return Err(Error::DelayOverflow),
                    None => {
                        return Err(Error::InvalidSchedule("the calendar has no fire time left"))
                    }
                }
            }
            When::AtMs(ms) if (0..MAX_DUE_MS).contains(&ms) => ("a", ms),
            When::After(d) => match i64::try_from(d.as_millis()) {
                // The node adds its clock (~2^40 ms now): keep the sum
                // inside the range too.
                Ok(ms) if ms < MAX_DUE_MS / 2 => ("r", ms),
                _ => return Err(Error::DelayOverflow),
            },
            When::AtMs(_) => return Err(Error::DelayOverflow),
        };
        let k = self.keys_of(&job.id);
        Ok(self.call(&scripts().schedule, k, true, |cmd| {
            cmd.arg(&job.id)
                .arg(&job.kind)
                .arg(&job.payload)
                .arg(mode)
                .arg(ms)
                .arg(job.period_ms)
                .arg(fingerprint(&job.id))
                .arg(if repeat { "1" } else { "0" })
                .arg(&schedule);
        }))
    }

    /// Redis's clock, if one of `jobs` is a calendar job (its first fire is
    /// the first after it).
    fn now_for(&self, con: &mut Conn, jobs: &[Job]) -> Result<Option<i64>, Error> {
        if jobs.iter().any(|j| j.when == When::NextFire) {
            Ok(Some(self.now_ms(con)?))
        } else {
            Ok(None)
        }
    }

    fn schedule_result(job: &Job, reply: &Value) -> Result<i64, Error> {
        let (status, _, due) = status_reply(reply)?;
        match status.as_str() {
            "OK" => due.ok_or_else(|| Error::Protocol("schedule: no due time".into())),
            "EXISTS" => Err(Error::AlreadyScheduled(job.id.clone())),
            "TOMBSTONE" => Err(Error::Tombstoned(job.id.clone())),
            other => Err(Error::Protocol(format!("schedule: {other}"))),
        }
    }

    /// Schedules `job`; returns its first due time (ms, the shard's node's
    /// clock). A `repeat` that finds the job stored with the same kind,
    /// period and payload (by its own earlier attempt) reports success.
    pub(crate) fn schedule(&self, con: &mut Conn, job: &Job, repeat: bool) -> Result<i64, Error> {
        let now = self.now_for(con, std::slice::from_ref(job))?;
        let reply = con.call(&self.schedule_call(job, repeat, now)?)?;
        Self::schedule_result(job, &reply)
    }

    /// Schedules many jobs, 1000 per round trip; one result per job.
    pub(crate) fn schedule_many(
        &self,
        con: &mut Conn,
        jobs: &[Job],
        repeat: bool,
    ) -> Result<PerItem<i64>, Error> {
        let mut out = Vec::with_capacity(jobs.len());
        for chunk in jobs.chunks(1000) {
            let now = self.now_for(con, chunk)?;
            let mut reqs = Vec::with_capacity(chunk.len());
            let mut pending = Vec::with_capacity(chunk.len());
            for job in chunk {
                match self.schedule_call(job, repeat, now) {
                    Ok(req) => {
                        reqs.push(req);
                        pending.push(Ok(()));
                    }
                    Err(e) => pending.push(Err(e)),
                }
            }
            let mut replies = con.run(&reqs)?.into_iter();
            for (job, ok) in chunk.iter().zip(pending) {
                out.push(ok.and_then(|()| {
                    let reply = replies
                        .next()
                        .ok_or_else(|| Error::Protocol("short pipeline reply".into()))??;
                    Self::schedule_result(job, &reply)
                }));
            }
        }
        Ok(out)
    }

    /// Cancels `id`; a repeat with the same `token` gets the first answer.
    pub(crate) fn cancel(
        &self,
        con: &mut Conn,
        id: &str,
        token: &str,
    ) -> Result<CancelOutcome, Error> {
        let reply = con.call(&self.call(&scripts().cancel, self.keys_of(id), true, |c| {
            c.arg(id).arg(token).arg(fingerprint(id));
        }))?;
        let (status, _, _) = status_reply(&reply)?;
        match status.as_str() {
            "CANCELLED" => Ok(CancelOutcome::Cancelled),
            "INFLIGHT" => Ok(CancelOutcome::InFlight),
            "GONE" => Ok(CancelOutcome::AlreadyGone),
            "NOTFOUND" => Ok(CancelOutcome::NotFound),
            other => Err(Error::Protocol(format!("cancel: {other}"))),
        }
    }

    pub(crate) fn inspect(&self, con: &mut Conn, id: &str) -> Result<Option<JobInfo>, Error> {
        let reply = con.call(
            &self.call(&scripts().inspect, self.keys_of(id), false, |c| {
                c.arg(id).arg(fingerprint(id));
            }),
        )?;
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
                other => return Err(Error::Protocol(format!("state {other:?}"))),
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
                    .map_err(|_| Error::Protocol(format!("tombstone {t}")))?;
                let until = until as i64;
                Ok((until > now).then_some(JobInfo::Tombstone { until_ms: until }))
            }
            None => Ok(None),
        }
    }

    pub(crate) fn dead_letters(&self, con: &mut Conn) -> Result<Vec<(String, i64)>, Error> {
        let reqs: Vec<Req> = self
            .shards
            .iter()
            .map(|k| {
                let mut cmd = redis::cmd("ZRANGE");
                cmd.arg(&k.dead).arg(0).arg(-1).arg("WITHSCORES");
                Req::read(Some(k.prefix.clone()), cmd)
            })
            .collect();
        let mut out = Vec::new();
        for r in con.run(&reqs)? {
            let v: Vec<(String, f64)> =
                redis::from_redis_value(r?).map_err(redis::RedisError::from)?;
            out.extend(v.into_iter().map(|(id, t)| (id, t as i64)));
        }
        Ok(out)
    }

    /// The number of jobs stored (pending, running or dead) over all shards.
    pub(crate) fn job_count(&self, con: &mut Conn) -> Result<u64, Error> {
        let reqs: Vec<Req> = self
            .shards
            .iter()
            .map(|k| {
                let mut cmd = redis::cmd("HLEN");
                cmd.arg(&k.meta);
                Req::read(Some(k.prefix.clone()), cmd)
            })
            .collect();
        let mut n = 0;
        for r in con.run(&reqs)? {
            n += redis::from_redis_value::<u64>(r?).map_err(redis::RedisError::from)?;
        }
        Ok(n)
    }

    /// Redis's clock (the node of shard 0's) and the earliest run time of
    /// every shard, in one round trip.
    pub(crate) fn heads(&self, con: &mut Conn) -> Result<(i64, Vec<Option<i64>>), Error> {
        let route: Option<Arc<str>> = self.shards.first().map(|k| k.prefix.clone());
        let mut reqs = vec![Req::read(route, redis::cmd("TIME"))];
        for k in &self.shards {
            let mut cmd = redis::cmd("ZRANGE");
            cmd.arg(&k.idx).arg(0).arg(0).arg("WITHSCORES");
            reqs.push(Req::read(Some(k.prefix.clone()), cmd));
        }
        let mut replies = con.run(&reqs)?.into_iter();
        let time = replies
            .next()
            .ok_or_else(|| Error::Protocol("heads: no reply".into()))??;
        let (secs, micros): (i64, i64) =
            redis::from_redis_value(time).map_err(redis::RedisError::from)?;
        let mut heads = Vec::with_capacity(self.shards.len());
        for r in replies {
            let h: Vec<(String, f64)> =
                redis::from_redis_value(r?).map_err(redis::RedisError::from)?;
            heads.push(h.first().map(|(_, s)| *s as i64));
        }
        Ok((secs * 1000 + micros / 1000, heads))
    }

    /// Claims, in one round trip, up to `limit` due jobs from each
    /// `(shard, limit)` of `asks`. One result per ask. (The worker sends and
    /// receives apart; only the claim ceiling waits.)
    #[cfg(feature = "test-util")]
    pub(crate) fn claim(
        &self,
        con: &mut Conn,
        asks: &[(usize, usize)],
        lease_ms: i64,
    ) -> Result<PerItem<Claimed>, Error> {
        let sent = self.claim_send(con, asks, lease_ms)?;
        self.claim_recv(con, sent)
    }

    /// The first half of [`claim`](Self::claim): sends the claims without
    /// waiting for them (see [`Conn::send`]).
    pub(crate) fn claim_send(
        &self,
        con: &mut Conn,
        asks: &[(usize, usize)],
        lease_ms: i64,
    ) -> Result<ClaimSent, Error> {
        let calls: Vec<Req> = asks
            .iter()
            .map(|&(s, limit)| {
                self.call(&scripts().claim, &self.shards[s], true, |c| {
                    c.arg(limit.min(MAX_BATCH)).arg(lease_ms);
                })
            })
            .collect();
        let sent = con.send(&calls)?;
        Ok(ClaimSent {
            asks: asks.to_vec(),
            calls,
            sent,
        })
    }

    /// The second half of [`claim`](Self::claim): reads the claims `sent`
    /// on `con`.
    pub(crate) fn claim_recv(
        &self,
        con: &mut Conn,
        sent: ClaimSent,
    ) -> Result<PerItem<Claimed>, Error> {
        let ClaimSent { asks, calls, sent } = sent;
        let replies = con.recv(&calls, sent)?;
        Ok(asks
            .iter()
            .zip(replies)
            .map(|(&(shard, _), reply)| {
                let Value::Array(items) = reply? else {
                    return Err(Error::Protocol("claim: expected an array".into()));
                };
                let now = int(items.first())?;
                let head = int(items.get(1))?;
                if items.len() < 2 || (items.len() - 2) % CLAIMED_FIELDS != 0 {
                    return Err(Error::Protocol(format!(
                        "claim: {} values, not 2 and {CLAIMED_FIELDS} per job",
                        items.len()
                    )));
                }
                let mut values = items.into_iter().skip(2);
                let mut fires = Vec::with_capacity(values.len() / CLAIMED_FIELDS);
                while let (Some(id), Some(record), Some(payload)) =
                    (values.next(), values.next(), values.next())
                {
                    fires.push(claimed_fire(id, &record, payload, now, shard)?);
                }
                Ok(Claimed {
                    shard,
                    now,
                    head: (head >= 0).then_some(head),
                    fires,
                })
            })
            .collect())
    }

    /// Groups `items` by shard into calls of at most [`MAX_BATCH`] items;
    /// returns the calls and, per call, the positions of its items.
    fn batches<T>(
        &self,
        items: &[T],
        shard: impl Fn(&T) -> usize,
        mut call: impl FnMut(usize, &[&T]) -> Req,
    ) -> (Vec<Req>, Vec<Vec<usize>>) {
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); self.shards.len()];
        for (i, it) in items.iter().enumerate() {
            by_shard[shard(it)].push(i);
        }
        let mut calls = Vec::new();
        let mut positions = Vec::new();
        for (s, idx) in by_shard.iter().enumerate() {
            for chunk in idx.chunks(MAX_BATCH) {
                let group: Vec<&T> = chunk.iter().map(|&i| &items[i]).collect();
                calls.push(call(s, &group));
                positions.push(chunk.to_vec());
            }
        }
        (calls, positions)
    }

    /// Extends the leases of `fires` in one round trip. Per fire: `Ok(true)`
    /// extended, `Ok(false)` refused (the lease is lost), `Err` unknown.
    pub(crate) fn extend(
        &self,
        con: &mut Conn,
        fires: &[&Fire],
        lease_ms: i64,
        p: RetryPolicy,
    ) -> Result<PerItem<bool>, Error> {
        let (calls, positions) = self.batches(
            fires,
            |f| f.shard as usize,
            |s, group| {
                self.call(&scripts().extend, &self.shards[s], true, |c| {
                    c.arg(lease_ms)
                        .arg(p.max_attempts)
                        .arg(p.backoff_base_ms)
                        .arg(p.backoff_max_ms);
                    for f in group {
                        c.arg(&f.id).arg(f.fence);
                    }
                })
            },
        );
        let replies = con.run(&calls)?;
        let mut out: Vec<Result<bool, Error>> = (0..fires.len()).map(|_| Ok(true)).collect();
        for (reply, pos) in replies.into_iter().zip(positions) {
            let lost: Result<Vec<i64>, Error> = reply.and_then(|v| {
                let items = array(&v)?;
                match items.get(2) {
                    Some(l) => array(l)?.iter().map(|x| int(Some(x))).collect(),
                    None => Err(Error::Protocol("extend: short reply".into())),
                }
            });
            match lost {
                Ok(lost) => {
                    for j in lost {
                        if let Some(&i) = usize::try_from(j - 1).ok().and_then(|j| pos.get(j)) {
                            out[i] = Ok(false);
                        }
                    }
                }
                Err(e) => fail_all(&mut out, &pos, &e),
            }
        }
        Ok(out)
    }

    /// Ends the leases of `items` (fire, how) in one round trip. Per item:
    /// what happened, Redis's clock then, and why its durability fell short
    /// if it did (the outcome was applied on the master all the same), or an
    /// error.
    pub(crate) fn settle(
        &self,
        con: &mut Conn,
        items: &[(&Fire, &Op)],
        p: RetryPolicy,
    ) -> Result<PerItem<SettleReply>, Error> {
        // Plain acks first in every call (the script takes them as triples).
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| !items[i].1.plain_ack());
        let sorted: Vec<(&Fire, &Op)> = order.iter().map(|&i| items[i]).collect();
        let (calls, positions) = self.batches(
            &sorted,
            |(f, _)| f.shard as usize,
            |s, group| {
                self.call(&scripts().settle, &self.shards[s], true, |c| {
                    c.arg(p.max_attempts)
                        .arg(p.backoff_base_ms)
                        .arg(p.backoff_max_ms)
                        .arg(group.iter().filter(|(_, op)| op.plain_ack()).count());
                    for (f, op) in group {
                        c.arg(&f.id).arg(f.fence).arg(fingerprint(&f.id));
                        let plan = |p: &Option<Planned>| p.map(|p| p.arg()).unwrap_or_default();
                        match op {
                            Op::Ack(None) => {}
                            Op::Ack(p) => {
                                c.arg("a").arg(plan(p)).arg("");
                            }
                            Op::Fail(why, p) => {
                                c.arg("f").arg(plan(p)).arg(why);
                            }
                            Op::Release => {
                                c.arg("r").arg("").arg("");
                            }
                            Op::Skip(p, _) => {
                                c.arg("k").arg(p.arg()).arg("");
                            }
                        }
                    }
                })
            },
        );
        // Positions in `sorted` back to positions in `items`.
        let positions: Vec<Vec<usize>> = positions
            .into_iter()
            .map(|p| p.into_iter().map(|i| order[i]).collect())
            .collect();
        let replies = con.run_applied(&calls)?;
        let mut out: PerItem<SettleReply> = (0..items.len())
            .map(|_| Err(Error::Protocol("settle: no reply".into())))
            .collect();
        for ((reply, shortfall), pos) in replies.into_iter().zip(positions) {
            let decoded = reply.and_then(|v| {
                let a = array(&v)?;
                let now = int(a.first())?;
                a.iter()
                    .skip(1)
                    .map(|r| {
                        let said = string(Some(r))?;
                        let s = match said.as_str() {
                            "DONE" => Settled::Done,
                            "RETRY" => Settled::Retry,
                            "DEAD" => Settled::Dead,
                            "CANCELLED" => Settled::Cancelled,
                            "RELEASED" => Settled::Released,
                            "STALE" => Settled::Stale,
                            "UNKNOWN" => Settled::Unknown,
                            other => match other.strip_prefix("NEXT:").map(str::parse) {
                                Some(Ok(due)) => Settled::Next(due),
                                _ => return Err(Error::Protocol(format!("settle: {other}"))),
                            },
                        };
                        Ok((s, now, shortfall.clone()))
                    })
                    .collect::<Result<Vec<_>, _>>()
            });
            match decoded {
                Ok(v) if v.len() == pos.len() => {
                    for (i, r) in pos.into_iter().zip(v) {
                        out[i] = Ok(r);
                    }
                }
                Ok(v) => {
                    let e = Error::Protocol(format!(
                        "settle: {} replies for {} leases",
                        v.len(),
                        pos.len()
                    ));
                    fail_all(&mut out, &pos, &e);
                }
                Err(e) => fail_all(&mut out, &pos, &e),
            }
        }
        Ok(out)
    }

    /// Reaps expired leases of every shard, up to `limit` each, in one round
    /// trip.
    pub(crate) fn reap(
        &self,
        con: &mut Conn,
        limit: usize,
        p: RetryPolicy,
    ) -> Result<PerItem<Vec<Reaped>>, Error> {
        let calls: Vec<Req> = self
            .shards
            .iter()
            .map(|k| {
                self.call(&scripts().reap, k, true, |c| {
                    c.arg(limit)
                        .arg(p.max_attempts)
                        .arg(p.backoff_base_ms)
                        .arg(p.backoff_max_ms);
                })
            })
            .collect();
        // A reap that Redis applied is reported even when its durability
        // fell short: it happened on the master.
        Ok(con
            .run_applied(&calls)?
            .into_iter()
            .map(|(reply, _)| {
                let reply = reply?;
                let items = array(&reply)?;
                let now = int(items.first())?;
                items
                    .iter()
                    .skip(1)
                    .map(|it| {
                        let f = array(it)?;
                        Ok(Reaped {
                            id: string(f.first())?,
                            due_ms: int(f.get(1))?,
                            fence: int(f.get(2))?,
                            outcome: string(f.get(3))?,
                            at_ms: now,
                        })
                    })
                    .collect()
            })
            .collect())
    }
}

/// Marks the items at `pos` failed by `e` (one failed script call of a
/// batch).
fn fail_all<T>(out: &mut [Result<T, Error>], pos: &[usize], e: &Error) {
    let msg = e.to_string();
    for &i in pos {
        out[i] = Err(clone_error(e, &msg));
    }
}

fn array(v: &Value) -> Result<&[Value], Error> {
    match v {
        Value::Array(a) => Ok(a),
        other => Err(Error::Protocol(format!("expected an array, got {other:?}"))),
    }
}

fn int(v: Option<&Value>) -> Result<i64, Error> {
    match v {
        Some(Value::Int(i)) => Ok(*i),
        Some(Value::BulkString(b)) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .map(|f| f as i64)
            .ok_or_else(|| Error::Protocol("expected a number".into())),
        other => Err(Error::Protocol(format!(
            "expected an integer, got {other:?}"
        ))),
    }
}

/// A claimed job from its id, its record as the claim wrote it
/// (`l|fen|att|due|per|run|sl|lu|can|err|fp|fc|sch|kind`, the kind last: it
/// may hold any character) and its payload. The id and payload are taken,
/// not copied.
fn claimed_fire(
    id: Value,
    record: &Value,
    payload: Value,
    now: i64,
    shard: usize,
) -> Result<ClaimedFire, Error> {
    let bad = || Error::Protocol(format!("claim: malformed job record {record:?}"));
    let Value::BulkString(rec) = record else {
        return Err(bad());
    };
    let rec = std::str::from_utf8(rec).map_err(|_| bad())?;
    let f: Vec<&str> = rec.splitn(14, '|').collect();
    let num =
        |i: usize| -> Result<i64, Error> { f.get(i).and_then(|t| t.parse().ok()).ok_or_else(bad) };
    Ok(ClaimedFire {
        fire: Fire {
            id: owned_string(id)?,
            kind: (*f.get(13).ok_or_else(bad)?).to_owned(),
            payload: owned_string(payload)?,
            due_ms: num(3)?,
            fence: num(1)?,
            attempt: num(2)?,
            period_ms: num(4)?,
            claimed_ms: now,
            shard: shard as u32,
        },
        first_ms: num(11)?,
        schedule: (*f.get(12).ok_or_else(bad)?).to_owned(),
    })
}

/// A bulk string reply as a `String`, without copying it when it is UTF-8.
fn owned_string(v: Value) -> Result<String, Error> {
    match v {
        Value::BulkString(b) => Ok(String::from_utf8(b)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())),
        other => string(Some(&other)),
    }
}

fn string(v: Option<&Value>) -> Result<String, Error> {
    match v {
        Some(Value::BulkString(b)) => Ok(String::from_utf8_lossy(b).into_owned()),
        Some(Value::SimpleString(s)) => Ok(s.clone()),
        Some(Value::Int(i)) => Ok(i.to_string()),
        other => Err(Error::Protocol(format!("expected a string, got {other:?}"))),
    }
}

fn opt_str(v: Option<&Value>) -> Result<Option<String>, Error> {
    match v {
        None | Some(Value::Nil) => Ok(None),
        v => string(v).map(Some),
    }
}

fn status_reply(v: &Value) -> Result<(String, i64, Option<i64>), Error> {
    let a = array(v)?;
    let third = match a.get(2) {
        Some(x) => Some(int(Some(x))?),
        None => None,
    };
    Ok((string(a.first())?, int(a.get(1))?, third))
}

/// The settle script's checks of a worker's plan, against a real server
/// (feature `test-util`: `LocalRedis`).
#[cfg(all(test, feature = "test-util"))]
mod test {
    use std::time::Duration;

    use schedulers::calendar::MissedRuns;

    use super::{Op, Settled, Store};
    use crate::plan::Planned;
    use crate::store::RetryPolicy;
    use crate::{find_redis_server, Config, Job, JobInfo, JobState, LocalRedis};

    const RETRY: RetryPolicy = RetryPolicy {
        max_attempts: 3,
        backoff_base_ms: 10,
        backoff_max_ms: 40,
    };

    /// A server, or `None` outside CI when none is installed.
    fn server() -> Option<LocalRedis> {
        if find_redis_server().is_none() {
            assert!(
                std::env::var_os("CI").is_none(),
                "redis-server is not installed, and CI is set"
            );
            eprintln!("SKIPPED: redis-server not found");
            return None;
        }
        Some(LocalRedis::start().expect("start redis-server"))
    }

    /// A plan is taken only from the fire's holder, based on the fire's
    /// first claim and naming a later fire; anything else fails the call
    /// and changes nothing. A paused worker's plan, however stale its view,
    /// never lands: its fence is refused first.
    #[test]
    fn settle_takes_a_plan_only_from_the_fires_first_claim_naming_a_later_fire() {
        let Some(redis) = server() else { return };
        let store =
            Store::new(&redis.url(), Config::default().namespace("plan").shards(1)).unwrap();
        let mut con = store.conn();
        let job = Job::new("j", "k")
            .unwrap()
            .at_fixed_rate(Duration::ZERO, Duration::from_secs(1))
            .unwrap()
            .missed_runs(MissedRuns::CatchUp);
        let due = store.schedule(&mut con, &job, false).unwrap();
        let claimed = store.claim(&mut con, &[(0, 10)], 60_000).unwrap();
        let claimed = claimed.into_iter().next().unwrap().unwrap();
        let c = &claimed.fires[0];
        assert_eq!((c.fire.due_ms, c.first_ms), (due, claimed.now));
        assert!(c.schedule.starts_with('c'), "{}", c.schedule);

        let settle = |op: Op| {
            let mut con = store.conn();
            store.settle(&mut con, &[(&c.fire, &op)], RETRY).unwrap()[0]
                .as_ref()
                .map(|r| r.0.clone())
                .map_err(|e| e.to_string())
        };
        let plan = |first_ms, next_ms| {
            Op::Ack(Some(Planned {
                first_ms,
                next_ms: Some(next_ms),
            }))
        };
        let refused = [
            (plan(c.first_ms - 1, due + 1000), "not from its first claim"),
            (plan(c.first_ms, due), "is not after"),
            (Op::Ack(None), "needs its plan"),
        ];
        for (op, why) in refused {
            let e = settle(op).unwrap_err();
            assert!(e.contains(why), "{e}");
            match store.inspect(&mut con, "j").unwrap() {
                Some(JobInfo::Live {
                    state: JobState::Leased,
                    due_ms,
                    fence,
                    ..
                }) => assert_eq!((due_ms, fence), (due, c.fire.fence), "nothing changed"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            settle(plan(c.first_ms, due + 1000)),
            Ok(Settled::Next(due + 1000))
        );
        // A repeat (a lost reply) gets the first answer; a different plan
        // under the same, ended, lease changes nothing either.
        assert_eq!(
            settle(plan(c.first_ms, due + 1000)),
            Ok(Settled::Next(due + 1000))
        );
        assert_eq!(
            settle(plan(c.first_ms, due + 5000)),
            Ok(Settled::Next(due + 1000))
        );
        match store.inspect(&mut con, "j").unwrap() {
            Some(JobInfo::Live {
                state: JobState::Scheduled,
                due_ms,
                ..
            }) => assert_eq!(due_ms, due + 1000),
            other => panic!("{other:?}"),
        }
    }
}
