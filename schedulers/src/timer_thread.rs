//! The one timer thread of `HeapTimer`, `HashedWheelTimer` and
//! `HierarchicalWheelTimer` (`java.util.Timer`'s `TimerThread`, Netty's
//! `Worker`, Kafka's reaper): sleep until the queue's next deadline, collect
//! what came due, run it inline or hand it to the executor, repeat.
//!
//! Inline, each run costs one lock round trip: finishing a run and claiming
//! the next share one critical section, and the task is claimed just before
//! it starts, so a task waiting behind a slow one can still be cancelled.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::NEVER;
use crate::error::Error;
use crate::shared::Shared;
use crate::task::{self, Ran};

/// Starts the timer thread of `shared`.
///
/// # Errors
///
/// [`Error::is_thread_spawn`](crate::Error::is_thread_spawn) if the
/// operating system refuses to start a thread.
pub(crate) fn spawn(shared: &Arc<Shared>, name: &str, spin: Duration) -> Result<(), Error> {
    shared.thread_started(&mut shared.lock());
    let thread_shared = shared.clone();
    if let Err(e) = crate::builder::spawn(name.to_owned(), move || main_loop(thread_shared, spin)) {
        shared.thread_exited(shared.lock());
        return Err(e);
    }
    Ok(())
}

fn main_loop(shared: Arc<Shared>, spin: Duration) {
    shared.on_driver_thread();
    let inline = shared.executor.is_inline();
    let mut inner = shared.lock();
    let mut finished: Option<(crate::core::Key, u64, Ran)> = None;
    loop {
        if let Some((key, scheduled, ran)) = finished.take() {
            shared.finish(&mut inner, key, scheduled, ran);
        }
        inner = shared.bury(inner);
        shared.collect_due(&mut inner, shared.now());
        if inline {
            if let Some(claimed) = shared.claim_next(&mut inner) {
                drop(inner);
                let ran = task::run(claimed.body);
                finished = Some((claimed.key, claimed.scheduled, ran));
                inner = shared.lock();
                continue;
            }
        } else {
            while let Some(e) = inner.ready.pop_front() {
                shared.hand_off(&mut inner, e);
            }
        }
        if shared.may_exit(&mut inner) {
            break;
        }
        shared.drop_dead_if_idle(&mut inner);
        let next = shared.next_wake(&inner);
        if let Some(deadline) = next.filter(|_| !spin.is_zero()) {
            let left = shared
                .timebase
                .instant(deadline)
                .and_then(|at| shared.clock.wait_for(at));
            if left.is_some_and(|left| left <= spin) {
                // Close enough: spin through the rest instead of sleeping
                // through a timed wait's wake-up latency.
                drop(inner);
                while shared.now() < deadline {
                    std::hint::spin_loop();
                }
                inner = shared.lock();
                continue;
            }
        }
        let sleep_until = next.map(|d| match spin.is_zero() {
            true => d,
            false => d.saturating_sub(crate::clock::nanos(spin)),
        });
        inner = shared.wait(inner, sleep_until, sleep_until.unwrap_or(NEVER), true);
    }
    shared.thread_exited(inner);
}
