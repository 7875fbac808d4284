//! The pure core: Kafka's hierarchical `TimingWheel`s over one slab of
//! buckets, with a [`DelayQueue`] of bucket expirations.
//!
//! Everything is in integer *ticks*; the core never reads a clock.
//!
//! # How it works
//!
//! Level 0 has `size` buckets of one tick each; level `L` has `size`
//! buckets of `size^L` ticks (its *unit*), so it spans `size^(L+1)` ticks
//! (its *interval*). Each level has a current time, always a multiple of its
//! unit. A timer due at tick `e` goes to the finest level whose span still
//! reaches it: level `L` if `e < current_L + interval_L`, in bucket
//! `(e / unit_L) % size`. A bucket expires at its earliest timer. A timer
//! beyond the top level's span creates the next level (lazily, as Kafka's
//! `overflowWheel`), with unit = the interval below and current time rounded
//! down to that unit. A bucket only ever holds timers of one revolution, and
//! it is offered to the delay queue when it gets its first timer in a
//! revolution (and moved up if it later gets an earlier one).
//!
//! [`TimingWheels::advance`] polls the delay queue: for each bucket expired
//! at `now`, it advances every level's clock to the bucket's expiration and
//! re-inserts each of its timers, which now land in a finer level or, once
//! due, in the *overdue* list; then it moves the clocks to `now` and hands
//! back the overdue timers. Time with no expiring bucket costs nothing.
//!
//! # Differences from Kafka
//!
//! - **Never early.** Kafka's bucket expires at the start of its range and a
//!   timer counts as expired when `exp < current + tick`, so a timer can run
//!   up to one tick early. Here the caller rounds deadlines *up* to ticks, and
//!   a timer is due only when `e <= current`: up to one tick late, never early.
//! - **Submission order within a tick.** The expired timers of one `advance`
//!   come back sorted by `(tick, seq)`; Kafka runs a bucket in list order,
//!   which a cascade can scramble.
//! - **A bucket expires at its earliest timer**, not at the start of its
//!   range. Kafka flushes an overflow bucket at its start, which costs a
//!   wake-up for a cascade that may only move timers one level down; here the
//!   flush waits for the first timer that needs it, and re-inserting then
//!   finds that timer due. With 10⁵ timers spread over an hour at 1 ms, this
//!   halves the driver's wake-ups (one per occupied millisecond instead of
//!   one per occupied millisecond plus one per occupied 20 ms bucket), and a
//!   timer an hour away wakes nobody before its hour. A removal may leave the
//!   expiration earlier than the earliest remaining timer: that costs an
//!   early cascade, never a late timer. It stays sound because a bucket's
//!   index is only reused a whole revolution later, after its range ended.
//! - **Empty buckets leave the queue.** A removal that empties a bucket takes
//!   it out of the delay queue, so the driver does not wake for nothing.
//! - **Wide ticks.** Units and intervals are checked for overflow: the level
//!   whose interval would overflow `u64` spans everything and is the top.
//!
//! # Costs
//!
//! Insert, remove and move are O(1) plus an O(log b) queue offer when a
//! bucket gets its first timer of a revolution (b ≤ levels × size buckets).
//! A timer is re-inserted once per level it descends through (at most
//! `log_size(delay)` times) before it expires.

use super::bucket::{Buckets, Key, Removed};
use super::delay_queue::DelayQueue;

/// A bucket's expiration when it is not in the delay queue.
const NONE: u64 = u64::MAX;
/// The tag of the overdue list.
const OVERDUE: u64 = u64::MAX;

#[derive(Debug, Clone, Copy)]
struct Level {
    /// Ticks per bucket.
    unit: u64,
    /// The level's time: a multiple of `unit`.
    current: u64,
    /// `unit * size`, or `None` if that overflows (the level spans everything).
    interval: Option<u64>,
    /// Index of its first bucket in `sentinels` / `expirations`.
    first: usize,
}

/// Hierarchical timing wheels holding items of type `T`.
#[derive(Debug)]
pub(crate) struct TimingWheels<T> {
    size: u64,
    levels: Vec<Level>,
    /// The list (sentinel key) of each bucket, level after level.
    sentinels: Vec<Key>,
    /// Each bucket's expiration while it is in the delay queue, else `NONE`.
    expirations: Vec<u64>,
    buckets: Buckets<T>,
    queue: DelayQueue,
    /// Timers already due when inserted.
    overdue: Key,
}

impl<T> TimingWheels<T> {
    /// Empty wheels of `size` buckets per level, starting at tick `start`.
    ///
    /// # Panics
    ///
    /// If `size < 2` (the driver never passes one).
    pub(crate) fn new(size: usize, start: u64) -> TimingWheels<T> {
        assert!(size >= 2, "a timing wheel needs at least two buckets");
        let mut buckets = Buckets::new();
        let overdue = buckets.new_list(OVERDUE);
        let mut wheels = TimingWheels {
            size: size as u64,
            levels: Vec::new(),
            sentinels: Vec::new(),
            expirations: Vec::new(),
            buckets,
            queue: DelayQueue::new(),
            overdue,
        };
        wheels.push_level(1, start);
        wheels
    }

    fn push_level(&mut self, unit: u64, start: u64) {
        let first = self.sentinels.len();
        for i in 0..self.size {
            let list = self.buckets.new_list(first as u64 + i);
            self.sentinels.push(list);
            self.expirations.push(NONE);
        }
        self.levels.push(Level {
            unit,
            current: start - start % unit,
            interval: unit.checked_mul(self.size),
            first,
        });
    }

