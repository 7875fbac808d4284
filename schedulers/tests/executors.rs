//! Every kind of executor through the whole conformance suite, on the
//! hashed wheel: a caller's rayon pool, a tokio runtime's blocking pool and
//! a function that feeds a thread of its own. Each runs one task at a time,
//! so that the start order the FIFO case observes is the dispatch order.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schedulers::{Executor, HashedWheelTimer, Runnable};

fn wheel(o: crate::conformance::Opts, executor: Executor) -> Box<dyn schedulers::Scheduler> {
    let mut b = HashedWheelTimer::builder()
        .clock(o.clock)
        .run_figures(o.run_figures)
        .shutdown_policy(o.shutdown_policy)
        .wheel_size(64)
        .executor(executor);
    if let Some(limit) = o.pending_limit {
        b = b.pending_limit(limit);
    }
    Box::new(b.build().unwrap())
}

fn rayon_pool() -> Arc<rayon::ThreadPool> {
    static POOL: OnceLock<Arc<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build();
        Arc::new(pool.expect("a one-thread rayon pool"))
    })
    .clone()
}

fn tokio_runtime() -> tokio::runtime::Handle {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(1)
                .build();
            rt.expect("a tokio runtime")
        })
        .handle()
        .clone()
}

/// A function feeding one thread of its own through a channel.
fn one_thread() -> Executor {
    let (tx, rx) = crossbeam_channel::unbounded::<Runnable>();
    std::thread::spawn(move || rx.iter().for_each(Runnable::run));
    let tx = std::sync::Mutex::new(tx);
    Executor::from_fn(move |job| {
        let _ = tx.lock().unwrap().send(job);
    })
}

crate::conformance!(on_rayon, Duration::ZERO, |o| wheel(
    o,
    Executor::rayon(rayon_pool())
));

crate::conformance!(on_tokio, Duration::ZERO, |o| wheel(
    o,
    Executor::tokio(tokio_runtime())
));

crate::conformance!(from_fn, Duration::ZERO, |o| wheel(o, one_thread()));

// A function that runs each task at once, on the timer thread that hands
// it over ("now", as `from_fn` allows; the timer thread hands tasks over
// with its lock released, or this would deadlock). Without the cases that
// advance a virtual clock from inside a task: that waits for the executor
// to take what came due, and here the executor is the waiting thread.
crate::conformance_multi_worker!(from_fn_at_once, Duration::ZERO, |o| wheel(
    o,
    Executor::from_fn(Runnable::run)
));

/// Tasks due together go to the executor as one batch, a job per task, each
/// job taking the next task no job has started: a task behind one that
/// blocks runs on the executor's other thread.
#[test]
fn a_task_handed_over_behind_a_blocked_one_runs_on_another_thread() {
    let clock = schedulers::ManualClock::new();
    let wheel = HashedWheelTimer::builder()
        .clock(clock.clone())
        .executor(Executor::pool(2).unwrap())
        .build()
        .unwrap();
    crate::conformance::tasks_behind_a_blocked_one_run_on_another_thread(&wheel, clock);
}
