//! Exactly-once drops: every closure a task captured, and every value a
//! one-shot returned, is dropped once and only once, whichever way the task
//! ends (fired, cancelled before or after the driver took it in, reset,
//! stopped from inside, panicked, dropped by `shutdown`, abandoned by
//! `shutdown_now`, its value taken or not), closures kept in the slot and
//! boxed alike, a panicking destructor included. A double drop shows up as
//! a count of two; a leak as zero.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use schedulers::{Scheduler, SchedulerExt, Task, TaskHandle, HOUSEKEEPING};

use super::{ms, secs, Harness, SelfHandle};

/// Counts, per value handed out, how many times it was dropped.
#[derive(Clone, Default)]
struct Ledger(Arc<Mutex<Vec<u32>>>);

/// A value that reports its drop to the ledger: 16 bytes (an `Arc` and an
/// index), so a closure capturing it alone is kept in the slot.
struct Tracked {
    ledger: Ledger,
    id: usize,
}

impl Ledger {
    fn track(&self) -> Tracked {
        let mut drops = self.0.lock().unwrap();
        drops.push(0);
        Tracked {
            ledger: self.clone(),
            id: drops.len() - 1,
        }
    }

    #[track_caller]
    fn assert_each_dropped_once(&self) {
        let drops = self.0.lock().unwrap();
        let wrong: Vec<_> = drops.iter().enumerate().filter(|(_, &n)| n != 1).collect();
        assert!(
            wrong.is_empty(),
            "values dropped other than once (id, drops): {wrong:?} of {}",
            drops.len()
        );
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.ledger.0.lock().unwrap()[self.id] += 1;
    }
}

/// A capture too big for the slot: the closure is boxed.
struct Big {
    _pad: [u64; 8],
    _tracked: Tracked,
}

/// Panics when dropped (unless unwinding already), after its tracked part.
struct PanicsOnDrop(#[allow(dead_code)] Tracked);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("a destructor that panics");
        }
    }
}

pub fn every_closure_and_value_is_dropped_exactly_once(h: &Harness) {
    let ledger = Ledger::default();
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let mut keep: Vec<TaskHandle> = Vec::new();
    let once = |delay: Duration, t: Tracked| s.submit(delay, Task::once(move || drop(t))).unwrap();

    // Fired: in the slot, and boxed.
    keep.push(once(ms(1), ledger.track()));
    let big = Big {
        _pad: [7; 8],
        _tracked: ledger.track(),
    };
    keep.push(s.submit(ms(1), Task::once(move || drop(big))).unwrap());
    // Cancelled at once (its entry taken back), and after the driver took
    // it in (marked).
    assert!(once(secs(5), ledger.track()).cancel());
    let late = once(secs(5), ledger.track());
    // Reset, then fired; reset, then cancelled.
    let moved = once(secs(5), ledger.track());
    assert!(moved.reset(ms(2)).unwrap());
    let moved_then_cancelled = once(secs(5), ledger.track());
    assert!(moved_then_cancelled.reset(secs(6)).unwrap());
    // Values: taken, never taken (future dropped first), left in the slot
    // until the handle goes.
    let taken = s.schedule(ms(1), {
        let v = ledger.track();
        move || v
    });
    drop(s.schedule(ms(1), {
        let v = ledger.track();
        move || v
    }));
    let left = s.schedule(ms(1), {
        let v = ledger.track();
        move || v
    });
    // A one-shot that panics with its capture.
    let boom = {
        let t = ledger.track();
        s.schedule(ms(1), move || -> () {
            let _t = t;
            panic!("boom")
        })
        .unwrap()
    };
    // Periodic: cancelled while pending, stopped from inside, panicking,
    // cancelled from inside its run.
    let periodic = |t: Tracked| {
        s.schedule_at_fixed_rate(ms(1), ms(1), move || {
            let _ = &t;
        })
        .unwrap()
    };
    assert!(periodic(ledger.track()).cancel());
    let stops = {
        let t = ledger.track();
        let mut left = 2;
        let task = Task::fixed_rate_with(ms(1), move |run| {
            let _ = &t;
            left -= 1;
            if left == 0 {
                run.stop();
            }
        })
        .unwrap();
        s.submit(ms(1), task).unwrap()
    };
    let panics = {
        let t = ledger.track();
        s.schedule_with_fixed_delay(ms(1), ms(1), move || {
            let _ = &t;
            panic!("periodic boom");
        })
        .unwrap()
    };
    let me: SelfHandle = Arc::new(OnceLock::new());
    let own = {
        let (m, t) = (me.clone(), ledger.track());
        s.schedule_at_fixed_rate(ms(1), ms(1), move || {
            let _ = &t;
            m.get().map(TaskHandle::cancel);
        })
        .unwrap()
    };
    me.set(own.clone()).unwrap();
    // A closure whose destructor panics, cancelled.
    let poisoned = {
        let p = PanicsOnDrop(ledger.track());
        s.submit(secs(5), Task::once(move || drop(p))).unwrap()
    };
    assert!(poisoned.cancel());

    h.advance_past(h.now() + ms(1));
    assert!(late.cancel(), "taken in by now, still pending");
    assert!(moved_then_cancelled.cancel());
    h.advance(ms(10));
    drop(taken.unwrap().get().unwrap());
    assert!(boom.handle().wait().unwrap_err().is_panic());
    assert!(panics.wait().unwrap_err().is_panic());
    assert!(stops.wait().is_ok());

    // Dropped by `shutdown` (periodic) and by `shutdown_now` (abandoned).
    let by_shutdown = periodic(ledger.track());
    let abandoned = once(secs(60), ledger.track());
    s.shutdown();
    let never_ran = s.shutdown_now();
    assert!(by_shutdown.is_cancelled());
    assert!(never_ran.contains(&abandoned));
    assert!(s.await_termination(secs(30)));
    drop(me);
    drop((keep, late, moved, moved_then_cancelled, left, boom, stops));
    drop((panics, own, poisoned, by_shutdown, abandoned, never_ran));
    drop(s);
    ledger.assert_each_dropped_once();
}

