//! Builders refuse what they cannot honour with a typed error, one
//! predicate per setting, and never adjust a setting silently. (That
//! `build` fails rather than panics when the operating system refuses a
//! thread is checked by the `spawn_failure` test binary.)

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use schedulers::hashed_wheel::{MAX_WHEEL_SIZE, MIN_TICK};
use schedulers::hierarchical::MAX_WHEEL_SIZE as MAX_BUCKETS;
use schedulers::{
    Error, Executor, HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ManualClock,
    ScheduledThreadPool, Scheduler, SchedulerExt,
};

/// A timer built with `tick` (zero: none) fires a 3 ms task within one
/// tick, never early.
fn fires_on_time(timer: &dyn Scheduler, clock: &ManualClock, tick: Duration) {
    let task = timer.schedule(Duration::from_millis(3), || 5).unwrap();
    clock.advance(Duration::from_millis(3) - Duration::from_nanos(1));
    assert!(!task.handle().is_done(), "fired early with a {tick:?} tick");
    clock.advance(tick.max(Duration::from_nanos(1)));
    assert_eq!(task.get().unwrap(), 5);
}

/// What each of the four builders returns from `build()` when given the
/// same chain of settings.
macro_rules! every_builder {
    ($(.$setting:ident($($value:expr),*))*) => {
        [
            HeapTimer::builder()$(.$setting($($value),*))*.build().map(boxed),
            ScheduledThreadPool::builder()$(.$setting($($value),*))*.build().map(boxed),
            HashedWheelTimer::builder()$(.$setting($($value),*))*.build().map(boxed),
            HierarchicalWheelTimer::builder()$(.$setting($($value),*))*.build().map(boxed),
        ]
    };
}

fn boxed(s: impl Scheduler + 'static) -> Box<dyn Scheduler> {
    Box::new(s)
}

#[track_caller]
fn refused<T>(result: Result<T, Error>, is: fn(&Error) -> bool) {
    let e = result.map(drop).unwrap_err();
    assert!(is(&e) && e.is_invalid_setting(), "wrong error: {e}");
    assert!(e.to_string().starts_with("invalid "), "{e}");
}

/// Each of the four builders, given `.setting(value)`, refuses it with an
/// error that `is` recognises.
macro_rules! refused_by_every_builder {
    (.$setting:ident($value:expr), $is:expr) => {
        for result in every_builder!(.$setting($value)) {
            refused(result, $is);
        }
    };
}

#[test]
fn an_absurd_tick_is_refused_not_accepted_silently() {
    let year = Duration::from_secs(365 * 24 * 3600);
    for tick in [Duration::ZERO, MIN_TICK / 2, Duration::MAX, year * 600] {
        refused(
            HashedWheelTimer::builder().tick(tick).build(),
            Error::is_invalid_tick,
        );
    }
    for tick in [Duration::ZERO, Duration::MAX, year * 600] {
        refused(
            HierarchicalWheelTimer::builder().tick(tick).build(),
            Error::is_invalid_tick,
        );
    }
    // One turn of the wheel must fit the 584 years of the time range.
    let e = HashedWheelTimer::builder()
        .tick(year)
        .wheel_size(1024)
        .build()
        .map(drop)
        .unwrap_err();
    assert!(e.is_invalid_tick(), "{e}");
    assert!(e.to_string().contains("584 years"), "{e}");
}

#[test]
fn a_wheel_size_out_of_range_is_refused() {
    for size in [0, MAX_WHEEL_SIZE + 1, usize::MAX] {
        refused(
            HashedWheelTimer::builder().wheel_size(size).build(),
            Error::is_invalid_wheel_size,
        );
    }
    for size in [0, 1, MAX_BUCKETS + 1, usize::MAX] {
        refused(
            HierarchicalWheelTimer::builder().wheel_size(size).build(),
            Error::is_invalid_wheel_size,
        );
    }
}

#[test]
fn zero_threads_are_refused() {
    assert!(Executor::pool(0).unwrap_err().is_invalid_pool_size());
    refused(
        ScheduledThreadPool::builder().pool_size(0).build(),
        Error::is_invalid_pool_size,
    );
    refused(ScheduledThreadPool::new(0), Error::is_invalid_pool_size);
}

#[test]
fn a_zero_pending_limit_and_a_nul_in_a_thread_name_are_refused() {
    refused_by_every_builder!(.pending_limit(0), Error::is_invalid_pending_limit);
    let name = "timer\0";
    refused_by_every_builder!(.thread_name(name), Error::is_invalid_thread_name);
}

/// A spin budget beyond one second per second is refused; the edges, no
/// spinning and always spinning, are accepted.
#[test]
fn a_spin_budget_beyond_a_second_per_second_is_refused() {
    let too_much = Duration::from_secs(1) + Duration::from_nanos(1);
    refused_by_every_builder!(.spin_budget(too_much), Error::is_invalid_spin_budget);
    for budget in [Duration::ZERO, Duration::from_secs(1)] {
        let timer = HeapTimer::builder().spin_budget(budget).build().unwrap();
        assert_eq!(
            timer.schedule(Duration::ZERO, || 7).unwrap().get().unwrap(),
            7
        );
    }
}

