//! A flat hashed timing wheel with rounds (Varghese and Lauck's scheme 6,
//! Netty's `HashedWheelTimer`): the storage of `HashedWheelTimer`.
//!
//! Time is cut into ticks of `tick` nanoseconds. A timer due at `d` belongs
//! to tick `ceil(d / tick)` and sits in bucket `tick mod buckets` of a ring;
//! the cursor visits one bucket per tick, and a timer one or more revolutions
//! away stays in its bucket for that many visits (Netty's `remainingRounds`,
//! derived here from the absolute deadline, so a visit never writes a timer
//! that is not due and a jump of many ticks is one sweep of the ring).
//!
//! # Exact or tick-aligned
//!
//! With [`Precision::Tick`] (Netty's behaviour) a timer comes due when the
//! clock reaches the end of its tick: up to one tick late, never early.
//! With [`Precision::Exact`] it comes due at its own deadline: [`poll`]
//! also looks into the bucket of the tick in progress, and
//! [`next_deadline`] is the exact earliest deadline, so a driver that
//! sleeps until then fires on time while storage and cancel stay O(1).
//!
//! # Knowing when to wake
//!
//! Each bucket, and the staging list (below), keeps a lower bound of its
//! timers' deadlines, and a bitmap marks the occupied buckets.
//! [`next_deadline`] walks the occupied buckets from the cursor and stops at
//! the first whose earliest timer is due in the current revolution, so a
//! wheel holding only far timers reports their real deadline instead of the
//! next tick: its driver does not wake every tick (Netty does). A bound is
//! refreshed whenever its bucket is visited (the staging list's when a poll
//! empties it), dropped with its list's last timer, and made exact by a purge
//! ([`retain`](TimerQueue::retain)), which links again the timers it keeps:
//! a bound left by a cancelled timer costs a driver one wake-up in vain.
//!
//! # Staging
//!
//! A timer given by [`stage`](TimerQueue::stage) (a scheduler's new
//! one-shots) is not placed in its bucket at once: it joins a staging list
//! (one push, next to the previous new timer's node), whose earliest
//! deadline counts in [`next_deadline`]. Polls place the staged timers in
//! their buckets once that deadline is within the next tick; more than 256
//! of them, 256 a poll from 50 ns a timer ahead of it, so that placing them
//! never holds up a timer due meanwhile. A timer removed or purged while
//! staged (an ack or request timeout cancelled in time, the common case)
//! never touches the bucket table, and a purge stages again the timers it
//! keeps, in key order. Netty takes new timers in from a queue too, but
//! into their buckets at the next tick.
//!
//! # Deferred move (go-zero's `MoveTimer`)
//!
//! Rescheduling later only rewrites the timer's deadline: its bucket is
//! visited no later than the old deadline, and that visit moves it. An
//! earlier deadline relinks it at once. Either way O(1).
//!
//! # Order
//!
//! [`poll`] returns timers sorted by tick and then by submission sequence
//! (a reschedule counts as a new submission), never before their deadline
//! (exact) or their tick's end (tick-aligned).
//!
//! [`poll`]: TimerQueue::poll
//! [`next_deadline`]: TimerQueue::next_deadline

use super::due::Due;
use super::list::Lists;
use super::staging::Staging;
use super::MAX_KEYS;
use super::{Expired, Key, TimerQueue};

/// When a timer comes due: at the end of its tick, or at its own deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Precision {
    /// At the end of its tick (Netty, Kafka): up to one tick late.
    Tick,
    /// At its deadline: never late because of the tick.
    #[default]
    Exact,
}

/// The largest ring: 2^24 buckets (a 384 MB bucket table; Netty allows 2^30).
pub const MAX_BUCKETS: usize = 1 << 24;

