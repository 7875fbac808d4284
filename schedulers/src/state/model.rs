//! A loom model of the state word and the hand-offs around it: every
//! interleaving of a handle's cancel (taking the submission back out of its
//! lane, or not; marked for the driver, or not), reset, clone and drop, a
//! cancel that gives up its handle (the one plain store of a task only
//! that handle and its submission hold, or a cancel and a release), the
//! driver's intake, claim, run, re-arm and finish, a reset queueing again a
//! task a claim let go, `shutdown_now`'s abandon, `shutdown` stopping a
//! periodic task in flight, and a waiter, for a one-shot and a periodic
//! task, checked against the contract:
//!
//! - a task never starts after a cancel (or an abandon) that returned true;
//! - a one-shot runs at most once, and exactly one of "it ran", "a cancel
//!   stopped it", "shutdown_now abandoned it" happens: nothing is lost;
//! - a task never starts at its old deadline after a reset returned true;
//! - runs of a periodic task never overlap, and a cancel always stops it;
//! - a thread waiting for the end is always told;
//! - the closure is dropped exactly once, by one thread at a time (the
//!   body is a `loom::cell::UnsafeCell`: two threads touching it without a
//!   hand-off between them fail the model), also when a cancel leaves it
//!   to the driver, which drops it when it sweeps the mark;
//! - the slot is freed exactly once, when its last holder lets go, and
//!   never while one still holds it.
//!
//! Run with `RUSTFLAGS="--cfg schedulers_loom" cargo test -p schedulers --lib --release
//! state::model` (`scripts/test` does, with a bounded number of preemptions).
//! The lane is modelled by a loom mutex holding the submission entry and
//! the reset entries, the driver's lock by another; cancel, clone, drop and
//! waiting take no lock but the lane's, as in the scheduler. "Ghost" flags
//! record what a thread has seen return true; a worker reads them *before*
//! it claims, so a claim that the protocol let through after such a return
//! shows up in the interleaving where the flag was set first.

#![allow(unsafe_code)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::Acquire, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use super::*;

/// The lane: whether the submission entry is still there (not taken back
/// nor taken in), and the resets on their way.
#[derive(Default)]
struct Lane {
    submitted: bool,
    resets: usize,
}

/// One slot and what the threads of an execution saw.
struct World {
    word: AtomicU32,
    /// The closure: 1 while it exists, 0 once dropped.
    body: UnsafeCell<u32>,
    lane: Mutex<Lane>,
    /// The driver's lock, under which re-arms and the pool's claims run.
    lock: Mutex<()>,
    runs: AtomicUsize,
    inside: AtomicUsize,
    cancelled: AtomicBool,
    abandoned: AtomicBool,
    /// A reset returned true: the task must not run at its old deadline.
    moved: AtomicBool,
    woken: AtomicBool,
    dropped: AtomicUsize,
    freed: AtomicUsize,
    /// The cancel left a mark for the driver.
    marked: AtomicBool,
    /// The mark is a left one (the slab's second bitmap): set before
    /// `marked`.
    left_mark: AtomicBool,
    /// A cancel of a task the driver holds leaves the closure to it (as
    /// while the driver's queue is large).
    leave: bool,
}

fn world(periodic: bool) -> Arc<World> {
    world_with(periodic, false)
}

fn world_with(periodic: bool, leave: bool) -> Arc<World> {
    let w = World {
        word: AtomicU32::new(FREE),
        body: UnsafeCell::new(1),
        lane: Mutex::new(Lane {
            submitted: true,
            resets: 0,
        }),
        lock: Mutex::new(()),
        runs: AtomicUsize::new(0),
        inside: AtomicUsize::new(0),
        cancelled: AtomicBool::new(false),
        abandoned: AtomicBool::new(false),
        moved: AtomicBool::new(false),
        woken: AtomicBool::new(false),
        dropped: AtomicUsize::new(0),
        freed: AtomicUsize::new(0),
        marked: AtomicBool::new(false),
        left_mark: AtomicBool::new(false),
        leave,
    };
    // One handle and the submission's reference.
    arm(&w.word, periodic, false);
    Arc::new(w)
}

