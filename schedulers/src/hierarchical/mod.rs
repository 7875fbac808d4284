//! `HierarchicalWheelTimer`: a clone of Kafka's `SystemTimer`, hierarchical
//! timing wheels plus a delay queue of buckets.
//!
//! # Implementation
//!
//! The pure core is in `timing_wheel` (wheels with lazily created overflow
//! levels), `bucket` (Kafka's `TimerTaskList`s as index-linked lists in one
//! slab) and `delay_queue` (buckets keyed by their expiration). The core
//! works in ticks: a deadline of `d` ns is due at tick `ceil(d / tick)`.
//!
//! One driver thread (Kafka's reaper) sleeps until the earliest *bucket*
//! expires, not from tick to tick. A bucket expires at its earliest timer
//! (Kafka: at the start of its range), so with 10⁵ timers an hour away the
//! driver does not wake at all in that hour, and when they come due it wakes
//! at most once per millisecond that holds a deadline. When it wakes it
//! advances the wheels, which re-insert the timers of each expired bucket
//! into finer wheels, and hands the timers now due to the [`Executor`], a
//! worker pool by default as in Kafka, so a slow task does not hold up the
//! wheel. A due task waits in the timer's hand-off queue until a worker
//! starts it, and only then is it claimed, so while it waits behind busy
//! workers cancel, reset and `shutdown_now` still reach it (Kafka hands the
//! task itself to its executor, after which a cancel no longer stops it).
//! A periodic task re-enters the wheel from the worker when its run
//! ends (fixed rate: previous scheduled start + period; fixed delay: end +
//! delay); if that is already due it runs again at once, in order.
//!
//! Everything sits behind one mutex, as Kafka's wheel sits behind its
//! read-write lock. `submit` inserts directly (O(1)) and wakes the driver
//! only if the new timer's bucket expires before the one the driver sleeps
//! until. Cancel is a CAS on the task and a push onto a lock-free queue; the
//! node (the task cell's `slot` holds its key) is unlinked in O(1), in
//! batches of up to 256, by the driver before it advances or by the cancel
//! that fills the batch, so most cancels never take the lock and a batch's
//! cache misses overlap (about 18% cheaper than unlinking under the lock at
//! each cancel, measured at 10⁶ timers). `reset` moves the node to its new
//! bucket in O(1) under the lock, with no scan.
//!
//! # Differences from Kafka's `SystemTimer`
//!
//! - **Never early, at most one tick late.** Kafka may run a task up to a
//!   tick early (see `timing_wheel`); here deadlines round up to the tick.
//! - **A bucket expires at its earliest timer**, not at the start of its
//!   range, so a cascade never costs a wake-up of its own (see
//!   `timing_wheel`): a timer an hour away wakes nobody before its hour.
//! - **No polling reaper.** Kafka's reaper polls the delay queue every
//!   200 ms at most; this driver blocks until the earliest bucket, and a
//!   submit into an earlier bucket wakes it.
//! - **The contract's extras**: periodic tasks, `reset`, typed errors, ties
//!   in submission order within a tick, panics reported on the handle (Kafka
//!   swallows them into a `Future` nobody reads), shutdown policies.
//! - **Bad settings are refused with a typed error**: a zero tick, a wheel
//!   size outside `2..=`[`MAX_WHEEL_SIZE`], a first wheel whose turn does
//!   not fit the time range (Kafka checks none of these).
//!
//! # Costs
//!
//! Schedule O(1) under the lock; cancel one CAS and a queue push, plus an
//! O(1) unlink later in a batch; reset O(1) under the lock; each timer is re-inserted once per wheel
//! level it descends through. Memory: a 40-byte slab node per pending timer
//! besides the task cell (shared by every scheduler of the crate, about 96
//! bytes with its allocation), and `levels × size` buckets.

mod bucket;
mod delay_queue;
#[cfg(test)]
mod test;
mod timing_wheel;

use std::fmt;
use std::sync::atomic::{
    AtomicU64, AtomicUsize, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed,
};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError, Weak};
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;

use crate::clock::{lock, wait_until, Clock, Wakeable};
use crate::error::{Error, Kind, Setting};
use crate::executor::{Dispatch, Due, Executor, Handoff};
use crate::handle::TaskHandle;
use crate::scheduler::{
    common_builder_methods, spawn, wheel_tick, Base, Common, Core, Metrics, Scheduler,
};
use crate::task::{CancelOutcome, Task, TaskCell, TaskRef};
use timing_wheel::TimingWheels;

