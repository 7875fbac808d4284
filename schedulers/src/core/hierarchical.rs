//! Kafka's hierarchical timing wheels with a delay queue of buckets: the
//! storage of `HierarchicalWheelTimer`.
//!
//! # How it works
//!
//! Time is cut into ticks. Level 0 has `size` buckets of one tick each;
//! level `L` has `size` buckets of `size^L` ticks (its *unit*), spanning
//! `size^(L+1)` ticks. Each level has a current time, a multiple of its unit.
//! A timer due in tick `e` goes to the finest level whose span reaches it,
//! in bucket `(e / unit) mod size`; a timer beyond the top level creates the
//! next level lazily (Kafka's `overflowWheel`). Each bucket is a list in one
//! shared slab of list nodes, and a bucket holding timers sits in a delay queue
//! (an indexed heap from the `priority-queue` crate) keyed by the earliest
//! deadline among its timers.
//!
//! [`poll`](TimerQueue::poll) flushes every bucket whose key has passed: it
//! moves the level clocks forward and re-inserts each of the bucket's timers,
//! which lands it in a finer level or, once due, in the output. Time with no
//! expiring bucket costs nothing, so a driver sleeps until
//! [`next_deadline`](TimerQueue::next_deadline) however many timers wait.
//!
//! A bucket above level 0 that received more than 256 timers is keyed
//! *ahead* of its earliest timer: by half a unit of the level below (room
//! for a driver that wakes late), or, if that is longer, by 50 ns a timer
//! (what moving one down takes a driver, with room to spare), so that its
//! cascade is over by its first deadline; but never before the level below
//! can take that timer, and a cascade too long to end in time keeps the
//! half unit, since beginning it earlier would only interleave it with the
//! runs it makes late. When its key passes, its timers move to the bucket's
//! *staging* list, and each poll moves at most 256 of them down a level
//! while the staging list keeps the queue's head (so `next_deadline` stays
//! in the past and a driver polls again at once). A cascade of 20,000
//! timers (a 400 ms bucket of 10^5 timers spread over 2 s) takes about a
//! millisecond; done in one poll at the bucket's first deadline it made
//! every timer due meanwhile that much late. If a staged timer comes due
//! before its turn, the rest of its list moves in one poll.
//!
//! A large bucket whose timers all go to one list below (a burst set for one
//! instant, whose deadlines share a tick) moves there whole instead, in O(1):
//! the bucket keeps an upper bound of its deadlines beside the lower one,
//! and if both fall in one list, so does every deadline between them. A
//! burst of 10^5 timers for one instant due 300 ms out (a level-1 bucket)
//! then comes out of a poll 1.1-1.6 ms after its deadline (the hashed
//! wheel: 0.5-1.1 ms); staged, a cascade begun half a tick ahead with a
//! millisecond or two of work, it came out after 4-6 ms (10^6: 13-20 ms,
//! against 45-83).
//!
//! A level-0 bucket (one tick) that is due in part, with exact deadlines,
//! gives out what is due and keeps the rest where it is; if its timers were
//! linked in order of deadline (a cascade moves them down in order), that
//! is a prefix, and the rest is not looked at. A burst of 10^5 timers set
//! in a loop (deadlines spread over a few milliseconds) then fires on time:
//! begun half a tick ahead, its cascade had made it 1.5-2.6 ms late.
//!
//! A smaller bucket expires at its earliest timer, as before: its cascade
//! is no longer than a chunk, and moving it ahead would cost a wake-up.
//!
//! # New timers
//!
//! A timer given by [`stage`](TimerQueue::stage) (a scheduler's new
//! one-shots) is not placed at once: it joins a staging list of new timers
//! (one push, next to the previous new timer's node), whose earliest
//! deadline counts in [`next_deadline`](TimerQueue::next_deadline), as the
//! [`HashedWheel`](super::HashedWheel)'s do. Polls place them once that
//! deadline is within the next tick; more than 256 of them, 256 a poll from
//! 50 ns a timer ahead of it, as a big bucket's cascade goes. A timer
//! removed or purged while staged (an ack or request timeout cancelled in
//! time, the common case) is never placed: no bucket, no queue update.
//!
//! # Differences from Kafka
//!
//! - **Never early.** Kafka's bucket expires at the start of its range and
//!   can run a timer up to a tick early. Here a deadline is rounded *up* to
//!   its tick, or, with [`Precision::Exact`], a timer comes due at its own
//!   deadline.
//! - **A bucket expires at its earliest timer**, not at the start of its
//!   range, so a cascade that would only move timers down a level waits for
//!   the first timer that needs it (half the wake-ups with 10^5 timers spread
//!   over an hour), and a timer an hour away wakes nobody before its hour.
//! - **Submission order within a tick**: output is sorted by tick and
//!   submission sequence; Kafka runs a bucket in list order.
//! - **Empty buckets leave the queue**, so a driver does not wake for a
//!   bucket that cancels emptied.
//! - **Cascades ahead of time, a chunk per poll** (above), where Kafka
//!   moves a whole bucket when its range starts.
//! - **New timers wait in a staging list** (above), where Kafka adds each
//!   to its bucket at once.
//!
//! # Costs
//!
//! Insert, remove and reschedule are O(1) plus an O(log b) queue update when
//! a bucket gets a new earliest timer (b ≤ levels × size buckets). A timer is
//! re-inserted once per level it descends through before it expires.

