//! `HashedWheelTimer`: a clone of Netty's `HashedWheelTimer`, the flat
//! hashed timing wheel with rounds.
//!
//! # Implementation
//!
//! Time is cut into ticks of a fixed length ([`HashedWheelTimerBuilder::tick`]).
//! A timer due at `d` belongs to tick `ceil(d / tick)` and sits in bucket
//! `tick mod buckets` of a ring; a timer one or more revolutions away stays
//! in its bucket for that many visits (Netty's `remainingRounds`). The ring is
//! the pure [`HashedWheel`]: each bucket is a list
//! threaded through one slab by index, so there is no allocation per timer
//! and an unlink is O(1). Timers themselves live in the scheduler's slab.
//!
//! One worker thread, like Netty's `Worker`, sleeps until the wheel's next
//! deadline, processes every tick up to now (all of them in one sweep when
//! a virtual clock jumped or the thread was late) and runs the timers that
//! came due, in tick order and submission order within a tick, inline on the
//! worker (Netty's default) or on an [`Executor`].
//!
//! **The worker does not tick through empty time.** The wheel keeps an
//! occupancy bitmap and each bucket's earliest deadline, so with only far
//! timers pending the worker sleeps until the first one is due instead of
//! waking every tick as Netty does (about 2 % of a core at a 1 ms tick).
//!
//! **Submission** goes through the caller's lane, as Netty's goes through
//! its submit queue: the worker takes new timers in whenever it wakes (and
//! it never sleeps past the earliest deadline waiting in a lane), so
//! callers setting far timeouts never wake it, and a timer cancelled before
//! then never reaches the wheel (Netty skips those too, but wakes every
//! tick to drain its queue). New timers then wait in the wheel's staging
//! list until the earliest of them may come due, and go to their buckets
//! together: one cancelled before then (most ack and request timeouts) is
//! dropped by a purge without ever touching the bucket table.
//! **Cancel** is one CAS on the timer's state word and no
//! lock; a timer already on the wheel is marked for the worker, and its
//! dead entry is unlinked when its bucket is visited, or by a bulk purge
//! once dead entries outnumber live ones. **Reset** is a CAS and a lane
//! entry; the worker moves the timer in O(1), deferring a later move to the
//! visit of its old bucket (go-zero's `MoveTimer`).
//!
//! # Timing
//!
//! By default a timer fires at its own deadline: the worker reads the exact
//! deadlines of the bucket it is about to reach and sleeps until the
//! earliest, so a timer is late only by the thread's wake-up latency, as on
//! a heap, while storage and cancel stay O(1). With
//! [`precise(false)`](HashedWheelTimerBuilder::precise) it behaves as
//! Netty's: a timer due at `d` fires when the clock reaches the end of its
//! tick, `ceil(d / tick) * tick`, at most one tick plus wake-up latency late
//! (a deadline on a tick boundary fires on it). Either way never early.
//!
//! # Costs
//!
//! Schedule, cancel and reset take no lock of the worker's (see the crate
//! docs); the worker's insert and move are O(1). Every revolution the
//! worker reads each pending timer in a visited bucket once; buckets whose
//! timers are all rounds away are skipped without a visit. A pending timer
//! costs 44 bytes: its 4-byte state word, its 20-byte slot body (the
//! closure, in place up to 16 bytes of captures) and a 20-byte list node.
//!
//! # Defaults
//!
//! Netty's defaults (100 ms tick, 512 buckets) suit network timeouts that
//! tolerate 100 ms of lateness. An application scheduler is also asked for
//! short delays, so the tick here defaults to **1 ms**: in tick mode a
//! timer is at most 1 ms plus wake-up latency late. The worker wakes only
//! for a tick with a timer due: up to 1000 times a second when every tick
//! has one, never for an empty tick.
//!
//! The wheel defaults to **16 384 buckets** rather than 512 or 1024. The
//! worker never wakes for an empty tick, nor for a bucket whose timers are
//! all rounds away; but once a bucket holds a timer due this revolution it
//! is visited, and its other timers are read again every revolution until
//! they are due, so with a 1 ms tick a small ring reads far timers often.
//! Measured with a million timers spread evenly over the next hour (278
//! fires a second; `cargo run --release -p schedulers --example
//! wheel_idle`, 10 s windows, load average 0.5, 2-core VM, 2026-11-26):
//!
//! | buckets | revolution | bucket table | wake-ups/s | CPU, one core (exact / tick mode) |
//! |---|---|---|---|---|
//! | 1 024 | 1 s | 16 KB | 278 | 1.0 % / 0.8 % |
//! | 4 096 | 4 s | 64 KB | 278 | 0.5 % / 0.3 % |
//! | **16 384** | **16 s** | **256 KB** | **278** | **0.2 % / 0.2 %** |
//! | 65 536 | 66 s | 1 MB | 278 | 0.1 % / 0.1 % |
//!
//! 16 384 buckets keep that cost small at 256 KB per timer instance, and
//! one revolution (16 s) covers request, ack and idle timeouts, so the
//! common timer is never revisited before it fires. Programs with many
//! instances or few timers can pick a smaller ring; programs with 10^7
//! long timers a larger one (or a hierarchical wheel).
//!
//! # Differences from Netty's `HashedWheelTimer`
//!
//! - Periodic tasks (fixed rate, fixed delay), reset, typed results and
//!   shutdown policies come from the crate's contract; Netty has one-shot
//!   timeouts only.
//! - The tick may be as short as 1 µs (Netty raises anything under 1 ms to
//!   1 ms) and the wheel has at most 2^24 buckets (Netty: 2^30).
//! - A timer fires at its exact deadline by default (Netty: at the tick
//!   after it); in tick mode a deadline is rounded *up* to a tick, so a
//!   timer is never early. Timers of one tick run in submission order even
//!   after a reset.
//! - A panicking task is caught and reported on its handle (Netty logs it).
//! - `shutdown` keeps pending one-shots by default (Netty's `stop` returns
//!   them unrun); `shutdown_now` returns them, as `stop` does.
//! - A worker lagging many ticks behind (a virtual clock, a suspended
//!   process) catches up in one sweep of the ring rather than tick by tick.
//! - The worker sleeps through buckets that hold no timer due this
//!   revolution instead of waking every tick.
//! - New timers go to their buckets when the earliest of them may come due,
//!   not at the next tick (see [`HashedWheel`]'s staging).
//! - Submission takes the caller's lane's lock (a spin lock other callers
//!   do not share) instead of pushing to a lock-free queue.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::builder::{common_builder_methods, wheel_tick, Common};
use crate::core::{HashedWheel, Precision};
use crate::error::{Error, Setting};
use crate::executor::Executor;
use crate::handle::Anchors;
use crate::scheduler::AsShared;
use crate::shared::{Config, Queue, Shared};