/// While the driver holds many timers (from 65,536 on), a cancel leaves
/// the closure to the driver, which drops it when it next takes the marks:
/// within [`HOUSEKEEPING`], also when it would otherwise sleep for
/// minutes. Each closure is still dropped exactly once (in the slot or
/// boxed, one whose destructor panics included), none while a handle may
/// still run it, and a cancelled task never runs.
pub fn closures_left_to_the_driver_are_dropped_once_within_housekeeping(h: &Harness) {
    let ledger = Ledger::default();
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let ballast: Vec<TaskHandle> = (0..270_000)
        .map(|_| s.submit(secs(600), Task::once(|| {})).unwrap())
        .collect();
    let mut cancelled = Vec::new();
    for _ in 0..100 {
        let t = ledger.track();
        cancelled.push(s.submit(secs(5), Task::once(move || drop(t))).unwrap());
    }
    let big = Big {
        _pad: [7; 8],
        _tracked: ledger.track(),
    };
    cancelled.push(s.submit(secs(5), Task::once(move || drop(big))).unwrap());
    let p = PanicsOnDrop(ledger.track());
    cancelled.push(s.submit(secs(5), Task::once(move || drop(p))).unwrap());
    // The driver takes them in (it holds them all now), and sleeps.
    h.advance_past(h.now() + ms(1));
    assert!(cancelled.iter().all(TaskHandle::cancel));
    assert!(!cancelled.iter().any(TaskHandle::cancel), "cancelled once");
    h.advance(HOUSEKEEPING);
    ledger.assert_each_dropped_once();
    assert!(cancelled.iter().all(TaskHandle::is_cancelled));
    h.advance(secs(5));
    assert_eq!(s.metrics().fired, 0, "no cancelled task ran");
    ledger.assert_each_dropped_once();
    s.shutdown_now();
    assert!(s.await_termination(secs(30)));
    drop((ballast, cancelled, s));
    ledger.assert_each_dropped_once();
}

