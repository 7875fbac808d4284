//! `ScheduledThreadPool`: a clone of the JDK 17 `ScheduledThreadPoolExecutor`.
//!
//! # Implementation
//!
//! A fixed set of worker threads takes tasks from one `DelayedWorkQueue`
//! and runs them, exactly the JDK's shape:
//!
//! - **The queue** is the pure `queue` core: a binary heap of
//!   `(deadline, seq, task)` entries, ordered by deadline and then by
//!   sequence number (ties run first-in first-out), in which every task
//!   knows its heap index, so removing a given task is O(log n).
//! - **One mutex and one condition variable** (the JDK's `lock` and
//!   `available`) guard the heap, with the **leader/follower** protocol of
//!   `DelayedWorkQueue.take`: a worker that finds the head due pops it; if
//!   the head is not due and no other worker is the leader, it becomes the
//!   leader and waits, *timed*, until the head's deadline; every other
//!   worker is a follower and waits *untimed*. A push that makes a new
//!   head clears the leader and signals one waiter, which becomes the new
//!   leader for the new deadline. A worker leaving `take` signals a
//!   successor when there is no leader and the heap is not empty. So one
//!   thread at a time is the leader (a leader displaced by a new head
//!   finishes its timed wait at the old deadline and rejoins as a
//!   follower), and the others are not woken needlessly. (A second
//!   condition variable, not part of the protocol, serves
//!   `await_termination`, like the JDK's `termination`.)
//! - **Shutdown** follows the executor: `shutdown` drops cancelled
//!   entries, periodic tasks unless
//!   `continue_existing_periodic_tasks_after_shutdown`, and one-shots *not
//!   yet due* unless `execute_existing_delayed_tasks_after_shutdown` (a due
//!   one-shot always runs, as in the JDK); workers exit once the queue is
//!   empty. `shutdown_now` drains the queue and stops the workers after
//!   their current task.
//! - **Workers start lazily**: each `submit` starts one more worker until
//!   `pool_size` are running (the JDK's `ensurePrestart`). A pool size of
//!   zero is refused (the JDK quietly starts one thread); a submission that
//!   cannot start the first worker fails rather than queue a task nobody
//!   would run.
//! - **Periodic tasks** are re-queued by the worker that ran them, after
//!   the run has ended, so runs of one task never overlap on any number of
//!   threads. A run that panics ends the task; its handle reports the panic
//!   and the worker carries on.
//!
//! Costs: `schedule` is an O(log n) push under the lock (O(1) on average
//! for random deadlines). `cancel` is one CAS and no lock by default (the
//! entry is dropped when it reaches the head, or by a purge); with
//! [`remove_on_cancel`](ScheduledThreadPoolBuilder::remove_on_cancel) it
//! also takes the lock and removes the entry in O(log n). `reset` removes
//! the old entry and pushes a new one, O(log n). Each pending task costs
//! its shared cell plus a 24-byte heap entry.
//!
//! # Differences from `ScheduledThreadPoolExecutor`
//!
//! - **Cancelled tasks do not pile up without bound.** In the JDK, with
//!   `removeOnCancel` off (the default), a cancelled task stays in the
//!   queue until it reaches the head or `purge()` runs, so a program that
//!   schedules and cancels long timeouts in a loop runs out of memory (the
//!   JDK's own `BasicCancelTest` shows it). Here the cancel that makes dead
//!   entries outnumber live ones (once at least [`AUTO_PURGE_MIN`] are
//!   dead) has the queue purged in one O(n) pass under the lock: by an
//!   idle worker if one is waiting (it is woken for it, as `HeapTimer`
//!   wakes its thread), else by the cancelling thread itself, since the
//!   workers may all be busy running tasks for a long time. A cancel stays
//!   O(1) amortised and lock-free, and the queue holds at most about twice
//!   the live tasks (plus [`AUTO_PURGE_MIN`]). A program that cannot
//!   afford an occasional O(n) pass under the lock sets `remove_on_cancel`,
//!   which makes every cancel O(log n) under the lock instead.
//!   `remove_on_cancel` and [`ScheduledThreadPool::purge`] work as in the
//!   JDK.
//! - **After shutdown a cancel removes its entry at once**, whatever the
//!   policy, so a cancelled far-future task cannot keep the pool from
//!   terminating until its deadline.
//! - **Delays are checked, not clamped.** The JDK clamps any delay to
//!   about `Long.MAX_VALUE` nanoseconds (292 years); here a deadline must
//!   fit in `u64` nanoseconds from the pool's start (584 years), and a
//!   larger delay is an [`Error::is_delay_overflow`](crate::Error) — a delay
//!   of `i64::MAX` nanoseconds, Java's end of time, is accepted. A period
//!   whose next deadline would overflow parks the task "forever" (it can
//!   still be cancelled).
//! - **`shutdown_now` marks what it returns as abandoned**: the returned
//!   handles are neither done nor cancelled (as in the JDK), and waiting on
//!   one gives [`Error::is_abandoned`](crate::Error) instead of blocking
//!   forever.
//! - **Reset** ([`TaskHandle::reset`](crate::TaskHandle::reset)) is an
//!   addition: it moves a pending task to a new deadline.
//! - **A task's destructors never run under the pool's lock**, so a task
//!   whose closure or value holds the last reference to its own pool does
//!   not deadlock the worker that drops it.
//! - Not cloned: `execute`/`submit` (use `schedule(Duration::ZERO, ..)`),
//!   `invokeAll`/`invokeAny`, `decorateTask`, thread factories, changing the
//!   pool size or the shutdown policies after construction.

