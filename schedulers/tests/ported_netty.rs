//! Netty's `HashedWheelTimerTest` (4.1), ported to virtual time, plus the
//! wheel's lateness bound at its edges. Each test names the original it
//! ports; where the contract of this crate differs from Netty, the test
//! says how.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers::{Executor, HashedWheelTimer, ManualClock, Scheduler, SchedulerExt, TaskHandle};

use crate::conformance::{ms, secs, Counter};

/// A wheel in Netty's tick mode: a timer fires at the end of its tick.
fn wheel(clock: &ManualClock, tick: Duration, buckets: usize) -> HashedWheelTimer {
    HashedWheelTimer::builder()
        .clock(clock.clone())
        .precise(false)
        .tick(tick)
        .wheel_size(buckets)
        .build()
        .unwrap()
}

fn nanos(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// Advances `clock` to `at` after its start.
fn advance_to(clock: &ManualClock, at: Duration) {
    let now = clock.elapsed();
    assert!(at >= now, "cannot go back from {now:?} to {at:?}");
    clock.advance(at - now);
}

/// A timer that records the virtual time it ran at.
fn record(
    timer: &HashedWheelTimer,
    clock: &ManualClock,
    delay: Duration,
    log: &Arc<Mutex<Vec<Duration>>>,
) -> TaskHandle {
    let (log, c) = (log.clone(), clock.clone());
    timer
        .schedule(delay, move || log.lock().unwrap().push(c.elapsed()))
        .unwrap()
        .into_handle()
}

/// `testScheduleTimeoutShouldNotRunBeforeDelay`: a 10 s timeout has not run
/// after 3 s (and is cancellable then).
#[test]
fn schedule_timeout_should_not_run_before_delay() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .build()
        .unwrap();
    let runs = Counter::default();
    let r = runs.clone();
    let timeout = timer.schedule(secs(10), move || r.bump()).unwrap();
    clock.advance(secs(3));
    assert_eq!(runs.get(), 0);
    assert!(!timeout.handle().is_done());
    assert!(timeout.handle().cancel());
}

/// `testScheduleTimeoutShouldRunAfterDelay`: a 2 s timeout runs within 3 s
/// and is then expired (`is_done`).
#[test]
fn schedule_timeout_should_run_after_delay() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .build()
        .unwrap();
    let runs = Counter::default();
    let r = runs.clone();
    let timeout = timer.schedule(secs(2), move || r.bump()).unwrap();
    clock.advance(secs(3));
    assert_eq!(runs.get(), 1);
    assert!(timeout.handle().is_done());
}

/// `testStopTimer`: once every timeout fired, `stop()` (here
/// `shutdown_now`) returns nothing; with timeouts pending it returns them.
#[test]
fn stop_timer() {
    let clock = ManualClock::new();
    let processed = wheel(&clock, ms(1), 512);
    let runs = Counter::default();
    for _ in 0..3 {
        let r = runs.clone();
        processed.schedule(ms(1), move || r.bump()).unwrap();
    }
    clock.advance(ms(2));
    assert_eq!(runs.get(), 3);
    assert!(
        processed.shutdown_now().is_empty(),
        "all timeouts processed"
    );

    let unprocessed = wheel(&clock, ms(1), 512);
    for _ in 0..5 {
        unprocessed.schedule(secs(10), || ()).unwrap();
    }
    clock.advance(ms(1));
    assert_eq!(
        unprocessed.shutdown_now().len(),
        5,
        "pending timeouts are returned"
    );
}

/// `testTimerShouldThrowExceptionAfterShutdownForNewTimeouts`: a new
/// timeout after stop is refused (`IllegalStateException` in Netty, a
/// shutdown error here).
#[test]
fn timer_should_refuse_new_timeouts_after_shutdown() {
    let clock = ManualClock::new();
    let timer = wheel(&clock, ms(1), 512);
    for _ in 0..3 {
        timer.schedule(ms(1), || ()).unwrap();
    }
    clock.advance(ms(2));
    let _ = timer.shutdown_now();
    let err = timer.schedule(ms(1), || ()).unwrap_err();
    assert!(err.is_shutdown(), "{err}");
}

