//! CPU-heavy scheduled work on the application's rayon pool: the timer
//! decides when, rayon's threads do the work, so a long computation never
//! holds up the timer thread (or needs threads of its own).
//!
//! ```text
//! cargo run -p schedulers --example rayon_tasks
//! ```

use std::sync::Arc;
use std::time::Duration;

use schedulers::{Executor, HierarchicalWheelTimer, Scheduler, SchedulerExt};

/// Something worth a core: the number of primes below `n`.
fn primes_below(n: u64) -> usize {
    (2..n)
        .filter(|&k| (2..).take_while(|d| d * d <= k).all(|d| k % d != 0))
        .count()
}

fn main() -> Result<(), schedulers::Error> {
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("compute-{i}"))
            .build()
            .expect("a rayon pool"),
    );
    let timer = HierarchicalWheelTimer::builder()
        .executor(Executor::rayon(pool.clone()))
        .build()?;
    // Four reports due at once: they run in parallel on the rayon pool.
    let reports: Vec<_> = [20_000u64, 30_000, 40_000, 50_000]
        .into_iter()
        .map(|n| {
            timer
                .schedule(Duration::from_millis(2), move || (n, primes_below(n)))
                .expect("the timer runs")
        })
        .collect();
    for report in reports {
        let (n, count) = report.get().expect("the report ran");
        println!("{count} primes below {n}");
    }
    // The same pool keeps serving the application's own parallel work.
    let total: usize = pool.install(|| primes_below(1_000));
    assert_eq!(total, 168);
    timer.shutdown();
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