    /// Timers held.
    pub(crate) fn len(&self) -> usize {
        self.buckets.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Levels created so far (1 until a timer overflows the first wheel).
    pub(crate) fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Level 0's current time, in ticks.
    pub(crate) fn current(&self) -> u64 {
        self.levels[0].current
    }

    /// Buckets waiting in the delay queue.
    #[cfg(test)]
    pub(crate) fn queued_buckets(&self) -> usize {
        self.queue.len()
    }

    /// The earliest tick at which [`TimingWheels::advance`] has work: the
    /// earliest bucket expiration, or the current time if a timer is overdue.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        if !self.buckets.is_empty(self.overdue) {
            return Some(self.current());
        }
        self.queue.peek_expiration()
    }

    /// Adds a timer due at tick `expiration`, ordered among ties by `seq`.
    /// Returns its key, for [`TimingWheels::remove`] and [`TimingWheels::reschedule`].
    pub(crate) fn insert(&mut self, expiration: u64, seq: u64, item: T) -> Key {
        let list = self.locate(expiration);
        self.buckets.push_back(list, expiration, seq, item)
    }

    /// The item of the timer at `key`, if `key` names a timer.
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        self.buckets.get(key)
    }

    /// Removes the timer at `key` in O(1). `None` if `key` names no timer.
    pub(crate) fn remove(&mut self, key: Key) -> Option<Removed<T>> {
        self.buckets.get(key)?;
        let emptied = self.buckets.unlink(key);
        self.forget_if_emptied(emptied);
        Some(self.buckets.free_detached(key))
    }

    /// Moves the timer at `key` to a new expiration and sequence number in
    /// O(1), keeping its key. False (and no change) if `key` names no timer.
    pub(crate) fn reschedule(&mut self, key: Key, expiration: u64, seq: u64) -> bool {
        if self.buckets.get(key).is_none() {
            return false;
        }
        let emptied = self.buckets.unlink(key);
        self.forget_if_emptied(emptied);
        self.buckets.set_timing(key, expiration, seq);
        let list = self.locate(expiration);
        self.buckets.link_back(list, key);
        true
    }

    /// Takes a bucket that a removal emptied out of the delay queue.
    fn forget_if_emptied(&mut self, emptied: Option<u64>) {
        if let Some(tag) = emptied.filter(|&t| t != OVERDUE) {
            self.queue.remove(tag as u32);
            self.expirations[tag as usize] = NONE;
        }
    }

    /// Kafka's `TimingWheel.add`: the list a timer due at `e` belongs in,
    /// offering its bucket to the delay queue if this starts a revolution.
    fn locate(&mut self, e: u64) -> Key {
        if e <= self.levels[0].current {
            return self.overdue;
        }
        let mut l = 0;
        loop {
            let level = self.levels[l];
            // `e > current_0 >= current_l`, so the subtraction cannot wrap.
            if level.interval.is_none_or(|span| e - level.current < span) {
                let b = level.first + ((e / level.unit) % self.size) as usize;
                // The bucket expires at its earliest timer: offered when it
                // gets its first timer of the revolution, moved earlier when
                // it gets an earlier one.
                let expiration = self.expirations[b];
                if expiration == NONE || e < expiration {
                    self.expirations[b] = e;
                    self.queue.offer(b as u32, e);
                }
                return self.sentinels[b];
            }
            if l + 1 == self.levels.len() {
                let unit = level.interval.unwrap_or(u64::MAX);
                self.push_level(unit, level.current);
            }
            l += 1;
        }
    }

    /// Kafka's `advanceClock`: each level's time moves to `t`, rounded down
    /// to its unit, if that is a step forward.
    fn advance_clock(&mut self, t: u64) {
        for level in &mut self.levels {
            if t >= level.current.saturating_add(level.unit) {
                level.current = t - t % level.unit;
            }
        }
    }

    /// Flushes every bucket expired at `now` (ticks), re-inserting its
    /// timers, and appends the timers due by `now` to `out`, sorted by
    /// `(expiration, seq)`.
    pub(crate) fn advance(&mut self, now: u64, out: &mut Vec<Removed<T>>) {
        while let Some((b, expiration)) = self.queue.poll(now) {
            self.advance_clock(expiration);
            let b = b as usize;
            self.expirations[b] = NONE;
            let list = self.sentinels[b];
            while let Some(key) = self.buckets.pop_front(list) {
                let (e, _) = self.buckets.timing(key);
                let target = self.locate(e);
                self.buckets.link_back(target, key);
            }
        }
        self.advance_clock(now);
        let start = out.len();
        while let Some(key) = self.buckets.pop_front(self.overdue) {
            out.push(self.buckets.free_detached(key));
        }
        out[start..].sort_unstable_by_key(|r| (r.expiration, r.seq));
    }

    /// Removes every timer, sorted by `(expiration, seq)`.
    pub(crate) fn drain(&mut self) -> Vec<Removed<T>> {
        let mut out = Vec::with_capacity(self.len());
        let lists = self
            .sentinels
            .iter()
            .copied()
            .chain([self.overdue])
            .collect::<Vec<_>>();
        for list in lists {
            while let Some(key) = self.buckets.pop_front(list) {
                out.push(self.buckets.free_detached(key));
            }
        }
        while self.queue.poll(u64::MAX).is_some() {}
        self.expirations.iter_mut().for_each(|e| *e = NONE);
        out.sort_unstable_by_key(|r| (r.expiration, r.seq));
        out
    }
}
