//! How late timers fire on the system clock: N no-op one-shot timers due
//! uniformly over a window, lateness (start − deadline) percentiles.
//!
//! ```text
//! cargo run --release -p schedulers --example lateness -- [TIMERS] [WINDOW_MS] [SCHEDULER...]
//! cargo run --release -p schedulers --example lateness -- 100000 2000 heap stpe
//! ```
//!
//! A quick probe, like `cost`; the workbench is the full measurement.
//! `stpe` is a `ScheduledThreadPool` with 2 workers. Deadlines come from a
//! fixed seed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedulers::{Clock, HeapTimer, ScheduledThreadPool, Scheduler, SchedulerExt, SystemClock};

fn make(name: &str) -> Option<Box<dyn Scheduler>> {
    Some(match name {
        "heap" => Box::new(HeapTimer::new()),
        "stpe" => Box::new(ScheduledThreadPool::new(2)),
        _ => return None,
    })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let timers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let window_ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = vec!["heap".into(), "stpe".into()];
    }
    println!("{:<8} {:>8} {:>10} {:>10} {:>10} {:>10}", "sched", "timers", "p50 us", "p90 us", "p99 us", "max us");
    for name in &names {
        let Some(s) = make(name) else {
            eprintln!("unknown scheduler {name:?}; known: heap, stpe");
            std::process::exit(2);
        };
        let late = Arc::new(Mutex::new(Vec::with_capacity(timers)));
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let start = SystemClock.now();
        let mut futures = Vec::with_capacity(timers);
        for _ in 0..timers {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let at = start + Duration::from_micros(100_000 + rng % (window_ms * 1000));
            let delay = at.saturating_duration_since(SystemClock.now());
            let due: Instant = SystemClock.now() + delay;
            let late = late.clone();
            futures.push(
                s.schedule(delay, move || {
                    let l = SystemClock.now().saturating_duration_since(due);
                    late.lock().unwrap_or_else(|e| e.into_inner()).push(l);
                })
                .expect("schedule"),
            );
        }
        for f in futures {
            f.get().expect("ran");
        }
        let mut l = late.lock().unwrap_or_else(|e| e.into_inner()).clone();
        l.sort();
        let pct = |p: f64| l[((l.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e6;
        println!(
            "{:<8} {:>8} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            name,
            l.len(),
            pct(0.5),
            pct(0.9),
            pct(0.99),
            pct(1.0)
        );
        s.shutdown();
    }
}
