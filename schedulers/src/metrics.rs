//! What a scheduler counts.

/// A scheduler's counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Tasks waiting for their next run (not counting ones running now).
    pub pending: usize,
    /// Runs started: a periodic task counts once per run.
    pub fired: u64,
    /// Successful cancels.
    pub cancelled: u64,
}
