//! Where expired tasks run: inline on the timer thread, on a worker pool of
//! the crate's own, on a caller's rayon pool or tokio runtime, or through
//! any function.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::AcqRel, Ordering::Acquire};
use std::sync::{Arc, Mutex};

use crossbeam_channel::unbounded;

use crate::clock::{lock, Clock};
use crate::error::{Error, Setting};

/// Due work on its way to a thread: run it with [`Runnable::run`].
///
/// What [`Executor::from_fn`] hands its function: one runnable per task that
/// came due. The tasks due together are shared by their runnables: each
/// runs the next one no runnable has started, and goes on with the next
/// until none is left. So tasks behind a slow one go to the next runnable
/// that starts, and one thread that runs the runnables in turn runs all the
/// tasks with the first (the others find none left and return at once).
///
/// A task is claimed when its run starts, not before, so until then it can
/// still be cancelled, reset or abandoned (it is then passed over). A
/// `Runnable` dropped without being run (a runtime shutting down, say) runs
/// on the dropping thread instead: a task is never lost silently.
pub struct Runnable {
    work: Option<Box<dyn FnOnce() + Send>>,
    active: Arc<Active>,
}

impl Runnable {
    /// Runs the task on the calling thread (catching its panic, which its
    /// handle reports).
    pub fn run(mut self) {
        self.run_now();
    }

    fn run_now(&mut self) {
        if let Some(work) = self.work.take() {
            work();
            self.active.done();
        }
    }
}

impl Drop for Runnable {
    fn drop(&mut self) {
        self.run_now();
    }
}

impl fmt::Debug for Runnable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Runnable")
    }
}

/// Where a scheduler runs the tasks that come due.
///
/// - [`Executor::inline`]: on the scheduler's own thread, as `java.util.Timer`
///   and Netty's wheel do. Cheapest, but a slow task delays every later one.
/// - [`Executor::pool`]: on a fixed pool of worker threads, as Kafka's
///   `SystemTimer` does, so a slow task does not hold up the timer.
/// - `Executor::rayon` (feature `rayon`, on by default): on a caller's
///   `rayon::ThreadPool`, for CPU-heavy tasks.
/// - `Executor::tokio` (feature `tokio`): as blocking tasks on a tokio
///   runtime.
/// - [`Executor::from_fn`]: through any function that runs a [`Runnable`].
///
/// Whatever the executor, the contract holds: a task is claimed when a
/// thread starts it (so a task waiting for a busy executor can still be
/// cancelled), runs of a periodic task never overlap (the next run is
/// scheduled when the previous one ends), and a panic is reported on the
/// task's handle.
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
/// let custom = Executor::from_fn(|runnable| {
///     std::thread::spawn(move || runnable.run());
/// });
/// assert!(!custom.is_inline());
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Clone)]
pub struct Executor {
    kind: Kind,
}

type Spawn = Arc<dyn Fn(Runnable) + Send + Sync>;

#[derive(Clone)]
enum Kind {
    Inline,
    /// Every other kind: runnables go through a function, counted while out.
    Spawn {
        name: &'static str,
        spawn: Spawn,
        active: Arc<Active>,
    },
}

/// Jobs handed out and not yet finished, and the clocks to tell when the
/// count drops to zero (a virtual clock waits for that).
#[derive(Default)]
struct Active {
    count: AtomicUsize,
    clocks: Mutex<Vec<Arc<dyn Clock>>>,
}

impl Active {
    fn done(&self) {
        if self.count.fetch_sub(1, AcqRel) == 1 {
            for clock in lock(&self.clocks).iter() {
                clock.on_idle();
            }
        }
    }
}

impl Executor {
    /// Runs each task on the thread that found it due.
    pub fn inline() -> Executor {
        Executor { kind: Kind::Inline }
    }

    fn spawning(name: &'static str, spawn: Spawn) -> Executor {
        Executor {
            kind: Kind::Spawn {
                name,
                spawn,
                active: Arc::default(),
            },
        }
    }

