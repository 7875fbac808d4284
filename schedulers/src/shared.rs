//! What a scheduler's threads and its handles share, and the lifecycle
//! every scheduler follows, written once.
//!
//! # Layout
//!
//! A timer is a *key*. Its state word sits in [`Slots`] (read and CASed
//! with no lock by handles); its closure, and its place in the algorithm's
//! pure queue ([`crate::core`]), sit in [`Inner`] behind one mutex. The
//! four schedulers differ only in their queue and in how their threads wait
//! and run tasks; submitting, cancelling, resetting, claiming, finishing,
//! purging, shutting down and terminating are here.
//!
//! # Costs per timer
//!
//! - **schedule**: one lock round trip; a key from the free list (or a
//!   fresh one); the closure stored; an O(1) (wheels) or O(log n) (heap)
//!   insert. A closure that captures nothing allocates nothing.
//! - **cancel**: one CAS on the state word and a counter on the caller's
//!   own cache line; no lock. The queue entry is left behind (dead) and
//!   removed when it comes due or by a bulk purge once dead entries
//!   outnumber live ones, so memory stays within about twice the live set.
//!   A closure with drop glue (it owns a buffer, an `Arc`…) is taken out
//!   and dropped at once under the lock, so a cancelled timer never pins
//!   what it captured.
//! - **reset**: one lock round trip and an O(1)/O(log n) move.
//! - **expire**: one lock round trip per run (finishing the previous run
//!   and claiming the next share it).
//!
//! A slot is reused once its last holder (handles, the queue) lets go.

use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

use crate::sync::atomic::AtomicU64 as StateWord;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::builder::ShutdownPolicy;
use crate::clock::{lock, nanos, wait_until, Clock, Timebase, Wakeable, NEVER};
use crate::core::{Expired, HashedWheel, HierarchicalWheel, IndexedHeap, Key, TimerQueue};
use crate::error::{Error, Kind, Rejected};
use crate::executor::Executor;
use crate::metrics::Metrics;
use crate::slab::Slots;
use crate::slot::{self, Cancel};
use crate::task::{self, Failure, Job, Ran, Repeat, Task};

/// Cancelled entries are purged automatically once there are at least this
/// many and they outnumber the live ones.
pub const AUTO_PURGE_MIN: usize = 1024;

/// Gaps shorter than this are spun through rather than slept, within the
/// spin budget: a timed wait on Linux wakes 50 to 90 µs late, so sleeping
/// through a gap this short makes its task late by several gaps.
const SHORT_GAP: Duration = Duration::from_micros(25);

/// The spin budget is counted per window of this many nanoseconds (a tenth
/// of a second), so a burst of short gaps spins until its share of the
/// window is spent, then sleeps.
const SPIN_WINDOW: u64 = 100_000_000;

/// What the driver threads spun in the current window.
#[derive(Debug, Default)]
struct SpinMeter {
    /// Start of the window, in ticks.
    since: u64,
    /// Nanoseconds spun in it.
    spent: u64,
}

impl SpinMeter {
    /// Whether a spin of `gap` ns at `now` stays within `budget` ns per
    /// window.
    fn allows(&mut self, now: u64, gap: u64, budget: u64) -> bool {
        if now.saturating_sub(self.since) >= SPIN_WINDOW {
            *self = SpinMeter {
                since: now,
                spent: 0,
            };
        }
        self.spent.saturating_add(gap) <= budget
    }
}

/// The algorithm's pure queue.
#[derive(Debug)]
pub(crate) enum Queue {
    Heap(IndexedHeap),
    Wheel(HashedWheel),
    Hier(HierarchicalWheel),
}

macro_rules! dispatch {
    ($queue:expr, $q:ident => $body:expr) => {
        match $queue {
            Queue::Heap($q) => $body,
            Queue::Wheel($q) => $body,
            Queue::Hier($q) => $body,
        }
    };
}

impl Queue {
    pub(crate) fn insert(&mut self, key: Key, deadline: u64) {
        dispatch!(self, q => q.insert(key, deadline))
    }
    fn remove(&mut self, key: Key) -> bool {
        dispatch!(self, q => q.remove(key))
    }
    fn reschedule(&mut self, key: Key, deadline: u64) -> bool {
        dispatch!(self, q => q.reschedule(key, deadline))
    }
    fn poll(&mut self, now: u64, out: &mut Vec<Expired>) {
        dispatch!(self, q => q.poll(now, out))
    }
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        dispatch!(self, q => q.next_deadline())
    }
    fn drain(&mut self, out: &mut Vec<Expired>) {
        dispatch!(self, q => q.drain(out))
    }
    fn retain(&mut self, keep: impl FnMut(Key) -> bool, removed: &mut Vec<Key>) {
        dispatch!(self, q => q.retain(keep, removed))
    }
    pub(crate) fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn contains(&self, key: Key) -> bool {
        dispatch!(self, q => q.contains(key))
    }
    fn deadline(&self, key: Key) -> Option<u64> {
        dispatch!(self, q => q.deadline(key))
    }
}

/// Everything a scheduler is built from.
pub(crate) struct Config {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) queue: Queue,
    pub(crate) executor: Executor,
    pub(crate) policy: ShutdownPolicy,
    pub(crate) pending_limit: Option<usize>,
    pub(crate) remove_on_cancel: bool,
    /// Spinning allowed per second of the clock's time.
    pub(crate) spin_budget: Duration,
    /// How late the OS may wake the driver's threads.
    pub(crate) timer_slack: Duration,
    /// How late a periodic run may start so that it shares a wake-up
    /// (heap queues only; zero elsewhere).
    pub(crate) periodic_slack: Duration,
}

