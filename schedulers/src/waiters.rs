//! Where threads and futures wait for a task to end.
//!
//! A task pays no memory for a condition variable or a waker it rarely
//! needs: a waiter sets the `WAITER` bit in the task's state word and parks
//! in one of a few shared buckets chosen by the task's identity (a thread on
//! the bucket's condition variable, a future by leaving its waker there);
//! whoever ends the task sees the bit and wakes the bucket.

use std::sync::{Condvar, Mutex};
use std::task::Waker;
use std::time::Duration;

use crate::clock::{lock, Clock as _, SystemClock};
use crate::error::{Error, Kind};

struct Bucket {
    /// The wakers of futures waiting on tasks of this bucket.
    mutex: Mutex<Vec<(usize, Waker)>>,
    cond: Condvar,
}

static BUCKETS: [Bucket; 64] = [const {
    Bucket {
        mutex: Mutex::new(Vec::new()),
        cond: Condvar::new(),
    }
}; 64];

fn bucket(id: usize) -> &'static Bucket {
    &BUCKETS[(id ^ (id >> 17)) % BUCKETS.len()]
}

/// Blocks until `ended` returns a value or `timeout` (real time) runs out.
/// `ended` is checked under the bucket's lock, so a [`wake`] cannot slip
/// between the check and the wait.
pub(crate) fn wait<T>(
    id: usize,
    timeout: Option<Duration>,
    mut ended: impl FnMut() -> Option<T>,
) -> Result<T, Error> {
    let bucket = bucket(id);
    let give_up = timeout.and_then(|t| SystemClock.now().checked_add(t));
    let mut guard = lock(&bucket.mutex);
    loop {
        if let Some(value) = ended() {
            return Ok(value);
        }
        guard = match (timeout, give_up) {
            (Some(_), Some(end)) => {
                let left = end.saturating_duration_since(SystemClock.now());
                if left.is_zero() {
                    return Err(Error::new(Kind::Timeout));
                }
                bucket
                    .cond
                    .wait_timeout(guard, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            // No timeout, or one too large for `Instant`: wait until woken.
            _ => bucket.cond.wait(guard).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

/// Leaves `waker` to be woken when `id` ends, unless `ended` (checked
/// under the bucket's lock) says it already has. Returns what `ended` found.
pub(crate) fn register<T>(
    id: usize,
    waker: &Waker,
    ended: impl FnOnce() -> Option<T>,
) -> Option<T> {
    let mut wakers = lock(&bucket(id).mutex);
    if let Some(value) = ended() {
        return Some(value);
    }
    match wakers
        .iter_mut()
        .find(|(i, w)| *i == id && w.will_wake(waker))
    {
        Some(_) => {}
        None => wakers.push((id, waker.clone())),
    }
    None
}

/// Wakes every thread and future waiting on `id`'s bucket.
pub(crate) fn wake(id: usize) {
    let bucket = bucket(id);
    let mut wakers = lock(&bucket.mutex);
    bucket.cond.notify_all();
    let mut woken = Vec::new();
    wakers.retain(|(i, w)| {
        if *i == id {
            woken.push(w.clone());
        }
        *i != id
    });
    drop(wakers);
    woken.into_iter().for_each(Waker::wake);
}
