//! What handles do: cancel, reset, ask and wait.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::task::Waker;
use std::time::{Duration, Instant};

use super::{DriverState, Shared, When, HOUSEKEEPING};
use crate::clock::nanos;
use crate::core::Key;
use crate::error::{Error, Kind};
use crate::lanes::{Lane, Moved, Spot, KEEP, TAKEN_BACK};
use crate::slab::{Place, BATCH};
use crate::state::{self, Cancel, Reset};
use crate::sync::atomic::AtomicU32;
use crate::task;

impl Shared {
    /// Stops every future run of `key` (whose entry may still wait at
    /// `spot`); true iff this call did.
    ///
    /// Short for the common case, a timer the driver holds. A loop of
    /// cancels over many timers waits for each one's state word, and the
    /// CPU starts on the next cancel's only once it is within the CPU's
    /// window of instructions in flight: at 1e6 timers in random order,
    /// each instruction more a cancel costs it about a nanosecond (a
    /// stripped loop of handle read and CAS, measured here: 35 ns with 12
    /// instructions, 62-78 with 36, 97-135 with 84). So the key's slot is
    /// found once for the word and the mark, the mark is inlined, and the
    /// lane is looked at only for a timer the driver has not taken in.
    pub(crate) fn cancel(&self, key: Key, spot: Spot) -> bool {
        self.cancel_as::<false>(key, spot)
    }

    /// [`Shared::cancel`], and if `GIVING_UP`, the release of the handle
    /// too: in the cancel's CAS where that hands the closure to the driver
    /// (the mark takes over the handle's reference), else after it.
    #[inline(always)]
    fn cancel_as<const GIVING_UP: bool>(&self, key: Key, spot: Spot) -> bool {
        let at = Place::of(key);
        let word = self.slab.word_at(at);
        let current = word.load(Acquire);
        if !state::is_drained(current) {
            if let Some(taken) = self.cancel_in_lane(key, spot, word) {
                if GIVING_UP {
                    self.release(key);
                }
                return taken;
            }
        }
        let leave = self.drops_later.load(Relaxed);
        let (outcome, prev) = state::cancel(word, current, leave, GIVING_UP);
        let released = GIVING_UP && matches!(outcome, Cancel::WasPending { left: true, .. });
        match outcome {
            Cancel::WasPending { logged, left } => {
                self.unpend();
                if !left {
                    // The closure is this thread's to drop (no one else
                    // may touch the body after this CAS).
                    // SAFETY: as the comment above; the caller's handle
                    // keeps the slot from being freed meanwhile.
                    unsafe { self.slab.with_body(key, task::clear_contained) };
                }
                // The driver holds it: the mark tells it to let the dead
                // entry go, and if `left`, hands it the body (with the
                // reference the CAS gave the mark) to drop the closure
                // within a housekeeping period, in key order with others.
                if logged {
                    self.slab.mark(at, left);
                }
                if left && self.wake.leave_closure() {
                    self.keep_house();
                }
                if self.is_shutdown() {
                    // A driver waiting to terminate may be waiting for it.
                    self.nudge();
                }
                self.wake_waiters(key, prev);
            }
            Cancel::WasRunning | Cancel::TooLate => {}
        }
        if GIVING_UP && !released {
            self.release(key);
        }
        outcome.stopped()
    }

    /// The first closure left to the driver since it last took the marks:
    /// if no driver will look within a [`HOUSEKEEPING`] period by itself
    /// (it sleeps for longer, or waits for a signal), wake one to take the
    /// marks and drop the closures. While the driver sleeps at most that
    /// long (as it does after a look that found such closures, see
    /// [`Shared::wait`]), a cancel costs it nothing more. See
    /// [`crate::wake`] for why one of the two always sees the other.
    fn keep_house(&self) {
        if self
            .wake
            .due_before(self.now().saturating_add(nanos(HOUSEKEEPING)))
        {
            self.nudge();
        }
    }

    /// A cancel before the driver took the task in: the entry comes back
    /// out of its lane, the closure is dropped here and the driver never
    /// hears of it, so a timer set and cleared before the driver next
    /// woke costs the driver nothing. `None` if the entry is not there
    /// any more (or a reset of it is on its way): cancel the usual way.
    /// (`word` is the key's state word, found by the caller.)
    fn cancel_in_lane(&self, key: Key, spot: Spot, word: &AtomicU32) -> Option<bool> {
        let mut held = self.lanes.of_spot(spot)?;
        let entry = held.at(spot, key)?;
        let prev = state::cancel_undrained(word)?;
        entry.key = TAKEN_BACK;
        held.lane.taken_back += 1;
        drop(held);
        self.unpend();
        // SAFETY: this thread cancelled the task before the driver took it
        // in, and took the entry back: no one else will touch the body.
        unsafe { self.slab.with_body(key, task::clear_contained) };
        self.wake_waiters(key, prev);
        Some(true)
    }

