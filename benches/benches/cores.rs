//! The pure cores alone (`schedulers::core`), single-threaded, against
//! nexus-timer's wheel in the same groups: what the data structure costs
//! before any thread, lock or clock is involved.
//!
//! Groups (ids `<group>/<subject>/<pending>`):
//!
//! - `core/schedule`: insert a timer into a queue holding `pending`.
//! - `core/cancel`: remove a timer picked at random among `pending`
//!   (cold in cache at large sizes, as in a server cancelling timeouts).
//! - `core/schedule_cancel`: insert a timer and remove it at once (a
//!   short-lived timeout), at `pending`.
//! - `core/poll`: expire timers, per expired timer, with `pending` others
//!   waiting far away.
//! - `core/burst`: `pending` timers due together (a cache's entries
//!   stamped in the same second, their deadlines a microsecond apart as
//!   read at each schedule) all expire in one poll, per timer.
//!
//! Deadlines are 1 to 2 hours out on a 1 ms tick, from a fixed seed.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nexus_timer::{TimerHandle, Wheel};
use schedulers::core::{
    Expired, HashedWheel, HierarchicalWheel, IndexedHeap, Key, Precision, TimerQueue,
};

const SIZES: [usize; 5] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000];
/// The quick run's sizes (see the `benches` crate docs; `BENCH_FULL=1` for all).
const QUICK_SIZES: [usize; 2] = [1_000, 100_000];
const MS: u64 = 1_000_000;
/// Operations timed per measured batch.
const BATCH: usize = 1_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn far(&mut self) -> u64 {
        3_600_000 * MS + self.next() % (3_600_000 * MS)
    }
}

/// One queue under test, driven through keys `0..`.
trait Subject {
    fn name(&self) -> &'static str;
    fn insert(&mut self, key: Key, deadline: u64);
    fn remove(&mut self, key: Key);
    fn poll(&mut self, now: u64) -> usize;
}

/// A core of this crate, its keys being the slots of a slab the caller keeps.
struct Core<Q> {
    name: &'static str,
    queue: Q,
    out: Vec<Expired>,
}

impl<Q: TimerQueue> Subject for Core<Q> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn insert(&mut self, key: Key, deadline: u64) {
        self.queue.insert(key, deadline);
    }
    fn remove(&mut self, key: Key) {
        assert!(self.queue.remove(key));
    }
    fn poll(&mut self, now: u64) -> usize {
        self.out.clear();
        self.queue.poll(now, &mut self.out);
        self.out.len()
    }
}

/// nexus-timer's unbounded wheel, keeping its handles by key, as its users do.
struct Nexus {
    epoch: Instant,
    wheel: Wheel<Key>,
    handles: Vec<Option<TimerHandle<Key>>>,
    out: Vec<Key>,
}

impl Subject for Nexus {
    fn name(&self) -> &'static str {
        "nexus-timer"
    }
    fn insert(&mut self, key: Key, deadline: u64) {
        let at = self.epoch + Duration::from_nanos(deadline);
        let handle = self.wheel.schedule(at, key);
        let k = key as usize;
        if k >= self.handles.len() {
            self.handles.resize_with(k + 1, || None);
        }
        self.handles[k] = Some(handle);
    }
    fn remove(&mut self, key: Key) {
        let handle = self.handles[key as usize].take().expect("scheduled");
        assert!(self.wheel.cancel(handle).is_some());
    }
    fn poll(&mut self, now: u64) -> usize {
        self.out.clear();
        let fired = self
            .wheel
            .poll(self.epoch + Duration::from_nanos(now), &mut self.out);
        for &key in &self.out {
            // Fired timers leave zombie handles: free them, as users must.
            if let Some(h) = self.handles[key as usize].take() {
                self.wheel.free(h);
            }
        }
        fired
    }
}

impl Drop for Nexus {
    /// Its handles must be consumed (its debug builds assert it): a user
    /// dropping the wheel cancels what is still pending.
    fn drop(&mut self) {
        for handle in self.handles.drain(..).flatten() {
            self.wheel.cancel(handle);
        }
    }
}

type Make = fn() -> Box<dyn Subject>;

fn subjects() -> Vec<Make> {
    vec![
        || {
            Box::new(Core {
                name: "indexed-heap",
                queue: IndexedHeap::new(),
                out: Vec::new(),
            })
        },
        || {
            Box::new(Core {
                name: "hashed-wheel",
                queue: HashedWheel::new(MS, 16_384, 0, Precision::Exact).expect("valid"),
                out: Vec::new(),
            })
        },
        || {
            Box::new(Core {
                name: "hierarchical-wheel",
                queue: HierarchicalWheel::new(MS, 20, 0, Precision::Exact).expect("valid"),
                out: Vec::new(),
            })
        },
        || {
            Box::new(Nexus {
                epoch: real_now(),
                wheel: Wheel::unbounded(4096, real_now()),
                handles: Vec::new(),
                out: Vec::new(),
            })
        },
    ]
}

/// A subject holding `n` far timers under keys `0..n`.
fn filled(make: Make, n: usize, rng: &mut Rng) -> Box<dyn Subject> {
    let mut s = make();
    for key in 0..n as Key {
        s.insert(key, rng.far());
    }
    s
}

/// A benchmark reads real time (the cores themselves never do).
#[allow(clippy::disallowed_methods)]
fn real_now() -> Instant {
    Instant::now()
}

