//! What drivers do with the queue: collect what came due, claim and run
//! it, re-queue periodic tasks, drop what ended.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use std::num::NonZeroU64;
use std::time::Duration;

use super::{Claimed, DriverState, Queue, Shared, PREFETCH_AHEAD};
use crate::body::{Body, Ran};
use crate::calendar::jiff::Timestamp;
use crate::calendar::MissedRuns;
use crate::clock::NEVER;
use crate::core::{Expired, Key};
use crate::rule::Repeat;
use crate::state::{self, Claim};
use crate::task;

/// How a claimed run went, for [`Shared::finish`].
pub(crate) struct Finished {
    pub(crate) key: Key,
    pub(crate) ran: Ran,
    /// What comes next, as the task's rule planned it.
    pub(crate) next: Next,
    /// The closure ran (a missed-run policy may pass over a deadline).
    pub(crate) ran_now: bool,
    /// It panicked (and, if `ran` is `Again`, goes on).
    pub(crate) panicked: bool,
    /// Deadlines passed over without a run.
    pub(crate) skipped: u64,
    /// The body holds nothing after the run (a one-shot's closure went
    /// with it): its last holder has nothing to empty.
    pub(crate) emptied: bool,
}

/// When a periodic task runs next, as its rule plans it when it comes due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Never: a one-shot, or a grid with no point left.
    End,
    /// At this deadline, in ticks.
    At(u64),
    /// This many nanoseconds after the run ends.
    AfterRun(u64),
    /// At this wall-clock time.
    Wall(Timestamp),
}

/// Keys in open batches up to which [`Shared::in_a_batch`] searches
/// them.
const SEARCHED: usize = 1024;

/// A due key in a batch, with its calendar task's fire time.
struct Item {
    e: Expired,
    due: Option<Timestamp>,
    /// The thread that took it has claimed it (or let it go): a reset of
    /// its key no longer waits for this batch (see [`Shared::in_a_batch`]).
    passed: AtomicBool,
}

impl Item {
    fn new(e: Expired, due: Option<Timestamp>) -> Item {
        Item {
            e,
            due,
            passed: AtomicBool::new(false),
        }
    }
}

type Items = Vec<Item>;

/// Due keys taken from `ready` under the lock and then claimed one at a
/// time without it: `items[next..end]` are the ones no thread has taken
/// yet. A pool's other threads may take half of them at a time (see
/// [`Shared::open_batch`]) into a batch of their own over the same items.
/// Each key goes to the one thread whose `take` drew its index.
#[derive(Default)]
pub(crate) struct Batch {
    items: Arc<Items>,
    start: usize,
    end: usize,
    next: AtomicUsize,
    /// Shared by several threads (a pool's workers, an executor's jobs)
    /// and listed in `DriverState::open` until the last of its `runners`
    /// leaves. A periodic task is queued again right after its run, as the
    /// JDK's are, not after the batch (which a slow task behind it may hold
    /// up for as long as it runs).
    open: bool,
    /// The threads or jobs working through an open batch.
    runners: AtomicUsize,
}

impl Batch {
    /// The next key no thread has taken yet.
    fn take(&self) -> Option<&Item> {
        // The items were written before the batch was shared (under the
        // driver's lock): only the index needs to be unique. Only an open
        // batch is shared: the timer thread's saves the locked add.
        let i = match self.open {
            true => self.next.fetch_add(1, Relaxed),
            false => {
                let i = self.next.load(Relaxed);
                self.next.store(i + 1, Relaxed);
                i
            }
        };
        self.items[..self.end].get(i)
    }

    /// One of its runners is through with it; true for the last.
    fn leave(&self) -> bool {
        self.runners.fetch_sub(1, AcqRel) == 1
    }

    /// Keys no thread has taken yet.
    fn left(&self) -> usize {
        self.end.saturating_sub(self.next.load(Relaxed))
    }

    /// Takes the first half of the keys no thread has taken yet (at least
    /// one), as a batch of their own: the thread that runs this one goes on
    /// after them.
    fn split(&self) -> Option<Batch> {
        let half = self.left().div_ceil(2).max(1);
        let start = self.next.fetch_add(half, Relaxed);
        (start < self.end).then(|| Batch {
            items: self.items.clone(),
            start,
            end: self.end.min(start + half),
            next: AtomicUsize::new(start),
            open: true,
            runners: AtomicUsize::new(1),
        })
    }
}

