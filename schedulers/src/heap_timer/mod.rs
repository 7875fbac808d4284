//! `HeapTimer`: a clone of `java.util.Timer`.
//!
//! # Implementation
//!
//! One thread and one binary heap of deadlines behind one mutex, exactly the
//! shape of `Timer`'s `TimerThread.mainLoop`: the thread sleeps until the
//! earliest deadline (or until a new earliest task arrives), pops every due
//! task and runs it inline, then re-queues periodic ones. The heap itself is
//! the pure `heap` core.
//!
//! Costs: schedule O(log n) under the lock (O(1) on average for random
//! deadlines); cancel is one CAS and no lock (lazy removal); reset is a CAS
//! plus an O(log n) push; expiring a task is an O(log n) pop.
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
//!   clone waits on a monotonic [`Clock`] in nanoseconds.
//! - **Cancelled tasks do not pile up.** `Timer` keeps them until they reach
//!   the head or `purge()` is called; here they are purged automatically
//!   once they outnumber live tasks (and at least [`AUTO_PURGE_MIN`] are
//!   waiting), so memory is bounded by about twice the live set. `purge()`
//!   is still there.
//! - **Shutdown keeps pending one-shots** (the executor's default) where
//!   `Timer.cancel()` discards everything; `shutdown_now` discards and
//!   returns them.

mod heap;
#[cfg(test)]
mod test;

use std::fmt;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::clock::{lock, wait_until, Clock, Wakeable};
use crate::error::{Error, Kind};
use crate::handle::TaskHandle;
use crate::scheduler::{common_builder_methods, spawn, Base, Common, Core, Metrics, Scheduler};
use crate::task::{CancelOutcome, Ran, Task, TaskCell, TaskRef};
use heap::TimerHeap;

/// Dead entries are purged automatically once there are at least this many
/// and they outnumber the live ones.
pub const AUTO_PURGE_MIN: usize = 1024;

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
}

struct Shared {
    base: Base,
    state: Mutex<State>,
    /// The timer thread waits here for a new head, a wake-up or shutdown.
    wakeup: Condvar,
    /// `await_termination` waits here.
    terminated: Condvar,
    /// Dead entries in the heap (cancelled or moved), kept in step with
    /// removals; it may dip below zero for a moment while a cancel races the
    /// pop of its own entry.
    dead: AtomicIsize,
    /// Entries in the heap, mirrored for the lock-free cancel path.
    queued: AtomicUsize,
    purge_requested: AtomicBool,
    /// Bumped whenever the head changes or the thread is woken, so that a
    /// spinning timer thread notices a new, earlier task.
    head_changes: AtomicU64,
    spin: Duration,
}

struct State {
    heap: TimerHeap<TaskRef>,
    running: bool,
    terminated: bool,
}

impl HeapTimer {
    /// A timer on the system clock, with default settings.
    ///
    /// # Errors
    ///
    /// [`Error::is_thread_spawn`] if the operating system refuses to start
    /// the timer thread.
    pub fn new() -> Result<HeapTimer, Error> {
        HeapTimer::builder().build()
    }

    /// A builder to set the clock, pending limit, thread name and shutdown
    /// policy.
    pub fn builder() -> HeapTimerBuilder {
        HeapTimerBuilder {
            common: Common::new("heap-timer"),
            spin: Duration::ZERO,
        }
    }

    /// Removes cancelled and moved entries from the heap now and returns how
    /// many, like `Timer.purge()`. Never needed for correctness or memory
    /// (purging also happens automatically), only to release memory early.
    pub fn purge(&self) -> usize {
        let dead = self.shared.purge(&mut lock(&self.shared.state));
        dead.len() // dropped here, outside the lock
    }
}

impl HeapTimerBuilder {
    common_builder_methods!();

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
    /// [`Error::is_invalid_pending_limit`] or
    /// [`Error::is_invalid_thread_name`] for a setting it cannot honour;
    /// [`Error::is_thread_spawn`] if the operating system refuses to start
    /// the timer thread.
    pub fn build(self) -> Result<HeapTimer, Error> {
        self.common.validate()?;
        let shared = Arc::new(Shared {
            base: Base::new(&self.common),
            state: Mutex::new(State {
                heap: TimerHeap::new(),
                running: false,
                terminated: false,
            }),
            wakeup: Condvar::new(),
            terminated: Condvar::new(),
            dead: AtomicIsize::new(0),
            queued: AtomicUsize::new(0),
            purge_requested: AtomicBool::new(false),
            head_changes: AtomicU64::new(0),
            spin: self.spin,
        });
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        shared.base.clock.attach(weak);
        let thread_shared = shared.clone();
        spawn(self.common.thread_name, move || thread_shared.main_loop())?;
        Ok(HeapTimer { shared })
    }
}

