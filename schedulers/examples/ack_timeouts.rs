//! An IM server's message acknowledgements (seed 004): every message sent
//! arms a resend timeout on a hashed wheel; an ack cancels it; a timeout
//! that fires resends the message and arms the next, up to three tries.
//!
//! ```text
//! cargo run -p schedulers --example ack_timeouts
//! ```

use std::collections::HashMap;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers::{HashedWheelTimer, Scheduler, Task, TaskHandle};

/// What the server keeps per unacknowledged message: its timeout.
type Unacked = Arc<Mutex<HashMap<u64, TaskHandle>>>;

const ACK_TIMEOUT: Duration = Duration::from_millis(20);

/// Sends (or resends) `id` and arms its ack timeout; a message given up
/// on is reported on `failed`.
fn send(
    timer: &Arc<HashedWheelTimer>,
    unacked: &Unacked,
    failed: &Sender<u64>,
    id: u64,
    attempt: u32,
) {
    // On the wire it would go here.
    let (t, u, f) = (Arc::downgrade(timer), unacked.clone(), failed.clone());
    let timeout = Task::once(move || match t.upgrade() {
        Some(timer) if attempt < 3 => send(&timer, &u, &f, id, attempt + 1),
        _ => {
            u.lock().unwrap().remove(&id);
            let _ = f.send(id);
        }
    });
    match timer.submit(ACK_TIMEOUT, timeout) {
        Ok(handle) => {
            unacked.lock().unwrap().insert(id, handle);
        }
        // Shutting down: the message is reported as failed at once.
        Err(rejected) => {
            println!("message {id}: {}", rejected.error());
            let _ = failed.send(id);
        }
    }
}

/// An ack arrived: the timeout is cancelled, and its closure dropped.
fn ack(unacked: &Unacked, id: u64) -> bool {
    let handle = unacked.lock().unwrap().remove(&id);
    handle.is_some_and(|h| h.cancel())
}

fn main() -> Result<(), schedulers::Error> {
    let timer = Arc::new(HashedWheelTimer::builder().thread_name("acks").build()?);
    let unacked: Unacked = Arc::default();
    let (failed, failures) = channel();
    for id in 0..1_000 {
        send(&timer, &unacked, &failed, id, 1);
    }
    // Every message but one in a hundred is acknowledged in time.
    let acked = (0..1_000)
        .filter(|id| id % 100 != 7 && ack(&unacked, *id))
        .count();
    println!("acked in time: {acked}");
    // The others are resent twice, then given up (3 × 20 ms).
    let given_up: Vec<u64> = failures.iter().take(10).collect();
    println!("given up after 3 tries: {given_up:?}");
    let metrics = timer.metrics();
    println!(
        "fired {} timeouts, cancelled {}",
        metrics.fired, metrics.cancelled
    );
    assert_eq!(acked, 990);
    assert_eq!(metrics.fired, 30); // 10 messages × 3 tries
    timer.shutdown();
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
