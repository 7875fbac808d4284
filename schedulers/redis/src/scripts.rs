//! The Lua scripts that change the schedule, and how they are sent.
//!
//! Every state change of a job is one script, so it is atomic on the Redis
//! node that owns the shard. Scripts read the time with `redis.call('TIME')`:
//! all time decisions (is a job due, has a lease expired, when does a retry
//! run) use the clock of the node that owns the shard, never a worker's.
//! Even a delay ([`Job::after`](crate::Job::after)) is turned into a due
//! time inside the schedule script, on that node's clock. Scripts are sent
//! by SHA1 with `EVALSHA`; a node that does not know one (`NOSCRIPT`: a
//! restarted, flushed or newly promoted node) gets the same call as `EVAL`.
//!
//! Calling convention: `KEYS[1..7]` are the shard's fixed keys (`idx`, `m`,
//! `d`, `l`, `dead`, `e`, `xm`); `ARGV[1]` is the shard's hash-tagged
//! prefix, `ARGV[2]` the slice length, `ARGV[3]` the tombstone retention and
//! `ARGV[4]` the outcome window, all in ms; each script's own arguments
//! follow from `ARGV[5]`. The keys a script finds on the server (the due
//! slices `claim` reads from `idx`, the slice a job is queued in, tombstone
//! sets, outcome logs) are built from the prefix: they carry the same hash
//! tag, so they live in the same Cluster slot.
//!
//! The worker's scripts work on batches: `claim` takes up to a limit of due
//! jobs, `settle` acks, fails or releases many leases, `extend` renews many,
//! each with one call per shard, and the worker pipelines the calls of all
//! shards into one round trip. Inside a script, the per-job commands are
//! variadic (`HMGET`, `HSET`, `ZADD`, `HDEL`, `ZREM`, `SADD` with every job
//! of the batch), so a batch costs a handful of commands plus the per-job
//! record handling.
//!
//! Whenever a script moves a shard's earliest run time earlier (`schedule`,
//! and every requeue: periodic next run, retry, release, reap), it publishes
//! that time on the shard's wake-up channel `<prefix>:wake`, so sleeping
//! workers learn of it at once.
//!
//! # Records
//!
//! A job's record in the `m` hash is one line of fields separated by `|`:
//! `st|fen|att|due|per|run|sl|lu|can|err|fp|fc|sch|kind` — state (`s`
//! scheduled, `l` leased, `d` dead), fencing token, attempts of this fire,
//! the fire's due time, period (0 = one-shot or calendar), the time it is
//! queued to run (due, or later for a retry), its slice, lease expiry (0 =
//! none), cancel requested while leased (0/1), whether a last error is kept
//! in the `e` hash (0/1), the id's tombstone fingerprint once a cancel has
//! asked for the job's end (else empty: a worker's settle brings it), the
//! Redis time of this fire's first claim (0 until then; kept by retries,
//! releases and reaps, reset for the next fire), the schedule beyond the
//! period (empty, or a missed-run and a panic policy, a lateness tolerance
//! and a calendar: see [`plan`](crate::plan); never a `|`), and the kind
//! (last, so it may hold any character).
//! Every decision reads and writes it with one pattern match and one
//! `string.format`: a JSON record cost about 7 µs per claim in `cjson` alone,
//! more than all the rest of the claim. A script reads and checks every
//! record it needs before its first write, so a malformed record fails the
//! call without changing anything.
//!
//! # Tombstones
//!
//! A finished or cancelled job leaves its id's 62-bit
//! [`fingerprint`](crate::keys::fingerprint), not its id, in a set of the
//! current time bucket (an eighth of the retention). A bucket's
//! fingerprints are spread over sets by linear hashing on their high bits:
//! whenever the sets would average more than 192 members with the batch
//! about to be added, one more set is split first (about half of one set's
//! members move), so every set stays below the 512
//! members Redis keeps as an `intset` (8 bytes a member), the set's key
//! (about 100 bytes) is shared by a few hundred members, and no call does
//! more than a bounded amount of moving, however fast tombstones come. A
//! new bucket starts with the sets likely needed (as many as the last bucket
//! ended with, or one per 192 jobs pending in the shard, up to 256), so the
//! tombstones of a backlog, or of a steady load that fits 256 sets, are
//! added without splits. A bucket's sets expire whole, a retention after
//! the bucket ends; nothing sweeps them. A schedule looks the fingerprint up in the set of each live
//! bucket (about ten `SISMEMBER`s).
//!
//! # Outcomes
//!
//! A lease is ended by its holder's settle or by its lapse, nothing else, and
//! its fence names it. Every end but the common one is logged under
//! `<id>|<fence>`: `NEXT:<due>`, `RETRY`, `DEAD`, `CANCELLED`, `RELEASED` in
//! the hash of the current outcome window (expiring whole after two
//! windows), a lapse in a hash of the current tombstone bucket (kept as long
//! as tombstones; lapses are rare); every applied cancel (`CANCELLED`,
//! `INFLIGHT`) under `<id>|c<token>` in the window's hash. A settle whose
//! fence no longer holds the lease answers how that lease ended: the logged
//! outcome; `STALE` for a lapse (a zombie's ack); `DONE` for an ack whose job
//! is gone with no logged end, since only that ack can have ended it (a
//! one-shot ack, the bulk of the traffic, is not logged at all); otherwise
//! `UNKNOWN` (an end older than the window). So a repeat of an applied call
//! answers what the first one did.

