//! HierarchicalWheelTimer against the conformance suite: exact by default
//! (a granularity of zero), on a pool of one worker (Kafka's way; the
//! busy-worker cases keep it busy while tasks come due behind it), inline
//! on deep wheels, on a pool of four, and in Kafka's tick mode (one tick
//! late at most).

use std::time::Duration;

use schedulers::{Executor, HierarchicalWheelTimer};

const TICK: Duration = Duration::from_millis(1);

crate::conformance!(conformance_busy_single_worker, Duration::ZERO, |o| {
    let mut b = HierarchicalWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .tick(TICK)
        .executor(Executor::pool(1).unwrap());
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

// The whole contract again on a deep hierarchy (2 buckets per wheel, so a
// 1 h timer cascades through ~22 levels) with tasks run inline on the driver.
crate::conformance!(conformance_tiny_wheels_inline, Duration::ZERO, |o| {
    let mut b = HierarchicalWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .tick(TICK)
        .wheel_size(2)
        .executor(Executor::inline());
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

crate::conformance_multi_worker!(conformance_four_workers, TICK, |o| {
    let mut b = HierarchicalWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .tick(TICK)
        .executor(Executor::pool(4).unwrap());
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

crate::conformance!(conformance_tick_mode, TICK, |o| {
    let mut b = HierarchicalWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .precise(false)
        .tick(TICK);
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

mod on_the_system_clock {
    //! Real-time smoke tests with generous bounds: precision is tested in
    //! virtual time and measured by the workbench, not here.

    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::Duration;

    use schedulers::{Clock, HierarchicalWheelTimer, Scheduler, SchedulerExt, SystemClock};

    #[test]
    fn fires_never_early_on_the_worker_pool() {
        let timer = HierarchicalWheelTimer::new().unwrap();
        let mut futures = Vec::new();
        for i in 0..100u64 {
            let delay = Duration::from_micros(i * 500);
            let due = SystemClock.now() + delay;
            futures.push(
                timer
                    .schedule(delay, move || SystemClock.now() >= due)
                    .unwrap(),
            );
        }
        for f in futures {
            assert!(f.get().unwrap(), "fired early");
        }
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let periodic = timer
            .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(2), move || {
                r.fetch_add(1, SeqCst);
            })
            .unwrap();
        while runs.load(SeqCst) < 5 {
            std::thread::yield_now();
        }
        assert!(periodic.cancel());
        // A far timer keeps nothing alive after shutdown_now.
        timer.schedule(Duration::from_secs(3600), || ()).unwrap();
        assert_eq!(timer.shutdown_now().len(), 1);
        assert!(timer.await_termination(Duration::from_secs(30)));
    }

    /// The driver sleeps until the bucket an hour away; a submit into an
    /// earlier bucket must wake it (or the task would wait an hour).
    #[test]
    fn an_earlier_submit_wakes_the_sleeping_driver() {
        let timer = HierarchicalWheelTimer::new().unwrap();
        timer.schedule(Duration::from_secs(3600), || ()).unwrap();
        // Once this has run, the driver has gone back to sleep until the hour.
        timer
            .schedule(Duration::ZERO, || ())
            .unwrap()
            .get()
            .unwrap();
        for ms in [50, 5, 1] {
            let soon = timer.schedule(Duration::from_millis(ms), || ()).unwrap();
            soon.handle()
                .wait_timeout(Duration::from_secs(30))
                .expect("the driver was not woken");
        }
        assert_eq!(timer.metrics().pending, 1);
    }
}
