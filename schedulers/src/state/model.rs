//! A loom model of the state word: every interleaving of a handle's cancel,
//! clone and drop, a worker's claim, run, re-arm and finish, `shutdown_now`'s
//! abandon and a waiter, for a one-shot and a periodic task, checked against
//! the contract:
//!
//! - a task never starts after a cancel (or an abandon) that returned true;
//! - a one-shot runs at most once, and exactly one of "it ran", "a cancel
//!   stopped it", "shutdown_now abandoned it" happens: nothing is lost;
//! - runs of a periodic task never overlap, and a cancel always stops it;
//! - a thread waiting for the end is always told;
//! - the slot is freed exactly once, when its last holder lets go, and
//!   never while one still holds it.
//!
//! Run with `RUSTFLAGS="--cfg schedulers_loom" cargo test -p schedulers --lib --release
//! state::model` (`scripts/test` does, with a bounded number of preemptions).
//! The driver's claim, re-arm and finish run under the scheduler's lock,
//! modelled here by a loom mutex; cancel, clone, drop and waiting take no
//! lock, as in the scheduler. "Ghost" flags record what a thread has seen
//! return true; a worker reads them *before* it claims, so a claim that the
//! protocol let through after such a return shows up in the interleaving
//! where the flag was set first.

use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use super::*;

/// One slot and what the threads of an execution saw.
struct World {
    word: AtomicU64,
    /// The scheduler's lock, under which claims, re-arms and finishes run.
    lock: Mutex<()>,
    runs: AtomicUsize,
    inside: AtomicUsize,
    cancelled: AtomicBool,
    abandoned: AtomicBool,
    woken: AtomicBool,
    freed: AtomicUsize,
}

fn world(periodic: bool) -> Arc<World> {
    let w = World {
        word: AtomicU64::new(FREE),
        lock: Mutex::new(()),
        runs: AtomicUsize::new(0),
        inside: AtomicUsize::new(0),
        cancelled: AtomicBool::new(false),
        abandoned: AtomicBool::new(false),
        woken: AtomicBool::new(false),
        freed: AtomicUsize::new(0),
    };
    // One handle and the driver's reference.
    arm(&w.word, false, periodic);
    Arc::new(w)
}

impl World {
    /// A holder lets go; the last one frees the slot.
    fn release(&self) {
        if release(&self.word) {
            self.freed.fetch_add(1, SeqCst);
        }
    }

    /// A transition out of the pending or running states: wake a waiter.
    fn ended(&self, prev: u64) {
        if prev & WAITER != 0 {
            self.woken.store(true, SeqCst);
        }
    }

    fn claim(&self) -> bool {
        let cancelled = self.cancelled.load(SeqCst);
        let abandoned = self.abandoned.load(SeqCst);
        if !claim(&self.word) {
            return false;
        }
        assert!(!cancelled, "a run started after a cancel returned true");
        assert!(!abandoned, "a run started after shutdown_now abandoned it");
        assert_eq!(self.inside.fetch_add(1, SeqCst), 0, "two runs overlapped");
        self.runs.fetch_add(1, SeqCst);
        true
    }

    /// The driver: claims the due task and runs it, `runs` times. A one-shot
    /// finishes after its run; a periodic task is re-armed after each run,
    /// and stays queued after the last. Lets go of its reference when the
    /// task ended; returns true if it still holds it (the task is queued).
    fn drive(&self, runs: usize, periodic: bool) -> bool {
        for _ in 0..runs {
            let claimed = {
                let _guard = self.lock.lock().unwrap();
                self.claim()
            };
            if !claimed {
                break; // cancelled or abandoned while pending
            }
            self.inside.fetch_sub(1, SeqCst);
            let _guard = self.lock.lock().unwrap();
            if !periodic {
                let prev = finish(&self.word, DONE);
                self.ended(prev);
                break;
            }
            let (again, prev) = rearm(&self.word);
            if !again {
                self.ended(prev); // cancelled while running
                break;
            }
        }
        let _guard = self.lock.lock().unwrap();
        if of(self.word.load(SeqCst)) == SCHEDULED {
            return true;
        }
        self.release();
        false
    }

    /// What a purge does with a queued entry once its task was cancelled.
    fn purge(&self, held: bool) {
        if held {
            assert!(is_terminal(self.word.load(SeqCst)), "purged a live task");
            self.release();
        }
    }

