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
    /// Runs that panicked (whether the task then stopped or, with
    /// [`OnPanic::Continue`](crate::calendar::OnPanic::Continue), went on).
    pub panicked: u64,
    /// Runs of periodic and calendar tasks passed over by their
    /// [missed-run policy](crate::calendar::MissedRuns).
    pub skipped: u64,
}
