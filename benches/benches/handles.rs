//! What a `ScheduledFuture` costs over a `TaskHandle`, on each of our four
//! algorithms: `schedule()` (a closure whose value its future hands back)
//! against `submit(Task::once(..))` (a handle, no value), per schedule and
//! per cancel, with `n` far-future timers pending and the 16 bytes of
//! captures the workbench's closures hold (an id and an `Arc`). Cancels go
//! in random order, as acks do.
//!
//! `cargo bench -p benches --bench handles` (quick: 1e5 pending;
//! `BENCH_FULL=1` adds 1e6).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use schedulers::{
    Clock, HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool, Scheduler,
    SchedulerExt, SystemClock, Task, TaskHandle,
};
use workbench::runner::measure;
use workbench::spec::Rng;

const SIZES: [usize; 2] = [100_000, 1_000_000];
const QUICK_SIZES: [usize; 1] = [100_000];
/// Timers scheduled (then cancelled) per timed batch.
const BATCH: usize = 10_000;

/// Our four, by the workbench's names.
fn ours() -> Vec<(&'static str, Box<dyn Scheduler>)> {
    vec![
        ("heap", Box::new(HeapTimer::new().expect("a timer"))),
        (
            "stpe",
            Box::new(ScheduledThreadPool::new(2).expect("a pool")),
        ),
        ("wheel", Box::new(HashedWheelTimer::new().expect("a wheel"))),
        (
            "hier",
            Box::new(HierarchicalWheelTimer::new().expect("a wheel")),
        ),
    ]
}

/// How a benchmark schedules one timer and gets a handle to cancel.
#[derive(Clone, Copy)]
enum Via {
    /// `submit(delay, Task::once(..))`: a `TaskHandle`.
    Submit,
    /// `schedule(delay, ..)`: a `ScheduledFuture` of the closure's value.
    Future,
}

impl Via {
    fn name(self) -> &'static str {
        match self {
            Via::Submit => "submit",
            Via::Future => "schedule",
        }
    }

    /// Schedules one far-future timer capturing `(id, hits)`; returns
    /// something whose `cancel` clears it.
    fn schedule(self, s: &dyn Scheduler, id: u64, hits: &Arc<AtomicU64>, rng: &mut Rng) -> Held {
        let delay = Duration::from_secs(3600) + Duration::from_nanos(rng.below(3_600_000_000_000));
        let hits = hits.clone();
        match self {
            Via::Submit => Held::Handle(
                s.submit(delay, Task::once(move || hits.fetch_add(id, Relaxed)))
                    .expect("schedule"),
            ),
            Via::Future => Held::Future(
                s.schedule(delay, move || hits.fetch_add(id, Relaxed))
                    .expect("schedule"),
            ),
        }
    }
}

/// A scheduled timer's handle, as the caller holds it.
enum Held {
    Handle(TaskHandle),
    Future(schedulers::ScheduledFuture<u64>),
}

impl Held {
    fn cancel(&self) -> bool {
        match self {
            Held::Handle(h) => h.cancel(),
            Held::Future(f) => f.handle().cancel(),
        }
    }
}

/// `n` pending timers on `s`, kept until dropped.
fn pending(s: &dyn Scheduler, n: usize, hits: &Arc<AtomicU64>) -> Vec<Held> {
    let mut rng = Rng::new(7, n as u64);
    (0..n as u64)
        .map(|id| Via::Submit.schedule(s, id, hits, &mut rng))
        .collect()
}

/// Time for `iters` schedules (or, with `cancels`, cancels in random
/// order) through `via`, in batches of [`BATCH`], each batch cancelled
/// afterwards so the pending count stays where it was.
fn timed(s: &dyn Scheduler, via: Via, iters: u64, cancels: bool, rng: &mut Rng) -> Duration {
    let hits = Arc::new(AtomicU64::new(0));
    let mut left = iters as usize;
    let mut total = Duration::ZERO;
    while left > 0 {
        let n = left.min(BATCH);
        let start = SystemClock.now();
        let held: Vec<Held> = (0..n as u64)
            .map(|id| via.schedule(s, id, &hits, rng))
            .collect();
        if !cancels {
            total += SystemClock.now() - start;
        }
        let order = rng.permutation(n);
        let start = SystemClock.now();
        for &i in &order {
            black_box(held[i].cancel());
        }
        if cancels {
            total += SystemClock.now() - start;
        }
        left -= n;
    }
    total
}

fn handles(c: &mut Criterion) {
    measure::with_handoff_noted("handles", || cases(c));
}

fn cases(c: &mut Criterion) {
    for &n in benches::sizes(&SIZES, &QUICK_SIZES) {
        for (name, s) in ours() {
            let hits = Arc::new(AtomicU64::new(0));
            let kept = pending(s.as_ref(), n, &hits);
            let mut rng = Rng::new(11, n as u64);
            for (op, cancels) in [("schedule", false), ("cancel", true)] {
                let mut g = c.benchmark_group(format!("handles/{op}"));
                g.throughput(Throughput::Elements(1));
                for via in [Via::Submit, Via::Future] {
                    let id = BenchmarkId::new(format!("{name}/{}", via.name()), n);
                    g.bench_function(id, |b| {
                        b.iter_custom(|iters| timed(s.as_ref(), via, iters, cancels, &mut rng))
                    });
                }
                g.finish();
            }
            drop(kept);
            s.shutdown_now();
        }
    }
}

fn config() -> Criterion {
    let t = benches::timing(benches::Timing {
        warm_up: Duration::from_millis(500),
        measurement: Duration::from_secs(2),
        samples: 20,
    });
    Criterion::default()
        .sample_size(t.samples)
        .warm_up_time(t.warm_up)
        .measurement_time(t.measurement)
}

criterion_group! {
    name = benches;
    config = config();
    targets = handles
}
criterion_main!(benches);