/// A flat hashed timing wheel. See the [module docs](self).
///
/// # Examples
///
/// ```
/// use schedulers::core::{Expired, HashedWheel, Precision, TimerQueue};
///
/// // 1 ms ticks (deadlines are in nanoseconds), 512 buckets, time starts at 0.
/// let mut wheel = HashedWheel::new(1_000_000, 512, 0, Precision::Exact).unwrap();
/// wheel.insert(1, 2_500_000);
/// wheel.insert(2, 600_000_000_000); // ten minutes: many revolutions away
/// assert_eq!(wheel.next_deadline(), Some(2_500_000));
/// let mut due = Vec::new();
/// wheel.poll(2_400_000, &mut due);
/// assert!(due.is_empty()); // never early
/// wheel.poll(2_500_000, &mut due);
/// assert_eq!(due, [Expired { key: 1, deadline: 2_500_000 }]);
/// assert_eq!(wheel.next_deadline(), Some(600_000_000_000));
/// ```
#[derive(Debug)]
pub struct HashedWheel {
    tick: u64,
    mask: u64,
    precision: Precision,
    /// One list per bucket, then the ready list (timers already due), then
    /// the staging list (new timers not placed yet).
    lists: Lists,
    /// New timers not placed yet: the last of `lists`.
    staging: Staging,
    /// A lower bound of the deadlines in each bucket, valid while its
    /// `occupied` bit is set.
    earliest: Vec<u64>,
    /// Bit `s` set while bucket `s` may hold a timer (and `earliest[s]` holds).
    occupied: Vec<u64>,
    /// The last tick fully processed.
    cursor: u64,
    /// Scratch space for `poll`, kept to avoid an allocation per tick.
    keys: Vec<Key>,
}

impl HashedWheel {
    /// A wheel of `buckets` buckets (a power of two) of `tick` nanoseconds,
    /// whose ticks up to `now` count as processed.
    ///
    /// # Errors
    ///
    /// [`WheelError`] if `tick` is zero or `buckets` is not a power of two in
    /// 1 ..= [`MAX_BUCKETS`].
    pub fn new(
        tick: u64,
        buckets: usize,
        now: u64,
        precision: Precision,
    ) -> Result<HashedWheel, WheelError> {
        if tick == 0 {
            return Err(WheelError::ZeroTick);
        }
        if !buckets.is_power_of_two() || buckets > MAX_BUCKETS {
            return Err(WheelError::Buckets(buckets));
        }
        Ok(HashedWheel {
            tick,
            mask: buckets as u64 - 1,
            precision,
            lists: Lists::new(buckets + 2),
            staging: Staging::new(buckets as u32 + 1),
            earliest: vec![u64::MAX; buckets],
            occupied: vec![0; buckets.div_ceil(64)],
            cursor: now / tick,
            keys: Vec::new(),
        })
    }

    /// Gives back what a poll of a long list made its scratch space hold
    /// (see [`IDLE_KEEP`](super::IDLE_KEEP)): a driver calls it before it
    /// sleeps for long.
    pub(crate) fn trim(&mut self) {
        super::trim(&mut self.keys);
    }

    /// The number of buckets.
    pub fn buckets(&self) -> usize {
        self.mask as usize + 1
    }