/// Counters bumped by cancelling threads, one cache line per shard so that
/// threads do not write each other's lines.
#[derive(Debug)]
struct Sharded {
    shards: [Shard; SHARDS],
}

const SHARDS: usize = 16;

#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    /// Cancels of waiting tasks (their entries are now dead).
    pending: AtomicU64,
    /// Cancels of running periodic tasks.
    running: AtomicU64,
}

thread_local! {
    static SHARD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Relaxed) % SHARDS
    };
}

impl Sharded {
    fn mine(&self) -> &Shard {
        &self.shards[SHARD.with(|s| *s)]
    }
    fn pending(&self) -> u64 {
        self.shards.iter().map(|s| s.pending.load(Relaxed)).sum()
    }
    fn running(&self) -> u64 {
        self.shards.iter().map(|s| s.running.load(Relaxed)).sum()
    }
}

/// The state behind the lock.
pub(crate) struct Inner {
    pub(crate) queue: Queue,
    /// Each key's closure (or failure), while it has one.
    jobs: Vec<Option<Box<dyn Job>>>,
    free: Vec<Key>,
    /// Due keys waiting for a thread to claim them, in order. Each holds
    /// the driver's reference to its slot.
    pub(crate) ready: std::collections::VecDeque<Expired>,
    /// Tasks scheduled, counted under the lock (admitted and re-armed,
    /// minus claimed and ended); lock-free cancels are subtracted on read.
    balance: i64,
    fired: u64,
    /// Runs finished (the JDK's completed task count).
    pub(crate) completed: u64,
    /// Cancels counted under the lock (tasks a shutdown dropped).
    cancelled: u64,
    /// Dead entries (cancelled while waiting) removed from the queue.
    reclaimed: u64,
    /// Tasks claimed and not yet finished, plus keys handed to an executor.
    pub(crate) busy: usize,
    purge_requested: bool,
    spin: SpinMeter,
    /// Driver threads alive.
    pub(crate) threads: usize,
    /// Driver threads waiting on `wakeup`: a signal with none waiting is
    /// a system call for nothing.
    pub(crate) waiting: usize,
    /// The thread waiting, timed, for the next deadline while others wait
    /// for a signal (the JDK's leader), and that deadline; cleared to hand
    /// the role on.
    pub(crate) leader: Option<(usize, u64)>,
    /// A second thread waiting, timed, for the next wake-up beside the
    /// leader (a pool's deputy), and when: then one of the two runs what is
    /// due and the other leads on, with no signal between them.
    pub(crate) deputy: Option<(usize, u64)>,
    pub(crate) terminated: bool,
    /// Closures to drop once the lock is released: their destructors are
    /// user code, which may use this scheduler.
    graveyard: Vec<Box<dyn Job>>,
    /// Threads dropping closures taken from the graveyard: until they are
    /// done the scheduler is not idle.
    burying: usize,
}

/// A scheduler's shared state. See the [module docs](self).
pub(crate) struct Shared {
    pub(crate) slots: Slots,
    inner: Mutex<Inner>,
    /// Driver threads wait here for work, a wake-up or shutdown.
    pub(crate) wakeup: Condvar,
    terminated: Condvar,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) timebase: Timebase,
    policy: ShutdownPolicy,
    pending_limit: usize,
    remove_on_cancel: bool,
    /// Nanoseconds of spinning allowed per [`SPIN_WINDOW`].
    spin_per_window: u64,
    /// What the driver's threads ask of Linux: see `set_timer_slack`.
    timer_slack: Duration,
    /// Nanoseconds a periodic run may start late: see [`Shared::next_wake`].
    periodic_slack: u64,
    pub(crate) executor: Executor,
    /// When the waiting driver wakes by itself, in ticks: `NEVER` while it
    /// waits for a signal, 0 while it is awake. A submission due earlier
    /// wakes it.
    pub(crate) wake_at: AtomicU64,
    cancels: Sharded,
    /// Times a driver thread woke from a wait.
    wakeups: AtomicU64,
    /// The number of cancels at which dead entries would outnumber live
    /// ones (as of the driver's last look): cancels ask for a purge then.
    purge_at: AtomicU64,
    shutdown: AtomicBool,
    /// `shutdown_now` was called: nothing runs or repeats any more.
    stopped: AtomicBool,
}

