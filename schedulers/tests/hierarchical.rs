//! HierarchicalWheelTimer against the conformance suite: a 1 ms tick, so
//! tasks may start up to one tick late, on a single worker so that the start
//! order the FIFO case observes is the dispatch order.

use std::time::Duration;

use schedulers::{Executor, HierarchicalWheelTimer};

crate::conformance!(conformance, Duration::from_millis(1), |o| {
    let mut b = HierarchicalWheelTimer::builder()
        .clock(o.clock)
        .tick(Duration::from_millis(1))
        .executor(Executor::pool(1));
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build())
});