/// `testTimerOverflowWheelLength`: on a 32-bucket wheel with a 100 ms tick, a
/// task that schedules itself again keeps running, also with a delay longer
/// than one revolution (3.2 s).
#[test]
fn timer_overflow_wheel_length() {
    let clock = ManualClock::new();
    let timer = Arc::new(wheel(&clock, ms(100), 32));
    let log = Arc::new(Mutex::new(Vec::new()));
    fn again(
        timer: Arc<HashedWheelTimer>,
        clock: ManualClock,
        log: Arc<Mutex<Vec<Duration>>>,
        left: u32,
    ) {
        let (t, c, l) = (timer.clone(), clock.clone(), log.clone());
        timer
            .schedule(secs(5), move || {
                l.lock().unwrap().push(c.elapsed());
                if left > 1 {
                    again(t, c, l, left - 1);
                }
            })
            .unwrap();
    }
    again(timer.clone(), clock.clone(), log.clone(), 3);
    for _ in 0..200 {
        clock.advance(ms(100));
    }
    assert_eq!(*log.lock().unwrap(), [secs(5), secs(10), secs(15)]);
}

/// `testExecutionOnTime`: 100 000 timeouts of 125 ms on a 200 ms tick all
/// fire within [125, 650) ms in Netty (real time); in virtual time the bound
/// is exact: not before 125 ms, at most one tick later.
#[test]
fn execution_on_time() {
    let clock = ManualClock::new();
    let timer = wheel(&clock, ms(200), 512);
    let late = Arc::new(Mutex::new(Vec::with_capacity(100_000)));
    for _ in 0..100_000 {
        let (late, c) = (late.clone(), clock.clone());
        timer
            .schedule(ms(125), move || late.lock().unwrap().push(c.elapsed()))
            .unwrap();
    }
    for _ in 0..10 {
        clock.advance(ms(50));
    }
    let late = late.lock().unwrap();
    assert_eq!(late.len(), 100_000);
    assert!(
        late.iter()
            .all(|at| *at >= ms(125) && *at <= ms(125) + ms(200)),
        "{:?}",
        late.iter().max()
    );
}

/// `testExecutionOnTaskExecutor`: tasks run on the supplied executor.
#[test]
fn execution_on_task_executor() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .executor(Executor::pool(1).unwrap())
        .build()
        .unwrap();
    let name = timer
        .schedule(ms(1), || std::thread::current().name().map(str::to_owned))
        .unwrap();
    clock.advance(ms(2));
    assert_eq!(name.get().unwrap().as_deref(), Some("schedulers-worker-0"));
}

/// `testRejectedExecutionExceptionWhenTooManyTimeoutsAreAddedBackToBack`:
/// with a maximum of 2, the third timeout is refused.
#[test]
fn rejected_when_too_many_timeouts_are_added_back_to_back() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .pending_limit(2)
        .build()
        .unwrap();
    timer.schedule(secs(5), || ()).unwrap();
    timer.schedule(secs(5), || ()).unwrap();
    assert!(timer.schedule(ms(1), || ()).unwrap_err().is_pending_limit());
}

/// `testNewTimeoutShouldStopThrowingRejectedExecutionExceptionWhenExistingTimeoutIsCancelled`:
/// a cancel frees capacity at once, before the worker has unlinked it.
#[test]
fn capacity_is_freed_when_existing_timeout_is_cancelled() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .pending_limit(2)
        .build()
        .unwrap();
    timer.schedule(secs(5), || ()).unwrap();
    let second = timer.schedule(secs(5), || ()).unwrap();
    assert!(second.handle().cancel());
    timer.schedule(ms(1), || ()).unwrap();
    assert!(timer.schedule(ms(1), || ()).unwrap_err().is_pending_limit());
}

