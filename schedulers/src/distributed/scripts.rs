//! The Lua scripts that change the schedule, and how they are sent.
//!
//! Every state change of a job is one script, so it is atomic on the Redis
//! node that owns the shard. Scripts read the time with `redis.call('TIME')`:
//! all time decisions (is a job due, has a lease expired, when does a retry
//! run) use the Redis server's clock, never a worker's. Scripts are sent by
//! SHA1 with `EVALSHA`; on `NOSCRIPT` (a restarted or flushed server) the
//! source is loaded once and the call repeated ([`redis::Script`] does this).
//!
//! Calling convention: `KEYS[1..6]` are the shard's fixed keys (`idx`, `m`,
//! `d`, `l`, `x`, `dead`), `ARGV[1]` is the shard's hash-tagged prefix and
//! `ARGV[2]` the slice length in ms. `schedule` and `claim` also pass the
//! slice keys they touch in `KEYS[7..]`. The scripts that move a job to a
//! slice chosen by the server's clock (`ack` of a periodic job, retries,
//! `release`) build that slice key from the prefix: it carries the same hash
//! tag, so it lives in the same Cluster slot.
//!
//! Job meta is a JSON object in the `m` hash: `k` kind, `due` the fire's due
//! time, `per` period (0 = one-shot), `att` attempts of this fire, `fen`
//! fencing token, `st` state (`s` scheduled, `l` leased, `d` dead), `run` the
//! time the job is queued to run (due, or later for a retry), `sl` its slice,
//! `lu` lease expiry, `can` cancel requested while leased, `err` last error.

use std::sync::OnceLock;

/// Helpers shared by every script (prepended to each).
const PRELUDE: &str = r#"
local K = {idx = KEYS[1], m = KEYS[2], d = KEYS[3], l = KEYS[4], x = KEYS[5], dead = KEYS[6]}
local PREFIX = ARGV[1]
local SLICE_MS = tonumber(ARGV[2])
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function save(id, m)
  redis.call('HSET', K.m, id, cjson.encode(m))
end
local function load(id)
  local raw = redis.call('HGET', K.m, id)
  if not raw then return nil end
  return cjson.decode(raw)
