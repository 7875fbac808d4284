//! A loom model of the hand-off in [`super`]: callers pushing new timers
//! and resets into lanes, and cancels leaving closures, against a driver
//! that looks at the lanes and goes to sleep, checked for lost wake-ups:
//!
//! - a driver never sleeps past a deadline waiting in a lane: woken by its
//!   own timeout at `W`, it finds no entry due before `W`;
//! - a driver that sleeps with no timeout is woken for every entry and
//!   every closure left to it (else it waits for ever: a deadlock to loom,
//!   which fails the model);
//! - a closure left to it is taken within a housekeeping period: woken by
//!   its timeout, it finds none left longer ago than that;
//! - a driver that does not sleep because a lane holds work never goes
//!   round its loop waiting for the caller to let go of the lane (loom
//!   fails a model whose thread spins): it waits for the lane's lock;
//! - a driver with nothing left to wait for is never asleep after a
//!   shutdown, also one that came while it buried what ended with its lock
//!   let go, on its way to sleep (the shutdown signals without the
//!   `nudged` flag, as `Shared::shutdown_now` does): after a burial it
//!   looks again.
//!
//! The lanes and the flags are the scheduler's own ([`Lanes`], [`Wake`]);
//! the driver's lock, its condition variable, the nudge and the driver's
//! loop mirror `Shared::nudge`, `Shared::wait` and `Shared::intake`, and
//! the slab's marks are a count. Time stands at 0 while the callers act;
//! the model's main thread then moves it past every timeout (loom's
//! condition variable has none), waking a driver that sleeps with one.
//!
//! Run with `RUSTFLAGS="--cfg schedulers_loom" cargo test -p schedulers
//! --lib --release wake::model` (`scripts/test` does).

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

use super::Wake;
use crate::clock::NEVER;
use crate::core::Key;
use crate::lanes::{Held, Lanes, Moved, Submitted};

/// The housekeeping period, in the model's ticks.
const HOUSEKEEPING: u64 = 10;

/// The driver's state under its lock.
#[derive(Default)]
struct Driver {
    nudged: bool,
    waiting: usize,
    /// When each waiting driver's timeout comes (`NEVER`: none), as
    /// `DriverState::sleeping`.
    sleeping: Vec<u64>,
    /// The model's clock passed every timeout.
    late: bool,
    /// The model is over: a driver woken for nothing else stops, without a
    /// last look (which would hide a wake-up it missed).
    over: bool,
    /// What the driver took in so far.
    taken: Taken,
    /// `Shared::shutdown_now` came.
    shut: bool,
}

struct World {
    lanes: Lanes,
    wake: Wake,
    driver: Mutex<Driver>,
    wakeup: Condvar,
    /// Cancels marked for the driver (the slab's marks), not yet taken.
    marks: AtomicUsize,
}

/// What the driver took in: entries (key and deadline) and marks.
#[derive(Debug, Default)]
struct Taken {
    entries: Vec<(Key, u64)>,
    marks: usize,
}

impl Taken {
    fn deadlines(&self) -> Vec<u64> {
        let mut deadlines: Vec<u64> = self.entries.iter().map(|e| e.1).collect();
        deadlines.sort_unstable();
        deadlines
    }
}

impl World {
    fn new() -> Arc<World> {
        Arc::new(World {
            lanes: Lanes::new(),
            wake: Wake::new(),
            driver: Mutex::new(Driver::default()),
            wakeup: Condvar::new(),
            marks: AtomicUsize::new(0),
        })
    }

    /// `Shared::nudge`.
    fn nudge(&self) {
        let mut driver = self.driver.lock().unwrap();
        driver.nudged = true;
        if driver.waiting > 0 {
            self.wakeup.notify_one();
        }
    }

    /// `Shared::after_push`: lets go of the lane, then wakes the driver if
    /// the work is due before its planned wake-up.
    fn after_push(&self, held: Held<'_>, deadline: u64) {
        drop(held);
        if self.wake.due_before(deadline) {
            self.nudge();
        }
    }

    /// A new timer (`Shared::submit`): into the caller's lane.
    fn submit(&self, key: Key, deadline: u64) {
        let mut held = self.lanes.mine();
        held.submit(Submitted { key, deadline });
        self.after_push(held, deadline);
    }

    /// A reset (`Shared::reset`): into the lane of its key.
    fn reset(&self, key: Key, deadline: u64) {
        let mut held = self.lanes.of_key(key);
        held.reset(Moved { key, deadline });
        self.after_push(held, deadline);
    }

    /// A reset while the most resets of `key` are on their way already
    /// (`Shared::reset`): the newest in its lane takes the new deadline, or
    /// if the driver took it in, the one it holds, and it is woken
    /// (`Shared::reset_taken_in`).
    fn retarget(&self, key: Key, deadline: u64) {
        let mut held = self.lanes.of_key(key);
        if held.retarget(key, deadline) {
            return self.after_push(held, deadline);
        }
        drop(held);
        let mut driver = self.driver.lock().unwrap();
        let newest = driver.taken.entries.iter_mut().rev().find(|e| e.0 == key);
        newest.expect("a reset of the key on its way").1 = deadline;
        drop(driver);
        self.nudge();
    }

