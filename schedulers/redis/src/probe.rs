//! The claim-script ceiling (feature `test-util`): how fast one Redis hands
//! out due jobs when it does nothing else. The workbench's load benchmark
//! (`workbench redis-bench --shape ceiling`) compares the drain rate of real
//! workers with it.

use std::time::{Duration, Instant};

use crate::store::{Store, MAX_BATCH};
use crate::{Config, Error};

/// What [`claim_ceiling`] measured.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Ceiling {
    /// Jobs claimed.
    pub claimed: u64,
    /// Claim script calls made.
    pub calls: u64,
    /// Wall time of the claim loop.
    pub wall: Duration,
}

/// Claims every due job of the schedule back to back with the worker's
/// claim script, up to `batch` per call, with no handler and no ack: one
/// claim per shard that still has jobs, pipelined, then the next round. The
/// caller schedules the backlog first and reads Redis's own counters
/// (`INFO`) around this call. For benchmarks (feature `test-util`).
///
/// A measurement, not an operation: the claimed jobs are left leased, and
/// run again when their leases lapse, so use a namespace of its own.
///
/// # Errors
///
/// [`Error::InvalidConfig`] if `batch` is not 1 to 1,000 (as
/// [`WorkerBuilder::batch`](crate::WorkerBuilder::batch));
/// [`Error::Redis`] if Redis cannot be reached; as
/// [`RedisScheduler::connect`](crate::RedisScheduler::connect) for the
/// configuration.
pub fn claim_ceiling(url: &str, config: Config, batch: usize) -> Result<Ceiling, Error> {
    if !(1..=MAX_BATCH).contains(&batch) {
        return Err(Error::InvalidConfig("batch must be within 1..=1000"));
    }
    let store = Store::new(url, config)?;
    let mut con = store.conn();
    let mut open: Vec<usize> = (0..store.shards.len()).collect();
    let mut claimed = 0u64;
    let mut calls = 0u64;
    let start = Instant::now();
    // Every shard that still has jobs, one claim each, in one round trip.
    while !open.is_empty() {
        let asks: Vec<(usize, usize)> = open.iter().map(|&s| (s, batch)).collect();
        let replies = store.claim(&mut con, &asks, 600_000)?;
        calls += asks.len() as u64;
        open.clear();
        for r in replies {
            let r = r?;
            if !r.fires.is_empty() {
                claimed += r.fires.len() as u64;
                open.push(r.shard);
            }
        }
    }
    Ok(Ceiling {
        claimed,
        calls,
        wall: start.elapsed(),
    })
}