    /// The tick length in nanoseconds.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    fn ready(&self) -> u32 {
        self.buckets() as u32
    }

    fn tick_of(&self, deadline: u64) -> u64 {
        deadline.div_ceil(self.tick)
    }

    fn bucket_of(&self, tick: u64) -> u32 {
        (tick & self.mask) as u32
    }

    /// Links a new `key` (timing set) into the staging list, or the ready
    /// list if it is due already.
    fn push_staged(&mut self, key: Key, deadline: u64) {
        if self.tick_of(deadline) <= self.cursor {
            let ready = self.ready();
            self.lists.push_back(ready, key);
        } else {
            self.staging.push(&mut self.lists, key, deadline);
        }
    }

    /// Places in their buckets the staged timers a poll at `now` places
    /// (see [`Staging::take`]).
    fn unstage(&mut self, now: u64) {
        let mut keys = std::mem::take(&mut self.keys);
        self.staging
            .take(&mut self.lists, now, self.tick, &mut keys);
        for key in keys.drain(..) {
            self.place(key, self.lists.timing(key).deadline());
        }
        self.keys = keys;
    }

    /// Links `key` (timing set) into the list its deadline belongs to.
    fn place(&mut self, key: Key, deadline: u64) {
        let tick = self.tick_of(deadline);
        if tick <= self.cursor {
            let ready = self.ready();
            self.lists.push_back(ready, key);
        } else {
            let bucket = self.bucket_of(tick);
            self.lists.push_back(bucket, key);
            let (s, bit) = (bucket as usize, 1 << (bucket % 64));
            // A clear bit means the bucket's bound is stale: start it afresh.
            self.earliest[s] = if self.occupied[s / 64] & bit == 0 {
                deadline
            } else {
                self.earliest[s].min(deadline)
            };
            self.occupied[s / 64] |= bit;
        }
    }

    /// A removal emptied `list`: a bucket's bound goes with its last timer,
    /// the staging list's with its.
    fn vacate(&mut self, list: u32) {
        if list == self.staging.list() {
            self.staging.vacate();
        } else if list != self.ready() {
            let s = list as usize;
            self.earliest[s] = u64::MAX;
            self.occupied[s / 64] &= !(1 << (s % 64));
        }
    }

    /// Where `e` goes among timers due together: by tick, then by
    /// submission sequence (its node keeps it after the unlink).
    fn order(&self, e: &Expired) -> (u64, u32) {
        (self.tick_of(e.deadline), self.lists.timing(e.key).seq)
    }

    /// Visits `bucket`: expires the timers due by `limit` (ns), carries out
    /// deferred moves, and refreshes the bucket's earliest deadline.
    fn visit(&mut self, bucket: u32, limit: u64, out: &mut Due<'_>) {
        let mut earliest = u64::MAX;
        let mut next = self.lists.head(bucket);
        while let Some(key) = next {
            next = self.lists.next(key);
            let node = *self.lists.node(key).expect("a listed key is linked");
            if node.deadline() <= limit {
                self.lists.unlink(key);
                let expired = Expired {
                    key,
                    deadline: node.deadline(),
                };
                out.push((self.tick_of(node.deadline()), node.seq), expired);
            } else if self.bucket_of(self.tick_of(node.deadline())) != bucket {
                self.lists.unlink(key);
                self.place(key, node.deadline());
            } else {
                earliest = earliest.min(node.deadline());
            }
        }
        let s = bucket as usize;
        self.earliest[s] = earliest;
        if earliest == u64::MAX {
            self.occupied[s / 64] &= !(1 << (s % 64));
        }
    }

    /// The occupied buckets after the cursor, in ring order (one revolution).
    fn occupied_after_cursor(&self) -> impl Iterator<Item = u64> + '_ {
        let buckets = self.mask + 1;
        let start = self.cursor + 1;
        let mut d = 0u64;
        std::iter::from_fn(move || {
            while d < buckets {
                let s = ((start + d) & self.mask) as usize;
                let word = self.occupied[s / 64] >> (s % 64);
                if word == 0 {
                    // Skip to the end of the word or of the ring.
                    d += (64 - (s % 64) as u64).min(buckets - s as u64);
                    continue;
                }
                let skip = u64::from(word.trailing_zeros());
                if d + skip >= buckets {
                    return None;
                }
                let tick = start + d + skip;
                d += skip + 1;
                return Some(tick);
            }
            None
        })
    }
}

impl TimerQueue for HashedWheel {
    fn insert(&mut self, key: Key, deadline: u64) {
        debug_assert!((key as usize) < MAX_KEYS);
        self.lists.set(key, deadline);
        self.place(key, deadline);
    }

    fn stage(&mut self, key: Key, deadline: u64) {
        debug_assert!((key as usize) < MAX_KEYS);
        self.lists.set(key, deadline);
        self.push_staged(key, deadline);
    }

    fn remove(&mut self, key: Key) -> bool {
        if !self.lists.contains(key) {
            return false;
        }
        if let Some(emptied) = self.lists.unlink(key) {
            self.vacate(emptied);
        }
        true
    }

    fn reschedule(&mut self, key: Key, deadline: u64) -> bool {
        let Some(node) = self.lists.node(key).copied() else {
            return false;
        };
        self.lists.set(key, deadline);
        if deadline < node.deadline() {
            if let Some(emptied) = self.lists.unlink(key) {
                self.vacate(emptied);
            }
            self.place(key, deadline);
        }
        true
    }

