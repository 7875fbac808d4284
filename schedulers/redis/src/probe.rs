//! The claim-script ceiling: how fast one Redis hands out due jobs when it
//! does nothing else. The load benchmark (`schedulers-redis-worker bench
//! --shape ceiling`) compares the drain rate of real workers with it.

// A measurement: it times the claim loop in real time.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use super::store::Store;
use super::{Config, DistError};

/// What [`claim_ceiling`] measured.
#[derive(Debug, Clone)]
pub(crate) struct Ceiling {
    /// Jobs claimed.
    pub(crate) claimed: u64,
    /// Claim script calls made.
    pub(crate) calls: u64,
    /// Wall time of the claim loop.
    pub(crate) wall: Duration,
}

/// Claims every due job of the schedule back to back with the worker's
/// claim script, up to `batch` per call, with no handler and no ack: one
/// claim per shard that still has jobs, pipelined, then the next round. The caller schedules the backlog first and reads
/// Redis's own counters (`INFO`) around this call.
///
/// # Errors
///
/// [`DistError::Redis`] if Redis cannot be reached.
pub(crate) fn claim_ceiling(url: &str, config: Config, batch: usize) -> Result<Ceiling, DistError> {
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
