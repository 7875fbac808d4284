//! Unit tests of the shared state, on a threadless scheduler.

use std::sync::atomic::Ordering::SeqCst;

use super::*;
use crate::core::IndexedHeap;
use crate::lanes::Spot;
use crate::task::Task;

/// A scheduler's shared state on a virtual clock, with no driver
/// thread: the tests call what a driver would.
fn threadless(periodic_slack: Duration) -> Arc<Shared> {
    threadless_on(Arc::new(crate::ManualClock::new()), false, periodic_slack)
}

fn threadless_on(
    clock: Arc<dyn Clock>,
    system_clock: bool,
    periodic_slack: Duration,
) -> Arc<Shared> {
    Shared::new(Config {
        name: "test".into(),
        run_figures: true,
        system_clock,
        clock,
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

/// The buffers a burst filled (the ready queue: 16 bytes a timer) go
/// back to the allocator before the driver sleeps for long, or at one
/// short sleep in `TRIM_EVERY`; not while it runs tasks, and not at every
/// short sleep (bursts that recur reuse them).
#[test]
fn a_driver_gives_back_a_bursts_buffers_before_it_sleeps() {
    use crate::core::IDLE_KEEP;
    let shared = threadless(Duration::ZERO);
    let n = 2 * IDLE_KEEP;
    for _ in 0..n {
        shared
            .submit(When::After(Duration::ZERO), Task::once(|| ()))
            .unwrap();
    }
    let mut driver = shared.lock();
    shared.intake(&mut driver);
    shared.collect_due(&mut driver, shared.now());
    assert_eq!(driver.ready.len(), n);
    while let Some(batch) = shared.take_batch(&mut driver, IDLE_KEEP, false) {
        drop(driver);
        driver = shared.run_taken(batch).0;
    }
    assert!(driver.ready.capacity() >= n, "kept while it ran");
    let soon = Some(shared.now() + nanos(Duration::from_millis(1)));
    driver = sleep_once(&shared, driver, soon);
    assert!(driver.ready.capacity() >= n, "kept over a short sleep");
    driver.sleeps_untrimmed = super::wait::TRIM_EVERY - 1;
    driver = sleep_once(&shared, driver, soon);
    assert!(
        driver.ready.capacity() <= IDLE_KEEP,
        "{}",
        driver.ready.capacity()
    );
    driver.ready.reserve(n);
    driver = sleep_once(&shared, driver, None);
    assert!(
        driver.ready.capacity() <= IDLE_KEEP,
        "given back before a long sleep"
    );
}

/// Lets the driver of `shared` sleep once (until `deadline` by the virtual
/// clock, which never comes): another thread wakes it once it waits.
fn sleep_once<'a>(
    shared: &'a Arc<Shared>,
    mut driver: MutexGuard<'a, DriverState>,
    deadline: Option<u64>,
) -> MutexGuard<'a, DriverState> {
    driver.nudged = false;
    let waker = {
        let shared = shared.clone();
        std::thread::spawn(move || loop {
            if shared.lock().waiting > 0 {
                shared.nudge();
                break;
            }
            std::thread::yield_now();
        })
    };
    let wake_at = deadline.unwrap_or(crate::clock::NEVER);
    let driver = shared.wait(driver, deadline, wake_at, false);
    waker.join().unwrap();
    driver
}

/// A periodic run may wait `periodic_slack` for others to share its
/// wake-up; a one-shot due meanwhile sets the wake-up instead.
#[test]
fn a_periodic_run_waits_its_slack_unless_a_one_shot_is_due_first() {
    let (ms, us) = (Duration::from_millis, Duration::from_micros);
    let shared = threadless(us(50));
    let wake = || {
        let mut driver = shared.lock();
        shared.intake(&mut driver);
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
/// driver's planned wake-up, or its lane crowded. Else the driver takes it
/// in when it wakes by itself: it never sleeps past the earliest deadline
/// waiting in a lane (`Lanes::earliest`).
#[test]
fn a_caller_wakes_the_driver_only_when_it_must() {
    let shared = threadless(Duration::ZERO);
    let nudged = |shared: &Shared| std::mem::take(&mut shared.lock().nudged);
    let secs = |s: u64| Duration::from_secs(s);
    // Asleep until 10 s.
    shared.wake.set_planned(nanos(secs(10)));
    shared
        .submit(When::After(secs(20)), Task::once(|| ()))
        .unwrap();
    assert!(!nudged(&shared), "later than the planned wake-up");
    assert_eq!(shared.lanes.earliest(), nanos(secs(20)));
    shared
        .submit(When::After(secs(5)), Task::once(|| ()))
        .unwrap();
    assert!(nudged(&shared), "due before the planned wake-up");
    assert_eq!(shared.lanes.earliest(), nanos(secs(5)));
    let mut driver = shared.lock();
    shared.intake(&mut driver);
    assert_eq!(driver.queue.len(), 2);
    drop(driver);
    assert_eq!(shared.lanes.earliest(), u64::MAX, "taken in: nothing waits");
    // A crowded lane wakes it whatever the deadlines.
    for _ in 0..crate::lanes::LANE_NUDGE {
        shared
            .submit(When::After(secs(60)), Task::once(|| ()))
            .unwrap();
    }
    assert!(nudged(&shared), "crowded");
    // Once per filling: the next push finds the driver told already.
    shared
        .submit(When::After(secs(60)), Task::once(|| ()))
        .unwrap();
    assert!(!nudged(&shared), "nudged once when the lane filled");
}

/// Submits a one-shot due in a second whose closure holds a clone of
/// `token` (its strong count says whether the closure is dropped).
fn submit_holding(shared: &Shared, token: &Arc<()>) -> (Key, Spot) {
    let t = token.clone();
    let task = Task::once(move || drop(t));
    shared
        .submit(When::After(Duration::from_secs(1)), task)
        .unwrap()
}

/// A cancelled task's closure is dropped once, at once, by the thread
/// whose cancel won, whichever way the driver learns of the cancel: the
/// entry taken back out of its lane (the driver never hears of it), the
/// driver finding the task cancelled when it takes the entry in (a cancel
/// without the spot), or a mark (cancelled after the intake). While the
/// queue is large, the last is left to the driver: see the next test.
#[test]
fn a_cancelled_closure_is_dropped_once_by_its_canceller() {
    let shared = threadless(Duration::ZERO);
    let token = Arc::new(());
    let submit = || submit_holding(&shared, &token);
    let (back, spot) = submit();
    let (unlogged, _) = submit();
    let (logged, _) = submit();
    assert!(shared.cancel(back, spot), "taken back out of the lane");
    assert_eq!(Arc::strong_count(&token), 3);
    assert!(
        shared.cancel(unlogged, Spot::NONE),
        "cancelled, not taken back"
    );
    assert_eq!(Arc::strong_count(&token), 2);
    let mut driver = shared.lock();
    shared.intake(&mut driver);
    assert_eq!(driver.queue.len(), 1, "only the live task is queued");
    drop(driver);
    assert!(
        shared.cancel(logged, Spot::NONE),
        "cancelled after the intake"
    );
    assert_eq!(Arc::strong_count(&token), 1);
    assert!(shared.slab.any_marked(), "marked for the driver");
    let mut driver = shared.lock();
    shared.intake(&mut driver);
    assert_eq!(driver.dead, 1, "its entry is dead");
    assert!(driver.graveyard.is_empty(), "nothing left to the driver");
    drop(driver);
    assert_eq!(shared.metrics().cancelled, 3);
    assert_eq!(shared.metrics().pending, 0);
    for key in [back, unlogged, logged] {
        shared.release(key);
    }
}

/// While the driver's queue is large, a cancel of a task it holds leaves
/// the closure to it, with a reference: the driver drops the closure when
/// it takes the mark (with its lock released), lets the reference go, and
/// the key is freed once the handle lets go too, never before. A cancel
/// of a task it does not hold yet still drops the closure at once.
#[test]
fn a_closure_left_to_the_driver_is_dropped_once_when_it_takes_the_mark() {
    let shared = threadless(Duration::ZERO);
    shared.drops_later.store(true, SeqCst);
    let token = Arc::new(());
    let submit = || submit_holding(&shared, &token);
    let (back, spot) = submit();
    let (logged, _) = submit();
    assert!(shared.cancel(back, spot), "taken back out of the lane");
    assert_eq!(Arc::strong_count(&token), 2, "dropped by its canceller");
    let mut driver = shared.lock();
    shared.intake(&mut driver);
    // A queue of one: the intake said closures are the cancellers' again.
    shared.drops_later.store(true, SeqCst);
    drop(driver);
    assert!(shared.cancel(logged, Spot::NONE));
    assert!(!shared.cancel(logged, Spot::NONE), "once");
    assert_eq!(Arc::strong_count(&token), 2, "left to the driver");
    let word = shared.slab.word(logged).load(SeqCst);
    assert_ne!(word & crate::state::LEFT, 0);
    assert!(shared.wake.closures_left(), "the driver is told");
    let mut driver = shared.lock();
    shared.intake(&mut driver);
    assert_eq!(driver.graveyard, [logged]);
    assert_eq!(driver.dead, 1, "its entry is dead, its word not read");
    assert_eq!(
        Arc::strong_count(&token),
        2,
        "dropped with the lock released"
    );
    let driver = shared.bury(driver);
    assert_eq!(Arc::strong_count(&token), 1, "dropped by the driver");
    assert!(driver.to_free.is_empty(), "the handle still holds the key");
    drop(driver);
    assert!(!shared.wake.closures_left());
    assert_eq!(shared.metrics().cancelled, 2);
    assert_eq!(shared.metrics().pending, 0);
    shared.release(back);
    shared.release(logged);
    let word = shared.slab.word(logged).load(SeqCst);
    assert_eq!(crate::state::holders(word), 1, "its dead queue entry");
    let mut driver = shared.lock();
    shared.purge(&mut driver);
    drop(shared.bury(driver));
    let word = shared.slab.word(logged).load(SeqCst);
    assert_eq!(crate::state::holders(word), 0, "no holder left");
}

/// A task accepted just before shutdown, whose submitter has not yet
/// started the pool's first worker, holds termination back: the worker
/// still comes and runs it. `shutdown_now` abandons it and terminates a
/// threadless scheduler at once.
#[test]
fn shutdown_waits_for_a_kept_task_that_has_no_thread_yet() {
    let shared = threadless(Duration::ZERO);
    let (key, _) = shared
        .submit(When::After(Duration::from_secs(1)), Task::once(|| ()))
        .unwrap();
    shared.shutdown();
    assert!(!shared.is_terminated(), "a kept task waits for its worker");
    assert_eq!(shared.shutdown_now(), vec![key]);
    assert!(shared.is_terminated());
}

/// With nothing pending, a threadless scheduler terminates at shutdown.
#[test]
fn shutdown_of_a_threadless_scheduler_with_nothing_left_terminates() {
    let shared = threadless(Duration::ZERO);
    shared.shutdown();
    assert!(shared.is_terminated());
}

/// The driver applies resets a bounded number at a time (`apply_moves`),
/// so that a pile of them never holds up a due task; split across calls
/// they keep their order: a task's last reset wins.
#[test]
fn resets_are_applied_a_few_at_a_time_in_order() {
    let shared = threadless(Duration::ZERO);
    let secs = Duration::from_secs;
    let keys: Vec<Key> = (0..600)
        .map(|_| {
            let task = Task::once(|| ());
            shared.submit(When::After(secs(3600)), task).unwrap().0
        })
        .collect();
    shared.intake(&mut shared.lock());
    for (i, &key) in keys.iter().enumerate() {
        assert!(shared
            .reset(key, When::After(secs(7200 + i as u64)))
            .unwrap());
    }
    // The first task's second reset comes last (its lane's resets are
    // read in order, lane by lane).
    assert!(shared.reset(keys[0], When::After(secs(60))).unwrap());
    let mut driver = shared.lock();
    shared.intake(&mut driver);
    let moved = |driver: &DriverState| {
        let at = |key| driver.queue.deadline(key).unwrap();
        keys.iter()
            .filter(|&&key| at(key) != nanos(secs(3600)))
            .count()
    };
    assert_eq!(moved(&driver), 0, "read, not applied");
    assert!(shared.apply_moves(&mut driver, 1));
    assert_eq!(moved(&driver), 1);
    assert_eq!(driver.queue.deadline(keys[0]), Some(nanos(secs(7200))));
    assert!(shared.apply_moves(&mut driver, MOVES_PER_LOOK));
    // 1 + 256 resets applied, the first task's second among them.
    assert_eq!(moved(&driver), MOVES_PER_LOOK);
    assert_eq!(driver.queue.deadline(keys[0]), Some(nanos(secs(60))));
    while shared.apply_moves(&mut driver, MOVES_PER_LOOK) {}
    assert_eq!(moved(&driver), keys.len());
    assert_eq!(driver.queue.deadline(keys[0]), Some(nanos(secs(60))));
    assert_eq!(driver.queue.deadline(keys[1]), Some(nanos(secs(7201))));
    drop(driver);
    for key in keys {
        shared.release(key);
    }
}

/// On the system clock, a deadline is counted from the CPU's counter
/// (`crate::cycles`): never earlier than a reading of the clock taken
/// before the call, so a timer never fires early; and what is left of it,
/// asked on the same thread, never more than the delay.
#[test]
fn a_deadline_on_the_system_clock_is_never_early() {
    let shared = threadless_on(Arc::new(crate::SystemClock), true, Duration::ZERO);
    let delay = Duration::from_secs(30);
    let start = shared.now();
    let mut checked = 0;
    // Past the counter's calibration (10 ms), so that estimates are used,
    // and some hundreds of times however slow the machine (valgrind).
    while checked < 200 || shared.now() - start < nanos(Duration::from_millis(30)) {
        let before = shared.now();
        let (key, _) = shared
            .submit(When::After(delay), Task::once(|| ()))
            .unwrap();
        let deadline = shared.deadline_of(key).unwrap();
        assert!(
            deadline >= before + nanos(delay),
            "early: {deadline} < {before} + 30 s"
        );
        assert!(
            deadline <= shared.now() + nanos(delay) + 1_000,
            "{deadline} over 1 µs late"
        );
        assert!(shared.remaining(key) <= delay, "more left than the delay");
        assert_eq!(shared.take_back(key).map(|_| ()), Some(()));
        shared.release(key);
        checked += 1;
    }
}

/// A closure left while the driver was awake makes its wait return at once,
/// once: also when the driver took that closure's mark already, the flag is
/// taken, so the next wait sleeps instead of spinning until the next cancel.
#[test]
fn a_closure_left_while_the_driver_was_awake_ends_its_wait_once() {
    let shared = threadless(Duration::ZERO);
    // Its mark was taken already; only the flag is left.
    assert!(shared.wake.leave_closure());
    let driver = shared.lock();
    let far = nanos(Duration::from_secs(60));
    let driver = shared.wait(driver, Some(far), far, false);
    assert!(!shared.wake.closures_left(), "taken");
    assert_eq!(shared.wake.planned(), 0, "awake");
    assert_eq!(driver.waiting, 0, "it did not sleep");
}
