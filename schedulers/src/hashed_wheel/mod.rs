//! `HashedWheelTimer`: a clone of Netty's `HashedWheelTimer`, the flat
//! hashed timing wheel with rounds.
//!
//! # Implementation
//!
//! Time is cut into ticks of a fixed length ([`HashedWheelTimerBuilder::tick`]).
//! A timer due at `d` belongs to tick `ceil(d / tick)` and sits in slot
//! `tick & (slots - 1)` of a ring (the private `wheel` module is the pure core: a slab of
//! timers with index-linked lists per slot). One worker thread wakes at
//! tick boundaries (see Costs for which) and, like Netty's `Worker.run`:
//!
//! 1. drains the *cancel queue* and unlinks each cancelled timer from its
//!    slot in O(1) (its slab key is kept in the task cell);
//! 2. moves at most [`TRANSFER_BATCH`] newly submitted or reset timers from
//!    the lock-free *submit queue* (a `crossbeam_queue::SegQueue`) into the
//!    wheel, so a flood of submissions cannot stall a tick (Netty: 100 000);
//! 3. processes every tick up to now (all of them when a virtual clock
//!    jumped, or the thread was late) and runs the timers that came due, in
//!    deadline-tick order and submission order within a tick, inline on the
//!    worker (Netty's default) or on an [`Executor::pool`]. On a pool a due
//!    timer waits in the timer's hand-off queue until a worker starts it,
//!    and only then is it claimed: while it waits behind busy workers,
//!    cancel, reset and `shutdown_now` still reach it.
//!
//! **Submitting never takes the wheel's lock**: `submit`, `reset` and
//! `cancel` only push onto a queue. The one exception is waking a parked
//! worker whose next wake-up is too late for the new timer (when the wheel
//! was empty, or on a virtual clock), which takes the worker's mutex just to
//! notify it.
//!
//! **Cancel** is a CAS on the task cell by the handle (the task can never
//! start after it returned true), plus a push of the cell onto the cancel
//! queue. The worker unlinks the timer when it next wakes (within
//! [`MAX_IDLE_TICKS`] ticks), freeing its slab entry and dropping its
//! reference to the task. Pending-limit
//! capacity is freed by the CAS itself, at once. A queue rather than a
//! direct unlink under the wheel's lock keeps `cancel` off the worker's
//! lock and moves the cache misses of unlinking (the entry and its two
//! neighbours) to the worker thread, where a tick's batch overlaps them.
//!
//! **Reset** is a CAS to a fresh sequence number plus a push onto the
//! submit queue; the worker then moves the timer in O(1), deferring the move
//! until the cursor reaches its old slot when that comes first (go-zero's
//! `MoveTimer`; see the `wheel` module).
//!
//! # Timing
//!
//! A timer never fires early, and fires at most one tick plus the thread's
//! wake-up latency late: its tick `ceil(d / tick)` is processed when the
//! clock reaches `ceil(d / tick) * tick`. A deadline exactly on a tick
//! boundary fires on that boundary.
//!
//! # Costs
//!
//! Schedule, cancel and reset are O(1) on the caller (a CAS and a queue
//! push) and O(1) on the worker. Every tick the worker visits one slot,
//! reading each timer in it once per revolution: with `n` pending timers the
//! worker reads `n / (slots * tick)` timers per second. With no timer
//! pending it sleeps until one is submitted. With timers pending it wakes
//! at the next tick whose slot is not empty — every tick once there are
//! more timers than slots, as in Netty — but at least every
//! [`MAX_IDLE_TICKS`] ticks, so queued submissions and cancels are
//! drained; a submission or reset due before that wake-up wakes it early.
//! Netty wakes every tick regardless, which costs an idle process about
//! 1.5–2.5 % of a core at a 1 ms tick on the test machine even with a
//! single timer pending; skipping empty slots brings that near zero.
//!
//! # Defaults
//!
//! Netty's defaults (100 ms tick, 512 slots) suit network timeouts that
//! tolerate 100 ms of lateness. An application scheduler is also asked for
//! short delays, so the tick here defaults to **1 ms**: a timer is at most
//! 1 ms plus wake-up latency late. The price is a worker that wakes up to
//! 1000 times a second while timers are pending (see Costs).
//!
//! The wheel defaults to **16 384 slots** rather than 512 or 1024, because
//! a flat wheel reads every pending timer once per revolution, and with a
//! 1 ms tick a small ring turns fast. Measured idle cost with 10^6 timers
//! pending 1 to 2 hours out (`examples/wheel_lateness.rs`, 1 ms tick):
//!
//! | slots | revolution | slot table | CPU, one core |
//! |---|---|---|---|
//! | 1 024 | 1 s | 8 KB | 22 % |
//! | 4 096 | 4 s | 32 KB | 11 % |
//! | **16 384** | **16 s** | **128 KB** | **4.6 %** |
//! | 65 536 | 66 s | 512 KB | 1.6 % (the wake-up cost alone) |
//!
//! 16 384 slots keep that cost small for a million far timers at 128 KB per
//! timer instance, and one revolution (16 s) covers request, ack and idle
//! timeouts, so the common timer is never revisited before it fires.
//! Programs with many instances or few timers can pick a smaller ring;
//! programs with 10^7 long timers a larger one (or a hierarchical wheel).
//!
//! # Differences from Netty's `HashedWheelTimer`
//!
//! - Periodic tasks (fixed rate, fixed delay), reset, typed results and
//!   shutdown policies come from the crate's contract; Netty has one-shot
//!   timeouts only.
//! - A tick under 1 µs, or a wheel of 0 or more than 2^24 slots, is refused
//!   with a typed error (Netty raises a tick under 1 ms to 1 ms, and allows
//!   2^30 slots). As in Netty, a revolution must fit the time range and the
//!   size is rounded up to a power of two.
//! - A deadline is rounded *up* to a tick, so a timer is never early, and
//!   timers of one tick run in submission order even after a reset.
//! - A panicking task is caught and reported on its handle (Netty logs it).
//! - `shutdown` keeps pending one-shots by default (Netty's `stop` returns
//!   them unrun); `shutdown_now` returns them, as `stop` does.
//! - A worker lagging many ticks behind (a virtual clock, a suspended
//!   process) catches up in one sweep of the ring rather than tick by tick.
//! - The worker skips runs of empty slots instead of waking every tick.

