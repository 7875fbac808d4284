//! Awaiting a timer from async code: a `ScheduledFuture` is a `Future`,
//! woken by the scheduler's thread, so it works on tokio (or any runtime)
//! without `spawn_blocking`. Here a request races its deadline.
//!
//! ```text
//! cargo run -p schedulers --example tokio_await
//! ```

use std::time::Duration;

use schedulers::{HashedWheelTimer, Scheduler, SchedulerExt};

async fn slow_request() -> &'static str {
    tokio::task::yield_now().await;
    "response"
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), schedulers::Error> {
    let timer = HashedWheelTimer::new()?;
    // A value computed on the timer's thread, awaited here.
    let greeting = timer.schedule(Duration::from_millis(5), || "hello from the wheel");
    println!(
        "{}",
        greeting.expect("the timer runs").await.expect("it ran")
    );

    // A deadline for a request: whichever finishes first wins.
    let deadline = timer
        .schedule(Duration::from_secs(1), || ())
        .expect("the timer runs");
    let cancel_deadline = deadline.handle().clone().cancel_on_drop();
    tokio::select! {
        reply = slow_request() => println!("got {reply} in time"),
        _ = deadline => println!("timed out"),
    }
    drop(cancel_deadline); // the request finished first: no timeout left behind
    timer.shutdown();
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
