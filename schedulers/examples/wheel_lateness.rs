//! How late a `HashedWheelTimer` fires on the real clock, and what its
//! worker costs an idle process.
//!
//! ```text
//! cargo run --release -p schedulers --example wheel_lateness -- [TIMERS] [TICK_US] [wheel|heap] [FAR] [SLOTS]
//! ```
//!
//! 1. Lateness: schedules TIMERS (default 100 000) one-shot timers with
//!    delays spread uniformly over 0.2 to 2.2 s (so none is due while they
//!    are being scheduled) on a wheel with a TICK_US tick
//!    (default 1000 µs), each recording how long after its deadline it
//!    started; prints p50, p99, p99.9 and the maximum. With `heap`, the
//!    same load on a `HeapTimer`, for a baseline on the same machine.
//! 2. Idle cost: the CPU time the process uses over 5 s of real time with
//!    no timer pending, with one, then with FAR (default 100 000) timers
//!    pending 1 to 2 hours out on a wheel of SLOTS (default 16 384) slots
//!    (the worker then wakes every tick and reads the timers of one slot),
//!    from `/proc/self/stat`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedulers::{HashedWheelTimer, HeapTimer, Scheduler, SchedulerExt};

fn main() {
    let mut args = std::env::args().skip(1);
    let timers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let tick_us: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let tick = Duration::from_micros(tick_us);

    let heap = args.next().as_deref() == Some("heap");
    let far: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let slots: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(16_384);
    let timer: Box<dyn Scheduler> = if heap {
        Box::new(HeapTimer::new().expect("start the scheduler"))
    } else {
        Box::new(
            HashedWheelTimer::builder()
                .tick(tick)
                .wheel_size(slots)
                .build()
                .expect("start the scheduler"),
        )
    };
    let late: Arc<Vec<AtomicU64>> =
        Arc::new((0..timers).map(|_| AtomicU64::new(u64::MAX)).collect());
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let start = now();
    for i in 0..timers {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = Duration::from_micros(200_000 + rng % 2_000_000);
        let due = now() + delay;
        let late = late.clone();
        timer
            .schedule(delay, move || {
                late[i].store(
                    now().saturating_duration_since(due).as_nanos() as u64,
                    Relaxed,
                )
            })
            .expect("schedule");
    }
    let scheduled_in = now().duration_since(start);
    while timer.metrics().pending > 0 {
        sleep(Duration::from_millis(50));
    }
    let mut ns: Vec<u64> = late.iter().map(|a| a.load(Relaxed)).collect();
    ns.sort_unstable();
    let pct = |p: f64| ns[((ns.len() - 1) as f64 * p) as usize] as f64 / 1000.0;
    let bound = tick.as_nanos() as u64 + 100_000;
    let within = ns.iter().filter(|&&n| n <= bound).count() as f64 / ns.len() as f64;
    println!(
        "lateness of {}, {timers} timers over 2 s, tick {tick:?} (scheduled in {scheduled_in:?}): \
         p50 {:.0} us, p90 {:.0} us, p99 {:.0} us, p99.9 {:.0} us, max {:.0} us; {:.2} % within tick + 100 us",
        if heap { "HeapTimer" } else { "HashedWheelTimer" },
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(0.999),
        pct(1.0),
        within * 100.0
    );
    timer.shutdown();
    drop(timer);

    let idle = HashedWheelTimer::builder()
        .tick(tick)
        .wheel_size(slots)
        .build()
        .expect("start the scheduler");
    let cpu = cpu_over(Duration::from_secs(5));
    println!("idle cost, nothing pending: {:.2} % of a core", cpu * 100.0);
    idle.schedule(Duration::from_secs(3600), || ())
        .expect("schedule");
    let cpu = cpu_over(Duration::from_secs(5));
    println!(
        "idle cost, 1 timer pending 1 h out (tick {tick:?}): {:.2} % of a core",
        cpu * 100.0
    );
    for i in 1..far {
        let delay = Duration::from_secs(3600)
            + Duration::from_micros((i as u64 * 7_919_993) % 3_600_000_000);
        idle.schedule(delay, || ()).expect("schedule");
    }
    sleep(Duration::from_millis(200));
    let cpu = cpu_over(Duration::from_secs(5));
    println!(
        "idle cost, {far} timers pending 1 to 2 h out (tick {tick:?}, {} slots): {:.2} % of a core",
        idle.wheel_size(),
        cpu * 100.0
    );
    let _ = idle.shutdown_now();
}

#[allow(clippy::disallowed_methods)] // a benchmark reads real time
fn now() -> Instant {
    Instant::now()
}

#[allow(clippy::disallowed_methods)] // a benchmark waits in real time
fn sleep(d: Duration) {
    std::thread::sleep(d);
}

/// The fraction of one core the process used over `span` of real time.
fn cpu_over(span: Duration) -> f64 {
    let (c0, t0) = (cpu_ticks(), now());
    sleep(span);
    let (c1, t1) = (cpu_ticks(), now());
    (c1 - c0) as f64 / 100.0 / t1.duration_since(t0).as_secs_f64()
}

/// utime + stime of this process, in clock ticks (1/100 s on Linux).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    get(11) + get(12) // fields 14 and 15 of the line
}
