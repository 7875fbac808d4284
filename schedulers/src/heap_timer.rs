//! `HeapTimer`: a clone of `java.util.Timer`.
//!
//! # Implementation
//!
//! One thread and one binary heap of deadlines behind one mutex, exactly the
//! shape of `Timer`'s `TimerThread.mainLoop`: the thread sleeps until the
//! earliest deadline (or until a new earliest task arrives), takes the due
//! tasks and runs them inline, then re-queues periodic ones. The heap is
//! the pure [`IndexedHeap`]; timers live in the
//! scheduler's slab, not in an allocation each.
//!
//! Costs: callers take no lock of the timer thread's (see the crate docs):
//! a schedule or reset leaves an entry in the caller's lane, a cancel is one
//! CAS; the thread's insert is O(log n) (O(1) on average for random
//! deadlines), its move O(log n), a cancelled entry leaves lazily, and
//! expiring a task is an O(log n) pop. A pending timer costs 52 bytes: its
//! 4-byte state word, its 20-byte slot body (the closure, in place up to 16
//! bytes of captures), a 24-byte heap entry and a 4-byte position.
//!
//! # Differences from `java.util.Timer`
//!
//! Where `Timer` is broken, the clone does better; each point is tested:
//!
//! - **A panicking task does not kill the timer.** In Java an exception in
//!   `run()` kills the thread, silently drops every pending task and makes
//!   every later `schedule` throw. Here the panic is caught, the task's
//!   handle reports it ([`Error::is_panic`](crate::Error::is_panic)), a
//!   periodic task stops repeating, and the timer carries on.
//! - **Ties run in submission order.** `Timer`'s heap has no tie-breaker
//!   (20 tasks at the same time ran `[0,19,18,…,1]`); here a sequence number
//!   breaks ties.
//! - **Fixed delay counts from the end of the previous run**, as
//!   `ScheduledThreadPoolExecutor` does; `Timer` counts from its start.
//! - **Monotonic time, never early.** `Timer` reads the wall clock in
//!   milliseconds and can fire up to 1 ms early or jump with the clock; this
//!   clone waits on a monotonic [`Clock`](crate::Clock) in nanoseconds.
//! - **Cancelled tasks do not pile up.** `Timer` keeps them until they reach
//!   the head or `purge()` is called; here they are purged automatically
//!   once they outnumber live tasks (and at least [`AUTO_PURGE_MIN`] are
//!   waiting), so memory is bounded by about twice the live set; a task
//!   cancelled before the thread took it in never enters the heap, and a
//!   cancel drops the task's closure at once. `purge()` is still there.
//! - **New one-shots wait outside the heap** until the earliest of them may
//!   come due (see [`IndexedHeap`]'s staging): one cancelled before then
//!   is purged without ever being sifted. `Timer` sifts each task in at
//!   once.
//! - **Shutdown keeps pending one-shots** (the executor's default) where
//!   `Timer.cancel()` discards everything; `shutdown_now` discards and
//!   returns them.
//! - **Periodic runs share wake-ups.** `Timer` wakes for every run (to the
//!   millisecond); here a periodic run may start up to
//!   [`periodic_slack`](HeapTimerBuilder::periodic_slack) (50 µs) late so
//!   that runs due close together cost one wake-up, while one-shots start
//!   at their deadline. 1,000 fixed-rate tasks every 10 ms cost 2.3-2.6 µs
//!   of CPU a run instead of 6.5-6.8 (see the crate docs).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::builder::{common_builder_methods, periodic_slack_method, Common};
use crate::core::IndexedHeap;
use crate::error::Error;
use crate::executor::Executor;
use crate::handle::Anchors;
use crate::scheduler::AsShared;
use crate::shared::{Config, Queue, Shared};

pub use crate::shared::AUTO_PURGE_MIN;

/// A `java.util.Timer`-style scheduler: one thread, one heap, tasks run
/// inline on the timer thread.
///
/// Pick it for a modest number of timers whose tasks are short: it is the
/// simplest and has the lowest lateness. A slow task delays every later one,
/// as in Java; use a pool-backed scheduler when tasks block.
///
/// See the [module docs](self) for how it differs from `java.util.Timer`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, Scheduler, SchedulerExt};
///
/// let timer = HeapTimer::builder().thread_name("reminders").build()?;
/// let greeting = timer.schedule(Duration::from_millis(10), || "hello").unwrap();
/// assert_eq!(greeting.get().unwrap(), "hello");
/// timer.shutdown();
/// assert!(timer.await_termination(Duration::from_secs(10)));
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct HeapTimer {
    shared: Arc<Shared>,
    anchors: Anchors,
}

