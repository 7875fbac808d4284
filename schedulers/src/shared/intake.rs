//! The driver's intake: what callers left in their lanes goes into the
//! queue, and what they cancelled out of it, in one pass whenever the
//! driver wakes.

use std::collections::HashSet;
use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::{DriverState, Shared, AUTO_PURGE_MIN, PREFETCH_AHEAD};
use crate::core::Key;
use crate::lanes::TAKEN_BACK;
use crate::state;

/// Resets a driver applies between two looks for due work (a look is a
/// clock read and a peek at the queue): some tens of microseconds of
/// rescheduling at the most before a due task starts.
pub(crate) const MOVES_PER_LOOK: usize = 256;

/// From this many timers in the driver's queue on, a cancel leaves the
/// closure to the driver (see `crate::state`): their state words and bodies
/// (24 bytes a timer) then take 6 MB, more than a core's L2 cache holds
/// (1 to 4 MB), so a cancel in random order finds its body in no cache.
/// Above it a cancel takes 25-50 % less (one miss, not two), for CPU per
/// timer 0-20 % more while the driver read each left key's state word twice,
/// and about that much less again since a left mark says so itself (0.45-0.58
/// of nexus-timer's in the same run in three pairs of runs, level in a fourth;
/// at 1e6, workbench `ack-batch`, 2026-11-27). Below it
/// the canceller's own drop costs less than the driver's: at 1e5 pending,
/// leaving them cost 15-20 ns more CPU per timer than it saved the
/// canceller.
pub(crate) const DROPS_LATER_FROM: usize = 1 << 18;

impl Shared {
    /// True if callers may have left work the driver has not taken in:
    /// entries in a lane, or cancel marks.
    pub(crate) fn callers_left_work(&self) -> bool {
        self.lanes.any_dirty() || self.slab.any_marked()
    }

    /// Takes in everything in the lanes, under the driver's lock: new
    /// timers are queued (or, if cancelled already, their closures are left
    /// to [`Shared::bury`]), cancelled ones are left to `bury` too, and
    /// resets are read, for [`Shared::apply_moves`] to move their timers.
    ///
    /// Returns how many new timers it found cancelled already (and so never
    /// queued): a purge counts them as removed.
    pub(crate) fn intake(&self, driver: &mut DriverState) -> usize {
        let mut dropped = 0;
        let (dirty, marked) = (self.lanes.any_dirty(), self.slab.any_marked());
        if dirty {
            for mut lane in self.lanes.all() {
                // The first busy lane's entries are taken whole, buffer and
                // all (the lane gets the driver's emptied one), not copied:
                // with one thread scheduling, none is.
                if driver.submitted.is_empty() {
                    std::mem::swap(&mut driver.submitted, &mut lane.submitted);
                } else {
                    driver.submitted.append(&mut lane.submitted);
                }
                driver.moved.append(&mut lane.moved);
                driver.new_calendars.append(&mut lane.calendars);
            }
            dropped = self.take_in_submitted(driver);
            self.take_in_calendars(driver);
            driver.early_moves.extend(driver.moved.drain(..));
        }
        if marked {
            self.take_in_cancelled(driver);
        }
        if driver.dead >= AUTO_PURGE_MIN as u64 && driver.dead * 2 > driver.queue.len() as u64 {
            self.purge(driver);
        }
        // Where the bodies of the timers it holds no longer fit a core's
        // cache, the driver drops the closures of cancelled ones (see
        // `crate::state`).
        let many = driver.queue.len() >= DROPS_LATER_FROM;
        if many != self.drops_later.load(Relaxed) {
            self.drops_later.store(many, Relaxed);
        }
        dropped
    }