impl Shared {
    /// `TimerThread.mainLoop`: wait for the head, run what is due, repeat.
    fn main_loop(self: Arc<Self>) {
        crate::clock::reduce_timer_slack();
        // Cells leave the heap under the lock but are dropped outside it: a
        // task's closure or value may hold the last reference to this timer,
        // whose `Drop` takes the lock.
        let mut graveyard: Vec<TaskRef> = Vec::new();
        let mut state = lock(&self.state);
        loop {
            if self.purge_requested.swap(false, AcqRel) {
                graveyard.extend(self.purge(&mut state).into_iter().map(|e| e.item));
            }
            // Shut down with nothing pending, whatever is left is dead: a
            // cancelled task must not keep the thread until its deadline. (A
            // task being moved by a reset stays pending until it is back.)
            let finished = self.base.is_shutdown() && self.base.metrics().pending == 0;
            if finished && state.heap.len() > 0 {
                graveyard.extend(state.heap.drain_sorted().into_iter().map(|e| e.item));
                self.queued.store(0, Relaxed);
            }
            let now = self.base.now();
            let head = state.heap.peek().map(|e| e.deadline);
            match head {
                _ if !graveyard.is_empty() => {
                    drop(state);
                    TaskCell::bury_all(graveyard.drain(..));
                    state = lock(&self.state);
                }
                None if finished => break,
                Some(deadline) if deadline <= now => {
                    state = self.fire_head(state, now, &mut graveyard)
                }
                _ => {
                    self.base.clock.on_idle();
                    state = self.wait(state, head);
                }
            }
        }
        state.terminated = true;
        drop(state);
        self.terminated.notify_all();
        self.base.clock.on_idle();
    }