//!
//! # Testing
//!
//! The pure queue is checked against a sorted-list model by property
//! tests. The pool runs the whole conformance suite with one worker (each
//! cancel policy) and with three, the JSR-166 TCK and jtreg ports, and
//! many-thread stress tests checked against a model: leader hand-off with
//! two to eight workers (after every step of virtual time, every task due
//! has run), cancel, reset and automatic purges racing the workers' pops,
//! and `shutdown`/`shutdown_now` racing submitters on the system clock.

mod queue;
#[cfg(test)]
mod test;

use std::fmt;
use std::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicUsize, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed,
    Ordering::Release,
};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::clock::{lock, wait_until, Clock, Wakeable};
use crate::error::{Error, Kind, Setting};
use crate::handle::TaskHandle;
use crate::scheduler::{common_builder_methods, spawn, Base, Common, Core, Metrics, Scheduler};
use crate::task::{CancelOutcome, Ran, Task, TaskCell, TaskRef};
use queue::{DelayedWorkQueue, Entry, Indexed, NOT_QUEUED};

/// Without `remove_on_cancel`, cancelled entries are purged automatically
/// once there are at least this many and they outnumber the live ones.
pub const AUTO_PURGE_MIN: usize = 1024;

/// A `ScheduledThreadPoolExecutor`-style scheduler: a pool of worker threads
/// sharing one delay queue, with the JDK's leader/follower hand-off.
///
/// Pick it when tasks may block or take a while, or when several must run
/// at once: a slow task holds up one worker, not the whole scheduler.
///
/// See the [module docs](self) for the algorithm and how it differs from
/// the JDK.
///
/// # Errors
///
/// Workers start with the tasks, so `submit` (and every `schedule*`
/// method) fails with [`Error::is_thread_spawn`](crate::Error::is_thread_spawn)
/// if the operating system refuses to start a worker while none runs, since
/// the task would otherwise never run; a refused later worker is skipped
/// (the running ones take its share).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{Scheduler, SchedulerExt, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::builder().pool_size(2).thread_name("jobs").build()?;
/// let answer = pool.schedule(Duration::from_millis(5), || 6 * 7).unwrap();
/// let tick = pool
///     .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), || {})
///     .unwrap();
/// assert_eq!(answer.get().unwrap(), 42);
/// assert!(tick.cancel());
/// pool.shutdown();
/// assert!(pool.await_termination(Duration::from_secs(10)));
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct ScheduledThreadPool {
    shared: Arc<Shared>,
}