use std::cmp::Reverse;
use std::hash::{BuildHasherDefault, Hasher};

use priority_queue::PriorityQueue;

use super::due::Due;
use super::hashed_wheel::{Precision, WheelError};
use super::list::Lists;
use super::staging::Staging;
use super::{Expired, Key, TimerQueue, MOVE_CHUNK, MOVE_NS_PER_TIMER};

#[derive(Debug, Clone, Copy)]
struct Level {
    /// Ticks per bucket.
    unit: u64,
    /// The level's time: a multiple of `unit`.
    current: u64,
    /// `unit * size`, or `None` if that overflows (the level spans everything).
    interval: Option<u64>,
    /// Number of its first bucket's list; the `size` lists after the
    /// buckets are their staging lists.
    first: u32,
}

/// Hashes a bucket's list number for the delay queue. List numbers are
/// small distinct integers, so one multiply spreads them where SipHash
/// would cost more than the queue's work.
#[derive(Debug, Default)]
struct ListHasher(u64);

/// 2^64 divided by the golden ratio: Fibonacci hashing's multiplier.
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for ListHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(SPREAD);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(SPREAD);
    }
}

/// Lists (by number) keyed by when a poll should take them.
type DelayQueue = PriorityQueue<u32, Reverse<u64>, BuildHasherDefault<ListHasher>>;

/// Hierarchical timing wheels. See the [module docs](self).
///
/// # Examples
///
/// ```
/// use schedulers::core::{Expired, HierarchicalWheel, Precision, TimerQueue};
///
/// // 1 ms ticks, 20 buckets a level (Kafka's defaults), time starts at 0.
/// let mut wheels = HierarchicalWheel::new(1_000_000, 20, 0, Precision::Exact).unwrap();
/// wheels.insert(1, 3_600_000_000_000); // an hour away: a few levels up
/// wheels.insert(2, 1_500_000);
/// assert_eq!(wheels.next_deadline(), Some(1_500_000));
/// let mut due = Vec::new();
/// wheels.poll(3_600_000_000_000, &mut due);
/// assert_eq!(due.iter().map(|e| e.key).collect::<Vec<_>>(), [2, 1]);
/// ```
#[derive(Debug)]
pub struct HierarchicalWheel {
    tick: u64,
    size: u64,
    precision: Precision,
    levels: Vec<Level>,
    /// The overdue list (number 0), the new timers' staging list (1), then
    /// each level's buckets and their cascades' staging lists.
    lists: Lists,
    /// New timers not placed yet (see the [module docs](self#new-timers)).
    staging: Staging,
    /// Buckets and staging lists by when a poll should take them.
    queue: DelayQueue,
    /// A lower bound of each list's deadlines, while it is queued (or, for
    /// a staging list, not empty): read without a hash lookup on insert.
    earliest: Vec<Option<u64>>,
    /// An upper bound of each bucket's deadlines, while its `earliest` is
    /// set (a removal does not lower it).
    latest: Vec<u64>,
    /// Whether each bucket's timers were linked in order of deadline (kept
    /// beside `latest`): then a poll amid its tick stops at the first that
    /// is not due.
    ordered: Vec<bool>,
    /// Timers placed in each bucket since it was last empty: an upper bound
    /// of its length (a removal does not count down).
    placed: Vec<u32>,
    /// Scratch space for `poll`, kept to avoid an allocation per poll.
    keys: Vec<Key>,
}