/// The default tick: 1 ms.
pub const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// The default number of buckets: 16 384 (one revolution ≈ 16 s at 1 ms;
/// see the module docs for why).
pub const DEFAULT_WHEEL_SIZE: usize = 16_384;

/// The shortest tick accepted.
pub const MIN_TICK: Duration = Duration::from_micros(1);

/// The largest ring accepted: 2^24 buckets.
pub const MAX_WHEEL_SIZE: usize = crate::core::MAX_BUCKETS;

/// A Netty-style hashed wheel timer: one worker thread ticking a ring of
/// buckets, O(1) schedule, cancel and reset.
///
/// Pick it for many timers (thousands to millions), most of them cancelled
/// or reset before they fire (I/O and acknowledgement timeouts,
/// keep-alives).
///
/// See the [module docs](self) for the algorithm, defaults and how it
/// differs from Netty.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HashedWheelTimer, Scheduler, SchedulerExt};
///
/// let timer = HashedWheelTimer::builder().tick(Duration::from_millis(1)).wheel_size(512).build()?;
/// let ack_timeout = timer.schedule(Duration::from_secs(30), || "resend").unwrap();
/// assert!(ack_timeout.handle().cancel()); // the ack arrived
/// let ping = timer.schedule(Duration::from_millis(5), || "ping").unwrap();
/// assert_eq!(ping.get().unwrap(), "ping");
/// timer.shutdown();
/// assert!(timer.await_termination(Duration::from_secs(10)));
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct HashedWheelTimer {
    shared: Arc<Shared>,
    anchors: Anchors,
    tick: Duration,
    buckets: usize,
}

/// Configures a [`HashedWheelTimer`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{Executor, HashedWheelTimer, ManualClock};
///
/// let timer = HashedWheelTimer::builder()
///     .clock(ManualClock::new())
///     .tick(Duration::from_millis(10))
///     .wheel_size(300) // rounded up to 512
///     .pending_limit(100_000)
///     .executor(Executor::pool(2)?)
///     .build()?;
/// assert_eq!(timer.wheel_size(), 512);
/// assert_eq!(timer.tick(), Duration::from_millis(10));
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Debug)]
pub struct HashedWheelTimerBuilder {
    common: Common,
    tick: Duration,
    wheel_size: usize,
    executor: Executor,
    precise: bool,
}

impl HashedWheelTimer {
    /// A timer on the system clock with the default 1 ms tick and 16 384
    /// buckets, running tasks on its worker thread.
    ///
    /// # Errors
    ///
    /// [`Error::is_thread_spawn`](crate::Error::is_thread_spawn) if the
    /// operating system refuses to start the worker thread.
    pub fn new() -> Result<HashedWheelTimer, Error> {
        HashedWheelTimer::builder().build()
    }

