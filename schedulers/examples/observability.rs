//! What a scheduler knows about itself, three ways: its own snapshot
//! (`Scheduler::metrics`), the `metrics` facade (here a recorder that
//! keeps what it is given; in production, the Prometheus or OTLP exporter
//! the application already installs), and `tracing` spans (here, the
//! panic's event on stderr).
//!
//! An ack-timeout server in miniature: named one-shot timeouts, most of them
//! cancelled when the ack comes, a named heartbeat, and a task that panics.
//!
//! Run with `cargo run --example observability --features metrics,tracing`.

use std::error::Error;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use schedulers::{observe, HashedWheelTimer, Scheduler, SchedulerExt, Task};

fn main() -> Result<(), Box<dyn Error>> {
    // The recorder first: a scheduler registers its series when it is built.
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install()?;
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(std::io::stderr)
        .init();

    let timer = HashedWheelTimer::builder()
        .thread_name("acks")
        .tick(Duration::from_millis(1))
        .build()?;

    // 100 requests wait for their acks; 90 acks come in time.
    let timeouts: Vec<_> = (0..100u64)
        .map(|i| {
            let task = Task::once(move || i).named("ack-timeout");
            timer.submit(Duration::from_millis(5 + i % 10), task)
        })
        .collect::<Result<_, _>>()?;
    for handle in &timeouts[..90] {
        assert!(handle.cancel());
    }
    let heartbeat = Task::fixed_rate(Duration::from_millis(2), || ())?.named("heartbeat");
    let heartbeat = timer.submit(Duration::ZERO, heartbeat)?;
    let broken = timer.submit(
        Duration::from_millis(1),
        Task::once(|| panic!("no route to host")).named("reconnect"),
    )?;
    let answer = timer.schedule(Duration::from_millis(3), || 42)?;

    for handle in &timeouts[90..] {
        handle.wait()?;
    }
    let error = broken.wait().expect_err("it panicked");
    assert_eq!(error.task_name(), Some("reconnect"));
    assert_eq!(answer.get()?, 42);
    assert!(heartbeat.cancel());
    // A run under way when it was cancelled ends first.
    assert!(heartbeat.wait().expect_err("cancelled").is_cancelled());

    // The scheduler's own snapshot (this call also publishes the pending
    // gauges and the cancel counter to the facade).
    let m = timer.metrics();
    println!(
        "pending {} ({:?}), fired {}, cancelled {}, rejected {}, panicked {}, wake-ups {}",
        m.pending, m.pending_by_kind, m.fired, m.cancelled, m.rejected, m.panicked, m.wakeups
    );
    println!("lateness {:?}", m.lateness);
    println!("run time {:?}", m.run_time);
    for named in &m.by_name {
        println!(
            "  {:<12} fired {:>3}, panicked {}, lateness p99 {:?}",
            named.name.as_deref().unwrap_or(observe::OTHER),
            named.fired,
            named.panicked,
            named.lateness.quantile(0.99).unwrap_or_default()
        );
    }
    assert_eq!((m.cancelled, m.panicked, m.pending), (91, 1, 0));
    assert_eq!(m.lateness.count(), m.fired);

    // What the exporter got: the same figures, by name and labels.
    let mut runs = 0;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={:?}", l.key(), l.value()))
            .collect();
        let value = match value {
            DebugValue::Counter(n) => {
                if key.name() == observe::RUNS {
                    runs += n;
                }
                n.to_string()
            }
            DebugValue::Gauge(g) => g.to_string(),
            DebugValue::Histogram(values) => format!("{} values", values.len()),
        };
        println!("{}{{{}}} {value}", key.name(), labels.join(","));
    }
    assert_eq!(runs, m.fired, "the facade counted every run once");
    Ok(())
}

#[test]
fn runs() {
    main().unwrap();
}
