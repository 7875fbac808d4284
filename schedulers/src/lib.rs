//! Scheduled executors: delayed and periodic tasks, four classic algorithms
//! behind one [`Scheduler`] trait.
//!
//! Each algorithm is a faithful clone of the Java original it is named after,
//! with the original's flaws fixed and documented:
//!
//! | Scheduler | Original | Structure | schedule / cancel / expire | Pick it when |
//! |---|---|---|---|---|
//! | [`HeapTimer`] | `java.util.Timer` | one thread, binary heap, tasks run inline | O(log n) / O(1) lazy / O(log n) | few thousand timers, short tasks, lowest lateness |
//! | [`ScheduledThreadPool`] | `ScheduledThreadPoolExecutor` | N workers, indexed binary heap, one lock, leader/follower hand-off | O(log n) / O(1) lazy or O(log n) with `remove_on_cancel` / O(log n) | tasks that block or take long, several at once |
//! | [`HashedWheelTimer`] | Netty `HashedWheelTimer` | one worker ticking a ring of slots (timers carry rounds), lock-free submit and cancel queues, slab with index-linked slots; inline or pool executor | O(1) / O(1) / O(1) per timer, plus one slot per tick | many timers (1e4–1e6; more with a bigger ring), mostly cancelled or reset (I/O, ack and idle timeouts), a tick (1 ms default) of lateness is fine; each pending timer is read once per revolution |
//! | [`HierarchicalWheelTimer`] | Kafka `SystemTimer` | timing wheels with lazy overflow wheels, buckets in a delay queue, driver sleeps until the next bucket, worker pool | O(1) / O(1) unlink / O(levels) cascade | very many timers, mostly cancelled or far away; idle cost independent of count; 1-tick lateness |
//!
//! All of them keep the same contract (see [`Scheduler`]): never early, at
//! most once for one-shots, exact cancel, no overlapping periodic runs,
//! fixed-rate catch-up, fixed-delay from the end of a run, ties in
//! submission order, panics reported and survived, typed errors for bad
//! input.
//!
//! # Crate features
//!
//! | Feature | Default | Adds |
//! |---|---|---|
//! | `redis` | off | [`distributed`]: a durable, multi-node scheduler on Redis (jobs as data, leases with fencing, at-least-once, catch-up after outages, exact cancel), the `schedulers-redis-worker` binary and its load benchmark. Pulls in `redis`, `serde` and `serde_json` (the `redis` crate is why the workspace needs Rust 1.88). |
//!
//! # Hello, timer
//!
//! ```
//! use std::time::Duration;
//! use schedulers::{HeapTimer, Scheduler, SchedulerExt};
//!
//! let timer = HeapTimer::new()?;
//!
//! // A one-shot task with a value.
//! let answer = timer.schedule(Duration::from_millis(5), || 6 * 7)?;
//!
//! // A periodic task, cancelled before it ever runs.
//! let heartbeat = timer.schedule_at_fixed_rate(
//!     Duration::from_secs(1),
//!     Duration::from_secs(1),
//!     || println!("beat"),
//! )?;
//! assert!(heartbeat.cancel());
//!
//! assert_eq!(answer.get()?, 42);
//! timer.shutdown();
//! assert!(timer.await_termination(Duration::from_secs(10)));
//! # Ok::<(), schedulers::Error>(())
//! ```
//!
//! # Testing in virtual time
//!
//! Every scheduler takes a [`Clock`]. With a [`ManualClock`], time moves only
//! when the test says so, and [`ManualClock::advance`] returns once every due
//! task has run, so tests need no sleeps:
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use schedulers::{HeapTimer, ManualClock, SchedulerExt};
//!
//! let clock = ManualClock::new();
//! let timer = HeapTimer::builder().clock(clock.clone()).build()?;
//! let log = Arc::new(Mutex::new(Vec::new()));
//! for (name, secs) in [("b", 2), ("a", 1), ("c", 3)] {
//!     let log = log.clone();
//!     timer.schedule(Duration::from_secs(secs), move || log.lock().unwrap().push(name))?;
//! }
//! clock.advance(Duration::from_secs(2));
//! assert_eq!(*log.lock().unwrap(), ["a", "b"]);
//! # Ok::<(), schedulers::Error>(())
//! ```
// Without the feature there is no module to link to: the link leads to the
// table that says how to get it.
#![cfg_attr(
    not(feature = "redis"),
    doc = "\n[`distributed`]: #crate-features \"needs the redis feature\""
)]

mod clock;
#[cfg(feature = "redis")]
pub mod distributed;
mod error;
mod executor;
mod handle;
pub mod hashed_wheel;
pub mod heap_timer;
pub mod hierarchical;
mod scheduler;
mod sync;
mod task;
pub mod thread_pool;

pub use clock::{Clock, ManualClock, SystemClock, Wakeable};
pub use error::Error;
pub use executor::Executor;
pub use handle::{ScheduledFuture, TaskHandle};
pub use hashed_wheel::{HashedWheelTimer, HashedWheelTimerBuilder};
pub use heap_timer::{HeapTimer, HeapTimerBuilder};
pub use hierarchical::{HierarchicalWheelTimer, HierarchicalWheelTimerBuilder};
pub use scheduler::{Metrics, Scheduler, SchedulerExt};
pub use task::Task;
pub use thread_pool::{ScheduledThreadPool, ScheduledThreadPoolBuilder};
