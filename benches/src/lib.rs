//! Criterion benches for the schedulers and their Rust peers, one target
//! per concern. Run them from the workspace root:
//!
//! ```text
//! cargo bench                         # everything (several minutes)
//! cargo bench --bench cores           # the pure cores alone
//! cargo bench --bench contention      # threads sharing one scheduler
//! cargo bench -- schedule/            # one group
//! cargo bench -- 'cancel/.*/1000000'  # one size
//! cargo bench -p benches -- --test   # every bench once, as scripts/test does
//! ```
//!
//! Criterion's HTML report (`target/criterion/report/index.html`) then
//! compares every subject within a group.
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
//! `benches/cores.rs`, the pure cores alone (`schedulers::core`),
//! single-threaded, against nexus-timer's wheel in the same groups: what
//! the data structure costs before any thread, lock or clock is involved.
