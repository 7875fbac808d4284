//! When the operating system refuses a thread, building a scheduler (or a
//! pool) fails with `Error::is_thread_spawn` instead of panicking, and a
//! `ScheduledThreadPool`, whose workers start with the tasks, refuses the
//! task rather than queue one that no thread would run.
//!
//! Threads are made to fail in a child process: this binary runs itself
//! with `RUST_MIN_STACK` set far beyond any address space, so every
//! `std::thread` spawn there fails (EAGAIN or ENOMEM). It has its own `main`
//! (no test harness), since the harness itself would need threads.

use std::process::{Command, ExitCode};
use std::time::Duration;

use schedulers::{
    Error, Executor, HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool,
    Scheduler, SchedulerExt,
};

const CHILD: &str = "SCHEDULERS_SPAWN_FAILURE_CHILD";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let out = Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD, "1")
        .env("RUST_MIN_STACK", (1u64 << 50).to_string())
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() && stdout.contains("all refused with a typed error") {
        println!("spawn_failure: ok");
        ExitCode::SUCCESS
    } else {
        println!("spawn_failure: FAILED ({})", out.status);
        ExitCode::FAILURE
    }
}

/// In the child, where no thread can start.
fn child() -> ExitCode {
    if std::thread::Builder::new().spawn(|| ()).is_ok() {
        println!("the child could start a thread: the test cannot run");
        return ExitCode::FAILURE;
    }
    let mut failed = false;
    let mut expect = |what: &str, result: Result<(), Error>| match result {
        Err(e) if e.is_thread_spawn() => println!("{what}: {e}"),
        other => {
            println!("{what}: expected a thread-spawn error, got {other:?}");
            failed = true;
        }
    };
    expect("HeapTimer", HeapTimer::new().map(drop));
    expect("HashedWheelTimer", HashedWheelTimer::new().map(drop));
    expect(
        "HierarchicalWheelTimer",
        HierarchicalWheelTimer::new().map(drop),
    );
    expect(
        "HierarchicalWheelTimer inline",
        HierarchicalWheelTimer::builder()
            .executor(Executor::inline())
            .build()
            .map(drop),
    );
    expect("Executor::pool", Executor::pool(2).map(drop));
    let pool = ScheduledThreadPool::new(2).expect("no thread starts before the first task");
    expect(
        "ScheduledThreadPool::schedule",
        pool.schedule(Duration::from_millis(1), || ())
            .map(drop)
            .map_err(|rejected| {
                let error = rejected.error().clone();
                assert!(rejected.into_task().is_some(), "the task comes back");
                error
            }),
    );
    let m = pool.metrics();
    if m.pending != 0 || pool.queue_len() != 0 {
        println!(
            "the refused task was kept: {m:?}, {} queued",
            pool.queue_len()
        );
        failed = true;
    }
    pool.shutdown();
    if !pool.await_termination(Duration::from_secs(10)) {
        println!("the pool did not terminate");
        failed = true;
    }
    if failed {
        return ExitCode::FAILURE;
    }
    println!("all refused with a typed error");
    ExitCode::SUCCESS
}