impl World {
    /// A holder lets go; the last one frees the slot.
    fn release(&self) {
        if release(&self.word) {
            self.freed.fetch_add(1, SeqCst);
        }
    }

    /// Drops the closure: whoever does must hold the body alone.
    fn drop_body(&self) {
        self.body.with_mut(|b| {
            // SAFETY: a loom cell; loom checks that no other thread
            // touches it at the same time.
            let b = unsafe { &mut *b };
            assert_eq!(*b, 1, "the closure was dropped twice");
            *b = 0;
        });
        self.dropped.fetch_add(1, SeqCst);
    }

    /// A transition out of the pending or running states: wake a waiter.
    fn ended(&self, prev: u32) {
        if prev & WAITER != 0 {
            self.woken.store(true, SeqCst);
        }
    }

    /// The driver's intake of the submission; true if it queued the task
    /// (and so holds the reference for the queue). The caller holds the
    /// driver's lock, as every intake does.
    fn intake(&self) -> bool {
        let mut lane = self.lane.lock().unwrap();
        if !lane.submitted {
            return false; // taken back by a cancel
        }
        lane.submitted = false;
        drop(lane);
        match intake(&self.word) {
            Ok(_) => true,
            Err(_) => {
                // Cancelled (or abandoned) before the driver saw it: its
                // canceller dropped the closure; the driver lets the
                // submission's reference go.
                self.release();
                false
            }
        }
    }

    /// The driver reads the resets on their way, in order: a task that
    /// still waits and is not queued (a claim met the reset and let it go)
    /// is queued again, the reset's reference becoming the queue's. Returns
    /// whether the queue holds the task.
    fn read_resets(&self, mut held: bool) -> bool {
        let resets = std::mem::take(&mut self.lane.lock().unwrap().resets);
        for _ in 0..resets {
            let (waits, last) = reset_read(&self.word, !held);
            if waits {
                held = true;
            } else if last {
                self.freed.fetch_add(1, SeqCst);
            }
        }
        held
    }

    /// The driver's sweep of the cancel marks: it learns the entry is
    /// dead. A mark holds no reference and the body is not the driver's,
    /// unless the canceller left it (a left mark, with `LEFT` in the word):
    /// then the driver drops the closure and lets the mark's reference go.
    /// The driver goes by the mark, not the word (as the scheduler does).
    ///
    /// A compare-exchange, not the scheduler's swap: loom 0.7 can let a
    /// swap racing a store read the old value and still leave it in place,
    /// a history no CPU allows (tokio-rs/loom#254).
    fn sweep_marks(&self) {
        if self
            .marked
            .compare_exchange(true, false, SeqCst, SeqCst)
            .is_ok()
        {
            let w = self.word.load(SeqCst);
            assert!(is_terminal(w), "marked but not over");
            let left = self.left_mark.load(SeqCst);
            assert_eq!(w & LEFT != 0, left, "a left mark, and only it, says LEFT");
            if left {
                self.drop_body();
                self.release();
            }
        }
    }

    fn claim(&self) -> Claim {
        let cancelled = self.cancelled.load(SeqCst);
        let abandoned = self.abandoned.load(SeqCst);
        let moved = self.moved.load(SeqCst);
        let outcome = claim(&self.word);
        if outcome == Claim::Claimed {
            assert!(!cancelled, "a run started after a cancel returned true");
            assert!(!abandoned, "a run started after shutdown_now abandoned it");
            assert!(!moved, "a run started at its old deadline after a reset");
            assert_eq!(self.inside.fetch_add(1, SeqCst), 0, "two runs overlapped");
            self.body.with(|b| {
                // SAFETY: a loom cell, checked as in `drop_body`.
                assert_eq!(unsafe { *b }, 1, "ran a dropped closure")
            });
            self.runs.fetch_add(1, SeqCst);
        }
        outcome
    }

