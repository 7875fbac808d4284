//! Choosing the scheduler at run time (from configuration) behind
//! `Box<dyn Scheduler>`: the rest of the program is written once against
//! the trait.
//!
//! ```text
//! cargo run -p schedulers --example pick_at_runtime -- wheel
//! ```

use std::time::Duration;

use schedulers::{
    HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool, Scheduler,
    SchedulerExt,
};

/// Builds the scheduler a configuration names.
fn scheduler(name: &str) -> Result<Option<Box<dyn Scheduler>>, schedulers::Error> {
    Ok(Some(match name {
        "heap" => Box::new(HeapTimer::new()?),
        "pool" => Box::new(ScheduledThreadPool::new(4)?),
        "wheel" => Box::new(HashedWheelTimer::new()?),
        "hierarchical" => Box::new(HierarchicalWheelTimer::new()?),
        _ => return Ok(None),
    }))
}

/// The program's own code: it does not care which algorithm runs it.
fn work(timer: &dyn Scheduler) -> u32 {
    let answer = timer
        .schedule(Duration::from_millis(2), || 40 + 2)
        .expect("running");
    let tick = timer
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), || {})
        .expect("running");
    let value = answer.get().expect("it ran");
    assert!(tick.cancel());
    value
}

const ALL: [&str; 4] = ["heap", "pool", "wheel", "hierarchical"];

fn main() -> Result<(), schedulers::Error> {
    match std::env::args().nth(1) {
        Some(name) => run(&[name.as_str()]),
        None => run(&ALL),
    }
}

fn run(names: &[&str]) -> Result<(), schedulers::Error> {
    for name in names {
        let Some(timer) = scheduler(name)? else {
            eprintln!("unknown scheduler {name:?}: heap, pool, wheel or hierarchical");
            std::process::exit(2);
        };
        println!("{name}: {} ({:?})", work(timer.as_ref()), timer.metrics());
        timer.shutdown();
        assert!(timer.await_termination(Duration::from_secs(10)));
    }
    Ok(())
}

/// Every scheduler (not `main`: the test harness's own arguments, such as
/// `--quiet`, are no scheduler's name).
#[test]
fn runs() {
    run(&ALL).unwrap();
}
