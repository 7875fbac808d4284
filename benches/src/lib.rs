//! Criterion benches for the schedulers and their Rust peers; the code is in
//! `benches/timers.rs`. Run them from the workspace root:
//!
//! ```text
//! cargo bench                         # everything (several minutes)
//! cargo bench -- schedule/            # one group
//! cargo bench -- 'cancel/.*/1000000'  # one size
//! ```
//!
//! Criterion's HTML report (`target/criterion/report/index.html`) then
//! compares every subject within a group: `schedule`, `cancel`, `reset`
//! and `schedule_to_fire` (the end-to-end path and the expiry: schedule a
//! due timer, wait until its task has run), each at 1e3, 1e4, 1e5 and 1e6
//! pending timers, as ns per operation.
//!
//! The subjects are the workbench's in-process ones
//! (`workbench::subjects::all()`): every algorithm of the `schedulers`
//! crate and the Rust peers, driven through the same `Timers` interface as
//! the workbench. The algorithms' pure cores are crate-private, so the
//! benches measure the public API end to end at each pending size (the
//! cores' own cost is included, plus the handle and the driver's lock).