impl Shared {
    /// Moves every key due at `now` from the queue to `ready`. Returns true
    /// if any is ready.
    pub(crate) fn collect_due(&self, driver: &mut DriverState, now: u64) -> bool {
        self.check_wall(driver);
        if driver.ready.is_empty() {
            // Straight into `ready`'s own buffer: a burst is not copied, nor
            // held twice.
            let mut ready = Vec::from(std::mem::take(&mut driver.ready));
            driver.queue.poll(now, &mut ready);
            driver.ready = VecDeque::from(ready);
        } else {
            let mut due = std::mem::take(&mut driver.due);
            driver.queue.poll(now, &mut due);
            driver.ready.extend(due.drain(..));
            driver.due = due;
        }
        !driver.ready.is_empty()
    }

    /// When a driver must wake next: at the queue's next deadline, except
    /// that a periodic run may start up to `periodic_slack` late, so that
    /// runs due close together share one wake-up; a one-shot due meanwhile
    /// still wakes it on time (a heap tells its keys apart; the wheels keep
    /// per-bucket bounds, so they wake at the next deadline).
    ///
    /// With calendar tasks waiting, it wakes at least every
    /// [`WALL_CHECK`](super::calendar::WALL_CHECK) to see if the wall clock
    /// moved.
    pub(crate) fn next_wake(&self, driver: &DriverState) -> Option<u64> {
        let next = match &driver.queue {
            Queue::Heap(heap) if self.periodic_slack > 0 => heap.next_wake(|key| self.slack(key)),
            queue => queue.next_deadline(),
        };
        match (next, self.wall_check_at(driver)) {
            (Some(next), Some(check)) => Some(next.min(check)),
            (next, check) => next.or(check),
        }
    }

    /// How late the task under `key` may start: `periodic_slack` for a
    /// periodic task, nothing for a one-shot.
    fn slack(&self, key: Key) -> u64 {
        if state::is_periodic(self.slab.word(key).load(Acquire)) {
            self.periodic_slack
        } else {
            0
        }
    }

    /// Runs the body of a task this thread claimed, if its rule says so
    /// (a missed-run policy may pass over a late deadline), and plans its
    /// next run. A panic's report takes the place of the closure (dropped
    /// here, with no lock held), unless the task goes on
    /// ([`OnPanic::Continue`](crate::calendar::OnPanic::Continue)).
    ///
    /// Also returns when the run ended, if the scheduler times its runs
    /// (`run_figures`). The run starts at `start` (ticks: the end of the
    /// run before it in a batch, read by the caller), or, if `None`, when
    /// this reads the time just before it ([`Shared::run_clock`]). Its
    /// lateness and run time go to the scheduler's figures.
    pub(crate) fn run_claimed(
        &self,
        claimed: Claimed,
        start: Option<u64>,
    ) -> (Finished, Option<u64>) {
        // SAFETY: this thread claimed the task (RUNNING): its body is ours
        // until the run is finished.
        unsafe {
            self.slab.with_body(claimed.key, |body| {
                let (run_now, next, skipped) = self.plan(body, &claimed, start);
                let mut finished = Finished {
                    key: claimed.key,
                    ran: Ran::Again,
                    next,
                    ran_now: run_now,
                    panicked: false,
                    skipped,
                    emptied: false,
                };
                // Only a named task pays for its name (a reference count).
                let name = body.name().cloned();
                self.observer.skipped(name.as_ref(), skipped);
                let start = start.or_else(|| self.run_figures.then(|| self.run_clock()));
                if !run_now {
                    return (finished, start);
                }
                let lateness = start.map(|start| start.saturating_sub(claimed.scheduled));
                let run = self.observer.start_run(name.as_ref(), lateness);
                finished.ran = match task::run(body) {
                    Ran::Panicked(error) if body.rule().is_some_and(|r| r.on_panic.repeats()) => {
                        run.panicked(&error.for_task(name.as_ref()));
                        finished.panicked = true;
                        Ran::Again
                    }
                    Ran::Panicked(mut error) => {
                        *error = error.for_task(name.as_ref());
                        run.panicked(&error);
                        finished.panicked = true;
                        task::clear_contained(body);
                        *body = Body::failure((*error).clone());
                        Ran::Panicked(error)
                    }
                    ran => ran,
                };
                finished.emptied = body.is_empty();
                let end = start.map(|start| (start, self.run_clock()));
                run.end(
                    end.map(|(start, end)| end.saturating_sub(start)),
                    finished.panicked,
                );
                (finished, end.map(|(_, end)| end))
            })
        }
    }

