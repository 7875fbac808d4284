//! Where expired tasks run: inline on the timer thread, or on a worker pool.
//!
//! A scheduler hands its due tasks over with [`Executor::dispatch`]. On a
//! pool they wait in the scheduler's own [`Handoff`] queue, in order, and
//! the worker that starts one claims it then: until that moment the task is
//! pending, so a cancel, a reset or `shutdown_now` still reaches it even
//! when every worker is busy.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::AcqRel, Ordering::Acquire};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::clock::{lock, Clock};
use crate::error::{Error, Setting};
use crate::scheduler::{spawn, Base, Core};
use crate::task::{Ran, TaskRef};

type Work = Box<dyn FnOnce() + Send>;

/// Where a scheduler runs the tasks that come due.
///
/// - [`Executor::inline`]: on the scheduler's own thread, as `java.util.Timer`
///   and Netty's wheel do. Cheapest, but a slow task delays every later one.
/// - [`Executor::pool`]: on a fixed pool of worker threads, as Kafka's
///   `SystemTimer` does, so a slow task does not hold up the timer.
///
/// An executor can be cloned and shared by several schedulers; the pool's
/// threads exit when the last clone is dropped and its queue is drained.
///
/// # Examples
///
/// ```
/// use schedulers::Executor;
///
/// let pool = Executor::pool(4)?;
/// assert!(!pool.is_inline());
/// assert!(Executor::inline().is_inline());
/// assert!(Executor::pool(0).unwrap_err().is_invalid_pool_size());
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Clone)]
pub struct Executor {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Inline,
    Pool(Arc<Pool>),
}

struct Pool {
    sender: Sender<Work>,
    shared: Arc<PoolShared>,
    threads: usize,
}

struct PoolShared {
    /// Jobs queued or running.
    active: AtomicUsize,
    /// Clocks of the schedulers using the pool, told when it goes idle.
    clocks: Mutex<Vec<Arc<dyn Clock>>>,
}

impl Executor {
    /// Runs each task on the thread that found it due.
    pub fn inline() -> Executor {
        Executor { kind: Kind::Inline }
    }

    /// Runs tasks on `threads` worker threads, named `schedulers-worker-N`.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_pool_size`] for zero threads;
    /// [`Error::is_thread_spawn`] if the operating system refuses to start
    /// one (those already started then exit).
    pub fn pool(threads: usize) -> Result<Executor, Error> {
        if threads == 0 {
            return Err(Error::invalid(
                Setting::PoolSize,
                "0 threads would never run a task",
            ));
        }
        let (sender, receiver) = unbounded::<Work>();
        let shared = Arc::new(PoolShared {
            active: AtomicUsize::new(0),
            clocks: Mutex::new(Vec::new()),
        });
        for i in 0..threads {
            let receiver: Receiver<Work> = receiver.clone();
            let shared = shared.clone();
            // On failure `sender` drops, so the workers started exit.
            spawn(format!("schedulers-worker-{i}"), move || {
                for work in receiver.iter() {
                    work();
                    shared.done();
                }
            })?;
        }
        Ok(Executor {
            kind: Kind::Pool(Arc::new(Pool {
                sender,
                shared,
                threads,
            })),
        })
    }

    /// True for [`Executor::inline`].
    pub fn is_inline(&self) -> bool {
        matches!(self.kind, Kind::Inline)
    }

    /// Lets a virtual clock know when this pool goes idle.
    pub(crate) fn bind(&self, clock: &Arc<dyn Clock>) {
        if let Kind::Pool(pool) = &self.kind {
            lock(&pool.shared.clocks).push(clock.clone());
        }
    }

    /// Starts `due` tasks in order: one after the other on this thread
    /// (inline), or through the scheduler's [`Handoff`] queue on the pool,
    /// where each is claimed by the worker that starts it.
    pub(crate) fn dispatch<S: Dispatch>(&self, scheduler: &Arc<S>, due: impl Iterator<Item = Due>) {
        let Kind::Pool(_) = &self.kind else {
            due.for_each(|d| start(scheduler.as_ref(), d));
            return;
        };
        let handoff = scheduler.handoff();
        let handed = {
            let mut waiting = lock(&handoff.waiting);
            let before = waiting.len();
            waiting.extend(due);
            waiting.len() - before
        };
        handoff.in_flight.fetch_add(handed, AcqRel);
        for _ in 0..handed {
            let scheduler = scheduler.clone();
            self.execute(move || {
                let handoff = scheduler.handoff();
                let next = lock(&handoff.waiting).pop_front();
                if let Some(due) = next {
                    start(scheduler.as_ref(), due);
                }
                if handoff.in_flight.fetch_sub(1, AcqRel) == 1 {
                    scheduler.drained();
                }
            });
        }
    }