/// `TaskHandle::cancel_and_drop`, whichever way it goes: a task only its
/// handle holds, still on its way to the driver (one store under the
/// caller's lane, the closure dropped after it), one with a clone alive,
/// one the driver took in, one that fired, a boxed closure, a destructor
/// that panics and one that calls the scheduler back: each stops what a
/// `cancel` would stop, drops each closure once and at once (or, for the
/// fired one, not again), and frees what it held; then many threads doing
/// it at once against the driver's intake lose nothing and run nothing.
pub fn cancel_and_drop_drops_each_closure_once(h: &Harness) {
    let ledger = Ledger::default();
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let once = |delay: Duration, t: Tracked| s.submit(delay, Task::once(move || drop(t))).unwrap();
    let dropped = |id: usize| ledger.0.lock().unwrap()[id];

    // Fresh: taken back and freed in one step, the closure dropped by it.
    assert!(once(secs(5), ledger.track()).cancel_and_drop());
    assert_eq!(dropped(0), 1, "dropped by the call");
    let big = Big {
        _pad: [7; 8],
        _tracked: ledger.track(),
    };
    assert!(s
        .submit(secs(5), Task::once(move || drop(big)))
        .unwrap()
        .cancel_and_drop());
    assert_eq!(dropped(1), 1, "a boxed closure too");
    let poisoned = PanicsOnDrop(ledger.track());
    let poisoned = s
        .submit(secs(5), Task::once(move || drop(poisoned)))
        .unwrap();
    assert!(
        poisoned.cancel_and_drop(),
        "a panicking destructor is contained"
    );
    // A destructor that schedules on the same scheduler: dropped after the
    // lane is let go, or this would never return.
    let again: Arc<Mutex<Vec<TaskHandle>>> = Arc::default();
    struct Resubmits(
        Arc<dyn Scheduler>,
        Arc<Mutex<Vec<TaskHandle>>>,
        Option<Tracked>,
    );
    impl Drop for Resubmits {
        fn drop(&mut self) {
            let t = self.2.take();
            let h = self.0.submit(secs(1), Task::once(move || drop(t))).unwrap();
            self.1.lock().unwrap().push(h);
        }
    }
    let resubmits = Resubmits(s.clone(), again.clone(), Some(ledger.track()));
    let calls_back = s
        .submit(secs(5), Task::once(move || drop(resubmits)))
        .unwrap();
    assert!(calls_back.cancel_and_drop());
    assert_eq!(again.lock().unwrap().len(), 1, "its destructor ran once");

    // A clone alive: the cancel stops it, the clone sees it, the closure
    // goes at once and the slot when the clone does.
    let shared = once(secs(5), ledger.track());
    let clone = shared.clone();
    assert!(shared.cancel_and_drop());
    assert!(clone.is_cancelled());
    assert!(!clone.cancel(), "stopped already");
    drop(clone);
    // Taken in by the driver, then given up; fired, then given up.
    let late = once(secs(5), ledger.track());
    let fires = once(ms(1), ledger.track());
    h.advance_past(h.now() + ms(1));
    assert!(late.cancel_and_drop(), "taken in by now, still pending");
    assert!(!fires.cancel_and_drop(), "it ran");

    // Many threads at once, each clearing its timeouts a window later,
    // while its lane fills past the point where the driver takes it in.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (s, ledger) = (s.clone(), ledger.clone());
            std::thread::spawn(move || {
                let mut window = std::collections::VecDeque::new();
                for i in 0..20_000_u32 {
                    let t = ledger.track();
                    let delay = secs(10) + ms(u64::from(i % 1000));
                    window.push_back(s.submit(delay, Task::once(move || drop(t))).unwrap());
                    if window.len() > 100 {
                        assert!(window.pop_front().unwrap().cancel_and_drop());
                    }
                }
                window.into_iter().all(TaskHandle::cancel_and_drop)
            })
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap(), "every cancel stopped its timer");
    }
    h.advance(secs(1));
    assert_eq!(again.lock().unwrap().len(), 1);
    h.advance(secs(30));
    assert_eq!(s.metrics().pending, 0, "nothing left waiting");
    assert_eq!(
        s.metrics().fired,
        2,
        "the fired one and the resubmitted one"
    );
    assert_eq!(s.metrics().cancelled, 6 + 4 * 20_000);
    drop(s);
    drop(again);
    ledger.assert_each_dropped_once();
}