    /// A builder for the tick, wheel size, executor, clock, pending limit,
    /// thread name and shutdown policy.
    pub fn builder() -> HashedWheelTimerBuilder {
        HashedWheelTimerBuilder {
            common: Common::new("hashed-wheel-timer"),
            tick: DEFAULT_TICK,
            wheel_size: DEFAULT_WHEEL_SIZE,
            executor: Executor::inline(),
            precise: true,
        }
    }

    /// The tick length: the wheel's resolution (and, with
    /// [`precise(false)`](HashedWheelTimerBuilder::precise), the most a
    /// timer fires late, plus wake-up latency).
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// The number of buckets in the ring (a power of two).
    pub fn wheel_size(&self) -> usize {
        self.buckets
    }

    /// When the worker next has work: the earliest deadline due in a bucket it
    /// will reach, or `None` with no timer pending. This is what the worker
    /// sleeps until: with only far timers pending it does not wake every
    /// tick. Cancelled timers left in their buckets are purged first.
    pub fn next_expiration(&self) -> Option<Instant> {
        self.shared.next_expiration()
    }

    /// How many times the worker thread has woken from a wait: timed waits
    /// that ran out, earlier submissions, clock wake-ups and spurious ones
    /// alike. The measure of an idle timer's cost.
    pub fn driver_wakeups(&self) -> u64 {
        self.shared.wakeups()
    }
}

impl HashedWheelTimerBuilder {
    common_builder_methods!();

    /// The tick length (default 1 ms): the resolution of the wheel; one
    /// revolution lasts `tick * buckets`. `build` refuses one shorter than
    /// [`MIN_TICK`], or so long that a revolution does not fit the time
    /// range of 584 years.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The number of buckets (default 16 384), rounded up to a power of two;
    /// `build` refuses 0 and more than [`MAX_WHEEL_SIZE`]. One revolution
    /// lasts `tick * buckets`.
    pub fn wheel_size(mut self, buckets: usize) -> Self {
        self.wheel_size = buckets;
        self
    }

    /// Whether a timer fires at its own deadline (true, the default) or at
    /// the end of its tick, as in Netty (false). Exact firing costs nothing
    /// on schedule or cancel: the worker reads the exact deadlines of the
    /// bucket it is about to reach and sleeps until the earliest.
    pub fn precise(mut self, precise: bool) -> Self {
        self.precise = precise;
        self
    }

    /// Where due tasks run: [`Executor::inline`] (the default, on the
    /// worker thread as in Netty) or an [`Executor::pool`], so that a slow
    /// task does not delay the ticks.
    pub fn executor(mut self, executor: Executor) -> Self {
        self.executor = executor;
        self
    }

    /// Starts the worker thread and returns the timer.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_setting`](crate::Error::is_invalid_setting) for a
    /// tick, wheel size or common setting it cannot honour,
    /// [`Error::is_thread_spawn`](crate::Error::is_thread_spawn) if the
    /// operating system refuses to start the worker thread.
    pub fn build(self) -> Result<HashedWheelTimer, Error> {
        self.common.validate()?;
        if !(1..=MAX_WHEEL_SIZE).contains(&self.wheel_size) {
            return Err(Error::invalid(
                Setting::WheelSize,
                format!(
                    "{} buckets; 1 to {MAX_WHEEL_SIZE} are supported",
                    self.wheel_size
                ),
            ));
        }
        let buckets = self.wheel_size.next_power_of_two();
        let tick = wheel_tick(self.tick, MIN_TICK, buckets)?;
        let precision = if self.precise {
            Precision::Exact
        } else {
            Precision::Tick
        };
        // Time starts at 0: the scheduler counts from its creation.
        let wheel = HashedWheel::new(tick, buckets, 0, precision)
            .map_err(|e| Error::invalid(Setting::WheelSize, e.to_string()))?;
        let shared = Shared::new(Config {
            name: self.common.thread_name.clone(),
            run_figures: self.common.run_figures,
            system_clock: self.common.system_clock,
            clock: self.common.clock.clone(),
            queue: Queue::Wheel(wheel),
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
        Ok(HashedWheelTimer {
            shared,
            anchors,
            tick: Duration::from_nanos(tick),
            buckets,
        })
    }
}

impl AsShared for HashedWheelTimer {
    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn anchors(&self) -> &Anchors {
        &self.anchors
    }
}

impl Drop for HashedWheelTimer {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

impl fmt::Debug for HashedWheelTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashedWheelTimer")
            .field("tick", &self.tick)
            .field("buckets", &self.buckets)
            .field("metrics", &self.shared.metrics())
            .finish()
    }
}
