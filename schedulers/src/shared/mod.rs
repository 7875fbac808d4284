//! What a scheduler's threads and its handles share, and the lifecycle
//! every scheduler follows, written once.
//!
//! # Layout
//!
//! A timer is a *key*: a slot in the [`Slab`] holding its state word (read
//! and CASed with no lock) and its body (the closure, then its value). The
//! algorithm's pure queue ([`crate::core`]) sits in the [`DriverState`]
//! behind the driver's mutex, which only the scheduler's own threads take
//! on their way (and queries such as `remaining` or `metrics`). Callers
//! reach the driver through their [lanes](crate::lanes). The four
//! schedulers differ only in their queue and in how their threads wait and
//! run tasks; submitting, cancelling, resetting, the intake from the lanes,
//! claiming, finishing, purging, shutting down and terminating are here.
//!
//! # Costs per timer
//!
//! - **schedule**: the time (on the system clock, from the CPU's counter:
//!   see `crate::cycles`), one round trip of the caller's own lane lock:
//!   a free key, the closure written into its slot (in place up to 16
//!   bytes of captures), the state word armed, the key pushed for the
//!   driver. The driver is woken only if the deadline comes before its
//!   planned wake-up, or it was asleep with nothing to watch.
//! - **cancel**: one CAS on the state word, and the closure dropped by the
//!   canceller. Before the driver took the timer in, the entry usually comes
//!   back out of its lane (the driver never hears of it); after, a bit in a
//!   bitmap tells the driver its queue entry is dead.
//! - **reset**: one CAS on the state word and a push onto the lane.
//! - **deferred, on the driver**: whenever it wakes (for a deadline, never
//!   past the earliest one waiting in a lane; or woken by a caller whose
//!   work is due first, or whose lane is crowded) the driver takes the
//!   lanes in: it queues new timers, and moves reset ones after what is
//!   due, [`MOVES_PER_LOOK`] at a time (see [`Shared::apply_moves`]); a
//!   cancelled timer's queue entry stays (dead) until it comes due or a
//!   bulk purge removes it once dead entries outnumber live ones, so memory
//!   stays within about twice the live set. Callers setting and clearing
//!   timeouts far ahead wake it for nothing.
//! - **fire**: a driver thread takes what is due in batches, one lock
//!   round trip per batch, and claims each task with one CAS just before it
//!   runs. The timer thread takes all that is due; a pool's worker takes a
//!   fair share (what is due divided among the workers not running a
//!   batch), and a worker with nothing left takes half of what another's
//!   batch has not started (see [`Shared::open_batch`]). On an executor,
//!   the timer thread hands all that is due over as one batch with a job
//!   per task, each job running the next task no job has started (see
//!   [`Shared::hand_off`]).
//!
//! A slot is reused once its last holder (handles, the driver, entries in
//! lanes) lets go.
//!
//! # Safety
//!
//! The `unsafe` blocks here reach a body through [`Slab::with_body`]; each
//! says which rule of [`crate::state`] makes the calling thread its one
//! holder at that moment.

#![allow(unsafe_code)]

mod calendar;
mod drive;
mod figures;
mod handles;
mod intake;
mod lifecycle;
mod queue;
mod submit;
#[cfg(test)]
mod test;
mod wait;

pub use wait::HOUSEKEEPING;

/// How many keys ahead a sweep over keys spread through the slab asks for
/// the lines it will touch: enough misses in flight to cover one's latency.
const PREFETCH_AHEAD: usize = 8;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::builder::ShutdownPolicy;
use crate::calendar::jiff::Timestamp;
use crate::clock::{lock, nanos, Clock, Timebase};
use crate::core::{Expired, Key};
use crate::executor::Executor;
use crate::lanes::{Lanes, Moved, Submitted};
use crate::observe::Observer;
use crate::slab::Slab;
use crate::wake::Wake;

use drive::Batch;
pub(crate) use intake::MOVES_PER_LOOK;
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
    /// The scheduler's name in its figures (its thread name).
    pub(crate) name: String,
    /// Whether the driver times every run (see `run_figures`).
    pub(crate) run_figures: bool,
    /// The clock is the system clock: runs are timed, and deadlines
    /// counted, by the CPU's counter.
    pub(crate) system_clock: bool,
}

/// A pool's leader and deputy (the JDK's leader/follower, see
/// [`crate::thread_pool`]); unused by one-thread drivers.
#[derive(Debug, Default)]
pub(crate) struct Roles {
    /// The thread waiting, timed, for the next deadline while others wait
    /// for a signal, and that deadline; cleared to hand the role on.
    pub(crate) leader: Option<(usize, u64)>,
    /// A second thread waiting, timed, for the next wake-up beside the
    /// leader, and when: one of the two runs what is due and the other
    /// leads on, with no signal between them.
    pub(crate) deputy: Option<(usize, u64)>,
}