    /// Whether the claimed task runs now, when it runs next and how many
    /// deadlines it passes over, as its rule says.
    #[inline]
    fn plan(&self, body: &Body, claimed: &Claimed, now: Option<u64>) -> (bool, Next, u64) {
        let Some(rule) = body.rule() else {
            return (true, Next::End, 0);
        };
        let tolerance = Duration::from_nanos(rule.tolerance.saturating_add(self.grace));
        match (rule.repeat, rule.calendar.as_deref()) {
            (Repeat::FixedDelay(delay), _) => (true, Next::AfterRun(delay), 0),
            (Repeat::FixedRate(period), _) => {
                let period = NonZeroU64::new(period).unwrap_or(NonZeroU64::MIN);
                let plan = rule.missed.plan_fixed_rate(
                    period,
                    claimed.scheduled,
                    now.unwrap_or_else(|| self.now()),
                    tolerance,
                );
                // Past the end of time it waits forever, as before.
                let next = plan.next.filter(|&t| t < NEVER).unwrap_or(NEVER);
                (plan.run_now.is_some(), Next::At(next), plan.skipped)
            }
            (Repeat::Calendar, Some(calendar)) => {
                let now = self.wall_now();
                let due = claimed.due.unwrap_or(now);
                // `Task::missed_runs` refuses `Delay` on a calendar.
                let missed = match rule.missed {
                    MissedRuns::Delay => MissedRuns::CatchUp,
                    missed => missed,
                };
                match missed.plan_calendar(calendar, due, now, tolerance) {
                    Ok(plan) => (
                        plan.run_now.is_some(),
                        plan.next.map_or(Next::End, Next::Wall),
                        plan.skipped,
                    ),
                    Err(_) => (true, Next::End, 0),
                }
            }
            (Repeat::Once | Repeat::Calendar, _) => (true, Next::End, 0),
        }
    }

    /// Takes up to `max` ready keys that were not queued again into a
    /// batch, with the lock held, counted as claimed: no task is seen done
    /// while still counted as waiting; those that turn out moved or
    /// cancelled are counted back by [`Shared::run_taken`]. An `open` batch
    /// is listed for other threads to take keys from too: a pool's (see
    /// [`Shared::open_batch`]) or an executor's jobs (see
    /// [`Shared::hand_off`]). `None` when nothing is ready.
    pub(crate) fn take_batch(
        &self,
        driver: &mut DriverState,
        max: usize,
        open: bool,
    ) -> Option<Arc<Batch>> {
        let mut batch = driver.spare.take().unwrap_or_default();
        let b = Arc::get_mut(&mut batch).expect("a spare batch is unshared");
        b.open = open;
        *b.runners.get_mut() = usize::from(open);
        let items = Arc::get_mut(&mut b.items).expect("a spare batch's items are unshared");
        // One allocation for a burst, not a doubling (and a copy) per size.
        items.reserve(max.min(driver.ready.len()));
        while items.len() < max {
            let Some(e) = driver.ready.pop_front() else {
                break;
            };
            if driver.queue.contains(e.key) {
                self.release_locked(driver, e.key);
            } else {
                items.push(Item::new(e, self.calendar_due(driver, e.key)));
            }
        }
        let n = items.len();
        b.end = n;
        if n == 0 {
            driver.spare = Some(batch);
            return None;
        }
        driver.busy += n;
        driver.balance -= n as i64;
        driver.fired += n as u64;
        if open {
            driver.open.push(batch.clone());
        }
        Some(batch)
    }

