//! Threads sharing one scheduler: our four algorithms at P = 1 and 2
//! threads, each thread setting request timeouts (10-30 s, a 16-byte
//! closure on the thread's own connection) and clearing each 1,000
//! requests later, as the workbench's contention workload does
//! (`workbench::runner::contention`, whose loop this runs: one timed round
//! per sample, every pair checked done). The scheduler is one
//! `Arc<dyn Scheduler>` per (algorithm, P), shared by the threads.
//!
//! Ids `contention/<algorithm>/<P>`; an iteration is one pair on each of
//! the P threads, so criterion's throughput is total pairs per second.
//! Short by default (about 3 s a case):
//!
//! ```text
//! cargo bench --bench contention
//! cargo bench --bench contention -- 'contention/wheel'
//! ```

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use schedulers::Scheduler;
use workbench::runner::contention::{round, Shared};
use workbench::runner::measure;
use workbench::spec::{Dist, Dur};
use workbench::subjects::SCHEDULERS;

/// Our four algorithms, by their workbench names.
const FOUR: [&str; 4] = ["heap", "stpe", "wheel", "hier"];

/// Live timeouts per thread.
const WINDOW: usize = 1000;

fn contention(c: &mut Criterion) {
    measure::with_handoff_noted("contention", || cases(c));
}

fn cases(c: &mut Criterion) {
    let mut g = c.benchmark_group("contention");
    let delay = Dist::Uniform {
        min: Dur(Duration::from_secs(10)),
        max: Dur(Duration::from_secs(30)),
    };
    for p in [1usize, 2] {
        g.throughput(Throughput::Elements(p as u64));
        for a in SCHEDULERS.iter().filter(|a| FOUR.contains(&a.name)) {
            // Built on first use, so a filtered-out bench starts no threads.
            let mut shared: Option<Arc<dyn Scheduler>> = None;
            g.bench_with_input(BenchmarkId::new(a.name, p), &p, |b, &p| {
                let s = shared.get_or_insert_with(|| {
                    Arc::from((a.make)().unwrap_or_else(|e| panic!("{}: {e}", a.name)))
                });
                let mut seed = 0;
                b.iter_custom(|iters| {
                    seed += 1;
                    let pairs = usize::try_from(iters).expect("iterations fit in usize");
                    round(s, p, pairs, WINDOW, &delay, seed)
                        .unwrap_or_else(|e| panic!("{} at P = {p}: {e}", a.name))
                })
            });
            if let Some(s) = shared {
                Shared::shutdown(&*s);
            }
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = contention
}
criterion_main!(benches);
