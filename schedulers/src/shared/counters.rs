//! Counters bumped by cancelling threads, sharded so that threads do not
//! write each other's cache lines.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};

/// Counters bumped by cancelling threads, one cache line per shard so that
/// threads do not write each other's lines.
#[derive(Debug)]
pub(super) struct Sharded {
    pub(super) shards: [Shard; SHARDS],
}

const SHARDS: usize = 16;

#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct Shard {
    /// Cancels of waiting tasks (their entries are now dead).
    pub(super) pending: AtomicU64,
    /// Cancels of running periodic tasks.
    pub(super) running: AtomicU64,
}

thread_local! {
    static SHARD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Relaxed) % SHARDS
    };
}

impl Sharded {
    pub(super) fn mine(&self) -> &Shard {
        &self.shards[SHARD.with(|s| *s)]
    }
    pub(super) fn pending(&self) -> u64 {
        self.shards.iter().map(|s| s.pending.load(Relaxed)).sum()
    }
    pub(super) fn running(&self) -> u64 {
        self.shards.iter().map(|s| s.running.load(Relaxed)).sum()
    }
}
