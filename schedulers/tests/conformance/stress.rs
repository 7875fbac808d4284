//! Many threads against one scheduler, checked against a model of what must
//! have happened: nothing lost, nothing run twice, nothing early, nothing
//! run after a successful cancel. Virtual time moves on the main thread
//! while the others schedule, cancel and reset, so the races are real.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use schedulers::{ManualClock, SchedulerExt, TaskHandle};

use super::{ms, secs, Harness};

/// Timers each thread of the storm of cancels sets: 50,000, or
/// `CONFORMANCE_STORM_PER_THREAD` (`scripts/test` runs a smaller storm under
/// valgrind, which runs every thread on one core at a fraction of the speed:
/// the same paths, fewer times).
fn storm_per_thread() -> usize {
    const VAR: &str = "CONFORMANCE_STORM_PER_THREAD";
    match std::env::var(VAR) {
        Err(std::env::VarError::NotPresent) => 50_000,
        Ok(v) => match v.parse() {
            Ok(n) if n > 0 => n,
            _ => panic!("{VAR}={v:?}: expected a positive number of timers"),
        },
        Err(e) => panic!("{VAR}: {e}"),
    }
}

/// xorshift64*: enough randomness for interleavings, seeded per thread.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
    /// An index into a list of `len` (0 for an empty one).
    fn pick(&mut self, len: usize) -> usize {
        self.below(len.max(1) as u64) as usize
    }
}

/// What one task must satisfy.
struct Record {
    periodic: bool,
    /// Starts of runs.
    runs: AtomicUsize,
    /// Virtual nanoseconds at the start of its (last) run.
    ran_at: AtomicU64,
    /// The earliest it may start.
    not_before: AtomicU64,
    cancel_won: AtomicUsize,
    /// Set once a cancel returned true and the task is done: from then on
    /// nothing may start it.
    stopped: AtomicBool,
    /// Runs that started after `stopped` was set: must stay zero.
    runs_after_cancel: AtomicUsize,
    /// `runs` when the successful cancel returned.
    runs_at_cancel: AtomicUsize,
}

impl Record {
    fn new(not_before: Duration) -> Arc<Record> {
        Record::with(not_before, false)
    }

    fn with(not_before: Duration, periodic: bool) -> Arc<Record> {
        Arc::new(Record {
            periodic,
            runs: AtomicUsize::new(0),
            ran_at: AtomicU64::new(0),
            not_before: AtomicU64::new(not_before.as_nanos() as u64),
            cancel_won: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            runs_after_cancel: AtomicUsize::new(0),
            runs_at_cancel: AtomicUsize::new(usize::MAX),
        })
    }

    /// The start of a run.
    fn start(&self, clock: &ManualClock) {
        if self.stopped.load(SeqCst) {
            self.runs_after_cancel.fetch_add(1, SeqCst);
        }
        self.ran_at.store(clock.elapsed().as_nanos() as u64, SeqCst);
        self.runs.fetch_add(1, SeqCst);
    }

    /// Cancels through `handle`, recording a success. A task that was
    /// pending is done at once; one cancelled while it runs is done when
    /// that run ends, and may not start again either.
    fn cancel(&self, handle: &TaskHandle) -> bool {
        if !handle.cancel() {
            return false;
        }
        self.runs_at_cancel.store(self.runs.load(SeqCst), SeqCst);
        self.cancel_won.fetch_add(1, SeqCst);
        if handle.is_done() {
            self.stopped.store(true, SeqCst);
        }
        true
    }
}

fn task(h: &Harness, rec: &Arc<Record>) -> impl FnOnce() + Send + 'static {
    let (rec, clock) = (rec.clone(), h.clock.clone());
    move || rec.start(&clock)
}

fn periodic_task(h: &Harness, rec: &Arc<Record>) -> impl FnMut() + Send + 'static {
    let (rec, clock) = (rec.clone(), h.clock.clone());
    move || rec.start(&clock)
}

/// Starts `threads` threads, each running `work` with its number, a view of
/// the harness's clock and its own clone of `shared`.
fn on_threads<S, R>(
    h: &Harness,
    threads: usize,
    shared: S,
    work: fn(usize, Harness, S) -> R,
) -> Vec<thread::JoinHandle<R>>
where
    S: Clone + Send + 'static,
    R: Send + 'static,
{
    (0..threads)
        .map(|t| {
            // The same clock, for another thread.
            let h = Harness {
                clock: h.clock.clone(),
                ..h.fresh()
            };
            let shared = shared.clone();
            thread::spawn(move || work(t, h, shared))
        })
        .collect()
}

