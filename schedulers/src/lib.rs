//! Scheduled executors: delayed and periodic tasks, four classic algorithms
//! behind one [`Scheduler`] trait.
//!
//! Each algorithm is a faithful clone of the Java original it is named after,
//! with the original's flaws fixed and documented:
//!
//! | Scheduler | Original | Structure | schedule / cancel / expire | Pick it when |
//! |---|---|---|---|---|
//! | [`HeapTimer`] | `java.util.Timer` | one thread, indexed binary heap, tasks run inline | O(log n) / O(1) lazy / O(log n) | up to ~10^5 timers, short tasks, lowest lateness |
//! | [`ScheduledThreadPool`] | `ScheduledThreadPoolExecutor` | N workers, indexed binary heap, leader/follower hand-off | O(log n) / O(1) lazy or O(log n) with `remove_on_cancel` / O(log n) | tasks that block or take long, several at once |
//! | [`HashedWheelTimer`] | Netty `HashedWheelTimer` | one worker, a ring of buckets (timers carry rounds) with an occupancy bitmap; fires at the exact deadline | O(1) / O(1) lazy / O(1) | many timers (10^4–10^6+), mostly cancelled or reset (I/O, ack and idle timeouts) |
//! | [`HierarchicalWheelTimer`] | Kafka `SystemTimer` | timing wheels with lazy overflow levels, buckets in a delay queue; the driver sleeps until the next bucket | O(1) / O(1) lazy / O(levels) cascade | very many timers, mostly far away or cancelled; idle cost independent of their number |
//!
//! The pure data structures are public in [`core`], for an event loop that
//! drives its own timers.
//!
//! # Many threads, no lock
//!
//! A scheduler is shared by the threads of a server, each setting and
//! clearing timeouts, so none of them takes the scheduler's lock:
//!
//! - **schedule** reads the time (on the system clock, from the CPU's
//!   counter, for less than a clock read costs, never earlier than the
//!   clock: a deadline may come up to [`DEADLINE_RUNAHEAD`], 2 µs, after
//!   the clock's `now + delay`, never before), takes a free slot from the calling
//!   thread's own *lane* (16 per scheduler; a thread keeps its lane), writes
//!   the closure into the slot and leaves the slot's key in the lane for the
//!   driver. A closure that captures at most [`INLINE_BYTES`] (16: an id and
//!   an `Arc`, say) is stored in the slot itself, so scheduling allocates
//!   nothing; a larger one is boxed. The driver is woken only when the
//!   deadline comes before its planned wake-up.
//! - **cancel** is one CAS on the timer's 4-byte state word, and the
//!   canceller drops the closure. Cancelled before the driver took the timer
//!   in (a timeout cleared within a millisecond), the timer comes back out of
//!   its lane and the driver never hears of it ([`TaskHandle::cancel_and_drop`],
//!   for a handle done with, then frees its slot under the same one lock:
//!   one locked instruction in all); after, the cancel also sets
//!   a bit in a bitmap the driver sweeps to let the queue entry go. While
//!   the driver holds 262,144 timers or more, whose closures no core's cache
//!   holds any more, the canceller leaves the closure to the driver, which
//!   drops it within [`HOUSEKEEPING`] (1 ms) in a sorted, prefetched sweep:
//!   a cancel at a million pending then waits for one cache miss, not two.
//! - **reset** is one CAS and an entry in a lane.
//! - the **driver** sleeps until its next deadline, never past the
//!   earliest one waiting in a lane, and callers wake it only for work due
//!   before that (or when a lane holds 16 Ki entries): servers setting and
//!   clearing far timeouts never wake it. Whenever it wakes it takes in what
//!   the lanes hold: it queues new timers and lets go of the entries of
//!   cancelled ones. It runs what comes due in batches, one lock round trip
//!   per batch (a pool's workers take a fair share each; an executor gets
//!   a job per task, each running what the jobs before it left), and moves
//!   reset timers between them, 256 at a time, so a pile of resets never
//!   holds up a due task.
//!
//! A handle is 16 bytes. A pending timer costs 44 bytes on the wheels (a
//! 4-byte state word, a 20-byte slot body, a 20-byte list node) and 52 on
//! the heap-based schedulers (a 28-byte heap entry and position instead of
//! the node), plus what its closure captures beyond 16 bytes.
//!
//! # Lateness and its CPU cost
//!
//! Every driver thread asks Linux for a timer slack of 1 ns (by default) and, on the
//! wheels too, sleeps until a timer's exact deadline, so a task starts a
//! wake-up's latency after its deadline (tens of µs), not a tick after. A gap
//! between deadlines shorter than a wake-up (under 25 µs) is spun through
//! instead, within a **spin budget** (`spin_budget` on every builder, default
//! [`DEFAULT_SPIN_BUDGET`], 100 ms per second): once the current tenth of a
//! second's budget is spent, short gaps are slept through and what came due
//! runs in one batch. Measured with the workbench (1e5 timers over 2 s on a
//! 2-core VM, 2026-11-26, before runs were timed by the CPU's counter), the
//! default gave `HeapTimer` a lateness p50 of 14 µs and p99 of 44 µs, where
//! an unlimited budget gave 1.5 / 48 µs and no spinning 18 / 52 µs, at
//! about the same CPU: on such a machine a timed wait costs about as much
//! CPU as the gap it sleeps through. (The default's figures today are in the
//! table below.)
//!
//! A wake-up for every run is what a dense periodic load cannot afford:
//! 1,000 fixed-rate tasks every 10 ms (a run every 10 µs) cost `HeapTimer`
//! 6.5 to 6.8 µs of CPU a run that way, against 3.0 to 3.3 for the JDK's
//! executor (2026-11-26, before the workbench's application waited on a
//! 1 ms grid, which took the JDK's to 1.1 µs in the table below). So on
//! the heap-based schedulers a periodic run may start a little late, and
//! the runs due close together share one wake-up: `periodic_slack` on their
//! builders, 50 µs on `HeapTimer` (the timer slack the JDK's threads run
//! with) and 100 µs on `ScheduledThreadPool` (a batch wakes two of its
//! threads). A one-shot due meanwhile still starts on time. Measured
//! with `cargo run --release -p workbench -- run --size full --repeats 2 -s heap
//! -s stpe -s wheel -s hier -s jdk-stpe-2 -s jdk-stpe-1-roc -w periodic-fixed-rate
//! -w fire-lateness` (means of two repeats; 2026-11-27, load average
//! 0.12 to 0.23 on a 2-core VM), CPU per periodic run, start-time jitter p50
//! and p99, and the lateness of 1e5 one-shots over 2 s:
//!
//! | | CPU per run | jitter p50 / p99 | one-shot lateness p50 / p99 |
//! |---|---|---|---|
//! | `HeapTimer` | 0.60 µs | 31 / 53 µs | 2.5 / 5.3 µs |
//! | `ScheduledThreadPool`, 2 workers | 0.64 µs | 55 / 104 µs | 2.9 / 6.5 µs |
//! | `HashedWheelTimer` | 3.1 µs | 2.7 / 4.5 µs | 2.5 / 6.1 µs |
//! | `HierarchicalWheelTimer` | 3.4 µs | 2.9 / 5.1 µs | 2.8 / 6.8 µs |
//! | JDK `ScheduledThreadPoolExecutor`, 2 threads | 1.1 µs | 31 / 58 µs | 35 / 61 µs |
//! | the same, 1 thread, `removeOnCancel` | 0.83 µs | 32 / 53 µs | 37 / 55 µs |
//!
//! On that quiet machine the p99 figures held within 30 % between the
//! repeats. On a busier one they are the machine's as much as the
//! scheduler's: at a load average of 1.6, the day before, a few hundred of
//! a few hundred thousand wake-ups came a millisecond late for every subject
//! alike, and the p99s read 0.1 to 1 ms with spreads of 100 to 200 % between
//! repeats.
//!
//! With `periodic_slack(Duration::ZERO)`, `HeapTimer` wakes for every run
//! (an earlier run of the same command, on a quieter machine: a jitter p99
//! of 27 µs at 6.5 µs a run). The wheels keep a bound per bucket, not the
//! kind of each timer, so they wake for every deadline: hence their CPU per
//! run above.
//!
//! The **timer slack** (`timer_slack` on every builder, default
//! [`DEFAULT_TIMER_SLACK`], 1 ns) sets how late Linux may wake a driver's
//! threads, for every task. At the JDK's 50 µs, one-shots start as late as
//! the JDK's do, for less CPU: on the lateness workload (two full-size
//! repeats, 2026-11-27), `HeapTimer` at 1 ns has a p50 of 2.5 µs and a p99
//! of 4.5 to 6.1 µs for 430 ms of CPU; at 50 µs (`-s heap-slack50`), 27 and
//! 54 µs for 297 ms; the JDK's two-thread executor, 35 and 61 µs.
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
//! | `rayon` | on | `Executor::rayon`: run due tasks on a caller's rayon thread pool. |
//! | `tokio` | off | `Executor::tokio`: run due tasks on a tokio runtime's blocking pool. ([`ScheduledFuture`] is a `Future` without this feature.) |
//! | `metrics` | off | Every scheduler's figures ([`Metrics`]) in the [`metrics`](https://docs.rs/metrics) facade, under the names [`observe`] lists, for the application's exporter. |
//! | `tracing` | off | A [`tracing`](https://docs.rs/tracing) span per run (task name, lateness, outcome); events for panics and rejections. |
//!
//! # Guides
//!
//! - [`coming_from_java`]: `Timer`, `ScheduledExecutorService`, Netty's and
//!   Kafka's timers, call by call.
//! - [`coming_from_tokio`]: when to use this crate and when `tokio::time`.
//! - [`calendar::guide`]: calendar tasks, cron in a time zone
//!   ([`SchedulerExt::schedule_calendar`], [`Task::calendar`]): the syntax,
//!   the DST rule, what happens when the wall clock steps or the machine
//!   resumes, missed runs beside Quartz's and tokio's; the pure part,
//!   [`calendar`], previews the next fire times.
//! - The crate's `examples/`: ack timeouts, idle connections, a periodic job
//!   and its shutdown, a nightly job by the calendar, awaiting from tokio,
//!   rayon, choosing at run time.
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