/// The list of timers already due when inserted.
const OVERDUE: u32 = 0;

/// The list of new timers not placed yet.
const STAGING: u32 = 1;

impl HierarchicalWheel {
    /// Empty wheels of `size` buckets a level and `tick` nanoseconds a tick,
    /// starting at `now`.
    ///
    /// # Errors
    ///
    /// [`WheelError`] if `tick` is zero or `size` is below 2 or above 2^16.
    pub fn new(
        tick: u64,
        size: usize,
        now: u64,
        precision: Precision,
    ) -> Result<HierarchicalWheel, WheelError> {
        if tick == 0 {
            return Err(WheelError::ZeroTick);
        }
        if !(2..=1 << 16).contains(&size) {
            return Err(WheelError::Buckets(size));
        }
        let mut wheels = HierarchicalWheel {
            tick,
            size: size as u64,
            precision,
            levels: Vec::new(),
            lists: Lists::new(2),
            staging: Staging::new(STAGING),
            queue: DelayQueue::with_default_hasher(),
            earliest: vec![None; 2],
            latest: vec![0; 2],
            ordered: vec![true; 2],
            placed: vec![0; 2],
            keys: Vec::new(),
        };
        wheels.push_level(1, now / tick);
        Ok(wheels)
    }

    fn push_level(&mut self, unit: u64, start: u64) {
        let first = self.lists.add_lists(2 * self.size as usize);
        self.earliest
            .resize(self.earliest.len() + 2 * self.size as usize, None);
        self.latest.resize(self.earliest.len(), 0);
        self.ordered.resize(self.earliest.len(), true);
        self.placed.resize(self.earliest.len(), 0);
        self.levels.push(Level {
            unit,
            current: start - start % unit,
            interval: unit.checked_mul(self.size),
            first,
        });
    }

    /// Gives back what a poll of a long list made its scratch space hold
    /// (see [`IDLE_KEEP`](super::IDLE_KEEP)): a driver calls it before it
    /// sleeps for long.
    pub(crate) fn trim(&mut self) {
        super::trim(&mut self.keys);
    }

    /// The tick length in nanoseconds.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// Levels created so far (1 until a timer overflows the first wheel).
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Buckets waiting in the delay queue.
    pub fn queued_buckets(&self) -> usize {
        self.queue.len()
    }

    fn tick_of(&self, deadline: u64) -> u64 {
        deadline.div_ceil(self.tick)
    }

    /// Kafka's `TimingWheel.add`: links `key` (timing set) into the bucket
    /// its deadline belongs in, offering the bucket to the delay queue if
    /// this is its new earliest timer.
    fn place(&mut self, key: Key, deadline: u64) {
        let (level, list) = self.list_for(self.tick_of(deadline));
        self.lists.push_back(list, key);
        if let Some(l) = level {
            self.note(l, list, (deadline, deadline), 1, true);
        }
    }

    /// The list [`place`](Self::place) links a timer due in tick `e` into,
    /// and its level (none for the overdue list), making the levels up to
    /// one that spans `e` (Kafka's overflow wheels, made as a timer needs
    /// them).
    fn list_for(&mut self, e: u64) -> (Option<usize>, u32) {
        loop {
            if let Some(found) = self.list_of(e) {
                return found;
            }
            self.make_levels(e);
        }
    }

    /// Makes the levels up to one that spans tick `e`, if there is none
    /// yet (Kafka's overflow wheels, made as a timer needs them): one
    /// comparison with the top level when there is.
    fn make_levels(&mut self, e: u64) {
        while let Some(span) = self.levels[self.levels.len() - 1].interval {
            let top = self.levels[self.levels.len() - 1];
            if e.saturating_sub(top.current) < span {
                return;
            }
            self.push_level(span, top.current);
        }
    }

