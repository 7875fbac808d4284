//! The state word of a task: the claim / cancel / reset / finish protocol.
//!
//! # Ground rules
//!
//! A task's life is a small state machine kept in one atomic word, whose
//! upper bits hold the *sequence number* of the queue entry that may run it:
//!
//! ```text
//! SCHEDULED@s --claim(s)--> RUNNING@s --one-shot--> DONE | PANICKED
//!      |                      |  \--periodic--> SCHEDULED@s' (re-queued)
//!      |                      \--cancel (periodic)--> RUNNING_CANCELLED --> CANCELLED
//!      +--cancel--> CANCELLED      +--reset--> SCHEDULED@s'      +--abandon--> ABANDONED
//! ```
//!
//! A queue holds `(deadline, seq, task)` entries. An entry is live only while
//! the task is `SCHEDULED` at the entry's `seq`, so cancel is one CAS (the
//! stale entry is skipped or purged later) and reset is a CAS to a fresh
//! `seq` plus a new entry. Because the claim is a CAS on the same word, a task
//! runs at most once per entry, never after a cancel that returned true, and
//! never at a deadline that a reset already moved. A scheduler claims an
//! entry when a thread *starts* it, not when it hands it to a pool: until
//! then it is pending, so cancel, reset and abandon still reach it.
//!
//! The word also carries a `WAITER` bit, set by a thread about to block in
//! `wait`, so that the transition to a final state knows to wake it.
//!
//! Nothing here knows the closure, the clock or the queues: the protocol is
//! model-checked on its own (`task::model`, under `--cfg loom`).

use std::convert::Infallible;

use crate::sync::atomic::{AtomicU64, Ordering::AcqRel, Ordering::Acquire, Ordering::Release};

const SCHEDULED: u64 = 0;
const RUNNING: u64 = 1;
const RUNNING_CANCELLED: u64 = 2;
const DONE: u64 = 3;
const PANICKED: u64 = 4;
const CANCELLED: u64 = 5;
const ABANDONED: u64 = 6;
const STATE_MASK: u64 = 0b0111;
/// Set by a thread blocked in `wait`, so finishing knows to wake it.
const WAITER: u64 = 0b1000;
const SEQ_SHIFT: u32 = 4;

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting in a queue for its next run.
    Scheduled,
    Running,
    /// A periodic task cancelled while it runs: this run ends, no other starts.
    RunningCancelled,
    /// A one-shot task that completed.
    Done,
    Panicked,
    Cancelled,
    /// Dropped by `shutdown_now` before it ran.
    Abandoned,
}

impl Phase {
    fn of(word: u64) -> Phase {
        match word & STATE_MASK {
            SCHEDULED => Phase::Scheduled,
            RUNNING => Phase::Running,
            RUNNING_CANCELLED => Phase::RunningCancelled,
            DONE => Phase::Done,
            PANICKED => Phase::Panicked,
            CANCELLED => Phase::Cancelled,
            _ => Phase::Abandoned,
        }
    }

    /// True once the task will never run again.
    pub(crate) fn is_final(self) -> bool {
        matches!(
            self,
            Phase::Done | Phase::Panicked | Phase::Cancelled | Phase::Abandoned
        )
    }
}

/// How a run ended, for [`State::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// A one-shot task completed.
    Done,
    /// The run panicked: the task stops, periodic or not.
    Panicked,
}

/// What a cancel found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CancelOutcome {
    /// The task was waiting in a queue: its entry is now stale.
    WasPending,
    /// A periodic task was running: it will not be re-queued.
    WasRunning,
    /// Nothing left to stop.
    TooLate,
}

impl CancelOutcome {
    pub(crate) fn stopped(self) -> bool {
        self != CancelOutcome::TooLate
    }
}

/// What became of a periodic task when its run ended, for [`State::rearm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rearm {
    /// It is pending again, at the new entry.
    Again,
    /// It was cancelled while it ran: it is over.
    Cancelled,
}

/// A transition that ended a task's life: whether a thread waits to be told.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ended {
    pub(crate) wake: bool,
}

impl Ended {
    fn from(previous_word: u64) -> Ended {
        Ended {
            wake: previous_word & WAITER != 0,
        }
    }
}

/// The state word. See the module docs.
#[derive(Debug)]
pub(crate) struct State {
    word: AtomicU64,
}

impl State {
    /// A task no queue has seen yet (pending at entry 0).
    pub(crate) fn new() -> State {
        State {
            word: AtomicU64::new(SCHEDULED),
        }
    }

    pub(crate) fn phase(&self) -> Phase {
        Phase::of(self.word.load(Acquire))
    }

    /// True while the task is waiting in a queue at entry `seq`.
    pub(crate) fn is_live(&self, seq: u64) -> bool {
        let w = self.word.load(Acquire);
        w & STATE_MASK == SCHEDULED && w >> SEQ_SHIFT == seq
    }