/// Advances virtual time in small steps until `done` counts every one of
/// `workers`, then joins them: their results, in order.
fn drive<R>(h: &Harness, done: &AtomicUsize, workers: Vec<thread::JoinHandle<R>>) -> Vec<R> {
    let mut steps = 0;
    while done.load(SeqCst) < workers.len() && steps < 200_000 {
        h.advance(Duration::from_micros(500));
        steps += 1;
    }
    workers.into_iter().map(|w| w.join().unwrap()).collect()
}

/// Every record: what [`check_cancel`] and [`check_ran_once`] say, and
/// every periodic task was cancelled.
fn check(records: &[Arc<Record>]) {
    for (i, rec) in records.iter().enumerate() {
        check_cancel(i, rec);
        if rec.cancel_won.load(SeqCst) == 0 {
            assert!(!rec.periodic, "periodic task {i} was never cancelled");
            check_ran_once(i, rec);
        }
    }
}

/// What a successful cancel promises: nothing starts after it; a one-shot
/// never ran, a periodic task at most finished the run under way; and no
/// second cancel succeeds.
fn check_cancel(i: usize, rec: &Record) {
    let runs = rec.runs.load(SeqCst);
    assert_eq!(
        rec.runs_after_cancel.load(SeqCst),
        0,
        "task {i} started after a successful cancel"
    );
    let cancels = rec.cancel_won.load(SeqCst);
    assert!(cancels <= 1, "two cancels of task {i} returned true");
    if cancels == 0 {
        return;
    }
    let at_cancel = rec.runs_at_cancel.load(SeqCst);
    if rec.periodic {
        assert!(
            runs <= at_cancel + 1,
            "periodic task {i} ran {runs} times, {at_cancel} when cancelled"
        );
    } else {
        assert_eq!(runs, 0, "task {i} ran after a successful cancel");
    }
}

/// A one-shot ran once, at or after its last deadline.
fn check_ran_once(i: usize, rec: &Record) {
    let runs = rec.runs.load(SeqCst);
    assert_eq!(runs, 1, "task {i} ran {runs} times");
    let (at, bound) = (rec.ran_at.load(SeqCst), rec.not_before.load(SeqCst));
    assert!(
        at >= bound,
        "task {i} ran early: at {at} ns, not before {bound} ns"
    );
}

/// Every closure that held one of `all` is gone (the scheduler dropped it).
fn assert_dropped<'a, T: 'a>(all: impl IntoIterator<Item = &'a Arc<T>>) {
    for (i, held) in all.into_iter().enumerate() {
        assert_eq!(
            Arc::strong_count(held),
            1,
            "task {i}'s closure was not dropped"
        );
    }
}

/// Schedules, `delay` from now, a one-shot task or, one time in eight, a
/// fixed-rate task of a random period, each recording its runs in the
/// record returned.
fn schedule_any(
    s: &dyn schedulers::Scheduler,
    h: &Harness,
    rng: &mut Rng,
    delay: Duration,
) -> (Arc<Record>, Result<TaskHandle, schedulers::Rejected>) {
    let periodic = rng.below(8) == 0;
    let rec = Record::with(h.clock.elapsed() + delay, periodic);
    let scheduled = if periodic {
        let period = Duration::from_micros(200 + rng.below(2_000));
        s.schedule_at_fixed_rate(delay, period, periodic_task(h, &rec))
    } else {
        s.schedule(delay, task(h, &rec)).map(|f| f.into_handle())
    };
    (rec, scheduled)
}