    /// The driver: takes the submission in, then claims the due task and
    /// runs it, `runs` times. A one-shot finishes after its run; a periodic
    /// task is re-armed after each run, and stays queued after the last.
    /// Lets go of its reference when the task ended; returns true if it
    /// still holds it (the task is queued).
    fn drive(&self, runs: usize, periodic: bool) -> bool {
        if !{
            let _guard = self.lock.lock().unwrap();
            self.intake()
        } {
            return false;
        }
        for _ in 0..runs {
            match self.claim() {
                Claim::Claimed => {}
                // Moved while due: the reset on its way holds a reference
                // and queues it again; this copy lets go.
                Claim::Moved => {
                    self.release();
                    return false;
                }
                Claim::Gone => break, // cancelled or abandoned while pending
            }
            self.inside.fetch_sub(1, SeqCst);
            if !periodic {
                let (prev, last) = finish(&self.word, DONE);
                self.ended(prev);
                if last {
                    self.freed.fetch_add(1, SeqCst);
                }
                return false;
            }
            let _guard = self.lock.lock().unwrap();
            let (again, prev) = rearm(&self.word);
            if !again {
                // Cancelled while it ran: the runner drops the closure.
                self.ended(prev);
                self.drop_body();
                let (_, last) = finish(&self.word, CANCELLED);
                if last {
                    self.freed.fetch_add(1, SeqCst);
                }
                return false;
            }
        }
        let _guard = self.lock.lock().unwrap();
        if of(self.word.load(SeqCst)) == SCHEDULED {
            return true;
        }
        self.release();
        false
    }

    /// The driver of a one-shot that then sweeps the marks (as it does
    /// with closures left to it); returns whether the queue holds the task.
    fn drive_once_and_sweep(&self) -> bool {
        let held = self.drive(1, false);
        let _guard = self.lock.lock().unwrap();
        self.sweep_marks();
        held
    }

    /// What the driver does at the end with a queued entry: sweeps what
    /// callers left, and lets a dead entry go.
    fn settle(&self, held: bool) {
        let held = self.read_resets(held);
        self.sweep_marks();
        if held {
            if is_terminal(self.word.load(SeqCst)) {
                self.release();
            } else {
                // Still waiting (moved, or periodic): shut down, as
                // shutdown_now would, so the slot can be freed.
                if let Some(prev) = end_scheduled(&self.word, ABANDONED, 0) {
                    self.abandoned.store(true, SeqCst);
                    self.ended(prev);
                    self.drop_body();
                }
                self.release();
            }
        }
    }

    /// A handle's cancel: takes the entry back out of the lane if it is
    /// still there, else the usual CAS, marking the key for the driver if
    /// it held the task.
    fn cancel(&self) -> bool {
        self.cancel_as(false)
    }

    /// [`World::cancel`], and if `giving_up`, the handle's release: in the
    /// cancel's CAS if it leaves the closure to the driver, else after.
    fn cancel_as(&self, giving_up: bool) -> bool {
        // A task the driver took in is not in its lane: no look there.
        let current = self.word.load(Acquire);
        if !is_drained(current) {
            let mut lane = self.lane.lock().unwrap();
            if lane.submitted {
                if let Some(prev) = cancel_undrained(&self.word) {
                    lane.submitted = false;
                    drop(lane);
                    self.cancelled.store(true, SeqCst);
                    self.drop_body();
                    self.ended(prev);
                    if giving_up {
                        self.release();
                    }
                    return true;
                }
            }
        }
        let (outcome, prev) = cancel(&self.word, current, self.leave, giving_up);
        match outcome {
            Cancel::WasPending { logged, left } => {
                self.cancelled.store(true, SeqCst);
                // The winner of the CAS drops the closure, at once, unless
                // it leaves it to the driver.
                if !left {
                    self.drop_body();
                }
                if logged {
                    self.left_mark.store(left, SeqCst);
                    self.marked.store(true, SeqCst);
                }
                self.ended(prev);
            }
            Cancel::WasRunning => self.cancelled.store(true, SeqCst),
            Cancel::TooLate => {}
        }
        if giving_up && !matches!(outcome, Cancel::WasPending { left: true, .. }) {
            self.release();
        }
        outcome.stopped()
    }

