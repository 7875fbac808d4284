//! The state word of a timer: one `AtomicU32` per slot that decides who may
//! run, cancel, reset or reuse the timer, and who drops its closure.
//!
//! # Ground rules
//!
//! ```text
//! bits 0..3    state    FREE, SCHEDULED, RUNNING, RUNNING_CANCELLED,
//!                       DONE, PANICKED, CANCELLED, ABANDONED
//! bit  3       WAITER      a thread waits for the end (wake it on the way out)
//! bit  4       CALENDAR    a calendar task (the driver keeps its wall-clock time)
//! bit  5       PERIODIC    a running task has future runs a cancel can stop
//! bit  6       DRAINED     the driver has taken the submission out of its lane
//! bits 7..10   resets waiting in a lane for the driver (at most MAX_RESETS)
//! bit  10      LEFT        cancelled, its closure left to the driver
//! bits 11..32  refs: holders (handles, the driver while the timer is
//!              submitted, queued, due or running, each entry about the
//!              timer still waiting in a lane, and a LEFT task's mark)
//! ```
//!
//! ```text
//! SCHEDULED --claim--> RUNNING --one-shot--> DONE | PANICKED
//!     |                  |  \--periodic, rearm--> SCHEDULED
//!     |                  \--cancel (periodic)--> RUNNING_CANCELLED --finish--> CANCELLED
//!     +--cancel--> CANCELLED                  +--abandon (shutdown_now)--> ABANDONED
//! ```
//!
//! Cancel and reset are one CAS on this word, so `cancel` returning true
//! and the task starting are mutually exclusive, and so are a reset
//! returning true and the task starting at its old deadline: a claim waits
//! while a reset is on its way to the driver. All resets of one task go
//! through one lane (see [`crate::lanes`]), so the driver reads them in the
//! order of their CAS, and the last one read wins.
//!
//! **Who drops the closure of a cancelled task.** The thread whose cancel
//! won the CAS, at once: from then on no one else may touch the body (a
//! claim fails, the driver sees the state). The driver only learns of it,
//! to let its queue entry go: when it takes the submission in and finds it
//! cancelled (`DRAINED` clear), or from a mark in a bitmap (see
//! `Slab::mark`) if it held the task already. A cancel before the driver
//! took the task in usually takes the submission back out of its lane
//! instead, and the driver never hears of it.
//!
//! Except while the driver holds many tasks (see `Shared::drops_later`):
//! then the CAS that cancels a task the driver holds also sets `LEFT` and
//! adds a reference, and the canceller only marks the key (in a bitmap of
//! its own, so the driver need not read the word again). The mark hands
//! the body to the driver, which drops the closure and lets the reference
//! go when it takes the mark (within a `HOUSEKEEPING` period). A body that
//! no cache holds any more costs the driver's sorted, prefetched sweep less
//! than it costs a canceller waiting for it.
//!
//! The slot is reused only when `refs` drops to zero, so a handle always
//! reads its own task's state, never a newer one's.
//!
//! **The last holder lets go without a CAS.** Every write to a word comes
//! from a holder of one of its references (a handle, which any number of
//! threads may use at once through `&`; the driver through its queue
//! entry, a submission or reset in a lane, or a mark), except the
//! driver's and `shutdown`'s writes to a `SCHEDULED` word, which has the
//! driver's reference. So a thread that lets go of a reference it owns
//! outright (a handle being dropped, not one lent out) and finds it the
//! only one is the only thread that can write the word: `release` then
//! stores the word plainly, saving the CAS's locked instruction, and the
//! store releases what the thread wrote before, as the CAS would. (A
//! cancel through `&TaskHandle` cannot do the same: another thread may be
//! setting `WAITER` through the same handle; the loom model finds that
//! interleaving.)

use crate::sync::atomic::AtomicU32;
use crate::sync::atomic::Ordering::{AcqRel, Acquire, Release};

#[cfg(all(test, schedulers_loom))]
mod model;

