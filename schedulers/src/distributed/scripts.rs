//! The Lua scripts that change the schedule, and how they are sent.
//!
//! Every state change of a job is one script, so it is atomic on the Redis
//! node that owns the shard. Scripts read the time with `redis.call('TIME')`:
//! all time decisions (is a job due, has a lease expired, when does a retry
//! run) use the Redis server's clock, never a worker's. Scripts are sent by
//! SHA1 with `EVALSHA`; on `NOSCRIPT` (a restarted or flushed server) the
//! source is loaded once and the call repeated ([`redis::Script`] does this).
//!
//! Calling convention: `KEYS[1..7]` are the shard's fixed keys (`idx`, `m`,
//! `d`, `l`, `x`, `dead`, `e`), `ARGV[1]` is the shard's hash-tagged prefix
//! and `ARGV[2]` the slice length in ms. `schedule` also passes the slice key
//! it writes in `KEYS[8]`. The scripts that find slices on the server
//! (`claim` reads the due ones from `idx`; the ack of a periodic job, retries
//! and releases pick one by the server's clock) build the slice key from the
//! prefix: it carries the same hash tag, so it lives in the same Cluster
//! slot.
//!
//! The worker's scripts work on batches: `claim` takes up to a limit of due
//! jobs, `settle` acks, fails or releases many leases, `extend` renews many,
//! each with one call per shard, and the worker pipelines the calls of all
//! shards into one round trip. Inside a script, the per-job commands are
//! variadic (`HMGET`, `HSET`, `ZADD`, `HDEL`, `ZREM` with every job of the
//! batch), so a batch costs a handful of commands plus the per-job record
//! handling.
//!
//! Whenever a script moves a shard's earliest run time earlier (`schedule`,
//! and every requeue: periodic next run, retry, release, reap), it publishes
//! that time on the shard's wake-up channel `<prefix>:wake`, so sleeping
//! workers learn of it at once.
//!
//! A job's record in the `m` hash is one line of fields separated by `|`:
//! `st|fen|att|due|per|run|sl|lu|can|err|kind` — state (`s` scheduled, `l`
//! leased, `d` dead), fencing token, attempts of this fire, the fire's due
//! time, period (0 = one-shot), the time it is queued to run (due, or later
//! for a retry), its slice, lease expiry (0 = none), cancel requested while
//! leased (0/1), whether a last error is kept in the `e` hash (0/1), and the
//! kind (last, so it may hold any character). Every decision reads and
//! writes it with one pattern match and one `string.format`: a JSON record
//! cost about 7 µs per claim in `cjson` alone, more than all the rest of the
//! claim. A script reads and checks every record it needs before its first
//! write, so a malformed record fails the call without changing anything.

use std::sync::OnceLock;

