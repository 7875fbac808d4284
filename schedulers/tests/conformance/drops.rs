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