    fn poll(&mut self, now: u64, expired: &mut Vec<Expired>) {
        let now_tick = now / self.tick;
        let limit = match self.precision {
            Precision::Exact => now,
            Precision::Tick => now_tick * self.tick,
        };
        self.unstage(now);
        let mut out = Due::new(expired);
        let mut keys = std::mem::take(&mut self.keys);
        self.lists.take(self.ready(), &mut keys);
        for key in keys.drain(..) {
            let node = self.lists.timing(key);
            if node.deadline() <= limit {
                let e = Expired {
                    key,
                    deadline: node.deadline(),
                };
                out.push((self.tick_of(node.deadline()), node.seq), e);
            } else {
                self.place(key, node.deadline()); // moved later since
            }
        }
        self.keys = keys;
        if now_tick > self.cursor {
            if self.lists.len() == 0 {
                // Nothing to visit; the bounds left by removed timers go, or
                // a bucket the cursor skips would report a deadline passed.
                self.cursor = now_tick;
                self.occupied.fill(0);
            } else if now_tick - self.cursor > self.mask {
                // At least a revolution: one sweep of every bucket.
                self.cursor = now_tick;
                for bucket in 0..=self.mask as u32 {
                    self.visit(bucket, now_tick * self.tick, &mut out);
                }
            } else {
                while self.cursor < now_tick {
                    self.cursor += 1;
                    let bucket = self.bucket_of(self.cursor);
                    if self.earliest[bucket as usize] <= self.cursor * self.tick {
                        self.visit(bucket, self.cursor * self.tick, &mut out);
                    }
                }
            }
        }
        if self.precision == Precision::Exact {
            // The tick in progress: what is due by `now` in the next bucket.
            let bucket = self.bucket_of(self.cursor + 1);
            if self.earliest[bucket as usize] <= now {
                self.visit(bucket, now, &mut out);
            }
        }
        out.finish(|e| self.order(e));
    }

    fn next_deadline(&self) -> Option<u64> {
        if self.lists.len() == 0 {
            return None;
        }
        if !self.lists.is_empty(self.ready()) {
            return Some(self.cursor * self.tick);
        }
        let mut earliest = self.staging.unstage_at();
        for tick in self.occupied_after_cursor() {
            let bound = self.earliest[self.bucket_of(tick) as usize];
            if bound <= tick.saturating_mul(self.tick) {
                // Due in this revolution: nothing after it can be earlier.
                earliest = earliest.min(bound);
                break;
            }
            earliest = earliest.min(bound);
        }
        Some(match self.precision {
            Precision::Exact => earliest,
            Precision::Tick => self.tick_of(earliest).saturating_mul(self.tick),
        })
    }

    fn drain(&mut self, out: &mut Vec<Expired>) {
        out.reserve(self.lists.len());
        let mut all = Due::new(out);
        for key in self.lists.linked() {
            let node = self.lists.timing(key);
            let e = Expired {
                key,
                deadline: node.deadline(),
            };
            all.push((self.tick_of(node.deadline()), node.seq), e);
        }
        all.finish(|e| self.order(e));
        self.lists.clear();
        self.earliest.fill(u64::MAX);
        self.occupied.fill(0);
        self.staging.vacate();
    }

    /// Stages again the timers it keeps, in key order, so that the only
    /// bound left is the staging list's, exact: the bounds of removed timers
    /// would each wake a driver for nothing (with most timers cancelled, as
    /// many wake-ups again as fires). Two sequential passes over the nodes
    /// (split, clear), no unlinks, and nothing placed in a bucket.
    fn retain(&mut self, mut keep: impl FnMut(Key) -> bool, removed: &mut Vec<Key>) {
        let mut kept = Vec::with_capacity(self.lists.len());
        for key in self.lists.linked() {
            if keep(key) {
                kept.push(key);
            } else {
                removed.push(key);
            }
        }
        if kept.len() == self.lists.len() {
            return;
        }
        self.lists.clear();
        self.occupied.fill(0);
        self.staging.vacate();
        for key in kept {
            self.push_staged(key, self.lists.timing(key).deadline());
        }
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

/// Why a wheel could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WheelError {
    /// The tick was zero.
    ZeroTick,
    /// The bucket count was not a power of two in 1 ..= [`MAX_BUCKETS`].
    Buckets(usize),
}

impl std::fmt::Display for WheelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WheelError::ZeroTick => f.write_str("the tick must be longer than zero"),
            WheelError::Buckets(n) => write!(
                f,
                "the bucket count must be a power of two from 1 to {MAX_BUCKETS}, not {n}"
            ),
        }
    }
}

impl std::error::Error for WheelError {}

#[cfg(test)]
mod test {
    use super::*;
    use crate::core::MOVE_CHUNK;