/// Four threads schedule one-shot and fixed-rate tasks and cancel random
/// ones while virtual time moves, so cancels race the driver's expiry, the
/// hand-off to workers and the runs themselves. Then: every one-shot not
/// cancelled ran once and not early, none cancelled ran, no task started
/// after a successful cancel, and the counters agree.
pub fn concurrent_schedule_cancel_and_fire_match_the_model(h: &Harness) {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 400;
    let s: Arc<dyn schedulers::Scheduler> = Arc::from(h.scheduler());
    let done = Arc::new(AtomicUsize::new(0));
    let all = Arc::new(Mutex::new(Vec::new()));
    let workers = on_threads(
        h,
        THREADS,
        (s.clone(), done.clone(), all.clone()),
        |t, h, (s, done, all)| {
            let mut rng = Rng::new(t as u64 + 1);
            let mut mine: Vec<(Arc<Record>, TaskHandle)> = Vec::new();
            for _ in 0..PER_THREAD {
                let delay = Duration::from_micros(rng.below(20_000));
                let not_before = h.clock.elapsed() + delay;
                if rng.below(5) == 0 {
                    let rec = Record::with(not_before, true);
                    let period = Duration::from_micros(100 + rng.below(3_000));
                    let handle = s
                        .schedule_at_fixed_rate(delay, period, periodic_task(&h, &rec))
                        .unwrap();
                    mine.push((rec, handle));
                } else {
                    let rec = Record::new(not_before);
                    let handle = s.schedule(delay, task(&h, &rec)).unwrap().into_handle();
                    mine.push((rec, handle));
                }
                if rng.below(3) == 0 {
                    let (rec, handle) = &mine[rng.pick(mine.len())];
                    rec.cancel(handle);
                }
                if rng.below(50) == 0 {
                    thread::yield_now();
                }
            }
            // Stop the periodic tasks, most of them while they run.
            for (rec, handle) in &mine {
                if rec.periodic {
                    rec.cancel(handle);
                }
            }
            all.lock().unwrap().extend(mine);
            done.fetch_add(1, SeqCst);
        },
    );
    drive(h, &done, workers);
    h.advance(secs(1));
    let all = std::mem::take(&mut *all.lock().unwrap());
    // Every cancelled task is done by now: from here on none may start.
    for (rec, handle) in &all {
        if rec.cancel_won.load(SeqCst) > 0 {
            assert!(handle.is_done() && handle.is_cancelled());
            rec.stopped.store(true, SeqCst);
        }
    }
    h.advance(secs(1));
    let records: Vec<_> = all.into_iter().map(|(r, _)| r).collect();
    assert_eq!(records.len(), THREADS * PER_THREAD);
    check(&records);
    let m = s.metrics();
    let cancelled = records
        .iter()
        .filter(|r| r.cancel_won.load(SeqCst) > 0)
        .count();
    let runs: usize = records.iter().map(|r| r.runs.load(SeqCst)).sum();
    assert_eq!(m.cancelled as usize, cancelled);
    assert_eq!(m.fired as usize, runs);
    assert_eq!(m.pending, 0);
}

/// Four threads schedule timers due within 2 ms and cancel nine in ten of
/// them at once while time moves, so cancels race each other and the
/// driver's unlinking of earlier cancels, in a few rounds, since the windows
/// are narrow. No cancel panics, nothing cancelled runs, and every other
/// timer runs once, not early.
pub fn a_storm_of_cancels_matches_the_model(h: &Harness) {
    const ROUNDS: u64 = 3;
    const THREADS: usize = 4;
    let per_thread = storm_per_thread();
    let s: Arc<dyn schedulers::Scheduler> = Arc::from(h.scheduler());
    let mut cancelled = 0;
    for round in 0..ROUNDS {
        let done = Arc::new(AtomicUsize::new(0));
        let shared = (s.clone(), done.clone(), round, per_thread);
        let workers = on_threads(h, THREADS, shared, |t, h, (s, done, round, per_thread)| {
            let mut rng = Rng::new(40 + round * 10 + t as u64);
            let mut mine = Vec::with_capacity(per_thread);
            for _ in 0..per_thread {
                let delay = Duration::from_micros(rng.below(2_000));
                let rec = Record::new(h.clock.elapsed() + delay);
                let handle = s.schedule(delay, task(&h, &rec)).unwrap().into_handle();
                if rng.below(10) != 0 {
                    rec.cancel(&handle);
                }
                mine.push(rec);
            }
            done.fetch_add(1, SeqCst);
            mine
        });
        let records: Vec<_> = drive(h, &done, workers).into_iter().flatten().collect();
        h.advance(secs(1));
        check(&records);
        cancelled += records
            .iter()
            .filter(|r| r.cancel_won.load(SeqCst) > 0)
            .count();
    }
    assert_eq!(s.metrics().cancelled as usize, cancelled);
    assert_eq!(s.metrics().pending, 0);
}

