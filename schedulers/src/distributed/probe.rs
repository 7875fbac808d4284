//! The claim-script ceiling: how fast one Redis hands out due jobs when it
//! does nothing else. The load benchmark (`schedulers-redis-worker bench
//! --shape ceiling`) compares the drain rate of real workers with it.

// A measurement: it times the claim loop in real time.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use super::client::Store;
use super::{Config, DistError};

/// What [`claim_ceiling`] measured.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub struct Ceiling {
    /// Jobs claimed.
    pub claimed: u64,
    /// Claim script calls made.
    pub calls: u64,
    /// Wall time of the claim loop.
    pub wall: Duration,
}

/// Claims every due job of the schedule back to back with the worker's
/// claim script, up to `batch` per call, visiting the shards in turn, with
/// no handler and no ack. The caller schedules the backlog first and reads
/// Redis's own counters (`INFO`) around this call.
///
/// # Errors
///
/// [`DistError::Redis`] if Redis cannot be reached.
#[doc(hidden)]
pub fn claim_ceiling(url: &str, config: Config, batch: usize) -> Result<Ceiling, DistError> {
    let store = Store::new(url, config)?;
    let mut con = store.conn();
    let n = store.shards.len();
    let mut claimed = 0u64;
    let mut calls = 0u64;
    let mut empty = vec![false; n];
    let start = Instant::now();
    while !empty.iter().all(|e| *e) {
        for (s, done) in empty.iter_mut().enumerate() {
            if *done {
                continue;
            }
            let (slices, _) = store.slices(&mut con, s, 4)?;
            let (_, _, fires) = store.claim(&mut con, s, &slices, batch, 600_000, "ceiling")?;
            calls += 1;
            claimed += fires.len() as u64;
            *done = fires.is_empty();
        }
    }
    Ok(Ceiling {
        claimed,
        calls,
        wall: start.elapsed(),
    })
}
