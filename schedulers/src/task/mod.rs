//! The task cell: one allocation per scheduled task, shared by the
//! scheduler's queue and the user's handle.
//!
//! The cell holds the task's [`State`] word (the claim / cancel / reset /
//! finish protocol, in `state.rs`, with its ground rules), the deadline of
//! its pending run, how it repeats, a word free for the scheduler, and the
//! user's closure.

mod state;

#[cfg(all(test, loom))]
mod model;

use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, PoisonError, TryLockError};
use std::time::Duration;

use crate::clock::{lock, nanos, Clock as _, SystemClock, NEVER};
use crate::error::{Error, Kind};
pub(crate) use state::CancelOutcome;
use state::{End, Phase, Rearm, State};

/// The user's closure, type-erased.
pub(crate) trait Job: Send {
    /// Runs the closure once. A one-shot job keeps its output for `take_output`.
    fn run(&mut self);
    /// The value a one-shot job produced, boxed (free for `()`).
    fn take_output(&mut self) -> Option<Box<dyn Any + Send>>;
    /// For a periodic job: true if its next run counts from the end of the
    /// last (fixed delay), false if from the last scheduled start (fixed
    /// rate). Kept in the type, so the cell stores a whole 64-bit period.
    fn counts_from_end(&self) -> bool {
        false
    }
    /// Drops the closure: the task will never run again.
    fn release(&mut self);
    /// Drops the closure and any value left uncollected.
    fn clear(&mut self);
}

struct OnceJob<F, T> {
    f: Option<F>,
    output: Option<T>,
}

impl<F: FnOnce() -> T + Send, T: Send + 'static> Job for OnceJob<F, T> {
    fn run(&mut self) {
        if let Some(f) = self.f.take() {
            self.output = Some(f());
        }
    }
    fn take_output(&mut self) -> Option<Box<dyn Any + Send>> {
        self.output
            .take()
            .map(|v| Box::new(v) as Box<dyn Any + Send>)
    }
    fn release(&mut self) {
        self.f = None;
    }
    fn clear(&mut self) {
        self.f = None;
        self.output = None;
    }
}

/// A periodic closure (`None` once released); `FROM_END` is fixed delay
/// (see `Job::counts_from_end`).
struct PeriodicJob<F, const FROM_END: bool>(Option<F>);

impl<F: FnMut() + Send, const FROM_END: bool> Job for PeriodicJob<F, FROM_END> {
    fn run(&mut self) {
        if let Some(f) = &mut self.0 {
            f();
        }
    }
    fn take_output(&mut self) -> Option<Box<dyn Any + Send>> {
        None
    }
    fn counts_from_end(&self) -> bool {
        FROM_END
    }
    fn release(&mut self) {
        self.0 = None;
    }
    fn clear(&mut self) {
        self.0 = None;
    }
}

/// What a job leaves behind: why it failed, if it did, then the job itself.
struct Slot<J: ?Sized> {
    failure: Option<Box<Error>>,
    job: J,
}

/// One scheduled task. See the module docs for the state machine.
pub(crate) struct TaskCell<J: ?Sized + Job = dyn Job> {
    state: State,
    /// Deadline of the pending run, in the scheduler's ticks.
    deadline: AtomicU64,
    /// Nanoseconds between runs (or from the end of one to the next start);
    /// 0 for a one-shot task. A whole `u64`, so a period is never clamped.
    period: u64,
    /// Free for the scheduler: where the live entry sits (heap index, slab key).
    pub(crate) slot: AtomicU64,
    job: Mutex<Slot<J>>,
}

/// A shared reference to a type-erased task cell.
pub(crate) type TaskRef = Arc<TaskCell>;

/// What happened when a claimed task ran.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ran {
    /// It will not run again (completed, panicked or cancelled while running).
    Finished,
    /// A periodic task to re-queue at `deadline` under sequence `seq`.
    Again { deadline: u64, seq: u64 },
}

