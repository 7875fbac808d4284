//! A loom model of the state word (`state.rs`): every interleaving of claim,
//! cancel, reset, finish, re-arm and abandon, for a one-shot and a periodic
//! task, checked against the contract:
//!
//! - a task never starts after a cancel (or an abandon) that returned true,
//!   nor from an entry that a successful reset moved away from;
//! - a one-shot runs at most once, and exactly one of "it ran", "a cancel
//!   stopped it", "shutdown_now abandoned it" happens: nothing is lost;
//! - runs of a periodic task never overlap, and a cancel always stops it;
//! - a thread waiting for the end is always told.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p schedulers --lib model`
//! (`scripts/test` does, with a bounded number of preemptions). The threads
//! below play the parts of the scheduler's workers and the user's handles
//! over nothing but [`State`], so the model follows the protocol wherever the
//! word lives. "Ghost" flags record what a thread has seen return true; a
//! thread reads them *before* it claims, so any claim that the protocol let
//! through after such a return shows up in the interleaving where the flag
//! was set first.

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

use super::state::{CancelOutcome, End, Phase, Rearm, State};

/// What the threads of one execution have seen and done.
#[derive(Default)]
struct Ghost {
    /// Runs started.
    runs: AtomicUsize,
    /// Runs under way (overlap detector).
    inside: AtomicUsize,
    /// A cancel returned true.
    cancelled: AtomicBool,
    /// `shutdown_now` abandoned the task.
    abandoned: AtomicBool,
    /// A reset moved the task off the first worker's chain of entries
    /// (1, 101, 201, ...) onto the resetter's (2, 102, ...).
    moved: AtomicBool,
    /// A transition that ended the task said to wake the waiter.
    woken: AtomicBool,
}

impl Ghost {
    /// Claims entry `seq` as a worker starting it would, checking that
    /// nothing forbade the start. True if this thread now runs it.
    fn claim(&self, state: &State, seq: u64) -> bool {
        let cancelled = self.cancelled.load(SeqCst);
        let abandoned = self.abandoned.load(SeqCst);
        let moved = seq % 100 == 1 && self.moved.load(SeqCst);
        if !state.claim(seq) {
            return false;
        }
        assert!(!cancelled, "a run started after a cancel returned true");
        assert!(!abandoned, "a run started after shutdown_now abandoned it");
        assert!(
            !moved,
            "a run started from an entry a reset moved away from"
        );
        assert_eq!(self.inside.fetch_add(1, SeqCst), 0, "two runs overlapped");
        self.runs.fetch_add(1, SeqCst);
        true
    }

    fn end_run(&self) {
        self.inside.fetch_sub(1, SeqCst);
    }

    fn ended(&self, wake: bool) {
        if wake {
            self.woken.store(true, SeqCst);
        }
    }

    /// A one-shot worker: claim, run, finish.
    fn run_once(&self, state: &State, seq: u64) {
        if self.claim(state, seq) {
            self.end_run();
            self.ended(state.finish(End::Done).wake);
        }
    }

    /// A periodic worker: runs entry `seq` and the entries it re-arms, at
    /// most `runs` times.
    fn run_periodic(&self, state: &State, mut seq: u64, runs: usize) {
        for _ in 0..runs {
            if !self.claim(state, seq) {
                return;
            }
            self.end_run();
            let next = seq + 100;
            match state.rearm(next) {
                (Rearm::Again, ended) => {
                    assert!(!ended.wake, "a re-armed task has not ended");
                    seq = next;
                }
                (Rearm::Cancelled, ended) => return self.ended(ended.wake),
            }
        }
    }

    fn cancel(&self, state: &State, periodic: bool) -> CancelOutcome {
        let (outcome, ended) = state.cancel(periodic);
        if outcome.stopped() {
            self.cancelled.store(true, SeqCst);
        }
        self.ended(ended.wake);
        outcome
    }
}

/// Runs `body` on a new model thread with its own references to the task.
fn on_thread<T: 'static>(
    state: &Arc<State>,
    ghost: &Arc<Ghost>,
    body: impl FnOnce(&State, &Ghost) -> T + 'static,
) -> thread::JoinHandle<T> {
    let (state, ghost) = (state.clone(), ghost.clone());
    thread::spawn(move || body(&state, &ghost))
}

fn armed() -> (Arc<State>, Arc<Ghost>) {
    let state = State::new();
    state.arm(1);
    (Arc::new(state), Arc::new(Ghost::default()))
}

