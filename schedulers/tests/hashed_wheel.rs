//! HashedWheelTimer against the conformance suite: exact by default (a
//! granularity of zero: every task starts at its deadline in virtual time),
//! with tasks run inline on the worker (Netty's way) and on a pool of one
//! worker (the busy-worker cases keep it busy while tasks come due behind
//! it); on a pool of four; and in Netty's tick mode, one tick late at most.

use std::time::Duration;

use schedulers::{Executor, HashedWheelTimer};

/// The tick every instance below uses: the granularity of the suite.
const TICK: Duration = Duration::from_millis(1);

crate::conformance!(conformance, Duration::ZERO, |o| {
    let mut b = HashedWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .tick(TICK)
        .wheel_size(512);
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

crate::conformance!(conformance_busy_single_worker, Duration::ZERO, |o| {
    let mut b = HashedWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .tick(TICK)
        .wheel_size(64)
        .executor(Executor::pool(1).unwrap());
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

crate::conformance_multi_worker!(conformance_four_workers, TICK, |o| {
    let mut b = HashedWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .tick(TICK)
        .wheel_size(64)
        .executor(Executor::pool(4).unwrap());
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

crate::conformance!(conformance_tick_mode, TICK, |o| {
    let mut b = HashedWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .precise(false)
        .tick(TICK)
        .wheel_size(512);
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

/// With only far timers pending, the worker sleeps until the first is due,
/// not from tick to tick as Netty's does (issue: no idle ticking).
#[test]
fn far_timers_do_not_wake_the_worker_every_tick() {
    use schedulers::{Clock, ManualClock, Scheduler, Task};
    let clock = ManualClock::new();
    let timer = HashedWheelTimer::builder()
        .clock(clock.clone())
        .build()
        .unwrap();
    let start = clock.now();
    let hour = Duration::from_secs(3600);
    let handles: Vec<_> = (0..100_000u64)
        .map(|i| {
            let delay = hour + Duration::from_millis(i * 36 % 3_600_000);
            timer.submit(delay, Task::once(|| ())).unwrap()
        })
        .collect();
    clock.advance(Duration::ZERO);
    let next = timer.next_expiration().expect("timers pending");
    // New timers wait in the wheel's staging list; it begins to place them
    // 50 ns a timer ahead of the first deadline, a chunk a poll.
    let placing = Duration::from_nanos(100_000 * 50);
    assert_eq!(
        next,
        start + hour - placing,
        "the worker plans to wake before it must place the new timers"
    );
    let woken = timer.driver_wakeups();
    clock.advance(hour - Duration::from_secs(1));
    assert_eq!(timer.metrics().fired, 0);
    // One advance wakes it once (the clock's own wake-up), not once a tick.
    assert!(timer.driver_wakeups() - woken <= 2);
    // It places them all ahead of the first deadline, which fires on it.
    let woken = timer.driver_wakeups();
    clock.advance(Duration::from_secs(1));
    assert_eq!(timer.metrics().fired, 1);
    assert!(timer.driver_wakeups() - woken <= 2, "no wake-up a chunk");
    drop(handles);
}