    /// Runs keys of `batch` until none is left, with the lock released:
    /// claims each in turn just before it starts (one CAS, so a task waiting
    /// behind a slow one can still be cancelled, reset or abandoned) and
    /// finishes the one-shots (an open batch's periodic tasks too, locked,
    /// when keys are left behind them); then, locked again, finishes the rest
    /// (periodic tasks are queued again) and counts. Returns the lock, and
    /// whether a task queued again is due before the planned wake-up.
    pub(crate) fn run_taken<'a>(
        &'a self,
        batch: Arc<Batch>,
    ) -> (MutexGuard<'a, DriverState>, bool) {
        let (mut taken, mut moved, mut dead, mut finished_here) = (0usize, 0u64, 0u64, 0usize);
        let mut to_finish = Vec::new();
        let mut freed = Vec::new();
        // One reading of the time per run: a run starts when the one
        // before it on this thread ended (the first, when it reads it).
        let mut chained = None;
        while let Some(item) = batch.take() {
            let (e, due) = (item.e, item.due);
            taken += 1;
            let word = self.slab.word(e.key);
            match state::claim(word) {
                Claim::Claimed => {
                    // A reset now meets it running, as with no batch.
                    item.passed.store(true, Release);
                    self.unpend();
                    let claimed = Claimed {
                        key: e.key,
                        scheduled: e.deadline,
                        due,
                    };
                    let (finished, end) = self.run_claimed(claimed, chained);
                    chained = end;
                    match finished.ran {
                        Ran::Done if !state::is_periodic(word.load(Acquire)) => {
                            let (prev, last) = state::finish(word, state::DONE);
                            self.wake_waiters(e.key, prev);
                            if last {
                                if !finished.emptied {
                                    self.empty_body(e.key);
                                }
                                freed.push(e.key);
                            }
                        }
                        _ if batch.open && batch.left() > 0 => {
                            let mut driver = self.lock();
                            finished_here += 1;
                            if self.finish(&mut driver, finished) {
                                self.wakeup.notify_one();
                            }
                        }
                        _ => to_finish.push(finished),
                    }
                }
                Claim::Moved => {
                    // A reset on its way holds a reference: not the last.
                    moved += 1;
                    state::release(word);
                    // Let go, and never taken again: the reset may queue
                    // it again.
                    item.passed.store(true, Release);
                }
                Claim::Gone => {
                    dead += 1;
                    if state::release(word) {
                        self.empty_body(e.key);
                        freed.push(e.key);
                    }
                }
            }
        }
        let mut driver = self.lock();
        let fired = taken as u64 - moved - dead;
        // Moved ones still wait; cancelled ones were counted at the cancel.
        driver.balance += (moved + dead) as i64;
        driver.fired -= moved + dead;
        driver.dead = driver.dead.saturating_sub(dead);
        // `finish` counts the others.
        let finishing = to_finish.len() + finished_here;
        driver.completed += fired - finishing as u64;
        driver.busy -= taken - finishing;
        let mut wake = false;
        for finished in to_finish {
            wake |= self.finish(&mut driver, finished);
        }
        if !freed.is_empty() {
            self.slab.give_keys(freed);
        }
        if batch.open {
            wake |= self.leave_batch(&mut driver, &batch, batch.leave(), moved > 0);
        }
        self.recycle(&mut driver, batch);
        (driver, wake)
    }

    /// After a runner left an open batch (see [`Batch::leave`]), under the
    /// lock: the `last` one closes it. Resets that waited for its claims
    /// (`let_go`: this runner let go of a key a reset moved) may go ahead
    /// now, so a thread that applies them must look: an executor's job will
    /// not, and the timer thread may be asleep. Returns true if it must be
    /// woken.
    fn leave_batch(
        &self,
        driver: &mut DriverState,
        batch: &Arc<Batch>,
        last: bool,
        let_go: bool,
    ) -> bool {
        if last {
            driver.open.retain(|b| !Arc::ptr_eq(b, batch));
        }
        if (let_go || last) && !driver.early_moves.is_empty() {
            driver.nudged = true;
            return true;
        }
        false
    }

    /// Half the keys a batch another thread of a pool opened has not taken
    /// yet (it may be stuck behind a slow task, or off its core): this
    /// thread takes them from there, as it would have taken them from
    /// `ready`. Half, so that two threads seldom take keys from one batch.
    pub(crate) fn open_batch(&self, driver: &mut DriverState) -> Option<Arc<Batch>> {
        let half = driver.open.iter().find_map(|b| b.split())?;
        let batch = Arc::new(half);
        driver.open.push(batch.clone());
        Some(batch)
    }

    /// Whether a shared batch may still hold `key` unclaimed (taken from
    /// `ready`, and not yet claimed or let go). Its claim, with no lock,
    /// cannot see that the key was queued again, so a reset must wait until
    /// the claim is through (see [`Shared::apply_moves`]). Past
    /// [`SEARCHED`] keys in batches it answers yes without looking: those
    /// batches end soon, and a search per reset would not.
    pub(crate) fn in_a_batch(&self, driver: &DriverState, key: Key) -> bool {
        let mut batches = driver.open.iter().map(|b| &b.items[b.start..b.end]);
        if driver.open.iter().map(|b| b.end - b.start).sum::<usize>() > SEARCHED {
            return true;
        }
        batches.any(|items| {
            items
                .iter()
                .any(|item| item.e.key == key && !item.passed.load(Acquire))
        })
    }

    /// Keeps a batch nobody else holds any more, emptied, for the next one.
    fn recycle(&self, driver: &mut DriverState, mut batch: Arc<Batch>) {
        let Some(b) = Arc::get_mut(&mut batch) else {
            return;
        };
        if let Some(items) = Arc::get_mut(&mut b.items) {
            items.clear();
            (b.start, b.end) = (0, 0);
            *b.next.get_mut() = 0;
            *b.runners.get_mut() = 0;
            driver.spare = Some(batch);
        }
    }

    /// A pool's threads not working through a batch (blocked in a task,
    /// perhaps): a fair share of what is ready is its part for each.
    pub(crate) fn free_threads(&self, driver: &DriverState) -> usize {
        let running: usize = driver.open.iter().map(|b| b.runners.load(Relaxed)).sum();
        driver.threads.saturating_sub(running).max(1)
    }

    /// Tasks counted busy that no thread has taken yet: keys left in open
    /// batches.
    pub(crate) fn untaken(&self, driver: &DriverState) -> usize {
        driver.open.iter().map(|b| b.left()).sum()
    }

    /// Empties the body of a key nobody holds any more (a value nobody
    /// took), before the key goes back to the pool.
    fn empty_body(&self, key: Key) {
        // SAFETY: the last holder let go: no other thread reaches the body.
        unsafe { self.slab.with_body(key, task::clear_contained) };
    }

    /// Hands every ready key to the executor as one batch, with the lock
    /// released (an executor may run a task at once, on this thread): one
    /// job per key, each taking the next key no job has taken yet until
    /// none is left, so a task behind a slow one goes to the next job that
    /// starts, and jobs that run one after another take one lock round trip
    /// between them, not two per task. A key is claimed when its run
    /// starts, so until then it can still be cancelled, reset or abandoned.
    /// Returns the lock.
    pub(crate) fn hand_off<'a>(
        self: &'a Arc<Self>,
        mut driver: MutexGuard<'a, DriverState>,
    ) -> MutexGuard<'a, DriverState> {
        let Some(batch) = self.take_batch(&mut driver, usize::MAX, true) else {
            return driver;
        };
        let jobs = batch.end;
        batch.runners.store(jobs, Relaxed);
        // This thread too, until it has the lock again: the jobs may be
        // done with every key by then, and resets it took in wait for it
        // (a virtual clock must not see the scheduler idle).
        driver.busy += 1;
        drop(driver);
        for _ in 0..jobs {
            let (shared, batch) = (self.clone(), batch.clone());
            self.executor.execute(move || shared.run_handed_off(batch));
        }
        drop(batch);
        let mut driver = self.lock();
        driver.busy -= 1;
        driver
    }

    /// One job of a batch handed to the executor (see [`Shared::hand_off`]).
    /// A job that finds every task taken by the jobs before it has nothing
    /// to count: only the last one out takes the lock, to close the batch.
    fn run_handed_off(&self, batch: Arc<Batch>) {
        let (driver, wake) = if batch.left() > 0 {
            self.run_taken(batch)
        } else if batch.leave() {
            let mut driver = self.lock();
            let wake = self.leave_batch(&mut driver, &batch, true, false);
            self.recycle(&mut driver, batch);
            (driver, wake)
        } else {
            return;
        };
        // After shutdown the driver waits for the last run to end.
        let wake = wake || (self.is_shutdown() && driver.busy == 0);
        drop(self.bury(driver));
        if wake {
            self.wakeup.notify_all();
        }
    }

    /// Records how a claimed task's run ended: re-queues a periodic task,
    /// ends the others and wakes their waiters. Returns true if the
    /// re-queued task is due before the driver's planned wake-up.
    pub(crate) fn finish(&self, driver: &mut DriverState, finished: Finished) -> bool {
        let Finished {
            key,
            ran,
            next,
            ran_now,
            panicked,
            skipped,
            emptied: _,
        } = finished;
        driver.busy -= 1;
        driver.completed += 1;
        if !ran_now {
            driver.fired -= 1;
        }
        driver.panicked += u64::from(panicked);
        driver.skipped += skipped;
        let word = self.slab.word(key);
        let periodic = state::is_periodic(word.load(Acquire));
        if state::is_calendar(word.load(Acquire)) {
            driver.calendars.remove(&key);
        }
        let end = match (ran, next) {
            (Ran::Done, _) if !periodic => state::DONE,
            // A periodic task stopped itself, or its grid has no point
            // left: its closure goes.
            (Ran::Done, _) | (Ran::Again, Next::End) => {
                self.clear_later(driver, key);
                state::DONE
            }
            // `run_claimed` left the report in the body.
            (Ran::Panicked(_), _) => state::PANICKED,
            (Ran::Again, next) => {
                let dropped =
                    self.is_stopped() || (self.is_shutdown() && !self.policy.keeps_periodic());
                if dropped {
                    self.clear_later(driver, key);
                    let (prev, last) = state::finish(word, state::CANCELLED);
                    if state::of(prev) == state::RUNNING {
                        driver.cancelled_count += 1;
                    }
                    self.ended(driver, key, prev, last);
                    return false;
                }
                let deadline = match next {
                    Next::At(deadline) => deadline,
                    Next::AfterRun(delay) => self.now().saturating_add(delay),
                    Next::Wall(due) => {
                        let deadline = self.ticks_of(due, self.now(), self.wall_now());
                        self.set_calendar_due(driver, key, due);
                        deadline
                    }
                    Next::End => unreachable!("matched above"),
                };
                let (again, prev) = state::rearm(word);
                if !again {
                    // Cancelled while it ran.
                    driver.calendars.remove(&key);
                    driver.cancelled_count += 1;
                    self.clear_later(driver, key);
                    let (_, last) = state::finish(word, state::CANCELLED);
                    self.ended(driver, key, prev, last);
                    return false;
                }
                driver.balance += 1;
                if self.limited() {
                    self.pending
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                driver.queue.insert(key, deadline);
                return self.wake.due_before(deadline);
            }
        };
        let (prev, last) = state::finish(word, end);
        self.ended(driver, key, prev, last);
        false
    }

    /// A periodic task ends while this thread holds its body: the closure
    /// is dropped with the lock released, by [`Shared::bury`]. The
    /// graveyard entry's reference is the driver's, added here.
    fn clear_later(&self, driver: &mut DriverState, key: Key) {
        state::acquire(self.slab.word(key));
        driver.graveyard.push(key);
    }

    /// A task reached its end: wake its waiters; a last reference frees
    /// the key (with the lock released).
    fn ended(&self, driver: &mut DriverState, key: Key, prev: u32, last: bool) {
        self.wake_waiters(key, prev);
        if last {
            driver.to_free.push(key);
        }
    }

    /// Drops the closures in the graveyard and empties the bodies of the
    /// keys to free, with the lock released (their destructors may use
    /// this scheduler), then returns the lock. Until they are dropped the
    /// scheduler is not idle, so a `ManualClock`'s `advance` returns only
    /// after the closures of the tasks that ended. With nothing to drop it
    /// only hands the lock back.
    pub(crate) fn bury<'a>(
        &'a self,
        mut driver: MutexGuard<'a, DriverState>,
    ) -> MutexGuard<'a, DriverState> {
        if !driver.has_dead() {
            return driver;
        }
        let mut graves = std::mem::take(&mut driver.graveyard);
        let mut to_free = std::mem::take(&mut driver.to_free);
        driver.burying += 1;
        drop(driver);
        for (i, &key) in graves.iter().enumerate() {
            // Cancelled keys come by the thousand, spread over the slab.
            if let Some(&ahead) = graves.get(i + PREFETCH_AHEAD) {
                self.slab.prefetch(ahead);
            }
            // SAFETY: a graveyard key's body is the driver's: the task was
            // cancelled or ended and no one else may touch it (see
            // `crate::state`).
            unsafe { self.slab.with_body(key, task::clear_contained) };
            if state::release(self.slab.word(key)) {
                to_free.push(key);
            }
        }
        for &key in &to_free {
            self.empty_body(key);
        }
        // In key order: a lane takes its next keys from the pool's end in
        // batches, and neighbouring keys share their state words' and
        // bodies' cache lines (freed in queue order, a batch would spread
        // one thread's timers over the whole slab, on lines other threads'
        // timers share).
        to_free.sort_unstable();
        self.slab.give_keys(to_free.drain(..));
        graves.clear();
        let mut driver = self.lock();
        driver.burying -= 1;
        if driver.graveyard.is_empty() {
            driver.graveyard = graves;
        }
        if driver.to_free.is_empty() {
            driver.to_free = to_free;
        }
        driver
    }

    /// When the driver next has work, once every dead entry is gone.
    pub(crate) fn next_expiration(&self) -> Option<Instant> {
        let mut driver = self.lock();
        self.intake_for_query(&mut driver);
        if driver.dead > 0 {
            self.purge(&mut driver);
        }
        self.timebase.instant(driver.queue.next_deadline()?)
    }

    /// Before a driver sleeps: with no task waiting, what is left in the
    /// queue is dead, so drop it rather than wake up for it.
    pub(crate) fn drop_dead_if_idle(&self, driver: &mut DriverState) {
        if !driver.queue.is_empty() && self.pending_count(driver) == 0 && driver.dead > 0 {
            self.purge(driver);
        }
    }

    /// Whether a driver thread may exit: shut down, and no task waits or
    /// runs. Dead entries left in the queue are dropped.
    pub(crate) fn may_exit(&self, driver: &mut DriverState) -> bool {
        if !self.is_shutdown()
            || driver.busy > 0
            || !driver.ready.is_empty()
            || self.callers_left_work()
            || !driver.early_moves.is_empty()
        {
            return false;
        }
        if self.is_stopped() || self.pending_count(driver) == 0 {
            if !driver.queue.is_empty() {
                self.purge(driver);
            }
            return driver.queue.is_empty();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// However a pool's threads take keys and split batches (the owner
    /// taking one at a time, the others halves of what is left, and halves
    /// of those), each key goes to exactly one thread.
    #[test]
    fn every_key_of_a_batch_goes_to_one_thread() {
        const N: usize = 50_000;
        let mut stolen = 0;
        for _ in 0..20 {
            let items: Items = (0..N as Key)
                .map(|key| Item::new(Expired { key, deadline: 0 }, None))
                .collect();
            let batch = Arc::new(Batch {
                items: Arc::new(items),
                end: N,
                open: true,
                ..Batch::default()
            });
            let open = Mutex::new(vec![batch.clone()]);
            let taken: Vec<Vec<Key>> = std::thread::scope(|s| {
                let threads: Vec<_> = (0..4)
                    .map(|t| {
                        let (open, mut own) = (&open, (t == 0).then(|| batch.clone()));
                        s.spawn(move || {
                            let mut mine = Vec::new();
                            loop {
                                let b = match own.take() {
                                    Some(b) => b,
                                    None => {
                                        let mut open = open.lock().unwrap();
                                        let Some(half) = open.iter().find_map(|b| b.split()) else {
                                            break mine;
                                        };
                                        open.push(Arc::new(half));
                                        open.last().unwrap().clone()
                                    }
                                };
                                while let Some(item) = b.take() {
                                    mine.push(item.e.key);
                                    if mine.len() % 64 == 0 {
                                        std::thread::yield_now();
                                    }
                                }
                            }
                        })
                    })
                    .collect();
                threads.into_iter().map(|h| h.join().unwrap()).collect()
            });
            stolen += usize::from(taken[0].len() < N);
            let mut all = taken.concat();
            all.sort_unstable();
            assert_eq!(all, (0..N as Key).collect::<Vec<_>>());
        }
        assert!(stolen > 0, "other threads never took a key");
    }
}
