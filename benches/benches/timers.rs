//! One criterion group per operation, every in-process subject in each
//! group, swept over the number of pending timers. See the crate docs.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use workbench::runner::Subject;
use workbench::runner::{measure, within, Probe, Steps, Timers, TimersFactory};
use workbench::spec::{Rng, WorkloadKind};
use workbench::subjects;

const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// The quick run's sizes (see the crate docs; `BENCH_FULL=1` for all).
const QUICK_SIZES: [usize; 2] = [1_000, 100_000];

fn sizes() -> &'static [usize] {
    benches::sizes(&SIZES, &QUICK_SIZES)
}
/// Ids available beyond the pending set before the fixture is rebuilt.
const SPARE: usize = 1 << 20;

/// Far-future delays (1 to 2 hours): nothing fires during a bench.
fn far(rng: &mut Rng) -> Duration {
    Duration::from_secs(3600) + Duration::from_nanos(rng.below(3_600_000_000_000))
}

/// A subject holding `n` pending far-future timers, with spare ids.
struct Fixture {
    make: TimersFactory,
    n: usize,
    timers: Option<Box<dyn Timers>>,
    probe: Arc<Probe>,
    next: usize,
    rng: Rng,
}

impl Fixture {
    fn new(make: TimersFactory, n: usize) -> Fixture {
        let probe = Probe::new(measure::now(), n + SPARE, 0, 0);
        let mut f = Fixture {
            make,
            n,
            timers: None,
            probe,
            next: 0,
            rng: Rng::new(42, n as u64),
        };
        f.rebuild();
        f
    }

    fn rebuild(&mut self) {
        if let Some(t) = self.timers.take() {
            t.shutdown();
        }
        self.probe = Probe::new(measure::now(), self.n + SPARE, 0, 0);
        let mut t = (self.make)(self.n + SPARE);
        let (rng, probe, n) = (&mut self.rng, &self.probe, self.n);
        within(t.as_mut(), |t| {
            for id in 0..n {
                t.schedule(id, far(rng), probe.once(id)).expect("schedule");
            }
        });
        self.timers = Some(t);
        self.next = self.n;
    }

    /// `k` fresh ids, rebuilding first if the spares ran out.
    fn take_ids(&mut self, k: usize) -> std::ops::Range<usize> {
        if self.next + k > self.n + SPARE {
            self.rebuild();
        }
        let r = self.next..self.next + k;
        self.next += k;
        r
    }

    fn timers(&mut self) -> &mut dyn Timers {
        self.timers.as_deref_mut().expect("built")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(t) = self.timers.take() {
            t.shutdown();
        }
    }
}

/// The in-process subjects that run sweeps (a calendar-only one, such as
/// tokio-cron-scheduler, has no timers to schedule and cancel).
fn in_process() -> Vec<(Subject, TimersFactory)> {
    subjects::all()
        .into_iter()
        .filter(|s| s.workloads.contains(&WorkloadKind::Sweep))
        .filter_map(|s| s.timers.clone().map(|t| (s, t)))
        .collect()
}

/// Runs `iters` operations in batches of at most `batch`, timing only
/// `timed` and leaving the pending count near `n` with `untimed`.
fn batches(iters: u64, batch: usize, mut timed: impl FnMut(usize) -> Duration) -> Duration {
    let mut left = iters as usize;
    let mut total = Duration::ZERO;
    while left > 0 {
        let k = left.min(batch);
        total += timed(k);
        left -= k;
    }
    total
}

fn batch_for(n: usize) -> usize {
    (n / 10).clamp(100, 10_000)
}

fn schedule(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule");
    g.throughput(Throughput::Elements(1));
    for &n in sizes() {
        for (s, make) in in_process() {
            // Built on first use, so a filtered-out bench costs nothing.
            let mut fixture: Option<Fixture> = None;
            g.bench_with_input(BenchmarkId::new(s.name, n), &n, |b, _| {
                let f = fixture.get_or_insert_with(|| Fixture::new(make.clone(), n));
                b.iter_custom(|iters| {
                    batches(iters, batch_for(n), |k| {
                        let ids = f.take_ids(k);
                        let delays: Vec<Duration> = (0..k).map(|_| far(&mut f.rng)).collect();
                        let fires: Vec<_> = ids.clone().map(|i| f.probe.once(i)).collect();
                        within(f.timers(), |t| {
                            let t0 = measure::now();
                            for ((id, d), fire) in ids.clone().zip(delays).zip(fires) {
                                t.schedule(id, d, fire).expect("schedule");
                            }
                            let spent = t0.elapsed();
                            for id in ids {
                                black_box(t.cancel(id));
                            }
                            spent
                        })
                    })
                })
            });
        }
    }
    g.finish();
}

