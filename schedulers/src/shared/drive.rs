//! What drivers do with the queue: collect what came due, claim and run
//! it, re-queue periodic tasks, drop what ended, purge what was cancelled.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::{Claimed, Inner, Queue, Shared, AUTO_PURGE_MIN};
use crate::clock::NEVER;
use crate::core::{Expired, Key};
use crate::state::{self};
use crate::task::{self, Failure, Ran, Repeat};

impl Shared {
    /// Moves every key due at `now` from the queue to `ready`, and purges
    /// dead entries if a cancel asked for it. Returns true if any is ready.
    pub(crate) fn collect_due(&self, inner: &mut Inner, now: u64) -> bool {
        if std::mem::take(&mut inner.purge_requested) {
            self.purge_if_needed(inner);
        }
        let mut due = Vec::new();
        inner.queue.poll(now, &mut due);
        inner.ready.extend(due);
        !inner.ready.is_empty()
    }

    /// When a driver must wake next: at the queue's next deadline, except
    /// that a periodic run may start up to `periodic_slack` late, so that
    /// runs due close together share one wake-up; a one-shot due meanwhile
    /// still wakes it on time (a heap tells its keys apart; the wheels keep
    /// per-slot bounds, so they wake at the next deadline).
    pub(crate) fn next_wake(&self, inner: &Inner) -> Option<u64> {
        match &inner.queue {
            Queue::Heap(heap) if self.periodic_slack > 0 => {
                heap.next_wake(|key| self.slack(inner, key))
            }
            queue => queue.next_deadline(),
        }
    }

    /// How late the task under `key` may start: `periodic_slack` for a
    /// periodic task, nothing for a one-shot.
    pub(super) fn slack(&self, inner: &Inner, key: Key) -> u64 {
        if self.periodic_slack == 0 {
            return 0;
        }
        match inner.bodies[key as usize]
            .as_ref()
            .map(|body| body.repeat())
        {
            Some(Repeat::FixedRate(_) | Repeat::FixedDelay(_)) => self.periodic_slack,
            Some(Repeat::Once) | None => 0,
        }
    }

    /// Takes the next ready key and claims its task to run on this thread.
    /// Dead keys met on the way are released. `None` when nothing is ready.
    pub(crate) fn claim_next(&self, inner: &mut Inner) -> Option<Claimed> {
        while let Some(e) = inner.ready.pop_front() {
            if let Some(claimed) = self.claim(inner, e) {
                return Some(claimed);
            }
        }
        None
    }

    /// Claims a due key for this thread, if its task is still waiting and
    /// was not queued again since (a reset).
    pub(crate) fn claim(&self, inner: &mut Inner, e: Expired) -> Option<Claimed> {
        let word = self.word(e.key);
        if !inner.queue.contains(e.key) && state::claim(word) {
            inner.balance -= 1;
            inner.fired += 1;
            inner.busy += 1;
            let body = inner.bodies[e.key as usize]
                .take()
                .expect("a waiting task has its closure");
            return Some(Claimed {
                key: e.key,
                scheduled: e.deadline,
                body,
            });
        }
        if state::of(word.load(Acquire)) == state::CANCELLED && !inner.queue.contains(e.key) {
            inner.reclaimed += 1;
        }
        self.release_locked(inner, e.key);
        None
    }

    /// Hands a ready key to the executor; its worker claims it when it
    /// starts, so until then it can still be cancelled, reset or abandoned.
    pub(crate) fn hand_off(self: &Arc<Self>, inner: &mut Inner, e: Expired) {
        inner.busy += 1;
        let shared = self.clone();
        self.executor.execute(move || shared.run_handed_off(e));
    }

    pub(super) fn run_handed_off(&self, e: Expired) {
        let mut inner = self.lock();
        inner.busy -= 1;
        let Some(claimed) = self.claim(&mut inner, e) else {
            let wake = self.is_shutdown() && inner.busy == 0;
            drop(self.bury(inner));
            if wake {
                self.wakeup.notify_all();
            }
            return;
        };
        drop(inner);
        let ran = task::run(claimed.body);
        let mut inner = self.lock();
        let wake = self.finish(&mut inner, claimed.key, claimed.scheduled, ran);
        // After shutdown the driver waits for the last run to end.
        let wake = wake || (self.is_shutdown() && inner.busy == 0);
        drop(self.bury(inner));
        if wake {
            self.wakeup.notify_all();
        }
    }