fn timed(mut f: impl FnMut()) -> Duration {
    let start = real_now();
    f();
    start.elapsed()
}

/// Short windows: 20 benchmarks per group, up to 10^7 timers each (the
/// long run; the quick one: `benches::QUICK`).
fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let t = benches::timing(benches::Timing {
        warm_up: Duration::from_secs(1),
        measurement: Duration::from_secs(3),
        samples: 20,
    });
    group
        .warm_up_time(t.warm_up)
        .measurement_time(t.measurement)
        .sample_size(t.samples);
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("core/schedule");
    configure(&mut group);
    group.throughput(Throughput::Elements(1));
    for &n in benches::sizes(&SIZES, &QUICK_SIZES) {
        for make in subjects() {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ n as u64);
            let mut s = filled(make, n, &mut rng);
            let fresh = n as Key..(n + BATCH) as Key;
            group.bench_function(BenchmarkId::new(s.name(), n), |b| {
                b.iter_custom(|iters| {
                    let (mut total, mut ops) = (Duration::ZERO, 0u64);
                    while ops < iters {
                        let deadlines: Vec<u64> = fresh.clone().map(|_| rng.far()).collect();
                        total += timed(|| {
                            for (key, &d) in fresh.clone().zip(&deadlines) {
                                s.insert(black_box(key), d);
                            }
                        });
                        ops += BATCH as u64;
                        fresh.clone().for_each(|key| s.remove(key));
                    }
                    total.mul_f64(iters as f64 / ops as f64)
                })
            });
        }
    }
    group.finish();
}

fn cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("core/cancel");
    configure(&mut group);
    group.throughput(Throughput::Elements(1));
    for &n in benches::sizes(&SIZES, &QUICK_SIZES) {
        for make in subjects() {
            let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ n as u64);
            let mut s = filled(make, n, &mut rng);
            group.bench_function(BenchmarkId::new(s.name(), n), |b| {
                b.iter_custom(|iters| {
                    let (mut total, mut ops) = (Duration::ZERO, 0u64);
                    while ops < iters {
                        // Distinct random keys among the pending ones.
                        let mut keys: Vec<Key> = (0..BATCH.min(n))
                            .map(|_| (rng.next() % n as u64) as Key)
                            .collect();
                        keys.sort_unstable();
                        keys.dedup();
                        // In random order again, not sorted.
                        for i in (1..keys.len()).rev() {
                            keys.swap(i, (rng.next() % (i as u64 + 1)) as usize);
                        }
                        total += timed(|| keys.iter().for_each(|&k| s.remove(black_box(k))));
                        ops += keys.len() as u64;
                        keys.iter().for_each(|&k| s.insert(k, rng.far()));
                    }
                    total.mul_f64(iters as f64 / ops as f64)
                })
            });
        }
    }
    group.finish();
}

fn schedule_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("core/schedule_cancel");
    configure(&mut group);
    group.throughput(Throughput::Elements(1));
    for &n in benches::sizes(&SIZES, &QUICK_SIZES) {
        for make in subjects() {
            let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ n as u64);
            let mut s = filled(make, n, &mut rng);
            let key = n as Key;
            group.bench_function(BenchmarkId::new(s.name(), n), |b| {
                b.iter(|| {
                    s.insert(black_box(key), 3_600_000 * MS);
                    s.remove(black_box(key));
                })
            });
        }
    }
    group.finish();
}

fn poll(c: &mut Criterion) {
    let mut group = c.benchmark_group("core/poll");
    configure(&mut group);
    const DUE: usize = 100;
    group.throughput(Throughput::Elements(DUE as u64));
    for &n in benches::sizes(&SIZES, &QUICK_SIZES) {
        for make in subjects() {
            let mut rng = Rng(0x8CB9_2BA7_2F3D_8DD7 ^ n as u64);
            let mut s = filled(make, n, &mut rng);
            let mut now = 0u64;
            group.bench_function(BenchmarkId::new(s.name(), n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        // 100 timers due within the next 10 ms.
                        for key in n as Key..(n + DUE) as Key {
                            s.insert(key, now + 1 + rng.next() % (10 * MS));
                        }
                        now += 10 * MS;
                        let fired = {
                            let start = real_now();
                            let fired = s.poll(black_box(now));
                            total += start.elapsed();
                            fired
                        };
                        assert_eq!(fired, DUE);
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

fn burst(c: &mut Criterion) {
    let mut group = c.benchmark_group("core/burst");
    configure(&mut group);
    // Up to 10^6: each sample fills the queue again.
    for &n in benches::sizes(&SIZES[..4], &QUICK_SIZES) {
        group.throughput(Throughput::Elements(n as u64));
        for make in subjects() {
            let mut s = make();
            let mut rng = Rng(0x5DEE_CE66_D1CE_B00C ^ n as u64);
            let mut now = 0u64;
            group.bench_function(BenchmarkId::new(s.name(), n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        now += MS;
                        for key in 0..n as Key {
                            s.insert(key, now - rng.next() % 1_000);
                        }
                        let mut fired = 0;
                        total += timed(|| fired = s.poll(black_box(now)));
                        assert_eq!(fired, n);
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

criterion_group!(cores, schedule, cancel, schedule_cancel, poll, burst);
criterion_main!(cores);