#[cfg(test)]
mod test;
mod wheel;

use std::fmt;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;

use crate::clock::{lock, wait_until, Clock, Wakeable};
use crate::error::{Error, Setting};
use crate::executor::{Dispatch, Due, Executor, Handoff};
use crate::handle::TaskHandle;
use crate::scheduler::{
    common_builder_methods, spawn, wheel_tick, Base, Common, Core, Metrics, Scheduler,
};
use crate::task::{CancelOutcome, Task, TaskCell, TaskRef};
use wheel::{Expired, Wheel};

/// The most submitted (or reset) timers the worker moves into the wheel
/// before it expires the current tick, as Netty's 100 000 per tick.
pub const TRANSFER_BATCH: usize = 100_000;

/// The default tick: 1 ms.
pub const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// The default number of slots: 16 384 (one revolution ≈ 16 s at 1 ms;
/// see the module docs for why).
pub const DEFAULT_WHEEL_SIZE: usize = 16_384;

/// The most ticks the worker sleeps while timers are pending: it wakes at
/// the next tick whose slot holds a timer, or after this many ticks, so
/// that the submit and cancel queues are drained at least that often.
pub const MAX_IDLE_TICKS: u64 = 64;

/// The shortest tick accepted; `build` refuses a shorter one.
pub const MIN_TICK: Duration = Duration::from_micros(1);

/// The most slots accepted (2^24: a 128 MB slot table; Netty allows 2^30).
pub const MAX_WHEEL_SIZE: usize = wheel::MAX_SLOTS;

/// A Netty-style hashed wheel timer: one worker thread ticking a ring of
/// slots, lock-free submission, O(1) schedule, cancel and reset.
///
/// Pick it for many timers (thousands to millions), most of them cancelled
/// or reset before they fire (I/O and acknowledgement timeouts,
/// keep-alives), when a tick of lateness is acceptable.
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
/// assert!(ack_timeout.cancel()); // the ack arrived
/// let ping = timer.schedule(Duration::from_millis(5), || "ping").unwrap();
/// assert_eq!(ping.get().unwrap(), "ping");
/// timer.shutdown();
/// assert!(timer.await_termination(Duration::from_secs(10)));
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct HashedWheelTimer {
    shared: Arc<Shared>,
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
}

/// Keeps a field on cache lines of its own, so that the worker's writes
/// (the wheel's mutex) and the submitters' counters do not share lines
/// with each other or with the scheduler's `Base` counters.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The worker's read-only copy of the clock and tick.
struct WorkerView {
    clock: Arc<dyn Clock>,
    timebase: crate::clock::Timebase,
    tick_ns: u64,
}

