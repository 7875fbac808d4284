//! What a scheduler's own figures cost its driver: the time per run of a
//! batch of trivial tasks due at one instant (from the first run's start to
//! the last one's), on `HeapTimer`'s timer thread (one reading of the time
//! per run, by the CPU's counter on the system clock, and the histograms,
//! in batches), on a `HierarchicalWheelTimer` that
//! hands them to a one-thread `Executor::pool` (a job per task, taking
//! what the jobs before it left) and on a one-worker `ScheduledThreadPool`
//! (the same batches, through its worker's loop); each beside the same
//! scheduler built with `run_figures(false)` (no reading of the time and
//! no histogram for a run: `-untimed`), so one run gives the cost. Beside
//! them, a clock read itself.
//!
//! Build it with and without the facades to see what they add:
//! `cargo bench -p benches --bench observe` (no facade),
//! `... --features schedulers/metrics,schedulers/tracing` (compiled in, no
//! recorder or subscriber), and the same with `OBSERVE_RECORDER=1` in the
//! environment (a Prometheus recorder installed).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use schedulers::{
    Clock, Executor, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool, Scheduler,
    SystemClock, Task,
};

/// Tasks per batch.
const BATCH: usize = 10_000;

/// The span from the first run's start to the last run's end of `n`
/// trivial one-shots due together on `s`.
fn batch(s: &dyn Scheduler, n: usize) -> Duration {
    let first = Arc::new(Mutex::new(None::<Instant>));
    let last = Arc::new(Mutex::new(None::<Instant>));
    let done = Arc::new(AtomicU64::new(0));
    // Due once every task is submitted: they run as one batch.
    let due = SystemClock.now() + Duration::from_millis(5) + Duration::from_nanos(200 * n as u64);
    for i in 0..n {
        let task = if i == 0 {
            let first = first.clone();
            Task::once(move || *first.lock().unwrap() = Some(SystemClock.now()))
        } else if i + 1 == n {
            let (last, done) = (last.clone(), done.clone());
            Task::once(move || {
                *last.lock().unwrap() = Some(SystemClock.now());
                done.fetch_add(1, SeqCst);
            })
        } else {
            Task::once(|| ())
        };
        s.submit_at(due, task).expect("schedule");
    }
    let give_up = SystemClock.now() + Duration::from_secs(30);
    while done.load(SeqCst) == 0 {
        assert!(SystemClock.now() < give_up, "the batch never ran");
        std::thread::yield_now();
    }
    let first = first.lock().unwrap().expect("ran");
    let last = last.lock().unwrap().expect("ran");
    last - first
}

fn runs(c: &mut Criterion) {
    if std::env::var_os("OBSERVE_RECORDER").is_some() {
        install_recorder();
    }
    let mut g = c.benchmark_group("observe");
    g.throughput(Throughput::Elements(1));
    g.bench_function("clock_read", |b| b.iter(|| SystemClock.now()));
    for timed in [true, false] {
        let suffix = if timed { "" } else { "-untimed" };
        let heap = HeapTimer::builder()
            .run_figures(timed)
            .build()
            .expect("a timer");
        g.bench_function(format!("run_in_batch/heap{suffix}"), |b| {
            b.iter_custom(|iters| per_run(&heap, iters))
        });
        let handing = HierarchicalWheelTimer::builder()
            .executor(Executor::pool(1).expect("an executor"))
            .run_figures(timed)
            .build()
            .expect("a timer");
        g.bench_function(format!("run_in_batch/hier-on-pool-1{suffix}"), |b| {
            b.iter_custom(|iters| per_run(&handing, iters))
        });
        let pool = ScheduledThreadPool::builder()
            .pool_size(1)
            .run_figures(timed)
            .build()
            .expect("a pool");
        g.bench_function(format!("run_in_batch/stpe-1{suffix}"), |b| {
            b.iter_custom(|iters| per_run(&pool, iters))
        });
    }
    g.finish();
}

/// `iters` runs' worth of time, in batches of [`BATCH`].
fn per_run(s: &dyn Scheduler, iters: u64) -> Duration {
    let mut left = iters as usize;
    let mut total = Duration::ZERO;
    while left > 0 {
        // Batches of at least 100: the first and last runs are not typical.
        let n = left.clamp(100, BATCH);
        let took = batch(s, n);
        total += took * left.min(n) as u32 / n as u32;
        left = left.saturating_sub(n);
    }
    total
}

#[cfg(feature = "prometheus")]
fn install_recorder() {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("a recorder");
}

#[cfg(not(feature = "prometheus"))]
fn install_recorder() {
    panic!("OBSERVE_RECORDER needs the benches crate's `prometheus` feature");
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = observe;
    config = config();
    targets = runs
}
criterion_main!(observe);
