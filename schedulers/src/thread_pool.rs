//! `ScheduledThreadPool`: a clone of the JDK 17 `ScheduledThreadPoolExecutor`.
//!
//! # Implementation
//!
//! A fixed set of worker threads takes tasks from one `DelayedWorkQueue`
//! and runs them, exactly the JDK's shape:
//!
//! - **The queue** is the pure [`IndexedHeap`]:
//!   entries ordered by deadline and then by sequence number (ties run
//!   first-in first-out), each timer knowing its heap index, so removing a
//!   given task is O(log n). Timers live in the scheduler's slab.
//! - **One mutex and one condition variable** (the JDK's `lock` and
//!   `available`) guard the heap, with the **leader/follower** protocol of
//!   `DelayedWorkQueue.take`: a worker that finds the head due pops it; if
//!   the head is not due and no other worker is the leader, it becomes the
//!   leader and waits, *timed*, until the head's deadline (a periodic head
//!   up to its [`periodic_slack`](ScheduledThreadPoolBuilder::periodic_slack)
//!   later, unless a one-shot is due first); every other
//!   worker is a follower and waits *untimed*. A push that makes a new
//!   head clears the leader and signals one waiter, which becomes the new
//!   leader for the new deadline. A worker leaving `take` signals a
//!   successor when there is no leader and the heap is not empty, if one
//!   waits, after releasing the lock (signalled under it, the successor
//!   would often preempt the signaller and block on the lock). **Unlike the
//!   JDK**, one follower is the leader's *deputy* and waits, timed, for
//!   the same wake-up: one of the two runs what is due and the other leads
//!   on, so the worker that takes a task signals nobody before running it.
//!   With the JDK's protocol that signal was on every task's path: the
//!   woken successor took the signaller's core, and a pool of two fired 1e5
//!   timers over 2 s with a lateness p99 of 83-136 µs; with a deputy,
//!   23-30 µs in most repeats (p50 11-12 against 13-15 µs), at the same
//!   CPU per periodic run. A signal still goes out when the deputy's
//!   wake-up is later than now (a new head came in), or to start a third
//!   worker. A task is claimed when a worker takes it to run, so until
//!   then it can be cancelled, reset or abandoned. So one thread at a time
//!   is the leader (a leader displaced by a new head
//!   finishes its timed wait at the old deadline and rejoins as a
//!   follower), and the others are not woken needlessly. (A second
//!   condition variable, not part of the protocol, serves
//!   `await_termination`, like the JDK's `termination`.)
//! - **Shutdown** follows the executor: `shutdown` drops cancelled
//!   entries, periodic tasks unless
//!   the [`ShutdownPolicy`](crate::ShutdownPolicy) keeps them, and one-shots
//!   *not yet due* unless it keeps those (a due
//!   one-shot always runs, as in the JDK); workers exit once the queue is
//!   empty. `shutdown_now` drains the queue and stops the workers after
//!   their current task.
//! - **Workers start lazily**: each `submit` starts one more worker until
//!   `pool_size` are running (the JDK's `ensurePrestart`); a pool size of
//!   zero still gets one worker, as in the JDK.
//! - **Periodic tasks** are re-queued by the worker that ran them, after
//!   the run has ended, so runs of one task never overlap on any number of
//!   threads. A run that panics ends the task; its handle reports the panic
//!   and the worker carries on.
//!
//! Costs: callers never take the pool's lock (see the crate docs): a
//! `schedule` or `reset` leaves an entry in the caller's lane, which a
//! worker takes in at its next wake (no later than the entry's deadline),
//! pushing or moving it in O(log n) (O(1) on average for random
//! deadlines); `cancel` is one CAS (the entry is dropped when it reaches
//! the head, or by a purge; with
//! [`remove_on_cancel`](ScheduledThreadPoolBuilder::remove_on_cancel) the
//! worker removes it in O(log n) when it takes the cancel in). A pending
//! task costs 52 bytes: its 4-byte state word, its 20-byte slot body, a
//! 24-byte heap entry and a 4-byte position.
//!
//! # Differences from `ScheduledThreadPoolExecutor`
//!
//! - **Cancelled tasks do not pile up without bound.** In the JDK, with
//!   `removeOnCancel` off (the default), a cancelled task stays in the
//!   queue until it reaches the head or `purge()` runs, so a program that
//!   schedules and cancels long timeouts in a loop runs out of memory (the
//!   JDK's own `BasicCancelTest` shows it). Here the cancel that makes dead
//!   entries outnumber live ones (once at least [`AUTO_PURGE_MIN`] are
//!   dead) has the queue purged in one O(n) pass under the lock by the
//!   next worker to look for a task. A cancel stays O(1) and lock-free, and
//!   the queue holds at most about twice the live tasks (plus
//!   [`AUTO_PURGE_MIN`]); a successful cancel drops the task's closure. A program that cannot
//!   afford an occasional O(n) pass under the lock sets `remove_on_cancel`,
//!   which makes every cancel O(log n) under the lock instead.
//!   `remove_on_cancel` and [`ScheduledThreadPool::purge`] work as in the
//!   JDK.
//! - **A task cancelled before a worker took it in never enters the
//!   queue**, so a schedule-and-cancel loop leaves the queue (and
//!   `queue_len`) as it was. New one-shots wait outside the heap until the
//!   earliest of them may come due (see [`IndexedHeap`]'s staging): one
//!   cancelled before then is purged without ever being sifted.
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
//! - **Due tasks are taken in batches**, not one per lock round trip: a
//!   worker takes a fair share of what is due (divided among the workers
//!   not running a batch) and claims each task just before it runs it, so
//!   until then it can still be cancelled, reset or abandoned. A worker
//!   with nothing left takes half of what another's batch has not started,
//!   so a task behind a slow one waits no longer than in the JDK, where a
//!   free worker would have taken it from the queue. A burst of 5e4 due
//!   together runs at about twice the rate (workbench `burst`, quick size,
//!   two workers, 9 repeats: a median of 10.1 M fires/s, 6.5-14.6, against
//!   5.2 M, 3.5-5.8, when each took one task per lock round trip). A reset
//!   of a task a batch holds waits only until the worker has claimed it or
//!   let it go. Start order across workers is not deadline order (each
//!   works through its share in order), as it is not in the JDK once two
//!   workers race.
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

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use crate::builder::{common_builder_methods, periodic_slack_method, Common};
use crate::clock::NEVER;
use std::time::Duration;