impl Shared {
    pub(crate) fn new(config: Config) -> Arc<Shared> {
        let timebase = Timebase::new(config.clock.now());
        let shared = Arc::new(Shared {
            slots: Slots::new(),
            inner: Mutex::new(Inner {
                queue: config.queue,
                jobs: Vec::new(),
                free: Vec::new(),
                ready: Default::default(),
                balance: 0,
                fired: 0,
                completed: 0,
                cancelled: 0,
                reclaimed: 0,
                busy: 0,
                purge_requested: false,
                spin: SpinMeter::default(),
                threads: 0,
                waiting: 0,
                leader: None,
                deputy: None,
                terminated: false,
                graveyard: Vec::new(),
                burying: 0,
            }),
            wakeup: Condvar::new(),
            terminated: Condvar::new(),
            clock: config.clock,
            timebase,
            policy: config.policy,
            pending_limit: config.pending_limit.unwrap_or(usize::MAX),
            remove_on_cancel: config.remove_on_cancel,
            spin_per_window: (nanos(config.spin_budget) as u128 * u128::from(SPIN_WINDOW)
                / 1_000_000_000) as u64,
            timer_slack: config.timer_slack,
            periodic_slack: nanos(config.periodic_slack),
            executor: config.executor,
            wake_at: AtomicU64::new(0),
            cancels: Sharded {
                shards: Default::default(),
            },
            wakeups: AtomicU64::new(0),
            purge_at: AtomicU64::new(AUTO_PURGE_MIN as u64),
            shutdown: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        });
        shared.executor.bind(&shared.clock);
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        shared.clock.attach(weak);
        shared
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Now, in ticks (nanoseconds since the scheduler started).
    pub(crate) fn now(&self) -> u64 {
        self.timebase.ticks(self.clock.now())
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(SeqCst)
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(SeqCst)
    }

    fn word(&self, key: Key) -> &StateWord {
        self.slots.word(key)
    }

    /// Scheduled tasks right now.
    fn pending(&self, inner: &Inner) -> usize {
        let n = inner.balance - self.cancels.pending() as i64;
        usize::try_from(n).unwrap_or(0)
    }

    // ---- submitting -------------------------------------------------------

    /// Queues `task` to run at `when`; returns its key, holding one
    /// reference for the caller's handle, or the task with the reason it
    /// was refused.
    pub(crate) fn submit(&self, when: When, task: Task) -> Result<Key, Rejected> {
        let deadline = match self.deadline(when) {
            Ok(deadline) => deadline,
            Err(e) => return Err(Rejected::new(e, Some(task))),
        };
        let mut inner = self.lock();
        if self.is_shutdown() {
            return Err(Rejected::new(Error::new(Kind::Shutdown), Some(task)));
        }
        if inner.balance >= self.pending_limit as i64 && self.pending(&inner) >= self.pending_limit
        {
            let error = Error::new(Kind::PendingLimit(self.pending_limit));
            return Err(Rejected::new(error, Some(task)));
        }
        let key = match self.alloc(&mut inner) {
            Ok(key) => key,
            Err(e) => return Err(Rejected::new(e, Some(task))),
        };
        slot::arm(
            self.word(key),
            task.needs_drop,
            task.job.repeat() != Repeat::Once,
        );
        let old = inner.jobs[key as usize].replace(task.job);
        inner.queue.insert(key, deadline);
        inner.balance += 1;
        let wake = self.wakes_for(&mut inner, key, deadline);
        drop(inner);
        // A closure left from the slot's last use has no drop glue (one
        // with drop glue was dropped when its task ended).
        drop(old);
        if wake {
            self.wakeup.notify_one();
        }
        Ok(key)
    }

    /// Takes a just-submitted task back out (its handle was never given
    /// out), as if it had never been accepted: for a scheduler that finds
    /// it cannot run it after all. Drops the handle's and the queue's
    /// references.
    pub(crate) fn take_back(&self, key: Key) -> Option<Task> {
        let mut inner = self.lock();
        let word = self.word(key);
        let needs_drop = word.load(Acquire) & slot::NEEDS_DROP != 0;
        slot::end_scheduled(word, slot::CANCELLED)?;
        inner.balance -= 1;
        if inner.queue.remove(key) {
            self.release_locked(&mut inner, key);
        }
        let job = inner.jobs[key as usize].take()?;
        Some(Task { job, needs_drop })
    }

    /// A deadline in ticks.
    fn deadline(&self, when: When) -> Result<u64, Error> {
        match when {
            When::After(delay) => Timebase::deadline(self.now(), delay),
            When::At(at) => self.timebase.deadline_at(at),
        }
    }

    /// True if the task under `key`, now due at `deadline`, must start
    /// before the waiting driver's planned wake-up: then the leader role is
    /// handed on and one waiting thread must be signalled (the JDK's
    /// `offer`).
    pub(crate) fn wakes_for(&self, inner: &mut Inner, key: Key, deadline: u64) -> bool {
        let mut slack = self.slack(inner, key);
        // A task due already gets no slack: a driver on a virtual clock
        // waits for a signal, and no advance of time would bring one. (The
        // clock is read only for a slacked task: not on a one-shot's path.)
        if slack > 0 && deadline <= self.now() {
            slack = 0;
        }
        let mut latest = deadline.saturating_add(slack);
        if let Queue::Hier(wheels) = &inner.queue {
            // A bucket grown big is offered ahead of its earliest deadline
            // (to move down in chunks): that time may now come first.
            latest = latest.min(wheels.next_deadline().unwrap_or(NEVER));
        }
        let wake = latest < self.wake_at.load(SeqCst);
        if wake {
            inner.leader = None;
        }
        wake
    }

    fn alloc(&self, inner: &mut Inner) -> Result<Key, Error> {
        if inner.free.is_empty() {
            self.slots.take_freed(&mut inner.free);
        }
        if let Some(key) = inner.free.pop() {
            return Ok(key);
        }
        let key = Key::try_from(inner.jobs.len()).unwrap_or(Key::MAX);
        if !self.slots.reserve(key) {
            return Err(Error::new(Kind::PendingLimit(inner.jobs.len())));
        }
        inner.jobs.push(None);
        Ok(key)
    }

    // ---- what handles do ----------------------------------------------------

    /// Stops every future run of `key`; true iff this call did.
    pub(crate) fn cancel(&self, key: Key) -> bool {
        let (outcome, prev) = slot::cancel(self.word(key));
        match outcome {
            Cancel::WasPending { needs_drop } => {
                let shard = self.cancels.mine();
                let n = shard.pending.fetch_add(1, Relaxed) + 1;
                // Every so often, see whether dead entries now pay a purge
                // (summing the shards is too dear for every cancel).
                let purge = n.is_multiple_of(AUTO_PURGE_MIN as u64)
                    && self.cancels.pending() >= self.purge_at.load(Relaxed);
                if needs_drop || self.remove_on_cancel || purge || self.is_shutdown() {
                    let mut inner = self.lock();
                    let job = if needs_drop {
                        inner.jobs[key as usize].take()
                    } else {
                        None
                    };
                    if (self.remove_on_cancel || self.is_shutdown()) && inner.queue.remove(key) {
                        inner.reclaimed += 1;
                        self.release_locked(&mut inner, key);
                    }
                    inner.purge_requested |= purge;
                    drop(inner);
                    if purge || self.is_shutdown() {
                        self.wakeup.notify_all();
                    }
                    task::drop_contained(job);
                }
                self.wake_waiters(key, prev);
            }
            Cancel::WasRunning => {
                self.cancels.mine().running.fetch_add(1, Relaxed);
            }
            Cancel::TooLate => {}
        }
        outcome.stopped()
    }

    /// Moves a waiting task to a new deadline.
    pub(crate) fn reset(&self, key: Key, when: When) -> Result<bool, Error> {
        let deadline = self.deadline(when)?;
        let mut inner = self.lock();
        if slot::state(self.word(key).load(Acquire)) != slot::SCHEDULED {
            return Ok(false);
        }
        if !inner.queue.reschedule(key, deadline) {
            // Due and waiting for a thread: queue it again; the waiting
            // reference will find it queued and let go.
            slot::acquire(self.word(key));
            inner.queue.insert(key, deadline);
        }
        let wake = self.wakes_for(&mut inner, key, deadline);
        drop(inner);
        if wake {
            self.wakeup.notify_one();
        }
        Ok(true)
    }

    /// The deadline of the next run, while the task waits for it (a task
    /// that is due and waiting for a thread has none any more).
    pub(crate) fn deadline_of(&self, key: Key) -> Option<u64> {
        let inner = self.lock();
        if slot::state(self.word(key).load(Acquire)) != slot::SCHEDULED {
            return None;
        }
        inner.queue.deadline(key)
    }

    /// The time left until the next run: zero unless waiting for a future
    /// deadline.
    pub(crate) fn remaining(&self, key: Key) -> Duration {
        let left = self
            .deadline_of(key)
            .map_or(0, |d| d.saturating_sub(self.now()));
        Duration::from_nanos(left)
    }

    /// The next run's deadline as an instant.
    pub(crate) fn deadline_instant(&self, key: Key) -> Option<Instant> {
        self.timebase.instant(self.deadline_of(key)?)
    }

    pub(crate) fn state(&self, key: Key) -> u64 {
        slot::state(self.word(key).load(Acquire))
    }

    /// A handle was cloned.
    pub(crate) fn acquire(&self, key: Key) {
        slot::acquire(self.word(key));
    }

    /// A handle was dropped.
    pub(crate) fn release(&self, key: Key) {
        if slot::release(self.word(key)) {
            self.slots.push_freed(key);
        }
    }

    /// Drops the driver's reference to `key` (under the lock).
    fn release_locked(&self, inner: &mut Inner, key: Key) {
        if slot::release(self.word(key)) {
            inner.free.push(key);
        }
    }

    /// How a finished task ended: `Ok` if it completed.
    pub(crate) fn outcome(&self, key: Key, word: u64) -> Result<(), Error> {
        match slot::state(word) {
            slot::DONE => Ok(()),
            slot::CANCELLED => Err(Error::new(Kind::Cancelled)),
            slot::ABANDONED => Err(Error::new(Kind::Abandoned)),
            _ => {
                let inner = self.lock();
                let failure = inner.jobs[key as usize]
                    .as_ref()
                    .and_then(|j| j.failure().cloned());
                Err(failure.unwrap_or_else(|| Error::new(Kind::Panicked("unknown".into()))))
            }
        }
    }

    /// Blocks until `key` ended, or `timeout` of real time passed.
    pub(crate) fn wait_for_end(&self, key: Key, timeout: Option<Duration>) -> Result<(), Error> {
        let word = crate::waiters::wait(self.waiter_id(key), timeout, || {
            let w = slot::add_waiter(self.word(key));
            slot::is_terminal(w).then_some(w)
        })?;
        self.outcome(key, word)
    }

    /// For a future: the outcome if `key` ended, else leaves `waker` to be
    /// woken when it does.
    pub(crate) fn poll_end(&self, key: Key, waker: &Waker) -> Option<Result<(), Error>> {
        let word = crate::waiters::register(self.waiter_id(key), waker, || {
            let w = slot::add_waiter(self.word(key));
            slot::is_terminal(w).then_some(w)
        })?;
        Some(self.outcome(key, word))
    }

    fn waiter_id(&self, key: Key) -> usize {
        (self as *const Shared as usize) ^ (key as usize).wrapping_mul(0x9E37_79B9)
    }

    fn wake_waiters(&self, key: Key, prev: u64) {
        if prev & slot::WAITER != 0 {
            crate::waiters::wake(self.waiter_id(key));
        }
    }

    // ---- what drivers do ------------------------------------------------------

    /// Moves every key due at `now` from the queue to `ready`, and purges
    /// dead entries if a cancel asked for it. Returns true if any is ready.
    pub(crate) fn collect_due(&self, inner: &mut Inner, now: u64) -> bool {
        if std::mem::take(&mut inner.purge_requested) {
            self.purge_if_needed(inner);
        }
        let mut due = Vec::new();
        inner.queue.poll(now, &mut due);
        inner.ready.extend(due);
        !inner.ready.is_empty()
    }

    /// When a driver must wake next: at the queue's next deadline, except
    /// that a periodic run may start up to `periodic_slack` late, so that
    /// runs due close together share one wake-up; a one-shot due meanwhile
    /// still wakes it on time (a heap tells its keys apart; the wheels keep
    /// per-slot bounds, so they wake at the next deadline).
    pub(crate) fn next_wake(&self, inner: &Inner) -> Option<u64> {
        match &inner.queue {
            Queue::Heap(heap) if self.periodic_slack > 0 => {
                heap.next_wake(|key| self.slack(inner, key))
            }
            queue => queue.next_deadline(),
        }
    }

    /// How late the task under `key` may start: `periodic_slack` for a
    /// periodic task, nothing for a one-shot.
    fn slack(&self, inner: &Inner, key: Key) -> u64 {
        if self.periodic_slack == 0 {
            return 0;
        }
        match inner.jobs[key as usize].as_ref().map(|job| job.repeat()) {
            Some(Repeat::FixedRate(_) | Repeat::FixedDelay(_)) => self.periodic_slack,
            Some(Repeat::Once) | None => 0,
        }
    }

    /// Takes the next ready key and claims its task to run on this thread.
    /// Dead keys met on the way are released. `None` when nothing is ready.
    pub(crate) fn claim_next(&self, inner: &mut Inner) -> Option<Claimed> {
        while let Some(e) = inner.ready.pop_front() {
            if let Some(claimed) = self.claim(inner, e) {
                return Some(claimed);
            }
        }
        None
    }

    /// Claims a due key for this thread, if its task is still waiting and
    /// was not queued again since (a reset).
    pub(crate) fn claim(&self, inner: &mut Inner, e: Expired) -> Option<Claimed> {
        let word = self.word(e.key);
        if !inner.queue.contains(e.key) && slot::claim(word) {
            inner.balance -= 1;
            inner.fired += 1;
            inner.busy += 1;
            let job = inner.jobs[e.key as usize]
                .take()
                .expect("a waiting task has its closure");
            return Some(Claimed {
                key: e.key,
                scheduled: e.deadline,
                job,
            });
        }
        if slot::state(word.load(Acquire)) == slot::CANCELLED && !inner.queue.contains(e.key) {
            inner.reclaimed += 1;
        }
        self.release_locked(inner, e.key);
        None
    }

    /// Hands a ready key to the executor; its worker claims it when it
    /// starts, so until then it can still be cancelled, reset or abandoned.
    pub(crate) fn hand_off(self: &Arc<Self>, inner: &mut Inner, e: Expired) {
        inner.busy += 1;
        let shared = self.clone();
        self.executor.execute(move || shared.run_handed_off(e));
    }

    fn run_handed_off(&self, e: Expired) {
        let mut inner = self.lock();
        inner.busy -= 1;
        let Some(claimed) = self.claim(&mut inner, e) else {
            let wake = self.is_shutdown() && inner.busy == 0;
            drop(self.bury(inner));
            if wake {
                self.wakeup.notify_all();
            }
            return;
        };
        drop(inner);
        let ran = task::run(claimed.job);
        let mut inner = self.lock();
        let wake = self.finish(&mut inner, claimed.key, claimed.scheduled, ran);
        // After shutdown the driver waits for the last run to end.
        let wake = wake || (self.is_shutdown() && inner.busy == 0);
        drop(self.bury(inner));
        if wake {
            self.wakeup.notify_all();
        }
    }

    /// Records how a claimed task's run ended: re-queues a periodic task,
    /// ends the others and wakes their waiters. Returns true if the
    /// re-queued task is due before the driver's planned wake-up.
    pub(crate) fn finish(&self, inner: &mut Inner, key: Key, scheduled: u64, ran: Ran) -> bool {
        inner.busy -= 1;
        inner.completed += 1;
        let word = self.word(key);
        match ran {
            Ran::Done => {
                let prev = slot::finish(word, slot::DONE);
                self.end(inner, key, prev);
            }
            Ran::Panicked(error) => {
                inner.jobs[key as usize] = Some(Box::new(Failure(error)));
                let prev = slot::finish(word, slot::PANICKED);
                self.end(inner, key, prev);
            }
            Ran::Again(job) => {
                let dropped =
                    self.is_stopped() || (self.is_shutdown() && !self.policy.keeps_periodic());
                if dropped {
                    let prev = slot::finish(word, slot::CANCELLED);
                    if slot::state(prev) == slot::RUNNING {
                        inner.cancelled += 1;
                    }
                    inner.graveyard.push(job);
                    self.end(inner, key, prev);
                    return false;
                }
                let next = match job.repeat() {
                    Repeat::FixedRate(period) => scheduled.checked_add(period),
                    Repeat::FixedDelay(delay) => self.now().checked_add(delay),
                    Repeat::Once => None,
                }
                .filter(|&t| t < NEVER)
                .unwrap_or(NEVER);
                let (again, prev) = slot::rearm(word);
                if !again {
                    inner.graveyard.push(job);
                    self.end(inner, key, prev);
                    return false;
                }
                inner.jobs[key as usize] = Some(job);
                inner.balance += 1;
                inner.queue.insert(key, next);
                return self.wakes_for(inner, key, next);
            }
        }
        false
    }

    /// A task reached its end: wake its waiters, drop the driver's reference.
    fn end(&self, inner: &mut Inner, key: Key, prev: u64) {
        self.wake_waiters(key, prev);
        self.release_locked(inner, key);
    }

    /// Drops the closures in the graveyard with the lock released (their
    /// destructors may use this scheduler), and returns the lock. Until
    /// they are dropped the scheduler is not idle, so a `ManualClock`'s
    /// `advance` returns only after the closures of the tasks that ended.
    /// With an empty graveyard it only hands the lock back.
    pub(crate) fn bury<'a>(&'a self, mut inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
        let graveyard = std::mem::take(&mut inner.graveyard);
        if graveyard.is_empty() {
            return inner;
        }
        inner.burying += 1;
        drop(inner);
        for job in graveyard {
            task::drop_contained(job);
        }
        let mut inner = self.lock();
        inner.burying -= 1;
        inner
    }