/// A submitted or moved timer on its way to the wheel.
struct Pending {
    cell: TaskRef,
    deadline: u64,
    seq: u64,
}

struct Shared {
    base: Base,
    /// What the worker reads every round, copied out of `base` onto a line
    /// of its own: `base`'s lines are written by every submission.
    worker: Padded<WorkerView>,
    executor: Executor,
    state: Padded<Mutex<State>>,
    /// The worker parks here; `wake` and late submissions notify it.
    wakeup: Condvar,
    /// `await_termination` waits here.
    terminated: Condvar,
    /// Newly submitted, reset and re-queued periodic timers.
    submitted: SegQueue<Pending>,
    /// Cells cancelled while pending, to unlink from the wheel.
    cancels: SegQueue<TaskRef>,
    /// 0 while the worker is awake; else the tick it will wake at by itself
    /// (`u64::MAX` when it waits until notified).
    wake_at: Padded<AtomicU64>,
    /// Submissions between their shutdown check and their queue push.
    submitting: Padded<AtomicUsize>,
    /// Due tasks handed to a pool executor and not yet started.
    handoff: Handoff,
}

struct State {
    wheel: Wheel<TaskRef>,
    /// Cells that left the wheel or the queues, to be dropped once the lock
    /// is released: a task's closure or value may own the last reference to
    /// this timer, whose `Drop` takes the lock.
    graveyard: Vec<TaskRef>,
    /// The worker is running or dispatching expired timers.
    running: bool,
    terminated: bool,
}

impl HashedWheelTimer {
    /// A timer on the system clock with the default 1 ms tick and 16 384
    /// slots, running tasks on its worker thread.
    ///
    /// # Errors
    ///
    /// [`Error::is_thread_spawn`] if the operating system refuses to start
    /// the worker thread.
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
        }
    }

    /// The tick length: the most a timer fires late, plus wake-up latency.
    pub fn tick(&self) -> Duration {
        Duration::from_nanos(self.shared.worker.tick_ns)
    }

    /// The number of slots in the ring (a power of two).
    pub fn wheel_size(&self) -> usize {
        lock(&self.shared.state).wheel.slots()
    }
}

impl HashedWheelTimerBuilder {
    common_builder_methods!();

    /// The tick length (default 1 ms): the resolution of the wheel and the
    /// most a timer fires late, plus wake-up latency. `build` refuses one
    /// shorter than [`MIN_TICK`], or so long that a revolution
    /// (`tick * slots`) does not fit the time range of 584 years.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The number of slots (default 16 384), rounded up to a power of two;
    /// `build` refuses 0 and more than [`MAX_WHEEL_SIZE`]. One revolution
    /// lasts `tick * slots`; a pending timer is read once per revolution.
    pub fn wheel_size(mut self, slots: usize) -> Self {
        self.wheel_size = slots;
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
    /// [`Error::is_invalid_tick`], [`Error::is_invalid_wheel_size`],
    /// [`Error::is_invalid_pending_limit`] or
    /// [`Error::is_invalid_thread_name`] for a setting it cannot honour
    /// (nothing is adjusted silently); [`Error::is_thread_spawn`] if the
    /// operating system refuses to start the worker thread.
    pub fn build(self) -> Result<HashedWheelTimer, Error> {
        self.common.validate()?;
        if !(1..=MAX_WHEEL_SIZE).contains(&self.wheel_size) {
            return Err(Error::invalid(
                Setting::WheelSize,
                format!(
                    "{} slots; 1 to {MAX_WHEEL_SIZE} are supported",
                    self.wheel_size
                ),
            ));
        }
        let slots = self.wheel_size.next_power_of_two();
        let tick_ns = wheel_tick(self.tick, MIN_TICK, slots)?;
        let base = Base::new(&self.common);
        self.executor.bind(&base.clock);
        let shared = Arc::new(Shared {
            state: Padded(Mutex::new(State {
                wheel: Wheel::new(slots, base.now() / tick_ns),
                graveyard: Vec::new(),
                running: false,
                terminated: false,
            })),
            worker: Padded(WorkerView {
                clock: base.clock.clone(),
                timebase: base.timebase,
                tick_ns,
            }),
            base,
            executor: self.executor,
            wakeup: Condvar::new(),
            terminated: Condvar::new(),
            submitted: SegQueue::new(),
            cancels: SegQueue::new(),
            wake_at: Padded(AtomicU64::new(0)),
            submitting: Padded(AtomicUsize::new(0)),
            handoff: Handoff::default(),
        });
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        shared.base.clock.attach(weak);
        let worker = shared.clone();
        spawn(self.common.thread_name, move || worker.main_loop())?;
        Ok(HashedWheelTimer { shared })
    }
}

/// The tick a deadline (ns) belongs to: rounded up, so never early.
fn tick_of(deadline: u64, tick_ns: u64) -> u64 {
    deadline.div_ceil(tick_ns)
}

impl Shared {
    fn tick_of(&self, deadline: u64) -> u64 {
        tick_of(deadline, self.worker.tick_ns)
    }