end
local function repair_idx(sk, sl)
  local first = redis.call('ZRANGE', sk, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', K.idx, sl)
  else
    redis.call('ZADD', K.idx, first[2], sl)
  end
end
local function enqueue(id, m, run)
  local sl = math.floor(run / SLICE_MS)
  m.st = 's'; m.run = run; m.sl = sl; m.lu = nil; m.w = nil
  save(id, m)
  redis.call('ZADD', PREFIX .. ':s:' .. string.format('%d', sl), run, id)
  redis.call('ZADD', K.idx, 'LT', run, string.format('%d', sl))
end
local function finish(id, now, ttl)
  redis.call('HDEL', K.m, id)
  redis.call('HDEL', K.d, id)
  redis.call('ZREM', K.l, id)
  redis.call('ZREM', K.dead, id)
  redis.call('ZADD', K.x, now + ttl, id)
end
-- After a failed or lost attempt: cancelled jobs end, exhausted ones go to
-- the dead-letter set, the rest run again after an exponential backoff.
local function retry_or_dead(id, m, now, ttl, maxatt, base, cap, reason)
  redis.call('ZREM', K.l, id)
  if m.can == 1 then
    finish(id, now, ttl)
    return 'CANCELLED'
  end
  m.err = reason
  if m.att >= maxatt then
    m.st = 'd'; m.lu = nil; m.w = nil
    save(id, m)
    redis.call('ZADD', K.dead, now, id)
    return 'DEAD'
  end
  local back = base * math.pow(2, m.att - 1)
  if back > cap then back = cap end
  enqueue(id, m, now + math.floor(back))
  return 'RETRY'
end
-- Checks that the caller still holds the lease with this fence. A lease
-- that has lapsed but was not reaped yet is reaped here, so a stalled
-- holder can never ack or extend after its lease time.
local function holder(id, fence, now, ttl, maxatt, base, cap)
  local m = load(id)
  if not m or m.st ~= 'l' or m.fen ~= fence then return nil end
  if m.lu < now then
    m.fen = m.fen + 1
    retry_or_dead(id, m, now, ttl, maxatt, base, cap, 'lease expired')
    return nil
  end
  return m
end
"#;

/// schedule: KEYS[7] = slice key; ARGV: prefix, slice_ms, id, kind, payload,
/// due, period, slice number. Replies {status, now}.
const SCHEDULE: &str = r#"
local now = now_ms()
local id = ARGV[3]
if redis.call('HEXISTS', K.m, id) == 1 then return {'EXISTS', now} end
local tomb = redis.call('ZSCORE', K.x, id)
if tomb then
  if tonumber(tomb) > now then return {'TOMBSTONE', now} end
  redis.call('ZREM', K.x, id)
end
local due = tonumber(ARGV[6])
local m = {k = ARGV[4], due = due, per = tonumber(ARGV[7]), att = 0, fen = 0, st = 's',
           run = due, sl = tonumber(ARGV[8]), can = 0}
save(id, m)
redis.call('HSET', K.d, id, ARGV[5])
redis.call('ZADD', KEYS[7], due, id)
redis.call('ZADD', K.idx, 'LT', due, ARGV[8])
return {'OK', now}
"#;

/// claim: KEYS[7..] slice keys in idx order; ARGV: prefix, slice_ms, limit,
/// lease_ms, worker, then the slice numbers of KEYS[7..]. Replies {now,
/// head or -1, {id, kind, payload, due, fence, attempt, period, lease}...}.
const CLAIM: &str = r#"
local now = now_ms()
local limit = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local out = {now, -1}
local n = 0
for i = 7, #KEYS do
  if n >= limit then break end
  local sk = KEYS[i]
  local sl = ARGV[i - 1]
  local ids = redis.call('ZRANGE', sk, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit - n)
  for _, id in ipairs(ids) do
    redis.call('ZREM', sk, id)
    local m = load(id)
    if m and m.st == 's' then
      m.fen = m.fen + 1; m.att = m.att + 1; m.st = 'l'; m.lu = now + lease; m.w = ARGV[5]
      save(id, m)
      redis.call('ZADD', K.l, m.lu, id)
      local payload = redis.call('HGET', K.d, id) or 'null'
      out[#out + 1] = {id, m.k, payload, m.due, m.fen, m.att, m.per, m.lu}
      n = n + 1
    end
  end
  repair_idx(sk, sl)
end
local head = redis.call('ZRANGE', K.idx, 0, 0, 'WITHSCORES')
if #head > 0 then out[2] = tonumber(head[2]) end
return out
"#;

/// extend: ARGV: prefix, slice_ms, id, fence, lease_ms, ttl, maxatt, base,
/// cap. Replies {'OK', now, lease} or {'STALE', now}.
const EXTEND: &str = r#"
local now = now_ms()
local id = ARGV[3]
local m = holder(id, tonumber(ARGV[4]), now, tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]))
if not m then return {'STALE', now} end
m.lu = now + tonumber(ARGV[5])
save(id, m)
redis.call('ZADD', K.l, 'XX', 'GT', m.lu, id)
return {'OK', now, m.lu}
"#;

/// ack: ARGV: prefix, slice_ms, id, fence, ttl, maxatt, base, cap. Replies
/// {'DONE', now}, {'NEXT', now, next_due} or {'STALE', now}.
const ACK: &str = r#"
local now = now_ms()
local id = ARGV[3]
local ttl = tonumber(ARGV[5])
local m = holder(id, tonumber(ARGV[4]), now, ttl, tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]))
if not m then return {'STALE', now} end
redis.call('ZREM', K.l, id)
if m.can == 1 or m.per == 0 then
  finish(id, now, ttl)
  return {'DONE', now}
end
-- Fixed rate on the original grid; runs missed while late are coalesced.
local k = math.floor((now - m.due) / m.per) + 1
if k < 1 then k = 1 end
m.due = m.due + k * m.per
m.att = 0; m.err = nil
enqueue(id, m, m.due)
return {'NEXT', now, m.due}
"#;

/// fail: ARGV: prefix, slice_ms, id, fence, ttl, maxatt, base, cap, reason.
/// Replies {'RETRY'|'DEAD'|'CANCELLED'|'STALE', now}.
const FAIL: &str = r#"
local now = now_ms()
local id = ARGV[3]
local ttl, maxatt, base, cap = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local m = holder(id, tonumber(ARGV[4]), now, ttl, maxatt, base, cap)
if not m then return {'STALE', now} end
return {retry_or_dead(id, m, now, ttl, maxatt, base, cap, ARGV[9]), now}
"#;