use std::sync::OnceLock;

use crate::conn::ScriptSrc;

/// What every script starts with: its keys, arguments, the record pattern,
/// the clock and the index repair.
const BASE: &str = r#"
local K = {idx = KEYS[1], m = KEYS[2], d = KEYS[3], l = KEYS[4], dead = KEYS[5], e = KEYS[6], xm = KEYS[7]}
local PREFIX = ARGV[1]
local SLICE_MS = tonumber(ARGV[2])
local META = '^(%a)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%-?%d+)|(%d+)|(%d)|(%d)|(%d*)|(%d+)|([^|]*)|(.*)$'
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

/// The record, tombstone, outcome and state helpers of every script but
/// `claim` (defining them costs a few microseconds per call, and `claim` is
/// the most frequent call at a paced load, so it works on the record
/// inline).
const HELPERS: &str = r#"
local TOMB_MS = tonumber(ARGV[3])
local WIN_MS = tonumber(ARGV[4])
local function fmt(n) return string.format('%d', n) end
-- A record as a table, nil if absent; a malformed one fails the call.
local function decode(id, raw)
  if not raw then return nil end
  local st, fen, att, due, per, run, sl, lu, can, err, fp, fc, sch, k = string.match(raw, META)
  if not st then error('malformed job record for ' .. id) end
  return {st = st, fen = tonumber(fen), att = tonumber(att), due = tonumber(due), per = tonumber(per),
          run = tonumber(run), sl = tonumber(sl), lu = tonumber(lu), can = tonumber(can),
          err = tonumber(err), fp = fp, fc = tonumber(fc), sch = sch, k = k}
end
local function encode(m)
  return string.format('%s|%d|%d|%d|%d|%d|%d|%d|%d|%d|%s|%d|%s|%s',
    m.st, m.fen, m.att, m.due, m.per, m.run, m.sl, m.lu, m.can, m.err, m.fp, m.fc, m.sch, m.k)
end
local function save(id, m)
  redis.call('HSET', K.m, id, encode(m))
end
local function load(id)
  return decode(id, redis.call('HGET', K.m, id))
end
-- Tombstones: buckets of TB ms; bucket b's sets expire at (b+1)*TB + TOMB_MS,
-- so the buckets that may hold live tombstones are the NB last ones. Within a
-- bucket, fingerprints are spread over sets by linear hashing on their high
-- bits (hi = fp / 2^42): with n sets per level and s of them split, set
-- hi % n, or hi % 2n if that is below s. One set is split (about half its
-- members move to set s + n) whenever a batch would take the sets' average
-- over 192 members, so
-- each stays under the 512 of an intset and the work per call is bounded.
local TB = math.floor(TOMB_MS / 8)
if TB < 1 then TB = 1 end
local NB = math.floor(TOMB_MS / TB) + 2
local HI = 4398046511104
local TOMB_SETS = 256
local function taddr(fp, n, s)
  local hi = math.floor(tonumber(fp) / HI)
  local a = hi % n
  if a < s then a = hi % (2 * n) end
  return a
