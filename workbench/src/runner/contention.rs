//! Executes the contention workload ([`crate::spec::Contention`]): P
//! threads share one subject, each setting and clearing request timeouts as
//! a server's I/O threads do, at every P of the spec.
//!
//! At each P, on a fresh subject ([`Shared`]), P threads each:
//!
//! 1. run `warm` untimed pairs (thread start-up, first allocations, a JIT
//!    and the subject's first growth stay out of the figures);
//! 2. wait until all P are ready: the last one to arrive notes the time and
//!    the whole process's CPU and lets every thread go;
//! 3. run `pairs` pairs: schedule a timeout (delay drawn from the seed,
//!    stream `k + 1` for thread `k`, the same at every P) whose closure holds
//!    a [`Request`] (16 bytes: an id and an `Arc` of the thread's own
//!    [`Conn`], so the closure's refcount is the thread's own line, not a
//!    shared one), and cancel the one set `window` requests before (a ring of
//!    `window` live timeouts per thread); the last `window` are cancelled
//!    at the end;
//! 4. note the time and its own CPU time.
//!
//! Then the runner waits [`SETTLE`] (work a subject defers to its own
//! threads, such as unlinking or dropping cancelled timers, runs and counts)
//! and reads the process's CPU again. Figures at each P ([`Metric::PairsPerS`]
//! and the others, with the thread count as the record's size): every
//! thread's pairs over the wall time from the start to the last thread's
//! end; the threads' own CPU per pair; the whole process's CPU per pair;
//! the pairs done; how many threads ran at once on average (their CPU over
//! the wall time). Then [`Metric::ContendedPairsPerS`], the least total throughput at any P
//! of 2 or more.
//!
//! The run fails ([`RunError::Inconsistent`]) if any cancel did not stop
//! its timeout or any timeout fired: with delays of seconds and a run that
//! cancels each within microseconds, either is a broken subject.
//!
//! Each subject says how its users share it ([`Shared`]): our schedulers as
//! an `Arc<dyn Scheduler>` (`crate::subjects`), the peers in
//! [`crate::peers::contention`]; the Java originals run the same loop in
//! their JVM (`workbench/java/Contention.java`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::measure::{self, ns};
use super::{Refused, RunContext, RunError, Runner, Subject};
use crate::random::{Dist, Rng};
use crate::record::{Measurement, Metric, SubjectKind};
use crate::spec::{Contention, WorkloadKind};

/// How long the runner waits after the last thread's end before it reads
/// the process's CPU time: deferred work (a driver unlinking or dropping
/// cancelled timers on its next tick or housekeeping round) runs meanwhile.
pub const SETTLE: Duration = Duration::from_millis(100);

/// How long the first ready thread waits for the others before the run is
/// declared broken (a subject that cannot run P loops at once).
const READY_LIMIT: Duration = Duration::from_secs(120);

/// One thread's "connection": what its timeouts' closures point to. On a
/// cache line of its own, so that threads' connections never share one.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Conn {
    timed_out: AtomicU64,
}

impl Conn {
    /// Timeouts of this connection that fired.
    pub fn timed_out(&self) -> u64 {
        self.timed_out.load(Relaxed)
    }
}

/// What a timeout's closure holds: the request's id and its thread's
/// connection, 16 bytes, as a server's request timeout holds.
#[derive(Debug)]
pub struct Request {
    id: u64,
    conn: Arc<Conn>,
}

impl Request {
    /// A request of `conn`.
    pub fn new(id: u64, conn: Arc<Conn>) -> Request {
        Request { id, conn }
    }

    /// The request's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What the timeout does when it fires: counts on its connection (in
    /// this workload it never should).
    pub fn timed_out(&self) {
        self.conn.timed_out.fetch_add(1, Relaxed);
    }
}

/// The work of one of the P threads, `body(k)` for thread `k`.
pub type Body = Arc<dyn Fn(usize) + Send + Sync>;