    /// The list [`place`](Self::place) links a timer due in tick `e` into,
    /// and its level (none for the overdue list); `None` if no level made
    /// so far spans `e`.
    fn list_of(&self, e: u64) -> Option<(Option<usize>, u32)> {
        if e <= self.levels[0].current {
            return Some((None, OVERDUE));
        }
        // `e > current_0 >= current_l`, so this cannot wrap.
        let (l, level) = self
            .levels
            .iter()
            .enumerate()
            .find(|(_, level)| level.interval.is_none_or(|span| e - level.current < span))?;
        Some((Some(l), level.first + ((e / level.unit) % self.size) as u32))
    }

    /// Counts `count` timers linked into bucket `list` of level `l`, due
    /// between `first` and `last` (ns), `ordered` by deadline among
    /// themselves, and offers the bucket to the delay queue if that moves
    /// its key.
    fn note(&mut self, l: usize, list: u32, (first, last): (u64, u64), count: u32, ordered: bool) {
        let i = list as usize;
        let before = self.placed[i];
        self.placed[i] = before.saturating_add(count);
        let big = self.placed[i] > MOVE_CHUNK as u32;
        // Keyed again as it becomes big and as it doubles: its lead grows
        // with it (see `cascade_at`).
        let rekey = big && (before <= MOVE_CHUNK as u32 || before.ilog2() < self.placed[i].ilog2());
        let earliest = self.earliest[i];
        (self.latest[i], self.ordered[i]) = match earliest {
            Some(_) => (
                self.latest[i].max(last),
                self.ordered[i] && ordered && first >= self.latest[i],
            ),
            None => (last, ordered),
        };
        if earliest.is_none_or(|at| first < at) || rekey {
            let first = earliest.map_or(first, |at| at.min(first));
            self.earliest[i] = Some(first);
            let at = self.cascade_at(l, first, self.placed[i]);
            self.queue.push(list, Reverse(at));
        }
    }

    /// When a bucket of level `l` whose earliest timer is due at `deadline`
    /// and which received `placed` timers should leave the queue: at that
    /// deadline, unless it is big (more than a chunk) and above level 0;
    /// then ahead of it by half a unit of the level below (room for a
    /// driver's late wake-up), or by [`MOVE_NS_PER_TIMER`] a timer if
    /// that is longer and the level below spans the deadline's tick that
    /// early (else the timers would come straight back to this bucket); no
    /// earlier than that level spans it. A cascade too long to end in time
    /// is not begun earlier, as it would only interleave with the runs it
    /// makes late.
    fn cascade_at(&self, l: usize, deadline: u64, placed: u32) -> u64 {
        if l == 0 || placed <= MOVE_CHUNK as u32 {
            return deadline;
        }
        let e = self.tick_of(deadline);
        let below = self.levels[l - 1].unit;
        // The level below spans `e` once its time passes `e - unit`.
        let spans_from = e
            .saturating_sub(self.levels[l].unit - 1)
            .checked_next_multiple_of(below)
            .unwrap_or(u64::MAX)
            .saturating_mul(self.tick);
        let half = below.saturating_mul(self.tick) / 2;
        let lead = u64::from(placed).saturating_mul(MOVE_NS_PER_TIMER);
        let ahead = match deadline.checked_sub(lead) {
            Some(at) if lead > half && at >= spans_from => lead,
            _ => half,
        };
        deadline.saturating_sub(ahead).max(spans_from)
    }

    /// For a bucket above level 0 whose timers are due from `earliest` on:
    /// the one list (and its level) all its timers move to, if its bounds
    /// fall in one (then so does every deadline between them).
    fn one_list_below(&self, list: u32, earliest: u64) -> Option<(Option<usize>, u32)> {
        let last = self.latest[list as usize];
        let to = self.list_of(self.tick_of(earliest))?;
        (to.1 != list && self.list_of(self.tick_of(last)) == Some(to)).then_some(to)
    }