use crate::core::{IndexedHeap, Key};
use crate::error::{Error, Rejected, Setting};
use crate::executor::Executor;
use crate::handle::{Anchors, TaskHandle};
use crate::lanes::Spot;
use crate::scheduler::AsShared;
use crate::shared::{Config, Queue, Shared, MOVES_PER_LOOK};

pub use crate::shared::AUTO_PURGE_MIN;

/// A `ScheduledThreadPoolExecutor`-style scheduler: a pool of worker threads
/// sharing one delay queue, with the JDK's leader/follower hand-off.
///
/// Pick it when tasks may block or take a while, or when several must run
/// at once: a slow task holds up one worker, not the whole scheduler.
///
/// See the [module docs](self) for the algorithm and how it differs from
/// the JDK.
///
/// # Panics
///
/// `submit` (and so every `schedule*` method) panics if the operating
/// system refuses to create the pool's *first* worker thread, since the
/// task would otherwise never run; a refused later worker is skipped (the
/// running ones take its share).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{Scheduler, SchedulerExt, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::builder().pool_size(2).thread_name("bodies").build()?;
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
    anchors: Anchors,
    pool_size: usize,
    remove_on_cancel: bool,
    thread_name: String,
    /// Workers started so far (they start one per submission, lazily).
    started: AtomicUsize,
}

/// Configures a [`ScheduledThreadPool`].
///
/// # Examples
///
/// ```
/// use schedulers::{ManualClock, OnShutdown, ScheduledThreadPool, ShutdownPolicy};
///
/// let pool = ScheduledThreadPool::builder()
///     .pool_size(4)
///     .remove_on_cancel(true)
///     .clock(ManualClock::new())
///     .pending_limit(100_000)
///     .thread_name("timeouts")
///     .shutdown_policy(ShutdownPolicy::default().periodic(OnShutdown::Cancel))
///     .build()?;
/// # drop(pool);
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Debug)]
pub struct ScheduledThreadPoolBuilder {
    common: Common,
    pool_size: usize,
    remove_on_cancel: bool,
    periodic_slack: Duration,
}

/// The default [`periodic_slack`](ScheduledThreadPoolBuilder::periodic_slack):
/// a periodic run may start up to 100 µs late. Twice
/// [`HeapTimer`](crate::HeapTimer)'s, because a batch of runs costs a pool
/// two wake-ups (the leader's, and a follower's that runs them alongside).
pub const DEFAULT_PERIODIC_SLACK: Duration = Duration::from_micros(100);