/// `testNewTimeoutShouldStopThrowingRejectedExecutionExceptionWhenExistingTimeoutIsExecuted`:
/// an expiry frees capacity.
#[test]
fn capacity_is_freed_when_existing_timeout_is_executed() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .pending_limit(2)
        .build()
        .unwrap();
    timer.schedule(secs(5), || ()).unwrap();
    let fires = timer.schedule(ms(100), || ()).unwrap();
    clock.advance(ms(101));
    assert!(fires.handle().is_done());
    timer.schedule(ms(1), || ()).unwrap();
    assert!(timer.schedule(ms(1), || ()).unwrap_err().is_pending_limit());
}

/// `reportPendingTimeouts`: two 100-minute timeouts and one of 90 ms make
/// three pending; after two cancels and the expiry, none.
#[test]
fn report_pending_timeouts() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .build()
        .unwrap();
    let t1 = timer.schedule(secs(6000), || ()).unwrap();
    let t2 = timer.schedule(secs(6000), || ()).unwrap();
    let fires = timer.schedule(ms(90), || ()).unwrap();
    assert_eq!(timer.metrics().pending, 3);
    assert!(t1.handle().cancel() && t2.handle().cancel());
    clock.advance(ms(91));
    assert!(fires.handle().is_done());
    assert_eq!(timer.metrics().pending, 0);
}

/// `testOverflow`: Netty saturates a delay of `Long.MAX_VALUE` ms and the
/// timeout never fires. Here a delay past the time range is a typed error
/// (the crate's contract), and the largest delays that fit never fire
/// within any realistic span.
#[test]
fn overflow() {
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .build()
        .unwrap();
    let err = timer
        .schedule(Duration::from_millis(i64::MAX as u64), || ())
        .unwrap_err();
    assert!(err.is_delay_overflow());
    let runs = Counter::default();
    let r = runs.clone();
    let far = timer
        .schedule(secs(100 * 365 * 24 * 3600), move || r.bump())
        .unwrap();
    clock.advance(secs(10 * 365 * 24 * 3600));
    assert_eq!(runs.get(), 0);
    assert!(far.handle().cancel());
}

/// `testStopTimerCancelsPendingTasks`: what `stop()` returns never runs.
/// Netty (since 4.1.111) marks them cancelled; here they are *abandoned*,
/// the contract of `shutdown_now`, and report it when waited on.
#[test]
fn stop_timer_cancels_pending_tasks() {
    let clock = ManualClock::new();
    let timer = wheel(&clock, ms(1), 512);
    let runs = Counter::default();
    for _ in 0..3 {
        let r = runs.clone();
        timer.schedule(secs(10), move || r.bump()).unwrap();
    }
    let unprocessed = timer.shutdown_now();
    assert_eq!(unprocessed.len(), 3);
    for t in &unprocessed {
        assert!(t.wait().unwrap_err().is_abandoned());
        assert!(!t.cancel());
    }
    clock.advance(secs(20));
    assert_eq!(runs.get(), 0);
}

/// `testPendingTimeoutsShouldBeCountedCorrectlyWhenTimeoutCancelledWithinGoalTick`:
/// a timeout cancelled in the tick it would fire leaves nothing pending.
#[test]
fn pending_counted_correctly_when_cancelled_within_goal_tick() {
    let clock = ManualClock::new();
    let timer = wheel(&clock, ms(10), 512);
    let runs = Counter::default();
    let r = runs.clone();
    let t = timer.schedule(ms(15), move || r.bump()).unwrap();
    clock.advance(ms(12)); // inside the goal tick (10, 20] ms
    assert!(t.handle().cancel());
    clock.advance(ms(20));
    assert_eq!(runs.get(), 0);
    assert_eq!(timer.metrics().pending, 0);
    assert_eq!(timer.metrics().cancelled, 1);
}

// ---- the lateness bound at its edges (10 ms tick, 8 buckets = 80 ms a turn) ----