/// What every script starts with: its keys, arguments, the record pattern,
/// the clock and the index repair.
const BASE: &str = r#"
local K = {idx = KEYS[1], m = KEYS[2], d = KEYS[3], l = KEYS[4], x = KEYS[5], dead = KEYS[6], e = KEYS[7]}
local PREFIX = ARGV[1]
local SLICE_MS = tonumber(ARGV[2])
local META = '^(%a)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%-?%d+)|(%d+)|(%d)|(%d)|(.*)$'
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function repair_idx(sk, sl)
  local first = redis.call('ZRANGE', sk, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', K.idx, sl)
  else
    redis.call('ZADD', K.idx, first[2], sl)
  end
end
"#;

/// The record and state helpers of every script but `claim` (defining them
/// costs a few microseconds per call, and `claim` is the most frequent call
/// at a paced load, so it works on the record inline).
const HELPERS: &str = r#"
-- A record as a table, nil if absent; a malformed one fails the call.
local function decode(id, raw)
  if not raw then return nil end
  local st, fen, att, due, per, run, sl, lu, can, err, k = string.match(raw, META)
  if not st then error('malformed job record for ' .. id) end
  return {st = st, fen = tonumber(fen), att = tonumber(att), due = tonumber(due), per = tonumber(per),
          run = tonumber(run), sl = tonumber(sl), lu = tonumber(lu), can = tonumber(can),
          err = tonumber(err), k = k}
end
local function encode(m)
  return string.format('%s|%d|%d|%d|%d|%d|%d|%d|%d|%d|%s',
    m.st, m.fen, m.att, m.due, m.per, m.run, m.sl, m.lu, m.can, m.err, m.k)
end
local function save(id, m)
  redis.call('HSET', K.m, id, encode(m))
end
local function load(id)
  return decode(id, redis.call('HGET', K.m, id))
end
-- Announces `run` on the wake-up channel if it is earlier than the shard's
-- earliest run time (call it before adding `run` to idx).
local function hint(run)
  local head = redis.call('ZRANGE', K.idx, 0, 0, 'WITHSCORES')
  if #head == 0 or tonumber(head[2]) > run then
    redis.call('PUBLISH', PREFIX .. ':wake', string.format('%d', run))
  end
end
local function enqueue(id, m, run)
  local sl = math.floor(run / SLICE_MS)
  m.st = 's'; m.run = run; m.sl = sl; m.lu = 0
  save(id, m)
  redis.call('ZADD', PREFIX .. ':s:' .. string.format('%d', sl), run, id)
  hint(run)
  redis.call('ZADD', K.idx, 'LT', run, string.format('%d', sl))
end
local function set_error(id, m, reason)
  redis.call('HSET', K.e, id, reason)
  m.err = 1
end
local function clear_error(id, m)
  if m.err == 1 then redis.call('HDEL', K.e, id) end
  m.err = 0
end
local function finish(id, m, now, ttl)
  clear_error(id, m)
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
    finish(id, m, now, ttl)
    return 'CANCELLED'
  end
  set_error(id, m, reason)
  if m.att >= maxatt then
    m.st = 'd'; m.lu = 0
    save(id, m)
    redis.call('ZADD', K.dead, now, id)
    return 'DEAD'
  end
  local back = base * math.pow(2, m.att - 1)
  if back > cap then back = cap end
  enqueue(id, m, now + math.floor(back))
  return 'RETRY'
end
-- The records of `ids`, decoded, all checked before any write.
local function load_all(ids)
  local raws = redis.call('HMGET', K.m, unpack(ids))
  local ms = {}
  for j, id in ipairs(ids) do ms[j] = decode(id, raws[j]) or false end
  return ms
end
"#;

/// schedule: KEYS[8] = slice key; ARGV: prefix, slice_ms, id, kind, payload,
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
save(id, {st = 's', fen = 0, att = 0, due = due, per = tonumber(ARGV[7]), run = due,
          sl = tonumber(ARGV[8]), lu = 0, can = 0, err = 0, k = ARGV[4]})
redis.call('HSET', K.d, id, ARGV[5])
redis.call('ZADD', KEYS[8], due, id)
hint(due)
redis.call('ZADD', K.idx, 'LT', due, ARGV[8])
return {'OK', now}
"#;

/// claim: ARGV: prefix, slice_ms, limit, lease_ms. Takes up to `limit` due
/// jobs, oldest first, from the due slices of idx. Replies {now, earliest
/// run time left in the shard or -1, {id, kind, payload, due, fence,
/// attempt, period}...}.
const CLAIM: &str = r#"
local now = now_ms()
local limit = tonumber(ARGV[3])
local lu = now + tonumber(ARGV[4])
local out = {now, -1}
local n = 0
local slices = redis.call('ZRANGE', K.idx, '-inf', now, 'BYSCORE', 'LIMIT', 0, 16)
for _, sl in ipairs(slices) do
  if n >= limit then break end
  local sk = PREFIX .. ':s:' .. sl
  local ids = redis.call('ZRANGE', sk, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit - n)
  if #ids > 0 then
    local metas = redis.call('HMGET', K.m, unpack(ids))
    local pays = redis.call('HMGET', K.d, unpack(ids))
    -- The hot path works on the record's fields as matched, unchanged
    -- fields copied as text; every write comes after the loop.
    local hs, zs = {}, {}
    for j, id in ipairs(ids) do
      if metas[j] then
        local st, fen, att, due, per, run, rsl, _, can, err, k = string.match(metas[j], META)
        if not st then error('malformed job record for ' .. id) end
        if st == 's' then
          fen = tonumber(fen) + 1; att = tonumber(att) + 1
          hs[#hs + 1] = id
          hs[#hs + 1] = string.format('l|%d|%d|%s|%s|%s|%s|%d|%s|%s|%s', fen, att, due, per, run, rsl, lu, can, err, k)
          zs[#zs + 1] = lu; zs[#zs + 1] = id
          out[#out + 1] = {id, k, pays[j] or 'null', due, fen, att, per}
          n = n + 1
        end
      end
    end
    -- Everything due is at the low ranks: remove exactly what was read.
    redis.call('ZREMRANGEBYRANK', sk, 0, #ids - 1)
    if #hs > 0 then
      redis.call('HSET', K.m, unpack(hs))
      redis.call('ZADD', K.l, unpack(zs))
    end
  end
  repair_idx(sk, sl)
end
local head = redis.call('ZRANGE', K.idx, 0, 0, 'WITHSCORES')
if #head > 0 then out[2] = tonumber(head[2]) end
return out
"#;

/// extend: ARGV: prefix, slice_ms, lease_ms, ttl, maxatt, base, cap, then
/// {id, fence} per lease. A lease that lapsed is reaped here instead.
/// Replies {now, new expiry, {positions (from 1) of the refused leases}}.
const EXTEND: &str = r#"
local now = now_ms()
local lu = now + tonumber(ARGV[3])
local ttl, maxatt, base, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local ids = {}
for i = 8, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local lost = {}
if #ids == 0 then return {now, lu, lost} end
local ms = load_all(ids)
local hs, zs = {}, {}
for j, id in ipairs(ids) do
  local m = ms[j]
  if m and m.st == 'l' and m.fen == tonumber(ARGV[7 + 2 * j]) then
    if m.lu < now then
      m.fen = m.fen + 1
      retry_or_dead(id, m, now, ttl, maxatt, base, cap, 'lease expired')
      lost[#lost + 1] = j
    else
      m.lu = lu
      hs[#hs + 1] = id; hs[#hs + 1] = encode(m)
      zs[#zs + 1] = lu; zs[#zs + 1] = id
    end
  else
    lost[#lost + 1] = j
  end
end
if #hs > 0 then
  redis.call('HSET', K.m, unpack(hs))
  redis.call('ZADD', K.l, 'XX', 'GT', unpack(zs))
end
return {now, lu, lost}
"#;

/// settle: ends leases. ARGV: prefix, slice_ms, ttl, maxatt, base, cap, the
/// number of acks, then {id, fence} per ack (the run succeeded), then {id,
/// fence, op, reason} per other lease, op `f` (fail: retry after a backoff
/// or dead-letter) or `r` (release a job never started, at shutdown: not an
/// attempt). Only the holder of the lease (same fence, lease not lapsed)
/// settles; a lapsed lease is reaped here. One-shot acks are deleted and
/// tombstoned together; a periodic job moves to its next run on its
/// original grid, runs missed while late coalesced. Replies {now, {status,
/// next due or 0}...} in the order of the items: status `DONE`, `NEXT`,
/// `RETRY`, `DEAD`, `CANCELLED`, `RELEASED` or `STALE`.
const SETTLE: &str = r#"
local now = now_ms()
local ttl, maxatt, base, cap = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local ids, fences, ops, reasons = {}, {}, {}, {}
local i = 8
for j = 1, tonumber(ARGV[7]) do
  ids[j] = ARGV[i]; fences[j] = ARGV[i + 1]; ops[j] = 'a'
  i = i + 2
end
while i <= #ARGV do
  local j = #ids + 1
  ids[j] = ARGV[i]; fences[j] = ARGV[i + 1]; ops[j] = ARGV[i + 2]; reasons[j] = ARGV[i + 3]
  i = i + 4
end
local out = {now}
if #ids == 0 then return out end
local raws = redis.call('HMGET', K.m, unpack(ids))
-- Read and check every record before any write. The bulk of the traffic,
-- a one-shot ack by the lease's holder, is recognised from the matched
-- text alone; everything else is decoded.
local ACK = '^l|(%d+)|%d+|%d+|(%d+)|%d+|%-?%d+|(%d+)|(%d)|(%d)|'
local fast, ms = {}, {}
for j, id in ipairs(ids) do
  local raw = raws[j]
  if raw and ops[j] == 'a' then
    local fen, per, lu, can, err = string.match(raw, ACK)
    if fen == fences[j] and tonumber(lu) >= now and (per == '0' or can == '1') then
      fast[j] = err
    end
  end
  if not fast[j] then ms[j] = decode(id, raw) or false end
end
local done, tomb, errs = {}, {}, {}
local function done_with(id, err)
  done[#done + 1] = id
  tomb[#tomb + 1] = now + ttl; tomb[#tomb + 1] = id
  if err == 1 then errs[#errs + 1] = id end
end
for j, id in ipairs(ids) do
  local op, m = ops[j], ms[j]
  local status, nxt = 'STALE', 0
  if fast[j] then
    done_with(id, tonumber(fast[j]))
    status = 'DONE'
  elseif m and m.st == 'l' and m.fen == tonumber(fences[j]) then
    if op == 'r' then
      redis.call('ZREM', K.l, id)
      if m.can == 1 then
        finish(id, m, now, ttl)
        status = 'CANCELLED'
      else
        m.fen = m.fen + 1
        m.att = m.att - 1
        enqueue(id, m, m.run)
        status = 'RELEASED'
      end
    elseif m.lu < now then
      -- The lease lapsed first: the job is someone else's to run.
      m.fen = m.fen + 1
      retry_or_dead(id, m, now, ttl, maxatt, base, cap, 'lease expired')
    elseif op == 'f' then
      status = retry_or_dead(id, m, now, ttl, maxatt, base, cap, reasons[j])
    elseif m.can == 1 or m.per == 0 then
      done_with(id, m.err)
      status = 'DONE'
    else
      redis.call('ZREM', K.l, id)
      clear_error(id, m)
      -- Fixed rate on the original grid; runs missed while late are coalesced.
      local k = math.floor((now - m.due) / m.per) + 1
      if k < 1 then k = 1 end
      m.due = m.due + k * m.per
      m.att = 0
      enqueue(id, m, m.due)
      status, nxt = 'NEXT', m.due
    end
  end
  out[#out + 1] = {status, nxt}
end
if #done > 0 then
  redis.call('HDEL', K.m, unpack(done))
  redis.call('HDEL', K.d, unpack(done))
  redis.call('ZREM', K.l, unpack(done))
  redis.call('ZADD', K.x, unpack(tomb))
  if #errs > 0 then redis.call('HDEL', K.e, unpack(errs)) end
end
return out
"#;

/// reap: ARGV: prefix, slice_ms, limit, ttl, maxatt, base, cap. Replies
/// {now, {id, due, lost fence, outcome}...}.
const REAP: &str = r#"
local now = now_ms()
local ttl, maxatt, base, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local out = {now}
local ids = redis.call('ZRANGE', K.l, '-inf', '(' .. string.format('%d', now), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
if #ids > 0 then
  local ms = load_all(ids)
  for j, id in ipairs(ids) do
    local m = ms[j]
    if m and m.st == 'l' then
      local lost = m.fen
      m.fen = m.fen + 1
      local r = retry_or_dead(id, m, now, ttl, maxatt, base, cap, 'lease expired')
      out[#out + 1] = {id, m.due, lost, r}
    else
      redis.call('ZREM', K.l, id)
    end
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
  finish(id, m, now, ttl)
  return {'CANCELLED', now}
elseif m.st == 'l' then
  m.can = 1
  save(id, m)
  return {'INFLIGHT', now}
end
finish(id, m, now, ttl)
return {'CANCELLED', now}
"#;

/// inspect: ARGV: prefix, slice_ms, id. Replies {now, the record as JSON
/// (`k`, `due`, `per`, `att`, `fen`, `st`, `run`, `sl`, `lu` if leased,
/// `can`, `err` text if any) or false, payload or false, tombstone expiry or
/// false}.
const INSPECT: &str = r#"
local now = now_ms()
local id = ARGV[3]
local m = load(id)
local json = false
if m then
  if m.lu == 0 then m.lu = nil end
  if m.err == 1 then m.err = redis.call('HGET', K.e, id) else m.err = nil end
  json = cjson.encode(m)
end
return {now, json, redis.call('HGET', K.d, id), redis.call('ZSCORE', K.x, id)}
"#;

/// The compiled script set.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) schedule: redis::Script,
    pub(crate) claim: redis::Script,
    pub(crate) extend: redis::Script,
    pub(crate) settle: redis::Script,
    pub(crate) reap: redis::Script,
    pub(crate) cancel: redis::Script,
    pub(crate) inspect: redis::Script,
}

/// The scripts, built once per process (building one hashes its source).
pub(crate) fn scripts() -> &'static Scripts {
    static S: OnceLock<Scripts> = OnceLock::new();
    S.get_or_init(|| {
        let s = |body: &str| redis::Script::new(&format!("{BASE}{HELPERS}{body}"));
        Scripts {
            schedule: s(SCHEDULE),
            claim: redis::Script::new(&format!("{BASE}{CLAIM}")),
            extend: s(EXTEND),
            settle: s(SETTLE),
            reap: s(REAP),
            cancel: s(CANCEL),
            inspect: s(INSPECT),
        }
    })
}