    /// [`Shared::cancel`] then the release of a handle given up
    /// (`TaskHandle::cancel_and_drop`), in one step where it can be.
    ///
    /// That is a task only this handle and its submission hold, the
    /// submission still in its lane: a timeout set and cleared before the
    /// driver woke, the common case. This thread is then the word's only
    /// writer (see `state::is_fresh`), so under the lane's one lock it
    /// takes the entry back, moves the closure out, cancels and lets go of
    /// the word with a plain store, and frees the key into the lane: one
    /// locked instruction, where a cancel and a drop take three (the lane
    /// twice and the CAS). The closure is dropped after the lock: its
    /// destructor may call the scheduler.
    pub(crate) fn cancel_and_release(&self, key: Key, spot: Spot) -> bool {
        let word = self.slab.word(key);
        if !state::is_drained(word.load(Acquire)) {
            if let Some(mut held) = self.lanes.of_spot(spot) {
                let current = word.load(Acquire);
                if state::is_fresh(current) {
                    if let Some(entry) = held.at(spot, key) {
                        entry.key = TAKEN_BACK;
                        held.lane.taken_back += 1;
                        // SAFETY: no one else may reach the body of a task
                        // the driver has not taken in but its handles, and
                        // this thread owns the only one.
                        let mut body = unsafe { self.slab.with_body(key, std::mem::take) };
                        state::cancel_fresh(word, current);
                        self.keep_free(&mut held.lane, key);
                        drop(held);
                        self.unpend();
                        task::clear_contained(&mut body);
                        return true;
                    }
                }
            }
        }
        self.cancel_as::<true>(key, spot)
    }

    /// Moves a waiting task to a new deadline.
    pub(crate) fn reset(&self, key: Key, when: When) -> Result<bool, Error> {
        let deadline = self.deadline(when)?;
        let word = self.slab.word(key);
        loop {
            // The CAS under the key's lane lock: its resets line up there
            // in the order of their CAS (see `crate::lanes`).
            let mut held = self.lanes.of_key(key);
            match state::reset(word) {
                Reset::Logged => {
                    held.reset(Moved { key, deadline });
                    let periodic = state::is_periodic(word.load(Acquire));
                    self.after_push(deadline, periodic, held);
                    return Ok(true);
                }
                Reset::NotPending => return Ok(false),
                Reset::Full => {
                    // The newest reset on its way takes the new deadline.
                    if held.retarget(key, deadline) {
                        self.after_push(deadline, false, held);
                        return Ok(true);
                    }
                    drop(held);
                    if let Some(done) = self.reset_taken_in(key, deadline) {
                        return Ok(done);
                    }
                }
            }
        }
    }

    /// A reset while the most resets are on their way already, and the
    /// newest is no longer in its lane: it was taken in, so under the
    /// driver's lock it is found among the resets waiting to be applied,
    /// and takes the new deadline. `None` if the driver applied them all
    /// meanwhile: try the lane again.
    fn reset_taken_in(&self, key: Key, deadline: u64) -> Option<bool> {
        let mut driver = self.lock();
        self.intake_for_query(&mut driver);
        if state::of(self.slab.word(key).load(Acquire)) != state::SCHEDULED {
            return Some(false);
        }
        let newest = driver.early_moves.iter_mut().rev().find(|m| m.key == key)?;
        newest.deadline = deadline;
        drop(driver);
        self.nudge();
        Some(true)
    }

    /// The deadline of the next run, while the task waits for it (a task
    /// that is due and waiting for a thread has none any more).
    pub(crate) fn deadline_of(&self, key: Key) -> Option<u64> {
        let mut state = self.lock();
        self.intake_for_query(&mut state);
        let word = self.slab.word(key).load(Acquire);
        if state::of(word) != state::SCHEDULED {
            return None;
        }
        // The newest reset on its way wins over the queue.
        let newest = state::has_resets(word)
            .then(|| state.early_moves.iter().rev().find(|m| m.key == key))
            .flatten();
        match newest {
            Some(m) => Some(m.deadline),
            None => state.queue.deadline(key),
        }
    }

    /// The time left until the next run: zero unless waiting for a future
    /// deadline.
    pub(crate) fn remaining(&self, key: Key) -> Duration {
        // The time by the estimate deadlines are counted from: on the
        // thread that set it, never more than the delay it was set for.
        let left = self
            .deadline_of(key)
            .map_or(0, |d| d.saturating_sub(self.deadline_clock()));
        Duration::from_nanos(left)
    }

    /// The next run's deadline as an instant.
    pub(crate) fn deadline_instant(&self, key: Key) -> Option<Instant> {
        self.timebase.instant(self.deadline_of(key)?)
    }

