//! Connection idle timeouts: each connection has a timer that closes it
//! after 30 ms without traffic; every heartbeat pushes it out again with
//! `reset` (go-zero's `MoveTimer`, tokio's `Sleep::reset`), which is O(1) on
//! a wheel and allocates nothing.
//!
//! ```text
//! cargo run -p schedulers --example idle_connections
//! ```

use std::sync::mpsc::channel;
use std::time::Duration;

use schedulers::{HierarchicalWheelTimer, Scheduler, Task};

const IDLE: Duration = Duration::from_millis(30);

fn main() -> Result<(), schedulers::Error> {
    let timer = HierarchicalWheelTimer::new()?;
    let (closed, closed_rx) = channel();
    let connections: Vec<_> = (0..100)
        .map(|conn| {
            let closed = closed.clone();
            let close = Task::once(move || closed.send(conn).unwrap());
            timer.submit(IDLE, close).expect("the timer runs")
        })
        .collect();

    // Even-numbered connections keep sending heartbeats for a while; the
    // odd ones are silent and idle out after 30 ms.
    let mut closed_early = Vec::new();
    for _ in 0..5 {
        heartbeat_interval();
        for idle_timeout in connections.iter().step_by(2) {
            // `false`: it already fired (only if this thread stalled for
            // longer than the idle timeout), so the connection is gone.
            if !idle_timeout.reset(IDLE).unwrap() {
                println!("a busy connection idled out: the sender stalled");
            }
        }
        closed_early.extend(closed_rx.try_iter());
    }
    let odd = closed_early.iter().filter(|conn| *conn % 2 == 1).count();
    println!("closed while heartbeats went on: {odd} silent connections");

    // The even ones go quiet too; they close 30 ms after their last beat.
    let mut all: Vec<u32> = closed_early;
    all.extend(closed_rx.iter().take(100 - all.len()));
    all.sort_unstable();
    assert_eq!(
        all,
        (0..100).collect::<Vec<_>>(),
        "every connection closed once"
    );
    println!("all 100 connections closed after going idle");
    Ok(())
}

/// Time passing between two rounds of traffic.
#[allow(clippy::disallowed_methods)] // an example simulating traffic in real time
fn heartbeat_interval() {
    std::thread::sleep(Duration::from_millis(10));
}

#[test]
fn runs() {
    main().unwrap();
}
