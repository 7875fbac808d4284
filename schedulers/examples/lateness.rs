//! How late timers fire on the real clock: `COUNT` no-op timers with delays
//! uniform over `SPREAD_MS`, each recording (into preallocated memory) how
//! long after its deadline it started. Prints percentiles and the CPU time
//! the process used.
//!
//! ```text
//! cargo run --release -p schedulers --example lateness -- [COUNT] [SPREAD_MS] [SCHEDULER...]
//! cargo run --release -p schedulers --example lateness -- 100000 2000 heap heap-spin
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use schedulers::{
    Clock, Executor, HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool,
    Scheduler, SchedulerExt, SystemClock,
};

fn make(name: &str) -> Option<Box<dyn Scheduler>> {
    Some(match name {
        "heap" => Box::new(HeapTimer::new().expect("start the scheduler")),
        "heap-spin" => Box::new(
            HeapTimer::builder()
                .spin(Duration::from_micros(60))
                .build()
                .expect("start the scheduler"),
        ),
        "stpe" => Box::new(ScheduledThreadPool::new(2).expect("start the scheduler")),
        "wheel" => Box::new(HashedWheelTimer::new().expect("start the scheduler")),
        "hier" => Box::new(HierarchicalWheelTimer::new().expect("start the scheduler")),
        // Tasks on the driver thread: no hand-off to a worker.
        "hier-inline" => Box::new(
            HierarchicalWheelTimer::builder()
                .executor(Executor::inline())
                .build()
                .expect("start the scheduler"),
        ),
        _ => return None,
    })
}

const ALL: &[&str] = &["heap", "heap-spin", "stpe", "wheel", "hier", "hier-inline"];

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let spread_ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = ALL.iter().map(|s| s.to_string()).collect();
    }
    println!(
        "{:<12} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "scheduler", "timers", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs", "cpu ms"
    );
    for name in &names {
        let Some(s) = make(name) else {
            eprintln!("unknown scheduler {name:?}; known: {}", ALL.join(", "));
            std::process::exit(2);
        };
        let lateness: Arc<Vec<AtomicU64>> =
            Arc::new((0..count).map(|_| AtomicU64::new(u64::MAX)).collect());
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let cpu_before = cpu_ms();
        let mut last = None;
        for i in 0..count {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let delay = Duration::from_micros(rng % (spread_ms * 1000));
            let due = SystemClock.now() + delay;
            let slots = lateness.clone();
            last = Some(
                s.schedule(delay, move || {
                    let late = SystemClock.now().saturating_duration_since(due);
                    slots[i].store(late.as_nanos() as u64, Relaxed);
                })
                .expect("schedule"),
            );
        }
        drop(last);
        s.shutdown();
        s.await_termination(Duration::from_secs(spread_ms / 1000 + 60));
        let cpu = cpu_ms() - cpu_before;
        let mut ns: Vec<u64> = lateness.iter().map(|a| a.load(Relaxed)).collect();
        ns.sort_unstable();
        assert!(ns.iter().all(|&n| n != u64::MAX), "a timer never fired");
        let pct = |p: f64| ns[((ns.len() as f64 * p) as usize).min(ns.len() - 1)] as f64 / 1000.0;
        println!(
            "{:<12} {:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10}",
            name,
            count,
            pct(0.5),
            pct(0.9),
            pct(0.99),
            pct(0.999),
            *ns.last().unwrap() as f64 / 1000.0,
            cpu
        );
    }
}

/// User + system CPU of this process, from /proc/self/stat (clock ticks of 10 ms).
fn cpu_ms() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let after = s.rsplit(')').next()?.split_whitespace().collect::<Vec<_>>();
            let utime: u64 = after.get(11)?.parse().ok()?;
            let stime: u64 = after.get(12)?.parse().ok()?;
            Some((utime + stime) * 10)
        })
        .unwrap_or(0)
}
