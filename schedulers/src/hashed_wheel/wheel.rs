//! The pure core of `HashedWheelTimer`: a flat hashed timing wheel
//! (Varghese and Lauck's scheme 6) whose timers live in a slab.
//!
//! It owns no thread and reads no clock: the caller counts time in *ticks*
//! and passes `now`. A timer due at tick `t` sits in slot `t & mask` of a
//! ring of `2^k` slots; the cursor visits one slot per tick, and a timer
//! whose deadline is one or more revolutions away stays in its slot for
//! that many visits (its *remaining rounds*, Netty's `remainingRounds`).
//!
//! # Layout
//!
//! Timers live in one `Vec` (a slab) and are named by their index, a
//! [`Key`]. Each slot is a doubly linked list threaded through the slab by
//! `u32` indices, so unlinking a timer is O(1) with no scan of its slot and
//! no raw pointers. The first entry's `prev` and the last entry's `next`
//! hold the slot number (with a tag bit) instead of a neighbour, so an
//! entry needs no separate "which slot" field to be unlinked. Freed slab
//! entries form a free list and are reused, so steady-state churn does not
//! allocate. An entry is 32 bytes (item pointer, sequence, deadline tick
//! and two links), two to a cache line.
//!
//! # Rounds
//!
//! Netty stores `remainingRounds` and decrements it at every visit of the
//! slot. This core stores the absolute deadline tick instead, from which the
//! remaining rounds follow (`(deadline - now) >> log2(slots)`): a visit
//! reads but never writes a timer that is not due, and a jump of many ticks
//! (a virtual clock moved by an hour, a thread that slept) is processed in
//! one sweep of the ring, O(slots + timers), instead of tick by tick.
//!
//! # Deferred move (go-zero's `MoveTimer`)
//!
//! [`Wheel::reschedule`] changes a timer's deadline. When the new deadline
//! is later — the usual case, a keep-alive pushing a timeout further out —
//! only the entry's deadline and sequence are written: its current slot is
//! visited no later than the old deadline, and that visit moves it to the
//! new slot, as go-zero's `TimingWheel` does with its `diff`. A timer moved
//! earlier is relinked at once. Either way the cost is O(1), and repeated
//! resets of one timer between two visits cost one write each, touching
//! no neighbour. The invariant: a timer sits in the slot of its deadline
//! tick, or in a slot visited before that tick, or in the ready list.
//!
//! # Order
//!
//! [`Wheel::advance`] returns the expired timers sorted by deadline tick
//! and then by sequence number, so timers expiring in the same tick come
//! out in submission order even after moves; it never returns a timer
//! before its tick.

/// Names a timer in the wheel (its slab index).
pub(crate) type Key = u32;

/// No neighbour: the tag bit marks a link that holds a list number.
const LIST_TAG: u32 = 1 << 31;
/// Largest ring the core supports: 2^24 slots, 128 MB of slot table
/// (Netty allows 2^30, an 8 GB table here).
pub(crate) const MAX_SLOTS: usize = 1 << 24;

/// The ring size for a requested one: rounded up to a power of two,
/// clamped to 1 ..= [`MAX_SLOTS`].
pub(crate) fn ring_size(requested: usize) -> usize {
    requested.clamp(1, MAX_SLOTS).next_power_of_two()
}

#[derive(Debug)]
struct Entry<T> {
    /// `None` for a free entry.
    item: Option<T>,
    seq: u64,
    /// Deadline in ticks. May differ from the slot's tick when a move is
    /// deferred.
    tick: u64,
    /// Previous entry, or `LIST_TAG | list` for the first one.
    prev: u32,
    /// Next entry, or `LIST_TAG | list` for the last one; the next free
    /// entry while free.
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: u32 = u32::MAX;

impl List {
    const EMPTY: List = List {
        head: EMPTY,
        tail: EMPTY,
    };
}

/// A timer that came due.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Expired<T> {
    /// Its deadline tick.
    pub(crate) tick: u64,
    pub(crate) seq: u64,
    pub(crate) item: T,
}

/// A flat hashed timing wheel. See the module docs.
#[derive(Debug)]
pub(crate) struct Wheel<T> {
    mask: u64,
    /// One list per slot, then the `ready` list of timers inserted at or
    /// before the cursor (due at the next `advance`).
    lists: Vec<List>,
    entries: Vec<Entry<T>>,
    free: u32,
    len: usize,
    /// The last tick processed.
    cursor: u64,
}

