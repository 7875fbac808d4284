//! A `ScheduledFuture` awaited from two executors: tokio's runtime and the
//! `futures` crate's `block_on`. Time is virtual: the test thread advances
//! the clock while the future waits on another thread.

use std::time::Duration;

use schedulers::{HeapTimer, ManualClock, SchedulerExt};

#[test]
fn awaited_on_tokio() {
    let clock = ManualClock::new();
    let timer = HeapTimer::builder().clock(clock.clone()).build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let answer = timer.schedule(Duration::from_secs(5), || 6 * 7).unwrap();
    let waiting = rt.spawn(answer);
    let cancelled = timer.schedule(Duration::from_secs(5), || 0).unwrap();
    let handle = cancelled.handle().clone();
    let cancelled = rt.spawn(cancelled);
    assert!(handle.cancel());
    clock.advance(Duration::from_secs(5));
    assert_eq!(rt.block_on(waiting).unwrap().unwrap(), 42);
    assert!(rt.block_on(cancelled).unwrap().unwrap_err().is_cancelled());
}

#[test]
fn awaited_with_futures_block_on() {
    let clock = ManualClock::new();
    let timer = HeapTimer::builder().clock(clock.clone()).build().unwrap();
    let value = timer.schedule(Duration::from_secs(1), || "done").unwrap();
    let panics = timer
        .schedule(Duration::from_secs(2), || -> u8 { panic!("boom") })
        .unwrap();
    let advancer = std::thread::spawn(move || {
        clock.advance(Duration::from_secs(1));
        clock.advance(Duration::from_secs(1));
    });
    assert_eq!(futures::executor::block_on(value).unwrap(), "done");
    let err = futures::executor::block_on(panics).unwrap_err();
    assert_eq!(err.panic_message(), Some("boom"));
    advancer.join().unwrap();
}

#[test]
fn a_future_polled_after_its_task_ended_is_ready_at_once() {
    let clock = ManualClock::new();
    let timer = HeapTimer::builder().clock(clock.clone()).build().unwrap();
    let value = timer.schedule(Duration::ZERO, || 7).unwrap();
    clock.advance(Duration::ZERO);
    assert_eq!(futures::executor::block_on(value).unwrap(), 7);
}