impl ScheduledThreadPool {
    /// A pool of `pool_size` workers on the system clock, with default
    /// settings (the JDK's `new ScheduledThreadPoolExecutor(corePoolSize)`).
    /// Workers start with the first tasks, not here.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_pool_size`](crate::Error::is_invalid_pool_size)
    /// if `pool_size` is zero.
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
            periodic_slack: DEFAULT_PERIODIC_SLACK,
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
    /// assert_eq!(pool.queue_len(), 10);
    /// handles.iter().take(4).for_each(|h| assert!(h.handle().cancel()));
    /// assert_eq!(pool.queue_len(), 10);
    /// assert_eq!(pool.purge(), 4);
    /// assert_eq!(pool.queue_len(), 6);
    /// # Ok::<(), schedulers::Error>(())
    /// ```
    pub fn purge(&self) -> usize {
        self.shared.purge_now()
    }

    /// Entries in the queue, cancelled ones not yet removed included (the
    /// JDK's `getQueue().size()`). A task being run is not in the queue.
    pub fn queue_len(&self) -> usize {
        let mut driver = self.shared.lock();
        self.shared.intake_for_query(&mut driver);
        driver.queue.len() + driver.ready.len()
    }

    /// Workers running a task right now (the JDK's `getActiveCount`).
    pub fn active_count(&self) -> usize {
        let driver = self.shared.lock();
        driver.busy - self.shared.untaken(&driver)
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
        self.shared.lock().threads
    }

    /// Runs that have finished, panicked ones included (the JDK's
    /// `getCompletedTaskCount`; a periodic task counts once per run).
    pub fn completed_task_count(&self) -> u64 {
        self.shared.lock().completed
    }

    /// Whether cancelled tasks leave the queue at once (the JDK's
    /// `getRemoveOnCancelPolicy`).
    pub fn remove_on_cancel(&self) -> bool {
        self.remove_on_cancel
    }

    /// The JDK's `ensurePrestart` after a submission (of the task under
    /// `key`): one more worker per submission until `pool_size` run. If the operating system refuses
    /// the first worker, the task would never run: it is taken back out and
    /// handed back with the error. A refused later worker is skipped (the
    /// running ones take its share, and the next submission tries again).
    fn start_worker(&self, key: Key, spot: Spot) -> Result<TaskHandle, Rejected> {
        let handle = self.anchors.handle(key, spot);
        let Some(id) = self.next_worker() else {
            return Ok(handle);
        };
        let shared = self.shared.clone();
        {
            let mut driver = shared.lock();
            if driver.terminated {
                // Shut down with nothing left to run: this task was
                // cancelled by the shutdown, and no worker may start now.
                self.started.fetch_sub(1, Relaxed);
                return Ok(handle);
            }
            shared.thread_started(&mut driver);
        }
        let spawned = crate::builder::spawn(format!("{}-{id}", self.thread_name), move || {
            worker(shared, id)
        });
        let Err(error) = spawned else {
            return Ok(handle);
        };
        self.started.fetch_sub(1, Relaxed);
        let inner = self.shared.lock();
        let alone = inner.threads == 1;
        self.shared.thread_exited(inner);
        if !alone {
            return Ok(handle);
        }
        let task = self.shared.take_back(key);
        drop(handle);
        Err(Rejected::new(error, task))
    }

    /// The id of the next worker to start, if fewer than `pool_size` run.
    fn next_worker(&self) -> Option<usize> {
        if self.started.load(Relaxed) >= self.pool_size {
            return None;
        }
        let id = self.started.fetch_add(1, Relaxed);
        if id >= self.pool_size {
            self.started.fetch_sub(1, Relaxed);
            return None;
        }
        Some(id)
    }
}

impl ScheduledThreadPoolBuilder {
    common_builder_methods!();
    periodic_slack_method!(
        "[`DEFAULT_PERIODIC_SLACK`], 100 µs, twice `HeapTimer`'s: a batch of runs wakes two workers, the leader and a follower that runs them alongside it"
    );

    /// How many worker threads run tasks (the JDK's `corePoolSize`);
    /// default 1. Workers start one per submitted task until this many
    /// run. `build` refuses zero (the JDK quietly runs one).
    pub fn pool_size(mut self, threads: usize) -> Self {
        self.pool_size = threads;
        self
    }

    /// Whether a cancelled task leaves the queue at once (true: the worker
    /// removes it in O(log n) when it takes the cancel in) or when it
    /// reaches the head or a purge runs (false, the default, as in the JDK).
    /// Either way the cancel itself is one CAS and takes no lock.
    pub fn remove_on_cancel(mut self, remove: bool) -> Self {
        self.remove_on_cancel = remove;
        self
    }