pub fn shutdown_racing_schedule_loses_nothing(h: &Harness) {
    const THREADS: usize = 4;
    let s: Arc<dyn schedulers::Scheduler> = Arc::from(h.scheduler());
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let rejected = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(AtomicUsize::new(0));
    let workers = on_threads(
        h,
        THREADS,
        (
            s.clone(),
            accepted.clone(),
            rejected.clone(),
            started.clone(),
        ),
        |t, h, (s, accepted, rejected, started)| {
            let mut rng = Rng::new(100 + t as u64);
            for _ in 0..100_000 {
                let delay = Duration::from_micros(rng.below(5_000));
                let rec = Record::new(h.clock.elapsed() + delay);
                started.fetch_add(1, SeqCst);
                match s.schedule(delay, task(&h, &rec)) {
                    Ok(_) => accepted.lock().unwrap().push(rec),
                    Err(e) => {
                        assert!(e.is_shutdown(), "{e}");
                        rejected.lock().unwrap().push(rec);
                        return;
                    }
                }
            }
        },
    );
    while started.load(SeqCst) < 2_000 {
        h.advance(Duration::from_micros(300));
    }
    s.shutdown();
    for w in workers {
        w.join().unwrap();
    }
    h.advance(secs(1));
    assert!(s.await_termination(secs(60)));
    let accepted = accepted.lock().unwrap();
    assert!(accepted.len() >= 1_000);
    check(&accepted);
    for rec in rejected.lock().unwrap().iter() {
        assert_eq!(rec.runs.load(SeqCst), 0, "a rejected task ran");
    }
    assert_eq!(s.metrics().pending, 0);
}

pub fn reset_racing_fire_runs_once(h: &Harness) {
    reset_racing_fire(h, false);
}

/// As [`reset_racing_fire_runs_once`], each thread also dropping a task's
/// handle now and then right after resetting it: a claim that meets the
/// reset may then leave the reset on its way the last holder, and the
/// task must still run once, at or after its last deadline.
pub fn reset_racing_fire_runs_once_with_its_handle_dropped(h: &Harness) {
    reset_racing_fire(h, true);
}

fn reset_racing_fire(h: &Harness, drop_handles: bool) {
    const THREADS: usize = 3;
    const TASKS: usize = 300;
    let s = h.scheduler();
    let records: Vec<Arc<Record>> = (0..TASKS).map(|_| Record::new(ms(5))).collect();
    let handles: Arc<Vec<Mutex<Option<TaskHandle>>>> = Arc::new(
        records
            .iter()
            .map(|r| Mutex::new(Some(s.schedule(ms(5), task(h, r)).unwrap().into_handle())))
            .collect(),
    );
    let records = Arc::new(records);
    let done = Arc::new(AtomicUsize::new(0));
    let workers = on_threads(
        h,
        THREADS,
        (handles.clone(), records.clone(), done.clone(), drop_handles),
        |t, h, (handles, records, done, drop_handles)| {
            let mut rng = Rng::new(7 + t as u64);
            // Each task is reset by one thread only, so "the last
            // successful reset" is well defined: program order.
            for _ in 0..2_000 {
                let i = (rng.below((TASKS / THREADS) as u64) as usize) * THREADS + t;
                let delay = Duration::from_micros(rng.below(8_000));
                let bound = (h.clock.elapsed() + delay).as_nanos() as u64;
                let mut handle = handles[i].lock().unwrap();
                let Some(task) = handle.as_ref() else {
                    continue; // dropped: no more resets
                };
                if task.reset(delay).unwrap() {
                    records[i].not_before.store(bound, SeqCst);
                    if drop_handles && rng.below(8) == 0 {
                        *handle = None;
                    }
                }
            }
            done.fetch_add(1, SeqCst);
        },
    );
    drive(h, &done, workers);
    h.advance(secs(1));
    check(&records);
    assert_eq!(s.metrics().pending, 0);
    assert_eq!(s.metrics().fired as usize, TASKS);
}