    /// Records how a claimed task's run ended: re-queues a periodic task,
    /// ends the others and wakes their waiters. Returns true if the
    /// re-queued task is due before the driver's planned wake-up.
    pub(crate) fn finish(&self, inner: &mut Inner, key: Key, scheduled: u64, ran: Ran) -> bool {
        inner.busy -= 1;
        inner.completed += 1;
        let word = self.word(key);
        match ran {
            Ran::Done => {
                let prev = state::finish(word, state::DONE);
                self.end(inner, key, prev);
            }
            Ran::Panicked(error) => {
                inner.bodies[key as usize] = Some(Box::new(Failure(error)));
                let prev = state::finish(word, state::PANICKED);
                self.end(inner, key, prev);
            }
            Ran::Again(body) => {
                let dropped =
                    self.is_stopped() || (self.is_shutdown() && !self.policy.keeps_periodic());
                if dropped {
                    let prev = state::finish(word, state::CANCELLED);
                    if state::of(prev) == state::RUNNING {
                        inner.cancelled += 1;
                    }
                    inner.graveyard.push(body);
                    self.end(inner, key, prev);
                    return false;
                }
                let next = match body.repeat() {
                    Repeat::FixedRate(period) => scheduled.checked_add(period),
                    Repeat::FixedDelay(delay) => self.now().checked_add(delay),
                    Repeat::Once => None,
                }
                .filter(|&t| t < NEVER)
                .unwrap_or(NEVER);
                let (again, prev) = state::rearm(word);
                if !again {
                    inner.graveyard.push(body);
                    self.end(inner, key, prev);
                    return false;
                }
                inner.bodies[key as usize] = Some(body);
                inner.balance += 1;
                inner.queue.insert(key, next);
                return self.wakes_for(inner, key, next);
            }
        }
        false
    }

    /// A task reached its end: wake its waiters, drop the driver's reference.
    pub(super) fn end(&self, inner: &mut Inner, key: Key, prev: u64) {
        self.wake_waiters(key, prev);
        self.release_locked(inner, key);
    }

    /// Drops the closures in the graveyard with the lock released (their
    /// destructors may use this scheduler), and returns the lock. Until
    /// they are dropped the scheduler is not idle, so a `ManualClock`'s
    /// `advance` returns only after the closures of the tasks that ended.
    /// With an empty graveyard it only hands the lock back.
    pub(crate) fn bury<'a>(&'a self, mut inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
        let graveyard = std::mem::take(&mut inner.graveyard);
        if graveyard.is_empty() {
            return inner;
        }
        inner.burying += 1;
        drop(inner);
        for body in graveyard {
            task::drop_contained(body);
        }
        let mut inner = self.lock();
        inner.burying -= 1;
        inner
    }

    /// Removes every dead entry if they outnumber the live ones (and are at
    /// least [`AUTO_PURGE_MIN`]).
    pub(super) fn purge_if_needed(&self, inner: &mut Inner) {
        let dead = self.dead(inner) as usize;
        if dead >= AUTO_PURGE_MIN && dead * 2 > inner.queue.len() {
            self.purge(inner);
        }
        let worth = AUTO_PURGE_MIN.max(inner.queue.len() / 2 + 1) as u64;
        self.purge_at.store(inner.reclaimed + worth, Relaxed);
    }

    /// Removes every cancelled entry from the queue; returns how many.
    pub(crate) fn purge(&self, inner: &mut Inner) -> usize {
        let mut removed = Vec::new();
        let slots = &self.slots;
        inner.queue.retain(
            |key| state::of(slots.word(key).load(Acquire)) == state::SCHEDULED,
            &mut removed,
        );
        for &key in &removed {
            inner.reclaimed += 1;
            self.release_locked(inner, key);
        }
        removed.len()
    }

    /// When the driver next has work, once every dead entry is gone.
    pub(crate) fn next_expiration(&self) -> Option<Instant> {
        let mut inner = self.lock();
        if self.dead(&inner) > 0 {
            self.purge(&mut inner);
        }
        self.timebase.instant(inner.queue.next_deadline()?)
    }

    /// Dead entries (cancelled while waiting) still in the queue.
    pub(super) fn dead(&self, inner: &Inner) -> u64 {
        self.cancels.pending().saturating_sub(inner.reclaimed)
    }

    /// Before a driver sleeps: with no task waiting, what is left in the
    /// queue is dead, so drop it rather than wake up for it.
    pub(crate) fn drop_dead_if_idle(&self, inner: &mut Inner) {
        if !inner.queue.is_empty() && self.pending(inner) == 0 && self.dead(inner) > 0 {
            self.purge(inner);
        }
    }

    /// Whether a driver thread may exit: shut down, and no task waits or
    /// runs. Dead entries left in the queue are dropped.
    pub(crate) fn may_exit(&self, inner: &mut Inner) -> bool {
        if !self.is_shutdown() || inner.busy > 0 || !inner.ready.is_empty() {
            return false;
        }
        if self.is_stopped() || self.pending(inner) == 0 {
            if !inner.queue.is_empty() {
                self.purge(inner);
            }
            return inner.queue.is_empty();
        }
        false
    }
}