/// Configures a [`ScheduledThreadPool`].
///
/// # Examples
///
/// ```
/// use schedulers::{ManualClock, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::builder()
///     .pool_size(4)
///     .remove_on_cancel(true)
///     .clock(ManualClock::new())
///     .pending_limit(100_000)
///     .thread_name("timeouts")
///     .continue_existing_periodic_tasks_after_shutdown(false)
///     .execute_existing_delayed_tasks_after_shutdown(true)
///     .build()?;
/// # drop(pool);
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Debug)]
pub struct ScheduledThreadPoolBuilder {
    common: Common,
    pool_size: usize,
    remove_on_cancel: bool,
}

struct Shared {
    base: Base,
    state: Mutex<State>,
    /// The JDK's `available`: workers wait here for the head, a new head,
    /// a wake-up or shutdown.
    available: Condvar,
    /// `await_termination` waits here.
    terminated: Condvar,
    pool_size: usize,
    remove_on_cancel: bool,
    thread_name: String,
    /// Lazily cancelled entries still in the heap; may dip below zero for a
    /// moment while a cancel races the pop or purge of its own entry.
    dead: AtomicIsize,
    /// Entries in the heap, mirrored for the lock-free cancel path.
    queued: AtomicUsize,
    /// An idle worker was asked to purge dead entries.
    purge_requested: AtomicBool,
}

struct State {
    queue: DelayedWorkQueue<TaskRef>,
    /// The worker waiting timed for the head, if any (the JDK's `leader`).
    leader: Option<usize>,
    /// Workers started so far (they never exit before shutdown).
    started: usize,
    /// Workers not yet exited.
    alive: usize,
    /// Workers between taking an entry and finishing with it.
    running: usize,
    /// Workers blocked on `available`.
    waiting: usize,
    /// Entries taken and finished with whose task ran.
    completed: u64,
    /// `shutdown_now` was called: take nothing more.
    stopped: bool,
    terminated: bool,
}

/// The heap index lives in the cell's free `slot`, shifted by one so that a
/// fresh cell (slot 0) reads as off the heap. Only touched under the lock.
impl Indexed for TaskRef {
    fn heap_index(&self) -> usize {
        match self.slot.load(Relaxed) {
            0 => NOT_QUEUED,
            i => (i - 1) as usize,
        }
    }
    fn set_heap_index(&self, index: usize) {
        let v = if index == NOT_QUEUED {
            0
        } else {
            index as u64 + 1
        };
        self.slot.store(v, Relaxed);
    }
}

impl ScheduledThreadPool {
    /// A pool of `pool_size` workers on the system clock, with default
    /// settings (the JDK's `new ScheduledThreadPoolExecutor(corePoolSize)`).
    /// Workers start with the first tasks, not here.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_pool_size`] if `pool_size` is zero.
    pub fn new(pool_size: usize) -> Result<ScheduledThreadPool, Error> {
        ScheduledThreadPool::builder().pool_size(pool_size).build()
    }

    /// A builder for the pool size, cancel policy, clock, pending limit,
    /// thread names and shutdown policies.
    pub fn builder() -> ScheduledThreadPoolBuilder {
        ScheduledThreadPoolBuilder {
            common: Common::new("scheduled-pool"),
            pool_size: 1,
            remove_on_cancel: false,
        }
    }

    /// Removes every cancelled entry from the queue now and returns how
    /// many, like the JDK's `purge()`. Never needed for correctness, and
    /// memory stays bounded without it (see the [module docs](self)); it
    /// only releases memory early.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedulers::{SchedulerExt, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1)?;
    /// let handles: Vec<_> = (0..10).map(|_| pool.schedule(Duration::from_secs(60), || ()).unwrap()).collect();
    /// handles.iter().take(4).for_each(|h| assert!(h.cancel()));
    /// assert_eq!(pool.queue_len(), 10);
    /// assert_eq!(pool.purge(), 4);
    /// assert_eq!(pool.queue_len(), 6);
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn purge(&self) -> usize {
        let mut state = lock(&self.shared.state);
        let garbage = self.shared.purge(&mut state);
        drop(state);
        garbage.len()
    }