    /// Returns the pool. No thread starts until the first task arrives.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_setting`](crate::Error::is_invalid_setting) for a
    /// zero pool size or a common setting it cannot honour.
    pub fn build(self) -> Result<ScheduledThreadPool, Error> {
        self.common.validate()?;
        crate::builder::check_periodic_slack(self.periodic_slack)?;
        if self.pool_size == 0 {
            return Err(Error::invalid(
                Setting::PoolSize,
                "0 workers would never run a task",
            ));
        }
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
            remove_on_cancel: self.remove_on_cancel,
        });
        let anchors = Anchors::new(&shared);
        Ok(ScheduledThreadPool {
            shared,
            anchors,
            pool_size: self.pool_size,
            remove_on_cancel: self.remove_on_cancel,
            thread_name: self.common.thread_name,
            started: AtomicUsize::new(0),
        })
    }
}

/// One worker: `ThreadPoolExecutor.runWorker` over `DelayedWorkQueue.take`,
/// taking due tasks in batches (see [`Shared::take_batch`]).
fn worker(shared: Arc<Shared>, id: usize) {
    shared.on_driver_thread();
    let mut driver = shared.lock();
    loop {
        if shared.is_stopped() {
            break;
        }
        shared.intake(&mut driver);
        driver = shared.bury(driver);
        shared.collect_due(&mut driver, shared.now());
        // Keys another worker took and has not started (it may be stuck
        // behind a slow task) come first: they were due before the ready
        // ones. Else a fair share of what is ready: the rest is for the
        // other workers not running a batch, one of which is signalled if
        // it waits.
        let share = driver.ready.len().div_ceil(shared.free_threads(&driver));
        let batch = match shared.open_batch(&mut driver) {
            Some(batch) => Some(batch),
            None => shared.take_batch(&mut driver, share, true),
        };
        if let Some(batch) = batch {
            // Leaving `take`: hand the leader role on if work remains, and
            // always if more is due now (a leader may be waiting for a
            // virtual clock, which only a signal moves).
            let more = !driver.ready.is_empty()
                || (driver.roles.leader.is_none() && !driver.queue.is_empty());
            // A deputy whose wake-up has come takes what is left at once
            // (the clock is read only when there is a deputy).
            let deputy_up = driver
                .roles
                .deputy
                .is_some_and(|(_, until)| until <= shared.now());
            let wake = more && !deputy_up && driver.waiting > 0;
            let wake = shared.stop_looking(&driver) || wake;
            drop(driver);
            if wake {
                // After the unlock: a woken thread must not find it held.
                shared.wakeup.notify_one();
            }
            let requeued_first;
            (driver, requeued_first) = shared.run_taken(batch);
            if requeued_first {
                shared.wakeup.notify_one();
            }
            continue;
        }
        // Resets after what is due, a few at a time (see `apply_moves`).
        if shared.apply_moves(&mut driver, MOVES_PER_LOOK) {
            continue;
        }
        if shared.may_exit(&mut driver) {
            break;
        }
        let next = shared.next_wake(&driver);
        let roles = (driver.roles.leader, driver.roles.deputy);
        match (next, roles) {
            (Some(until), (Some((leader, _)), None)) if leader != id => {
                // The deputy wakes with the head (the leader's deadline may
                // be one that passed while the leader is busy); it never
                // spins.
                driver.roles.deputy = Some((id, until));
                driver = shared.wait(driver, Some(until), until, false);
                if driver.roles.deputy.is_some_and(|(deputy, _)| deputy == id) {
                    driver.roles.deputy = None;
                }
            }
            (Some(next), (Some((leader, until)), _)) if leader != id && next >= until => {
                // A follower: the leader and its deputy wait for the head.
                driver = shared.wait(driver, None, until, false);
            }
            (Some(deadline), _) => {
                // The leader, or a new one: the queue's next look came
                // before the leader's while it slept (this thread's intake
                // staged enough timers to begin moving them sooner, see
                // `TimerQueue::stage`), and no thread would wake for it.
                driver.roles.leader = Some((id, deadline));
                driver = shared.wait(driver, Some(deadline), deadline, true);
                if driver.roles.leader.is_some_and(|(leader, _)| leader == id) {
                    driver.roles.leader = None;
                }
            }
            (None, _) => driver = shared.wait(driver, None, NEVER, false),
        }
    }
    shared.thread_exited(driver);
}

impl AsShared for ScheduledThreadPool {
    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn anchors(&self) -> &Anchors {
        &self.anchors
    }

    fn accept(&self, key: Key, spot: Spot) -> Result<TaskHandle, Rejected> {
        self.start_worker(key, spot)
    }
}

impl Drop for ScheduledThreadPool {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

impl fmt::Debug for ScheduledThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledThreadPool")
            .field("pool_size", &self.pool_size)
            .field("metrics", &self.shared.metrics())
            .finish()
    }
}
