//! The pure core of `ScheduledThreadPool`: the JDK's `DelayedWorkQueue`
//! heap, without its lock, its condition variable or its clock.
//!
//! A 0-based binary min-heap of `(deadline, seq, item)` entries ordered by
//! deadline, then by sequence number, so ties come out first-in first-out
//! (the JDK's `ScheduledFutureTask.compareTo`). Every item knows where its
//! entry sits — [`Indexed`], the JDK's `heapIndex` — and every sift keeps
//! that index up to date, so removing a given item ([`DelayedWorkQueue::remove`])
//! costs O(log n) instead of a linear scan. An item off the heap reports
//! [`NOT_QUEUED`] (the JDK's `heapIndex = -1`).
//!
//! The heap holds at most one entry per item: the driver removes an item's
//! old entry before it pushes a new one (a reset), which is what makes one
//! index per item enough.
//!
//! Costs: `push` O(log n) (O(1) on average for random deadlines, as a new
//! entry rarely climbs far), `pop_due` and `remove` O(log n), `purge` O(n)
//! (one pass to filter, one bottom-up heapify, one pass to fix indices).
//!
//! The core never reads a clock: [`DelayedWorkQueue::pop_due`] takes `now`.

/// Index reported by an item that has no entry in the heap.
pub(crate) const NOT_QUEUED: usize = usize::MAX;

/// An item that remembers where its entry sits in the heap.
///
/// The heap only calls these while it is borrowed mutably, so a driver that
/// keeps the heap behind its lock may store the index in a relaxed atomic.
pub(crate) trait Indexed {
    /// The entry's index, or [`NOT_QUEUED`].
    fn heap_index(&self) -> usize;
    /// Records the entry's index ([`NOT_QUEUED`] once it leaves the heap).
    fn set_heap_index(&self, index: usize);
}

/// One queue entry.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    pub(crate) deadline: u64,
    pub(crate) seq: u64,
    pub(crate) item: T,
}

impl<T> Entry<T> {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.deadline, self.seq)
    }
}

/// A binary min-heap of entries whose items know their index.
#[derive(Debug)]
pub(crate) struct DelayedWorkQueue<T: Indexed> {
    heap: Vec<Entry<T>>,
}

impl<T: Indexed> DelayedWorkQueue<T> {
    pub(crate) fn new() -> DelayedWorkQueue<T> {
        DelayedWorkQueue { heap: Vec::new() }
    }

    /// Entries held (cancelled ones still waiting for a purge included).
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The earliest entry.
    pub(crate) fn peek(&self) -> Option<&Entry<T>> {
        self.heap.first()
    }

    /// Adds an entry; returns true if it became the head (the driver then
    /// resets the leader and signals, as the JDK's `offer` does).
    ///
    /// The item must have no entry in the heap yet.
    pub(crate) fn push(&mut self, deadline: u64, seq: u64, item: T) -> bool {
        debug_assert_eq!(item.heap_index(), NOT_QUEUED, "an item may have one entry");
        let at = self.heap.len();
        self.heap.push(Entry {
            deadline,
            seq,
            item,
        });
        self.sift_up(at) == 0
    }

    /// Removes and returns the head if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<Entry<T>> {
        match self.heap.first() {
            Some(head) if head.deadline <= now => Some(self.remove_at(0)),
            _ => None,
        }
    }

    /// Removes `item`'s entry, if it has one in this heap; `same` tells
    /// whether the entry at its recorded index really holds `item` (a
    /// defence against an index recorded by another heap).
    pub(crate) fn remove(&mut self, item: &T, same: impl Fn(&T, &T) -> bool) -> Option<Entry<T>> {
        let i = item.heap_index();
        if i < self.heap.len() && same(&self.heap[i].item, item) {
            Some(self.remove_at(i))
        } else {
            None
        }
    }

    /// Removes every entry `keep` rejects and returns them, so that the
    /// caller can drop them (and run their items' destructors) outside its
    /// lock; O(n).
    pub(crate) fn purge(&mut self, mut keep: impl FnMut(&Entry<T>) -> bool) -> Vec<Entry<T>> {
        let mut kept = 0;
        for i in 0..self.heap.len() {
            if keep(&self.heap[i]) {
                self.heap.swap(kept, i);
                kept += 1;
            }
        }
        let removed = self.heap.split_off(kept);
        for e in &removed {
            e.item.set_heap_index(NOT_QUEUED);
        }
        if !removed.is_empty() {
            self.heapify();
            // Give back what a burst left behind, keeping room to grow.
            if self.heap.capacity() > 4 * self.heap.len() + 64 {
                self.heap.shrink_to(2 * self.heap.len());
            }
        }
        removed
    }

    /// Empties the heap, earliest first; every item is marked off the heap.
    pub(crate) fn drain_sorted(&mut self) -> Vec<Entry<T>> {
        let mut all = std::mem::take(&mut self.heap);
        all.sort_unstable_by_key(Entry::key);
        for e in &all {
            e.item.set_heap_index(NOT_QUEUED);
        }
        all
    }

    fn remove_at(&mut self, i: usize) -> Entry<T> {
        let last = self.heap.len() - 1;
        self.heap.swap(i, last);
        let removed = self.heap.pop().expect("a non-empty heap");
        removed.item.set_heap_index(NOT_QUEUED);
        if i < last {
            // The moved entry may belong above or below `i`.
            let at = self.sift_down(i);
            if at == i {
                self.sift_up(i);
            }
        }
        removed
    }

    /// Moves the entry at `i` up to its place; returns where it landed.
    /// Each entry passed gets its new index once.
    fn sift_up(&mut self, mut i: usize) -> usize {
        let key = self.heap[i].key();
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent].key() <= key {
                break;
            }
            self.heap.swap(i, parent);
            self.heap[i].item.set_heap_index(i);
            i = parent;
        }
        self.heap[i].item.set_heap_index(i);
        i
    }

    /// Moves the entry at `i` down to its place; returns where it landed.
    fn sift_down(&mut self, mut i: usize) -> usize {
        let len = self.heap.len();
        let key = self.heap[i].key();
        loop {
            let left = 2 * i + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].key() < self.heap[left].key() {
                right
            } else {
                left
            };
            if key <= self.heap[child].key() {
                break;
            }
            self.heap.swap(i, child);
            self.heap[i].item.set_heap_index(i);
            i = child;
        }
        self.heap[i].item.set_heap_index(i);
        i
    }

    fn heapify(&mut self) {
        let len = self.heap.len();
        for i in (0..len / 2).rev() {
            self.sift_down_quiet(i);
        }
        for (i, e) in self.heap.iter().enumerate() {
            e.item.set_heap_index(i);
        }
    }

    /// `sift_down` without index updates (heapify fixes them all after).
    fn sift_down_quiet(&mut self, mut i: usize) {
        let len = self.heap.len();
        let key = self.heap[i].key();
        loop {
            let left = 2 * i + 1;
            if left >= len {
                return;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].key() < self.heap[left].key() {
                right
            } else {
                left
            };
            if key <= self.heap[child].key() {
                return;
            }
            self.heap.swap(i, child);
            i = child;
        }
    }

    /// Room reserved (tests only).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.heap.capacity()
    }

    /// Checks the heap order and every index (tests only).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        for (i, e) in self.heap.iter().enumerate() {
            assert_eq!(e.item.heap_index(), i, "index of entry {i}");
            if i > 0 {
                assert!(self.heap[(i - 1) / 2].key() <= e.key(), "heap order at {i}");
            }
        }
    }
}