    /// Removes every dead entry if they outnumber the live ones (and are at
    /// least [`AUTO_PURGE_MIN`]).
    fn purge_if_needed(&self, inner: &mut Inner) {
        let dead = self.dead(inner) as usize;
        if dead >= AUTO_PURGE_MIN && dead * 2 > inner.queue.len() {
            self.purge(inner);
        }
        let worth = AUTO_PURGE_MIN.max(inner.queue.len() / 2 + 1) as u64;
        self.purge_at.store(inner.reclaimed + worth, Relaxed);
    }

    /// Removes every cancelled entry from the queue; returns how many.
    pub(crate) fn purge(&self, inner: &mut Inner) -> usize {
        let mut removed = Vec::new();
        let slots = &self.slots;
        inner.queue.retain(
            |key| slot::state(slots.word(key).load(Acquire)) == slot::SCHEDULED,
            &mut removed,
        );
        for &key in &removed {
            inner.reclaimed += 1;
            self.release_locked(inner, key);
        }
        removed.len()
    }

    /// When the driver next has work, once every dead entry is gone.
    pub(crate) fn next_expiration(&self) -> Option<Instant> {
        let mut inner = self.lock();
        if self.dead(&inner) > 0 {
            self.purge(&mut inner);
        }
        self.timebase.instant(inner.queue.next_deadline()?)
    }