pub(crate) const FREE: u32 = 0;
pub(crate) const SCHEDULED: u32 = 1;
pub(crate) const RUNNING: u32 = 2;
pub(crate) const RUNNING_CANCELLED: u32 = 3;
pub(crate) const DONE: u32 = 4;
pub(crate) const PANICKED: u32 = 5;
pub(crate) const CANCELLED: u32 = 6;
pub(crate) const ABANDONED: u32 = 7;
const STATE: u32 = 0b111;
pub(crate) const WAITER: u32 = 1 << 3;
const CALENDAR: u32 = 1 << 4;
const PERIODIC: u32 = 1 << 5;
pub(crate) const DRAINED: u32 = 1 << 6;
const RESETS_SHIFT: u32 = 7;
const RESET: u32 = 1 << RESETS_SHIFT;
const RESETS: u32 = 0b111 << RESETS_SHIFT;
/// Resets that may wait in lanes at once; one more takes the slow path.
pub(crate) const MAX_RESETS: u32 = 7;
pub(crate) const LEFT: u32 = 1 << 10;
const REF: u32 = 1 << 11;
const REFS: u32 = !(REF - 1);
/// A slot whose refs reached this never counts down: it is never reused
/// (two million holders of one task; better a leaked slot than a reuse).
const STUCK: u32 = REFS;

/// The state bits of a word.
pub(crate) fn of(word: u32) -> u32 {
    word & STATE
}

fn refs(word: u32) -> u32 {
    word & REFS
}

/// How many hold the slot.
#[cfg(test)]
pub(crate) fn holders(word: u32) -> u32 {
    refs(word) / REF
}

fn resets(word: u32) -> u32 {
    (word & RESETS) >> RESETS_SHIFT
}

fn with_state(word: u32, state: u32) -> u32 {
    (word & !STATE) | state
}

/// Adds a holder, unless the count is stuck.
fn plus_ref(word: u32) -> u32 {
    if refs(word) == STUCK {
        word
    } else {
        word + REF
    }
}

/// Drops a holder, unless the count is stuck.
fn minus_ref(word: u32) -> u32 {
    if refs(word) == STUCK {
        word
    } else {
        word - REF
    }
}

/// Whether dropping a holder from `prev` (the word before) left none.
fn was_last(prev: u32) -> bool {
    refs(prev) == REF
}

/// True once the task will never run again.
pub(crate) fn is_terminal(word: u32) -> bool {
    of(word) >= DONE
}

/// True for a periodic task.
pub(crate) fn is_periodic(word: u32) -> bool {
    word & PERIODIC != 0
}

/// True for a calendar task.
pub(crate) fn is_calendar(word: u32) -> bool {
    word & CALENDAR != 0
}

/// What a cancel found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// The task was waiting: it will never start, and its body is the
    /// canceller's to empty, unless `left` to the driver. If `logged`, the
    /// driver already holds it, and the canceller marks the key so the
    /// driver counts the dead entry (or removes it), and drops a `left`
    /// closure; else the driver finds it cancelled when it takes the
    /// submission in.
    WasPending { logged: bool, left: bool },
    /// A periodic task was running: it will not run again.
    WasRunning,
    /// Nothing left to stop.
    TooLate,
}

impl Cancel {
    pub(crate) fn stopped(self) -> bool {
        self != Cancel::TooLate
    }
}

/// Moves `word` through `step` (which returns the next word, or `None` to
/// give up) with a CAS loop; returns the word it replaced.
fn update(word: &AtomicU32, step: impl FnMut(u32) -> Option<u32>) -> Result<u32, u32> {
    update_from(word, word.load(Acquire), step)
}

/// As [`update`], from a value of the word the caller loaded (Acquire).
fn update_from(
    word: &AtomicU32,
    mut current: u32,
    mut step: impl FnMut(u32) -> Option<u32>,
) -> Result<u32, u32> {
    loop {
        let Some(next) = step(current) else {
            return Err(current);
        };
        match word.compare_exchange_weak(current, next, AcqRel, Acquire) {
            Ok(prev) => return Ok(prev),
            Err(actual) => current = actual,
        }
    }
}

/// Arms a free slot: scheduled, one handle plus the driver's reference
/// (held by the submission until the driver queues it).
pub(crate) fn arm(word: &AtomicU32, periodic: bool, calendar: bool) {
    let flags = if periodic { PERIODIC } else { 0 } | if calendar { CALENDAR } else { 0 };
    word.store(SCHEDULED | flags | (2 * REF), Release);
}

/// The driver takes a submission out of its lane: marks it `DRAINED` if it
/// is still scheduled. `Err` with the word if it was cancelled or abandoned
/// first: then the driver drops its closure and lets go of the reference.
pub(crate) fn intake(word: &AtomicU32) -> Result<u32, u32> {
    update(word, |w| (of(w) == SCHEDULED).then_some(w | DRAINED))
}