    /// Runs tasks on `threads` worker threads of its own, named
    /// `schedulers-worker-N`, fed by one crossbeam channel.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_pool_size`](crate::Error::is_invalid_pool_size)
    /// if `threads` is zero; [`Error::is_thread_spawn`](crate::Error::is_thread_spawn)
    /// if the operating system refuses to start one (those already started
    /// exit).
    pub fn pool(threads: usize) -> Result<Executor, Error> {
        if threads == 0 {
            return Err(Error::invalid(
                Setting::PoolSize,
                "0 workers would never run a task",
            ));
        }
        let (sender, receiver) = unbounded::<Runnable>();
        for i in 0..threads {
            let receiver = receiver.clone();
            crate::builder::spawn(format!("schedulers-worker-{i}"), move || {
                receiver.iter().for_each(Runnable::run)
            })?;
        }
        Ok(Executor::spawning(
            "pool",
            // A crossbeam sender is shared between threads as it is: a
            // send takes no lock of ours.
            Arc::new(move |runnable: Runnable| {
                // The workers hold the receiver for as long as the
                // executor lives, so the send cannot fail.
                if let Err(returned) = sender.send(runnable) {
                    returned.into_inner().run();
                }
            }),
        ))
    }

    /// Runs tasks on a caller's rayon pool (`ThreadPool::spawn`), for
    /// CPU-heavy tasks that should share the application's compute threads.
    #[cfg(feature = "rayon")]
    pub fn rayon(pool: Arc<rayon::ThreadPool>) -> Executor {
        Executor::spawning(
            "rayon",
            Arc::new(move |runnable: Runnable| pool.spawn(move || runnable.run())),
        )
    }

    /// Runs tasks as blocking tasks on a tokio runtime
    /// (`Handle::spawn_blocking`), so they may block without stalling the
    /// runtime's workers.
    #[cfg(feature = "tokio")]
    pub fn tokio(handle: tokio::runtime::Handle) -> Executor {
        Executor::spawning(
            "tokio",
            Arc::new(move |runnable: Runnable| {
                drop(handle.spawn_blocking(move || runnable.run()));
            }),
        )
    }

    /// Runs tasks through `spawn`, which must run each [`Runnable`] once, on any
    /// thread, now or later. (Run now, on the timer thread, a task that
    /// advances a [`ManualClock`](crate::ManualClock) waits for itself: the
    /// clock waits until the executor has taken what came due.)
    pub fn from_fn(spawn: impl Fn(Runnable) + Send + Sync + 'static) -> Executor {
        Executor::spawning("fn", Arc::new(spawn))
    }

    /// True for [`Executor::inline`].
    pub fn is_inline(&self) -> bool {
        matches!(self.kind, Kind::Inline)
    }

    /// Lets a virtual clock know when this executor goes idle.
    pub(crate) fn bind(&self, clock: &Arc<dyn Clock>) {
        if let Kind::Spawn { active, .. } = &self.kind {
            lock(&active.clocks).push(clock.clone());
        }
    }

    /// Runs `work` here or hands it on.
    pub(crate) fn execute(&self, work: impl FnOnce() + Send + 'static) {
        match &self.kind {
            Kind::Inline => work(),
            Kind::Spawn { spawn, active, .. } => {
                active.count.fetch_add(1, AcqRel);
                spawn(Runnable {
                    work: Some(Box::new(work)),
                    active: active.clone(),
                });
            }
        }
    }

    /// True when no handed-off task is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        match &self.kind {
            Kind::Inline => true,
            Kind::Spawn { active, .. } => active.count.load(Acquire) == 0,
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
            Kind::Spawn { name, active, .. } => f
                .debug_struct("Executor")
                .field("kind", name)
                .field("active", &active.count.load(Acquire))
                .finish(),
        }
    }
}