/// The default tick: 1 ms, as Kafka's `SystemTimer`.
pub const DEFAULT_TICK: Duration = Duration::from_millis(1);
/// The default number of buckets per wheel: 20, as Kafka's `SystemTimer`.
pub const DEFAULT_WHEEL_SIZE: usize = 20;
/// The largest wheel size the builder accepts.
pub const MAX_WHEEL_SIZE: usize = 1 << 16;
/// Cancelled timers whose nodes may wait to be unlinked; the cancel that
/// fills the batch unlinks it.
pub(crate) const CANCEL_BATCH: usize = 256;

/// A Kafka `SystemTimer`-style scheduler: hierarchical timing wheels whose
/// buckets wait in a delay queue, one driver thread that sleeps until the
/// earliest bucket expires, tasks run on a worker pool.
///
/// Pick it for very many timers, most of them cancelled or far away
/// (request timeouts, session expiry): schedule, cancel and reset are O(1),
/// and an idle timer costs no CPU however many timers wait. Tasks start up to
/// one tick (1 ms by default) after their deadline, never before.
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
    executor: Option<Executor>,
}

struct Shared {
    base: Base,
    /// Nanoseconds per tick (at least 1).
    tick: u64,
    executor: Executor,
    state: Mutex<State>,
    /// The driver waits here for its bucket, a wake-up or shutdown.
    wakeup: Condvar,
    /// `await_termination` waits here.
    terminated: Condvar,
    /// Due tasks handed to a pool executor and not yet started.
    handoff: Handoff,
    /// Times the driver returned from a wait.
    wakeups: AtomicU64,
    /// Cells cancelled while pending whose nodes are still linked.
    cancels: SegQueue<TaskRef>,
    /// Length of `cancels`. A cancel counts itself before it pushes, so a
    /// drain never pops more than was counted: the count may run ahead of
    /// the queue for a moment, never behind it (it never wraps).
    cancels_queued: AtomicUsize,
}

struct State {
    wheel: TimingWheels<TaskRef>,
    /// The tick the driver sleeps until (`u64::MAX`: no bucket), or `None`
    /// while it is awake.
    sleeping_until: Option<u64>,
    /// The driver is handing a batch to the executor, outside the lock.
    dispatching: bool,
    terminated: bool,
}

impl HierarchicalWheelTimer {
    /// A timer on the system clock with Kafka's defaults: 1 ms tick, 20
    /// buckets per wheel, one worker thread.
    ///
    /// # Errors
    ///
    /// [`Error::is_thread_spawn`] if the operating system refuses to start
    /// a thread.
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
            executor: None,
        }
    }

    /// The tick: the wheel's resolution, and the most a task starts late.
    pub fn tick(&self) -> Duration {
        Duration::from_nanos(self.shared.tick)
    }

    /// When the driver next has work: the earliest bucket expiration (or
    /// now, if a timer is already due), or `None` with no timer pending.
    /// This is what the driver sleeps until.
    pub fn next_expiration(&self) -> Option<Instant> {
        let mut state = lock(&self.shared.state);
        let garbage = self.shared.unlink_cancelled(&mut state);
        let tick = state.wheel.next_expiration();
        drop(state);
        drop(garbage); // outside the lock, see `main_loop`
        self.shared
            .base
            .timebase
            .instant(tick?.saturating_mul(self.shared.tick))
    }

    /// How many times the driver thread has woken from a wait: timed waits
    /// that ran out, submissions of an earlier bucket, clock wake-ups and
    /// spurious ones alike. The measure of an idle timer's cost.
    pub fn driver_wakeups(&self) -> u64 {
        self.shared.wakeups.load(Relaxed)
    }

    /// How many wheel levels exist (they are created lazily, for timers
    /// beyond the span of the levels below).
    pub fn levels(&self) -> usize {
        lock(&self.shared.state).wheel.levels()
    }
}

impl HierarchicalWheelTimerBuilder {
    common_builder_methods!();

    /// The wheel's resolution (default 1 ms): tasks start up to one tick
    /// after their deadline. `build` refuses a zero tick, and one so long
    /// that a turn of the first wheel (`tick * wheel_size`) does not fit the
    /// time range of 584 years.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Buckets per wheel (default 20); `build` refuses sizes outside
    /// `2..=`[`MAX_WHEEL_SIZE`].
    pub fn wheel_size(mut self, size: usize) -> Self {
        self.wheel_size = size;
        self
    }

