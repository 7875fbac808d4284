//! The pure core of `HeapTimer`: a binary min-heap of `(deadline, seq, item)`
//! entries with lazy removal.
//!
//! It owns no thread and reads no clock: callers pass `now`. Entries are
//! ordered by deadline, then by sequence number, so ties come out in
//! submission order (`java.util.Timer` has no tie-breaker; we add one).
//!
//! Removal is lazy, as in Go's runtime timers and `java.util.Timer`: a
//! cancelled or moved entry stays in the heap, the caller's `is_live` says
//! which entries still count, dead ones are dropped when they reach the top,
//! and [`TimerHeap::purge`] drops all of them in one O(n) pass. The driver
//! purges once dead entries outnumber live ones, so memory stays within a
//! constant factor of the live set and a cancel costs O(1) amortised.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// One queue entry.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    pub(crate) deadline: u64,
    pub(crate) seq: u64,
    pub(crate) item: T,
}

impl<T> Entry<T> {
    fn key(&self) -> (u64, u64) {
        (self.deadline, self.seq)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// A min-heap of timer entries.
#[derive(Debug)]
pub(crate) struct TimerHeap<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
}

impl<T> TimerHeap<T> {
    pub(crate) fn new() -> TimerHeap<T> {
        TimerHeap {
            heap: BinaryHeap::new(),
        }
    }

    /// Entries held, dead ones included.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    pub(crate) fn push(&mut self, deadline: u64, seq: u64, item: T) {
        self.heap.push(Reverse(Entry {
            deadline,
            seq,
            item,
        }));
    }

    /// The earliest entry, dead or alive.
    pub(crate) fn peek(&self) -> Option<&Entry<T>> {
        self.heap.peek().map(|Reverse(e)| e)
    }

    pub(crate) fn pop(&mut self) -> Option<Entry<T>> {
        self.heap.pop().map(|Reverse(e)| e)
    }

    /// Pops the earliest entry if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<Entry<T>> {
        match self.peek() {
            Some(e) if e.deadline <= now => self.pop(),
            _ => None,
        }
    }

    /// Removes every entry `is_live` rejects, in O(n), and returns them
    /// (so the caller chooses where they are dropped).
    pub(crate) fn purge(&mut self, mut is_live: impl FnMut(&Entry<T>) -> bool) -> Vec<Entry<T>> {
        let mut all = std::mem::take(&mut self.heap).into_vec();
        let dead: Vec<Entry<T>> = all
            .extract_if(.., |Reverse(e)| !is_live(e))
            .map(|Reverse(e)| e)
            .collect();
        self.heap = BinaryHeap::from(all);
        dead
    }

    /// Empties the heap, earliest first.
    pub(crate) fn drain_sorted(&mut self) -> Vec<Entry<T>> {
        let mut all: Vec<Entry<T>> = std::mem::take(&mut self.heap)
            .into_iter()
            .map(|Reverse(e)| e)
            .collect();
        all.sort_unstable();
        all
    }
}