    /// Dead entries (cancelled while waiting) still in the queue.
    fn dead(&self, inner: &Inner) -> u64 {
        self.cancels.pending().saturating_sub(inner.reclaimed)
    }

    /// Before a driver sleeps: with no task waiting, what is left in the
    /// queue is dead, so drop it rather than wake up for it.
    pub(crate) fn drop_dead_if_idle(&self, inner: &mut Inner) {
        if !inner.queue.is_empty() && self.pending(inner) == 0 && self.dead(inner) > 0 {
            self.purge(inner);
        }
    }

    /// Whether a driver thread may exit: shut down, and no task waits or
    /// runs. Dead entries left in the queue are dropped.
    pub(crate) fn may_exit(&self, inner: &mut Inner) -> bool {
        if !self.is_shutdown() || inner.busy > 0 || !inner.ready.is_empty() {
            return false;
        }
        if self.is_stopped() || self.pending(inner) == 0 {
            if !inner.queue.is_empty() {
                self.purge(inner);
            }
            return inner.queue.is_empty();
        }
        false
    }

    /// Blocks a driver until woken or until `deadline` (ticks; `None`:
    /// until woken), after recording in `wake_at` when the waiting threads
    /// will look at the queue by themselves (the caller's deadline, or its
    /// leader's), so that a submission due earlier signals one of them.
    /// Every thread republishes before it sleeps, so the last one to sleep
    /// leaves the right value; while any is awake it reads 0.
    ///
    /// A deadline that has passed returns at once: the queue still has
    /// work for this instant (a cascade it spreads over polls), and a
    /// virtual clock would never wake a driver for it. With `may_spin`, a
    /// deadline closer than a wake-up is spun through (within the budget).
    pub(crate) fn wait<'a>(
        &'a self,
        mut inner: MutexGuard<'a, Inner>,
        deadline: Option<u64>,
        wake_at: u64,
        may_spin: bool,
    ) -> MutexGuard<'a, Inner> {
        if deadline.is_some_and(|d| d <= self.now()) {
            return inner;
        }
        let timeout = deadline
            .and_then(|d| self.timebase.instant(d))
            .and_then(|at| self.clock.wait_for(at));
        if let (Some(t), Some(d)) = (timeout, deadline) {
            let (now, gap) = (self.now(), nanos(t));
            if may_spin && t < SHORT_GAP && inner.spin.allows(now, gap, self.spin_per_window) {
                // A timed wait would wake later than this gap lasts.
                drop(inner);
                let mut at = now;
                while at < d {
                    std::hint::spin_loop();
                    at = self.now();
                }
                let mut inner = self.lock();
                inner.spin.spent += at - now;
                return inner;
            }
        }
        self.wake_at.store(wake_at, SeqCst);
        self.clock.on_idle();
        inner.waiting += 1;
        let mut inner = match timeout {
            Some(t) => {
                self.wakeup
                    .wait_timeout(inner, t)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => self
                .wakeup
                .wait(inner)
                .unwrap_or_else(PoisonError::into_inner),
        };
        inner.waiting -= 1;
        self.wakeups.fetch_add(1, Relaxed);
        self.wake_at.store(0, SeqCst);
        inner
    }

    /// Called first on every driver thread: sets its timer slack.
    pub(crate) fn on_driver_thread(&self) {
        crate::clock::set_timer_slack(self.timer_slack);
    }

    /// Times a driver thread woke from a wait.
    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.load(Relaxed)
    }

    /// A driver thread started.
    pub(crate) fn thread_started(&self, inner: &mut Inner) {
        inner.threads += 1;
    }

    /// A driver thread exits; the last one marks the scheduler terminated.
    pub(crate) fn thread_exited(&self, mut inner: MutexGuard<'_, Inner>) {
        inner.threads -= 1;
        if inner.threads == 0 {
            inner.terminated = true;
            self.terminated.notify_all();
        }
        drop(self.bury(inner));
        self.wakeup.notify_all();
        self.clock.on_idle();
    }

    // ---- the Scheduler trait's tail --------------------------------------------

    /// `shutdown`: no new tasks; what the policy does not keep is cancelled.
    pub(crate) fn shutdown(&self) {
        let mut inner = self.lock();
        self.terminate_if_threadless(&mut inner);
        if !self.shutdown.swap(true, SeqCst) {
            let mut all = Vec::new();
            inner.queue.drain(&mut all);
            let now = self.now();
            for e in all {
                let word = self.word(e.key);
                let w = word.load(Acquire);
                if slot::state(w) != slot::SCHEDULED {
                    inner.reclaimed += 1;
                    self.release_locked(&mut inner, e.key);
                    continue;
                }
                let periodic = inner.jobs[e.key as usize]
                    .as_ref()
                    .is_some_and(|j| j.repeat() != Repeat::Once);
                let keep = if periodic {
                    self.policy.keeps_periodic()
                } else {
                    self.policy.keeps_one_shots() || e.deadline <= now
                };
                if keep {
                    inner.queue.insert(e.key, e.deadline);
                } else if let Some(prev) = slot::end_scheduled(word, slot::CANCELLED) {
                    inner.balance -= 1;
                    inner.cancelled += 1;
                    if let Some(job) = inner.jobs[e.key as usize].take() {
                        inner.graveyard.push(job);
                    }
                    self.end(&mut inner, e.key, prev);
                }
            }
            if !self.policy.keeps_periodic() {
                self.stop_periodic_in_flight(&mut inner);
            }
        }
        drop(self.bury(inner));
        self.wakeup.notify_all();
    }

    /// Cancels the periodic tasks that are due and waiting for a thread (out
    /// of the queue, in `ready` or an executor's queue): shutdown stops them
    /// too. Their waiting references let go when they find them cancelled.
    fn stop_periodic_in_flight(&self, inner: &mut Inner) {
        for key in 0..inner.jobs.len() as Key {
            let periodic = inner.jobs[key as usize]
                .as_ref()
                .is_some_and(|j| j.repeat() != Repeat::Once);
            if !periodic || inner.queue.contains(key) {
                continue;
            }
            if let Some(prev) = slot::end_scheduled(self.word(key), slot::CANCELLED) {
                inner.balance -= 1;
                inner.cancelled += 1;
                if let Some(job) = inner.jobs[key as usize].take() {
                    inner.graveyard.push(job);
                }
                self.wake_waiters(key, prev);
            }
        }
    }

    /// `shutdown_now`: every waiting task is abandoned; returns their keys,
    /// each holding a reference for a handle.
    pub(crate) fn shutdown_now(&self) -> Vec<Key> {
        let mut inner = self.lock();
        self.stopped.store(true, SeqCst);
        self.shutdown.store(true, SeqCst);
        self.terminate_if_threadless(&mut inner);
        let mut all = Vec::new();
        inner.queue.drain(&mut all);
        all.extend(inner.ready.drain(..));
        // In deadline order, as they were queued; keys handed to an executor
        // are not in the queue, so sweep every slot, and put those last.
        let mut order = vec![usize::MAX; inner.jobs.len()];
        for (i, e) in all.iter().enumerate() {
            order[e.key as usize] = order[e.key as usize].min(i);
        }
        let mut never_ran = Vec::new();
        for key in 0..inner.jobs.len() as Key {
            let word = self.word(key);
            if let Some(prev) = slot::end_scheduled(word, slot::ABANDONED) {
                inner.balance -= 1;
                if let Some(job) = inner.jobs[key as usize].take() {
                    inner.graveyard.push(job);
                }
                self.wake_waiters(key, prev);
                slot::acquire(word);
                never_ran.push((order[key as usize], key));
            }
        }
        for e in all {
            self.release_locked(&mut inner, e.key);
        }
        drop(self.bury(inner));
        self.wakeup.notify_all();
        never_ran.sort_unstable();
        never_ran.into_iter().map(|(_, key)| key).collect()
    }

    /// A scheduler whose threads start lazily may have none at shutdown.
    fn terminate_if_threadless(&self, inner: &mut Inner) {
        if inner.threads == 0 && !inner.terminated {
            inner.terminated = true;
            self.terminated.notify_all();
        }
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.lock().terminated
    }

    pub(crate) fn await_termination(&self, timeout: Duration) -> bool {
        wait_until(&self.inner, &self.terminated, timeout, |s| s.terminated)
    }

    pub(crate) fn metrics(&self) -> Metrics {
        let inner = self.lock();
        Metrics {
            pending: self.pending(&inner),
            fired: inner.fired,
            cancelled: inner.cancelled + self.cancels.pending() + self.cancels.running(),
        }
    }
}