    /// Where expired tasks run: by default a pool of one worker thread of
    /// its own, as Kafka's `SystemTimer`. [`Executor::inline`] runs them on
    /// the driver thread instead (cheaper, but a slow task delays the wheel).
    pub fn executor(mut self, executor: Executor) -> Self {
        self.executor = Some(executor);
        self
    }

    /// Starts the driver thread (and the default executor's worker) and
    /// returns the timer.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_tick`], [`Error::is_invalid_wheel_size`],
    /// [`Error::is_invalid_pending_limit`] or
    /// [`Error::is_invalid_thread_name`] for a setting it cannot honour
    /// (nothing is adjusted silently); [`Error::is_thread_spawn`] if the
    /// operating system refuses to start a thread.
    pub fn build(self) -> Result<HierarchicalWheelTimer, Error> {
        self.common.validate()?;
        let size = self.wheel_size;
        if !(2..=MAX_WHEEL_SIZE).contains(&size) {
            return Err(Error::invalid(
                Setting::WheelSize,
                format!("{size} buckets per wheel; 2 to {MAX_WHEEL_SIZE} are supported"),
            ));
        }
        let tick = wheel_tick(self.tick, Duration::from_nanos(1), size)?;
        let executor = match self.executor {
            Some(executor) => executor,
            None => Executor::pool(1)?,
        };
        let base = Base::new(&self.common);
        let start = base.now() / tick;
        executor.bind(&base.clock);
        let shared = Arc::new(Shared {
            base,
            tick,
            executor,
            state: Mutex::new(State {
                wheel: TimingWheels::new(size, start),
                sleeping_until: None,
                dispatching: false,
                terminated: false,
            }),
            wakeup: Condvar::new(),
            terminated: Condvar::new(),
            handoff: Handoff::default(),
            wakeups: AtomicU64::new(0),
            cancels: SegQueue::new(),
            cancels_queued: AtomicUsize::new(0),
        });
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        shared.base.clock.attach(weak);
        let thread_shared = shared.clone();
        spawn(self.common.thread_name, move || thread_shared.main_loop())?;
        Ok(HierarchicalWheelTimer { shared })
    }
}

impl Shared {
    /// The tick at which a deadline (ns) is due: rounded up, never early.
    fn tick_of(&self, deadline: u64) -> u64 {
        deadline.div_ceil(self.tick)
    }

    /// The reaper: advance, dispatch what expired, sleep until the next bucket.
    fn main_loop(self: Arc<Self>) {
        crate::clock::reduce_timer_slack();
        let mut batch = Vec::new();
        let mut state = lock(&self.state);
        loop {
            // Cells are dropped outside the lock: a task's closure or value
            // may own the last reference to this timer, whose `Drop` locks.
            let garbage = self.unlink_cancelled(&mut state);
            if !garbage.is_empty() {
                drop(state);
                drop(garbage);
                state = lock(&self.state);
            }
            let now = self.base.now() / self.tick;
            state.wheel.advance(now, &mut batch);
            if !batch.is_empty() {
                state.dispatching = true;
                drop(state);
                let due = batch.drain(..).map(|r| Due {
                    cell: r.item,
                    seq: r.seq,
                });
                self.executor.dispatch(&self, due);
                state = lock(&self.state);
                state.dispatching = false;
                continue;
            }
            // A reset whose requeue is still on its way keeps its task
            // pending: wait for it too.
            if self.base.is_shutdown()
                && state.wheel.is_empty()
                && self.handoff.in_flight() == 0
                && self.base.metrics().pending == 0
            {
                break;
            }
            let next = state.wheel.next_expiration();
            state.sleeping_until = Some(next.unwrap_or(u64::MAX));
            self.base.clock.on_idle();
            state = self.wait(state, next);
            state.sleeping_until = None;
            self.wakeups.fetch_add(1, Relaxed);
        }
        state.terminated = true;
        drop(state);
        self.terminated.notify_all();
        self.base.clock.on_idle();
    }