/// Three threads each keep handles to one-shot timers of their own and, at
/// random, schedule new ones, reset, cancel, clone and drop them while
/// virtual time moves, so each of those races the others, the driver's
/// intake and expiry, and the claims. Then: nothing lost (every task not
/// cancelled ran once, at or after the deadline its last successful reset
/// set), nothing ran after a successful cancel, and once the scheduler has
/// terminated and gone, every closure has been dropped (each held its
/// task's record).
pub fn a_mix_of_schedules_resets_cancels_and_drops_loses_nothing(h: &Harness) {
    const THREADS: usize = 3;
    const OPS: usize = 3_000;
    let s: Arc<dyn schedulers::Scheduler> = Arc::from(h.scheduler());
    let done = Arc::new(AtomicUsize::new(0));
    let workers = on_threads(h, THREADS, (s.clone(), done.clone()), |t, h, (s, done)| {
        let mut rng = Rng::new(70 + t as u64);
        let mut records: Vec<Arc<Record>> = Vec::new();
        // Handles this thread still holds, with their task's index.
        let mut held: Vec<(usize, TaskHandle)> = Vec::new();
        for _ in 0..OPS {
            let delay = Duration::from_micros(rng.below(8_000));
            let bound = (h.clock.elapsed() + delay).as_nanos() as u64;
            let pick = rng.pick(held.len());
            match rng.below(8) {
                0..=2 => {
                    let rec = Record::new(Duration::from_nanos(bound));
                    let handle = s.schedule(delay, task(&h, &rec)).unwrap();
                    held.push((records.len(), handle.into_handle()));
                    records.push(rec);
                }
                3 | 4 if !held.is_empty() => {
                    let (i, handle) = &held[pick];
                    if handle.reset(delay).unwrap() {
                        records[*i].not_before.store(bound, SeqCst);
                    }
                }
                5 if !held.is_empty() => {
                    let (i, handle) = &held[pick];
                    records[*i].cancel(handle);
                }
                6 if !held.is_empty() => drop(held.swap_remove(pick)),
                7 if !held.is_empty() => {
                    let (i, handle) = &held[pick];
                    held.push((*i, handle.clone()));
                }
                _ => {}
            }
        }
        done.fetch_add(1, SeqCst);
        records
    });
    let records: Vec<Arc<Record>> = drive(h, &done, workers).into_iter().flatten().collect();
    h.advance(secs(1));
    check(&records);
    assert_eq!(s.metrics().pending, 0);
    s.shutdown();
    assert!(s.await_termination(secs(30)));
    drop(s);
    assert_dropped(&records);
}

/// What a periodic task's runs must keep, under a lock its resets take
/// too: no run starts while another of its runs is under way, nor before
/// its last (re)start's bound plus a period for every run since (a
/// fixed-rate grid starts at or after the bound), nor, with fixed delay,
/// before a period after its last run ended.
struct Rules {
    period: u64,
    fixed_delay: bool,
    /// The earliest its last schedule or successful reset may start it (ns).
    base: u64,
    runs_since: u64,
    last_end: Option<u64>,
    in_run: bool,
}

struct Periodic {
    rec: Arc<Record>,
    rules: Mutex<Rules>,
    /// What a run found wrong.
    broken: Mutex<Vec<String>>,
}

impl Periodic {
    fn run(&self, clock: &ManualClock) {
        let now = clock.elapsed().as_nanos() as u64;
        {
            let mut r = self.rules.lock().unwrap();
            let floor = match r.last_end {
                Some(end) if r.fixed_delay => end + r.period,
                _ => r.base + r.runs_since * r.period,
            };
            if r.in_run {
                self.broken
                    .lock()
                    .unwrap()
                    .push(format!("overlapping runs at {now} ns"));
            }
            if now < floor {
                let run = r.runs_since;
                self.broken.lock().unwrap().push(format!(
                    "run {run} since its base started at {now} ns, not before {floor} ns"
                ));
            }
            r.in_run = true;
            r.runs_since += 1;
        }
        self.rec.start(clock);
        let mut r = self.rules.lock().unwrap();
        r.in_run = false;
        r.last_end = Some(clock.elapsed().as_nanos() as u64);
    }
}

