//! HeapTimer against the conformance suite: tasks run inline on the timer
//! thread, at the exact deadline in virtual time.

use std::time::Duration;

use schedulers::HeapTimer;

crate::conformance!(conformance, Duration::ZERO, |o| {
    let mut b = HeapTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy);
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
});
