//! The workbench: which scheduler should I use for my workload, and what
//! does it cost?
//!
//! ```text
//! workload spec (TOML, seeded) -> runner (scheduler or peer) -> records (results.json) -> SVG charts + index.html
//! ```
//!
//! - [`spec`]: the workload format (seeded TOML in `workbench/workloads/`).
//! - [`runner`]: executes a workload against a subject and measures it;
//!   [`runner::Timers`] is what an in-process subject implements,
//!   [`runner::Runner`] what any subject (also an out-of-process one) is.
//! - [`subjects`]: the registry; a scheduler joins with one line in
//!   [`subjects::SCHEDULERS`], a peer with one line in [`peers::all`].
//! - [`peers`]: tokio's timers, tokio-util's `DelayQueue`, `scheduled-thread-pool`.
//! - [`record`]: the record format of `results.json`.
//! - [`distributed`]: the Redis scheduler with 1, 2 and 4 worker processes,
//!   run beside the suite.
//!
//! A run is reproducible: every random choice comes from the workload's
//! seed, which is recorded with every figure, along with the machine, the
//! toolchain and the commit.

pub mod distributed;
pub mod env;
pub mod peers;
pub mod record;
pub mod report;
pub mod runner;
pub mod spec;
pub mod subjects;
pub mod suite;
pub mod workloads;