/// Three threads act at random on fixed-rate and fixed-delay tasks of their
/// own (schedule, reset, cancel and wait for the end, clone and drop
/// handles) and on one-shots whose value they wait for (schedule, reset,
/// cancel, wait), while virtual time moves: so resets and cancels race
/// periodic runs and their re-arming, and waits race the end of the task
/// they wait for. Then: no periodic run overlapped another of its task or
/// came before its bound, nothing started after a successful cancel, every
/// wait returned the task's value or its cancel (none timed out), every
/// one-shot not cancelled ran once and not early, and once the scheduler
/// has shut down (stopping the periodic tasks whose handles were dropped)
/// and gone, every closure has been dropped.
pub fn periodic_tasks_and_waits_mixed_with_resets_and_cancels_keep_their_rules(h: &Harness) {
    const THREADS: usize = 3;
    const OPS: usize = 1_500;
    let s: Arc<dyn schedulers::Scheduler> = Arc::from(h.scheduler());
    let done = Arc::new(AtomicUsize::new(0));
    let workers = on_threads(h, THREADS, (s.clone(), done.clone()), |t, h, (s, done)| {
        let mut rng = Rng::new(90 + t as u64);
        let now = |h: &Harness| h.clock.elapsed().as_nanos() as u64;
        let mut periodic: Vec<Arc<Periodic>> = Vec::new();
        let mut held: Vec<(usize, TaskHandle)> = Vec::new();
        let mut once: Vec<Arc<Record>> = Vec::new();
        let mut waiting: Vec<(usize, schedulers::ScheduledFuture<usize>)> = Vec::new();
        for _ in 0..OPS {
            let delay = Duration::from_micros(rng.below(4_000));
            let bound = now(&h) + delay.as_nanos() as u64;
            match rng.below(16) {
                0..=2 => {
                    let rec = Record::new(Duration::from_nanos(bound));
                    let (i, r) = (once.len(), rec.clone());
                    let clock = h.clock.clone();
                    let future = s
                        .schedule(delay, move || {
                            r.start(&clock);
                            i
                        })
                        .unwrap();
                    waiting.push((i, future));
                    once.push(rec);
                }
                3 => {
                    let period = (100 + rng.below(2_000)) * 1_000;
                    let fixed_delay = rng.below(2) == 0;
                    let p = Arc::new(Periodic {
                        rec: Record::with(Duration::from_nanos(bound), true),
                        rules: Mutex::new(Rules {
                            period,
                            fixed_delay,
                            base: bound,
                            runs_since: 0,
                            last_end: None,
                            in_run: false,
                        }),
                        broken: Mutex::new(Vec::new()),
                    });
                    let (run, clock) = (p.clone(), h.clock.clone());
                    let body = move || run.run(&clock);
                    let period = Duration::from_nanos(period);
                    let handle = if fixed_delay {
                        s.schedule_with_fixed_delay(delay, period, body)
                    } else {
                        s.schedule_at_fixed_rate(delay, period, body)
                    }
                    .unwrap();
                    held.push((periodic.len(), handle));
                    periodic.push(p);
                }
                4 | 5 if !held.is_empty() => {
                    let (i, handle) = &held[rng.pick(held.len())];
                    let mut rules = periodic[*i].rules.lock().unwrap();
                    let bound = now(&h) + delay.as_nanos() as u64;
                    if handle.reset(delay).unwrap() {
                        rules.base = bound;
                        rules.runs_since = 0;
                        rules.last_end = None;
                    }
                }
                6 if !held.is_empty() => {
                    let (i, handle) = &held[rng.pick(held.len())];
                    if periodic[*i].rec.cancel(handle) {
                        // Ends once a run under way ends.
                        let ended = handle.wait_timeout(secs(60)).unwrap_err();
                        assert!(ended.is_cancelled(), "periodic task {i}: {ended}");
                    }
                }
                7 if !held.is_empty() && rng.below(2) == 0 => {
                    drop(held.swap_remove(rng.pick(held.len())));
                }
                8 if !held.is_empty() => {
                    let (i, handle) = &held[rng.pick(held.len())];
                    held.push((*i, handle.clone()));
                }
                9 | 10 if !waiting.is_empty() => {
                    let (i, future) = &waiting[rng.pick(waiting.len())];
                    if future.handle().reset(delay).unwrap() {
                        once[*i].not_before.store(bound, SeqCst);
                    }
                }
                11 if !waiting.is_empty() => {
                    let (i, future) = &waiting[rng.pick(waiting.len())];
                    once[*i].cancel(future.handle());
                }
                12 | 13 if !waiting.is_empty() => {
                    let (i, future) = waiting.swap_remove(rng.pick(waiting.len()));
                    let rec = &once[i];
                    match future.get_timeout(secs(60)) {
                        Ok(value) => {
                            assert_eq!(value, i, "a wait returned another task's value");
                            assert_eq!(rec.runs.load(SeqCst), 1, "task {i}: a value, no run");
                        }
                        Err(e) => {
                            assert!(e.is_cancelled(), "waiting for task {i}: {e}");
                            assert_eq!(rec.cancel_won.load(SeqCst), 1, "task {i}");
                        }
                    }
                }
                _ => {}
            }
        }
        done.fetch_add(1, SeqCst);
        (once, periodic)
    });
    let (mut once, mut periodic) = (Vec::new(), Vec::new());
    for (o, p) in drive(h, &done, workers) {
        once.extend(o);
        periodic.extend(p);
    }
    // Past every one-shot's deadline; the periodic tasks left run on.
    h.advance(ms(10));
    check(&once);
    s.shutdown();
    h.advance(ms(10));
    assert!(s.await_termination(secs(30)));
    let fired: usize = (once.iter().chain(periodic.iter().map(|p| &p.rec)))
        .map(|rec| rec.runs.load(SeqCst))
        .sum();
    assert_eq!(s.metrics().fired as usize, fired);
    drop(s);
    for (i, p) in periodic.iter().enumerate() {
        let broken = p.broken.lock().unwrap();
        let first: Vec<_> = broken.iter().take(3).collect();
        assert!(
            broken.is_empty(),
            "periodic task {i}: {} broken runs: {first:?}",
            broken.len()
        );
        check_cancel(i, &p.rec);
    }
    assert_dropped(&periodic);
    assert_dropped(&once);
}