    fn take_in_submitted(&self, driver: &mut DriverState) -> usize {
        let mut dropped = 0;
        let mut submitted = std::mem::take(&mut driver.submitted);
        for s in submitted.drain(..) {
            if s.key == TAKEN_BACK {
                continue;
            }
            match state::intake(self.slab.word(s.key)) {
                Ok(w) if state::is_periodic(w) => {
                    driver.queue.insert(s.key, s.deadline);
                    driver.balance += 1;
                    self.note_periodic(driver, s.key);
                }
                Ok(_) => {
                    // Most new one-shots are timeouts, cancelled long before
                    // they are due: their ordering waits (see `stage`). A
                    // periodic task goes in at once, where the heap's
                    // `next_wake` reads its slack.
                    driver.queue.stage(s.key, s.deadline);
                    driver.balance += 1;
                }
                Err(_) => {
                    // Cancelled before the driver saw it (its canceller
                    // dropped the closure): never queued.
                    driver.cancelled_count += 1;
                    self.release_locked(driver, s.key);
                    dropped += 1;
                }
            }
        }
        driver.submitted = submitted;
        dropped
    }

    /// Records new calendar tasks' first fire times (those still waiting:
    /// one taken back or cancelled since, or its key used again, has none),
    /// and queues each by the clocks now: the wall clock may have moved
    /// since its caller converted it.
    fn take_in_calendars(&self, driver: &mut DriverState) {
        if driver.new_calendars.is_empty() {
            return;
        }
        let mut new = std::mem::take(&mut driver.new_calendars);
        let (now, wall_now) = (self.now(), self.wall_now());
        for (key, due) in new.drain(..) {
            let w = self.slab.word(key).load(Acquire);
            if state::is_calendar(w) && state::of(w) == state::SCHEDULED {
                self.set_calendar_due(driver, key, due);
                driver
                    .queue
                    .reschedule(key, self.ticks_of(due, now, wall_now));
            }
        }
        driver.new_calendars = new;
    }

    /// Sweeps the marks of cancels of timers the driver held, in key order:
    /// lets their queue entries go now if the scheduler removes on cancel
    /// (or is shutting down), else when they come due or a purge runs, and
    /// counts them as dead until then; and counts the cancels. A key whose
    /// closure its canceller left to the driver (a left mark) goes to the
    /// graveyard, with the mark's reference: the closure is dropped with the
    /// lock released. Any other mark holds no reference: a key still queued is
    /// held by its queue entry, so if its task is cancelled the entry is
    /// the cancelled one's.
    fn take_in_cancelled(&self, driver: &mut DriverState) {
        let mut cancelled = std::mem::take(&mut driver.cancelled);
        let mut left = std::mem::take(&mut driver.left);
        // Before the marks: a closure left after this is announced again.
        self.wake.closures_taken();
        self.slab.take_marks(&mut cancelled, &mut left);
        // Counted here, not by the cancellers: a shared count would cost
        // each cancel a locked instruction; the mark is the count (see
        // `Slab::mark`).
        let marks = cancelled.len() + left.len();
        driver.cancelled_count += marks as u64;
        driver.balance -= marks as i64;
        let remove = self.remove_on_cancel || self.is_shutdown();
        // Each entry matters only to the calendars and an eager removal;
        // otherwise every marked entry just counts as dead until it comes
        // due or a purge runs. A left mark's task was cancelled after the
        // driver took it in, and the mark's reference keeps the key from a
        // new incarnation: its entry is dead, with no need to read its
        // state word (a miss each, at the large queues where closures are
        // left). An older mark of a key freed and used again since may find
        // it scheduled: its word says.
        if remove || !driver.calendars.is_empty() {
            for &key in &left {
                self.let_go_of_entry(driver, key, true, remove);
            }
            for (i, &key) in cancelled.iter().enumerate() {
                if let Some(&ahead) = cancelled.get(i + PREFETCH_AHEAD) {
                    self.slab.prefetch_word(ahead);
                }
                let dead = state::of(self.slab.word(key).load(Acquire)) != state::SCHEDULED;
                self.let_go_of_entry(driver, key, dead, remove);
            }
        } else {
            driver.dead += marks as u64;
        }
        if !left.is_empty() {
            driver.swept = true;
        }
        driver.graveyard.append(&mut left);
        cancelled.clear();
        driver.cancelled = cancelled;
        driver.left = left;
    }