    /// Runs `work` here or hands it to the pool.
    fn execute(&self, work: impl FnOnce() + Send + 'static) {
        match &self.kind {
            Kind::Inline => work(),
            Kind::Pool(pool) => {
                pool.shared.active.fetch_add(1, AcqRel);
                if let Err(returned) = pool.sender.send(Box::new(work)) {
                    // Unreachable while `pool` holds a receiver-backed
                    // channel; run it here rather than lose it.
                    pool.shared.done();
                    (returned.into_inner())();
                }
            }
        }
    }

    /// True when no handed-off task is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        match &self.kind {
            Kind::Inline => true,
            Kind::Pool(pool) => pool.shared.active.load(Acquire) == 0,
        }
    }
}

/// A due task on its way to a thread: the queue entry a worker will claim.
#[derive(Debug)]
pub(crate) struct Due {
    pub(crate) cell: TaskRef,
    pub(crate) seq: u64,
}

/// What [`Executor::dispatch`] needs from a scheduler.
pub(crate) trait Dispatch: Core {
    /// The scheduler's queue of tasks handed to a pool.
    fn handoff(&self) -> &Handoff;

    /// Takes back a periodic task whose run just ended, to run next at
    /// `deadline` under entry `seq` (or to stop, by the shutdown policy).
    /// Already counted as pending again.
    fn again(&self, cell: TaskRef, deadline: u64, seq: u64);

    /// Told when the last task handed to the pool is finished with.
    fn drained(&self);
}

/// Claims and runs one due task, then gives a periodic one back to its
/// scheduler. A task cancelled, moved or abandoned while it waited fails the
/// claim and is skipped.
fn start<S: Dispatch + ?Sized>(scheduler: &S, due: Due) {
    let Due { cell, seq } = due;
    if !cell.claim(seq) {
        return;
    }
    let base = scheduler.base();
    base.fire();
    // The run's own deadline, not its tick: fixed-rate runs stay on their
    // exact grid.
    let scheduled = cell.deadline();
    if let Ran::Again { deadline, seq } =
        cell.run_claimed(scheduled, || base.now(), || base.next_seq())
    {
        base.repend();
        scheduler.again(cell, deadline, seq);
    }
}

/// A scheduler's due tasks handed to a pool and not yet started, in order,
/// plus a count of hand-offs not yet finished with.
#[derive(Debug, Default)]
pub(crate) struct Handoff {
    waiting: Mutex<VecDeque<Due>>,
    in_flight: AtomicUsize,
}

impl Handoff {
    /// Hand-offs whose worker has not finished with them yet.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Acquire)
    }

    /// Applies `shutdown`'s policy to the tasks still waiting: drops (and
    /// cancels) those the policy drops, returning them to be freed outside
    /// any lock; a due one-shot stays and runs.
    pub(crate) fn shutdown(&self, base: &Base) -> Vec<TaskRef> {
        let mut dropped = Vec::new();
        lock(&self.waiting).retain(|d| {
            if !d.cell.is_live(d.seq) || !base.drops_at_shutdown(&d.cell) {
                return true;
            }
            let outcome = d.cell.cancel();
            if outcome.stopped() {
                base.count_cancel(outcome);
            }
            dropped.push(d.cell.clone());
            false
        });
        dropped
    }

    /// Takes every task still waiting (`shutdown_now`), in order.
    pub(crate) fn take_waiting(&self) -> Vec<Due> {
        lock(&self.waiting).drain(..).collect()
    }
}

impl PoolShared {
    fn done(&self) {
        if self.active.fetch_sub(1, AcqRel) == 1 {
            for clock in lock(&self.clocks).iter() {
                clock.on_idle();
            }
        }
    }
}

impl Default for Executor {
    fn default() -> Self {
        Executor::inline()
    }
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Inline => f.write_str("Executor::Inline"),
            Kind::Pool(pool) => f
                .debug_struct("Executor::Pool")
                .field("threads", &pool.threads)
                .field("active", &pool.shared.active.load(Acquire))
                .finish(),
        }
    }
}
