//! `HierarchicalWheelTimer`: a clone of Kafka's `SystemTimer`, hierarchical
//! timing wheels plus a delay queue of buckets.
//!
//! # Implementation
//!
//! The pure core is [`HierarchicalWheel`]:
//! wheels with lazily created overflow levels, Kafka's `TimerTaskList`
//! buckets as index-linked lists in one slab, and a delay queue of buckets
//! keyed by their earliest deadline. A deadline of `d` ns is due at tick
//! `ceil(d / tick)`.
//!
//! One driver thread (Kafka's reaper) sleeps until the earliest *bucket*
//! expires, not from tick to tick. A bucket expires at its earliest timer
//! (Kafka: at the start of its range), so with 10⁵ timers an hour away the
//! driver does not wake at all in that hour, and when they come due it wakes
//! at most once per millisecond that holds a deadline. When it wakes it
//! advances the wheels, which re-insert the timers of each expired bucket
//! into finer wheels, and runs the timers now due, on its own thread by
//! default or on an [`Executor`] (Kafka hands them to a worker pool, which
//! costs a hand-off per run but keeps a slow task from holding up the
//! wheel). A worker claims a task when it starts it, so a task waiting for
//! a busy worker can still be cancelled, reset or abandoned. A periodic task
//! re-enters the wheel when its run ends.
//!
//! A bucket is keyed by the exact earliest deadline among its timers, so by
//! default a timer fires at its own deadline, late only by the thread's
//! wake-up latency; with [`precise(false)`](HierarchicalWheelTimerBuilder::precise)
//! it fires at the end of its tick, as in Kafka.
//!
//! The wheels sit behind the driver's mutex, as Kafka's sit behind its
//! read-write lock, but callers never take it: `submit` leaves the timer in
//! the caller's lane and wakes the driver only if the new timer is due
//! before the driver's planned wake-up (the driver takes the lanes in
//! whenever it wakes, never later than the earliest deadline in them). Cancel is one CAS on the timer's state word, where
//! Kafka unlinks the entry at once under its bucket's lock: a timer not yet
//! taken in never reaches the wheels; the dead entry of one that did leaves
//! its bucket when the bucket is flushed, in a bulk purge once dead entries
//! outnumber live ones, or at once when no live timer is left, so the
//! driver never sleeps until a bucket of cancelled timers only while
//! nothing else waits. `reset` is a CAS and a lane entry; the driver moves
//! the node to its new bucket in O(1).
//!
//! # Differences from Kafka's `SystemTimer`
//!
//! - **Never early, on time.** Kafka may run a task up to a tick early;
//!   here a timer fires at its deadline (or, in tick mode, at the end of
//!   its tick).
//! - **Tasks run on the driver thread by default**, not on a worker pool.
//! - **A bucket expires at its earliest timer**, not at the start of its
//!   range, so a small bucket's cascade never costs a wake-up of its own
//!   (see [`core::HierarchicalWheel`](crate::core::HierarchicalWheel)): a
//!   timer an hour away wakes nobody before its hour. A bucket of more than
//!   256 timers moves down ahead of its earliest timer (early enough to be
//!   done by then, where the level below allows), 256 timers per pass of
//!   the driver, so a cascade of thousands does not make the timers due
//!   meanwhile late (with 10^5 timers over 2 s, lateness p99 went from
//!   239–527 µs to 76 µs). A bucket whose timers are all due in one tick
//!   (a burst set for one instant) moves down whole, in one step.
//! - **New timers wait outside the wheels** until the earliest of them may
//!   come due (see [`core::HierarchicalWheel`](crate::core::HierarchicalWheel)'s
//!   new timers): one cancelled before then is purged without ever being
//!   placed in a bucket. Kafka adds each to its bucket at once.
//! - **No polling reaper.** Kafka's reaper polls the delay queue every
//!   200 ms at most; this driver blocks until the earliest bucket, and a
//!   submit into an earlier bucket wakes it.
//! - **The contract's extras**: periodic tasks, `reset`, typed errors, ties
//!   in submission order within a tick, panics reported on the handle (Kafka
//!   swallows them into a `Future` nobody reads), shutdown policies.
//!
//! # Costs
//!
//! Schedule, cancel and reset take no lock of the driver's (see the crate
//! docs); the driver's insert and move are O(1), and each timer is
//! re-inserted once per wheel level it descends through. A pending timer
//! costs 44 bytes (its 4-byte state word, its 20-byte slot body, a 20-byte
//! list node), plus `levels × size` buckets.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::builder::{common_builder_methods, wheel_tick, Common};
use crate::core::{HierarchicalWheel, Precision};
use crate::error::{Error, Setting};
use crate::executor::Executor;
use crate::handle::Anchors;
use crate::scheduler::AsShared;
use crate::shared::{Config, Queue, Shared};