    /// Removed timers leave no bounds behind: after a purge, and after a
    /// removal that empties a bucket, the next deadline is the earliest
    /// timer left, not a removed one's (a driver would wake for it).
    #[test]
    fn removed_timers_leave_no_bound_behind() {
        let ms = 1_000_000;
        let mut wheel = HashedWheel::new(ms, 512, 0, Precision::Exact).unwrap();
        // Keys 0..10 due at 1..10 ms (cancelled), 10 shares a bucket with
        // the live key 11 (due at 519.5 ms, a revolution later).
        for key in 0..10 {
            wheel.insert(key, (u64::from(key) + 1) * ms);
        }
        wheel.insert(10, 7 * ms + ms / 2);
        wheel.insert(11, 519 * ms + ms / 2);
        wheel.insert(12, 300 * ms);
        let mut removed = Vec::new();
        wheel.retain(|key| key >= 10, &mut removed);
        assert_eq!(removed, (0..10).collect::<Vec<_>>());
        assert_eq!(wheel.next_deadline(), Some(7 * ms + ms / 2));
        wheel.retain(|key| key != 10, &mut removed);
        assert_eq!(wheel.next_deadline(), Some(300 * ms), "exact");
        // A poll a tick before the staged bound places 11 and 12 in buckets.
        let mut due = Vec::new();
        wheel.poll(299 * ms, &mut due);
        assert_eq!(due, []);
        assert_eq!(wheel.next_deadline(), Some(300 * ms));
        assert!(wheel.remove(12));
        assert_eq!(wheel.next_deadline(), Some(519 * ms + ms / 2), "emptied");
        wheel.poll(519 * ms + ms / 2, &mut due);
        assert_eq!(
            due,
            [Expired {
                key: 11,
                deadline: 519 * ms + ms / 2
            }]
        );
    }

    /// New timers wait in the staging list, out of the buckets, until the
    /// earliest may come due; then all of them go to their buckets at once.
    /// A removal that empties the staging list takes its bound along; one
    /// that does not leaves it, and the poll it costs makes the bound exact.
    #[test]
    fn staged_timers_move_to_their_buckets_when_the_first_may_be_due() {
        let ms = 1_000_000;
        let mut wheel = HashedWheel::new(ms, 512, 0, Precision::Exact).unwrap();
        wheel.stage(1, 600 * ms);
        wheel.stage(2, 700 * ms);
        wheel.stage(3, 1_300 * ms); // more than a revolution away
        assert_eq!(
            wheel.occupied.iter().map(|w| w.count_ones()).sum::<u32>(),
            0
        );
        assert!(wheel.remove(1));
        assert_eq!(
            wheel.next_deadline(),
            Some(600 * ms),
            "a staged bound stays"
        );
        let mut due = Vec::new();
        wheel.poll(598 * ms, &mut due);
        assert_eq!(
            wheel.next_deadline(),
            Some(600 * ms),
            "not within a tick yet"
        );
        wheel.poll(599 * ms, &mut due);
        assert_eq!(due, []);
        assert_eq!(
            wheel.occupied.iter().map(|w| w.count_ones()).sum::<u32>(),
            2
        );
        assert_eq!(wheel.next_deadline(), Some(700 * ms), "exact once placed");
        wheel.stage(4, 650 * ms);
        assert!(wheel.remove(4));
        assert_eq!(wheel.next_deadline(), Some(700 * ms), "emptied: no bound");
        wheel.poll(1_300 * ms, &mut due);
        let keys: Vec<Key> = due.iter().map(|e| e.key).collect();
        assert_eq!(keys, [2, 3]);
        assert!(wheel.is_empty());
    }

    /// More staged timers than a poll places at once begin to move ahead of
    /// the earliest, a chunk a poll, by what placing them may take: the
    /// poll that runs the earliest has nothing left to place.
    #[test]
    fn many_staged_timers_move_a_chunk_a_poll_ahead_of_the_first() {
        // 1 ns ticks: the lead (50 ns a timer) spans many.
        let mut wheel = HashedWheel::new(1, 512, 0, Precision::Exact).unwrap();
        let (first, n) = (100_000, 7 * MOVE_CHUNK as u64);
        let polls = crate::core::test::polls_ahead_of_staged(&mut wheel, first, n);
        assert_eq!(polls, 6);
        assert_eq!(
            wheel.staging.len(),
            MOVE_CHUNK as u64,
            "the last chunk goes with the first timer"
        );
        let mut due = Vec::new();
        wheel.poll(first + n, &mut due);
        assert_eq!(due.len(), n as usize);
    }
}