    /// Now, in the wheel's ticks (rounded down).
    fn now_tick(&self) -> u64 {
        self.worker.timebase.ticks(self.worker.clock.now()) / self.worker.tick_ns
    }

    /// Netty's `Worker.run`: cancels, transfers, expire, run, wait.
    fn main_loop(self: Arc<Self>) {
        crate::clock::reduce_timer_slack();
        let mut expired: Vec<Expired<TaskRef>> = Vec::new();
        let mut state = lock(&self.state);
        loop {
            let cancels_left = self.drain_cancels(&mut state);
            let submissions_left = self.transfer(&mut state);
            let now = self.now_tick();
            state.wheel.advance(now, &mut expired);
            if !expired.is_empty() {
                for e in &expired {
                    e.item.slot.store(0, Relaxed);
                }
                state.running = true;
                drop(state);
                let due = expired.drain(..).map(|e| Due {
                    cell: e.item,
                    seq: e.seq,
                });
                self.executor.dispatch(&self, due);
                state = lock(&self.state);
                state.running = false;
                continue;
            }
            if cancels_left || submissions_left {
                continue;
            }
            if !state.graveyard.is_empty() {
                let graveyard = std::mem::take(&mut state.graveyard);
                drop(state);
                TaskCell::bury_all(graveyard);
                state = lock(&self.state);
                continue;
            }
            if self.base.is_shutdown()
                && state.wheel.is_empty()
                && self.submitting.load(SeqCst) == 0
                && self.submitted.is_empty()
                && self.handoff.in_flight() == 0
                // A reset whose push is still on its way keeps its task
                // pending: wait for it.
                && self.base.metrics().pending == 0
            {
                break;
            }
            // Park until the next tick whose slot holds a timer (at most
            // MAX_IDLE_TICKS away) if timers are pending, else until
            // something is submitted.
            let next = (!state.wheel.is_empty()).then(|| state.wheel.next_occupied(MAX_IDLE_TICKS));
            let timeout = next
                .and_then(|t| t.checked_mul(self.worker.tick_ns))
                .and_then(|ns| self.worker.timebase.instant(ns))
                .and_then(|at| self.worker.clock.wait_for(at));
            let wake_at = match (next, timeout) {
                (Some(t), Some(_)) => t,
                _ => u64::MAX,
            };
            self.wake_at.store(wake_at, SeqCst);
            fence(SeqCst);
            if !self.submitted.is_empty() || self.shutdown_waits_for_nothing(&state) {
                self.wake_at.store(0, SeqCst);
                continue;
            }
            self.base.clock.on_idle();
            state = match timeout {
                Some(t) => {
                    self.wakeup
                        .wait_timeout(state, t)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.wakeup.wait(state).unwrap_or_else(|e| e.into_inner()),
            };
            self.wake_at.store(0, SeqCst);
        }
        state.terminated = true;
        drop(state);
        self.terminated.notify_all();
        self.base.clock.on_idle();
    }

    /// True when shut down and only in-flight counters keep the worker: a
    /// recheck after publishing `wake_at`, so their last decrement (which
    /// notifies only a parked worker) is not missed.
    fn shutdown_waits_for_nothing(&self, state: &State) -> bool {
        self.base.is_shutdown()
            && state.wheel.is_empty()
            && self.submitting.load(SeqCst) == 0
            && self.handoff.in_flight() == 0
            && self.base.metrics().pending == 0
    }

    /// Unlinks cancelled timers; true if the batch limit left some queued.
    fn drain_cancels(&self, state: &mut State) -> bool {
        for _ in 0..TRANSFER_BATCH {
            let Some(cell) = self.cancels.pop() else {
                return false;
            };
            self.unlink(state, &cell);
            state.graveyard.push(cell);
        }
        !self.cancels.is_empty()
    }

    fn unlink(&self, state: &mut State, cell: &TaskRef) {
        let slot = cell.slot.load(Relaxed);
        if slot != 0 {
            let key = (slot - 1) as u32;
            if state.wheel.get(key).is_some_and(|c| Arc::ptr_eq(c, cell)) {
                let removed = state.wheel.cancel(key);
                state.graveyard.extend(removed);
                cell.slot.store(0, Relaxed);
            }
        }
    }

    /// Moves up to a batch of submissions into the wheel; true if the
    /// batch limit left some queued.
    fn transfer(&self, state: &mut State) -> bool {
        // Read once per batch, not per timer (its cache line is the one
        // submitters update): a `shutdown` landing mid-batch sweeps the
        // wheel under this same lock afterwards, so nothing escapes it.
        let shutdown = self.base.is_shutdown();
        for _ in 0..TRANSFER_BATCH {
            let Some(p) = self.submitted.pop() else {
                return false;
            };
            self.place_with(state, p, shutdown);
        }
        !self.submitted.is_empty()
    }

    /// Puts a live timer into the wheel, or moves it there if it already
    /// is; drops stale ones and applies the shutdown policy.
    fn place(&self, state: &mut State, p: Pending) {
        self.place_with(state, p, self.base.is_shutdown());
    }

    /// As [`Shared::place`], with the shutdown flag already read.
    fn place_with(&self, state: &mut State, p: Pending, shutdown: bool) {
        if !p.cell.is_live(p.seq) {
            state.graveyard.push(p.cell);
            return; // cancelled, reset again, or abandoned since
        }
        if shutdown && self.base.drops_at_shutdown(&p.cell) {
            let outcome = p.cell.cancel();
            if outcome.stopped() {
                self.base.count_cancel(outcome);
            }
            self.unlink(state, &p.cell);
            state.graveyard.push(p.cell);
            return;
        }
        let tick = self.tick_of(p.deadline);
        let slot = p.cell.slot.load(Relaxed);
        if slot != 0 {
            let key = (slot - 1) as u32;
            if state
                .wheel
                .get(key)
                .is_some_and(|c| Arc::ptr_eq(c, &p.cell))
            {
                state.wheel.reschedule(key, tick, p.seq);
                return;
            }
        }
        let key = state.wheel.insert(tick, p.seq, p.cell.clone());
        p.cell.slot.store(u64::from(key) + 1, Relaxed);
    }

    /// Pushes onto the submit queue and wakes the worker if it is parked
    /// past the timer's tick.
    fn enqueue(&self, p: Pending) {
        let tick = self.tick_of(p.deadline);
        self.submitted.push(p);
        fence(SeqCst);
        if tick < self.wake_at.load(SeqCst) {
            self.notify();
        }
    }

    fn notify(&self) {
        let _state = lock(&self.state);
        self.wakeup.notify_all();
    }

    /// Brings every queued submission into the wheel, for `shutdown`
    /// (after the ones in flight have landed).
    fn settle_submissions(&self, state: &mut State) {
        while let Some(p) = self.submitted.pop() {
            self.place(state, p);
        }
        while let Some(cell) = self.cancels.pop() {
            self.unlink(state, &cell);
            state.graveyard.push(cell);
        }
    }
}

impl Core for Shared {
    fn base(&self) -> &Base {
        &self.base
    }