    /// Blocks until tick `next` or a wake-up.
    fn wait<'a>(
        &'a self,
        state: MutexGuard<'a, State>,
        next: Option<u64>,
    ) -> MutexGuard<'a, State> {
        let real = next
            .and_then(|t| t.checked_mul(self.tick))
            .and_then(|ns| self.base.timebase.instant(ns))
            .and_then(|at| self.base.clock.wait_for(at));
        match real {
            Some(timeout) => {
                self.wakeup
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => self.wakeup.wait(state).unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Inserts a live cell and wakes the driver if its bucket is now the
    /// earliest thing to wait for.
    fn enqueue(&self, state: &mut State, deadline: u64, seq: u64, cell: &TaskRef) {
        let key = state
            .wheel
            .insert(self.tick_of(deadline), seq, cell.clone());
        cell.slot.store(u64::from(key), Relaxed);
        self.wake_if_earlier(state);
    }

    fn wake_if_earlier(&self, state: &State) {
        if let (Some(until), Some(next)) = (state.sleeping_until, state.wheel.next_expiration()) {
            if next < until {
                self.wakeup.notify_one();
            }
        }
    }

    /// Unlinks the nodes of the cells cancelled since the last call. The
    /// keys are looked up first and the nodes unlinked after, so that the
    /// cache misses of a batch overlap.
    ///
    /// Returns the cells it let go of, for the caller to drop after unlocking.
    #[must_use]
    fn unlink_cancelled(&self, state: &mut State) -> Vec<TaskRef> {
        if self.cancels_queued.load(Acquire) == 0 {
            return Vec::new();
        }
        let mut cells = Vec::with_capacity(CANCEL_BATCH);
        while let Some(cell) = self.cancels.pop() {
            cells.push(cell);
        }
        self.cancels_queued.fetch_sub(cells.len(), Relaxed);
        // A cancelled cell is never queued again, so a node holding it is
        // the stale one (if a flush took it first, there is none; the queue
        // holds the cell, so no other cell can have its address).
        let keys: Vec<u32> = cells
            .iter()
            .filter_map(|c| Shared::key_of(state, c))
            .collect();
        for key in keys {
            if let Some(removed) = state.wheel.remove(key) {
                cells.push(removed.item);
            }
        }
        cells
    }

    /// The key of `cell`'s node in the wheel, if the node there is its own.
    fn key_of(state: &State, cell: &TaskRef) -> Option<u32> {
        let key = u32::try_from(cell.slot.load(Relaxed)).ok()?;
        state
            .wheel
            .get(key)
            .filter(|c| Arc::ptr_eq(c, cell))
            .map(|_| key)
    }
}

impl Core for Shared {
    fn base(&self) -> &Base {
        &self.base
    }

    fn requeue(&self, cell: &TaskRef, deadline: u64, seq: u64) {
        let mut state = lock(&self.state);
        // A later reset or a cancel got here first: it owns the entry now.
        if !cell.is_live(seq) {
            return;
        }
        match Shared::key_of(&state, cell) {
            Some(key) => {
                state.wheel.reschedule(key, self.tick_of(deadline), seq);
                self.wake_if_earlier(&state);
            }
            // Its node already left the wheel in a flush that lost the race.
            None => self.enqueue(&mut state, deadline, seq, cell),
        }
    }

    fn cancelled(&self, cell: &TaskRef, outcome: CancelOutcome) {
        if outcome != CancelOutcome::WasPending {
            return;
        }
        if self.base.is_shutdown() {
            // Only pending one-shots keep a shut-down timer alive: the
            // driver unlinks this one now, and exits if it was the last,
            // instead of sleeping until its old deadline.
            self.cancels_queued.fetch_add(1, AcqRel);
            self.cancels.push(cell.clone());
            let _state = lock(&self.state);
            self.wakeup.notify_all();
            return;
        }
        // The node is unlinked later, in a batch: by the driver before it
        // next advances, by `next_expiration`, or here once the batch is
        // full. Until then the dead node is harmless: a flush drops it, since
        // its claim fails.
        let queued = self.cancels_queued.fetch_add(1, AcqRel) + 1;
        self.cancels.push(cell.clone());
        if queued >= CANCEL_BATCH {
            let state = match self.state.try_lock() {
                Ok(state) => Some(state),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                // The holder (or the next cancel) will unlink the batch.
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(mut state) = state {
                let garbage = self.unlink_cancelled(&mut state);
                drop(state);
                drop(garbage);
            }
        }
    }
}

impl Dispatch for Shared {
    fn handoff(&self) -> &Handoff {
        &self.handoff
    }

    fn again(&self, cell: TaskRef, deadline: u64, seq: u64) {
        if self.base.is_shutdown() && self.base.drops_at_shutdown(&cell) {
            let outcome = cell.cancel();
            if outcome.stopped() {
                self.base.count_cancel(outcome);
            }
            cell.bury();
            return;
        }
        let mut state = lock(&self.state);
        // A cancel that came between the run's end and this lock already
        // counted itself; do not queue a dead entry.
        if cell.is_live(seq) {
            self.enqueue(&mut state, deadline, seq, &cell);
        }
        drop(state);
    }

    fn drained(&self) {
        if self.base.is_shutdown() {
            let _state = lock(&self.state);
            self.wakeup.notify_all();
        }
    }
}

impl Wakeable for Shared {
    fn wake(&self) {
        let _state = lock(&self.state);
        self.wakeup.notify_all();
    }

    fn is_idle(&self, now: Instant) -> bool {
        let now = self.base.timebase.ticks(now) / self.tick;
        let state = lock(&self.state);
        state.terminated
            || (!state.dispatching
                && self.executor.is_idle()
                && state.wheel.next_expiration().is_none_or(|t| t > now))
    }

    fn is_caught_up(&self, now: Instant) -> bool {
        if self.executor.is_inline() {
            return true; // the caller may be this driver: never wait for it
        }
        let now = self.base.timebase.ticks(now) / self.tick;
        let state = lock(&self.state);
        state.terminated
            || (!state.dispatching && state.wheel.next_expiration().is_none_or(|t| t > now))
    }
}

impl Scheduler for HierarchicalWheelTimer {
    fn submit(&self, delay: Duration, task: Task) -> Result<TaskHandle, Error> {
        let shared = &self.shared;
        let cell = task.cell;
        let (deadline, seq) = shared.base.admit(&cell, delay)?;
        let mut state = lock(&shared.state);
        // Checked again under the lock, so a task accepted here is always
        // seen by a concurrent `shutdown`.
        if shared.base.is_shutdown() {
            // Counted pending a moment ago: wake what waits for none.
            shared.base.unpend();
            shared.wakeup.notify_all();
            drop(state);
            return Err(Error::new(Kind::Shutdown));
        }
        shared.enqueue(&mut state, deadline, seq, &cell);
        drop(state);
        Ok(TaskHandle::new(cell, shared.clone()))
    }

    fn shutdown(&self) {
        let shared = &self.shared;
        // Declared before the guard, so dropped after it: cells never die
        // under the lock (see `main_loop`).
        let mut graveyard = Vec::new();
        let mut state = lock(&shared.state);
        if shared.base.start_shutdown() {
            // Keep what the policy keeps; cancel the rest.
            let mut dropped = Vec::new();
            for r in state.wheel.drain() {
                if !r.item.is_live(r.seq) {
                    graveyard.push(r.item);
                    continue;
                }
                if shared.base.drops_at_shutdown(&r.item) {
                    dropped.push(r.item);
                } else {
                    let key = state.wheel.insert(r.expiration, r.seq, r.item.clone());
                    r.item.slot.store(u64::from(key), Relaxed);
                }
            }
            for cell in dropped {
                let outcome = cell.cancel();
                if outcome.stopped() {
                    shared.base.count_cancel(outcome);
                }
                graveyard.push(cell);
            }
            graveyard.extend(shared.handoff.shutdown(&shared.base));
        }
        drop(state);
        TaskCell::bury_all(graveyard);
        shared.wakeup.notify_all();
    }

    fn shutdown_now(&self) -> Vec<TaskHandle> {
        let shared = &self.shared;
        let mut dead = Vec::new(); // dropped after the guard
        let mut state = lock(&shared.state);
        shared.base.start_shutdown_now();
        let mut never_ran = Vec::new();
        let waiting = shared.handoff.take_waiting().into_iter();
        let queued = state.wheel.drain().into_iter().map(|r| Due {
            cell: r.item,
            seq: r.seq,
        });
        for due in waiting.chain(queued) {
            if due.cell.is_live(due.seq) && due.cell.abandon() {
                shared.base.unpend();
                never_ran.push(TaskHandle::new(due.cell, shared.clone()));
            } else {
                dead.push(due.cell);
            }
        }
        drop(state);
        never_ran.iter().for_each(TaskHandle::bury);
        shared.wakeup.notify_all();
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

impl Drop for HierarchicalWheelTimer {
    /// A graceful shutdown: no new tasks, and the driver exits once the
    /// pending one-shots have run.
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for HierarchicalWheelTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HierarchicalWheelTimer")
            .field("tick", &self.tick())
            .field("metrics", &self.metrics())
            .finish()
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HierarchicalWheelTimer")
            .field("tick_ns", &self.tick)
            .finish_non_exhaustive()
    }
}
