//! The delay queue of buckets: Kafka's `DelayQueue<TimerTaskList>`, keyed
//! by each bucket's expiration.
//!
//! A bucket is offered when it gets its first timer in a wheel revolution,
//! so the queue holds at most one entry per bucket (`levels × wheel size`
//! entries, a few hundred at most) however many timers are pending. It is
//! an indexed heap from the `priority-queue` crate: unlike Java's
//! `DelayQueue` it can drop a bucket that a cancel emptied, so the driver
//! does not wake up for nothing. Costs O(log b) per offer, poll or removal,
//! for b buckets in the queue; nothing here is per timer.

use std::cmp::Reverse;

use priority_queue::PriorityQueue;

/// Buckets (by index in the wheels) ordered by expiration (in ticks), earliest first.
#[derive(Debug, Default)]
pub(crate) struct DelayQueue {
    queue: PriorityQueue<u32, Reverse<u64>>,
}

impl DelayQueue {
    pub(crate) fn new() -> DelayQueue {
        DelayQueue::default()
    }

    /// Queues `bucket` to expire at `expiration`, or moves it there if it
    /// is already queued.
    pub(crate) fn offer(&mut self, bucket: u32, expiration: u64) {
        self.queue.push(bucket, Reverse(expiration));
    }

    /// Takes `bucket` out of the queue, if it is there.
    pub(crate) fn remove(&mut self, bucket: u32) {
        self.queue.remove(&bucket);
    }

    /// The earliest expiration queued.
    pub(crate) fn peek_expiration(&self) -> Option<u64> {
        self.queue.peek().map(|(_, Reverse(e))| *e)
    }

    /// Takes the earliest bucket if it has expired at `now` (ticks).
    pub(crate) fn poll(&mut self, now: u64) -> Option<(u32, u64)> {
        match self.peek_expiration() {
            Some(e) if e <= now => self.queue.pop().map(|(k, Reverse(e))| (k, e)),
            _ => None,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}