end
local function tkey(b, a)
  return PREFIX .. ':x:' .. fmt(b) .. ':' .. fmt(a)
end
local function tomb_add(now, fps)
  if #fps == 0 then return end
  local b = math.floor(now / TB)
  local fb = fmt(b)
  local st = redis.call('HMGET', K.xm, 'n:' .. fb, 's:' .. fb, 'c:' .. fb)
  local n, s, c = tonumber(st[1]), tonumber(st[2]) or 0, tonumber(st[3]) or 0
  local at = (b + 1) * TB + TOMB_MS
  if not n then
    -- A new bucket: forget the bookkeeping of long-expired ones, and let
    -- the whole hash expire if the shard falls idle.
    for j = b - NB - 4, b - NB - 1 do
      redis.call('HDEL', K.xm, 'n:' .. fmt(j), 's:' .. fmt(j), 'c:' .. fmt(j))
    end
    redis.call('PEXPIRE', K.xm, TOMB_MS + 4 * TB)
    -- Sized for what is likely to come: as many sets as the last bucket
    -- ended with, or one per 192 jobs pending in the shard, rounded up to
    -- a power of two, at most TOMB_SETS. So the tombstones of a backlog
    -- need no splits (a split reads a set and moves half of it, about
    -- 0.5 µs a tombstone when a bucket grows from one set).
    local last = redis.call('HMGET', K.xm, 'n:' .. fmt(b - 1), 's:' .. fmt(b - 1))
    local want = math.max((tonumber(last[1]) or 0) + (tonumber(last[2]) or 0),
                          redis.call('HLEN', K.m) / 192)
    n = 1
    while n < want and n < TOMB_SETS do n = n * 2 end
    -- Every set is made with the sentinel 0 (no fingerprint is 0) and its
    -- expiry, here or at its split, so adding to one needs no PEXPIREAT.
    for a = 0, n - 1 do
      redis.call('SADD', tkey(b, a), '0')
      redis.call('PEXPIREAT', tkey(b, a), at)
    end
  end
  -- Split before adding, for the batch as well: added first, a large
  -- batch (slow settles carry more) could take a set past the 512
  -- members of an intset, and a set never converts back.
  while c + #fps > 192 * (n + s) do
    local old, new = tkey(b, s), tkey(b, s + n)
    local move = {}
    for _, fp in ipairs(redis.call('SMEMBERS', old)) do
      if math.floor(tonumber(fp) / HI) % (2 * n) == s + n then move[#move + 1] = fp end
    end
    redis.call('SADD', new, '0', unpack(move))
    redis.call('PEXPIREAT', new, at)
    if #move > 0 then redis.call('SREM', old, unpack(move)) end
    s = s + 1
    if s == n then n = 2 * n; s = 0 end
  end
  -- Grouped by set number, each set's key built once (tkey's text, with
  -- the bucket's part formatted once for the batch).
  local groups = {}
  for _, fp in ipairs(fps) do
    local a = taddr(fp, n, s)
    local g = groups[a]
    if not g then g = {}; groups[a] = g end
    g[#g + 1] = fp
  end
  local base = PREFIX .. ':x:' .. fb .. ':'
  for a, g in pairs(groups) do
    c = c + redis.call('SADD', base .. fmt(a), unpack(g))
  end
  redis.call('HSET', K.xm, 'n:' .. fb, n, 's:' .. fb, s, 'c:' .. fb, c)
end
-- When the tombstone of fp expires, or nil if there is none.
local function tomb_until(now, fp)
  local b = math.floor(now / TB)
  local fields = {}
  for j = b - NB + 1, b do
    fields[#fields + 1] = 'n:' .. fmt(j); fields[#fields + 1] = 's:' .. fmt(j)
  end
  local st = redis.call('HMGET', K.xm, unpack(fields))
  for i = NB, 1, -1 do
    local n = tonumber(st[2 * i - 1])
    if n then
      local j = b - NB + i
      if redis.call('SISMEMBER', tkey(j, taddr(fp, n, tonumber(st[2 * i]) or 0)), fp) == 1 then
        return (j + 1) * TB + TOMB_MS
      end
    end
  end
  return nil
end
-- Outcomes, in hashes of WIN_MS that expire two windows after they open.
-- A lapsed lease (LOST) is kept as long as a tombstone instead, in hashes
-- of the tombstone buckets: a one-shot ack (DONE) is not logged at all, it
-- is told from what is left (see SETTLE).
local function log_key(w) return PREFIX .. ':o:' .. fmt(w) end
local function lost_put(now, kv)
  if #kv == 0 then return end
  local b = math.floor(now / TB)
  local key = PREFIX .. ':ol:' .. fmt(b)
  redis.call('HSET', key, unpack(kv))
  redis.call('PEXPIREAT', key, (b + 1) * TB + TOMB_MS)
end
local function lost_get(now, field)
  local b = math.floor(now / TB)
  for j = b, b - NB + 1, -1 do
    if redis.call('HEXISTS', PREFIX .. ':ol:' .. fmt(j), field) == 1 then return true end
  end
  return false
end
local function log_put(now, kv)
  if #kv == 0 then return end
  local w = math.floor(now / WIN_MS)
  redis.call('HSET', log_key(w), unpack(kv))
  redis.call('PEXPIREAT', log_key(w), (w + 2) * WIN_MS)
end
local function log_get(now, field)
  local w = math.floor(now / WIN_MS)
  return redis.call('HGET', log_key(w), field) or redis.call('HGET', log_key(w - 1), field)
end
-- Announces `run` on the wake-up channel if it is earlier than the shard's
-- earliest run time (call it before adding `run` to idx).
local function hint(run)
  local head = redis.call('ZRANGE', K.idx, 0, 0, 'WITHSCORES')
  if #head == 0 or tonumber(head[2]) > run then
    redis.call('PUBLISH', PREFIX .. ':wake', fmt(run))
  end
end
local function enqueue(id, m, run)
  local sl = math.floor(run / SLICE_MS)
  m.st = 's'; m.run = run; m.sl = sl; m.lu = 0
  save(id, m)
  redis.call('ZADD', PREFIX .. ':s:' .. fmt(sl), run, id)
  hint(run)
  redis.call('ZADD', K.idx, 'LT', run, fmt(sl))
end
local function set_error(id, m, reason)
  redis.call('HSET', K.e, id, reason)
  m.err = 1
end
local function clear_error(id, m)
  if m.err == 1 then redis.call('HDEL', K.e, id) end
  m.err = 0
end
local function finish(id, m, now)
  clear_error(id, m)
  redis.call('HDEL', K.m, id)
  redis.call('HDEL', K.d, id)
  redis.call('ZREM', K.l, id)
  redis.call('ZREM', K.dead, id)
  if m.fp ~= '' then tomb_add(now, {m.fp}) end
end
-- Periodic jobs. A planned one (a missed-run policy chosen, or a calendar:
-- `sch` starts with a policy letter) gets its next due time from the
-- worker that holds the lease, as `<first>:<next>` (`plan`): the worker
-- computed it from this record alone. A coalescing fixed-rate job moves
-- to the first point of its grid after now.
local function planned(m)
  local c = string.sub(m.sch, 1, 1)
  return c ~= '' and c ~= '-'
end
local function periodic(m) return m.per > 0 or planned(m) end
-- A plan, checked: it must be based on this fire's first claim, and name a
-- next due time later than this fire (so fire ids only grow) or -1 (no
-- fire left). Returns the next due time, nil for none, false for no plan
-- (a failure the worker could not plan). A bad plan fails the call; call
-- it before any write.
local function plan_of(id, m, plan)
  if plan == '' then return false end
  local b, n = string.match(plan, '^(%d+):(%-?%d+)$')
  if not b then error('settle of ' .. id .. ': malformed plan ' .. plan) end
  if tonumber(b) ~= m.fc then
    error('settle of ' .. id .. ': planned from ' .. b .. ', not from its first claim ' .. fmt(m.fc))
  end
  n = tonumber(n)
  if n < 0 then return nil end
  if n <= m.due then
    error('settle of ' .. id .. ': next due ' .. fmt(n) .. ' is not after ' .. fmt(m.due))
  end
  return n
end
-- The next due time, nil when the job has no fire left: the checked plan
-- (`m.nx`, see SETTLE) or the coalescing rule.
local function next_due(m, now)
  if planned(m) then return m.nx end
  local k = math.floor((now - m.due) / m.per) + 1
  if k < 1 then k = 1 end
  return m.due + k * m.per
end
local function to_next(id, m, nxt)
  redis.call('ZREM', K.l, id)
  m.due = nxt; m.att = 0; m.fc = 0
  enqueue(id, m, nxt)
end
-- After a failed or lost attempt: cancelled jobs end, exhausted ones go to
-- the dead-letter set, the rest run again after an exponential backoff.
-- For a failure the worker `reported` (not a lapse), a periodic job with
-- OnPanic::Continue (`sch`'s second letter `c`) gives up an exhausted fire
-- and goes on to its next one, if it has one to go to. Returns the
-- status, and the next due time for `NEXT`.
local function retry_or_dead(id, m, now, maxatt, base, cap, reason, reported)
  redis.call('ZREM', K.l, id)
  if m.can == 1 then
    finish(id, m, now)
    return 'CANCELLED'
  end
  set_error(id, m, reason)
  if m.att >= maxatt then
    if reported and string.sub(m.sch, 2, 2) == 'c' and m.nx ~= false then
      local nxt = next_due(m, now)
      if not nxt then
        finish(id, m, now)
        return 'DONE'
      end
      to_next(id, m, nxt)
      return 'NEXT', nxt
    end
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
-- A lease that lapsed: logged as lost (`losts` collects the fields for
-- lost_put), the fence moves on, the job is retried (or dead-lettered, or
-- ends if cancelled).
local function lose(id, m, now, maxatt, base, cap, losts)
  losts[#losts + 1] = id .. '|' .. fmt(m.fen); losts[#losts + 1] = '1'
  m.fen = m.fen + 1
  return retry_or_dead(id, m, now, maxatt, base, cap, 'lease expired', false)
end
-- The records of `ids`, decoded, all checked before any write.
local function load_all(ids)
  local raws = redis.call('HMGET', K.m, unpack(ids))
  local ms = {}
  for j, id in ipairs(ids) do ms[j] = decode(id, raws[j]) or false end
  return ms
end
"#;

/// schedule: ARGV from 5: id, kind, payload, `a` (absolute due) or `r`
/// (delay from now on this node's clock), the due time or delay, period,
/// fingerprint, `1` if this call repeats one that may have been applied,
/// the schedule (`sch`). Replies {status, now, due}: `OK` (stored; or, for
/// a repeat, found stored with the same kind, period, schedule and payload:
/// by the first attempt), `EXISTS` or `TOMBSTONE`.
const SCHEDULE: &str = r#"
local now = now_ms()
local id = ARGV[5]
local raw = redis.call('HGET', K.m, id)
if raw then
  local m = decode(id, raw)
  if ARGV[12] == '1' and m.k == ARGV[6] and m.per == tonumber(ARGV[10]) and m.sch == ARGV[13]
      and redis.call('HGET', K.d, id) == ARGV[7] then
    return {'OK', now, m.due}
  end
  return {'EXISTS', now, 0}
end
if tomb_until(now, ARGV[11]) then return {'TOMBSTONE', now, 0} end
local due = tonumber(ARGV[9])
if ARGV[8] == 'r' then due = now + due end
local sl = math.floor(due / SLICE_MS)
save(id, {st = 's', fen = 0, att = 0, due = due, per = tonumber(ARGV[10]), run = due,
          sl = sl, lu = 0, can = 0, err = 0, fp = '', fc = 0, sch = ARGV[13], k = ARGV[6]})
redis.call('HSET', K.d, id, ARGV[7])
redis.call('ZADD', PREFIX .. ':s:' .. fmt(sl), due, id)
hint(due)
redis.call('ZADD', K.idx, 'LT', due, fmt(sl))
return {'OK', now, due}
"#;

/// claim: ARGV from 5: limit, lease_ms. Takes up to `limit` due jobs,
/// oldest first, from the due slices of idx. Replies {now, earliest run
/// time left in the shard or -1, then id, record, payload of each job,
/// flat}: the record as just written (leased, with its new fence and
/// attempt, and `now` as its first claim if this is the fire's first),
/// which carries the kind, due time, period and schedule too. A table per
/// job cost about 0.2 µs of the claim's 4.7 to build and encode; seven
/// values per job cost the worker's claimer, which parses the reply while
/// Redis waits for its next claim, twice what three do.
const CLAIM: &str = r#"
local now = now_ms()
local nows = string.format('%d', now)
local limit = tonumber(ARGV[5])
local lu = now + tonumber(ARGV[6])
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
        local st, fen, att, due, per, run, rsl, _, can, err, fp, fc, sch, k = string.match(metas[j], META)
        if not st then error('malformed job record for ' .. id) end
        if st == 's' then
          fen = tonumber(fen) + 1; att = tonumber(att) + 1
          -- The first claim of a fire fixes the time a worker plans it from.
          if fc == '0' then fc = nows end
          local rec = string.format('l|%d|%d|%s|%s|%s|%s|%d|%s|%s|%s|%s|%s|%s', fen, att, due, per, run, rsl, lu, can, err, fp, fc, sch, k)
          hs[#hs + 1] = id; hs[#hs + 1] = rec
          zs[#zs + 1] = lu; zs[#zs + 1] = id
          local o = #out
          out[o + 1] = id; out[o + 2] = rec; out[o + 3] = pays[j] or 'null'
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

/// extend: ARGV from 5: lease_ms, maxatt, base, cap, then {id, fence} per
/// lease. A lease that lapsed is reaped here instead. Replies {now, new
/// expiry, {positions (from 1) of the refused leases}}.
const EXTEND: &str = r#"
local now = now_ms()
local lu = now + tonumber(ARGV[5])
local maxatt, base, cap = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local ids = {}
for i = 9, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local lost = {}
if #ids == 0 then return {now, lu, lost} end
local ms = load_all(ids)
local hs, zs, logs = {}, {}, {}
for j, id in ipairs(ids) do
  local m = ms[j]
  if m and m.st == 'l' and m.fen == tonumber(ARGV[8 + 2 * j]) then
    if m.lu < now then
      lose(id, m, now, maxatt, base, cap, logs)
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
lost_put(now, logs)
return {now, lu, lost}
"#;

/// settle: ends leases. ARGV from 5: maxatt, base, cap, the number of acks,
/// then {id, fence, fingerprint} per ack (the run succeeded) of a job the
/// worker did not plan, then {id, fence, fingerprint, op, plan, reason}
/// per other lease, op `a` (ack of a planned job), `f` (fail: retry after
/// a backoff or dead-letter), `r` (release a job never started, at
/// shutdown: not an attempt) or `k` (skip: a missed-run policy runs
/// nothing for this fire), plan `<first>:<next>` for a planned job (see
/// [`plan`](crate::plan)) or empty. Only the holder of the lease (same
/// fence, lease not lapsed) settles; a lapsed lease is reaped here.
/// One-shot acks are deleted and tombstoned together; a periodic job moves
/// to its next fire: the plan's, checked (based on this fire's first claim,
/// later than this fire; else the call fails), or for a coalescing
/// fixed-rate job the first point of its grid after now. A fence that no
/// longer holds its lease gets the logged outcome of that lease (a repeat
/// of an applied call gets the original outcome). Replies {now, status...}
/// in the order of the items, each status as the outcome log writes it:
/// `DONE`, `NEXT:<next due>`, `RETRY`, `DEAD`, `CANCELLED`, `RELEASED`,
/// `STALE` (the lease was lost) or `UNKNOWN` (the lease ended more than an
/// outcome window ago). Flat, one string a lease: a table a lease cost the
/// bulk of the traffic, one-shot acks, a table each to build and to
/// encode.
const SETTLE: &str = r#"
local now = now_ms()
local maxatt, base, cap = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local ids, fences, fpa, ops, plans, reasons = {}, {}, {}, {}, {}, {}
local i = 9
for j = 1, tonumber(ARGV[8]) do
  ids[j] = ARGV[i]; fences[j] = ARGV[i + 1]; fpa[j] = ARGV[i + 2]; ops[j] = 'a'; plans[j] = ''
  i = i + 3
end
local acks = #ids
while i <= #ARGV do
  local j = #ids + 1
  ids[j] = ARGV[i]; fences[j] = ARGV[i + 1]; fpa[j] = ARGV[i + 2]; ops[j] = ARGV[i + 3]
  plans[j] = ARGV[i + 4]; reasons[j] = ARGV[i + 5]
  i = i + 6
end
local out = {now}
if #ids == 0 then return out end
local raws = redis.call('HMGET', K.m, unpack(ids))
-- Read and check every record before any write. The bulk of the traffic,
-- a one-shot ack by the lease's holder, is recognised from the matched
-- text alone (no period, no schedule); everything else is decoded.
local ACK = '^l|(%d+)|%d+|%d+|(%d+)|%d+|%-?%d+|(%d+)|(%d)|(%d)|%d*|%d+|([^|]?)'
local fast, ms = {}, {}
for j, id in ipairs(ids) do
  local raw = raws[j]
  if raw and j <= acks then
    local fen, per, lu, can, err, sch = string.match(raw, ACK)
    if fen == fences[j] and tonumber(lu) >= now and ((per == '0' and sch == '') or can == '1') then
      fast[j] = tonumber(err)
    end
  end
  if not fast[j] then
    local m = decode(id, raw) or false
    if m then
      m.fp = fpa[j]
      -- The plan of a planned job's lease, checked now, before any write.
      if planned(m) and m.st == 'l' and m.fen == tonumber(fences[j]) and ops[j] ~= 'r' then
        m.nx = plan_of(id, m, plans[j])
        if m.nx == false and ops[j] ~= 'f' then
          error('settle of ' .. id .. ': a planned job needs its plan')
        end
      end
    end
    ms[j] = m
  end
end
local done, fps, errs, logs, losts = {}, {}, {}, {}, {}
local function done_with(id, err, fp)
  done[#done + 1] = id
  fps[#fps + 1] = fp
  if err == 1 then errs[#errs + 1] = id end
end
-- Every lease but a fast ack: what happens to it, logged unless it is a
-- one-shot ack; returns the outcome as the log writes it.
local function settle_one(j, id)
  local op, m = ops[j], ms[j]
  local status, nxt = 'STALE', 0
  local key = id .. '|' .. fences[j]
  if m and m.st == 'l' and m.fen == tonumber(fences[j]) then
    if op == 'r' then
      redis.call('ZREM', K.l, id)
      if m.can == 1 then
        finish(id, m, now)
        status = 'CANCELLED'
      else
        m.fen = m.fen + 1
        m.att = m.att - 1
        enqueue(id, m, m.run)
        status = 'RELEASED'
      end
    elseif m.lu < now then
      -- The lease lapsed first: the job is someone else's to run.
      lose(id, m, now, maxatt, base, cap, losts)
      key = nil
    elseif op == 'f' then
      status, nxt = retry_or_dead(id, m, now, maxatt, base, cap, reasons[j], true)
    elseif m.can == 1 or not periodic(m) then
      done_with(id, m.err, m.fp)
      status = 'DONE'
    else
      -- An ack, or a skip: the job moves on to its next fire, if any.
      nxt = next_due(m, now)
      clear_error(id, m)
      if nxt then
        to_next(id, m, nxt)
        status = 'NEXT'
      else
        done_with(id, 0, m.fp)
        status = 'DONE'
      end
    end
  else
    -- This fence's lease has ended: answer how. Every end but a one-shot
    -- ack is logged (a lapse for as long as a tombstone), so an ack whose
    -- job is gone and whose end is not logged was this ack.
    local prior = log_get(now, key)
    if prior then
      local s, t = string.match(prior, '^(%u+):?(%d*)$')
      status, nxt = s or 'UNKNOWN', tonumber(t) or 0
    elseif lost_get(now, key) then
      status = 'STALE'
    elseif op == 'a' and not raws[j] then
      status = 'DONE'
    else
      status = 'UNKNOWN'
    end
    key = nil
  end
  -- An ack's DONE is told from what is left (see above); other ends are
  -- logged.
  if status == 'DONE' and op == 'a' then key = nil end
  local said = (status == 'NEXT') and ('NEXT:' .. fmt(nxt)) or status
  if key then
    logs[#logs + 1] = key
    logs[#logs + 1] = said
  end
  return said
end
for j, id in ipairs(ids) do
  if fast[j] then
    done_with(id, fast[j], fpa[j])
    out[#out + 1] = 'DONE'
  else
    out[#out + 1] = settle_one(j, id)
  end
end
if #done > 0 then
  redis.call('HDEL', K.m, unpack(done))
  redis.call('HDEL', K.d, unpack(done))
  redis.call('ZREM', K.l, unpack(done))
  tomb_add(now, fps)
  if #errs > 0 then redis.call('HDEL', K.e, unpack(errs)) end
end
log_put(now, logs)
lost_put(now, losts)
return out
"#;

/// reap: ARGV from 5: limit, maxatt, base, cap. Replies {now, {id, due,
/// lost fence, outcome}...}.
const REAP: &str = r#"
local now = now_ms()
local maxatt, base, cap = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local out = {now}
local ids = redis.call('ZRANGE', K.l, '-inf', '(' .. fmt(now), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[5]))
if #ids > 0 then
  local ms = load_all(ids)
  local logs = {}
  for j, id in ipairs(ids) do
    local m = ms[j]
    if m and m.st == 'l' then
      local fence = m.fen
      local r = lose(id, m, now, maxatt, base, cap, logs)
      out[#out + 1] = {id, m.due, fence, r}
    else
      redis.call('ZREM', K.l, id)
    end
  end
  lost_put(now, logs)
end
return out
"#;

/// cancel: ARGV from 5: id, token, fingerprint (kept in the record of a
/// job cancelled in flight, for the tombstone its end leaves). Replies {'CANCELLED' |
/// 'INFLIGHT' | 'GONE' | 'NOTFOUND', now}. An applied cancel is logged
/// under its token, so a repeat of the call gets the same answer.
const CANCEL: &str = r#"
local now = now_ms()
local id, tok = ARGV[5], ARGV[6]
local lkey = id .. '|c' .. tok
if tok ~= '' then
  local prior = log_get(now, lkey)
  if prior then return {prior, now} end
end
local m = load(id)
local status
if m then m.fp = ARGV[7] end
if not m then
  if tomb_until(now, ARGV[7]) then status = 'GONE' else status = 'NOTFOUND' end
  return {status, now}
elseif m.st == 's' then
  local sl = fmt(m.sl)
  local sk = PREFIX .. ':s:' .. sl
  redis.call('ZREM', sk, id)
  repair_idx(sk, sl)
  finish(id, m, now)
  status = 'CANCELLED'
elseif m.st == 'l' then
  m.can = 1
  save(id, m)
  status = 'INFLIGHT'
else
  finish(id, m, now)
  status = 'CANCELLED'
end
if tok ~= '' then log_put(now, {lkey, status}) end
return {status, now}
"#;

/// inspect: ARGV from 5: id, fingerprint. Replies {now, the record as JSON
/// (`k`, `due`, `per`, `att`, `fen`, `st`, `run`, `sl`, `lu` if leased,
/// `can`, `err` text if any) or false, payload or false, tombstone expiry or
/// false}.
const INSPECT: &str = r#"
local now = now_ms()
local id = ARGV[5]
local m = load(id)
local json = false
if m then
  if m.lu == 0 then m.lu = nil end
  if m.err == 1 then m.err = redis.call('HGET', K.e, id) else m.err = nil end
  m.fp = nil
  json = cjson.encode(m)
end
local tomb = false
if not m then tomb = tomb_until(now, ARGV[6]) or false end
return {now, json, redis.call('HGET', K.d, id), tomb}
"#;

/// The compiled script set.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) schedule: ScriptSrc,
    pub(crate) claim: ScriptSrc,
    pub(crate) extend: ScriptSrc,
    pub(crate) settle: ScriptSrc,
    pub(crate) reap: ScriptSrc,
    pub(crate) cancel: ScriptSrc,
    pub(crate) inspect: ScriptSrc,
}

/// The scripts, built once per process (building one hashes its source).
pub(crate) fn scripts() -> &'static Scripts {
    static S: OnceLock<Scripts> = OnceLock::new();
    S.get_or_init(|| {
        let s = |body: &str| ScriptSrc::new(format!("{BASE}{HELPERS}{body}"));
        Scripts {
            schedule: s(SCHEDULE),
            claim: ScriptSrc::new(format!("{BASE}{CLAIM}")),
            extend: s(EXTEND),
            settle: s(SETTLE),
            reap: s(REAP),
            cancel: s(CANCEL),
            inspect: s(INSPECT),
        }
    })
}
