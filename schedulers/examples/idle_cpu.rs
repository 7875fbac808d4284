//! The CPU an idle scheduler burns while many long timers wait: schedule
//! 10⁵ timers due in one to two hours, then sleep and read how much CPU the
//! process used meanwhile (summed over its threads, from
//! `/proc/self/task/*/schedstat`, in nanoseconds).
//!
//! ```text
//! cargo run --release -p schedulers --example idle_cpu -- [SECONDS] [PENDING] [SCHEDULER...]
//! cargo run --release -p schedulers --example idle_cpu -- 10 100000 heap hier
//! ```
//!
//! A timer that ticks (a flat wheel at 1 ms) wakes a thousand times a
//! second whatever it holds; one that sleeps until its next deadline wakes
//! only when something is due. Linux only (prints nothing useful elsewhere).

use std::time::Duration;

use schedulers::{
    HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool, Scheduler,
    SchedulerExt,
};

/// Every scheduler the probe knows, by short name.
fn make(name: &str) -> Option<Box<dyn Scheduler>> {
    Some(match name {
        "heap" => Box::new(HeapTimer::new().expect("start the scheduler")),
        "stpe" => Box::new(ScheduledThreadPool::new(2).expect("start the scheduler")),
        "wheel" => Box::new(HashedWheelTimer::new().expect("start the scheduler")),
        "hier" => Box::new(HierarchicalWheelTimer::new().expect("start the scheduler")),
        _ => return None,
    })
}

const ALL: &[&str] = &["heap", "stpe", "wheel", "hier"];

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let pending: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = ALL.iter().map(|s| s.to_string()).collect();
    }
    println!(
        "{:<12} {:>10} {:>10} {:>14} {:>12}",
        "scheduler", "pending", "seconds", "cpu ms", "cpu %"
    );
    for name in &names {
        let Some(s) = make(name) else {
            eprintln!("unknown scheduler {name:?}; known: {}", ALL.join(", "));
            std::process::exit(2);
        };
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let handles: Vec<_> = (0..pending)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let delay = Duration::from_secs(3600) + Duration::from_micros(rng % 3_600_000_000);
                s.schedule(delay, || ()).expect("schedule")
            })
            .collect();
        // Let the scheduler settle after the burst of submissions.
        sleep(Duration::from_secs(1));
        let before = cpu_ns();
        sleep(Duration::from_secs(seconds));
        let used = cpu_ns().saturating_sub(before);
        let ms = used as f64 / 1e6;
        println!(
            "{:<12} {:>10} {:>10} {:>14.3} {:>11.4}%",
            name,
            pending,
            seconds,
            ms,
            ms / (seconds as f64 * 1000.0) * 100.0
        );
        drop(handles);
        s.shutdown_now();
    }
}

#[allow(clippy::disallowed_methods)] // the probe measures real idle time
fn sleep(d: Duration) {
    std::thread::sleep(d);
}

/// CPU time of every live thread of this process, in nanoseconds.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| {
            s.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}