    fn requeue(&self, cell: &TaskRef, deadline: u64, seq: u64) {
        self.enqueue(Pending {
            cell: cell.clone(),
            deadline,
            seq,
        });
    }

    fn cancelled(&self, cell: &TaskRef, outcome: CancelOutcome) {
        if outcome == CancelOutcome::WasPending {
            self.cancels.push(cell.clone());
        }
    }
}

impl Dispatch for Shared {
    fn handoff(&self) -> &Handoff {
        &self.handoff
    }

    fn again(&self, cell: TaskRef, deadline: u64, seq: u64) {
        self.enqueue(Pending {
            cell,
            deadline,
            seq,
        });
    }

    fn drained(&self) {
        if self.base.is_shutdown() {
            self.notify();
        }
    }
}

impl Wakeable for Shared {
    fn wake(&self) {
        self.notify();
    }

    fn is_idle(&self, now: Instant) -> bool {
        let now = self.worker.timebase.ticks(now) / self.worker.tick_ns;
        let state = lock(&self.state);
        state.terminated
            || (!state.running
                && self.submitted.is_empty()
                && self.executor.is_idle()
                && !state.wheel.may_have_due(now))
    }

    fn is_caught_up(&self, now: Instant) -> bool {
        if self.executor.is_inline() {
            return true; // the caller may be this worker: never wait for it
        }
        let now = self.worker.timebase.ticks(now) / self.worker.tick_ns;
        let state = lock(&self.state);
        state.terminated
            || (!state.running && self.submitted.is_empty() && !state.wheel.may_have_due(now))
    }
}

impl Scheduler for HashedWheelTimer {
    fn submit(&self, delay: Duration, task: Task) -> Result<TaskHandle, Error> {
        let shared = &self.shared;
        let cell = task.cell;
        shared.submitting.fetch_add(1, SeqCst);
        let admitted = shared.base.admit(&cell, delay);
        let result = match admitted {
            Ok((deadline, seq)) => {
                shared.enqueue(Pending {
                    cell: cell.clone(),
                    deadline,
                    seq,
                });
                Ok(TaskHandle::new(cell, shared.clone()))
            }
            Err(e) => Err(e),
        };
        if shared.submitting.fetch_sub(1, SeqCst) == 1 && shared.base.is_shutdown() {
            shared.notify();
        }
        result
    }