/// Three threads schedule one-shot and fixed-rate tasks, reset and cancel
/// them, while virtual time moves, until `shutdown_now` (called meanwhile)
/// refuses them: so it races submissions on their way to the driver,
/// resets and cancels on theirs, claims and runs. Then every task accepted
/// ended exactly one way, as its own handle reports: it ran (a one-shot,
/// once and not early), a cancel stopped it, or `shutdown_now` returned it
/// (a one-shot that never ran, or a periodic task between runs). None is
/// left waiting, `shutdown_now` returned exactly the tasks whose handles
/// report abandoned, and once the scheduler is gone every closure has been
/// dropped.
pub fn shutdown_now_racing_everything_loses_nothing(h: &Harness) {
    const THREADS: usize = 3;
    let s: Arc<dyn schedulers::Scheduler> = Arc::from(h.scheduler());
    // Pauses of the threads so far, and steps of virtual time.
    let (paused, steps) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let workers = on_threads(
        h,
        THREADS,
        (s.clone(), paused.clone(), steps.clone()),
        |t, h, (s, paused, steps)| {
            let mut rng = Rng::new(120 + t as u64);
            let mut mine: Vec<(Arc<Record>, TaskHandle)> = Vec::new();
            for op in 1.. {
                // 50 operations a step of virtual time, so that tasks
                // run, are reset and cancelled before the end.
                if op % 50 == 0 {
                    let step = steps.load(SeqCst);
                    paused.fetch_add(1, SeqCst);
                    while steps.load(SeqCst) == step && !s.is_shutdown() {
                        thread::yield_now();
                    }
                }
                let delay = Duration::from_micros(rng.below(5_000));
                let not_before = h.clock.elapsed() + delay;
                let pick = rng.pick(mine.len());
                match rng.below(8) {
                    0..=3 => {
                        let (rec, scheduled) = schedule_any(&*s, &h, &mut rng, delay);
                        match scheduled {
                            Ok(handle) => mine.push((rec, handle)),
                            Err(e) => {
                                assert!(e.is_shutdown(), "{e}");
                                return mine;
                            }
                        }
                    }
                    4 | 5 if !mine.is_empty() => {
                        let (rec, handle) = &mine[pick];
                        if !rec.periodic && handle.reset(delay).unwrap() {
                            let bound = not_before.as_nanos() as u64;
                            rec.not_before.store(bound, SeqCst);
                        }
                    }
                    6 if !mine.is_empty() => {
                        let (rec, handle) = &mine[pick];
                        rec.cancel(handle);
                    }
                    _ => {}
                }
            }
            unreachable!("schedules go on until one is refused")
        },
    );
    for step in 1..=60 {
        while paused.load(SeqCst) < step * THREADS {
            thread::yield_now();
        }
        // Their next operations race this step's runs.
        steps.fetch_add(1, SeqCst);
        h.advance(Duration::from_micros(300));
    }
    let returned = s.shutdown_now();
    let all: Vec<(Arc<Record>, TaskHandle)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    h.advance(secs(1));
    assert!(s.await_termination(secs(30)));
    let mut abandoned = 0;
    for (i, (rec, handle)) in all.iter().enumerate() {
        let (runs, cancelled) = (rec.runs.load(SeqCst), rec.cancel_won.load(SeqCst));
        check_cancel(i, rec);
        match handle.wait_timeout(secs(30)) {
            Ok(()) => {
                assert!(!rec.periodic, "periodic task {i} completed");
                assert_eq!(cancelled, 0, "task {i} completed");
                check_ran_once(i, rec);
            }
            // Pending (a periodic task between runs, as the JDK's
            // `shutdownNow` returns it), so never cancelled.
            Err(e) if e.is_abandoned() => {
                assert_eq!(cancelled, 0, "task {i} was returned by shutdown_now");
                assert!(
                    rec.periodic || runs == 0,
                    "one-shot {i} ran, then was returned"
                );
                abandoned += 1;
            }
            // Cancelled by its user, or by `shutdown_now` during a run.
            Err(e) if e.is_cancelled() && rec.periodic => {
                assert!(
                    cancelled == 1 || runs > 0,
                    "periodic task {i} was cancelled"
                )
            }
            Err(e) if e.is_cancelled() => assert_eq!(cancelled, 1, "one-shot {i} was cancelled"),
            Err(e) => panic!("task {i} (ran {runs} times, cancelled {cancelled}): {e}"),
        }
    }
    assert_eq!(
        returned.len(),
        abandoned,
        "shutdown_now returned the tasks it abandoned"
    );
    assert_eq!(s.metrics().pending, 0);
    drop((returned, s));
    assert_dropped(all.iter().map(|(rec, _)| rec));
}