    pub(crate) fn state(&self, key: Key) -> u32 {
        state::of(self.slab.word(key).load(Acquire))
    }

    /// A handle was cloned.
    pub(crate) fn acquire(&self, key: Key) {
        state::acquire(self.slab.word(key));
    }

    /// A holder off the driver's lock let go (a handle, or an entry read
    /// with the lock released): the last one empties the body and gives
    /// the key to this thread's lane.
    ///
    /// A cancelled task's body is empty by then: whoever cancels it empties
    /// it before letting go, or hands it to the driver's graveyard with a
    /// reference of its own. A handle dropped after its cancel, the common
    /// case, then skips a second look at the slot.
    pub(crate) fn release(&self, key: Key) {
        if let Some(w) = state::release_last(self.slab.word(key)) {
            self.free(key, state::of(w) == state::CANCELLED);
        }
    }

    /// Frees a key nobody holds: empties its body (a value nobody took)
    /// unless it is `emptied` already, and keeps the key in this thread's
    /// lane for its next task (whose submit asserts the body empty in
    /// debug builds).
    ///
    /// Not inlined into `release`: a release that is not the last (a
    /// handle dropped while its task waits, at 1e6 timers a wait for its
    /// state word's line) then saves no registers for it.
    #[inline(never)]
    fn free(&self, key: Key, emptied: bool) {
        if !emptied {
            // SAFETY: the last holder let go, so no other thread can reach
            // the body.
            unsafe { self.slab.with_body(key, task::clear_contained) };
        }
        let mut held = self.lanes.mine();
        self.keep_free(&mut held.lane, key);
    }

    /// Keeps a freed key (its body empty) in `lane` for a next task, and
    /// gives a batch back to the pool past [`KEEP`].
    fn keep_free(&self, lane: &mut Lane, key: Key) {
        lane.free.push(key);
        if lane.free.len() > KEEP {
            let from = lane.free.len() - BATCH;
            self.slab.give_keys(lane.free.drain(from..));
        }
    }

    /// Drops the driver's reference to `key`, under its lock; a last one
    /// leaves the key to be freed with the lock released.
    pub(super) fn release_locked(&self, state: &mut DriverState, key: Key) {
        if state::release(self.slab.word(key)) {
            state.to_free.push(key);
        }
    }

    /// Takes the value a one-shot left, once it is done.
    pub(crate) fn take_output<T: Send + 'static>(&self, key: Key) -> Option<T> {
        if state::of(self.slab.word(key).load(Acquire)) != state::DONE {
            return None;
        }
        // SAFETY: a done one-shot's body is left to its future, the one
        // caller of this (with a handle, so the slot is not freed).
        unsafe { self.slab.with_body(key, |body| body.take_output::<T>()) }
    }

    /// How a finished task ended: `Ok` if it completed.
    pub(crate) fn outcome(&self, key: Key, word: u32) -> Result<(), Error> {
        match state::of(word) {
            state::DONE => Ok(()),
            state::CANCELLED => Err(Error::new(Kind::Cancelled)),
            state::ABANDONED => Err(Error::new(Kind::Abandoned)),
            _ => {
                // SAFETY: a panicked task's body holds its failure, which
                // only the last holder (not us: we hold a handle) clears.
                let failure = unsafe { self.slab.with_body_ref(key, |b| b.failure_ref().cloned()) };
                Err(failure.unwrap_or_else(|| Error::new(Kind::Panicked("unknown".into()))))
            }
        }
    }

    /// Blocks until `key` ended, or `timeout` of real time passed.
    pub(crate) fn wait_for_end(&self, key: Key, timeout: Option<Duration>) -> Result<(), Error> {
        let word = crate::waiters::wait(self.waiter_id(key), timeout, || {
            let w = state::add_waiter(self.slab.word(key));
            state::is_terminal(w).then_some(w)
        })?;
        self.outcome(key, word)
    }

    /// For a future: the outcome if `key` ended, else leaves `waker` to be
    /// woken when it does.
    pub(crate) fn poll_end(&self, key: Key, waker: &Waker) -> Option<Result<(), Error>> {
        let word = crate::waiters::register(self.waiter_id(key), waker, || {
            let w = state::add_waiter(self.slab.word(key));
            state::is_terminal(w).then_some(w)
        })?;
        Some(self.outcome(key, word))
    }

    pub(super) fn waiter_id(&self, key: Key) -> usize {
        (self as *const Shared as usize) ^ (key as usize).wrapping_mul(0x9E37_79B9)
    }

    pub(super) fn wake_waiters(&self, key: Key, prev: u32) {
        if prev & state::WAITER != 0 {
            crate::waiters::wake(self.waiter_id(key));
        }
    }
}