/// When a task should run.
#[derive(Clone, Copy, Debug)]
pub(crate) enum When {
    /// After a delay from now.
    After(Duration),
    /// At an instant of the scheduler's clock.
    At(Instant),
}

/// A task claimed to run on the current thread.
pub(crate) struct Claimed {
    pub(crate) key: Key,
    /// The deadline it ran for (fixed-rate runs stay on their grid).
    pub(crate) scheduled: u64,
    pub(crate) job: Box<dyn Job>,
}

impl Wakeable for Shared {
    fn wake(&self) {
        let _inner = self.lock();
        self.wakeup.notify_all();
    }

    fn is_idle(&self, now: Instant) -> bool {
        let now = self.timebase.ticks(now);
        let inner = self.lock();

        inner.terminated
            || (inner.busy == 0
                && inner.burying == 0
                && inner.ready.is_empty()
                && !inner.purge_requested
                && self.executor.is_idle()
                && inner.queue.next_deadline().is_none_or(|d| d > now))
    }

    fn is_caught_up(&self, now: Instant) -> bool {
        if self.executor.is_inline() {
            return true; // the caller may be this driver: never wait for it
        }
        let now = self.timebase.ticks(now);
        let inner = self.lock();
        inner.terminated
            || (inner.ready.is_empty() && inner.queue.next_deadline().is_none_or(|d| d > now))
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A scheduler's shared state on a virtual clock, with no driver
    /// thread: the tests call what a driver would.
    fn threadless(queue: Queue, periodic_slack: Duration) -> Arc<Shared> {
        Shared::new(Config {
            clock: Arc::new(crate::ManualClock::new()),
            queue,
            executor: Executor::inline(),
            policy: ShutdownPolicy::default(),
            pending_limit: None,
            remove_on_cancel: false,
            spin_budget: Duration::ZERO,
            timer_slack: crate::DEFAULT_TIMER_SLACK,
            periodic_slack,
        })
    }

    /// A periodic run may wait `periodic_slack` for others to share its
    /// wake-up; a one-shot due meanwhile sets the wake-up instead.
    #[test]
    fn a_periodic_run_waits_its_slack_unless_a_one_shot_is_due_first() {
        let (ms, us) = (Duration::from_millis, Duration::from_micros);
        let shared = threadless(Queue::Heap(IndexedHeap::new()), us(50));
        let wake = || shared.next_wake(&shared.lock()).map(|t| t - shared.now());
        let tick = Task::fixed_rate(ms(10), || {}).unwrap();
        shared.submit(When::After(ms(1)), tick).unwrap();
        assert_eq!(wake(), Some(nanos(ms(1) + us(50))));
        shared
            .submit(When::After(ms(1) + us(20)), Task::once(|| ()))
            .unwrap();
        assert_eq!(wake(), Some(nanos(ms(1) + us(20))));
        shared
            .submit(When::After(us(900)), Task::once(|| ()))
            .unwrap();
        assert_eq!(wake(), Some(nanos(us(900))));
    }

    /// A wheel bucket grown big is offered ahead of its earliest deadline,
    /// to move down in chunks: the submission that makes it so must wake a
    /// driver planned for later, though the task itself is due after it.
    #[test]
    fn a_bucket_offered_ahead_of_its_deadline_wakes_the_driver() {
        let ms = |n: u64| n * 1_000_000;
        let wheels = HierarchicalWheel::new(ms(1), 8, 0, crate::core::Precision::Exact).unwrap();
        let shared = threadless(Queue::Hier(wheels), Duration::ZERO);
        shared.wake_at.store(ms(990), SeqCst); // a driver asleep until 990 ms
        let mut last = 0;
        for _ in 0..300 {
            let task = Task::once(|| ());
            last = shared
                .submit(When::After(Duration::from_secs(1)), task)
                .unwrap();
        }
        let mut inner = shared.lock();
        let head = inner.queue.next_deadline().unwrap();
        assert!(head < ms(990), "offered ahead, at {head}");
        assert!(shared.wakes_for(&mut inner, last, ms(1000)));
    }

    /// The meter lets a window spin up to its budget, counting each spin
    /// as it is asked for, and starts afresh in the next window.
    #[test]
    fn spinning_stops_when_the_window_budget_is_spent() {
        let mut meter = SpinMeter::default();
        let budget = 10_000;
        assert!(meter.allows(0, 6_000, budget));
        meter.spent += 6_000;
        assert!(meter.allows(1_000, 4_000, budget));
        meter.spent += 4_000;
        assert!(
            !meter.allows(2_000, 1, budget),
            "the window's budget is spent"
        );
        assert!(meter.allows(SPIN_WINDOW, 5_000, budget), "a new window");
        assert!(
            !SpinMeter::default().allows(0, 1, 0),
            "a zero budget never spins"
        );
    }
}