impl<T> Wheel<T> {
    /// A wheel of `slots` slots (rounded up to a power of two, at least 1,
    /// at most [`MAX_SLOTS`]) whose ticks up to `now` count as processed.
    pub(crate) fn new(slots: usize, now: u64) -> Wheel<T> {
        let slots = ring_size(slots);
        Wheel {
            mask: slots as u64 - 1,
            lists: vec![List::EMPTY; slots + 1],
            entries: Vec::new(),
            free: EMPTY,
            len: 0,
            cursor: now,
        }
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> usize {
        self.mask as usize + 1
    }

    fn ready(&self) -> u32 {
        self.slots() as u32
    }

    /// Timers held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slab entries ever allocated (held or free).
    #[cfg(test)]
    pub(crate) fn slab_size(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first tick after the cursor whose slot holds a timer, looking at
    /// most `limit` (≥ 1) ticks ahead; `cursor + limit` if none does. A
    /// timer in the ready list makes it the next tick. The worker sleeps
    /// until then: no timer can be due earlier.
    pub(crate) fn next_occupied(&self, limit: u64) -> u64 {
        let limit = limit.max(1);
        if self.lists[self.ready() as usize].head != EMPTY {
            return self.cursor + 1;
        }
        let span = limit.min(self.mask + 1);
        (1..=span)
            .map(|d| self.cursor + d)
            .find(|t| self.lists[(t & self.mask) as usize].head != EMPTY)
            .unwrap_or(self.cursor + limit)
    }

    /// True if a timer is due at or before `now` and not yet returned.
    /// Exact for the ready list; otherwise any timer counts once a tick
    /// is left unprocessed (a cheap, conservative answer).
    pub(crate) fn may_have_due(&self, now: u64) -> bool {
        self.lists[self.ready() as usize].head != EMPTY || (self.len > 0 && self.cursor < now)
    }

    /// The item of a held timer.
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        self.entries.get(key as usize).and_then(|e| e.item.as_ref())
    }

    /// Adds a timer due at `tick` (at the next `advance` if `tick` is not
    /// after the cursor). `seq` orders timers due in the same tick.
    ///
    /// # Panics
    ///
    /// Panics if the slab would exceed 2^31 timers.
    pub(crate) fn insert(&mut self, tick: u64, seq: u64, item: T) -> Key {
        let key = if self.free != EMPTY {
            let key = self.free;
            let e = &mut self.entries[key as usize];
            self.free = e.next;
            e.item = Some(item);
            e.seq = seq;
            e.tick = tick;
            key
        } else {
            let key = self.entries.len();
            assert!(
                key < LIST_TAG as usize,
                "a timing wheel holds at most 2^31 timers"
            );
            self.entries.push(Entry {
                item: Some(item),
                seq,
                tick,
                prev: EMPTY,
                next: EMPTY,
            });
            key as u32
        };
        self.len += 1;
        let list = self.list_for(tick);
        self.link(key, list);
        key
    }

    /// Removes a timer; returns its item, or `None` if `key` holds none.
    pub(crate) fn cancel(&mut self, key: Key) -> Option<T> {
        self.entries.get(key as usize)?.item.as_ref()?;
        self.unlink(key);
        Some(self.release(key))
    }

    /// Moves a held timer to deadline `tick` under sequence `seq`, in O(1).
    /// A later deadline is only written down: the timer's slot is visited
    /// by its old deadline, and that visit moves it (see the module docs).
    /// An earlier one relinks it at once. Returns false if `key` holds no
    /// timer.
    pub(crate) fn reschedule(&mut self, key: Key, tick: u64, seq: u64) -> bool {
        let Some(e) = self.entries.get_mut(key as usize) else {
            return false;
        };
        if e.item.is_none() {
            return false;
        }
        let later = tick >= e.tick;
        e.seq = seq;
        e.tick = tick;
        if !later {
            self.unlink(key);
            let list = self.list_for(tick);
            self.link(key, list);
        }
        true
    }

    /// Processes every tick up to and including `now` and appends the
    /// timers due by then to `out`, sorted by (deadline tick, sequence).
    /// Ticks at or before the cursor are not processed again.
    pub(crate) fn advance(&mut self, now: u64, out: &mut Vec<Expired<T>>) {
        let start = out.len();
        self.drain_ready(now, out);
        if now > self.cursor {
            if self.len == 0 {
                self.cursor = now;
            } else if now - self.cursor > self.mask {
                // At least a revolution: one sweep of every slot.
                for slot in 0..=self.mask as u32 {
                    self.visit(slot, now, out);
                }
                self.cursor = now;
            } else {
                while self.cursor < now {
                    self.cursor += 1;
                    let slot = (self.cursor & self.mask) as u32;
                    self.visit(slot, self.cursor, out);
                    if self.len == 0 {
                        self.cursor = now;
                    }
                }
            }
        }
        let batch = &mut out[start..];
        if !batch.is_sorted_by_key(|e| (e.tick, e.seq)) {
            batch.sort_unstable_by_key(|e| (e.tick, e.seq));
        }
    }

    /// Removes every timer, sorted by (deadline tick, sequence).
    pub(crate) fn drain(&mut self) -> Vec<Expired<T>> {
        let mut out = Vec::with_capacity(self.len);
        for key in 0..self.entries.len() as u32 {
            if self.entries[key as usize].item.is_some() {
                let e = &self.entries[key as usize];
                let (tick, seq) = (e.tick, e.seq);
                let item = self.release(key);
                out.push(Expired { tick, seq, item });
            }
        }
        self.lists.fill(List::EMPTY);
        self.entries.clear();
        self.free = EMPTY;
        self.len = 0;
        out.sort_unstable_by_key(|e| (e.tick, e.seq));
        out
    }

    /// Visits `slot` at tick `at`: expires what is due by `at`, carries out
    /// deferred moves, leaves the rest for a later round.
    fn visit(&mut self, slot: u32, at: u64, out: &mut Vec<Expired<T>>) {
        let mut key = self.lists[slot as usize].head;
        while key != EMPTY && key & LIST_TAG == 0 {
            let e = &self.entries[key as usize];
            let next = e.next;
            let tick = e.tick;
            if tick <= at {
                let seq = e.seq;
                self.unlink(key);
                let item = self.release(key);
                out.push(Expired { tick, seq, item });
            } else if (tick & self.mask) as u32 != slot {
                // A deferred move: its own slot is visited by `tick`.
                self.unlink(key);
                self.link(key, (tick & self.mask) as u32);
            }
            key = next;
        }
    }

    /// Expires the ready list; a timer moved later since it was put there
    /// goes to its slot instead.
    fn drain_ready(&mut self, now: u64, out: &mut Vec<Expired<T>>) {
        let ready = self.ready();
        let mut key = self.lists[ready as usize].head;
        self.lists[ready as usize] = List::EMPTY;
        while key != EMPTY && key & LIST_TAG == 0 {
            let e = &self.entries[key as usize];
            let (next, tick, seq) = (e.next, e.tick, e.seq);
            if tick <= now {
                let item = self.release(key);
                out.push(Expired { tick, seq, item });
            } else {
                let list = self.list_for(tick);
                self.link(key, list);
            }
            key = next;
        }
    }

    fn list_for(&self, tick: u64) -> u32 {
        if tick <= self.cursor {
            self.ready()
        } else {
            (tick & self.mask) as u32
        }
    }

    /// Appends `key` to `list`.
    fn link(&mut self, key: Key, list: u32) {
        let tail = self.lists[list as usize].tail;
        {
            let e = &mut self.entries[key as usize];
            e.next = LIST_TAG | list;
            e.prev = if tail == EMPTY { LIST_TAG | list } else { tail };
        }
        if tail == EMPTY {
            self.lists[list as usize].head = key;
        } else {
            self.entries[tail as usize].next = key;
        }
        self.lists[list as usize].tail = key;
    }

    fn unlink(&mut self, key: Key) {
        let (prev, next) = {
            let e = &self.entries[key as usize];
            (e.prev, e.next)
        };
        if prev & LIST_TAG != 0 {
            self.lists[(prev & !LIST_TAG) as usize].head =
                if next & LIST_TAG != 0 { EMPTY } else { next };
        } else {
            self.entries[prev as usize].next = next;
        }
        if next & LIST_TAG != 0 {
            self.lists[(next & !LIST_TAG) as usize].tail =
                if prev & LIST_TAG != 0 { EMPTY } else { prev };
        } else {
            self.entries[next as usize].prev = prev;
        }
    }

    /// Frees an unlinked entry and returns its item.
    fn release(&mut self, key: Key) -> T {
        let e = &mut self.entries[key as usize];
        e.next = self.free;
        self.free = key;
        self.len -= 1;
        e.item.take().expect("a linked entry holds an item")
    }
}