/// A worker starting entry 1, a user cancelling, and a user resetting to
/// entry 2 (then that entry's worker starting it).
#[test]
fn one_shot_claim_cancel_and_reset() {
    loom::model(|| {
        let (state, ghost) = armed();
        let worker = on_thread(&state, &ghost, move |state, ghost| ghost.run_once(state, 1));
        let resetter = on_thread(&state, &ghost, move |state, ghost| {
            if state.reseq(2) {
                ghost.moved.store(true, SeqCst);
                ghost.run_once(state, 2);
            }
        });
        let cancel = ghost.cancel(&state, false);
        assert_ne!(
            cancel,
            CancelOutcome::WasRunning,
            "a one-shot has no next run"
        );
        worker.join().unwrap();
        resetter.join().unwrap();
        let runs = ghost.runs.load(SeqCst);
        assert_eq!(
            runs + usize::from(cancel.stopped()),
            1,
            "exactly one of: it ran once, or the cancel stopped it"
        );
        let phase = state.phase();
        assert_eq!(
            phase,
            if runs == 1 {
                Phase::Done
            } else {
                Phase::Cancelled
            }
        );
    });
}

/// `shutdown_now` abandoning the task races a worker starting it and a
/// user cancelling it: exactly one of the three wins.
#[test]
fn one_shot_abandon_claim_and_cancel() {
    loom::model(|| {
        let (state, ghost) = armed();
        let worker = on_thread(&state, &ghost, move |state, ghost| ghost.run_once(state, 1));
        let canceller = on_thread(&state, &ghost, move |state, ghost| {
            ghost.cancel(state, false).stopped()
        });
        let abandoned = match state.abandon() {
            Some(ended) => {
                ghost.abandoned.store(true, SeqCst);
                ghost.ended(ended.wake);
                true
            }
            None => false,
        };
        worker.join().unwrap();
        let cancelled = canceller.join().unwrap();
        let outcomes = ghost.runs.load(SeqCst) + usize::from(cancelled) + usize::from(abandoned);
        assert_eq!(outcomes, 1, "exactly one of: ran, cancelled, abandoned");
        assert!(state.phase().is_final());
    });
}

/// A periodic task: a worker runs it and re-arms it (twice at most), a user
/// cancels it, another resets it to entry 2 and that entry's worker runs it.
/// The cancel always stops it, no run starts after, runs never overlap, and
/// it ends cancelled.
#[test]
fn periodic_runs_rearm_cancel_and_reset() {
    loom::model(|| {
        let (state, ghost) = armed();
        let worker = on_thread(&state, &ghost, move |state, ghost| {
            ghost.run_periodic(state, 1, 2)
        });
        let resetter = on_thread(&state, &ghost, move |state, ghost| {
            if state.reseq(2) {
                ghost.moved.store(true, SeqCst);
                ghost.run_periodic(state, 2, 1);
            }
        });
        let cancel = ghost.cancel(&state, true);
        worker.join().unwrap();
        resetter.join().unwrap();
        assert!(cancel.stopped(), "a periodic task can always be cancelled");
        assert_eq!(state.phase(), Phase::Cancelled, "cancelled for good");
    });
}

/// A thread waiting for the end is always woken: whichever transition ends
/// the task (finish, or a cancel, or the end of the run it cancelled) after
/// the waiter announced itself says so, also across a periodic re-arm.
fn a_waiter_is_always_woken(periodic: bool) {
    loom::model(move || {
        let (state, ghost) = armed();
        let worker = on_thread(&state, &ghost, move |state, ghost| {
            if periodic {
                ghost.run_periodic(state, 1, 1);
            } else {
                ghost.run_once(state, 1);
            }
        });
        let canceller = on_thread(&state, &ghost, move |state, ghost| {
            ghost.cancel(state, periodic);
        });
        let seen = state.add_waiter();
        worker.join().unwrap();
        canceller.join().unwrap();
        let ended = state.phase().is_final();
        assert!(
            seen.is_final() || !ended || ghost.woken.load(SeqCst),
            "a waiter that saw {seen:?} was never woken"
        );
    });
}

#[test]
fn a_waiter_on_a_one_shot_is_always_woken() {
    a_waiter_is_always_woken(false);
}

#[test]
fn a_waiter_on_a_periodic_task_is_always_woken() {
    a_waiter_is_always_woken(true);
}