mod body;
mod builder;
pub mod calendar;
mod clock;
pub mod core;
mod cycles;
/// Java's `Timer`, `ScheduledExecutorService`, Netty's and Kafka's timers,
/// call by call.
pub mod coming_from_java {
    #![doc = include_str!("../docs/coming-from-java.md")]
}
/// When to use this crate and when `tokio::time`, and how the two mix.
pub mod coming_from_tokio {
    #![doc = include_str!("../docs/coming-from-tokio.md")]
}
mod error;
mod executor;
mod handle;
pub mod hashed_wheel;
pub mod heap_timer;
pub mod hierarchical;
mod histogram;
mod lanes;
mod metrics;
pub mod observe;
mod rule;
mod scheduler;
mod shared;
mod slab;
mod state;
mod sync;
mod task;
pub mod thread_pool;
mod timer_thread;
mod waiters;
mod wake;

pub use body::INLINE_BYTES;
pub use builder::{OnShutdown, ShutdownPolicy, DEFAULT_SPIN_BUDGET, DEFAULT_TIMER_SLACK};
pub use clock::{Clock, ManualClock, SystemClock, Wakeable, DEADLINE_RUNAHEAD};
pub use error::{Error, Rejected};
pub use executor::{Executor, Runnable};
pub use handle::{CancelOnDrop, ScheduledFuture, TaskHandle};
pub use hashed_wheel::{HashedWheelTimer, HashedWheelTimerBuilder};
pub use heap_timer::{HeapTimer, HeapTimerBuilder};
pub use hierarchical::{HierarchicalWheelTimer, HierarchicalWheelTimerBuilder};
pub use histogram::Histogram;
pub use metrics::{Metrics, NamedMetrics, PendingByKind, MAX_NAMES};
pub use rule::{TaskContext, DEFAULT_MISSED_RUN_TOLERANCE};
pub use scheduler::{Scheduler, SchedulerExt};
pub use shared::HOUSEKEEPING;
pub use task::Task;
pub use thread_pool::{ScheduledThreadPool, ScheduledThreadPoolBuilder};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