/// The default tick: 1 ms, as Kafka's `SystemTimer`.
pub const DEFAULT_TICK: Duration = Duration::from_millis(1);
/// The default number of buckets per wheel: 20, as Kafka's `SystemTimer`.
pub const DEFAULT_WHEEL_SIZE: usize = 20;
/// The largest wheel size the builder accepts.
pub const MAX_WHEEL_SIZE: usize = 1 << 16;

/// A Kafka `SystemTimer`-style scheduler: hierarchical timing wheels whose
/// buckets wait in a delay queue, one driver thread that sleeps until the
/// earliest bucket expires.
///
/// Pick it for very many timers, most of them cancelled or far away
/// (request timeouts, session expiry): schedule, cancel and reset are O(1),
/// and an idle timer costs no CPU however many timers wait. Tasks start at
/// their deadline, never before.
///
/// See the [module docs](self) for how it works and differs from Kafka.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HierarchicalWheelTimer, Scheduler, SchedulerExt};
///
/// let timer = HierarchicalWheelTimer::builder().tick(Duration::from_millis(1)).wheel_size(20).build()?;
/// let answer = timer.schedule(Duration::from_millis(5), || 6 * 7).unwrap();
/// assert_eq!(answer.get().unwrap(), 42);
/// timer.shutdown();
/// assert!(timer.await_termination(Duration::from_secs(10)));
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct HierarchicalWheelTimer {
    shared: Arc<Shared>,
    anchors: Anchors,
    tick: Duration,
}

/// Configures a [`HierarchicalWheelTimer`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{Executor, HierarchicalWheelTimer, ManualClock};
///
/// let timer = HierarchicalWheelTimer::builder()
///     .clock(ManualClock::new())
///     .tick(Duration::from_millis(10))
///     .wheel_size(64)
///     .executor(Executor::pool(4)?)
///     .thread_name("timeouts")
///     .build()?;
/// # drop(timer);
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Debug)]
pub struct HierarchicalWheelTimerBuilder {
    common: Common,
    tick: Duration,
    wheel_size: usize,
    executor: Executor,
    precise: bool,
}

impl HierarchicalWheelTimer {
    /// A timer with Kafka's defaults: 1 ms tick, 20 buckets per wheel, tasks
    /// on a worker thread of its own.
    ///
    /// # Errors
    ///
    /// [`Error::is_thread_spawn`](crate::Error::is_thread_spawn) if the
    /// operating system refuses to start the driver thread.
    pub fn new() -> Result<HierarchicalWheelTimer, Error> {
        HierarchicalWheelTimer::builder().build()
    }

    /// A builder to set the tick, wheel size, executor, clock, pending
    /// limit, thread name and shutdown policy.
    pub fn builder() -> HierarchicalWheelTimerBuilder {
        HierarchicalWheelTimerBuilder {
            common: Common::new("hierarchical-wheel-timer"),
            tick: DEFAULT_TICK,
            wheel_size: DEFAULT_WHEEL_SIZE,
            executor: Executor::inline(),
            precise: true,
        }
    }

    /// The tick: the wheel's resolution.
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// When the driver next has work: the earliest bucket expiration (or
    /// now, if a timer is already due), or `None` with no timer pending.
    /// This is what the driver sleeps until. Cancelled timers left in their
    /// buckets are purged first, so they do not count.
    pub fn next_expiration(&self) -> Option<Instant> {
        self.shared.next_expiration()
    }