/// Configures a [`HeapTimer`].
///
/// # Examples
///
/// ```
/// use schedulers::{HeapTimer, ManualClock};
///
/// let timer = HeapTimer::builder()
///     .clock(ManualClock::new())
///     .pending_limit(10_000)
///     .thread_name("my-timer")
///     .build()?;
/// # drop(timer);
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Debug)]
pub struct HeapTimerBuilder {
    common: Common,
    spin: Duration,
    periodic_slack: Duration,
}

/// The default [`periodic_slack`](HeapTimerBuilder::periodic_slack): a
/// periodic run may start up to 50 µs late, the timer slack of the JDK's
/// threads.
pub const DEFAULT_PERIODIC_SLACK: Duration = Duration::from_micros(50);

impl HeapTimer {
    /// A timer on the system clock, with default settings.
    ///
    /// # Errors
    ///
    /// [`Error::is_thread_spawn`](crate::Error::is_thread_spawn) if the
    /// operating system refuses to start the timer thread.
    pub fn new() -> Result<HeapTimer, Error> {
        HeapTimer::builder().build()
    }

    /// A builder to set the clock, pending limit, thread name and shutdown
    /// policy.
    pub fn builder() -> HeapTimerBuilder {
        HeapTimerBuilder {
            common: Common::new("heap-timer"),
            spin: Duration::ZERO,
            periodic_slack: DEFAULT_PERIODIC_SLACK,
        }
    }

    /// Removes cancelled entries from the heap now and returns how many,
    /// like `Timer.purge()`. Never needed for correctness or memory
    /// (purging also happens automatically), only to release memory early.
    pub fn purge(&self) -> usize {
        self.shared.purge_now()
    }
}

impl HeapTimerBuilder {
    common_builder_methods!();
    periodic_slack_method!(
        "[`DEFAULT_PERIODIC_SLACK`], 50 µs, the timer slack the JDK's threads run with"
    );

    /// Busy-waits the last `spin` before each deadline instead of sleeping
    /// through it. A timed sleep on Linux wakes tens of microseconds late;
    /// spinning trades CPU (up to `spin` per wake-up) for lower lateness.
    /// Default zero: always sleep. Has no effect on a
    /// [`ManualClock`](crate::ManualClock).
    pub fn spin(mut self, spin: Duration) -> Self {
        self.spin = spin;
        self
    }

    /// Starts the timer thread and returns the timer.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_setting`](crate::Error::is_invalid_setting) for a
    /// setting it cannot honour, [`Error::is_thread_spawn`](crate::Error::is_thread_spawn)
    /// if the operating system refuses to start the thread.
    pub fn build(self) -> Result<HeapTimer, Error> {
        self.common.validate()?;
        crate::builder::check_periodic_slack(self.periodic_slack)?;
        let shared = Shared::new(Config {
            name: self.common.thread_name.clone(),
            run_figures: self.common.run_figures,
            system_clock: self.common.system_clock,
            clock: self.common.clock.clone(),
            queue: Queue::Heap(IndexedHeap::new()),
            executor: Executor::inline(),
            policy: self.common.policy,
            pending_limit: self.common.pending_limit,
            spin_budget: self.common.spin_budget,
            timer_slack: self.common.timer_slack,
            periodic_slack: self.periodic_slack,
            remove_on_cancel: false,
        });
        crate::timer_thread::spawn(&shared, &self.common.thread_name, self.spin)?;
        let anchors = Anchors::new(&shared);
        Ok(HeapTimer { shared, anchors })
    }
}

impl AsShared for HeapTimer {
    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn anchors(&self) -> &Anchors {
        &self.anchors
    }
}

impl Drop for HeapTimer {
    /// Like an unreachable `Timer`: no new tasks, and the thread exits once
    /// the pending one-shots have run.
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

impl fmt::Debug for HeapTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapTimer")
            .field("metrics", &self.shared.metrics())
            .finish()
    }
}
