//! The Rust peers on the contention workload ([`crate::runner::contention`]),
//! each shared between threads the way its users share it:
//!
//! - `stp`, `stp-2`: `scheduled-thread-pool` is `Sync`; its users share
//!   one pool (`&ScheduledThreadPool`): `execute_after` and
//!   `JobHandle::cancel` from any thread, a binary heap under one mutex.
//!   Its cancel only sets a flag, so cancelled jobs stay in the heap until
//!   their deadline (the run holds up to P × pairs of them); it says nothing,
//!   so it counts as stopping the timeout, and a job that ran anyway would
//!   show as a fired timeout and fail the run.
//! - `tokio-timeout`: tokio's I/O threads are its runtime's workers, and a
//!   request timeout is a `Sleep` in the request's own task (what
//!   `tokio::time::timeout` holds), registered with the runtime's timer when
//!   first polled and removed from it when dropped. So: a multi-thread
//!   runtime with P workers, P tasks each running the loop on its worker,
//!   each timeout a `sleep(delay)` polled once with the task's own waker
//!   and dropped 1,000 requests later. The timeouts live in place in pinned
//!   places reused per thread (as a request's future holds its `Sleep`
//!   inline), so no allocation per timeout. Spawning a task per timeout
//!   from other threads (`Handle::spawn` + `abort`, the `tokio-sleep`
//!   subjects) is not how a request timeout is set; tokio 1.54's default
//!   timer is one wheel under one mutex (its sharded "alternative timer" is
//!   behind `tokio_unstable`).
//! - `nexus-mutex`: `nexus-timer`'s `Wheel` is single-threaded (`Send`, its
//!   handles `!Send`); users who must share it put it behind a `Mutex`.
//!   Every schedule and cancel takes the mutex; each thread keeps its own
//!   handles. A driver thread of its own polls the wheel
//!   (`poll_and_rebalance`) under the same mutex and sleeps until the
//!   wheel's next deadline on a condvar paired with it; a caller whose
//!   deadline comes before the driver's planned wake wakes it. (In this
//!   workload nothing falls due, so the driver sleeps: the figures are the
//!   mutex and the wheel.)
//! - `delay-queue-mutex`: tokio-util's `DelayQueue` behind a `Mutex`: the
//!   callers (each inside the queue's runtime context) `insert_at` and
//!   `try_remove` under the mutex; a driver task on a current-thread
//!   runtime on its own thread awaits `poll_expired` under the same mutex
//!   (the queue wakes it when an insert comes first; tokio's timer when the
//!   head is due).
//!
//! The in-process peers owned by one thread or task (`delay-queue`,
//! `nexus`) and tokio's spawned-task subjects (`tokio-sleep`,
//! `tokio-sleep-2w`) do not run this workload: [`CANNOT`] says why, and the
//! report carries it ([`notes`]).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use nexus_timer::{TimerHandle, Wheel};
use scheduled_thread_pool::{JobHandle, OnPoolDropBehavior, ScheduledThreadPool};
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::Notify;
use tokio::time::Sleep;
use tokio_util::time::delay_queue::{DelayQueue, Key};

use crate::record::SubjectKind;
use crate::runner::contention::{self, spawn_threads, Body, Request, Shared};
use crate::runner::{measure, Refused, RunError, Subject};

/// One line for the report: tokio.
pub const ABOUT_TOKIO: &str = "tokio 1.x: P tasks on a multi-thread runtime with P workers (the I/O threads), each request timeout a Sleep in the task (what tokio::time::timeout holds), polled once and dropped; contention workload only";

/// One line for the report: nexus-timer behind a mutex.
pub const ABOUT_NEXUS: &str = "nexus-timer 1.5 Wheel behind a Mutex, shared by the threads, polled by a driver thread of its own under the same mutex; contention workload only";

/// One line for the report: DelayQueue behind a mutex.
pub const ABOUT_DQ: &str = "tokio-util 0.7 DelayQueue behind a Mutex, shared by the threads, polled by a driver task on its own current-thread runtime under the same mutex; contention workload only";

