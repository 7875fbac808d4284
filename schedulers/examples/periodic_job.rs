//! A periodic job with a fixed delay between runs (a cache refresh that must
//! never overlap itself), stopped by a graceful shutdown: the JDK
//! `ScheduledExecutorService` pattern, on `ScheduledThreadPool`.
//!
//! ```text
//! cargo run -p schedulers --example periodic_job
//! ```

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedulers::{ScheduledThreadPool, Scheduler, SchedulerExt};

fn main() -> Result<(), schedulers::Error> {
    let pool = ScheduledThreadPool::builder()
        .pool_size(2)
        .thread_name("jobs")
        .build()?;
    let refreshes = Arc::new(AtomicU32::new(0));
    let r = refreshes.clone();
    // First run at once, then 5 ms after the end of each run: a slow
    // refresh pushes the next one back instead of piling runs up.
    let refresh = pool
        .schedule_with_fixed_delay(Duration::ZERO, Duration::from_millis(5), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .expect("the pool runs");
    // A one-shot that is still pending at shutdown.
    let report = pool
        .schedule(Duration::from_millis(30), || "final report")
        .expect("the pool runs");

    while refreshes.load(Ordering::SeqCst) < 3 {
        std::thread::yield_now();
    }
    // Graceful shutdown: no new work; the periodic job stops after its
    // current run; the pending one-shot still runs (the default policy).
    pool.shutdown();
    assert!(pool
        .submit(Duration::ZERO, schedulers::Task::once(|| ()))
        .is_err());
    println!(
        "{}",
        report.get().expect("pending one-shots run after shutdown")
    );
    assert!(pool.await_termination(Duration::from_secs(10)));
    assert!(refresh.is_cancelled(), "periodic tasks stop at shutdown");
    println!("refreshed {} times", refreshes.load(Ordering::SeqCst));
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