    fn shutdown(&self) {
        let shared = &self.shared;
        let first = shared.base.start_shutdown();
        // Before taking the lock: a submission in flight may need it to
        // notify the worker.
        while shared.submitting.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        let mut state = lock(&shared.state);
        if first {
            shared.settle_submissions(&mut state);
            // Keep what the policy keeps; cancel the rest.
            let all = state.wheel.drain();
            let mut dropped = Vec::new();
            for e in all {
                e.item.slot.store(0, Relaxed);
                // Keep a stale entry of a pending cell: a reset of it may
                // be on its way to the queue, and the entry keeps the
                // worker alive for it.
                if !e.item.is_pending() {
                    state.graveyard.push(e.item);
                    continue;
                }
                if shared.base.drops_at_shutdown(&e.item) {
                    dropped.push(e.item);
                } else {
                    let key = state.wheel.insert(e.tick, e.seq, e.item.clone());
                    e.item.slot.store(u64::from(key) + 1, Relaxed);
                }
            }
            for cell in dropped {
                let outcome = cell.cancel();
                if outcome.stopped() {
                    shared.base.count_cancel(outcome);
                }
                state.graveyard.push(cell);
            }
            let waiting = shared.handoff.shutdown(&shared.base);
            state.graveyard.extend(waiting);
        }
        let graveyard = std::mem::take(&mut state.graveyard);
        drop(state);
        TaskCell::bury_all(graveyard);
        shared.notify();
    }

    fn shutdown_now(&self) -> Vec<TaskHandle> {
        let shared = &self.shared;
        shared.base.start_shutdown_now();
        while shared.submitting.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        let mut graveyard = Vec::new(); // dropped after the guard
        let mut state = lock(&shared.state);
        graveyard.append(&mut state.graveyard);
        let mut never_ran = Vec::new();
        let mut abandon = |cell: TaskRef| {
            cell.slot.store(0, Relaxed);
            if cell.abandon() {
                shared.base.unpend();
                never_ran.push(TaskHandle::new(cell, shared.clone()));
            } else {
                graveyard.push(cell);
            }
        };
        for due in shared.handoff.take_waiting() {
            abandon(due.cell);
        }
        for e in state.wheel.drain() {
            abandon(e.item);
        }
        while let Some(p) = shared.submitted.pop() {
            abandon(p.cell);
        }
        while let Some(cell) = shared.cancels.pop() {
            abandon(cell);
        }
        drop(state);
        never_ran.iter().for_each(TaskHandle::bury);
        shared.notify();
        never_ran
    }

    fn is_shutdown(&self) -> bool {
        self.shared.base.is_shutdown()
    }

    fn is_terminated(&self) -> bool {
        lock(&self.shared.state).terminated
    }

    fn await_termination(&self, timeout: Duration) -> bool {
        wait_until(&self.shared.state, &self.shared.terminated, timeout, |s| {
            s.terminated
        })
    }

    fn metrics(&self) -> Metrics {
        self.shared.base.metrics()
    }
}

impl Drop for HashedWheelTimer {
    /// No new timers; the worker exits once the pending one-shots have run.
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for HashedWheelTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashedWheelTimer")
            .field("tick", &self.tick())
            .field("metrics", &self.metrics())
            .finish()
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashedWheelTimer").finish_non_exhaustive()
    }
}