/// The in-process subjects that do not run the contention workload, and
/// why (each a fact of its type or of how its users drive it).
pub const CANNOT: &[(&str, &str)] = &[
    (
        "delay-queue",
        "a DelayQueue is owned by one task (it is not Sync): threads share it only behind a lock, which is delay-queue-mutex",
    ),
    (
        "nexus",
        "nexus-timer's Wheel is single-threaded (its TimerHandle is !Send): threads share it only behind a lock, which is nexus-mutex",
    ),
    (
        "tokio-sleep",
        "a task spawned per timer from one application task: threads sharing tokio set request timeouts as Sleeps in their own tasks on the runtime's workers, which is tokio-timeout",
    ),
    (
        "tokio-sleep-2w",
        "a task spawned per timer on 2 fixed workers: threads sharing tokio are its P workers, each setting request timeouts as Sleeps in its own task, which is tokio-timeout",
    ),
    (
        "tokio-cron",
        "a cron scheduler: its jobs fire on calendar instants, not after a request's timeout (it runs the calendar workload only)",
    ),
];

/// The contention-only peers, for [`crate::peers::all`].
pub fn subjects() -> Vec<Subject> {
    vec![
        contention::only(
            "tokio-timeout",
            SubjectKind::Peer,
            ABOUT_TOKIO,
            contention::runner(|p| TokioTimeout::new(p).map(Arc::new)),
        ),
        contention::only(
            "nexus-mutex",
            SubjectKind::Peer,
            ABOUT_NEXUS,
            contention::runner(|_| NexusMutex::start().map(Arc::new)),
        ),
        contention::only(
            "delay-queue-mutex",
            SubjectKind::Peer,
            ABOUT_DQ,
            contention::runner(|_| DqMutex::start().map(Arc::new)),
        ),
    ]
}

/// `s`, able to run the contention workload too if it is one of the peers
/// shared as they are (`stp`, `stp-2`).
pub fn extend(s: Subject) -> Subject {
    let workers = match s.name {
        "stp" => 1,
        "stp-2" => 2,
        _ => return s,
    };
    contention::with(
        s,
        contention::runner(move |_| Ok(Arc::new(Stp::new(workers)))),
    )
}

/// What the reader should know about the subjects of `chosen` that ran no
/// contention workload: one note, naming each with its reason.
pub fn notes(chosen: &[&str]) -> Vec<String> {
    let why: Vec<String> = CANNOT
        .iter()
        .filter(|(name, _)| chosen.contains(name))
        .map(|(name, why)| format!("{name}: {why}"))
        .collect();
    if why.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "Not run on the contention workload (threads sharing one subject): {}.",
        why.join("; ")
    )]
}

fn started(what: &str, e: impl std::fmt::Display) -> RunError {
    RunError::Child(format!("cannot start {what}: {e}"))
}

/// `scheduled-thread-pool`, one pool shared by the threads.
struct Stp {
    /// Taken when the subject is dropped.
    pool: Option<ScheduledThreadPool>,
    /// Its workers' thread name prefix, unique to this pool.
    name: String,
}

impl Stp {
    fn new(workers: usize) -> Stp {
        static POOLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!(
            "stpc{}-",
            POOLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let pool = ScheduledThreadPool::builder()
            .num_threads(workers)
            .thread_name_pattern(&format!("{name}{{}}"))
            .on_drop_behavior(OnPoolDropBehavior::DiscardPendingScheduled)
            .build();
        Stp {
            pool: Some(pool),
            name,
        }
    }
}

/// The pool's drop only tells its workers to stop; the last one to go
/// frees the heap of cancelled jobs (up to P × pairs of them), in the
/// background. Waiting for them here keeps that work out of the next
/// measurement.
impl Drop for Stp {
    fn drop(&mut self) {
        drop(self.pool.take());
        let limit = measure::now() + Duration::from_secs(60);
        while threads_named(&self.name) > 0 && measure::now() < limit {
            measure::sleep(Duration::from_millis(1));
        }
    }
}

/// Threads of this process whose name starts with `prefix` (from
/// `/proc/self/task/*/comm`; 0 where that is unavailable).
fn threads_named(prefix: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .filter(|comm| comm.starts_with(prefix))
        .count()
}

impl Shared for Stp {
    type Handle = JobHandle;

    fn schedule(&self, delay: Duration, request: Request) -> Result<JobHandle, Refused> {
        let pool = self
            .pool
            .as_ref()
            .ok_or_else(|| Refused::because("the pool was dropped"))?;
        Ok(pool.execute_after(delay, move || request.timed_out()))
    }

