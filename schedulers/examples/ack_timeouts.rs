//! Message acknowledgements with a timeout, the way an IM server uses a timer
//! (seed 004): every message sent arms a timeout; most acks arrive in time
//! and cancel it; the rest fire and trigger a resend.
//!
//! ```text
//! cargo run --release -p schedulers --example ack_timeouts
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedulers::{HeapTimer, Scheduler, SchedulerExt};

fn main() -> Result<(), schedulers::Error> {
    let timer = HeapTimer::builder().thread_name("ack-timeouts").build()?;
    let resends = Arc::new(AtomicU64::new(0));

    // Send 10 000 messages; each gets a 200 ms ack timeout.
    let mut pending = Vec::new();
    for message_id in 0..10_000u64 {
        let resends = resends.clone();
        let timeout = timer.schedule(Duration::from_millis(200), move || {
            // In a real server: put the message back on the wire.
            resends.fetch_add(1, Ordering::Relaxed);
            message_id
        })?;
        pending.push(timeout);
    }

    // 99% of the acks come back in time: each cancels its timeout.
    let mut acked = 0;
    for (message_id, timeout) in pending.iter().enumerate() {
        if message_id % 100 != 0 && timeout.cancel() {
            acked += 1;
        }
    }

    // Wait for the unacknowledged ones to time out.
    let mut timed_out = Vec::new();
    for timeout in pending {
        if !timeout.is_cancelled() {
            timed_out.push(timeout.get()?);
        }
    }
    println!(
        "acked in time: {acked}, timed out and resent: {}",
        timed_out.len()
    );
    println!(
        "first resent messages: {:?}",
        &timed_out[..5.min(timed_out.len())]
    );
    println!("metrics: {:?}", timer.metrics());
    assert_eq!(resends.load(Ordering::Relaxed) as usize, timed_out.len());

    timer.shutdown();
    timer.await_termination(Duration::from_secs(5));
    Ok(())
}
