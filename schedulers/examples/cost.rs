//! What one operation costs at a given number of pending timers, through
//! the public API from an application thread: schedule, cancel and reset in
//! ns/op, and resident memory per pending timer.
//!
//! ```text
//! cargo run --release -p schedulers --example cost -- [PENDING] [SCHEDULER...]
//! cargo run --release -p schedulers --example cost -- 1000000 heap
//! ```
//!
//! A quick probe; the workbench (`cargo run --release -p workbench`) is the
//! full measurement. Timers are due in 1 to 2 hours so none fires while it
//! runs; delays come from a fixed seed.

use std::time::{Duration, Instant};

use schedulers::{
    HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool, Scheduler,
    SchedulerExt, TaskHandle,
};

/// Every scheduler the probe knows, by short name.
fn make(name: &str) -> Option<Box<dyn Scheduler>> {
    Some(match name {
        "heap" => Box::new(HeapTimer::new().expect("start the scheduler")),
        "stpe" => Box::new(ScheduledThreadPool::new(1).expect("start the scheduler")),
        "stpe-roc" => Box::new(
            ScheduledThreadPool::builder()
                .remove_on_cancel(true)
                .build()
                .expect("start the scheduler"),
        ),
        "hier" => Box::new(HierarchicalWheelTimer::new().expect("start the scheduler")),
        "wheel" => Box::new(HashedWheelTimer::new().expect("start the scheduler")),
        _ => return None,
    })
}

const ALL: &[&str] = &["heap", "stpe", "stpe-roc", "wheel", "hier"];

fn main() {
    let mut args = std::env::args().skip(1);
    let pending: usize = match args.next().map(|a| a.parse()) {
        None => 1_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("usage: cost [PENDING] [SCHEDULER...]: bad PENDING: {e}");
            std::process::exit(2);
        }
    };
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = ALL.iter().map(|s| s.to_string()).collect();
    }
    println!(
        "{:<12} {:>10} {:>14} {:>14} {:>14} {:>14}",
        "scheduler", "pending", "schedule ns", "cancel ns", "reset ns", "bytes/timer"
    );
    for name in &names {
        let Some(_) = make(name) else {
            eprintln!("unknown scheduler {name:?}; known: {}", ALL.join(", "));
            std::process::exit(2);
        };
        let r = measure(name, pending);
        println!(
            "{:<12} {:>10} {:>14.1} {:>14.1} {:>14.1} {:>14.1}",
            name, pending, r.schedule_ns, r.cancel_ns, r.reset_ns, r.bytes_per_timer
        );
    }
}

struct Costs {
    schedule_ns: f64,
    cancel_ns: f64,
    reset_ns: f64,
    bytes_per_timer: f64,
}

fn measure(name: &str, n: usize) -> Costs {
    let moves = delays(n, 2);
    let delays = delays(n, 1);

    // A cold first round gives the memory per timer (resident growth) and
    // touches the memory the allocator will reuse, so the timed round below
    // measures a running server, not first page faults.
    let bytes_per_timer = {
        let s = make(name).expect("known scheduler");
        let mut handles: Vec<TaskHandle> = Vec::with_capacity(n);
        let rss_before = rss_bytes();
        for d in &delays {
            handles.push(s.schedule(*d, || ()).expect("schedule").into_handle());
        }
        // The handles vector is the application's, not the scheduler's: its
        // pages are first touched here, so take them back out.
        let handle_bytes = (n * std::mem::size_of::<TaskHandle>()) as u64;
        let bytes = rss_bytes().saturating_sub(rss_before + handle_bytes) as f64 / n as f64;
        handles.iter().for_each(|h| {
            h.cancel();
        });
        s.shutdown_now();
        bytes
    };

    // Schedule n timers, then cancel them all in a random order.
    let s = make(name).expect("known scheduler");
    let mut handles: Vec<TaskHandle> = Vec::with_capacity(n);
    let t = now();
    for d in &delays {
        handles.push(s.schedule(*d, || ()).expect("schedule").into_handle());
    }
    let schedule_ns = per_op(t, n);
    let order = permutation(n, 3);
    let t = now();
    for &i in &order {
        assert!(handles[i].cancel());
    }
    let cancel_ns = per_op(t, n);
    drop(handles);
    s.shutdown_now();
    drop(s);

    // Reset each of n pending timers once, to another random deadline.
    let s = make(name).expect("known scheduler");
    let handles: Vec<TaskHandle> = delays
        .iter()
        .map(|d| s.schedule(*d, || ()).expect("schedule").into_handle())
        .collect();
    let t = now();
    for (h, d) in handles.iter().zip(&moves) {
        assert!(h.reset(*d).expect("reset"));
    }
    let reset_ns = per_op(t, n);
    s.shutdown_now();
    Costs {
        schedule_ns,
        cancel_ns,
        reset_ns,
        bytes_per_timer,
    }
}

#[allow(clippy::disallowed_methods)] // a benchmark reads real time
fn now() -> Instant {
    Instant::now()
}

fn per_op(start: Instant, n: usize) -> f64 {
    now().duration_since(start).as_nanos() as f64 / n.max(1) as f64
}

/// Resident set size from `/proc/self/statm` (0 where unavailable).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Delays uniform over 1 to 2 hours, at microsecond resolution.
fn delays(n: usize, seed: u64) -> Vec<Duration> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
    (0..n)
        .map(|_| Duration::from_secs(3600) + Duration::from_micros(rng.next() % 3_600_000_000))
        .collect()
}

fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ seed);
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        v.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    v
}