    /// A marked key's entry: removed at once if `remove` and `dead`, else
    /// counted dead, to go when it comes due or at a purge.
    fn let_go_of_entry(&self, driver: &mut DriverState, key: Key, dead: bool, remove: bool) {
        if dead && !driver.calendars.is_empty() {
            driver.calendars.remove(&key);
        }
        if dead && remove && driver.queue.remove(key) {
            self.release_locked(driver, key);
        } else {
            driver.dead += 1;
        }
    }

    /// Applies up to `max` of the resets read so far, in order (the last
    /// of a task wins); those read before their task's submission wait, in
    /// place, for the next intake. Returns true if it applied any: then the
    /// driver looks for due work before it applies the next ones, so that a
    /// pile of resets (a lane holds up to 16 Ki) never holds up a task that
    /// comes due meanwhile.
    ///
    /// Only a driver thread applies resets, between its batches: a reset
    /// may queue again a task that is due, and a batch claimed with the lock
    /// released must not meet it queued behind its back. The timer thread's
    /// own batch is through by then; a key in an open batch (a pool's, or
    /// one handed to an executor) waits until its claim is through (see
    /// [`Shared::in_a_batch`]).
    pub(crate) fn apply_moves(&self, driver: &mut DriverState, max: usize) -> bool {
        let mut early = Vec::new();
        let mut waiting = HashSet::new();
        let mut applied = 0;
        while applied < max {
            let Some(m) = driver.early_moves.pop_front() else {
                break;
            };
            let word = self.slab.word(m.key);
            let w = word.load(Acquire);
            let unsubmitted = w & state::DRAINED == 0 && state::of(w) == state::SCHEDULED;
            // An open batch holding the key claims it with no lock: until
            // the claim has met this reset (and let the key go as moved),
            // reading the reset would let the claim run it at once.
            let batched = !driver.open.is_empty()
                && !driver.queue.contains(m.key)
                && self.in_a_batch(driver, m.key);
            // A claim may meet a batched key while this goes on, so a later
            // reset of it could find it out of the batch and pass the one
            // that waits: it waits too (a task's last reset must hold).
            let behind = waiting.contains(&m.key);
            if unsubmitted || batched || behind {
                if batched {
                    waiting.insert(m.key);
                }
                early.push(m);
                continue;
            }
            applied += 1;
            // Due and waiting for a thread (or let go by a claim that met
            // this reset), a task is in no queue: it is queued again, with
            // the reset's reference; a waiting copy finds it queued and lets
            // go.
            let queued = driver.queue.contains(m.key);
            let (waits, last) = state::reset_read(word, !queued);
            if waits && state::is_calendar(w) {
                // Its next run is at the new deadline, and its fire times
                // follow from there.
                let (now, wall_now) = (self.now(), self.wall_now());
                let ahead = std::time::Duration::from_nanos(m.deadline.saturating_sub(now));
                self.set_calendar_due(driver, m.key, super::calendar::wall_after(wall_now, ahead));
            }
            if waits && queued {
                driver.queue.reschedule(m.key, m.deadline);
            } else if waits {
                driver.queue.insert(m.key, m.deadline);
            } else if last {
                driver.to_free.push(m.key);
            }
        }
        for m in early.into_iter().rev() {
            driver.early_moves.push_front(m);
        }
        applied > 0
    }

    /// Removes every cancelled entry from the queue; returns how many.
    pub(crate) fn purge(&self, driver: &mut DriverState) -> usize {
        let mut removed = Vec::new();
        let slab = &self.slab;
        driver.queue.retain(
            |key: Key| state::of(slab.word(key).load(Acquire)) == state::SCHEDULED,
            &mut removed,
        );
        for &key in &removed {
            self.release_locked(driver, key);
        }
        driver.dead = 0;
        removed.len()
    }
}
