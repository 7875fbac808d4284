//! The Scheduler trait's tail: shutdown, termination; and what a virtual
//! clock asks of a scheduler.

use std::collections::HashMap;
use std::sync::atomic::Ordering::{Acquire, SeqCst};
use std::time::{Duration, Instant};

use super::{DriverState, Shared};
use crate::clock::{wait_until, Wakeable};
use crate::core::Key;
use crate::state;

impl Shared {
    /// Takes in the lanes for a query or an operation off the driver's
    /// threads (resets stay for the driver), and makes sure the driver
    /// looks soon at what it left: resets on their way, closures to drop.
    ///
    /// Returns how many new timers it found cancelled (see
    /// [`Shared::intake`]).
    pub(crate) fn intake_for_query(&self, driver: &mut DriverState) -> usize {
        let dropped = self.intake(driver);
        if !driver.early_moves.is_empty() || !driver.graveyard.is_empty() {
            driver.nudged = true;
            if driver.waiting > 0 {
                self.wakeup.notify_all();
            }
        }
        dropped
    }

    /// `purge()` of the heap-based schedulers: every cancelled task the
    /// scheduler still holds is let go now (as the JDK's `purge`); returns
    /// how many.
    pub(crate) fn purge_now(&self) -> usize {
        let mut driver = self.lock();
        let dropped = self.intake_for_query(&mut driver);
        dropped + self.purge(&mut driver)
    }

    /// `shutdown`: no new tasks; what the policy does not keep is cancelled.
    pub(crate) fn shutdown(&self) {
        let mut driver = self.lock();
        if !self.shutdown.swap(true, SeqCst) {
            // Every submission that saw the flag clear pushed under its
            // lane's lock: take them all in.
            self.lanes.barrier();
            self.intake_for_query(&mut driver);
            // A one-shot's newest deadline: the newest reset on its way wins
            // over the queue (as in `deadline_of`).
            let newest: HashMap<Key, u64> = driver
                .early_moves
                .iter()
                .map(|m| (m.key, m.deadline))
                .collect();
            let mut all = Vec::new();
            driver.queue.drain(&mut all);
            let now = self.now();
            for e in all {
                let word = self.slab.word(e.key);
                let w = word.load(Acquire);
                if state::of(w) != state::SCHEDULED {
                    driver.dead = driver.dead.saturating_sub(1);
                    self.release_locked(&mut driver, e.key);
                    continue;
                }
                let keep = if state::is_periodic(w) {
                    self.policy.keeps_periodic()
                } else {
                    let deadline = newest.get(&e.key).copied().unwrap_or(e.deadline);
                    self.policy.keeps_one_shots() || deadline <= now
                };
                if keep {
                    driver.queue.insert(e.key, e.deadline);
                } else if let Some(prev) = state::end_scheduled(word, state::CANCELLED, 0) {
                    self.dropped_waiting(&mut driver, e.key, prev);
                    driver.cancelled_count += 1;
                    // The queue's reference goes with the closure.
                    driver.graveyard.push(e.key);
                }
            }
            if !self.policy.keeps_periodic() {
                self.stop_periodic_in_flight(&mut driver);
            }
            if !self.policy.keeps_one_shots() {
                // Due and waiting for a thread, but a reset on its way
                // moves it past now (its claim lets it go when it meets
                // the reset): not yet due after all.
                for (&key, &deadline) in &newest {
                    let w = self.slab.word(key).load(Acquire);
                    if deadline > now && !state::is_periodic(w) && !driver.queue.contains(key) {
                        self.stop_in_flight(&mut driver, key);
                    }
                }
            }
        }
        self.terminate_if_done(&mut driver);
        drop(self.bury(driver));
        self.wakeup.notify_all();
    }

    /// A waiting task ended without running: it no longer counts as
    /// pending, and its waiters learn the end.
    fn dropped_waiting(&self, driver: &mut DriverState, key: Key, prev: u32) {
        self.unpend();
        driver.balance -= 1;
        self.wake_waiters(key, prev);
    }

    /// Cancels the periodic tasks that are due and waiting for a thread (out
    /// of the queue, in `ready` or an executor's queue): shutdown stops them
    /// too. Their waiting references let go when they find them cancelled;
    /// their closures are dropped by [`Shared::bury`] with a reference of
    /// their own.
    fn stop_periodic_in_flight(&self, driver: &mut DriverState) {
        for key in 0..self.slab.capacity() {
            let w = self.slab.word(key).load(Acquire);
            if state::is_periodic(w) && w & state::DRAINED != 0 && !driver.queue.contains(key) {
                self.stop_in_flight(driver, key);
            }
        }
    }

