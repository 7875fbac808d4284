//! The workbench: which scheduler should I use for my workload, and what
//! does it cost?
//!
//! ```text
//! workload spec (TOML, seeded) -> runner (scheduler or peer) -> records (results.json) -> SVG charts + index.html
//! ```
//!
//! - [`spec`]: the workload format (seeded TOML in `workbench/workloads/`):
//!   timelines, sweeps and distributed jobs.
//! - [`random`]: the seeded generator and distributions (the Java harness
//!   draws the same numbers).
//! - [`metric`]: what is measured, with units and directions.
//! - [`runner`]: executes a workload against a subject and measures it; a
//!   [`runner::Subject`] is a name, a description and how to get its
//!   [`runner::Runner`] (what any subject, also an out-of-process one, is);
//!   [`runner::Timers`] is what an in-process subject implements.
//! - [`subjects`]: the registry and the adapter to the `schedulers` API; a
//!   scheduler joins with one line in [`subjects::SCHEDULERS`], a peer with
//!   one line in [`peers::all`].
//! - [`peers`]: tokio's timers, tokio-util's `DelayQueue`, `nexus-timer`,
//!   `scheduled-thread-pool`, the Java originals, and BullMQ (the Redis
//!   scheduler's peer).
//! - [`distributed`]: the Redis scheduler's subjects (1, 2 and 4 worker
//!   processes, each a `workbench redis-worker` child, on one Redis or a
//!   Cluster), run by the same suite, and its load benchmark
//!   ([`distributed::bench`], also `workbench redis-bench`): backlog drain
//!   and paced lateness, with Redis's own cost.
//! - [`suite`]: subjects × workloads × repeats, results after every run,
//!   with the time left ([`estimate`]).
//! - [`selection`]: which subjects run on which workloads: the default
//!   selection (our four, the strongest peers and the originals within a
//!   time budget, from a reference run), `--all`, or the command line's.
//! - [`record`]: the record format of `results.json`.
//! - [`report`]: the verdict, the charts and the HTML page.
//! - [`calibration`]: the independent harness's peer figures and the
//!   comparison with them (`workbench calibrate`).
//! - [`calendar`]: the `calendar` workload (cron schedules at wall-clock
//!   instants): what every subject reports, and the figures from it.
//! - [`postgres`]: throwaway PostgreSQL servers (the Quartz cluster's
//!   database).
//!
//! A run is reproducible: every random choice comes from the workload's
//! seed, which is recorded with every figure, along with the machine, the
//! toolchain, the commit and the load average of every repeat.

pub mod calendar;
pub mod calibration;
pub mod distributed;
pub mod env;
pub mod estimate;
pub mod metric;
pub mod peers;
pub mod postgres;
pub mod random;
pub mod record;
pub mod report;
pub mod runner;
pub mod selection;
pub mod spec;
pub mod subjects;
pub mod suite;
pub mod workloads;
