//! Calendar tasks on the system clock: a nightly backup at 02:30 in Berlin
//! (whose fire times the preview lists, across a daylight-saving change),
//! and a heartbeat every second by a Quartz expression that stops itself
//! after its third run. Quartz's `CronTrigger` pattern, on `HeapTimer`.
//!
//! ```text
//! cargo run -p schedulers --example calendar
//! ```

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedulers::calendar::jiff::Timestamp;
use schedulers::calendar::{Calendar, MissedRuns};
use schedulers::{HeapTimer, Scheduler, Task, TaskContext};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let timer = HeapTimer::builder().thread_name("calendar").build()?;

    // 02:30 does not exist in Berlin on the last Sunday of March: that
    // night's backup runs at 03:00, when summer time begins.
    let nightly = Calendar::parse_in("30 2 * * *", "Europe/Berlin")?;
    let from: Timestamp = "2025-03-28T12:00:00Z".parse()?;
    for fire in nightly.fire_times(from).take(4) {
        println!("backup at {}", fire.strftime("%a %F %T %Z"));
    }
    // After a night the machine slept through, one backup is enough.
    let backup = timer
        .submit(
            Duration::ZERO,
            Task::calendar(nightly, || println!("backing up")).missed_runs(MissedRuns::OnceNow)?,
        )
        .map_err(|rejected| rejected.into_error())?;
    println!("next backup in {:?}", backup.remaining());

    // Quartz's seconds field: every second, on the second.
    let beats = Arc::new(AtomicU32::new(0));
    let b = beats.clone();
    let heartbeat =
        Task::calendar_with(Calendar::parse("* * * * * ?")?, move |run: &TaskContext| {
            if b.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                run.stop();
            }
        });
    let heartbeat = timer
        .submit(Duration::ZERO, heartbeat)
        .map_err(|rejected| rejected.into_error())?;
    heartbeat.wait()?; // about three seconds: on the next three seconds
    println!("{} heartbeats", beats.load(Ordering::SeqCst));
    assert_eq!(beats.load(Ordering::SeqCst), 3);

    assert!(backup.cancel());
    timer.shutdown();
    assert!(timer.await_termination(Duration::from_secs(10)));
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
