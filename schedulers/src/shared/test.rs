//! Unit tests of the shared state, on a threadless scheduler.

use std::sync::atomic::Ordering::SeqCst;

use super::*;
use crate::core::IndexedHeap;
use crate::lanes::Spot;
use crate::task::Task;

/// A scheduler's shared state on a virtual clock, with no driver
/// thread: the tests call what a driver would.
fn threadless(periodic_slack: Duration) -> Arc<Shared> {
    Shared::new(Config {
        clock: Arc::new(crate::ManualClock::new()),
        queue: Queue::Heap(IndexedHeap::new()),
        executor: Executor::inline(),
        policy: ShutdownPolicy::default(),
        pending_limit: None,
        remove_on_cancel: false,
        spin_budget: Duration::ZERO,
        timer_slack: crate::DEFAULT_TIMER_SLACK,
        periodic_slack,
    })
}

/// A periodic run may wait `periodic_slack` for others to share its
/// wake-up; a one-shot due meanwhile sets the wake-up instead.
#[test]
fn a_periodic_run_waits_its_slack_unless_a_one_shot_is_due_first() {
    let (ms, us) = (Duration::from_millis, Duration::from_micros);
    let shared = threadless(us(50));
    let wake = || {
        let mut driver = shared.lock();
        shared.intake(&mut driver, true);
        shared.next_wake(&driver).map(|t| t - shared.now())
    };
    let tick = Task::fixed_rate(ms(10), || {}).unwrap();
    shared.submit(When::After(ms(1)), tick).unwrap();
    assert_eq!(wake(), Some(nanos(ms(1) + us(50))));
    shared
        .submit(When::After(ms(1) + us(20)), Task::once(|| ()))
        .unwrap();
    assert_eq!(wake(), Some(nanos(ms(1) + us(20))));
    shared
        .submit(When::After(us(900)), Task::once(|| ()))
        .unwrap();
    assert_eq!(wake(), Some(nanos(us(900))));
}

/// A submission wakes the driver only when it must: due before the
/// driver's planned wake-up, or the first work in a clean lane while the
/// driver watches none. `looks_at == 0` records the nudge.
#[test]
fn a_caller_nudges_the_driver_only_when_it_must() {
    let shared = threadless(Duration::ZERO);
    let nudged = |shared: &Shared| {
        let mut driver = shared.lock();
        let nudged = driver.looks_at == 0;
        driver.looks_at = NEVER;
        shared.intake(&mut driver, true);
        nudged
    };
    let secs = Duration::from_secs;
    // Asleep until 10 s and watching the lanes.
    shared.wake_at.store(nanos(secs(10)), SeqCst);
    shared.watching.store(true, SeqCst);
    shared
        .submit(When::After(secs(20)), Task::once(|| ()))
        .unwrap();
    assert!(!nudged(&shared), "later than the planned wake-up, watched");
    shared
        .submit(When::After(secs(5)), Task::once(|| ()))
        .unwrap();
    assert!(nudged(&shared), "due before the planned wake-up");
    // Asleep without watching: the first push into a clean lane wakes it,
    // the next one (the lane is dirty already) does not.
    shared.watching.store(false, SeqCst);
    shared
        .submit(When::After(secs(30)), Task::once(|| ()))
        .unwrap();
    let second = shared.submit(When::After(secs(30)), Task::once(|| ()));
    assert!(nudged(&shared), "dirtied a lane nobody watches");
    drop(second);
    assert!(!nudged(&shared));
}

/// Who drops a cancelled task's closure, exactly once: the canceller,
/// when the entry was still in its lane (taken back out); the driver when
/// it takes the entry in and finds it cancelled (a cancel without the
/// spot); the driver when it reads the log (cancelled after the intake).
#[test]
fn a_cancelled_closure_is_dropped_once_whoever_sees_it_first() {
    let shared = threadless(Duration::ZERO);
    let token = Arc::new(());
    let submit = || {
        let t = token.clone();
        let task = Task::once(move || drop(t));
        shared
            .submit(When::After(Duration::from_secs(1)), task)
            .unwrap()
    };
    let (back, spot) = submit();
    let (unlogged, _) = submit();
    let (logged, _) = submit();
    assert!(shared.cancel(back, spot), "taken back out of the lane");
    assert_eq!(Arc::strong_count(&token), 3, "dropped by the canceller");
    assert!(
        shared.cancel(unlogged, Spot::NONE),
        "cancelled, not taken back"
    );
    assert_eq!(Arc::strong_count(&token), 3, "left for the driver");
    let mut driver = shared.lock();
    shared.intake(&mut driver, true);
    assert_eq!(driver.queue.len(), 1, "only the live task is queued");
    drop(shared.bury(driver));
    assert_eq!(Arc::strong_count(&token), 2, "dropped at the intake");
    assert!(
        shared.cancel(logged, Spot::NONE),
        "cancelled after the intake"
    );
    assert_eq!(
        Arc::strong_count(&token),
        2,
        "kept until the driver reads the log"
    );
    let mut driver = shared.lock();
    shared.intake(&mut driver, true);
    drop(shared.bury(driver));
    assert_eq!(Arc::strong_count(&token), 1);
    assert_eq!(shared.metrics().cancelled, 3);
    for key in [back, unlogged, logged] {
        shared.release(key);
    }
}
