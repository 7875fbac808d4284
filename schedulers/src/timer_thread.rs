//! The one timer thread of `HeapTimer`, `HashedWheelTimer` and
//! `HierarchicalWheelTimer` (`java.util.Timer`'s `TimerThread`, Netty's
//! `Worker`, Kafka's reaper): sleep until the queue's next deadline, collect
//! what came due, run it inline or hand it to the executor, repeat.
//!
//! Inline, what came due runs in batches (see `Shared::run_taken`): one lock
//! round trip per batch, one CAS per task to claim it just before it starts,
//! so a task waiting behind a slow one can still be cancelled. On an
//! executor, what came due goes over as one batch with a job per task, each
//! job running the next task no job has started (see `Shared::hand_off`).

use std::sync::Arc;
use std::time::Duration;

use crate::clock::NEVER;
use crate::error::Error;
use crate::shared::{Shared, MOVES_PER_LOOK};

/// Due keys the timer thread takes into one batch: a burst of a million
/// runs in batches that stay in cache, starting with the first thousand,
/// instead of waiting for one batch of all of them (written to tens of
/// megabytes of fresh memory, a page fault every 4 KiB, and kept after).
const INLINE_BATCH: usize = 1024;

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
    let mut driver = shared.lock();
    loop {
        shared.intake(&mut driver);
        driver = shared.bury(driver);
        shared.collect_due(&mut driver, shared.now());
        if inline {
            if let Some(batch) = shared.take_batch(&mut driver, INLINE_BATCH, false) {
                drop(driver);
                driver = shared.run_taken(batch).0;
                continue;
            }
        } else {
            driver = shared.hand_off(driver);
        }
        // Resets after what is due, a few at a time (see `apply_moves`).
        if shared.apply_moves(&mut driver, MOVES_PER_LOOK) {
            continue;
        }
        if shared.may_exit(&mut driver) {
            break;
        }
        shared.drop_dead_if_idle(&mut driver);
        let next = shared.next_wake(&driver);
        if let Some(deadline) = next.filter(|_| !spin.is_zero()) {
            let left = shared
                .timebase
                .instant(deadline)
                .and_then(|at| shared.clock.wait_for(at));
            if left.is_some_and(|left| left <= spin) {
                // Close enough: spin through the rest instead of sleeping
                // through a timed wait's wake-up latency.
                drop(driver);
                while shared.now() < deadline {
                    std::hint::spin_loop();
                }
                driver = shared.lock();
                continue;
            }
        }
        let sleep_until = next.map(|d| match spin.is_zero() {
            true => d,
            false => d.saturating_sub(crate::clock::nanos(spin)),
        });
        driver = shared.wait(driver, sleep_until, sleep_until.unwrap_or(NEVER), true);
    }
    shared.thread_exited(driver);
}
