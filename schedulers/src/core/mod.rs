//! The pure cores: single-threaded, poll-driven timer queues.
//!
//! Every scheduler of this crate is a *driver* (threads, a clock, an
//! executor) around one of these queues. They own no thread and never read a
//! clock: time is a `u64` of nanoseconds from any origin you like, passed in
//! to [`TimerQueue::poll`]. That makes them usable on their own inside an
//! event loop, the way tokio-util's `DelayQueue` or Netty's wheel is used:
//! insert, reschedule and remove timers as events arrive, ask
//! [`TimerQueue::next_deadline`] how long the loop may sleep, and
//! [`TimerQueue::poll`] what came due.
//!
//! | Queue | Structure | insert / remove / reschedule | poll per expired | Pick it when |
//! |---|---|---|---|---|
//! | [`IndexedHeap`] | binary heap with positions (JDK `DelayedWorkQueue`) | O(log n) | O(log n) | exact deadlines, up to ~10^5 timers |
//! | [`HashedWheel`] | flat ring of lists with rounds (Netty) | O(1) | O(1), plus one bucket per tick | many timers, most cancelled or reset |
//! | [`HierarchicalWheel`] | wheels of lists + delay queue of buckets (Kafka) | O(1) | O(levels) | very many timers, far away; idle costs nothing |
//!
//! # Keys
//!
//! A queue orders *keys*, small integers the caller allocates (typically
//! indices into the caller's own slab of timers, from 0 up: the queue keeps
//! a few bytes per key in a dense array). A key is in a queue at most once.
//! What a key stands for — a closure, a connection, a message id — stays
//! with the caller, so a queue never allocates per timer once grown.
//!
//! # Order
//!
//! [`TimerQueue::poll`] returns keys never before their deadline, sorted by
//! deadline (the heap) or by tick (the wheels, which may reorder deadlines
//! within one tick), ties in the order the keys were inserted or last
//! rescheduled.
//!
//! # Examples
//!
//! An event loop's idle timeouts on a hashed wheel:
//!
//! ```
//! use schedulers::core::{HashedWheel, Precision, TimerQueue};
//!
//! const MS: u64 = 1_000_000;
//! let mut timeouts = HashedWheel::new(MS, 1024, 0, Precision::Exact).unwrap();
//! let connections = ["a", "b", "c"];
//! for (key, _) in connections.iter().enumerate() {
//!     timeouts.insert(key as u32, 30_000 * MS); // 30 s idle timeout
//! }
//! timeouts.reschedule(1, 45_000 * MS); // "b" sent a heartbeat
//! timeouts.remove(2); // "c" closed
//!
//! let mut due = Vec::new();
//! timeouts.poll(40_000 * MS, &mut due);
//! let closed: Vec<&str> = due.iter().map(|e| connections[e.key as usize]).collect();
//! assert_eq!(closed, ["a"]);
//! assert_eq!(timeouts.next_deadline(), Some(45_000 * MS));
//! ```

mod due;
pub mod hashed_wheel;
pub mod heap;
pub mod hierarchical;
pub(crate) mod list;
mod staging;
#[cfg(test)]
mod test;

pub use hashed_wheel::{HashedWheel, Precision, WheelError, MAX_BUCKETS};
pub use heap::IndexedHeap;
pub use hierarchical::HierarchicalWheel;

/// Names a timer in a queue: a small integer the caller allocates.
pub type Key = u32;

/// Keys stay below this (the wheels' lists tag links with the top bit).
pub(crate) const MAX_KEYS: usize = 1 << 31;

/// Keys a queue's per-key array grows by at a time, out of line: keys come
/// in increasing order as a scheduler fills, and a `resize` each key cost
/// an insert twice its own work (the wheels' nodes, 1.3 KB a step; the
/// heap's positions).
pub(crate) const GROW: usize = 64;

/// Timers one poll moves ahead of their time, at most (a hierarchical
/// wheel's cascade down a level, any queue's staged timers to their
/// places); the rest wait for the next poll, so timers due meanwhile wait
/// for a chunk (tens of microseconds), not for the whole move.
#[cfg(not(test))]
pub(crate) const MOVE_CHUNK: usize = 256;
/// Small in tests, so that the model test meets moves spread over polls.
#[cfg(test)]
pub(crate) const MOVE_CHUNK: usize = 3;

