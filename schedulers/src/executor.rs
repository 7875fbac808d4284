//! Where expired tasks run: inline on the timer thread, or on a worker pool.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::AcqRel, Ordering::Acquire};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::clock::{lock, Clock};

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
/// let pool = Executor::pool(4);
/// assert!(!pool.is_inline());
/// assert!(Executor::inline().is_inline());
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

    /// Runs tasks on `threads` worker threads (at least one), named
    /// `schedulers-worker-N`.
    ///
    /// # Panics
    ///
    /// Panics if the operating system refuses to create a thread, as
    /// `std::thread::spawn` does.
    pub fn pool(threads: usize) -> Executor {
        let threads = threads.max(1);
        let (sender, receiver) = unbounded::<Work>();
        let shared = Arc::new(PoolShared {
            active: AtomicUsize::new(0),
            clocks: Mutex::new(Vec::new()),
        });
        for i in 0..threads {
            let receiver: Receiver<Work> = receiver.clone();
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("schedulers-worker-{i}"))
                .spawn(move || {
                    for work in receiver.iter() {
                        work();
                        shared.done();
                    }
                })
                .expect("failed to spawn an executor worker thread");
        }
        Executor {
            kind: Kind::Pool(Arc::new(Pool {
                sender,
                shared,
                threads,
            })),
        }
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

    /// Runs `work` here or hands it to the pool.
    pub(crate) fn execute(&self, work: impl FnOnce() + Send + 'static) {
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