    /// Entries in the queue, cancelled ones not yet removed included (the
    /// JDK's `getQueue().size()`). A task being run is not in the queue.
    pub fn queue_len(&self) -> usize {
        lock(&self.shared.state).queue.len()
    }

    /// Workers running a task right now (the JDK's `getActiveCount`).
    pub fn active_count(&self) -> usize {
        lock(&self.shared.state).running
    }

    /// Worker threads started and not exited (the JDK's `getPoolSize`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedulers::{ManualClock, SchedulerExt, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().pool_size(4).clock(clock.clone()).build()?;
    /// assert_eq!(pool.pool_size(), 0); // workers start with the first tasks
    /// for _ in 0..2 {
    ///     pool.schedule(Duration::from_secs(1), || ()).unwrap();
    /// }
    /// assert_eq!(pool.pool_size(), 2);
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(pool.completed_task_count(), 2);
    /// assert_eq!(pool.active_count(), 0);
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn pool_size(&self) -> usize {
        lock(&self.shared.state).alive
    }

    /// Runs that have finished, panicked ones included (the JDK's
    /// `getCompletedTaskCount`; a periodic task counts once per run).
    pub fn completed_task_count(&self) -> u64 {
        lock(&self.shared.state).completed
    }

    /// Whether cancelled tasks leave the queue at once (the JDK's
    /// `getRemoveOnCancelPolicy`).
    pub fn remove_on_cancel(&self) -> bool {
        self.shared.remove_on_cancel
    }
}

impl ScheduledThreadPoolBuilder {
    common_builder_methods!();

    /// How many worker threads run tasks (the JDK's `corePoolSize`);
    /// default 1. Workers start one per submitted task until this many
    /// run. `build` refuses zero (the JDK quietly starts one thread).
    pub fn pool_size(mut self, threads: usize) -> Self {
        self.pool_size = threads;
        self
    }

    /// Whether a cancelled task leaves the queue at once (true: O(log n)
    /// under the lock) or when it reaches the head or a purge runs (false,
    /// the default, as in the JDK: one CAS, no lock).
    pub fn remove_on_cancel(mut self, remove: bool) -> Self {
        self.remove_on_cancel = remove;
        self
    }

    /// Returns the pool. No thread starts until the first task arrives.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_pool_size`], [`Error::is_invalid_pending_limit`]
    /// or [`Error::is_invalid_thread_name`] for a setting it cannot honour.
    pub fn build(self) -> Result<ScheduledThreadPool, Error> {
        self.common.validate()?;
        if self.pool_size == 0 {
            return Err(Error::invalid(
                Setting::PoolSize,
                "0 workers would never run a task",
            ));
        }
        let shared = Arc::new(Shared {
            base: Base::new(&self.common),
            state: Mutex::new(State {
                queue: DelayedWorkQueue::new(),
                leader: None,
                started: 0,
                alive: 0,
                running: 0,
                waiting: 0,
                completed: 0,
                stopped: false,
                terminated: false,
            }),
            available: Condvar::new(),
            terminated: Condvar::new(),
            pool_size: self.pool_size,
            remove_on_cancel: self.remove_on_cancel,
            thread_name: self.common.thread_name.clone(),
            dead: AtomicIsize::new(0),
            queued: AtomicUsize::new(0),
            purge_requested: AtomicBool::new(false),
        });
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        shared.base.clock.attach(weak);
        Ok(ScheduledThreadPool { shared })
    }
}

impl Shared {
    /// One worker: `ThreadPoolExecutor.runWorker` over `take`.
    fn worker(self: Arc<Self>, id: usize) {
        crate::clock::reduce_timer_slack();
        let mut state = lock(&self.state);
        loop {
            let (guard, entry) = self.take(state, id);
            state = guard;
            let Some(entry) = entry else { break };
            drop(state);
            self.run(entry);
            state = lock(&self.state);
        }
        state.alive -= 1;
        if state.alive == 0 {
            state.terminated = true;
            self.terminated.notify_all();
        }
        // Let the other workers see the empty queue and exit too.
        self.available.notify_all();
        drop(state);
        self.base.clock.on_idle();
    }