/// Never early: not even a nanosecond before the deadline, for deadlines
/// inside a tick, on a tick, in the first and in later rounds.
#[test]
fn never_early_at_any_edge() {
    for due in [
        nanos(1),
        ms(1),
        ms(25),
        ms(30),
        ms(79),
        ms(80),
        ms(81),
        ms(265),
        ms(800),
    ] {
        let clock = ManualClock::new();
        let timer = wheel(&clock, ms(10), 8);
        let log = Arc::new(Mutex::new(Vec::new()));
        record(&timer, &clock, due, &log);
        advance_to(&clock, due - nanos(1));
        assert!(log.lock().unwrap().is_empty(), "due {due:?}: fired early");
        advance_to(&clock, due);
        assert!(log.lock().unwrap().len() <= 1);
    }
}

/// At most one tick late: a deadline just past a boundary fires on the
/// next boundary, not a nanosecond later; one exactly on a boundary fires
/// on it, with no lateness at all.
#[test]
fn at_most_one_tick_late_and_exact_on_a_tick() {
    let cases = [
        (ms(25), ms(30)),
        (ms(20) + nanos(1), ms(30)),
        (ms(30), ms(30)),   // on a tick: on time
        (ms(80), ms(80)),   // on the first tick of the next turn
        (ms(265), ms(270)), // three rounds, then 25 ms into the turn
        (ms(240), ms(240)), // three rounds exactly
    ];
    for (due, fires) in cases {
        let clock = ManualClock::new();
        let timer = wheel(&clock, ms(10), 8);
        let log = Arc::new(Mutex::new(Vec::new()));
        record(&timer, &clock, due, &log);
        advance_to(&clock, fires - nanos(1));
        assert!(
            log.lock().unwrap().is_empty(),
            "due {due:?} fired before its tick {fires:?}"
        );
        advance_to(&clock, fires);
        assert_eq!(*log.lock().unwrap(), [fires], "due {due:?}");
    }
}

/// Several rounds, stepped one tick at a time: each timer fires on its own
/// tick in the right round, not a revolution early or late.
#[test]
fn rounds_fire_in_the_right_revolution() {
    let clock = ManualClock::new();
    let timer = wheel(&clock, ms(10), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    // Same bucket (30 ms mod 80 ms), rounds 0 to 4; scheduled out of order.
    let dues = [ms(350), ms(30), ms(190), ms(110), ms(270)];
    let handles: Vec<_> = dues
        .iter()
        .map(|d| record(&timer, &clock, *d, &log))
        .collect();
    for _ in 0..40 {
        clock.advance(ms(10));
    }
    assert_eq!(
        *log.lock().unwrap(),
        [ms(30), ms(110), ms(190), ms(270), ms(350)]
    );
    assert!(handles.iter().all(TaskHandle::is_done));
}

/// A clock that jumps many revolutions at once (a suspended process, a
/// virtual clock) still runs every due timer, in deadline order, and leaves
/// later ones alone.
#[test]
fn a_jump_of_many_revolutions_runs_everything_due_in_order() {
    let clock = ManualClock::new();
    let timer = wheel(&clock, ms(10), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    for d in [ms(5000), ms(15), ms(2500), ms(15), ms(9000)] {
        record(&timer, &clock, d, &log);
    }
    clock.advance(ms(6000));
    assert_eq!(*log.lock().unwrap(), [ms(6000); 4]);
    assert_eq!(timer.metrics().pending, 1);
    clock.advance(ms(3000));
    assert_eq!(log.lock().unwrap().len(), 5);
}

/// go-zero's `MoveTimer`: pushing a timeout later many times (a keep-alive)
/// fires it once, at the last deadline, on time.
#[test]
fn repeated_resets_fire_once_at_the_last_deadline() {
    let clock = ManualClock::new();
    let timer = wheel(&clock, ms(10), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    let h = record(&timer, &clock, ms(100), &log);
    for _ in 0..50 {
        clock.advance(ms(30));
        assert!(h.reset(ms(100)).unwrap());
    }
    // Last reset at 1500 ms: due at 1600 ms.
    advance_to(&clock, ms(1600) - nanos(1));
    assert!(log.lock().unwrap().is_empty());
    advance_to(&clock, ms(1600));
    assert_eq!(*log.lock().unwrap(), [ms(1600)]);
}
