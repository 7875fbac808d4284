//! What handles do: cancel, reset, ask and wait.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use std::task::Waker;
use std::time::{Duration, Instant};

use super::{Inner, Shared, When, AUTO_PURGE_MIN};

use crate::core::Key;
use crate::error::{Error, Kind};
use crate::state::{self, Cancel};
use crate::task;

impl Shared {
    /// Stops every future run of `key`; true iff this call did.
    pub(crate) fn cancel(&self, key: Key) -> bool {
        let (outcome, prev) = state::cancel(self.word(key));
        match outcome {
            Cancel::WasPending { needs_drop } => {
                let shard = self.cancels.mine();
                let n = shard.pending.fetch_add(1, Relaxed) + 1;
                // Every so often, see whether dead entries now pay a purge
                // (summing the shards is too dear for every cancel).
                let purge = n.is_multiple_of(AUTO_PURGE_MIN as u64)
                    && self.cancels.pending() >= self.purge_at.load(Relaxed);
                if needs_drop || self.remove_on_cancel || purge || self.is_shutdown() {
                    let mut inner = self.lock();
                    let body = if needs_drop {
                        inner.bodies[key as usize].take()
                    } else {
                        None
                    };
                    if (self.remove_on_cancel || self.is_shutdown()) && inner.queue.remove(key) {
                        inner.reclaimed += 1;
                        self.release_locked(&mut inner, key);
                    }
                    inner.purge_requested |= purge;
                    drop(inner);
                    if purge || self.is_shutdown() {
                        self.wakeup.notify_all();
                    }
                    task::drop_contained(body);
                }
                self.wake_waiters(key, prev);
            }
            Cancel::WasRunning => {
                self.cancels.mine().running.fetch_add(1, Relaxed);
            }
            Cancel::TooLate => {}
        }
        outcome.stopped()
    }

    /// Moves a waiting task to a new deadline.
    pub(crate) fn reset(&self, key: Key, when: When) -> Result<bool, Error> {
        let deadline = self.deadline(when)?;
        let mut inner = self.lock();
        if state::of(self.word(key).load(Acquire)) != state::SCHEDULED {
            return Ok(false);
        }
        if !inner.queue.reschedule(key, deadline) {
            // Due and waiting for a thread: queue it again; the waiting
            // reference will find it queued and let go.
            state::acquire(self.word(key));
            inner.queue.insert(key, deadline);
        }
        let wake = self.wakes_for(&mut inner, key, deadline);
        drop(inner);
        if wake {
            self.wakeup.notify_one();
        }
        Ok(true)
    }

    /// The deadline of the next run, while the task waits for it (a task
    /// that is due and waiting for a thread has none any more).
    pub(crate) fn deadline_of(&self, key: Key) -> Option<u64> {
        let inner = self.lock();
        if state::of(self.word(key).load(Acquire)) != state::SCHEDULED {
            return None;
        }
        inner.queue.deadline(key)
    }

    /// The time left until the next run: zero unless waiting for a future
    /// deadline.
    pub(crate) fn remaining(&self, key: Key) -> Duration {
        let left = self
            .deadline_of(key)
            .map_or(0, |d| d.saturating_sub(self.now()));
        Duration::from_nanos(left)
    }

    /// The next run's deadline as an instant.
    pub(crate) fn deadline_instant(&self, key: Key) -> Option<Instant> {
        self.timebase.instant(self.deadline_of(key)?)
    }

    pub(crate) fn state(&self, key: Key) -> u64 {
        state::of(self.word(key).load(Acquire))
    }

    /// A handle was cloned.
    pub(crate) fn acquire(&self, key: Key) {
        state::acquire(self.word(key));
    }

    /// A handle was dropped.
    pub(crate) fn release(&self, key: Key) {
        if state::release(self.word(key)) {
            self.slots.push_freed(key);
        }
    }

    /// Drops the driver's reference to `key` (under the lock).
    pub(super) fn release_locked(&self, inner: &mut Inner, key: Key) {
        if state::release(self.word(key)) {
            inner.free.push(key);
        }
    }

    /// How a finished task ended: `Ok` if it completed.
    pub(crate) fn outcome(&self, key: Key, word: u64) -> Result<(), Error> {
        match state::of(word) {
            state::DONE => Ok(()),
            state::CANCELLED => Err(Error::new(Kind::Cancelled)),
            state::ABANDONED => Err(Error::new(Kind::Abandoned)),
            _ => {
                let inner = self.lock();
                let failure = inner.bodies[key as usize]
                    .as_ref()
                    .and_then(|j| j.failure().cloned());
                Err(failure.unwrap_or_else(|| Error::new(Kind::Panicked("unknown".into()))))
            }
        }
    }

    /// Blocks until `key` ended, or `timeout` of real time passed.
    pub(crate) fn wait_for_end(&self, key: Key, timeout: Option<Duration>) -> Result<(), Error> {
        let word = crate::waiters::wait(self.waiter_id(key), timeout, || {
            let w = state::add_waiter(self.word(key));
            state::is_terminal(w).then_some(w)
        })?;
        self.outcome(key, word)
    }

    /// For a future: the outcome if `key` ended, else leaves `waker` to be
    /// woken when it does.
    pub(crate) fn poll_end(&self, key: Key, waker: &Waker) -> Option<Result<(), Error>> {
        let word = crate::waiters::register(self.waiter_id(key), waker, || {
            let w = state::add_waiter(self.word(key));
            state::is_terminal(w).then_some(w)
        })?;
        Some(self.outcome(key, word))
    }

    pub(super) fn waiter_id(&self, key: Key) -> usize {
        (self as *const Shared as usize) ^ (key as usize).wrapping_mul(0x9E37_79B9)
    }

    pub(super) fn wake_waiters(&self, key: Key, prev: u64) {
        if prev & state::WAITER != 0 {
            crate::waiters::wake(self.waiter_id(key));
        }
    }
}