    /// `DelayedWorkQueue.take`, leader/follower, plus the executor's exit
    /// rule: `None` once stopped, or shut down with an empty queue. A taken
    /// entry counts as running before the lock is released, so the pool
    /// never looks idle between the pop and the run.
    fn take<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        id: usize,
    ) -> (MutexGuard<'a, State>, Option<Entry<TaskRef>>) {
        let taken = loop {
            if state.stopped {
                break None;
            }
            if self.purge_requested.swap(false, AcqRel) {
                let garbage = self.purge(&mut state);
                drop(state);
                drop(garbage); // outside the lock: destructors may use the pool
                state = lock(&self.state);
                continue;
            }
            let Some(head) = state.queue.peek().map(|e| e.deadline) else {
                // A task being moved by a reset is pending until it is back.
                if self.base.is_shutdown() && self.base.metrics().pending == 0 {
                    break None;
                }
                state = self.wait(state, None);
                continue;
            };
            let now = self.base.now();
            if head <= now {
                let entry = state.queue.pop_due(now);
                self.queued.store(state.queue.len(), Relaxed);
                state.running += 1;
                break entry;
            }
            if state.leader.is_some() {
                state = self.wait(state, None);
            } else {
                state.leader = Some(id);
                state = self.wait(state, Some(head));
                if state.leader == Some(id) {
                    state.leader = None;
                }
            }
        };
        if state.leader.is_none() && !state.queue.is_empty() {
            self.available.notify_one();
        }
        (state, taken)
    }

    /// Blocks on `available` until `deadline` (ticks) or a signal; `None`
    /// waits untimed (a follower, or any wait on a virtual clock).
    fn wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        deadline: Option<u64>,
    ) -> MutexGuard<'a, State> {
        let real = deadline
            .and_then(|d| self.base.timebase.instant(d))
            .and_then(|at| self.base.clock.wait_for(at));
        self.base.clock.on_idle();
        state.waiting += 1;
        let mut state = match real {
            Some(timeout) => {
                self.available
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => self
                .available
                .wait(state)
                .unwrap_or_else(|e| e.into_inner()),
        };
        state.waiting -= 1;
        state
    }

    /// Runs a taken entry if it is still live, re-queues a periodic task
    /// (or cancels it, after shutdown), and marks the worker idle again.
    ///
    /// A task cell is never dropped under the lock (here or anywhere): the
    /// last reference may run the user's destructors, which may touch the
    /// pool again.
    fn run(&self, entry: Entry<TaskRef>) {
        let Entry {
            deadline,
            seq,
            item: cell,
        } = entry;
        if !cell.claim(seq) {
            // A stale entry: cancelled (lazily counted as dead) or moved by
            // a reset (its new entry is already queued).
            if !self.remove_on_cancel && cell.is_cancelled() {
                self.dead.fetch_sub(1, Relaxed);
            }
            lock(&self.state).running -= 1;
            return;
        }
        self.base.fire();
        let ran = cell.run_claimed(deadline, || self.base.now(), || self.base.next_seq());
        let mut state = lock(&self.state);
        state.completed += 1;
        if let Ran::Again { deadline, seq } = ran {
            self.base.repend();
            let stop =
                state.stopped || (self.base.is_shutdown() && self.base.drops_at_shutdown(&cell));
            if stop {
                let outcome = cell.cancel();
                if outcome.stopped() {
                    self.base.count_cancel(outcome);
                }
            } else {
                self.enqueue(&mut state, deadline, seq, cell.clone());
            }
        }
        state.running -= 1;
        drop(state);
        cell.bury();
    }

    /// Queues `cell` at entry `seq`, replacing its old entry, if `seq` is
    /// still its live entry (a newer reset or a cancel may have won the
    /// race to the lock). A new head clears the leader and signals, as the
    /// JDK's `offer` does. Callers pass a clone and keep their own
    /// reference, so no cell is ever freed here, under the lock.
    fn enqueue(&self, state: &mut State, deadline: u64, seq: u64, cell: TaskRef) {
        if !cell.is_live(seq) {
            return;
        }
        state.queue.remove(&cell, Arc::ptr_eq);
        let new_head = state.queue.push(deadline, seq, cell);
        self.queued.store(state.queue.len(), Relaxed);
        if new_head {
            state.leader = None;
            self.available.notify_one();
        }
    }

    /// Removes the dead entries; the caller drops them after unlocking.
    #[must_use]
    fn purge(&self, state: &mut State) -> Vec<Entry<TaskRef>> {
        let removed = state.queue.purge(|e| e.item.is_live(e.seq));
        self.dead.fetch_sub(removed.len() as isize, Relaxed);
        self.queued.store(state.queue.len(), Relaxed);
        if !removed.is_empty() && state.queue.is_empty() && self.base.is_shutdown() {
            self.available.notify_all();
        }
        removed
    }

    /// Counts a lazily cancelled entry. The cancel that makes dead entries
    /// outnumber live ones hands the purge to an idle worker, or does it
    /// itself when every worker is busy running a task.
    fn add_dead(&self) {
        let dead = self.dead.fetch_add(1, Relaxed) + 1;
        let dead = usize::try_from(dead).unwrap_or(0);
        if dead >= AUTO_PURGE_MIN
            && dead * 2 > self.queued.load(Relaxed)
            && !self.purge_requested.load(Relaxed)
        {
            let mut state = lock(&self.state);
            // Checked again: another cancel may have purged meanwhile.
            let dead = usize::try_from(self.dead.load(Relaxed)).unwrap_or(0);
            if dead < AUTO_PURGE_MIN
                || dead * 2 <= state.queue.len()
                || self.purge_requested.load(Relaxed)
            {
                return;
            }
            if state.waiting > 0 {
                self.purge_requested.store(true, Release);
                self.available.notify_all();
            } else {
                let garbage = self.purge(&mut state);
                drop(state);
                drop(garbage);
            }
        }
    }

    /// Starts one more worker if fewer than `pool_size` were started.
    fn ensure_prestart(self: &Arc<Self>, state: &mut MutexGuard<'_, State>) -> Option<usize> {
        if state.started >= self.pool_size {
            return None;
        }
        state.started += 1;
        state.alive += 1;
        Some(state.started - 1)
    }

    /// Starts worker `id` for the task just queued in `cell`. If the
    /// operating system refuses and no other worker runs, the task would
    /// never run: it is taken back out and the error returned. A refused
    /// later worker is skipped (the running ones take its share, and the
    /// next submission tries again).
    fn spawn_worker(self: &Arc<Self>, id: usize, cell: &TaskRef) -> Result<(), Error> {
        let shared = self.clone();
        let Err(error) = spawn(format!("{}-{id}", self.thread_name), move || {
            shared.worker(id)
        }) else {
            return Ok(());
        };
        let mut state = lock(&self.state);
        state.started -= 1;
        state.alive -= 1;
        if state.alive > 0 {
            return Ok(());
        }
        let removed = state.queue.remove(cell, Arc::ptr_eq);
        self.queued.store(state.queue.len(), Relaxed);
        if cell.abandon() {
            self.base.unpend();
        }
        if self.base.is_shutdown() && !state.terminated {
            state.terminated = true;
            self.terminated.notify_all();
        }
        drop(state);
        drop(removed);
        Err(error)
    }
}