    /// Cancels a task out of the queue, if it still waits: due and waiting
    /// for a thread, or let go by a claim that met a reset.
    fn stop_in_flight(&self, driver: &mut DriverState, key: Key) {
        // Its reference is with a runner, which lets go when its claim
        // finds it cancelled (or with a reset on its way): take one for the
        // burial in the same step.
        if let Some(prev) = state::end_scheduled(self.slab.word(key), state::CANCELLED, 1) {
            self.dropped_waiting(driver, key, prev);
            driver.cancelled_count += 1;
            driver.graveyard.push(key);
        }
    }

    /// `shutdown_now`: every waiting task is abandoned; returns their keys,
    /// each holding a reference for a handle.
    pub(crate) fn shutdown_now(&self) -> Vec<Key> {
        let mut driver = self.lock();
        self.stopped.store(true, SeqCst);
        self.shutdown.store(true, SeqCst);
        self.terminate_if_done(&mut driver);
        self.lanes.barrier();
        self.intake_for_query(&mut driver);
        let mut all = Vec::new();
        driver.queue.drain(&mut all);
        all.extend(driver.ready.drain(..));
        // In deadline order, as they were queued; keys handed to an executor
        // are not in the queue, so sweep every slot, and put those last.
        let capacity = self.slab.capacity();
        let mut order = vec![usize::MAX; capacity as usize];
        for (i, e) in all.iter().enumerate() {
            order[e.key as usize] = order[e.key as usize].min(i);
        }
        let mut never_ran = Vec::new();
        for key in 0..capacity {
            let word = self.slab.word(key);
            // One reference for the closure's burial, one for the handle
            // returned, taken as it ends (a runner may let go of the last
            // other at once).
            if let Some(prev) = state::end_scheduled(word, state::ABANDONED, 2) {
                self.dropped_waiting(&mut driver, key, prev);
                driver.graveyard.push(key);
                never_ran.push((order[key as usize], key));
            }
        }
        for e in all {
            self.release_locked(&mut driver, e.key);
        }
        drop(self.bury(driver));
        self.wakeup.notify_all();
        never_ran.sort_unstable();
        never_ran.into_iter().map(|(_, key)| key).collect()
    }

    /// Marks the scheduler terminated once it is shut down, no thread of
    /// its own runs, and nothing is left to run (the JDK's
    /// `tryTerminate`). A pool's workers start with the tasks, so it may
    /// have none at shutdown; a task it kept that was accepted just
    /// before, whose submitter is still starting the first worker, holds
    /// termination back until that worker has run it and exits.
    pub(crate) fn terminate_if_done(&self, driver: &mut DriverState) {
        let nothing_left =
            self.is_stopped() || (driver.queue.is_empty() && driver.ready.is_empty());
        if driver.threads == 0 && self.is_shutdown() && nothing_left && !driver.terminated {
            driver.terminated = true;
            self.terminated.notify_all();
        }
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.lock().terminated
    }

    pub(crate) fn await_termination(&self, timeout: Duration) -> bool {
        wait_until(&self.state, &self.terminated, timeout, |s| s.terminated)
    }

    /// True if the driver has work to look at by `now` (ticks): it was
    /// woken for work from callers it has not taken in, something in a lane
    /// is due, or the wall clock moved under its calendar tasks.
    fn owes_a_look(&self, driver: &DriverState, now: u64) -> bool {
        let waiting = self.callers_left_work() || !driver.early_moves.is_empty();
        (driver.nudged && waiting) || self.lanes.earliest() <= now || self.wall_moved(driver)
    }
}

impl Wakeable for Shared {
    fn wake(&self) {
        let mut driver = self.lock();
        driver.nudged = true;
        self.wakeup.notify_all();
    }

    fn is_idle(&self, now: Instant) -> bool {
        let now = self.timebase.ticks(now);
        let driver = self.lock();
        driver.terminated
            || (driver.busy == 0
                // A batch's last runner may have run its keys and not yet
                // closed it (and applied the resets waiting for it).
                && driver.open.is_empty()
                && driver.burying == 0
                && driver.ready.is_empty()
                && driver.graveyard.is_empty()
                && driver.to_free.is_empty()
                && !self.owes_a_look(&driver, now)
                && self.executor.is_idle()
                && driver.queue.next_deadline().is_none_or(|d| d > now))
    }

    fn is_caught_up(&self, now: Instant) -> bool {
        if self.executor.is_inline() {
            return true; // the caller may be this driver: never wait for it
        }
        let now = self.timebase.ticks(now);
        let driver = self.lock();
        driver.terminated
            || (driver.ready.is_empty()
                && !self.owes_a_look(&driver, now)
                && driver.queue.next_deadline().is_none_or(|d| d > now))
    }
}