impl TaskCell {
    fn with_job<J: Job + 'static>(period: u64, job: J) -> TaskRef {
        Arc::new(TaskCell {
            state: State::new(),
            deadline: AtomicU64::new(0),
            period,
            slot: AtomicU64::new(0),
            job: Mutex::new(Slot { failure: None, job }),
        })
    }

    pub(crate) fn is_periodic(&self) -> bool {
        self.period != 0
    }

    /// Deadline of the pending run, in ticks.
    pub(crate) fn deadline(&self) -> u64 {
        self.deadline.load(Relaxed)
    }

    /// True while the cell is waiting in a queue at entry `seq`.
    pub(crate) fn is_live(&self, seq: u64) -> bool {
        self.state.is_live(seq)
    }

    /// Makes a fresh cell pending at `deadline` under `seq`. Only for a cell
    /// no queue has seen yet.
    pub(crate) fn arm(&self, deadline: u64, seq: u64) {
        self.deadline.store(deadline, Relaxed);
        self.state.arm(seq);
    }

    /// Takes the right to run entry `seq`, as a thread starts it. False if
    /// the entry is stale (cancelled, reset, abandoned, or already claimed).
    pub(crate) fn claim(&self, seq: u64) -> bool {
        self.state.claim(seq)
    }

    /// Runs a task this thread claimed for the run scheduled at `scheduled`.
    ///
    /// Catches a panic; `now` gives the end time for fixed-delay tasks and
    /// `next_seq` the sequence for the next entry of a periodic task.
    pub(crate) fn run_claimed(
        &self,
        scheduled: u64,
        now: impl FnOnce() -> u64,
        next_seq: impl FnOnce() -> u64,
    ) -> Ran {
        let (failed, from_end) = {
            let mut slot = lock(&self.job);
            let _guard = InsideTask::enter();
            let failed = match catch_unwind(AssertUnwindSafe(|| slot.job.run())) {
                Ok(()) => false,
                Err(payload) => {
                    slot.failure = Some(Box::new(Error::from_panic(payload.as_ref())));
                    contain(move || drop(payload));
                    true
                }
            };
            (failed, slot.job.counts_from_end())
        };
        if failed {
            self.ended(self.state.finish(End::Panicked));
            self.release();
            return Ran::Finished;
        }
        if !self.is_periodic() {
            self.ended(self.state.finish(End::Done));
            return Ran::Finished;
        }
        // Past the time range the next run is "never", where it stays.
        let from = if from_end { now() } else { scheduled };
        let next = from.checked_add(self.period).unwrap_or(NEVER);
        let seq = next_seq();
        self.deadline.store(next, Relaxed);
        match self.state.rearm(seq) {
            (Rearm::Again, _) => Ran::Again {
                deadline: next,
                seq,
            },
            (Rearm::Cancelled, ended) => {
                self.ended(ended);
                self.release();
                Ran::Finished
            }
        }
    }

    /// Stops every future run. True iff this call did it: the task was
    /// pending, or periodic and running (its next run is stopped).
    pub(crate) fn cancel(&self) -> CancelOutcome {
        let (outcome, ended) = self.state.cancel(self.is_periodic());
        self.ended(ended);
        outcome
    }

    /// Drops the closure of a task that will never run again, so that a
    /// handle kept alive does not keep what the closure captured (as the
    /// JDK's `FutureTask` drops its callable). Call it outside any lock: the
    /// closure's destructors are user code. A panicking one is contained.
    ///
    /// If the job is locked, whoever holds it lets go instead: a run ending
    /// (which releases a task it finds over), another release, or this very
    /// release re-entered by the closure's own destructors (which may drop
    /// the last reference to the scheduler, whose shutdown buries the cell).
    pub(crate) fn release(&self) {
        let mut slot = match self.job.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        contain(|| slot.job.release());
    }

    /// Lets go of a cell a scheduler took out of its queues: if the task is
    /// over without a value to keep (cancelled, abandoned, panicked), its
    /// closure goes now. Call it outside any lock, as [`TaskCell::release`].
    pub(crate) fn bury(&self) {
        if matches!(
            self.state.phase(),
            Phase::Cancelled | Phase::Abandoned | Phase::Panicked
        ) {
            self.release();
        }
    }

    /// [`TaskCell::bury`] for each cell, then lets go of it.
    pub(crate) fn bury_all(cells: impl IntoIterator<Item = TaskRef>) {
        for cell in cells {
            cell.bury();
        }
    }

    /// Moves a pending task to a new entry `seq` at `deadline`. False if the
    /// task is not pending (running, finished, cancelled).
    pub(crate) fn reseq(&self, seq: u64, deadline: u64) -> bool {
        if !self.state.reseq(seq) {
            return false;
        }
        self.deadline.store(deadline, Relaxed);
        true
    }

    /// Marks a pending task as dropped by `shutdown_now`. True iff it was pending.
    pub(crate) fn abandon(&self) -> bool {
        match self.state.abandon() {
            Some(ended) => {
                self.ended(ended);
                true
            }
            None => false,
        }
    }

    /// Wakes the threads waiting for this task, if the transition says so.
    fn ended(&self, ended: state::Ended) {
        if ended.wake {
            let bucket = bucket_of(self);
            let _guard = lock(&bucket.mutex);
            bucket.cond.notify_all();
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        matches!(
            self.state.phase(),
            Phase::Cancelled | Phase::RunningCancelled
        )
    }

    pub(crate) fn is_done(&self) -> bool {
        matches!(
            self.state.phase(),
            Phase::Done | Phase::Panicked | Phase::Cancelled
        )
    }

    pub(crate) fn is_pending(&self) -> bool {
        self.state.phase() == Phase::Scheduled
    }

    /// Blocks until the task has finished for good, or `timeout` (real
    /// time) runs out.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> Result<(), Error> {
        let bucket = bucket_of(self);
        let give_up = timeout.and_then(|t| SystemClock.now().checked_add(t));
        let mut guard = lock(&bucket.mutex);
        loop {
            let phase = self.state.add_waiter();
            if phase.is_final() {
                return self.outcome(phase);
            }
            guard = match (timeout, give_up) {
                (None, _) => bucket.cond.wait(guard).unwrap_or_else(|e| e.into_inner()),
                (Some(_), Some(end)) => {
                    let left = end.saturating_duration_since(SystemClock.now());
                    if left.is_zero() {
                        return Err(Error::new(Kind::Timeout));
                    }
                    bucket
                        .cond
                        .wait_timeout(guard, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                // A timeout too large for `Instant` is no timeout.
                (Some(_), None) => bucket.cond.wait(guard).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    fn outcome(&self, phase: Phase) -> Result<(), Error> {
        match phase {
            Phase::Done => Ok(()),
            Phase::Cancelled => Err(Error::new(Kind::Cancelled)),
            Phase::Abandoned => Err(Error::new(Kind::Abandoned)),
            _ => Err(lock(&self.job)
                .failure
                .as_deref()
                .cloned()
                .unwrap_or_else(|| Error::new(Kind::Panicked("unknown".into())))),
        }
    }

    /// The value of a finished one-shot task (taken once).
    pub(crate) fn take_output(&self) -> Option<Box<dyn Any + Send>> {
        lock(&self.job).job.take_output()
    }
}

impl<J: ?Sized + Job> Drop for TaskCell<J> {
    /// The closure or an uncollected value may panic as it drops, on
    /// whichever thread lets go of the cell last (often a scheduler's):
    /// contained like a task's panic.
    fn drop(&mut self) {
        let slot = self.job.get_mut().unwrap_or_else(PoisonError::into_inner);
        contain(|| slot.job.clear());
    }
}

/// Runs `f`, which drops user values, containing a panic the way a task's
/// panic is contained: the panic hook has reported it, and the thread (a
/// scheduler's, or the caller of `cancel`) carries on. A panic payload whose
/// own destructor panics is leaked rather than dropped.
fn contain(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        if let Err(nested) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(nested);
        }
    }
}

impl fmt::Debug for TaskCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("state", &self.state.phase())
            .field("period", &Duration::from_nanos(self.period))
            .field("deadline", &self.deadline())
            .finish()
    }
}