impl Core for Shared {
    fn base(&self) -> &Base {
        &self.base
    }

    fn requeue(&self, cell: &TaskRef, deadline: u64, seq: u64) {
        let mut state = lock(&self.state);
        self.enqueue(&mut state, deadline, seq, cell.clone());
    }

    fn cancelled(&self, cell: &TaskRef, outcome: CancelOutcome) {
        if outcome != CancelOutcome::WasPending {
            return; // a running periodic task: it has no entry
        }
        if self.remove_on_cancel || self.base.is_shutdown() {
            let mut state = lock(&self.state);
            let removed = state.queue.remove(cell, Arc::ptr_eq);
            if removed.is_some() {
                self.queued.store(state.queue.len(), Relaxed);
                if state.queue.is_empty() && self.base.is_shutdown() {
                    self.available.notify_all();
                }
            }
            drop(state);
            drop(removed);
        } else {
            self.add_dead();
        }
    }
}

impl Wakeable for Shared {
    fn wake(&self) {
        let _state = lock(&self.state);
        self.available.notify_all();
    }

    fn is_idle(&self, now: Instant) -> bool {
        let now = self.base.timebase.ticks(now);
        let state = lock(&self.state);
        state.terminated
            || (state.running == 0
                && !self.purge_requested.load(Acquire)
                && state.queue.peek().is_none_or(|e| e.deadline > now))
    }
}