/// Stops every future run; see [`Cancel`]. With `leave`, a task the driver
/// holds is left to it, with a reference for the mark that tells it so:
/// the caller's own, if it is `giving_up` its handle (then the canceller
/// touches the slot no more, and the mark keeps it), else one more.
/// Starts from `current`, a value of the word the caller loaded (Acquire).
/// Returns the replaced word too.
pub(crate) fn cancel(
    word: &AtomicU32,
    current: u32,
    leave: bool,
    giving_up: bool,
) -> (Cancel, u32) {
    let mut outcome = Cancel::TooLate;
    let prev = update_from(word, current, |w| match of(w) {
        SCHEDULED => {
            let logged = w & DRAINED != 0;
            let left = leave && logged;
            outcome = Cancel::WasPending { logged, left };
            let w = with_state(w, CANCELLED);
            Some(match (left, giving_up) {
                (false, _) => w,
                (true, false) => plus_ref(w) | LEFT,
                (true, true) => w | LEFT,
            })
        }
        RUNNING if w & PERIODIC != 0 => {
            outcome = Cancel::WasRunning;
            Some(with_state(w, RUNNING_CANCELLED))
        }
        _ => {
            outcome = Cancel::TooLate;
            None
        }
    });
    (outcome, prev.unwrap_or_else(|w| w))
}

/// True once the driver has taken the task's submission out of its lane
/// (for good: only a new task under the key clears it).
pub(crate) fn is_drained(word: u32) -> bool {
    word & DRAINED != 0
}

/// Cancels a task the driver has not taken in and no reset is on its way
/// to (its submission is about to be taken back out of its lane), and drops
/// the submission's reference, in one step; returns the replaced word.
/// `None` if it is not such a task. The caller's handle holds another
/// reference, so this one is never the last.
pub(crate) fn cancel_undrained(word: &AtomicU32) -> Option<u32> {
    update(word, |w| {
        (of(w) == SCHEDULED && w & DRAINED == 0 && resets(w) == 0 && refs(w) >= 2 * REF)
            .then(|| minus_ref(with_state(w, CANCELLED)))
    })
    .ok()
}

/// True if only a handle and the submission hold the task of `word`, and
/// nothing is on its way to it: scheduled, not taken in, no reset, no
/// waiter. A thread that owns that handle outright and holds the lane
/// where it found the submission is then the word's only writer: the
/// driver takes the submission in only under that lane's lock, every
/// other write comes from a holder (see the [module docs](self)), and
/// `shutdown_now` abandons waiting tasks only after taking every lane in
/// (a submission still in its lane then is one it never sees).
pub(crate) fn is_fresh(word: u32) -> bool {
    word & (STATE | WAITER | DRAINED | RESETS | LEFT | REFS) == SCHEDULED | (2 * REF)
}

/// Cancels a fresh task (see [`is_fresh`]; `current` is its word) and lets
/// go of both its references, the submission's and the caller's handle's,
/// with a plain store: its caller is the word's only writer, and the slot
/// is free for reuse once the store is seen.
pub(crate) fn cancel_fresh(word: &AtomicU32, current: u32) {
    debug_assert!(is_fresh(current));
    word.store(with_state(current, CANCELLED) - 2 * REF, Release);
}

/// What a reset found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reset {
    /// The task waits: its reset must be logged (the entry owns the
    /// reference this reset added).
    Logged,
    /// The task waits, but [`MAX_RESETS`] are on their way already: the
    /// newest of them takes the new deadline instead (see
    /// `Shared::reset`).
    Full,
    /// The task is not waiting: nothing changes.
    NotPending,
}

/// A reset: one more on its way to the driver, if the task waits.
pub(crate) fn reset(word: &AtomicU32) -> Reset {
    let mut outcome = Reset::NotPending;
    let _ = update(word, |w| {
        if of(w) != SCHEDULED {
            outcome = Reset::NotPending;
            return None;
        }
        if resets(w) == MAX_RESETS {
            outcome = Reset::Full;
            return None;
        }
        outcome = Reset::Logged;
        Some(plus_ref(w) + RESET)
    });
    outcome
}

/// True if resets of the task in `word` are on their way.
pub(crate) fn has_resets(word: u32) -> bool {
    resets(word) > 0
}

/// The driver read a logged reset: one fewer on its way. Returns whether
/// the task still waits (then the driver moves it: resets of a task are
/// read in the order they were made), and whether the entry's reference
/// was dropped and the last.
///
/// If the task still waits and is in no queue (`requeue`: a claim met the
/// reset and let it go), the driver queues it again, and the entry's
/// reference becomes the queue's, in this same step. Dropping it and adding
/// one after would be a write to a word that a handle may hold alone: the
/// handle's plain-store release (see the [module docs](self)) would undo it.
/// Otherwise the reference is dropped.
pub(crate) fn reset_read(word: &AtomicU32, requeue: bool) -> (bool, bool) {
    let prev = update(word, |w| {
        Some(if requeue && of(w) == SCHEDULED {
            w - RESET
        } else {
            minus_ref(w - RESET)
        })
    })
    .unwrap_or_else(|w| w);
    let waits = of(prev) == SCHEDULED;
    (waits, !(requeue && waits) && was_last(prev))
}

