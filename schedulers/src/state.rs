//! The state word of a timer: one `AtomicU64` per slot that decides who may
//! run, cancel or reuse the timer.
//!
//! # Ground rules
//!
//! ```text
//! bits 0..3   state   FREE, SCHEDULED, RUNNING, RUNNING_CANCELLED,
//!                     DONE, PANICKED, CANCELLED, ABANDONED
//! bit  3      WAITER      a thread waits for the end (wake it on the way out)
//! bit  4      NEEDS_DROP  the closure has drop glue: a cancel drops it at once
//! bit  5      PERIODIC    a running task has future runs a cancel can stop
//! bits 8..32  refs        holders: handles, plus one for the driver while the
//!                         timer is queued, due, or running
//! bits 32..64 link        while FREE: the next key on the freed stack, plus one
//! ```
//!
//! ```text
//! SCHEDULED --claim--> RUNNING --one-shot--> DONE | PANICKED
//!     |                  |  \--periodic, rearm--> SCHEDULED
//!     |                  \--cancel (periodic)--> RUNNING_CANCELLED --finish--> CANCELLED
//!     +--cancel--> CANCELLED                  +--abandon (shutdown_now)--> ABANDONED
//! ```
//!
//! A cancel is one CAS on this word and takes no lock, so `cancel` returning
//! true and the task starting are mutually exclusive. `claim` happens under
//! the scheduler's lock, when a thread is about to run the task, so a task
//! waiting for a busy worker can still be cancelled, reset or abandoned.
//! The slot is reused only when `refs` drops to zero, so a handle always
//! reads its own task's state, never a newer one's.

use crate::sync::atomic::AtomicU64;
use crate::sync::atomic::Ordering::{AcqRel, Acquire, Release};

#[cfg(all(test, schedulers_loom))]
mod model;

pub(crate) const FREE: u64 = 0;
pub(crate) const SCHEDULED: u64 = 1;
pub(crate) const RUNNING: u64 = 2;
pub(crate) const RUNNING_CANCELLED: u64 = 3;
pub(crate) const DONE: u64 = 4;
pub(crate) const PANICKED: u64 = 5;
pub(crate) const CANCELLED: u64 = 6;
pub(crate) const ABANDONED: u64 = 7;
const STATE: u64 = 0b111;
pub(crate) const WAITER: u64 = 1 << 3;
pub(crate) const NEEDS_DROP: u64 = 1 << 4;
const PERIODIC: u64 = 1 << 5;
const REF: u64 = 1 << 8;
const REFS: u64 = 0xff_ffff << 8;
/// A slot whose refs reached this never counts down: it is never reused
/// (16 million clones of one handle; better a leaked slot than a reuse).
const STUCK: u64 = REFS;

pub(crate) fn of(word: u64) -> u64 {
    word & STATE
}

fn refs(word: u64) -> u64 {
    word & REFS
}

fn with_state(word: u64, state: u64) -> u64 {
    (word & !STATE) | state
}

/// True once the task will never run again.
pub(crate) fn is_terminal(word: u64) -> bool {
    of(word) >= DONE
}

/// What a cancel found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// The task was waiting: it will never start.
    WasPending {
        /// Its closure has drop glue: take it out and drop it now.
        needs_drop: bool,
    },
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
fn update(word: &AtomicU64, mut step: impl FnMut(u64) -> Option<u64>) -> Result<u64, u64> {
    let mut current = word.load(Acquire);
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

/// Arms a free slot: scheduled, one handle plus the driver's reference.
pub(crate) fn arm(word: &AtomicU64, needs_drop: bool, periodic: bool) {
    let flags = if needs_drop { NEEDS_DROP } else { 0 } | if periodic { PERIODIC } else { 0 };
    word.store(SCHEDULED | flags | (2 * REF), Release);
}

/// Stops every future run; see [`Cancel`].
pub(crate) fn cancel(word: &AtomicU64) -> (Cancel, u64) {
    let mut outcome = Cancel::TooLate;
    let prev = update(word, |w| match of(w) {
        SCHEDULED => {
            outcome = Cancel::WasPending {
                needs_drop: w & NEEDS_DROP != 0,
            };
            Some(with_state(w, CANCELLED))
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

/// Takes the right to run a scheduled task. Called under the scheduler's
/// lock; fails if a cancel or abandon got there first.
pub(crate) fn claim(word: &AtomicU64) -> bool {
    update(word, |w| {
        (of(w) == SCHEDULED).then(|| with_state(w, RUNNING))
    })
    .is_ok()
}

/// Puts a periodic task that just ran back to waiting; false (and the task
/// is now CANCELLED) if it was cancelled while running. Returns the
/// replaced word too, for waking waiters.
pub(crate) fn rearm(word: &AtomicU64) -> (bool, u64) {
    let mut again = false;
    let prev = update(word, |w| {
        again = of(w) == RUNNING;
        Some(with_state(w, if again { SCHEDULED } else { CANCELLED }))
    });
    (again, prev.unwrap_or_else(|w| w))
}

/// Ends a running task for good with `end` (DONE, PANICKED or CANCELLED);
/// a task cancelled while running ends CANCELLED whatever `end` says,
/// unless it panicked. Returns the replaced word.
pub(crate) fn finish(word: &AtomicU64, end: u64) -> u64 {
    update(word, |w| {
        let end = if of(w) == RUNNING_CANCELLED && end != PANICKED {
            CANCELLED
        } else {
            end
        };
        Some(with_state(w, end))
    })
    .unwrap_or_else(|w| w)
}

/// Ends a scheduled task without running it (`shutdown_now`, or a
/// shutdown policy dropping it as `end`). False if it was not scheduled.
pub(crate) fn end_scheduled(word: &AtomicU64, end: u64) -> Option<u64> {
    update(word, |w| (of(w) == SCHEDULED).then(|| with_state(w, end))).ok()
}

/// Marks that a thread waits for the task's end; returns the word.
pub(crate) fn add_waiter(word: &AtomicU64) -> u64 {
    word.fetch_or(WAITER, AcqRel)
}

/// Adds a holder (a cloned handle, or the driver queueing the task again).
pub(crate) fn acquire(word: &AtomicU64) {
    let _ = update(word, |w| (refs(w) != STUCK).then_some(w + REF));
}

/// Drops a holder; true if it was the last, so the slot may be reused.
pub(crate) fn release(word: &AtomicU64) -> bool {
    match update(word, |w| (refs(w) != STUCK).then(|| w - REF)) {
        Ok(prev) => refs(prev) == REF,
        Err(_) => false,
    }
}

/// The state of a free slot that links to `next` (a key plus one, or 0).
pub(crate) fn free_link(next: u64) -> u64 {
    FREE | (next << 32)
}

/// The link of a free slot.
pub(crate) fn link_of(word: u64) -> u64 {
    word >> 32
}

/// A state's name, for `Debug`.
pub(crate) fn name(state: u64) -> &'static str {
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
