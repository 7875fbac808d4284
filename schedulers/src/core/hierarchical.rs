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
//!
//! # Costs
//!
//! Insert, remove and reschedule are O(1) plus an O(log b) queue update when
//! a bucket gets a new earliest timer (b ≤ levels × size buckets). A timer is
//! re-inserted once per level it descends through before it expires.

use std::cmp::Reverse;

use priority_queue::PriorityQueue;

use super::hashed_wheel::{Precision, WheelError};
use super::list::Lists;
use super::{Expired, Key, TimerQueue};

#[derive(Debug, Clone, Copy)]
struct Level {
    /// Ticks per bucket.
    unit: u64,
    /// The level's time: a multiple of `unit`.
    current: u64,
    /// `unit * size`, or `None` if that overflows (the level spans everything).
    interval: Option<u64>,
    /// Number of its first bucket's list.
    first: u32,
}

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
    /// The bucket lists of every level, then the overdue list (number 0).
    lists: Lists,
    /// Buckets (by list number) keyed by their earliest deadline.
    queue: PriorityQueue<u32, Reverse<u64>>,
    seq: u64,
}

/// The list of timers already due when inserted.
const OVERDUE: u32 = 0;

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
            return Err(WheelError::Slots(size));
        }
        let mut wheels = HierarchicalWheel {
            tick,
            size: size as u64,
            precision,
            levels: Vec::new(),
            lists: Lists::new(1),
            queue: PriorityQueue::new(),
            seq: 0,
        };
        wheels.push_level(1, now / tick);
        Ok(wheels)
    }

    fn push_level(&mut self, unit: u64, start: u64) {
        let first = self.lists.add_lists(self.size as usize);
        self.levels.push(Level {
            unit,
            current: start - start % unit,
            interval: unit.checked_mul(self.size),
            first,
        });
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
        let e = self.tick_of(deadline);
        if e <= self.levels[0].current {
            self.lists.push_back(OVERDUE, key);
            return;
        }
        let mut l = 0;
        loop {
            let level = self.levels[l];
            // `e > current_0 >= current_l`, so this cannot wrap.
            if level.interval.is_none_or(|span| e - level.current < span) {
                let list = level.first + ((e / level.unit) % self.size) as u32;
                self.lists.push_back(list, key);
                let earlier = self
                    .queue
                    .get_priority(&list)
                    .is_none_or(|Reverse(at)| deadline < *at);
                if earlier {
                    self.queue.push(list, Reverse(deadline));
                }
                return;
            }
            if l + 1 == self.levels.len() {
                let unit = level.interval.unwrap_or(u64::MAX);
                self.push_level(unit, level.current);
            }
            l += 1;
        }
    }

    /// Unlinks `key`, taking its bucket out of the queue if that emptied it.
    fn unlink(&mut self, key: Key) {
        if let Some(list) = self.lists.unlink(key) {
            if list != OVERDUE {
                self.queue.remove(&list);
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

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn expired(&self, key: Key, out: &mut Vec<(u64, u64, Expired)>) {
        let node = self.lists.timing(key);
        let e = Expired {
            key,
            deadline: node.deadline,
        };
        out.push((self.tick_of(node.deadline), node.seq, e));
    }
}

impl TimerQueue for HierarchicalWheel {
    fn insert(&mut self, key: Key, deadline: u64) {
        let seq = self.next_seq();
        self.lists.set(key, deadline, seq);
        self.place(key, deadline);
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
        let mut out = Vec::new();
        let mut keys = Vec::new();
        while let Some((&list, &Reverse(at))) = self.queue.peek() {
            if at > limit {
                break;
            }
            self.queue.pop();
            self.advance_clock(self.tick_of(at).min(now_tick));
            self.lists.take(list, &mut keys);
            for key in keys.drain(..) {
                let deadline = self.lists.timing(key).deadline;
                if deadline <= limit {
                    self.expired(key, &mut out);
                } else {
                    self.place(key, deadline);
                }
            }
        }
        self.advance_clock(now_tick);
        self.lists.take(OVERDUE, &mut keys);
        for key in keys {
            self.expired(key, &mut out);
        }
        out.sort_unstable_by_key(|&(tick, seq, _)| (tick, seq));
        expired.extend(out.into_iter().map(|(_, _, e)| e));
    }

    fn next_deadline(&self) -> Option<u64> {
        if !self.lists.is_empty(OVERDUE) {
            return Some(self.levels[0].current * self.tick);
        }
        let (_, Reverse(at)) = self.queue.peek()?;
        Some(match self.precision {
            Precision::Exact => *at,
            Precision::Tick => self.tick_of(*at).saturating_mul(self.tick),
        })
    }

    fn drain(&mut self, out: &mut Vec<Expired>) {
        let mut all: Vec<(u64, u64, Expired)> = Vec::with_capacity(self.lists.len());
        for key in self.lists.linked() {
            self.expired(key, &mut all);
        }
        self.lists.clear();
        self.queue.clear();
        all.sort_unstable_by_key(|&(tick, seq, _)| (tick, seq));
        out.extend(all.into_iter().map(|(_, _, e)| e));
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
        self.lists.node(key).map(|n| n.deadline)
    }
}