    /// A cancel that gives up its handle (`TaskHandle::cancel_and_drop`):
    /// a fresh task whose submission is still in the lane is cancelled and
    /// let go of with one plain store under the lane's lock, its closure
    /// moved out first (here: dropped) and the slot freed; any other is
    /// cancelled, then the handle released.
    fn cancel_and_release(&self) -> bool {
        if !is_drained(self.word.load(Acquire)) {
            let mut lane = self.lane.lock().unwrap();
            let current = self.word.load(Acquire);
            if lane.submitted && is_fresh(current) {
                lane.submitted = false;
                self.drop_body();
                cancel_fresh(&self.word, current);
                self.freed.fetch_add(1, SeqCst);
                drop(lane);
                self.cancelled.store(true, SeqCst);
                return true;
            }
        }
        self.cancel_as(true)
    }

    /// A handle's reset: one more reset on its way, under the lane's lock.
    fn reset(&self) -> bool {
        let mut lane = self.lane.lock().unwrap();
        match reset(&self.word) {
            Reset::Logged => {
                lane.resets += 1;
                self.moved.store(true, SeqCst);
                true
            }
            Reset::Full | Reset::NotPending => false,
        }
    }

    /// A thread blocking in `wait`: sets the bit, and if the task has not
    /// ended, trusts that whoever ends it sees the bit.
    fn wait(&self) -> bool {
        is_terminal(add_waiter(&self.word))
    }
}

fn spawn<T: 'static>(
    w: &Arc<World>,
    f: impl FnOnce(&World) -> T + 'static,
) -> thread::JoinHandle<T> {
    let w = w.clone();
    thread::spawn(move || f(&w))
}

/// The end of every execution: what was seen adds up.
fn check_end(w: &World) {
    assert_eq!(w.freed.load(SeqCst), 1, "freed exactly once, at the end");
    assert_eq!(
        refs(w.word.load(SeqCst)),
        0,
        "every holder let go once, none twice"
    );
    let body = w.dropped.load(SeqCst);
    assert!(body <= 1, "the closure dropped {body} times");
}

/// The end of a one-shot's execution: it ran at most once, exactly one of
/// "it ran" and "a cancel stopped it" happened, and a cancelled one's
/// closure was dropped (once).
fn check_one_shot_end(w: &World) {
    let ran = w.runs.load(SeqCst);
    let cancelled = w.cancelled.load(SeqCst);
    assert!(ran <= 1, "a one-shot ran twice");
    assert_eq!(ran == 1, !cancelled, "exactly one of ran or cancelled");
    assert_eq!(w.dropped.load(SeqCst), usize::from(cancelled));
    check_end(w);
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
        // original is dropped: lock-free operations against the driver.
        acquire(&w.word);
        let canceller = spawn(&w, |w| {
            w.cancel();
            w.release();
        });
        w.release();
        let held = driver.join().unwrap();
        canceller.join().unwrap();
        w.settle(held);
        check_one_shot_end(&w);
    });
}

/// A cancel that gives up the only handle, racing the driver's intake and
/// claim: one of them wins, the closure is dropped once and the slot freed
/// once, by the canceller's plain store while the submission was still in
/// its lane, else by the last of the handle and the driver.
#[test]
fn a_handle_given_up_with_its_cancel_against_the_driver() {
    loom::model(|| {
        let w = world(false);
        let driver = thread::spawn({
            let w = w.clone();
            move || w.drive(1, false)
        });
        w.cancel_and_release();
        let held = driver.join().unwrap();
        w.settle(held);
        check_one_shot_end(&w);
    });
}

/// The same while the driver holds many timers: a cancel of a task it
/// took in leaves the closure to it, and the handle's reference becomes
/// the mark's in the cancel's CAS; the driver's sweep drops the closure
/// once, and the slot is freed once, by the last of the mark and the
/// queue entry.
#[test]
fn a_handle_given_up_leaving_its_closure_to_the_driver() {
    loom::model(|| {
        let w = world_with(false, true);
        let driver = spawn(&w, World::drive_once_and_sweep);
        w.cancel_and_release();
        let held = driver.join().unwrap();
        w.settle(held);
        check_one_shot_end(&w);
    });
}

