//! Criterion benches for the schedulers and their Rust peers, one target
//! per concern. Run them from the workspace root:
//!
//! ```text
//! cargo bench                                   # the quick run: every group, small sizes, short windows
//! BENCH_FULL=1 cargo bench                      # the long run: every size up to 1e6 (cores 1e7), long windows
//! cargo bench --bench cores                     # the pure cores alone
//! cargo bench --bench contention                # threads sharing one scheduler
//! cargo bench -- schedule/                      # one group
//! BENCH_FULL=1 cargo bench -- 'cancel/.*/1000000'   # one size of the long run
//! cargo bench -p benches -- --test              # every bench once at every size, as scripts/test does
//! ```
//!
//! By default each bench measures briefly ([`QUICK`]) at the small sizes
//! ([`sizes`]), so that the whole `cargo bench` ends within minutes;
//! `BENCH_FULL=1` runs every size with each target's long windows, as the
//! numbers in the READMEs were taken. Criterion's test mode (`--test`)
//! runs every size once either way.
//!
//! Criterion's HTML report (`target/criterion/report/index.html`) then
//! compares every subject within a group.
//!
//! `contention` and `handles` print a cache line's round trip between two
//! cores before and after their cases, and warn if it moved by more than
//! ×2: on a VM the host moves the CPUs closer or farther apart, and what
//! hands work to another thread (each schedule feeds the driver's lane)
//! follows it (see `workbench/README.md`). Compare builds at like round
//! trips.
//!
//! `benches/timers.rs`, the public API end to end: `schedule`, `cancel`,
//! `reset` and `schedule_to_fire` (the end-to-end path and the expiry:
//! schedule a due timer, wait until its task has run), each at 1e3, 1e4,
//! 1e5 and 1e6 pending timers, as ns per operation. The subjects are the
//! workbench's in-process ones (`workbench::subjects::all()`): every
//! algorithm of the `schedulers` crate and the Rust peers, driven through
//! the same `Timers` interface as the workbench, each timed loop inside the
//! subject's `drive` as in the workbench's sweeps, so that an event-loop
//! peer (DelayQueue, nexus-timer, tokio's current-thread runtime) is called
//! from its owner's context and fires only while its owner polls. The
//! figures include the handle and the driver's lock.
//!
//! `benches/contention.rs`, threads sharing one scheduler: our four
//! algorithms at P = 1 and 2 threads setting and clearing request timeouts
//! on one `Arc<dyn Scheduler>`, the workbench's contention loop
//! (`contention/<algorithm>/<P>`, throughput in total pairs per second).
//!
//! `benches/handles.rs`, what a `ScheduledFuture` costs over a
//! `TaskHandle`: `schedule()` against `submit(Task::once(..))` on our four
//! algorithms, per schedule and per cancel, at 1e5 (and, in the long run,
//! 1e6) pending timers (`handles/<op>/<algorithm>/<how>/<n>`).
//!
//! `benches/cores.rs`, the pure cores alone (`schedulers::core`),
//! single-threaded, against nexus-timer's wheel in the same groups: what
//! the data structure costs before any thread, lock or clock is involved.

use std::time::Duration;

/// How long each bench warms up and measures, and how many samples it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Criterion's warm-up time.
    pub warm_up: Duration,
    /// Criterion's measurement time.
    pub measurement: Duration,
    /// Criterion's sample size (10 at the least).
    pub samples: usize,
}

/// The quick default: 0.1 s of warm-up and 0.3 s of measurement, 10
/// samples: a first figure in a second, the ranking within a group; run
/// the long windows before quoting a number.
pub const QUICK: Timing = Timing {
    warm_up: Duration::from_millis(100),
    measurement: Duration::from_millis(300),
    samples: 10,
};

/// Whether the long run was asked for (`BENCH_FULL` set, and not to `0`).
pub fn full() -> bool {
    std::env::var_os("BENCH_FULL").is_some_and(|v| v != "0")
}

/// Criterion's test mode (`cargo bench -- --test`): every bench once.
fn test_mode() -> bool {
    std::env::args().any(|a| a == "--test")
}

/// `long` for the long run, else [`QUICK`].
pub fn timing(long: Timing) -> Timing {
    if full() {
        long
    } else {
        QUICK
    }
}

/// The sizes to run: `all` for the long run and in test mode, else
/// `quick`.
pub fn sizes<'a>(all: &'a [usize], quick: &'a [usize]) -> &'a [usize] {
    if full() || test_mode() {
        all
    } else {
        quick
    }
}