/// Three threads schedule one-shot and fixed-rate tasks on a scheduler with
/// a pending limit, past it, and reset, cancel and drop them while virtual
/// time moves: so the count of waiting tasks goes up and down on every path
/// at once (a submission, a cancel in a lane or of a task the driver holds,
/// a claim, a periodic task's re-arming). Then: the limit refused some, and
/// nothing it accepted was lost; and once every task has ended, exactly
/// the limit's worth of new tasks is accepted again.
pub fn the_pending_limit_comes_back_whole_after_concurrent_use(h: &Harness) {
    const THREADS: usize = 3;
    const OPS: usize = 2_000;
    const LIMIT: usize = 50;
    let s: Arc<dyn schedulers::Scheduler> = Arc::from(h.scheduler_with(Some(LIMIT)));
    let done = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let workers = on_threads(
        h,
        THREADS,
        (s.clone(), done.clone(), refused.clone()),
        |t, h, (s, done, refused)| {
            let mut rng = Rng::new(150 + t as u64);
            let mut records: Vec<Arc<Record>> = Vec::new();
            // Handles held (dropped at random for one-shots only: a
            // periodic task must be cancelled to stop waiting).
            let mut held: Vec<(usize, TaskHandle)> = Vec::new();
            for _ in 0..OPS {
                let delay = Duration::from_micros(rng.below(4_000));
                let not_before = h.clock.elapsed() + delay;
                let pick = rng.pick(held.len());
                match rng.below(8) {
                    0..=3 => {
                        let (rec, scheduled) = schedule_any(&*s, &h, &mut rng, delay);
                        match scheduled {
                            Ok(handle) => {
                                held.push((records.len(), handle));
                                records.push(rec);
                            }
                            Err(e) => {
                                assert!(e.is_pending_limit(), "{e}");
                                refused.fetch_add(1, SeqCst);
                            }
                        }
                    }
                    4 if !held.is_empty() => {
                        let (i, handle) = &held[pick];
                        let rec = &records[*i];
                        if !rec.periodic && handle.reset(delay).unwrap() {
                            rec.not_before.store(not_before.as_nanos() as u64, SeqCst);
                        }
                    }
                    5 | 6 if !held.is_empty() => {
                        let (i, handle) = &held[pick];
                        records[*i].cancel(handle);
                    }
                    7 if !held.is_empty() && !records[held[pick].0].periodic => {
                        drop(held.swap_remove(pick));
                    }
                    _ => {}
                }
            }
            for (i, handle) in &held {
                if records[*i].periodic {
                    records[*i].cancel(handle);
                }
            }
            done.fetch_add(1, SeqCst);
            records
        },
    );
    let records: Vec<Arc<Record>> = drive(h, &done, workers).into_iter().flatten().collect();
    h.advance(secs(1));
    check(&records);
    assert!(refused.load(SeqCst) > 0, "the limit was never reached");
    assert_eq!(s.metrics().pending, 0);
    let again: Vec<_> = (0..LIMIT)
        .map(|i| {
            s.schedule(secs(1), || ())
                .unwrap_or_else(|e| panic!("new task {i}: {e}"))
        })
        .collect();
    let over = s.schedule(secs(1), || ()).unwrap_err();
    assert!(over.is_pending_limit(), "{over}");
    h.advance(secs(2));
    assert!(again.iter().all(|f| f.handle().is_done()));
}
