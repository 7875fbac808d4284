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
mod counters;
mod drive;
mod handles;
mod lifecycle;
mod queue;
mod submit;
#[cfg(test)]
mod test;
mod wait;

use std::fmt;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64};

use crate::sync::atomic::AtomicU64 as StateWord;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::builder::ShutdownPolicy;
use crate::clock::{lock, nanos, Clock, Timebase};
use crate::core::{Expired, Key};
use crate::executor::Executor;
use crate::slab::Slots;
use crate::task::Body;

use counters::Sharded;
pub(crate) use queue::Queue;
use wait::{SpinMeter, SPIN_WINDOW};

/// Cancelled entries are purged automatically once there are at least this
/// many and they outnumber the live ones.
pub const AUTO_PURGE_MIN: usize = 1024;

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

/// The state behind the lock.
pub(crate) struct Inner {
    pub(crate) queue: Queue,
    /// Each key's closure (or failure), while it has one.
    bodies: Vec<Option<Box<dyn Body>>>,
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
    graveyard: Vec<Box<dyn Body>>,
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
                bodies: Vec::new(),
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
    pub(crate) body: Box<dyn Body>,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}
