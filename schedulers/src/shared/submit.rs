//! Submitting: a task becomes a key in the queue.

use std::sync::atomic::Ordering::{Acquire, SeqCst};

use super::{Inner, Queue, Shared, When};
use crate::clock::{Timebase, NEVER};
use crate::core::{Key, TimerQueue};
use crate::error::{Error, Kind, Rejected};
use crate::state::{self};
use crate::task::{Repeat, Task};

impl Shared {
    /// Queues `task` to run at `when`; returns its key, holding one
    /// reference for the caller's handle, or the task with the reason it
    /// was refused.
    pub(crate) fn submit(&self, when: When, task: Task) -> Result<Key, Rejected> {
        let deadline = match self.deadline(when) {
            Ok(deadline) => deadline,
            Err(e) => return Err(Rejected::new(e, Some(task))),
        };
        let mut inner = self.lock();
        if self.is_shutdown() {
            return Err(Rejected::new(Error::new(Kind::Shutdown), Some(task)));
        }
        if inner.balance >= self.pending_limit as i64 && self.pending(&inner) >= self.pending_limit
        {
            let error = Error::new(Kind::PendingLimit(self.pending_limit));
            return Err(Rejected::new(error, Some(task)));
        }
        let key = match self.alloc(&mut inner) {
            Ok(key) => key,
            Err(e) => return Err(Rejected::new(e, Some(task))),
        };
        state::arm(
            self.word(key),
            task.needs_drop,
            task.body.repeat() != Repeat::Once,
        );
        let old = inner.bodies[key as usize].replace(task.body);
        inner.queue.insert(key, deadline);
        inner.balance += 1;
        let wake = self.wakes_for(&mut inner, key, deadline);
        drop(inner);
        // A closure left from the slot's last use has no drop glue (one
        // with drop glue was dropped when its task ended).
        drop(old);
        if wake {
            self.wakeup.notify_one();
        }
        Ok(key)
    }

    /// Takes a just-submitted task back out (its handle was never given
    /// out), as if it had never been accepted: for a scheduler that finds
    /// it cannot run it after all. Drops the handle's and the queue's
    /// references.
    pub(crate) fn take_back(&self, key: Key) -> Option<Task> {
        let mut inner = self.lock();
        let word = self.word(key);
        let needs_drop = word.load(Acquire) & state::NEEDS_DROP != 0;
        state::end_scheduled(word, state::CANCELLED)?;
        inner.balance -= 1;
        if inner.queue.remove(key) {
            self.release_locked(&mut inner, key);
        }
        let body = inner.bodies[key as usize].take()?;
        Some(Task { body, needs_drop })
    }

    /// A deadline in ticks.
    pub(super) fn deadline(&self, when: When) -> Result<u64, Error> {
        match when {
            When::After(delay) => Timebase::deadline(self.now(), delay),
            When::At(at) => self.timebase.deadline_at(at),
        }
    }

    /// True if the task under `key`, now due at `deadline`, must start
    /// before the waiting driver's planned wake-up: then the leader role is
    /// handed on and one waiting thread must be signalled (the JDK's
    /// `offer`).
    pub(crate) fn wakes_for(&self, inner: &mut Inner, key: Key, deadline: u64) -> bool {
        let mut slack = self.slack(inner, key);
        // A task due already gets no slack: a driver on a virtual clock
        // waits for a signal, and no advance of time would bring one. (The
        // clock is read only for a slacked task: not on a one-shot's path.)
        if slack > 0 && deadline <= self.now() {
            slack = 0;
        }
        let mut latest = deadline.saturating_add(slack);
        if let Queue::Hier(wheels) = &inner.queue {
            // A bucket grown big is offered ahead of its earliest deadline
            // (to move down in chunks): that time may now come first.
            latest = latest.min(wheels.next_deadline().unwrap_or(NEVER));
        }
        let wake = latest < self.wake_at.load(SeqCst);
        if wake {
            inner.leader = None;
        }
        wake
    }

    pub(super) fn alloc(&self, inner: &mut Inner) -> Result<Key, Error> {
        if inner.free.is_empty() {
            self.slots.take_freed(&mut inner.free);
        }
        if let Some(key) = inner.free.pop() {
            return Ok(key);
        }
        let key = Key::try_from(inner.bodies.len()).unwrap_or(Key::MAX);
        if !self.slots.reserve(key) {
            return Err(Error::new(Kind::PendingLimit(inner.bodies.len())));
        }
        inner.bodies.push(None);
        Ok(key)
    }
}
