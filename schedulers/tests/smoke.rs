//! A few real-time smoke tests, with generous bounds: the schedulers on the
//! system clock, with real waits. Everything about timing precision is
//! tested in virtual time or measured by the workbench, not here.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers::{Clock, HeapTimer, Scheduler, SchedulerExt, SystemClock};

#[test]
fn heap_timer_fires_on_the_system_clock_never_early() {
    let timer = HeapTimer::new().unwrap();
    let clock = SystemClock;
    let late = Arc::new(Mutex::new(Vec::new()));
    let mut futures = Vec::new();
    for i in 0..100u64 {
        let delay = Duration::from_micros(i * 500);
        let due = clock.now() + delay;
        let late = late.clone();
        futures.push(
            timer
                .schedule(delay, move || {
                    let now = SystemClock.now();
                    assert!(now >= due, "fired early");
                    late.lock().unwrap().push(now - due);
                })
                .unwrap(),
        );
    }
    for f in futures {
        f.get_timeout(Duration::from_secs(30)).unwrap();
    }
    let late = late.lock().unwrap();
    assert_eq!(late.len(), 100);
    // Generous: a loaded CI machine can stall a thread for a while.
    assert!(late.iter().all(|l| *l < Duration::from_secs(5)), "{late:?}");
}

#[test]
fn heap_timer_periodic_and_shutdown_on_the_system_clock() {
    let timer = HeapTimer::new().unwrap();
    let runs = Arc::new(Mutex::new(0u32));
    let r = runs.clone();
    let handle = timer
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(2), move || {
            *r.lock().unwrap() += 1
        })
        .unwrap();
    let marker = timer.schedule(Duration::from_millis(50), || ()).unwrap();
    marker.get_timeout(Duration::from_secs(30)).unwrap();
    assert!(handle.cancel());
    let n = *runs.lock().unwrap();
    assert!(n >= 2, "only {n} runs in 50 ms or more");
    timer.shutdown();
    assert!(timer.await_termination(Duration::from_secs(30)));
    assert!(timer.is_terminated());
}

/// A handle is two words (the scheduler and a slot), and every public type
/// that crosses threads does.
#[test]
fn handles_are_small_and_errors_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    assert_eq!(std::mem::size_of::<schedulers::TaskHandle>(), 16);
    send_sync::<schedulers::TaskHandle>();
    send_sync::<schedulers::ScheduledFuture<u8>>();
    send_sync::<schedulers::Error>();
    send_sync::<schedulers::Rejected>();
    send_sync::<schedulers::Executor>();
}
