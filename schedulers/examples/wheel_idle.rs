//! What a hashed wheel costs a server that holds many long timers: a
//! million timers spread evenly over the next hour (278 fire a second), for
//! each wheel size given, in both modes (exact deadlines, the default, and
//! Netty's tick rounding); the worker's wake-ups and the process's CPU (the
//! worker's, since the main thread sleeps) over a window. A bucket holding
//! a timer due this revolution is visited, and its other timers are read
//! again every revolution until they are due: the smaller the ring, the
//! more often. The table in `hashed_wheel`'s module docs comes from this
//! program.
//!
//! ```text
//! cargo run --release -p schedulers --example wheel_idle                 # 1024 4096 16384 65536 buckets, 10 s each
//! cargo run --release -p schedulers --example wheel_idle -- 16384 5     # one size, a 5 s window
//! ```
//!
//! Linux only (CPU time from `/proc/self/stat`). Not run as a test: it
//! measures a machine, for seconds.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use schedulers::{HashedWheelTimer, Scheduler, Task};

const TIMERS: u64 = 1_000_000;

/// What a bucket costs the wheel: its list's two ends (4 B each) and its
/// earliest deadline (8 B), plus a bit of the occupancy map.
const BUCKET_BYTES: usize = 16;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (sizes, window) = match args.as_slice() {
        [] => (vec![1024, 4096, 16_384, 65_536], 10),
        [size, secs] => (vec![size.parse()?], secs.parse()?),
        _ => return Err("usage: wheel_idle [BUCKETS SECONDS]".into()),
    };
    println!("{TIMERS} timers due over the next hour, 1 ms tick, {window} s window each");
    println!(
        "| buckets | mode | revolution | bucket table | fires/s | wake-ups/s | CPU, one core |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (buckets, precise) in sizes.iter().flat_map(|&b| [(b, true), (b, false)]) {
        let timer = HashedWheelTimer::builder()
            .tick(Duration::from_millis(1))
            .wheel_size(buckets)
            .precise(precise)
            .build()?;
        let fired = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..TIMERS)
            .map(|i| {
                let fired = fired.clone();
                // Spread evenly over the hour after the first second.
                let delay = Duration::from_secs(1) + Duration::from_micros(i * 3_600);
                timer.submit(delay, Task::once(move || _ = fired.fetch_add(1, Relaxed)))
            })
            .collect::<Result<_, _>>()?;
        // Let the worker take every timer in before the window opens.
        wait(Duration::from_secs(1));
        let (wakes, cpu, fires) = (timer.driver_wakeups(), cpu_seconds()?, fired.load(Relaxed));
        wait(Duration::from_secs(window));
        let wakes = timer.driver_wakeups() - wakes;
        let (cpu, fires) = (cpu_seconds()? - cpu, fired.load(Relaxed) - fires);
        let revolution = timer.tick() * u32::try_from(buckets)?;
        println!(
            "| {buckets} | {} | {:.0} s | {} KB | {:.0} | {:.0} | {:.1} % |",
            if precise { "precise" } else { "tick" },
            revolution.as_secs_f64(),
            buckets * BUCKET_BYTES / 1024,
            fires as f64 / window as f64,
            wakes as f64 / window as f64,
            100.0 * cpu / window as f64,
        );
        for h in &handles {
            h.cancel();
        }
        timer.shutdown_now();
    }
    Ok(())
}

#[allow(clippy::disallowed_methods)] // the example measures real time
fn wait(d: Duration) {
    std::thread::sleep(d);
}

/// User plus system CPU of this process, from `/proc/self/stat`.
fn cpu_seconds() -> Result<f64, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').ok_or("no ')' in /proc/self/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    // The kernel's clock ticks per second: 100 on every Linux build here.
    Ok(ticks / 100.0)
}