    /// Makes a fresh task pending at entry `seq`. Only for a task no queue
    /// has seen yet.
    pub(crate) fn arm(&self, seq: u64) {
        self.word.store(seq << SEQ_SHIFT, Release);
    }

    /// Applies `step` to the word until the CAS holds; `step` returns the
    /// new word, or `Err` to give up with a value.
    fn update<T>(&self, mut step: impl FnMut(u64) -> Result<u64, T>) -> Result<u64, T> {
        let mut w = self.word.load(Acquire);
        loop {
            let next = step(w)?;
            match self.word.compare_exchange_weak(w, next, AcqRel, Acquire) {
                Ok(previous) => return Ok(previous),
                Err(actual) => w = actual,
            }
        }
    }

    /// Takes the right to run entry `seq`: a thread calls this as it starts
    /// the run. False if the entry is stale (cancelled, reset, abandoned or
    /// already claimed).
    pub(crate) fn claim(&self, seq: u64) -> bool {
        self.update(|w| {
            if w & STATE_MASK == SCHEDULED && w >> SEQ_SHIFT == seq {
                Ok((w & !STATE_MASK) | RUNNING)
            } else {
                Err(())
            }
        })
        .is_ok()
    }

    /// Ends a claimed run for good (a one-shot done, or any task panicked).
    pub(crate) fn finish(&self, end: End) -> Ended {
        let state = match end {
            End::Done => DONE,
            End::Panicked => PANICKED,
        };
        let Ok(previous) = self.update(|w| Ok::<u64, Infallible>((w & !STATE_MASK) | state));
        Ended::from(previous)
    }

    /// After a periodic run ended normally: pending again at entry `seq`,
    /// unless it was cancelled meanwhile.
    pub(crate) fn rearm(&self, seq: u64) -> (Rearm, Ended) {
        let mut rearm = Rearm::Again;
        let Ok(previous) = self.update(|w| {
            if w & STATE_MASK == RUNNING {
                rearm = Rearm::Again;
                Ok::<u64, Infallible>((seq << SEQ_SHIFT) | (w & WAITER) | SCHEDULED)
            } else {
                rearm = Rearm::Cancelled;
                Ok((w & !STATE_MASK) | CANCELLED)
            }
        });
        let ended = match rearm {
            Rearm::Again => Ended { wake: false },
            Rearm::Cancelled => Ended::from(previous),
        };
        (rearm, ended)
    }

    /// Stops every future run. `WasPending` or `WasRunning` iff this call
    /// did it: the task was pending, or periodic and running (its next run
    /// is stopped). The `Ended` says whether to wake a waiter: only a task
    /// that was pending ends here; a running one ends with its run.
    pub(crate) fn cancel(&self, periodic: bool) -> (CancelOutcome, Ended) {
        let mut outcome = CancelOutcome::TooLate;
        let previous = self.update(|w| match w & STATE_MASK {
            SCHEDULED => {
                outcome = CancelOutcome::WasPending;
                Ok((w & !STATE_MASK) | CANCELLED)
            }
            RUNNING if periodic => {
                outcome = CancelOutcome::WasRunning;
                Ok((w & !STATE_MASK) | RUNNING_CANCELLED)
            }
            _ => Err(()),
        });
        match (outcome, previous) {
            (CancelOutcome::WasPending, Ok(previous)) => (outcome, Ended::from(previous)),
            (CancelOutcome::WasRunning, Ok(_)) => (outcome, Ended { wake: false }),
            _ => (CancelOutcome::TooLate, Ended { wake: false }),
        }
    }

    /// Moves a pending task to entry `seq`. False if it is not pending
    /// (running, over, cancelled).
    pub(crate) fn reseq(&self, seq: u64) -> bool {
        self.update(|w| {
            if w & STATE_MASK == SCHEDULED {
                Ok((seq << SEQ_SHIFT) | (w & WAITER) | SCHEDULED)
            } else {
                Err(())
            }
        })
        .is_ok()
    }

    /// Marks a pending task as dropped by `shutdown_now`; `None` if it was
    /// not pending.
    pub(crate) fn abandon(&self) -> Option<Ended> {
        self.update(|w| {
            if w & STATE_MASK == SCHEDULED {
                Ok((w & !STATE_MASK) | ABANDONED)
            } else {
                Err(())
            }
        })
        .ok()
        .map(Ended::from)
    }

    /// Announces a thread about to wait for the end; returns the phase it
    /// saw. If that phase is not final, the transition that ends the task
    /// reports `wake` (the waiter must block under the lock the waker takes).
    pub(crate) fn add_waiter(&self) -> Phase {
        Phase::of(self.word.fetch_or(WAITER, AcqRel))
    }
}