    /// A cancel that leaves its closure to the driver (`Shared::cancel`
    /// and `keep_house`), at time 0: the mark, then the flag.
    fn leave(&self) {
        self.marks.fetch_add(1, SeqCst);
        if self.wake.leave_closure() && self.wake.due_before(HOUSEKEEPING) {
            self.nudge();
        }
    }

    /// The model's clock passes every timeout: a driver asleep with one
    /// wakes (one without sleeps on).
    fn pass_time(&self) {
        let mut driver = self.driver.lock().unwrap();
        driver.late = true;
        if driver.sleeping.iter().any(|&w| w != NEVER) {
            self.wakeup.notify_one();
        }
    }

    /// `Shared::shutdown_now`: the flag under the lock, then a signal to
    /// every sleeper after letting go of it.
    fn shutdown(&self) {
        self.driver.lock().unwrap().shut = true;
        self.wakeup.notify_all();
    }

    /// A driver with nothing to wait for but one ended task to bury: at
    /// the top of its loop it exits once shut down (`Shared::may_exit`),
    /// else goes to sleep with no deadline (`Shared::wait`), burying first
    /// with its lock let go, and looking again after it. Returns when it
    /// exits.
    fn drive_until_shutdown(&self) {
        let mut driver = self.driver.lock().unwrap();
        let mut dead = 1;
        loop {
            if driver.shut {
                return;
            }
            if dead > 0 {
                dead -= 1;
                drop(driver);
                driver = self.driver.lock().unwrap();
                continue;
            }
            if std::mem::take(&mut driver.nudged) {
                continue;
            }
            driver.waiting += 1;
            driver = self.wakeup.wait(driver).unwrap();
            driver.waiting -= 1;
        }
    }

    /// Ends a driver sleeping with no deadline and nothing to wake for.
    fn stop(&self) {
        let mut driver = self.driver.lock().unwrap();
        driver.over = true;
        self.wakeup.notify_all();
    }

    /// A driver's look (`Shared::intake`): takes in what the lanes and
    /// marks hold. Returns what it took this time.
    fn look(&self, driver: &mut Driver) -> Taken {
        let mut look = Taken::default();
        if self.lanes.any_dirty() {
            for mut lane in self.lanes.all() {
                let submitted = lane.submitted.drain(..).map(|s| (s.key, s.deadline));
                look.entries.extend(submitted);
                let moved = lane.moved.drain(..).map(|m| (m.key, m.deadline));
                look.entries.extend(moved);
            }
        }
        if self.marks.load(SeqCst) > 0 {
            self.wake.closures_taken();
            look.marks = self.marks.swap(0, SeqCst);
        }
        driver.taken.entries.extend(&look.entries);
        driver.taken.marks += look.marks;
        look
    }

    /// A pool worker that wakes, looks, and goes to run a task for ever
    /// (the pool's loop around `Shared::stop_looking`): it publishes the
    /// waiting drivers' wake-up and wakes one if a lane holds work due
    /// before it.
    fn go_run(&self) {
        let mut driver = self.driver.lock().unwrap();
        self.wake.awake();
        self.look(&mut driver);
        let others = driver.sleeping.iter().copied().min();
        let wake = others.is_some_and(|others| self.wake.stop_looking(others, &self.lanes));
        drop(driver);
        if wake {
            // The pool signals without the `nudged` flag; the model sets
            // it so that a driver woken for work is told from one stopped.
            self.nudge();
        }
    }

    /// The driver: takes in what the lanes and marks hold (`Shared::intake`),
    /// then sleeps until `wake` (`NEVER`: for a signal), or, after taking
    /// closures, for at most a housekeeping period (`Shared::wait`); until
    /// it has taken `entries` entries and `marks` marks, or its timeout
    /// came.
    fn drive(&self, wake: u64, entries: usize, marks: usize) {
        let mut driver = self.driver.lock().unwrap();
        let mut wake_at = wake;
        let mut timed_out = false;
        loop {
            let look = self.look(&mut driver);
            if timed_out {
                check_timeout(&look, wake_at);
            }
            if look.marks > 0 {
                wake_at = wake_at.min(HOUSEKEEPING);
            }
            let taken = &driver.taken;
            if timed_out || taken.entries.len() == entries && taken.marks == marks {
                return;
            }
            if std::mem::take(&mut driver.nudged) {
                continue;
            }
            let others = driver.sleeping.iter().copied().min();
            if !self
                .wake
                .sleep_until(wake_at, others, &self.lanes, wake_at > HOUSEKEEPING)
            {
                continue;
            }
            if wake_at != NEVER && driver.late {
                timed_out = true;
            } else {
                driver.waiting += 1;
                driver.sleeping.push(wake_at);
                driver = self.wakeup.wait(driver).unwrap();
                driver.waiting -= 1;
                let i = driver.sleeping.iter().position(|&w| w == wake_at);
                driver.sleeping.swap_remove(i.expect("its own wake-up"));
                let nudged = std::mem::take(&mut driver.nudged);
                if driver.over && !nudged {
                    return;
                }
                timed_out = !nudged && driver.late && wake_at != NEVER;
            }
            self.wake.awake();
        }
    }
}