fn cancel(c: &mut Criterion) {
    let mut g = c.benchmark_group("cancel");
    g.throughput(Throughput::Elements(1));
    for &n in sizes() {
        for (s, make) in in_process() {
            // Built on first use, so a filtered-out bench costs nothing.
            let mut fixture: Option<Fixture> = None;
            g.bench_with_input(BenchmarkId::new(s.name, n), &n, |b, _| {
                let f = fixture.get_or_insert_with(|| Fixture::new(make.clone(), n));
                b.iter_custom(|iters| {
                    batches(iters, batch_for(n), |k| {
                        let ids: Vec<usize> = f.take_ids(k).collect();
                        let delays: Vec<Duration> = (0..k).map(|_| far(&mut f.rng)).collect();
                        let fires: Vec<_> = ids.iter().map(|&i| f.probe.once(i)).collect();
                        let order = f.rng.permutation(k);
                        within(f.timers(), |t| {
                            for ((&id, d), fire) in ids.iter().zip(delays).zip(fires) {
                                t.schedule(id, d, fire).expect("schedule");
                            }
                            let t0 = measure::now();
                            for i in order {
                                assert!(t.cancel(ids[i]), "a pending timer cancels");
                            }
                            t0.elapsed()
                        })
                    })
                })
            });
        }
    }
    g.finish();
}

fn reset(c: &mut Criterion) {
    let mut g = c.benchmark_group("reset");
    g.throughput(Throughput::Elements(1));
    for &n in sizes() {
        for (s, make) in in_process() {
            // Built on first use, so a filtered-out bench costs nothing.
            let mut fixture: Option<Fixture> = None;
            g.bench_with_input(BenchmarkId::new(s.name, n), &n, |b, _| {
                let f = fixture.get_or_insert_with(|| Fixture::new(make.clone(), n));
                b.iter_custom(|iters| {
                    batches(iters, batch_for(n), |k| {
                        let targets: Vec<(usize, Duration)> = (0..k)
                            .map(|_| (f.rng.below(n as u64) as usize, far(&mut f.rng)))
                            .collect();
                        within(f.timers(), |t| {
                            let t0 = measure::now();
                            for (id, d) in targets {
                                assert!(t.reset(id, d), "a pending timer resets");
                            }
                            t0.elapsed()
                        })
                    })
                })
            });
        }
    }
    g.finish();
}

/// The end-to-end path: schedule timers that are already due, and wait
/// until every one of their tasks has run. ns per timer.
fn schedule_to_fire(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule_to_fire");
    g.throughput(Throughput::Elements(1));
    for &n in sizes() {
        for (s, make) in in_process() {
            // Built on first use, so a filtered-out bench costs nothing.
            let mut fixture: Option<Fixture> = None;
            g.bench_with_input(BenchmarkId::new(s.name, n), &n, |b, _| {
                let f = fixture.get_or_insert_with(|| Fixture::new(make.clone(), n));
                b.iter_custom(|iters| {
                    batches(iters, 1000, |k| {
                        let ids = f.take_ids(k);
                        let mut fires: Option<Vec<_>> =
                            Some(ids.clone().map(|i| f.probe.once(i)).collect());
                        let target = f.probe.fired() + k as u64;
                        let probe = f.probe.clone();
                        let t = f.timers();
                        let t0 = measure::now();
                        // Driven as the workbench drives it: an event-loop
                        // subject (tokio's current-thread runtime, DelayQueue,
                        // nexus) fires its timers only while its owner polls.
                        t.drive(&mut Steps(|t: &mut dyn Timers| {
                            if let Some(fires) = fires.take() {
                                for (id, fire) in ids.clone().zip(fires) {
                                    t.schedule(id, Duration::ZERO, fire).expect("schedule");
                                }
                            }
                            if probe.fired() >= target {
                                return None;
                            }
                            assert!(
                                t0.elapsed() < Duration::from_secs(30),
                                "timers did not fire"
                            );
                            std::thread::yield_now(); // the timer threads need the core
                            Some(measure::now())
                        }));
                        t0.elapsed()
                    })
                })
            });
        }
    }
    g.finish();
}

fn config() -> Criterion {
    let t = benches::timing(benches::Timing {
        warm_up: Duration::from_millis(300),
        measurement: Duration::from_secs(1),
        samples: 10,
    });
    Criterion::default()
        .sample_size(t.samples)
        .warm_up_time(t.warm_up)
        .measurement_time(t.measurement)
}

criterion_group! {
    name = ops;
    config = config();
    targets = schedule, cancel, reset, schedule_to_fire
}
criterion_main!(ops);
