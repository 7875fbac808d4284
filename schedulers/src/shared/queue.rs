//! The algorithm's pure queue behind one type: the four schedulers differ
//! only in which core they hold.

use crate::core::{Expired, HashedWheel, HierarchicalWheel, IndexedHeap, Key, TimerQueue};

/// The algorithm's pure queue.
#[derive(Debug)]
pub(crate) enum Queue {
    Heap(IndexedHeap),
    Wheel(HashedWheel),
    Hier(HierarchicalWheel),
}

macro_rules! dispatch {
    ($queue:expr, $q:ident => $body:expr) => {
        match $queue {
            Queue::Heap($q) => $body,
            Queue::Wheel($q) => $body,
            Queue::Hier($q) => $body,
        }
    };
}

impl Queue {
    pub(crate) fn insert(&mut self, key: Key, deadline: u64) {
        dispatch!(self, q => q.insert(key, deadline))
    }
    pub(super) fn stage(&mut self, key: Key, deadline: u64) {
        dispatch!(self, q => q.stage(key, deadline))
    }
    pub(super) fn remove(&mut self, key: Key) -> bool {
        dispatch!(self, q => q.remove(key))
    }
    pub(super) fn reschedule(&mut self, key: Key, deadline: u64) -> bool {
        dispatch!(self, q => q.reschedule(key, deadline))
    }
    pub(super) fn poll(&mut self, now: u64, out: &mut Vec<Expired>) {
        dispatch!(self, q => q.poll(now, out))
    }
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        dispatch!(self, q => q.next_deadline())
    }
    pub(super) fn drain(&mut self, out: &mut Vec<Expired>) {
        dispatch!(self, q => q.drain(out))
    }
    pub(super) fn retain(&mut self, keep: impl FnMut(Key) -> bool, removed: &mut Vec<Key>) {
        dispatch!(self, q => q.retain(keep, removed))
    }
    pub(crate) fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(super) fn contains(&self, key: Key) -> bool {
        dispatch!(self, q => q.contains(key))
    }
    /// How late the queue may hand out a deadline, in nanoseconds: a
    /// wheel's tick.
    pub(super) fn granularity(&self) -> u64 {
        match self {
            Queue::Heap(_) => 0,
            Queue::Wheel(q) => q.tick(),
            Queue::Hier(q) => q.tick(),
        }
    }
    /// Gives back what a burst made the queue's buffers hold.
    pub(super) fn trim(&mut self) {
        dispatch!(self, q => q.trim())
    }
    pub(super) fn deadline(&self, key: Key) -> Option<u64> {
        dispatch!(self, q => q.deadline(key))
    }
}