    /// How many times the driver thread has woken from a wait: timed waits
    /// that ran out, submissions of an earlier bucket, clock wake-ups and
    /// spurious ones alike. The measure of an idle timer's cost.
    pub fn driver_wakeups(&self) -> u64 {
        self.shared.wakeups()
    }

    /// How many wheel levels exist (they are created lazily, for timers
    /// beyond the span of the levels below).
    pub fn levels(&self) -> usize {
        let mut driver = self.shared.lock();
        self.shared.intake_for_query(&mut driver);
        match &driver.queue {
            Queue::Hier(wheels) => wheels.levels(),
            _ => 1,
        }
    }
}

impl HierarchicalWheelTimerBuilder {
    common_builder_methods!();

    /// The wheel's resolution (default 1 ms): the unit of its buckets, and
    /// with [`precise(false)`](Self::precise) the most a task starts late.
    /// `build` refuses a zero tick, or one so long that a wheel's turn does
    /// not fit the time range of 584 years.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Buckets per wheel (default 20); `build` refuses fewer than 2 and more
    /// than [`MAX_WHEEL_SIZE`].
    pub fn wheel_size(mut self, size: usize) -> Self {
        self.wheel_size = size;
        self
    }

    /// Whether a timer fires at its own deadline (true, the default) or at
    /// the end of its tick, as in Kafka (false). Exact firing costs nothing
    /// on schedule or cancel: a bucket is keyed by its earliest exact
    /// deadline, and the driver sleeps until then.
    pub fn precise(mut self, precise: bool) -> Self {
        self.precise = precise;
        self
    }

    /// Where expired tasks run: by default on the driver thread itself
    /// ([`Executor::inline`]), which saves a hand-off per run; an
    /// [`Executor::pool`] (Kafka's `SystemTimer` has one worker thread) keeps
    /// a slow task from delaying the wheel.
    pub fn executor(mut self, executor: Executor) -> Self {
        self.executor = executor;
        self
    }

    /// Starts the driver thread and returns the timer.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_setting`](crate::Error::is_invalid_setting) for a
    /// tick, wheel size or common setting it cannot honour,
    /// [`Error::is_thread_spawn`](crate::Error::is_thread_spawn) if the
    /// operating system refuses to start the driver thread.
    pub fn build(self) -> Result<HierarchicalWheelTimer, Error> {
        self.common.validate()?;
        if !(2..=MAX_WHEEL_SIZE).contains(&self.wheel_size) {
            return Err(Error::invalid(
                Setting::WheelSize,
                format!(
                    "{} buckets per wheel; 2 to {MAX_WHEEL_SIZE} are supported",
                    self.wheel_size
                ),
            ));
        }
        let tick = wheel_tick(self.tick, Duration::from_nanos(1), self.wheel_size)?;
        let precision = if self.precise {
            Precision::Exact
        } else {
            Precision::Tick
        };
        let wheels = HierarchicalWheel::new(tick, self.wheel_size, 0, precision)
            .map_err(|e| Error::invalid(Setting::WheelSize, e.to_string()))?;
        let shared = Shared::new(Config {
            name: self.common.thread_name.clone(),
            run_figures: self.common.run_figures,
            system_clock: self.common.system_clock,
            clock: self.common.clock.clone(),
            queue: Queue::Hier(wheels),
            executor: self.executor,
            policy: self.common.policy,
            pending_limit: self.common.pending_limit,
            spin_budget: self.common.spin_budget,
            timer_slack: self.common.timer_slack,
            periodic_slack: Duration::ZERO,
            remove_on_cancel: false,
        });
        crate::timer_thread::spawn(&shared, &self.common.thread_name, Duration::ZERO)?;
        let anchors = Anchors::new(&shared);
        Ok(HierarchicalWheelTimer {
            shared,
            anchors,
            tick: Duration::from_nanos(tick),
        })
    }
}

impl AsShared for HierarchicalWheelTimer {
    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn anchors(&self) -> &Anchors {
        &self.anchors
    }
}

impl Drop for HierarchicalWheelTimer {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

impl fmt::Debug for HierarchicalWheelTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HierarchicalWheelTimer")
            .field("tick", &self.tick)
            .field("metrics", &self.shared.metrics())
            .finish()
    }
}