impl Scheduler for ScheduledThreadPool {
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
            shared.available.notify_all();
            drop(state);
            return Err(Error::new(Kind::Shutdown));
        }
        shared.enqueue(&mut state, deadline, seq, cell.clone());
        let new_worker = shared.ensure_prestart(&mut state);
        drop(state);
        if let Some(id) = new_worker {
            shared.spawn_worker(id, &cell)?;
        }
        Ok(TaskHandle::new(cell, shared.clone()))
    }

    fn shutdown(&self) {
        let shared = &self.shared;
        let mut state = lock(&shared.state);
        let mut garbage = Vec::new();
        if shared.base.start_shutdown() {
            // The JDK's `onShutdown`: drop cancelled entries, periodic tasks
            // unless kept, and one-shots not yet due unless kept.
            let now = shared.base.now();
            for e in state.queue.drain_sorted() {
                if !e.item.is_live(e.seq) {
                    garbage.push(e);
                    continue;
                }
                let drop = if e.item.is_periodic() {
                    !shared.base.keep_periodic
                } else {
                    !shared.base.run_delayed && e.deadline > now
                };
                if drop {
                    // Under the lock, so a racing reset cannot re-queue it.
                    let outcome = e.item.cancel();
                    if outcome.stopped() {
                        shared.base.count_cancel(outcome);
                    }
                    garbage.push(e);
                } else {
                    state.queue.push(e.deadline, e.seq, e.item);
                }
            }
            shared.dead.store(0, Relaxed);
            shared.purge_requested.store(false, Relaxed);
            shared.queued.store(state.queue.len(), Relaxed);
            state.leader = None;
            if state.alive == 0 {
                state.terminated = true;
                shared.terminated.notify_all();
            }
        }
        drop(state);
        shared.available.notify_all();
        // Outside the lock: destructors may use the pool.
        TaskCell::bury_all(garbage.into_iter().map(|e| e.item));
    }

    fn shutdown_now(&self) -> Vec<TaskHandle> {
        let shared = &self.shared;
        let mut state = lock(&shared.state);
        shared.base.start_shutdown_now();
        state.stopped = true;
        let mut never_ran = Vec::new();
        let mut garbage = Vec::new();
        for e in state.queue.drain_sorted() {
            if e.item.is_live(e.seq) && e.item.abandon() {
                shared.base.unpend();
                never_ran.push(TaskHandle::new(e.item, shared.clone()));
            } else {
                garbage.push(e);
            }
        }
        shared.dead.store(0, Relaxed);
        shared.purge_requested.store(false, Relaxed);
        shared.queued.store(0, Relaxed);
        if state.alive == 0 && !state.terminated {
            state.terminated = true;
            shared.terminated.notify_all();
        }
        drop(state);
        shared.available.notify_all();
        drop(garbage);
        never_ran.iter().for_each(TaskHandle::bury);
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

impl Drop for ScheduledThreadPool {
    /// A graceful [`shutdown`](Scheduler::shutdown): the workers exit once
    /// the pending one-shots have run.
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for ScheduledThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledThreadPool")
            .field("pool_size", &self.shared.pool_size)
            .field("remove_on_cancel", &self.shared.remove_on_cancel)
            .field("metrics", &self.metrics())
            .finish()
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledThreadPool")
            .finish_non_exhaustive()
    }
}