/// A timer slack of zero (which Linux would read as its default) or beyond
/// a second is refused; one in range is what every scheduler's threads,
/// where tasks run, ask of Linux.
#[test]
fn a_timer_slack_out_of_range_is_refused_and_one_in_range_is_used() {
    for slack in [
        Duration::ZERO,
        Duration::from_secs(1) + Duration::from_nanos(1),
    ] {
        refused_by_every_builder!(.timer_slack(slack), Error::is_invalid_timer_slack);
    }
    for slack in [
        Duration::from_nanos(1),
        Duration::from_micros(37),
        Duration::from_secs(1),
    ] {
        let clock = ManualClock::new();
        // The wheels' default executor runs tasks on the driver thread.
        let timers = every_builder!(.clock(clock.clone()).timer_slack(slack)).map(Result::unwrap);
        for timer in &timers {
            let task = timer
                .schedule(Duration::ZERO, slack_of_this_thread)
                .unwrap();
            clock.advance(Duration::ZERO);
            let got = task.get().unwrap();
            if cfg!(target_os = "linux") {
                assert_eq!(got, Some(slack.as_nanos() as u64));
            }
        }
    }
}

/// A periodic slack (heap-based schedulers only) beyond a second is
/// refused; the edges are accepted, and a periodic task still runs at its
/// deadline when virtual time reaches it.
#[test]
fn a_periodic_slack_beyond_a_second_is_refused() {
    let too_late = Duration::from_secs(1) + Duration::from_nanos(1);
    refused(
        HeapTimer::builder().periodic_slack(too_late).build(),
        Error::is_invalid_periodic_slack,
    );
    refused(
        ScheduledThreadPool::builder()
            .periodic_slack(too_late)
            .build(),
        Error::is_invalid_periodic_slack,
    );
    for slack in [Duration::ZERO, Duration::from_secs(1)] {
        let clock = ManualClock::new();
        let timers: [Box<dyn Scheduler>; 2] = [
            boxed(
                HeapTimer::builder()
                    .clock(clock.clone())
                    .periodic_slack(slack)
                    .build()
                    .unwrap(),
            ),
            boxed(
                ScheduledThreadPool::builder()
                    .clock(clock.clone())
                    .periodic_slack(slack)
                    .build()
                    .unwrap(),
            ),
        ];
        for timer in &timers {
            let runs = Arc::new(AtomicU32::new(0));
            let counted = runs.clone();
            let tick = timer
                .schedule_at_fixed_rate(
                    Duration::from_millis(1),
                    Duration::from_millis(1),
                    move || {
                        counted.fetch_add(1, SeqCst);
                    },
                )
                .unwrap();
            clock.advance(Duration::from_millis(2));
            assert_eq!(runs.load(SeqCst), 2, "{slack:?}");
            tick.cancel();
        }
    }
}

/// A periodic task due at once runs without an advance of virtual time,
/// even while the driver waits, for a signal, for a deadline within the
/// task's slack.
#[test]
fn a_periodic_task_due_at_once_runs_while_the_driver_waits_within_its_slack() {
    let clock = ManualClock::new();
    let timers: [Box<dyn Scheduler>; 2] = [
        boxed(HeapTimer::builder().clock(clock.clone()).build().unwrap()),
        boxed(
            ScheduledThreadPool::builder()
                .clock(clock.clone())
                .pool_size(2)
                .build()
                .unwrap(),
        ),
    ];
    for timer in &timers {
        let soon = timer.schedule(Duration::from_micros(30), || ()).unwrap();
        clock.settle();
        let (ran, first_run) = std::sync::mpsc::channel();
        let tick = timer
            .schedule_at_fixed_rate(Duration::ZERO, Duration::from_secs(1), move || {
                let _ = ran.send(());
            })
            .unwrap();
        first_run
            .recv_timeout(Duration::from_secs(30))
            .expect("the first run, due at once");
        tick.cancel();
        soon.handle().cancel();
    }
}

/// The timer slack Linux applies to the calling thread.
fn slack_of_this_thread() -> Option<u64> {
    #[cfg(target_os = "linux")]
    return nix::sys::prctl::get_timerslack().ok().map(|ns| ns as u64);
    #[cfg(not(target_os = "linux"))]
    None
}

/// The edges of every range are accepted and work as set: nothing is
/// rounded except the hashed wheel's size, up to a power of two.
#[test]
fn the_edges_of_every_range_are_accepted_as_set() {
    for (tick, buckets) in [
        (MIN_TICK, 1),
        (Duration::from_millis(1), MAX_WHEEL_SIZE),
        (MIN_TICK, 300),
    ] {
        let clock = ManualClock::new();
        let timer = HashedWheelTimer::builder()
            .clock(clock.clone())
            .tick(tick)
            .wheel_size(buckets)
            .build()
            .unwrap();
        assert_eq!(timer.tick(), tick);
        assert_eq!(timer.wheel_size(), buckets.next_power_of_two());
        fires_on_time(&timer, &clock, tick);
    }
    for (tick, size) in [
        (Duration::from_nanos(1), 2),
        (Duration::from_millis(1), MAX_BUCKETS),
    ] {
        let clock = ManualClock::new();
        let timer = HierarchicalWheelTimer::builder()
            .clock(clock.clone())
            .tick(tick)
            .wheel_size(size)
            .executor(Executor::inline())
            .build()
            .unwrap();
        assert_eq!(timer.tick(), tick);
        fires_on_time(&timer, &clock, tick);
    }
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .clock(clock.clone())
        .pool_size(1)
        .pending_limit(1)
        .build()
        .unwrap();
    fires_on_time(&pool, &clock, Duration::ZERO);
}
