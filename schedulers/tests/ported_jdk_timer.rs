//! The JDK's `java.util.Timer` tests (`test/jdk/java/util/Timer/`), ported
//! to `HeapTimer` and run in virtual time. Each test names its original;
//! where Rust's types rule out what the original checks (a negative delay,
//! a null task, scheduling one `TimerTask` twice), the test says so instead.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use schedulers::{HeapTimer, ManualClock, Scheduler, SchedulerExt};

fn timer(clock: &ManualClock) -> HeapTimer {
    HeapTimer::builder().clock(clock.clone()).build().unwrap()
}

fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Arc<AtomicUsize>) {
    let c = Arc::new(AtomicUsize::new(0));
    let c2 = c.clone();
    (c, move || c2.clone())
}

/// Ports `Args.java`. Negative delays and null tasks cannot be expressed
/// (`Duration` is unsigned, closures are not nullable) and a `Task` is moved
/// into `submit`, so "scheduled twice" cannot compile; the rest is here.
#[test]
fn args() {
    let clock = ManualClock::new();
    let t = timer(&clock);
    // `schedule(task, Long.MAX_VALUE)` -> IllegalArgumentException.
    assert!(t
        .schedule(Duration::MAX, || ())
        .unwrap_err()
        .is_delay_overflow());
    // Period <= 0 -> IllegalArgumentException("Non-positive period.").
    assert!(t
        .schedule_at_fixed_rate(Duration::ZERO, Duration::ZERO, || ())
        .unwrap_err()
        .is_zero_period());
    assert!(t
        .schedule_with_fixed_delay(Duration::ZERO, Duration::ZERO, || ())
        .unwrap_err()
        .is_zero_period());

    // "A start Date 10.5 periods in the past": our API takes delays, so the
    // past is made by a first run that lasts 10.5 periods. Fixed-rate then
    // owes ten runs and makes them up at once (11 in all, as in Java); the
    // one-shot and fixed-delay tasks run once.
    let period = Duration::from_millis(100);
    let (rate_runs, rr) = counter();
    let (delay_runs, dr) = counter();
    let (once_runs, or) = counter();
    let c = clock.clone();
    let rate_counter = rr();
    t.schedule_at_fixed_rate(Duration::ZERO, period, move || {
        if rate_counter.fetch_add(1, SeqCst) == 0 {
            c.advance(period * 21 / 2);
        }
    })
    .unwrap();
    let delay_counter = dr();
    t.schedule_with_fixed_delay(Duration::ZERO, period, move || {
        delay_counter.fetch_add(1, SeqCst);
    })
    .unwrap();
    let once_counter = or();
    t.schedule(Duration::ZERO, move || {
        once_counter.fetch_add(1, SeqCst);
    })
    .unwrap();
    clock.advance(Duration::ZERO);
    assert_eq!(
        rate_runs.load(SeqCst),
        11,
        "fixed-rate catches up on ten missed runs"
    );
    assert_eq!(once_runs.load(SeqCst), 1);
    assert_eq!(delay_runs.load(SeqCst), 1, "fixed-delay does not catch up");

    // Any schedule on a cancelled timer -> IllegalStateException.
    t.shutdown();
    assert!(t.schedule(Duration::ZERO, || ()).unwrap_err().is_shutdown());
    assert!(t
        .schedule_at_fixed_rate(Duration::ZERO, period, || ())
        .unwrap_err()
        .is_shutdown());
    assert!(t
        .schedule_with_fixed_delay(Duration::ZERO, period, || ())
        .unwrap_err()
        .is_shutdown());
}

/// Ports `DelayOverflow.java`: a period of `Long.MAX_VALUE` (ms) in every
/// periodic API runs once, reports a sane time left, and can be cancelled.
#[test]
fn delay_overflow() {
    let clock = ManualClock::new();
    let t = timer(&clock);
    let java_max = Duration::from_millis(i64::MAX as u64);
    for period in [java_max, Duration::MAX] {
        for fixed_rate in [true, false] {
            let (runs, make) = counter();
            let r = make();
            let bump = move || {
                r.fetch_add(1, SeqCst);
            };
            let handle = if fixed_rate {
                t.schedule_at_fixed_rate(Duration::ZERO, period, bump)
                    .unwrap()
            } else {
                t.schedule_with_fixed_delay(Duration::ZERO, period, bump)
                    .unwrap()
            };
            clock.advance(Duration::from_secs(1));
            assert_eq!(
                runs.load(SeqCst),
                1,
                "period {period:?}, fixed rate {fixed_rate}"
            );
            let left = handle.remaining();
            assert!(
                left > Duration::from_secs(3600 * 24 * 365 * 100),
                "sane time left: {left:?}"
            );
            assert!(handle.cancel(), "cancel() returns true");
            clock.advance(Duration::from_secs(3600 * 24 * 365));
            assert_eq!(runs.load(SeqCst), 1);
        }
    }
}

/// Ports `Purge.java`: 1000 tasks, some cancelled at random; `purge()`
/// returns how many were cancelled, then 0. (Once the timer has taken the
/// tasks in, as `Timer` does at `schedule`: a task cancelled before that
/// is let go at once, and purge never sees it.)
#[test]
fn purge() {
    let clock = ManualClock::new();
    let t = timer(&clock);
    let handles: Vec<_> = (0..1000)
        .map(|_| t.schedule(Duration::from_secs(100_000), || ()).unwrap())
        .collect();
    clock.advance(Duration::ZERO);
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut cancelled = 0;
    for h in &handles {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        if seed.is_multiple_of(2) && h.handle().cancel() {
            cancelled += 1;
        }
    }
    assert!(cancelled > 300 && cancelled < 700, "{cancelled}");
    assert_eq!(t.purge(), cancelled);
    assert_eq!(t.purge(), 0);
    assert_eq!(t.metrics().pending, 1000 - cancelled);
}

/// Beyond `Purge`: without any `purge()` call, cancelled tasks do not pile
/// up: once they outnumber live ones they are dropped automatically.
#[test]
fn cancelled_tasks_are_purged_automatically() {
    let clock = ManualClock::new();
    let t = timer(&clock);
    let keep: Vec<_> = (0..100)
        .map(|_| t.schedule(Duration::from_secs(50), || ()).unwrap())
        .collect();
    for _ in 0..50_000 {
        let h = t.schedule(Duration::from_secs(100), || ()).unwrap();
        assert!(h.handle().cancel());
    }
    // The driver takes in what callers did when it wakes.
    clock.advance(Duration::ZERO);
    let left = t.purge();
    assert!(
        left < 2 * schedulers::heap_timer::AUTO_PURGE_MIN,
        "{left} dead entries were left behind"
    );
    assert_eq!(t.metrics().pending, keep.len());
}

/// Where `Timer` dies: a task that throws kills the thread, drops every
/// pending task and makes later `schedule` calls throw. Here it does not.
#[test]
fn a_throwing_task_does_not_kill_the_timer() {
    let clock = ManualClock::new();
    let t = timer(&clock);
    let (runs, make) = counter();
    let r = make();
    let pending = t.schedule(Duration::from_secs(2), move || {
        r.fetch_add(1, SeqCst);
    });
    t.schedule(Duration::from_secs(1), || {
        panic!("like a RuntimeException in run()")
    })
    .unwrap();
    clock.advance(Duration::from_secs(2));
    assert_eq!(runs.load(SeqCst), 1, "the pending task was not dropped");
    assert!(pending.unwrap().handle().is_done());
    assert!(
        t.schedule(Duration::ZERO, || ()).is_ok(),
        "the timer still takes work"
    );
}