    /// Expires the timers of level-0 bucket `list` due by `limit` (ns), in
    /// list order, and leaves the others where they are, the bucket queued
    /// again at their earliest deadline. In a bucket linked in order of
    /// deadline, that is a prefix: the rest is not looked at.
    fn expire_due(&mut self, list: u32, limit: u64, placed: u32, out: &mut Due<'_>) {
        let i = list as usize;
        let (ordered, latest) = (self.ordered[i], self.latest[i]);
        let (mut first, mut last, mut left) = (u64::MAX, 0, 0u32);
        let mut next = self.lists.head(list);
        while let Some(key) = next {
            next = self.lists.next(key);
            let deadline = self.lists.timing(key).deadline();
            if deadline <= limit {
                self.lists.unlink(key);
                self.expired(key, out);
            } else if ordered {
                (first, last, left) = (deadline, latest, placed);
                break;
            } else {
                (first, last, left) = (first.min(deadline), last.max(deadline), left + 1);
            }
        }
        if left > 0 {
            (self.earliest[i], self.latest[i], self.placed[i]) = (Some(first), last, left);
            self.queue.push(list, Reverse(first));
        }
    }

    /// The level `list` is a bucket of; `None` for the overdue list and
    /// the staging lists (a bucket's staging list is `size` lists after it).
    fn level_of(&self, list: u32) -> Option<usize> {
        let size = self.size as u32;
        self.levels
            .iter()
            .position(|level| (level.first..level.first + size).contains(&list))
    }

    /// Unlinks `key`, taking its list out of the queue if that emptied it
    /// (the staging list's bounds, if that one).
    fn unlink(&mut self, key: Key) {
        if let Some(list) = self.lists.unlink(key) {
            if list == STAGING {
                self.staging.vacate();
            } else if list != OVERDUE {
                self.queue.remove(&list);
                self.earliest[list as usize] = None;
                self.placed[list as usize] = 0;
            }
        }
    }

    /// Kafka's `advanceClock`: every level's time moves to tick `t`,
    /// rounded down to its unit, if that is a step forward.
    fn advance_clock(&mut self, t: u64) {
        for level in &mut self.levels {
            if t >= level.current.saturating_add(level.unit) {
                level.current = t - t % level.unit;
            }
        }
    }

    fn expired(&self, key: Key, out: &mut Due<'_>) {
        let node = self.lists.timing(key);
        let e = Expired {
            key,
            deadline: node.deadline(),
        };
        out.push((self.tick_of(node.deadline()), node.seq), e);
    }

    /// Where `e` goes among timers due together: by tick, then by
    /// submission sequence (its node keeps it after the unlink).
    fn order(&self, e: &Expired) -> (u64, u32) {
        (self.tick_of(e.deadline), self.lists.timing(e.key).seq)
    }
}

impl TimerQueue for HierarchicalWheel {
    fn insert(&mut self, key: Key, deadline: u64) {
        self.lists.set(key, deadline);
        self.place(key, deadline);
    }

    /// Also makes the levels the timer will need, as Kafka's `add` does, so
    /// that [`levels`](HierarchicalWheel::levels) counts them.
    fn stage(&mut self, key: Key, deadline: u64) {
        self.lists.set(key, deadline);
        let e = self.tick_of(deadline);
        if e <= self.levels[0].current {
            self.lists.push_back(OVERDUE, key);
        } else {
            self.make_levels(e);
            self.staging.push(&mut self.lists, key, deadline);
        }
    }

    fn remove(&mut self, key: Key) -> bool {
        if !self.lists.contains(key) {
            return false;
        }
        self.unlink(key);
        true
    }

    fn reschedule(&mut self, key: Key, deadline: u64) -> bool {
        if !self.lists.contains(key) {
            return false;
        }
        self.unlink(key);
        self.insert(key, deadline);
        true
    }

