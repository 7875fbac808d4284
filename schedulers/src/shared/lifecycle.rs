//! The Scheduler trait's tail: shutdown, termination, metrics; and what a
//! virtual clock asks of a scheduler.

use std::sync::atomic::Ordering::{Acquire, SeqCst};

use std::time::{Duration, Instant};

use super::{Inner, Shared};
use crate::clock::{wait_until, Wakeable};
use crate::core::Key;
use crate::metrics::Metrics;
use crate::state::{self};
use crate::task::Repeat;

impl Shared {
    /// `shutdown`: no new tasks; what the policy does not keep is cancelled.
    pub(crate) fn shutdown(&self) {
        let mut inner = self.lock();
        self.terminate_if_threadless(&mut inner);
        if !self.shutdown.swap(true, SeqCst) {
            let mut all = Vec::new();
            inner.queue.drain(&mut all);
            let now = self.now();
            for e in all {
                let word = self.word(e.key);
                let w = word.load(Acquire);
                if state::of(w) != state::SCHEDULED {
                    inner.reclaimed += 1;
                    self.release_locked(&mut inner, e.key);
                    continue;
                }
                let periodic = inner.bodies[e.key as usize]
                    .as_ref()
                    .is_some_and(|j| j.repeat() != Repeat::Once);
                let keep = if periodic {
                    self.policy.keeps_periodic()
                } else {
                    self.policy.keeps_one_shots() || e.deadline <= now
                };
                if keep {
                    inner.queue.insert(e.key, e.deadline);
                } else if let Some(prev) = state::end_scheduled(word, state::CANCELLED) {
                    inner.balance -= 1;
                    inner.cancelled += 1;
                    if let Some(body) = inner.bodies[e.key as usize].take() {
                        inner.graveyard.push(body);
                    }
                    self.end(&mut inner, e.key, prev);
                }
            }
            if !self.policy.keeps_periodic() {
                self.stop_periodic_in_flight(&mut inner);
            }
        }
        drop(self.bury(inner));
        self.wakeup.notify_all();
    }

    /// Cancels the periodic tasks that are due and waiting for a thread (out
    /// of the queue, in `ready` or an executor's queue): shutdown stops them
    /// too. Their waiting references let go when they find them cancelled.
    pub(super) fn stop_periodic_in_flight(&self, inner: &mut Inner) {
        for key in 0..inner.bodies.len() as Key {
            let periodic = inner.bodies[key as usize]
                .as_ref()
                .is_some_and(|j| j.repeat() != Repeat::Once);
            if !periodic || inner.queue.contains(key) {
                continue;
            }
            if let Some(prev) = state::end_scheduled(self.word(key), state::CANCELLED) {
                inner.balance -= 1;
                inner.cancelled += 1;
                if let Some(body) = inner.bodies[key as usize].take() {
                    inner.graveyard.push(body);
                }
                self.wake_waiters(key, prev);
            }
        }
    }

    /// `shutdown_now`: every waiting task is abandoned; returns their keys,
    /// each holding a reference for a handle.
    pub(crate) fn shutdown_now(&self) -> Vec<Key> {
        let mut inner = self.lock();
        self.stopped.store(true, SeqCst);
        self.shutdown.store(true, SeqCst);
        self.terminate_if_threadless(&mut inner);
        let mut all = Vec::new();
        inner.queue.drain(&mut all);
        all.extend(inner.ready.drain(..));
        // In deadline order, as they were queued; keys handed to an executor
        // are not in the queue, so sweep every slot, and put those last.
        let mut order = vec![usize::MAX; inner.bodies.len()];
        for (i, e) in all.iter().enumerate() {
            order[e.key as usize] = order[e.key as usize].min(i);
        }
        let mut never_ran = Vec::new();
        for key in 0..inner.bodies.len() as Key {
            let word = self.word(key);
            if let Some(prev) = state::end_scheduled(word, state::ABANDONED) {
                inner.balance -= 1;
                if let Some(body) = inner.bodies[key as usize].take() {
                    inner.graveyard.push(body);
                }
                self.wake_waiters(key, prev);
                state::acquire(word);
                never_ran.push((order[key as usize], key));
            }
        }
        for e in all {
            self.release_locked(&mut inner, e.key);
        }
        drop(self.bury(inner));
        self.wakeup.notify_all();
        never_ran.sort_unstable();
        never_ran.into_iter().map(|(_, key)| key).collect()
    }

    /// A scheduler whose threads start lazily may have none at shutdown.
    pub(super) fn terminate_if_threadless(&self, inner: &mut Inner) {
        if inner.threads == 0 && !inner.terminated {
            inner.terminated = true;
            self.terminated.notify_all();
        }
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.lock().terminated
    }

    pub(crate) fn await_termination(&self, timeout: Duration) -> bool {
        wait_until(&self.inner, &self.terminated, timeout, |s| s.terminated)
    }

    pub(crate) fn metrics(&self) -> Metrics {
        let inner = self.lock();
        Metrics {
            pending: self.pending(&inner),
            fired: inner.fired,
            cancelled: inner.cancelled + self.cancels.pending() + self.cancels.running(),
        }
    }
}

impl Wakeable for Shared {
    fn wake(&self) {
        let _inner = self.lock();
        self.wakeup.notify_all();
    }

    fn is_idle(&self, now: Instant) -> bool {
        let now = self.timebase.ticks(now);
        let inner = self.lock();

        inner.terminated
            || (inner.busy == 0
                && inner.burying == 0
                && inner.ready.is_empty()
                && !inner.purge_requested
                && self.executor.is_idle()
                && inner.queue.next_deadline().is_none_or(|d| d > now))
    }

    fn is_caught_up(&self, now: Instant) -> bool {
        if self.executor.is_inline() {
            return true; // the caller may be this driver: never wait for it
        }
        let now = self.timebase.ticks(now);
        let inner = self.lock();
        inner.terminated
            || (inner.ready.is_empty() && inner.queue.next_deadline().is_none_or(|d| d > now))
    }
}