    fn cancel(&self) -> Cancel {
        let (outcome, prev) = cancel(&self.word);
        match outcome {
            Cancel::WasPending { .. } => {
                self.cancelled.store(true, SeqCst);
                self.ended(prev);
            }
            Cancel::WasRunning => self.cancelled.store(true, SeqCst),
            Cancel::TooLate => {}
        }
        outcome
    }

    /// A thread blocking in `wait`: sets the bit, and if the task has not
    /// ended, trusts that whoever ends it sees the bit.
    fn wait(&self) -> bool {
        is_terminal(add_waiter(&self.word))
    }
}

fn spawn(w: &Arc<World>, f: impl FnOnce(&World) + 'static) -> thread::JoinHandle<()> {
    let w = w.clone();
    thread::spawn(move || f(&w))
}

#[test]
fn one_shot_claim_cancel_clone_and_drop() {
    loom::model(|| {
        let w = world(false);
        let driver = thread::spawn({
            let w = w.clone();
            move || w.drive(1, false)
        });
        // The handle is cloned, the clone cancels and is dropped, then the
        // original is dropped: three lock-free operations against the claim.
        acquire(&w.word);
        let canceller = spawn(&w, |w| {
            w.cancel();
            w.release();
        });
        w.release();
        let held = driver.join().unwrap();
        canceller.join().unwrap();
        w.purge(held);
        let ran = w.runs.load(SeqCst);
        let cancelled = w.cancelled.load(SeqCst);
        assert!(ran <= 1, "a one-shot ran twice");
        assert_eq!(ran == 1, !cancelled, "exactly one of ran or cancelled");
        assert_eq!(w.freed.load(SeqCst), 1, "freed exactly once, at the end");
    });
}

#[test]
fn one_shot_abandon_claim_and_cancel() {
    loom::model(|| {
        let w = world(false);
        let driver = thread::spawn({
            let w = w.clone();
            move || w.drive(1, false)
        });
        let abandoner = spawn(&w, |w| {
            let _guard = w.lock.lock().unwrap();
            if let Some(prev) = end_scheduled(&w.word, ABANDONED) {
                w.abandoned.store(true, SeqCst);
                w.ended(prev);
            }
        });
        let outcome = w.cancel();
        let held = driver.join().unwrap();
        abandoner.join().unwrap();
        w.purge(held);
        w.release();
        let ran = w.runs.load(SeqCst) == 1;
        let abandoned = w.abandoned.load(SeqCst);
        let cancelled = outcome.stopped();
        assert_eq!(
            usize::from(ran) + usize::from(abandoned) + usize::from(cancelled),
            1,
            "exactly one of ran, abandoned, cancelled"
        );
        assert_eq!(w.freed.load(SeqCst), 1);
    });
}

#[test]
fn periodic_runs_never_overlap_and_a_cancel_stops_them() {
    loom::model(|| {
        let w = world(true);
        let driver = thread::spawn({
            let w = w.clone();
            move || w.drive(3, true)
        });
        let outcome = w.cancel();
        let held = driver.join().unwrap();
        w.purge(held);
        w.release();
        assert!(outcome.stopped(), "a periodic task is always cancellable");
        // After the cancel returned, at most the run it caught finished.
        assert!(w.runs.load(SeqCst) <= 3);
        assert!(is_terminal(w.word.load(SeqCst)), "the task ended");
        assert_eq!(w.freed.load(SeqCst), 1);
    });
}

fn a_waiter_is_always_woken(periodic: bool) {
    loom::model(move || {
        let w = world(periodic);
        let driver = thread::spawn({
            let w = w.clone();
            move || w.drive(2, periodic)
        });
        let blocked = Arc::new(AtomicBool::new(false));
        let b = blocked.clone();
        // Not over when the bit went in: whoever ends it must wake us.
        let waiter = spawn(&w, move |w| b.store(!w.wait(), SeqCst));
        w.cancel();
        let held = driver.join().unwrap();
        waiter.join().unwrap();
        w.purge(held);
        assert!(is_terminal(w.word.load(SeqCst)), "the task ended");
        if blocked.load(SeqCst) {
            assert!(w.woken.load(SeqCst), "a waiter blocked but nobody woke it");
        }
        w.release();
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