/// What a claim found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// This thread runs the task now.
    Claimed,
    /// A reset is on its way: the task is not due after all; the driver
    /// queues it again when it reads the reset.
    Moved,
    /// Cancelled or abandoned: it never runs.
    Gone,
}

/// Takes the right to run a scheduled task.
pub(crate) fn claim(word: &AtomicU32) -> Claim {
    let mut outcome = Claim::Gone;
    let _ = update(word, |w| {
        if of(w) != SCHEDULED {
            outcome = Claim::Gone;
            return None;
        }
        if resets(w) > 0 {
            outcome = Claim::Moved;
            return None;
        }
        outcome = Claim::Claimed;
        Some(with_state(w, RUNNING))
    });
    outcome
}

/// Puts a periodic task that just ran back to waiting; false (and the task
/// is now CANCELLED) if it was cancelled while running. Returns the
/// replaced word too, for waking waiters.
pub(crate) fn rearm(word: &AtomicU32) -> (bool, u32) {
    let mut again = false;
    let prev = update(word, |w| {
        again = of(w) == RUNNING;
        Some(with_state(w, if again { SCHEDULED } else { CANCELLED }))
    });
    (again, prev.unwrap_or_else(|w| w))
}

/// Ends a running task for good with `end` (DONE, PANICKED or CANCELLED)
/// and drops the driver's reference, in one step; a task cancelled while
/// running ends CANCELLED whatever `end` says, unless it panicked. Returns
/// the replaced word, and whether the reference was the last.
pub(crate) fn finish(word: &AtomicU32, end: u32) -> (u32, bool) {
    let prev = update(word, |w| {
        let end = if of(w) == RUNNING_CANCELLED && end != PANICKED {
            CANCELLED
        } else {
            end
        };
        Some(minus_ref(with_state(w, end)))
    })
    .unwrap_or_else(|w| w);
    (prev, was_last(prev))
}

/// Ends a scheduled task without running it (`shutdown_now`, or a
/// shutdown policy dropping it as `end`), adding `holders` references (for
/// whoever buries its closure, or a handle) in the same step. `None` if it
/// was not scheduled.
///
/// In one step, because a scheduled task always has a holder (the driver's
/// reference, wherever the task waits), and an ended one may lose its last
/// at once: a runner that claims it lets go when it finds it ended.
pub(crate) fn end_scheduled(word: &AtomicU32, end: u32, holders: u32) -> Option<u32> {
    update(word, |w| {
        (of(w) == SCHEDULED).then(|| (0..holders).fold(with_state(w, end), |w, _| plus_ref(w)))
    })
    .ok()
}

/// Marks that a thread waits for the task's end; returns the word.
pub(crate) fn add_waiter(word: &AtomicU32) -> u32 {
    word.fetch_or(WAITER, AcqRel)
}

/// Adds a holder (a cloned handle, or the driver queueing the task again).
pub(crate) fn acquire(word: &AtomicU32) {
    let _ = update(word, |w| Some(plus_ref(w)));
}

/// Drops a holder; true if it was the last, so the slot may be reused.
pub(crate) fn release(word: &AtomicU32) -> bool {
    release_last(word).is_some()
}

/// Drops a holder; if it was the last, so the slot may be reused, the
/// word it let go of. The last holder lets go with a plain store (see the
/// [module docs](self)).
pub(crate) fn release_last(word: &AtomicU32) -> Option<u32> {
    let w = word.load(Acquire);
    if refs(w) == REF {
        word.store(w - REF, Release);
        return Some(w);
    }
    match update_from(word, w, |w| (refs(w) != STUCK).then(|| w - REF)) {
        Ok(prev) => was_last(prev).then_some(prev),
        Err(_) => None,
    }
}

/// A state's name, for `Debug`.
pub(crate) fn name(state: u32) -> &'static str {
    match state {
        FREE => "free",
        SCHEDULED => "scheduled",
        RUNNING => "running",
        RUNNING_CANCELLED => "running, cancelled",
        DONE => "done",
        PANICKED => "panicked",
        CANCELLED => "cancelled",
        _ => "abandoned",
    }
}