    fn poll(&mut self, now: u64, expired: &mut Vec<Expired>) {
        let now_tick = now / self.tick;
        let limit = match self.precision {
            Precision::Exact => now,
            Precision::Tick => now_tick * self.tick,
        };
        let mut keys = std::mem::take(&mut self.keys);
        // New timers first, so that their buckets are in the queue.
        self.staging
            .take(&mut self.lists, now, self.tick, &mut keys);
        for key in keys.drain(..) {
            self.place(key, self.lists.timing(key).deadline());
        }
        let mut out = Due::new(expired);
        // Staging lists that moved a chunk: back in the queue after this
        // poll, so that each moves one chunk per poll.
        let mut unfinished = Vec::new();
        while let Some((&list, &Reverse(at))) = self.queue.peek() {
            if at > limit {
                break;
            }
            self.queue.pop();
            self.advance_clock(self.tick_of(at).min(now_tick));
            let earliest = self.earliest[list as usize]
                .take()
                .expect("a queued list has a bound");
            let placed = std::mem::take(&mut self.placed[list as usize]);
            let level = self.level_of(list);
            if earliest <= limit && level == Some(0) {
                // One tick's bucket: what is due by now comes out, the rest
                // stays (with exact deadlines, a poll amid a busy tick).
                self.expire_due(list, limit, placed, &mut out);
            } else if earliest <= limit {
                // Something in it may be due: the whole list, now.
                self.lists.take(list, &mut keys);
                for key in keys.drain(..) {
                    let deadline = self.lists.timing(key).deadline();
                    if deadline <= limit {
                        self.expired(key, &mut out);
                    } else {
                        self.place(key, deadline);
                    }
                }
            } else if level.is_some_and(|l| l > 0) {
                // A bucket's time to move down.
                if let Some((to, target)) = self.one_list_below(list, earliest) {
                    // Every timer in it goes to one list (a burst due in
                    // one tick): moved whole, in O(1).
                    self.lists.append(list, target);
                    let (last, ordered) = (self.latest[list as usize], self.ordered[list as usize]);
                    if let Some(l) = to {
                        self.note(l, target, (earliest, last), placed, ordered);
                    }
                    continue;
                }
                // Staged, to move a chunk a poll.
                let staging = list + self.size as u32;
                self.lists.append(list, staging);
                let bound = &mut self.earliest[staging as usize];
                if bound.is_none() {
                    self.queue.push(staging, Reverse(at));
                }
                *bound = Some(bound.map_or(earliest, |b| b.min(earliest)));
            } else {
                // A staging list: a chunk down, none of it due.
                for _ in 0..MOVE_CHUNK {
                    let Some(key) = self.lists.pop_front(list) else {
                        break;
                    };
                    let deadline = self.lists.timing(key).deadline();
                    self.place(key, deadline);
                }
                if !self.lists.is_empty(list) {
                    self.earliest[list as usize] = Some(earliest);
                    unfinished.push((list, at));
                }
            }
        }
        for (list, at) in unfinished {
            self.queue.push(list, Reverse(at));
        }
        self.advance_clock(now_tick);
        self.lists.take(OVERDUE, &mut keys);
        for key in keys.drain(..) {
            self.expired(key, &mut out);
        }
        self.keys = keys;
        out.finish(|e| self.order(e));
    }

    fn next_deadline(&self) -> Option<u64> {
        if self.lists.len() == 0 {
            return None;
        }
        if !self.lists.is_empty(OVERDUE) {
            return Some(self.levels[0].current * self.tick);
        }
        // Every list but the overdue one and the staging list is queued
        // while it holds a timer.
        let queued = self.queue.peek().map_or(u64::MAX, |(_, Reverse(at))| *at);
        let at = queued.min(self.staging.unstage_at());
        Some(match self.precision {
            Precision::Exact => at,
            Precision::Tick => self.tick_of(at).saturating_mul(self.tick),
        })
    }

    fn drain(&mut self, out: &mut Vec<Expired>) {
        out.reserve(self.lists.len());
        let mut all = Due::new(out);
        for key in self.lists.linked() {
            self.expired(key, &mut all);
        }
        all.finish(|e| self.order(e));
        self.lists.clear();
        self.queue.clear();
        self.earliest.fill(None);
        self.placed.fill(0);
        self.staging.vacate();
    }

    fn retain(&mut self, mut keep: impl FnMut(Key) -> bool, removed: &mut Vec<Key>) {
        let dead: Vec<Key> = self.lists.linked().filter(|&k| !keep(k)).collect();
        for &key in &dead {
            self.unlink(key);
        }
        removed.extend(dead);
    }

    fn len(&self) -> usize {
        self.lists.len()
    }

    fn contains(&self, key: Key) -> bool {
        self.lists.contains(key)
    }

    fn deadline(&self, key: Key) -> Option<u64> {
        self.lists.node(key).map(|n| n.deadline())
    }
}