/// What moving a timer may take a driver, ns, at the most: a move ahead of
/// time begins this much a timer before the first deadline it serves, so
/// that it is over by then. A driver here moved 256 timers down a level in
/// 8-9 µs a poll, its loop included: 33 ns a timer.
pub(crate) const MOVE_NS_PER_TIMER: u64 = 50;

/// When a poll begins to move `n` timers ahead of their time, the earliest
/// due at `earliest`: [`MOVE_NS_PER_TIMER`] a timer before it, a chunk a
/// poll, if they are more than a chunk; fewer go in the poll that runs the
/// earliest (moving them ahead would cost a wake-up).
pub(crate) fn move_from(earliest: u64, n: u64) -> u64 {
    if n <= MOVE_CHUNK as u64 {
        return earliest;
    }
    earliest.saturating_sub(n.saturating_mul(MOVE_NS_PER_TIMER))
}

/// Entries a buffer keeps when a driver trims it before it sleeps (see
/// `trim`): past this, what a burst made it hold goes back to the allocator
/// once the burst is over (16 bytes an entry of the driver's ready queue:
/// 16 MB after 10^6 timers due at once), instead of staying for the next.
pub(crate) const IDLE_KEEP: usize = 1 << 16;

/// Gives back what `v`, empty, holds beyond [`IDLE_KEEP`] entries.
pub(crate) fn trim<T>(v: &mut Vec<T>) {
    if v.is_empty() && v.capacity() > IDLE_KEEP {
        v.shrink_to(IDLE_KEEP);
    }
}

/// A timer that came due: its key and the deadline it was due at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expired {
    /// The timer's key.
    pub key: Key,
    /// Its deadline, in the queue's nanoseconds.
    pub deadline: u64,
}

/// A single-threaded queue of timers keyed by [`Key`], driven by polling.
///
/// Times are nanoseconds on any monotonic scale the caller chooses, the
/// same for every call. See the [module docs](self).
pub trait TimerQueue {
    /// Adds `key`, due at `deadline`. The key must not be in the queue
    /// (checked in debug builds).
    fn insert(&mut self, key: Key, deadline: u64);

    /// As [`TimerQueue::insert`], for a new timer that is likely to be
    /// removed long before its deadline (a timeout): the queue may defer
    /// the work of ordering it until it may come due, so that a timer
    /// removed or purged first costs next to nothing. All three queues
    /// here do; by default it is `insert`.
    fn stage(&mut self, key: Key, deadline: u64) {
        self.insert(key, deadline);
    }

    /// Removes `key`; false if it was not in the queue.
    fn remove(&mut self, key: Key) -> bool;

    /// Moves `key` to a new deadline, earlier or later; among ties it now
    /// counts as inserted last. False (and nothing changes) if it was not
    /// in the queue.
    fn reschedule(&mut self, key: Key, deadline: u64) -> bool;

    /// Removes every timer due at `now` and appends it to `expired`, in
    /// order (see the [module docs](self#order)).
    fn poll(&mut self, now: u64, expired: &mut Vec<Expired>);

    /// The earliest time at which [`TimerQueue::poll`] may return a timer:
    /// a driver may sleep until then. `None` when the queue is empty. It may
    /// be earlier than the first real deadline (a wheel keeps lower bounds
    /// after removals), never later. It may even be in the past right after
    /// a poll, while a queue spreads work that is not due yet over polls
    /// ([`HierarchicalWheel`] moves a large bucket down a chunk per poll):
    /// poll again, as for any deadline that passed.
    fn next_deadline(&self) -> Option<u64>;

    /// Removes every timer, due or not, appending them in order.
    fn drain(&mut self, out: &mut Vec<Expired>);

    /// Removes, in one pass, every key that `keep` rejects, appending it to
    /// `removed`: a bulk purge of timers cancelled lazily.
    fn retain(&mut self, keep: impl FnMut(Key) -> bool, removed: &mut Vec<Key>)
    where
        Self: Sized;

    /// Timers in the queue.
    fn len(&self) -> usize;

    /// True when no timer is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if `key` is in the queue.
    fn contains(&self, key: Key) -> bool;

    /// The deadline `key` is queued for.
    fn deadline(&self, key: Key) -> Option<u64>;
}