/// The same with a clone of the handle dropped meanwhile on another
/// thread: the plain store happens only once the clone's release is done
/// (the word says two holders), never over it.
#[test]
fn a_handle_given_up_with_its_cancel_while_a_clone_is_dropped() {
    loom::model(|| {
        let w = world(false);
        acquire(&w.word);
        let clone = spawn(&w, World::release);
        w.cancel_and_release();
        clone.join().unwrap();
        let held = w.drive(1, false);
        w.settle(held);
        check_one_shot_end(&w);
    });
}

/// A cancel that leaves the closure to the driver, racing its claim, the
/// driver's sweep of the marks, and the handle's drop: the closure is
/// dropped once (by the driver, never by the canceller), and the slot is
/// freed once, by the last of the handle, the mark and the queue entry.
#[test]
fn a_closure_left_to_the_driver_is_dropped_once_by_it() {
    loom::model(|| {
        let w = world_with(false, true);
        let driver = spawn(&w, World::drive_once_and_sweep);
        let canceller = spawn(&w, |w| {
            w.cancel();
            w.release();
        });
        let held = driver.join().unwrap();
        canceller.join().unwrap();
        w.settle(held);
        check_one_shot_end(&w);
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
            // shutdown_now: under the driver's lock, takes the lanes in,
            // abandons what waits (with a reference to bury its closure
            // after the lock), and lets the queue's entries go.
            let guard = w.lock.lock().unwrap();
            let queued = w.intake();
            let abandoned = end_scheduled(&w.word, ABANDONED, 1);
            if let Some(prev) = abandoned {
                w.abandoned.store(true, SeqCst);
                w.ended(prev);
            }
            if queued {
                w.release();
            }
            drop(guard);
            if abandoned.is_some() {
                w.drop_body();
                w.release();
            }
        });
        let stopped = w.cancel();
        let held = driver.join().unwrap();
        abandoner.join().unwrap();
        w.settle(held);
        w.release();
        let ran = w.runs.load(SeqCst) == 1;
        let abandoned = w.abandoned.load(SeqCst);
        assert_eq!(
            usize::from(ran) + usize::from(abandoned) + usize::from(stopped),
            1,
            "exactly one of ran, abandoned, cancelled"
        );
        check_end(&w);
    });
}

#[test]
fn a_reset_that_returned_true_never_sees_the_old_deadline_fire() {
    loom::model(|| {
        let w = world(false);
        let driver = thread::spawn({
            let w = w.clone();
            move || w.drive(1, false)
        });
        let resetter = spawn(&w, |w| {
            w.reset();
        });
        let stopped = w.cancel();
        let held = driver.join().unwrap();
        resetter.join().unwrap();
        w.settle(held);
        w.release();
        let ran = w.runs.load(SeqCst);
        assert!(ran <= 1);
        assert!(!(stopped && ran == 1), "ran after a cancel returned true");
        check_end(&w);
    });
}

/// A reset, and the drop of every handle, racing the driver's claim: a
/// claim that meets the reset lets the task go, and the reset on its way
/// may then be its last holder. The driver queues it again all the same
/// (the slot is not freed under the queue), and it runs at its new
/// deadline or is ended there.
#[test]
fn a_reset_task_whose_handles_are_gone_is_queued_again() {
    loom::model(|| {
        let w = world(false);
        let driver = thread::spawn({
            let w = w.clone();
            move || w.drive(1, false)
        });
        acquire(&w.word); // the resetter's clone of the handle
        let resetter = spawn(&w, |w| {
            w.reset();
            w.release();
        });
        w.release();
        let held = driver.join().unwrap();
        resetter.join().unwrap();
        let ran = w.runs.load(SeqCst);
        assert!(ran == 1 || w.moved.load(SeqCst), "ran, or moved");
        w.settle(held);
        // A task still queued after the resets is ended by `settle`, its
        // closure dropped there.
        assert_eq!(w.dropped.load(SeqCst), 1 - ran, "run or dropped, once");
        check_end(&w);
    });
}