/// release (a claimed job that was never started, at shutdown): ARGV:
/// prefix, slice_ms, id, fence, ttl. The attempt is not counted. Replies
/// {'RELEASED'|'CANCELLED'|'STALE', now}.
const RELEASE: &str = r#"
local now = now_ms()
local id = ARGV[3]
local m = load(id)
if not m or m.st ~= 'l' or m.fen ~= tonumber(ARGV[4]) then return {'STALE', now} end
redis.call('ZREM', K.l, id)
if m.can == 1 then
  finish(id, now, tonumber(ARGV[5]))
  return {'CANCELLED', now}
end
m.fen = m.fen + 1
m.att = m.att - 1
enqueue(id, m, m.run)
return {'RELEASED', now}
"#;

/// reap: ARGV: prefix, slice_ms, limit, ttl, maxatt, base, cap. Replies
/// {now, {id, due, lost fence, outcome}...}.
const REAP: &str = r#"
local now = now_ms()
local ttl, maxatt, base, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local out = {now}
local ids = redis.call('ZRANGE', K.l, '-inf', '(' .. string.format('%d', now), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  local m = load(id)
  if m and m.st == 'l' then
    local lost = m.fen
    m.fen = m.fen + 1
    local r = retry_or_dead(id, m, now, ttl, maxatt, base, cap, 'lease expired')
    out[#out + 1] = {id, m.due, lost, r}
  else
    redis.call('ZREM', K.l, id)
  end
end
-- Expired tombstones free their ids again.
redis.call('ZREMRANGEBYSCORE', K.x, '-inf', now)
return out
"#;

/// cancel: ARGV: prefix, slice_ms, id, ttl. Replies {'CANCELLED' |
/// 'INFLIGHT' | 'GONE' | 'NOTFOUND', now}.
const CANCEL: &str = r#"
local now = now_ms()
local id = ARGV[3]
local ttl = tonumber(ARGV[4])
local m = load(id)
if not m then
  local t = redis.call('ZSCORE', K.x, id)
  if t and tonumber(t) > now then return {'GONE', now} end
  return {'NOTFOUND', now}
end
if m.st == 's' then
  local sl = string.format('%d', m.sl)
  local sk = PREFIX .. ':s:' .. sl
  redis.call('ZREM', sk, id)
  repair_idx(sk, sl)
  finish(id, now, ttl)
  return {'CANCELLED', now}
elseif m.st == 'l' then
  m.can = 1
  save(id, m)
  return {'INFLIGHT', now}
end
finish(id, now, ttl)
return {'CANCELLED', now}
"#;

/// inspect: ARGV: prefix, slice_ms, id. Replies {now, meta or false,
/// payload or false, tombstone expiry or false}.
const INSPECT: &str = r#"
local now = now_ms()
local id = ARGV[3]
return {now, redis.call('HGET', K.m, id), redis.call('HGET', K.d, id), redis.call('ZSCORE', K.x, id)}
"#;

/// The compiled script set.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) schedule: redis::Script,
    pub(crate) claim: redis::Script,
    pub(crate) extend: redis::Script,
    pub(crate) ack: redis::Script,
    pub(crate) fail: redis::Script,
    pub(crate) release: redis::Script,
    pub(crate) reap: redis::Script,
    pub(crate) cancel: redis::Script,
    pub(crate) inspect: redis::Script,
}

/// The scripts, built once per process (building one hashes its source).
pub(crate) fn scripts() -> &'static Scripts {
    static S: OnceLock<Scripts> = OnceLock::new();
    S.get_or_init(|| {
        let s = |body: &str| redis::Script::new(&format!("{PRELUDE}{body}"));
        Scripts {
            schedule: s(SCHEDULE),
            claim: s(CLAIM),
            extend: s(EXTEND),
            ack: s(ACK),
            fail: s(FAIL),
            release: s(RELEASE),
            reap: s(REAP),
            cancel: s(CANCEL),
            inspect: s(INSPECT),
        }
    })
}