/// What the driver's threads share, behind its mutex.
pub(crate) struct DriverState {
    pub(crate) queue: Queue,
    /// Due keys waiting for a thread to claim them, in order. Each holds
    /// the driver's reference to its slot.
    pub(crate) ready: VecDeque<Expired>,
    /// Scratch space of polls, batches and the intake, kept to reuse
    /// their allocations.
    due: Vec<Expired>,
    /// An emptied batch kept to reuse its allocation (see
    /// [`Shared::take_batch`]).
    spare: Option<Arc<Batch>>,
    /// The batches other threads may take keys from: a pool's workers',
    /// and those handed to an executor (see [`Shared::take_batch`]).
    open: Vec<Arc<Batch>>,
    submitted: Vec<Submitted>,
    moved: Vec<Moved>,
    /// Marked keys taken from the slab: their canceller dropped the
    /// closure, or `left` it to the driver (see [`crate::slab::Slab::mark`]).
    cancelled: Vec<Key>,
    left: Vec<Key>,
    /// Resets read from the lanes and not applied yet, in order (see
    /// [`Shared::apply_moves`]): those read before their task's submission
    /// stay until it is taken in.
    early_moves: VecDeque<Moved>,
    /// Keys whose closure the driver drops with the lock released; each
    /// holds a reference, let go of afterwards.
    graveyard: Vec<Key>,
    /// An intake since the last sleep found closures left to the driver:
    /// the next sleep is at most a housekeeping period (see
    /// [`Shared::wait`]).
    swept: bool,
    /// Keys whose last holder was the driver: their bodies are emptied with
    /// the lock released, then the keys go back to the pool.
    to_free: Vec<Key>,
    /// Tasks taken in and re-armed, minus claimed, ended by the driver,
    /// and cancelled by their marks (see `Shared::pending_count`).
    balance: i64,
    fired: u64,
    /// Runs finished (the JDK's completed task count).
    pub(crate) completed: u64,
    cancelled_count: u64,
    /// Cancelled tasks whose entry may still be queued.
    dead: u64,
    /// Tasks claimed and not yet finished, keys taken into a batch and not
    /// yet run, and keys handed to an executor.
    pub(crate) busy: usize,
    spin: SpinMeter,
    /// Sleeps since the driver's buffers were last trimmed (see
    /// `DriverState::trim`).
    sleeps_untrimmed: u32,
    /// Driver threads alive.
    pub(crate) threads: usize,
    /// Driver threads waiting on `wakeup`: a signal with none waiting is
    /// a system call for nothing.
    pub(crate) waiting: usize,
    /// When each of the waiting threads wakes by itself (ticks; `NEVER`:
    /// it waits for a signal).
    pub(crate) sleeping: Vec<u64>,
    pub(crate) roles: Roles,
    pub(crate) terminated: bool,
    /// Threads dropping closures with the lock released: until they are
    /// done the scheduler is not idle.
    burying: usize,
    /// A caller woke the driver to look at the lanes and the queue now.
    nudged: bool,
    /// Each calendar task's next deadline by the wall clock (the queue
    /// holds it by the monotonic clock, as of `wall_offset`).
    calendars: HashMap<Key, Timestamp>,
    /// New calendar tasks' first fire times, taken from the lanes.
    new_calendars: Vec<(Key, Timestamp)>,
    /// The wall clock ahead of the monotonic one at the last look (ns).
    wall_offset: i128,
    /// Runs that panicked and went on (`OnPanic::Continue`), or ended.
    panicked: u64,
    /// Grid points a periodic or calendar task passed over (missed runs).
    skipped: u64,
    /// Keys of the periodic (and calendar) tasks taken in, some of them
    /// ended since: what `Metrics::pending_by_kind` looks at.
    periodic_keys: HashSet<Key>,
    /// Its size at which the ended ones are dropped.
    periodic_keys_bound: usize,
}