/// Woken by its timeout at `wake_at`: nothing it took in then was due
/// before, and no closure was left longer than a housekeeping period ago
/// (the callers acted at time 0).
fn check_timeout(look: &Taken, wake_at: u64) {
    for &(_, d) in &look.entries {
        assert!(
            d >= wake_at,
            "slept until {wake_at} through an entry due at {d}"
        );
    }
    assert!(
        look.marks == 0 || wake_at <= HOUSEKEEPING,
        "slept until {wake_at} with a closure left at 0"
    );
}

fn spawn<T: Send + 'static>(
    w: &Arc<World>,
    f: impl FnOnce(&World) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let w = w.clone();
    thread::spawn(move || f(&w))
}

/// A key whose resets go to another lane than the calling thread's new
/// timers (loom's threads share the thread's lane: they run on it).
fn key_of_another_lane() -> Key {
    ((crate::lanes::mine() + 1) % crate::lanes::LANES) as Key
}

/// A driver planning to wake at 6, against a timer due at 5 and one due at
/// 7 pushed into one lane (the second leaves the lane's earliest deadline
/// as it is), and a reset to 3 of the second into another lane.
#[test]
fn no_entry_due_before_the_planned_wake_up_is_slept_through() {
    loom::model(|| {
        let w = World::new();
        let driver = spawn(&w, |w| w.drive(6, 3, 0));
        let a = spawn(&w, |w| w.submit(1, 5));
        let key = key_of_another_lane();
        w.submit(key, 7);
        w.reset(key, 3);
        a.join().unwrap();
        w.pass_time();
        driver.join().unwrap();
        let taken = &w.driver.lock().unwrap().taken;
        assert_eq!(taken.deadlines(), [3, 5, 7], "all taken in, by the timeout");
    });
}

/// A driver planning to wake at 6, against a reset to 70 and then, the
/// most resets being on their way, a move of that reset to 3.
#[test]
fn a_reset_moved_in_its_lane_is_not_slept_through() {
    loom::model(|| {
        let w = World::new();
        let driver = spawn(&w, |w| w.drive(6, 1, 0));
        w.reset(1, 70);
        w.retarget(1, 3);
        w.pass_time();
        driver.join().unwrap();
        let taken = &w.driver.lock().unwrap().taken;
        assert_eq!(taken.deadlines(), [3], "taken in, by the timeout");
    });
}

/// A driver with nothing of its own to wake for, against a timer and a
/// reset pushed at once: it is woken for them.
#[test]
fn a_driver_without_a_deadline_is_woken_for_every_push() {
    loom::model(|| {
        let w = World::new();
        let driver = spawn(&w, |w| w.drive(NEVER, 2, 0));
        let a = spawn(&w, |w| w.submit(1, 50));
        w.reset(key_of_another_lane(), 70);
        a.join().unwrap();
        w.pass_time();
        driver.join().unwrap();
        let taken = &w.driver.lock().unwrap().taken;
        assert_eq!(taken.deadlines(), [50, 70]);
    });
}

/// A worker wakes, looks and goes to run a task for ever, while another
/// sleeps with no deadline and a timer is pushed: the sleeping one is
/// woken for it (unless the first took it in).
#[test]
fn a_worker_gone_to_run_a_task_leaves_a_sleeping_one_to_be_woken() {
    loom::model(|| {
        let w = World::new();
        let driver = spawn(&w, |w| w.drive(NEVER, 1, 0));
        let worker = spawn(&w, |w| w.go_run());
        w.submit(1, 5);
        worker.join().unwrap();
        w.stop();
        driver.join().unwrap();
        let taken = &w.driver.lock().unwrap().taken;
        assert_eq!(taken.deadlines(), [5]);
    });
}

/// A shutdown against a driver on its way to sleep for ever: whether it
/// comes before the driver's look, while it buries with its lock let go,
/// or while it sleeps, the driver exits (a driver asleep for ever is a
/// deadlock to loom).
#[test]
fn a_shutdown_never_finds_the_driver_asleep_for_ever() {
    loom::model(|| {
        let w = World::new();
        let driver = spawn(&w, |w| w.drive_until_shutdown());
        w.shutdown();
        driver.join().unwrap();
    });
}

/// Two cancels leave their closures to a driver that would sleep for
/// ever, or until 60: it takes both within a housekeeping period, also
/// when the second finds the first's flag still up and does not wake it.
#[test]
fn closures_left_to_a_sleeping_driver_are_taken_within_housekeeping() {
    for wake in [NEVER, 60] {
        loom::model(move || {
            let w = World::new();
            let driver = spawn(&w, move |w| w.drive(wake, 0, 2));
            let a = spawn(&w, |w| w.leave());
            w.leave();
            a.join().unwrap();
            w.pass_time();
            driver.join().unwrap();
            let taken = &w.driver.lock().unwrap().taken;
            assert_eq!(taken.marks, 2, "both taken, by the timeout");
        });
    }
}
