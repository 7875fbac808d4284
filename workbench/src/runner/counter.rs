//! A counter many threads add to without sharing a cache line: the
//! workbench's own bookkeeping must not cost a subject that fires on two
//! threads at once (a pool) a line bouncing between cores.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Shards per counter: a power of two, more than the threads that fire at
/// once on any machine this runs on (two threads that land on one shard
/// only share a line again).
const SHARDS: usize = 16;

/// One shard on a cache line of its own (128 bytes: adjacent-line
/// prefetchers fetch lines in pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(AtomicU64);

/// The shard of the calling thread: threads take shards round robin, in
/// the order they first count.
#[inline]
fn my_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // Const-initialised, no destructor: a plain thread-local load on the
    // hot path, no lazy-initialisation state to check.
    thread_local! {
        static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    MINE.with(|m| match m.get() {
        usize::MAX => {
            let s = NEXT.fetch_add(1, Relaxed) % SHARDS;
            m.set(s);
            s
        }
        s => s,
    })
}

/// A per-thread-sharded counter: [`Sharded::add`] touches only the calling
/// thread's shard, [`Sharded::sum`] reads them all.
#[derive(Debug)]
pub struct Sharded {
    shards: Box<[Shard]>,
}

impl Default for Sharded {
    fn default() -> Sharded {
        Sharded {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }
}

impl Sharded {
    /// Adds `n` on the calling thread's shard.
    #[inline]
    pub fn add(&self, n: u64) {
        self.shards[my_shard()].0.fetch_add(n, Relaxed);
    }

    /// The total so far (each shard read once; adds racing the read may or
    /// may not be in it).
    pub fn sum(&self) -> u64 {
        self.shards.iter().map(|s| s.0.load(Relaxed)).sum()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn adds_from_many_threads_all_count_and_threads_get_their_own_lines() {
        let c = Sharded::default();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        c.add(1);
                    }
                });
            }
        });
        assert_eq!(c.sum(), 80_000);
        assert_eq!(std::mem::align_of::<Shard>(), 128);
        // Threads take shards round robin: four in a row cannot all land on
        // one (other tests' threads would have to take exactly 15 shards
        // between each two of them).
        let four: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(my_shard).join().unwrap())
            .collect();
        assert!(four.iter().any(|s| *s != four[0]), "{four:?}");
        assert_eq!(my_shard(), my_shard(), "a thread keeps its shard");
    }
}