/// A subject as the threads of a contention run share it: the way its
/// users share it between threads.
pub trait Shared: Send + Sync + 'static {
    /// What a caller keeps per timeout to cancel it.
    type Handle;

    /// Sets a timeout that calls `request.timed_out()` after `delay`.
    ///
    /// # Errors
    ///
    /// The subject refused (its own error inside).
    fn schedule(&self, delay: Duration, request: Request) -> Result<Self::Handle, Refused>;

    /// Clears a timeout; true iff this stopped it.
    fn cancel(&self, handle: Self::Handle) -> bool;

    /// Runs `body(k)` for every `k` in `0..p` at once, each on a thread of
    /// its own, the way this subject's users run their I/O threads, and
    /// returns when all have returned. By default P plain threads
    /// ([`spawn_threads`]).
    ///
    /// # Errors
    ///
    /// A thread could not be started or panicked.
    fn run_threads(&self, p: usize, body: Body) -> Result<(), RunError> {
        spawn_threads(p, &body)
    }

    /// Stops the subject's threads (after the run and the settling pause).
    fn shutdown(&self) {}
}

/// P plain threads running `body(0..p)`, joined.
///
/// # Errors
///
/// A thread could not be started or panicked.
pub fn spawn_threads(p: usize, body: &Body) -> Result<(), RunError> {
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..p)
            .map(|k| {
                let b = body.clone();
                std::thread::Builder::new()
                    .name(format!("contention-{k}"))
                    .spawn_scoped(s, move || b(k))
                    .map_err(|e| RunError::Child(format!("cannot start thread {k}: {e}")))
            })
            .collect();
        let mut first = None;
        for t in threads {
            let r = t.and_then(|t| {
                t.join()
                    .map_err(|_| RunError::Inconsistent("a contention thread panicked".into()))
            });
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    })
}

/// Runs the contention workload against a subject made fresh for each P by
/// `make(p)`, type-erased for [`with`] and [`only`].
pub type ContentionRun =
    Arc<dyn Fn(&Contention, u64, &RunContext) -> Result<Vec<Measurement>, RunError> + Send + Sync>;

/// The [`ContentionRun`] of the subject `make(p)` makes.
pub fn runner<S, F>(make: F) -> ContentionRun
where
    S: Shared + ?Sized,
    F: Fn(usize) -> Result<Arc<S>, RunError> + Send + Sync + 'static,
{
    Arc::new(move |spec, seed, ctx| run(&make, spec, seed, ctx))
}

/// `subject`, able to run the contention workload too: a contention
/// workload goes to `run`, every other to the subject's own runner.
pub fn with(subject: Subject, run: ContentionRun) -> Subject {
    let inner = subject.runner.clone();
    Subject {
        workloads: plus_contention(subject.workloads),
        runner: Arc::new(move || {
            Ok(Box::new(Either {
                inner: Some(inner()?),
                run: run.clone(),
            }) as Box<dyn Runner>)
        }),
        ..subject
    }
}

/// A subject that runs only the contention workload.
pub fn only(
    name: &'static str,
    kind: SubjectKind,
    about: &'static str,
    run: ContentionRun,
) -> Subject {
    Subject {
        name,
        kind,
        about,
        workloads: &[WorkloadKind::Contention],
        runner: Arc::new(move || {
            Ok(Box::new(Either {
                inner: None,
                run: run.clone(),
            }) as Box<dyn Runner>)
        }),
        timers: None,
    }
}