/// Waiters park in one of a few shared buckets chosen by the cell's address,
/// so a cell pays no memory for a condition variable it rarely needs.
struct Bucket {
    mutex: Mutex<()>,
    cond: Condvar,
}

static BUCKETS: [Bucket; 64] = [const {
    Bucket {
        mutex: Mutex::new(()),
        cond: Condvar::new(),
    }
}; 64];

fn bucket_of(cell: &TaskCell) -> &'static Bucket {
    let addr = cell as *const TaskCell as *const u8 as usize;
    &BUCKETS[(addr >> 6) % BUCKETS.len()]
}

thread_local! {
    static INSIDE_TASK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as running a task, for [`inside_task`].
struct InsideTask(bool);

impl InsideTask {
    fn enter() -> InsideTask {
        InsideTask(INSIDE_TASK.with(|c| c.replace(true)))
    }
}

impl Drop for InsideTask {
    fn drop(&mut self) {
        INSIDE_TASK.with(|c| c.set(self.0));
    }
}

/// True on a thread that is running a scheduled task right now.
pub(crate) fn inside_task() -> bool {
    INSIDE_TASK.with(Cell::get)
}

/// A task ready to be handed to any [`Scheduler`](crate::Scheduler): the
/// closure and how it repeats. Most code uses
/// [`SchedulerExt`](crate::SchedulerExt) instead, which builds the `Task`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedulers::{HeapTimer, Scheduler, Task};
///
/// let timer: Box<dyn Scheduler> = Box::new(HeapTimer::new()?);
/// let task = Task::fixed_rate(Duration::from_millis(10), || {}).unwrap();
/// let handle = timer.submit(Duration::from_millis(5), task).unwrap();
/// assert!(handle.cancel());
/// # Ok::<(), schedulers::Error>(())
/// ```
pub struct Task {
    pub(crate) cell: TaskRef,
}

impl Task {
    /// A one-shot task. Its value can be waited for through
    /// [`ScheduledFuture`](crate::ScheduledFuture).
    pub fn once<F, T>(f: F) -> Task
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Task {
            cell: TaskCell::with_job(
                0,
                OnceJob {
                    f: Some(f),
                    output: None,
                },
            ),
        }
    }

    /// A task that starts every `period`, counted from its first scheduled
    /// start: runs missed because of a slow run happen back to back.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `period` is zero.
    pub fn fixed_rate<F>(period: Duration, f: F) -> Result<Task, Error>
    where
        F: FnMut() + Send + 'static,
    {
        let period = positive(period)?;
        Ok(Task {
            cell: TaskCell::with_job(period, PeriodicJob::<F, false>(Some(f))),
        })
    }

    /// A task that starts `delay` after its previous run ended.
    ///
    /// # Errors
    ///
    /// [`Error::is_zero_period`] if `delay` is zero.
    pub fn fixed_delay<F>(delay: Duration, f: F) -> Result<Task, Error>
    where
        F: FnMut() + Send + 'static,
    {
        let delay = positive(delay)?;
        Ok(Task {
            cell: TaskCell::with_job(delay, PeriodicJob::<F, true>(Some(f))),
        })
    }
}

/// A period in nanoseconds. One too long for a `u64` saturates, which is
/// exact: no deadline fits beyond it anyway, so its next run is "never".
fn positive(d: Duration) -> Result<u64, Error> {
    match nanos(d) {
        0 => Err(Error::new(Kind::ZeroPeriod)),
        n => Ok(n),
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.cell, f)
    }
}