/// A scheduler's shared state. See the [module docs](self).
pub(crate) struct Shared {
    pub(crate) slab: Slab,
    pub(crate) lanes: Lanes,
    state: Mutex<DriverState>,
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
    /// Whether the driver times every run (see `run_figures`).
    run_figures: bool,
    /// Runs are timed, and deadlines counted, by the CPU's counter (see
    /// [`Shared::run_clock`] and [`Shared::deadline_clock`]).
    system_clock: bool,
    /// How late the driver itself may start a periodic run (the periodic
    /// slack, a wheel's tick): added to a task's missed-run tolerance.
    grace: u64,
    pub(crate) executor: Executor,
    /// When the waiting driver wakes by itself, and the closures left to
    /// it: what tells a caller to wake it.
    pub(crate) wake: Wake,
    /// A cancel of a task the driver holds leaves its closure to the
    /// driver: set while the queue is large (see
    /// [`intake::DROPS_LATER_FROM`]).
    drops_later: AtomicBool,
    /// Tasks waiting, counted only when there is a pending limit.
    pending: AtomicUsize,
    /// Times a driver thread woke from a wait.
    wakeups: AtomicU64,
    shutdown: AtomicBool,
    /// `shutdown_now` was called: nothing runs or repeats any more.
    stopped: AtomicBool,
    /// Lateness and run times, rejections, named tasks; the facades.
    pub(crate) observer: Observer,
}

impl Shared {
    pub(crate) fn new(config: Config) -> Arc<Shared> {
        let timebase = Timebase::new(config.clock.now());
        let grace = nanos(config.periodic_slack).saturating_add(config.queue.granularity());
        let shared = Arc::new(Shared {
            slab: Slab::new(),
            lanes: Lanes::new(),
            state: Mutex::new(DriverState {
                queue: config.queue,
                ready: VecDeque::new(),
                due: Vec::new(),
                spare: None,
                open: Vec::new(),
                submitted: Vec::new(),
                moved: Vec::new(),
                cancelled: Vec::new(),
                left: Vec::new(),
                early_moves: VecDeque::new(),
                graveyard: Vec::new(),
                swept: false,
                to_free: Vec::new(),
                balance: 0,
                fired: 0,
                completed: 0,
                cancelled_count: 0,
                dead: 0,
                busy: 0,
                spin: SpinMeter::default(),
                sleeps_untrimmed: 0,
                threads: 0,
                waiting: 0,
                sleeping: Vec::new(),
                roles: Roles::default(),
                terminated: false,
                burying: 0,
                nudged: false,
                calendars: HashMap::new(),
                new_calendars: Vec::new(),
                wall_offset: 0,
                panicked: 0,
                skipped: 0,
                periodic_keys: HashSet::new(),
                periodic_keys_bound: 1024,
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
            run_figures: config.run_figures,
            system_clock: config.system_clock,
            grace,
            executor: config.executor,
            wake: Wake::new(),
            drops_later: AtomicBool::new(false),
            pending: AtomicUsize::new(0),
            wakeups: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            observer: Observer::new(&config.name),
        });
        shared.executor.bind(&shared.clock);
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        shared.clock.attach(weak);
        shared
    }

    /// The driver's state.
    pub(crate) fn lock(&self) -> MutexGuard<'_, DriverState> {
        lock(&self.state)
    }

    /// Now, in ticks (nanoseconds since the scheduler started).
    pub(crate) fn now(&self) -> u64 {
        self.timebase.ticks(self.clock.now())
    }

    /// The clock's time for timing runs (and the next run of a batch's
    /// start): on the system clock, estimated from the CPU's counter at a
    /// third of the cost of reading it (see `crate::cycles`); never for a
    /// deadline.
    pub(crate) fn run_clock(&self) -> u64 {
        if self.system_clock {
            crate::cycles::now(&self.timebase)
        } else {
            self.now()
        }
    }

    /// The clock's time to count a deadline from: on the system clock,
    /// estimated from the CPU's counter, never earlier than a reading of
    /// the clock and later by 2 µs and a fraction of one (see
    /// `crate::cycles::at_least_now`), for less than a reading costs.
    pub(crate) fn deadline_clock(&self) -> u64 {
        if self.system_clock {
            crate::cycles::at_least_now(&self.timebase)
        } else {
            self.now()
        }
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(SeqCst)
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(SeqCst)
    }

    /// True when a pending limit is set (and so counted).
    fn limited(&self) -> bool {
        self.pending_limit != usize::MAX
    }

    /// A task stopped waiting (claimed, cancelled, abandoned).
    fn unpend(&self) {
        if self.limited() {
            self.pending.fetch_sub(1, SeqCst);
        }
    }

    /// Tasks waiting right now, as the driver counts them: as of its last
    /// intake, which every query does first (a cancel of a task the driver
    /// held counts when the driver takes its mark, see `Slab::mark`).
    fn pending_count(&self, state: &DriverState) -> usize {
        usize::try_from(state.balance - self.slab.remarks() as i64).unwrap_or(0)
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

/// A task claimed to run on the current thread: its body is this thread's
/// until the run ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Claimed {
    pub(crate) key: Key,
    /// The deadline it ran for (fixed-rate runs stay on their grid).
    pub(crate) scheduled: u64,
    /// For a calendar task, the same by the wall clock.
    pub(crate) due: Option<Timestamp>,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}
