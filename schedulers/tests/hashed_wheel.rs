//! HashedWheelTimer against the conformance suite, with a granularity of
//! one tick: with tasks run inline on the worker (Netty's way), on a pool of
//! one worker (the busy-worker cases keep it busy while tasks come due
//! behind it), and on a pool of four.

use std::time::Duration;

use schedulers::{Executor, HashedWheelTimer};

/// The tick every instance below uses: the granularity of the suite.
const TICK: Duration = Duration::from_millis(1);

crate::conformance!(conformance, TICK, |o| {
    let mut b = HashedWheelTimer::builder()
        .clock(o.clock)
        .tick(TICK)
        .wheel_size(512);
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});

crate::conformance!(conformance_busy_single_worker, TICK, |o| {
    let mut b = HashedWheelTimer::builder()
        .clock(o.clock)
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
        .tick(TICK)
        .wheel_size(64)
        .executor(Executor::pool(4).unwrap());
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});