/// The driver queues a task again after its claim met a reset (and let it
/// go), while the task's last handle is dropped. A handle that finds itself
/// the only holder lets go with a plain store (see the module docs), so the
/// driver must never add a reference to a word only a handle holds: the
/// reset's reference becomes the queue's in the CAS that reads the reset.
/// The slot is not freed while the queue holds the task.
#[test]
fn a_handle_dropped_while_the_driver_queues_its_task_again() {
    loom::model(|| {
        let w = world(false);
        assert!(w.reset(), "pending: the reset is logged");
        let driver = thread::spawn({
            let w = w.clone();
            move || {
                let held = w.drive(1, false);
                assert!(!held, "the claim met the reset and let go");
                let _guard = w.lock.lock().unwrap();
                w.read_resets(held)
            }
        });
        w.release(); // the handle is dropped
        let held = driver.join().unwrap();
        assert!(held, "queued again at the reset's deadline");
        assert_eq!(w.freed.load(SeqCst), 0, "freed while queued");
        w.settle(held);
        check_end(&w);
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
        let stopped = w.cancel();
        let held = driver.join().unwrap();
        w.settle(held);
        w.release();
        assert!(stopped, "a periodic task is always cancellable");
        assert!(w.runs.load(SeqCst) <= 3);
        assert!(is_terminal(w.word.load(SeqCst)), "the task ended");
        assert_eq!(w.dropped.load(SeqCst), 1, "its closure dropped once");
        check_end(&w);
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
        w.settle(held);
        assert!(is_terminal(w.word.load(SeqCst)), "the task ended");
        if blocked.load(SeqCst) {
            assert!(w.woken.load(SeqCst), "a waiter blocked but nobody woke it");
        }
        w.release();
        check_end(&w);
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

/// The driver's lock in [`shutdown_stops_a_periodic_task_in_flight`]:
/// whether shutdown has run, and whether the runner queued the task again.
#[derive(Default)]
struct Stopping {
    shut: bool,
    queued: bool,
}

/// `shutdown` (whose policy drops periodic tasks) stops a periodic task
/// that is due and waiting for a thread: out of the queue, its reference
/// with a runner about to claim it. The runner claims it meanwhile, and the
/// handle is dropped. The closure goes exactly once whatever the order,
/// and the slot is freed once: the shutdown takes the reference it buries
/// the closure with in the same step as it ends the task, so the runner
/// and the handle cannot free the slot (for a new task) in between.
#[test]
fn shutdown_stops_a_periodic_task_in_flight() {
    loom::model(|| {
        let w = world(true);
        let driver = Arc::new(Mutex::new(Stopping::default()));
        // Queued, then due: the queue's reference goes with it to a runner.
        assert!(w.intake());
        let runner = {
            let driver = driver.clone();
            spawn(&w, move |w| {
                if w.claim() != Claim::Claimed {
                    w.release(); // stopped while it waited: let it go
                    return;
                }
                w.inside.fetch_sub(1, SeqCst);
                let mut driver = driver.lock().unwrap();
                if driver.shut {
                    // A run that ends after the shutdown is its last.
                    w.drop_body();
                    let (prev, last) = finish(&w.word, CANCELLED);
                    w.ended(prev);
                    if last {
                        w.freed.fetch_add(1, SeqCst);
                    }
                } else {
                    let (again, _) = rearm(&w.word);
                    assert!(again, "only the shutdown stops it");
                    driver.queued = true;
                }
            })
        };
        let shutdown = {
            let driver = driver.clone();
            spawn(&w, move |w| {
                let mut driver = driver.lock().unwrap();
                driver.shut = true;
                // A queued task's reference goes with its closure; one in
                // flight needs one of its own.
                let holders = u32::from(!driver.queued);
                let ended = end_scheduled(&w.word, CANCELLED, holders);
                if ended.is_some() {
                    w.cancelled.store(true, SeqCst);
                }
                drop(driver);
                if let Some(prev) = ended {
                    w.ended(prev);
                    w.drop_body();
                    w.release();
                }
            })
        };
        w.release(); // the handle is dropped
        runner.join().unwrap();
        shutdown.join().unwrap();
        assert_eq!(w.dropped.load(SeqCst), 1, "the closure goes once");
        check_end(&w);
    });
}