    /// The crate's cancel is a flag and says nothing: counted as stopping
    /// the job (a job that runs anyway counts as a fired timeout).
    fn cancel(&self, handle: JobHandle) -> bool {
        handle.cancel();
        true
    }
}

/// tokio: P workers, a request timeout a `Sleep` in the worker's task.
struct TokioTimeout {
    rt: Mutex<Option<Runtime>>,
    handle: Handle,
}

/// A pinned place for one `Sleep`, reused from request to request.
type Place = Pin<Box<Option<Sleep>>>;

thread_local! {
    /// The waker of the task this worker runs (set around the loop), as a
    /// request's `timeout(..).await` registers it.
    static TASK_WAKER: std::cell::RefCell<Option<Waker>> = const { std::cell::RefCell::new(None) };
    /// This thread's free places.
    static PLACES: std::cell::RefCell<Vec<Place>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl TokioTimeout {
    fn new(p: usize) -> Result<TokioTimeout, RunError> {
        let rt = Builder::new_multi_thread()
            .worker_threads(p)
            .thread_name("tokio-timeout")
            .enable_time()
            .build()
            .map_err(|e| started("a tokio runtime", e))?;
        Ok(TokioTimeout {
            handle: rt.handle().clone(),
            rt: Mutex::new(Some(rt)),
        })
    }
}

impl Shared for TokioTimeout {
    type Handle = (Place, Request);

    fn schedule(&self, delay: Duration, request: Request) -> Result<Self::Handle, Refused> {
        let mut place = PLACES
            .with_borrow_mut(Vec::pop)
            .unwrap_or_else(|| Box::pin(None));
        place.set(Some(tokio::time::sleep(delay)));
        let polled = TASK_WAKER.with_borrow(|w| {
            let waker = w.as_ref().unwrap_or(Waker::noop());
            let mut cx = std::task::Context::from_waker(waker);
            place.as_mut().as_pin_mut().map(|s| s.poll(&mut cx))
        });
        match polled {
            Some(Poll::Pending) => Ok((place, request)),
            _ => Err(Refused::because("a timeout seconds away elapsed when set")),
        }
    }

    fn cancel(&self, (mut place, request): Self::Handle) -> bool {
        let live = place.as_ref().as_pin_ref().is_some_and(|s| !s.is_elapsed());
        place.set(None); // deregisters it from the runtime's timer
        PLACES.with_borrow_mut(|v| v.push(place));
        drop(request);
        live
    }

    fn run_threads(&self, p: usize, body: Body) -> Result<(), RunError> {
        let tasks: Vec<_> = (0..p)
            .map(|k| {
                let b = body.clone();
                self.handle.spawn(async move {
                    poll_fn(|cx| {
                        TASK_WAKER.set(Some(cx.waker().clone()));
                        b(k);
                        TASK_WAKER.set(None);
                        PLACES.with_borrow_mut(Vec::clear);
                        Poll::Ready(())
                    })
                    .await;
                })
            })
            .collect();
        self.handle.block_on(async {
            for t in tasks {
                t.await
                    .map_err(|e| RunError::Inconsistent(format!("a tokio task failed: {e}")))?;
            }
            Ok(())
        })
    }

    fn shutdown(&self) {
        let rt = self
            .rt
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(rt) = rt {
            rt.shutdown_timeout(Duration::from_secs(10));
        }
    }
}

/// The thread that drives a shared single-threaded structure, joined by
/// the subject's `shutdown`.
struct DriverThread(Mutex<Option<std::thread::JoinHandle<()>>>);

impl DriverThread {
    fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<DriverThread, RunError> {
        let t = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(f)
            .map_err(|e| started(name, e))?;
        Ok(DriverThread(Mutex::new(Some(t))))
    }

    /// Waits for it to end (once told to stop).
    fn join(&self) {
        let t = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

/// Where a shared single-threaded structure's driver stands.
struct Driven<Q> {
    q: Q,
    /// When the driver will next look (a caller with an earlier deadline
    /// wakes it).
    planned: Instant,
    stop: bool,
}

/// `nexus-timer` behind a mutex, with a driver thread.
struct NexusMutex {
    shared: Arc<(Mutex<Driven<Wheel<Request>>>, Condvar)>,
    driver: DriverThread,
}

/// The driver's longest sleep with nothing due (it looks again then).
const IDLE: Duration = Duration::from_secs(1);

/// Slab chunk size: the crate's documented example value (as `nexus`).
const CHUNK: usize = 4096;

impl NexusMutex {
    fn start() -> Result<NexusMutex, RunError> {
        let now = measure::now();
        let shared = Arc::new((
            Mutex::new(Driven {
                q: Wheel::unbounded(CHUNK, now),
                planned: now + IDLE,
                stop: false,
            }),
            Condvar::new(),
        ));
        let s = shared.clone();
        let driver = DriverThread::spawn("nexus-driver", move || nexus_driver(&s))?;
        Ok(NexusMutex { shared, driver })
    }
}

fn nexus_driver(shared: &(Mutex<Driven<Wheel<Request>>>, Condvar)) {
    let (lock, wake) = shared;
    let mut due = Vec::new();
    let mut g = lock.lock().unwrap_or_else(PoisonError::into_inner);
    while !g.stop {
        let now = measure::now();
        g.q.poll_and_rebalance(now, &mut due);
        if !due.is_empty() {
            drop(g);
            for r in due.drain(..) {
                r.timed_out();
            }
            g = lock.lock().unwrap_or_else(PoisonError::into_inner);
            continue;
        }
        g.planned = g.q.next_deadline().unwrap_or(now + IDLE).min(now + IDLE);
        let left = g.planned.saturating_duration_since(now);
        g = wake
            .wait_timeout(g, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

impl Shared for NexusMutex {
    type Handle = TimerHandle<Request>;

    fn schedule(&self, delay: Duration, request: Request) -> Result<Self::Handle, Refused> {
        let (lock, wake) = &*self.shared;
        let at = measure::now() + delay;
        let mut g = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let h = g.q.schedule(at, request);
        let sooner = at < g.planned;
        if sooner {
            g.planned = at;
        }
        drop(g);
        if sooner {
            wake.notify_one();
        }
        Ok(h)
    }

    fn cancel(&self, handle: Self::Handle) -> bool {
        let (lock, _) = &*self.shared;
        let request = lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .q
            .cancel(handle);
        request.is_some() // dropped here, outside the lock
    }

    fn shutdown(&self) {
        let (lock, wake) = &*self.shared;
        lock.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
        wake.notify_one();
        self.driver.join();
    }
}

/// tokio-util's `DelayQueue` behind a mutex, with a driver task.
struct DqMutex {
    q: Arc<Mutex<DelayQueue<Request>>>,
    /// The driver's runtime: callers enter it (a `DelayQueue` makes its
    /// timer in the runtime's context).
    handle: Handle,
    stop: Arc<Notify>,
    driver: DriverThread,
}

impl DqMutex {
    fn start() -> Result<DqMutex, RunError> {
        let rt = Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| started("a tokio runtime", e))?;
        let handle = rt.handle().clone();
        let q = Arc::new(Mutex::new(DelayQueue::new()));
        let stop = Arc::new(Notify::new());
        let (q2, stop2) = (q.clone(), stop.clone());
        let driver = DriverThread::spawn("delay-queue-driver", move || {
            rt.block_on(dq_driver(&q2, &stop2));
        })?;
        Ok(DqMutex {
            q,
            handle,
            stop,
            driver,
        })
    }
}

async fn dq_driver(q: &Mutex<DelayQueue<Request>>, stop: &Notify) {
    loop {
        let expired = tokio::select! {
            biased;
            () = stop.notified() => return,
            e = poll_fn(|cx| {
                let mut q = q.lock().unwrap_or_else(PoisonError::into_inner);
                match q.poll_expired(cx) {
                    // Empty: the queue keeps the waker and wakes it on the
                    // next insert.
                    Poll::Ready(None) => Poll::Pending,
                    other => other,
                }
            }) => e,
        };
        if let Some(e) = expired {
            e.into_inner().timed_out();
        }
    }
}

impl Shared for DqMutex {
    type Handle = Key;

    fn schedule(&self, delay: Duration, request: Request) -> Result<Key, Refused> {
        let at = tokio::time::Instant::now() + delay;
        let mut q = self.q.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(q.insert_at(request, at))
    }

    fn cancel(&self, key: Key) -> bool {
        let removed = self
            .q
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .try_remove(&key);
        removed.is_some() // dropped here, outside the lock
    }

    fn run_threads(&self, p: usize, body: Body) -> Result<(), RunError> {
        let handle = self.handle.clone();
        let inside: Body = Arc::new(move |k| {
            let _in = handle.enter();
            body(k);
        });
        spawn_threads(p, &inside)
    }

    fn shutdown(&self) {
        self.stop.notify_one();
        self.driver.join();
    }
}