fn plus_contention(kinds: &'static [WorkloadKind]) -> &'static [WorkloadKind] {
    use WorkloadKind::{Calendar, Contention, Sweep, Timeline};
    match kinds {
        k if k.contains(&Contention) => k,
        [Timeline, Sweep] => &[Timeline, Sweep, Contention],
        [Timeline, Sweep, Calendar] => &[Timeline, Sweep, Calendar, Contention],
        [] => &[Contention],
        // Not a combination any subject has today: a few bytes, once per
        // registry built.
        k => Box::leak([k, &[Contention]].concat().into_boxed_slice()),
    }
}

/// The contention runner beside a subject's own.
struct Either {
    inner: Option<Box<dyn Runner>>,
    run: ContentionRun,
}

impl Runner for Either {
    fn run(
        &mut self,
        workload: &crate::spec::Workload,
        ctx: &RunContext,
    ) -> Result<Vec<Measurement>, RunError> {
        match (&workload.contention, &mut self.inner) {
            (Some(c), _) => (self.run)(c, workload.seed, ctx),
            (None, Some(inner)) => inner.run(workload, ctx),
            (None, None) => Err(RunError::Inconsistent(format!(
                "{}: this subject runs only the contention workload",
                workload.name
            ))),
        }
    }
}

/// Holds the P threads until all are ready; the last to arrive notes the
/// start (time and the process's CPU) and lets them go.
struct Gate {
    p: usize,
    state: Mutex<(usize, Option<(Instant, Duration)>)>,
    ready: Condvar,
}

impl Gate {
    fn new(p: usize) -> Gate {
        Gate {
            p,
            state: Mutex::new((0, None)),
            ready: Condvar::new(),
        }
    }

    fn arrive(&self) -> Result<(), RunError> {
        let mut g = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        g.0 += 1;
        if g.0 == self.p {
            g.1 = Some((measure::now(), measure::cpu_process()));
            self.ready.notify_all();
            return Ok(());
        }
        let limit = measure::now() + READY_LIMIT;
        while g.1.is_none() {
            let left = limit.saturating_duration_since(measure::now());
            if left.is_zero() {
                return Err(RunError::Inconsistent(format!(
                    "only {} of {} threads were ready after {} s: the subject does not run them at once",
                    g.0,
                    self.p,
                    READY_LIMIT.as_secs()
                )));
            }
            g = self
                .ready
                .wait_timeout(g, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(())
    }

    fn start(&self) -> Option<(Instant, Duration)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).1
    }
}

/// What one thread measured.
#[derive(Clone, Copy, Debug)]
struct Outcome {
    end: Instant,
    cpu: Duration,
    stopped: u64,
}

/// One thread's inputs.
struct Lane {
    delays: Vec<u64>,
    conn: Arc<Conn>,
}

/// Schedules a timeout per delay, each cancelling the one set `ring.len()`
/// requests before, then cancels what is left (also after a refusal, so no
/// handle is left behind); returns how many cancels stopped their timeout.
fn pass<S: Shared + ?Sized>(
    s: &S,
    delays: &[u64],
    ring: &mut [Option<S::Handle>],
    conn: &Arc<Conn>,
) -> Result<u64, RunError> {
    let mut stopped = 0u64;
    let mut j = 0usize;
    let mut refused = None;
    for (i, &d) in delays.iter().enumerate() {
        if let Some(h) = ring[j].take() {
            stopped += u64::from(s.cancel(h));
        }
        match s.schedule(
            Duration::from_nanos(d),
            Request::new(i as u64, conn.clone()),
        ) {
            Ok(h) => ring[j] = Some(h),
            Err(source) => {
                refused = Some(RunError::Refused {
                    op: "schedule",
                    at: i,
                    of: delays.len(),
                    source,
                });
                break;
            }
        }
        j += 1;
        if j == ring.len() {
            j = 0;
        }
    }
    for entry in ring.iter_mut() {
        if let Some(h) = entry.take() {
            stopped += u64::from(s.cancel(h));
        }
    }
    refused.map_or(Ok(stopped), Err)
}

/// Runs one repeat: every P of `spec` on a fresh `make(p)`.
///
/// # Errors
///
/// A [`RunError`] if the subject refuses a timeout, cannot run P threads at
/// once, or a cancel did not stop its timeout or a timeout fired.
pub fn run<S, F>(
    make: &F,
    spec: &Contention,
    seed: u64,
    ctx: &RunContext,
) -> Result<Vec<Measurement>, RunError>
where
    S: Shared + ?Sized,
    F: Fn(usize) -> Result<Arc<S>, RunError>,
{
    let pairs = usize::try_from(spec.pairs)
        .map_err(|_| RunError::TooLarge(format!("{} pairs per thread", spec.pairs)))?;
    let window = usize::try_from(spec.window).unwrap_or(usize::MAX).max(1);
    let warm = usize::try_from(spec.warm).unwrap_or(usize::MAX).min(pairs);
    ctx.progress.set_length(spec.threads.len() as u64);
    ctx.progress.set_position(0);
    let mut out = Vec::new();
    let mut contended: Option<f64> = None;
    for &p64 in &spec.threads {
        let p = usize::try_from(p64).map_err(|_| RunError::TooLarge(format!("{p64} threads")))?;
        let lanes = lanes(p, pairs, &spec.delay, seed);
        let subject = make(p)?;
        let at = Level::measure(&subject, p, window, warm, &lanes, SETTLE);
        subject.shutdown();
        let level = at?;
        let total = (p * pairs) as f64;
        let pairs_per_s = total / level.wall.as_secs_f64().max(1e-9);
        out.push(Measurement::at(Metric::PairsPerS, p64, pairs_per_s));
        out.push(Measurement::at(
            Metric::CallerCpuPerPair,
            p64,
            level.callers.as_nanos() as f64 / total,
        ));
        out.push(Measurement::at(
            Metric::CpuPerPair,
            p64,
            level.process.as_nanos() as f64 / total,
        ));
        out.push(Measurement::at(Metric::Pairs, p64, level.stopped as f64));
        out.push(Measurement::at(
            Metric::Parallelism,
            p64,
            level.callers.as_secs_f64() / level.wall.as_secs_f64().max(1e-9),
        ));
        if p >= 2 || spec.threads.len() == 1 {
            contended = Some(contended.map_or(pairs_per_s, |c| c.min(pairs_per_s)));
        }
        ctx.progress.inc(1);
    }
    if let Some(c) = contended {
        out.push(Measurement::new(Metric::ContendedPairsPerS, c));
    }
    Ok(out)
}

/// Thread `k`'s delays (stream `k + 1` of `seed`) and connection, for
/// `p` threads.
fn lanes(p: usize, pairs: usize, delay: &Dist, seed: u64) -> Arc<Vec<Lane>> {
    Arc::new(
        (0..p)
            .map(|k| {
                let mut rng = Rng::new(seed, k as u64 + 1);
                Lane {
                    delays: (0..pairs).map(|_| delay.sample(&mut rng)).collect(),
                    conn: Arc::new(Conn::default()),
                }
            })
            .collect(),
    )
}

/// One round of the contention loop on `subject` without the warm-up, the
/// settling pause or the CPU readings, for the criterion benches: `p`
/// threads, `pairs` each (delays from `delay`), started together; returns
/// the wall time from the start to the last thread's end.
///
/// # Errors
///
/// As [`run`].
pub fn round<S: Shared + ?Sized>(
    subject: &Arc<S>,
    p: usize,
    pairs: usize,
    window: usize,
    delay: &Dist,
    seed: u64,
) -> Result<Duration, RunError> {
    let lanes = lanes(p, pairs, delay, seed);
    Level::measure(subject, p, window.max(1), 0, &lanes, Duration::ZERO).map(|l| l.wall)
}

/// What one P measured.
struct Level {
    wall: Duration,
    callers: Duration,
    process: Duration,
    stopped: u64,
}

impl Level {
    /// `p` threads on `subject`, each warming up with its first `warm`
    /// delays, then timed over all of them; the process's CPU is read
    /// `settle` after the last thread's end.
    fn measure<S: Shared + ?Sized>(
        subject: &Arc<S>,
        p: usize,
        window: usize,
        warm: usize,
        lanes: &Arc<Vec<Lane>>,
        settle: Duration,
    ) -> Result<Level, RunError> {
        let gate = Arc::new(Gate::new(p));
        let outcomes: Arc<Vec<OnceLock<Result<Outcome, RunError>>>> =
            Arc::new((0..p).map(|_| OnceLock::new()).collect());
        let body: Body = {
            let (s, gate, outcomes, lanes) = (
                subject.clone(),
                gate.clone(),
                outcomes.clone(),
                lanes.clone(),
            );
            Arc::new(move |k| {
                let lane = &lanes[k];
                let mut ring: Vec<Option<S::Handle>> = (0..window).map(|_| None).collect();
                let warmed = pass(&*s, &lane.delays[..warm], &mut ring, &lane.conn);
                let ready = gate.arrive();
                let r = warmed.and(ready).and_then(|_| {
                    let cpu0 = measure::cpu_thread();
                    let stopped = pass(&*s, &lane.delays, &mut ring, &lane.conn)?;
                    Ok(Outcome {
                        end: measure::now(),
                        cpu: measure::cpu_thread().saturating_sub(cpu0),
                        stopped,
                    })
                });
                let _ = outcomes[k].set(r);
            })
        };
        subject.run_threads(p, body)?;
        let ends: Vec<Outcome> = outcomes
            .iter()
            .enumerate()
            .map(|(k, o)| match o.get() {
                Some(Ok(o)) => Ok(*o),
                Some(Err(e)) => Err(RunError::Inconsistent(format!("thread {k} of {p}: {e}"))),
                None => Err(RunError::Inconsistent(format!(
                    "thread {k} of {p} never ran"
                ))),
            })
            .collect::<Result<_, _>>()?;
        if !settle.is_zero() {
            measure::sleep(settle);
        }
        let cpu1 = measure::cpu_process();
        let (t0, cpu0) = gate
            .start()
            .ok_or_else(|| RunError::Inconsistent("the threads never started".into()))?;
        let last = ends.iter().map(|o| o.end).max().unwrap_or(t0);
        let stopped: u64 = ends.iter().map(|o| o.stopped).sum();
        let fired: u64 = lanes.iter().map(|l| l.conn.timed_out()).sum();
        let expected: u64 = lanes.iter().map(|l| l.delays.len() as u64).sum();
        if stopped != expected || fired != 0 {
            return Err(RunError::Inconsistent(format!(
                "at P = {p}: {stopped} of {expected} cancels stopped their timeout and {fired} timeouts fired; expected all and none"
            )));
        }
        Ok(Level {
            wall: Duration::from_nanos(ns(t0, last)),
            callers: ends.iter().map(|o| o.cpu).sum(),
            process: cpu1.saturating_sub(cpu0),
            stopped,
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_request_is_an_id_and_a_pointer() {
        assert_eq!(std::mem::size_of::<Request>(), 16);
        assert_eq!(std::mem::align_of::<Conn>(), 128);
    }

    /// A subject that keeps a count of live timeouts per handle and can be
    /// told to fail one cancel or let one timeout fire.
    #[derive(Default)]
    struct Counting {
        live: Mutex<std::collections::HashSet<(usize, u64)>>,
        next: AtomicU64,
        fail_cancel: bool,
    }

    impl Shared for Counting {
        type Handle = (usize, u64, Request);

        fn schedule(&self, _: Duration, r: Request) -> Result<Self::Handle, Refused> {
            let n = self.next.fetch_add(1, Relaxed) as usize;
            let key = (Arc::as_ptr(&r.conn) as usize, r.id());
            self.live.lock().unwrap().insert(key);
            Ok((n, r.id(), r))
        }

        fn cancel(&self, (n, _, r): Self::Handle) -> bool {
            let key = (Arc::as_ptr(&r.conn) as usize, r.id());
            let was = self.live.lock().unwrap().remove(&key);
            // The 31st timeout: in the timed pass (the warm-up sets 10).
            if self.fail_cancel && n == 30 {
                r.timed_out();
                return false;
            }
            was
        }
    }

    fn spec(threads: &[u64], pairs: u64) -> Contention {
        Contention {
            threads: threads.to_vec(),
            pairs,
            window: 10,
            delay: crate::random::Dist::Fixed {
                value: crate::spec::Dur(Duration::from_secs(10)),
            },
            warm: 5,
        }
    }

    fn get(out: &[Measurement], m: Metric, size: Option<u64>) -> Option<f64> {
        out.iter()
            .find(|x| x.metric == m && x.size == size)
            .map(|x| x.value)
    }

    #[test]
    fn every_pair_is_counted_at_every_thread_count() {
        let subject = Arc::new(Counting::default());
        let s = subject.clone();
        let out = run(
            &move |_| Ok(s.clone()),
            &spec(&[1, 3], 100),
            1,
            &RunContext::quiet(0.0),
        )
        .unwrap();
        for p in [1u64, 3] {
            assert_eq!(get(&out, Metric::Pairs, Some(p)), Some(100.0 * p as f64));
            assert!(get(&out, Metric::PairsPerS, Some(p)).unwrap() > 0.0);
            assert!(get(&out, Metric::CpuPerPair, Some(p)).is_some());
            assert!(get(&out, Metric::CallerCpuPerPair, Some(p)).is_some());
            let busy = get(&out, Metric::Parallelism, Some(p)).unwrap();
            assert!(busy > 0.0 && busy <= p as f64 * 1.05, "{busy} at P = {p}");
        }
        // The contended figure is the P = 3 one (the only P ≥ 2).
        assert_eq!(
            get(&out, Metric::ContendedPairsPerS, None),
            get(&out, Metric::PairsPerS, Some(3))
        );
        assert!(
            subject.live.lock().unwrap().is_empty(),
            "every timeout cleared"
        );
    }

    #[test]
    fn a_cancel_that_did_not_stop_its_timeout_fails_the_run() {
        let s = Arc::new(Counting {
            fail_cancel: true,
            ..Counting::default()
        });
        let e = run(
            &move |_| Ok(s.clone()),
            &spec(&[2], 50),
            1,
            &RunContext::quiet(0.0),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("99 of 100 cancels stopped their timeout and 1 timeouts fired"),
            "{e}"
        );
    }
}
