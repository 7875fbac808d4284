//! How late tasks start on the real clock: schedule timers with random
//! delays up to two seconds, record how long after its deadline each one
//! started, and print percentiles.
//!
//! ```text
//! cargo run --release -p schedulers --example lateness -- [TIMERS] [SCHEDULER...]
//! cargo run --release -p schedulers --example lateness -- 2000 heap hier
//! ```
//!
//! A quick probe on a real, possibly busy machine; the workbench is the
//! full measurement.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedulers::{Executor, HeapTimer, HierarchicalWheelTimer, Scheduler, SchedulerExt};

/// Every scheduler the probe knows, by short name.
fn make(name: &str) -> Option<Box<dyn Scheduler>> {
    Some(match name {
        "heap" => Box::new(HeapTimer::new()),
        "hier" => Box::new(HierarchicalWheelTimer::new()),
        // Tasks on the driver thread: no hand-off to a worker.
        "hier-inline" => Box::new(HierarchicalWheelTimer::builder().executor(Executor::inline()).build()),
        _ => return None,
    })
}

const ALL: &[&str] = &["heap", "hier", "hier-inline"];

#[allow(clippy::disallowed_methods)] // a probe of real lateness reads real time
fn now() -> Instant {
    Instant::now()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let timers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = ALL.iter().map(|s| s.to_string()).collect();
    }
    println!("{:<12} {:>8} {:>10} {:>10} {:>10} {:>10}", "scheduler", "timers", "p50 µs", "p90 µs", "p99 µs", "max µs");
    for name in &names {
        let Some(s) = make(name) else {
            eprintln!("unknown scheduler {name:?}; known: {}", ALL.join(", "));
            std::process::exit(2);
        };
        let late = Arc::new(Mutex::new(Vec::with_capacity(timers)));
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let futures: Vec<_> = (0..timers)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let delay = Duration::from_micros(rng % 2_000_000);
                let due = now() + delay;
                let late = late.clone();
                s.schedule(delay, move || {
                    let l = now().saturating_duration_since(due);
                    late.lock().expect("lateness log").push(l.as_nanos() as u64);
                })
                .expect("schedule")
            })
            .collect();
        for f in futures {
            f.wait().expect("task ran");
        }
        let mut late = late.lock().expect("lateness log").clone();
        late.sort_unstable();
        let pct = |p: f64| late[((late.len() as f64 * p) as usize).min(late.len() - 1)] as f64 / 1e3;
        println!(
            "{:<12} {:>8} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            name,
            timers,
            pct(0.5),
            pct(0.9),
            pct(0.99),
            *late.last().unwrap_or(&0) as f64 / 1e3
        );
        s.shutdown();
    }
}