    /// Pops the due head and runs it inline if it is still live.
    fn fire_head<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        now: u64,
        graveyard: &mut Vec<TaskRef>,
    ) -> MutexGuard<'a, State> {
        let Some(entry) = state.heap.pop_due(now) else {
            return state;
        };
        self.queued.store(state.heap.len(), Relaxed);
        let cell = entry.item;
        if !cell.claim(entry.seq) {
            self.dead.fetch_sub(1, Relaxed);
            graveyard.push(cell);
            return state;
        }
        self.base.fire();
        state.running = true;
        drop(state);
        let ran = cell.run_claimed(entry.deadline, || self.base.now(), || self.base.next_seq());
        let Ran::Again { deadline, seq } = ran else {
            drop(cell); // outside the lock
            let mut state = lock(&self.state);
            state.running = false;
            return state;
        };
        let mut state = lock(&self.state);
        state.running = false;
        self.base.repend();
        if self.base.is_shutdown() && self.base.drops_at_shutdown(&cell) {
            let outcome = cell.cancel();
            self.base.count_cancel(outcome);
            graveyard.push(cell);
        } else {
            state.heap.push(deadline, seq, cell);
            self.queued.store(state.heap.len(), Relaxed);
        }
        state
    }

    /// Blocks until `deadline` (ticks) or a wake-up.
    fn wait<'a>(
        &'a self,
        state: MutexGuard<'a, State>,
        deadline: Option<u64>,
    ) -> MutexGuard<'a, State> {
        let real = deadline
            .and_then(|d| self.base.timebase.instant(d))
            .and_then(|at| self.base.clock.wait_for(at));
        match (real, deadline) {
            (Some(timeout), Some(deadline)) if timeout <= self.spin => {
                let seen = self.head_changes.load(Acquire);
                drop(state);
                while self.base.now() < deadline && self.head_changes.load(Acquire) == seen {
                    std::hint::spin_loop();
                }
                lock(&self.state)
            }
            (Some(timeout), _) => {
                let timeout = timeout - self.spin;
                self.wakeup
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            (None, _) => self.wakeup.wait(state).unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Wakes the timer thread after the head changed.
    fn new_head(&self) {
        self.head_changes.fetch_add(1, Release);
        self.wakeup.notify_one();
    }

    /// Removes dead entries; the caller drops them after unlocking.
    fn purge(&self, state: &mut State) -> Vec<heap::Entry<TaskRef>> {
        let removed = state.heap.purge(|e| e.item.is_live(e.seq));
        self.dead.fetch_sub(removed.len() as isize, Relaxed);
        self.queued.store(state.heap.len(), Relaxed);
        removed
    }

    /// Counts a new dead entry and asks the timer thread to purge when dead
    /// entries outnumber live ones.
    fn add_dead(&self) {
        let dead = self.dead.fetch_add(1, Relaxed) + 1;
        let dead = usize::try_from(dead).unwrap_or(0);
        if dead >= AUTO_PURGE_MIN
            && dead * 2 > self.queued.load(Relaxed)
            && !self.purge_requested.swap(true, AcqRel)
        {
            let _state = lock(&self.state);
            self.wakeup.notify_all();
        }
    }

    fn push(&self, deadline: u64, seq: u64, cell: TaskRef) -> Result<(), Error> {
        let mut state = lock(&self.state);
        // Checked again under the lock, so a task accepted here is always
        // seen by a concurrent `shutdown`.
        if self.base.is_shutdown() {
            return Err(Error::new(Kind::Shutdown));
        }
        state.heap.push(deadline, seq, cell);
        self.queued.store(state.heap.len(), Relaxed);
        let new_head = state.heap.peek().is_some_and(|e| e.seq == seq);
        drop(state);
        if new_head {
            self.new_head();
        }
        Ok(())
    }
}

impl Core for Shared {
    fn base(&self) -> &Base {
        &self.base
    }

    fn requeue(&self, cell: &TaskRef, deadline: u64, seq: u64) {
        self.add_dead();
        let mut state = lock(&self.state);
        state.heap.push(deadline, seq, cell.clone());
        self.queued.store(state.heap.len(), Relaxed);
        let new_head = state.heap.peek().is_some_and(|e| e.seq == seq);
        drop(state);
        if new_head {
            self.new_head();
        }
    }

    fn cancelled(&self, _cell: &TaskRef, outcome: CancelOutcome) {
        if outcome == CancelOutcome::WasPending {
            self.add_dead();
            if self.base.is_shutdown() {
                self.wake(); // it may have been the last pending task
            }
        }
    }
}

impl Wakeable for Shared {
    fn wake(&self) {
        let _state = lock(&self.state);
        self.head_changes.fetch_add(1, Release);
        self.wakeup.notify_all();
    }

    fn is_idle(&self, now: Instant) -> bool {
        let now = self.base.timebase.ticks(now);
        let state = lock(&self.state);
        state.terminated
            || (!state.running
                && !self.purge_requested.load(Relaxed)
                && state.heap.peek().is_none_or(|e| e.deadline > now))
    }
}

impl Scheduler for HeapTimer {
    fn submit(&self, delay: Duration, task: Task) -> Result<TaskHandle, Error> {
        let cell = task.cell;
        let (deadline, seq) = self.shared.base.admit(&cell, delay)?;
        if let Err(e) = self.shared.push(deadline, seq, cell.clone()) {
            self.shared.base.unpend();
            self.shared.wake(); // shut down meanwhile: this was counted pending
            return Err(e);
        }
        Ok(TaskHandle::new(cell, self.shared.clone()))
    }

    fn shutdown(&self) {
        let shared = &self.shared;
        let mut graveyard = Vec::new();
        let mut state = lock(&shared.state);
        if shared.base.start_shutdown() {
            // Keep what the policy keeps; cancel the rest; drop dead entries
            // (after unlocking, see `main_loop`).
            for e in state.heap.drain_sorted() {
                if !e.item.is_live(e.seq) {
                    graveyard.push(e.item);
                } else if shared.base.drops_at_shutdown(&e.item) {
                    let outcome = e.item.cancel();
                    if outcome.stopped() {
                        shared.base.count_cancel(outcome);
                    }
                    graveyard.push(e.item);
                } else {
                    state.heap.push(e.deadline, e.seq, e.item);
                }
            }
            shared.dead.store(0, Relaxed);
            shared.queued.store(state.heap.len(), Relaxed);
        }
        drop(state);
        TaskCell::bury_all(graveyard);
        shared.head_changes.fetch_add(1, Release);
        shared.wakeup.notify_all();
    }

    fn shutdown_now(&self) -> Vec<TaskHandle> {
        let shared = &self.shared;
        let mut state = lock(&shared.state);
        shared.base.start_shutdown_now();
        let mut never_ran = Vec::new();
        let mut graveyard = Vec::new();
        for e in state.heap.drain_sorted() {
            if e.item.is_live(e.seq) && e.item.abandon() {
                shared.base.unpend();
                never_ran.push(TaskHandle::new(e.item, shared.clone()));
            } else {
                graveyard.push(e.item);
            }
        }
        shared.dead.store(0, Relaxed);
        shared.queued.store(0, Relaxed);
        drop(state);
        never_ran.iter().for_each(TaskHandle::bury);
        shared.head_changes.fetch_add(1, Release);
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

impl Drop for HeapTimer {
    /// Like an unreachable `Timer`: no new tasks, and the thread exits once
    /// the pending one-shots have run.
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for HeapTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapTimer")
            .field("metrics", &self.metrics())
            .finish()
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapTimer").finish_non_exhaustive()
    }
}
