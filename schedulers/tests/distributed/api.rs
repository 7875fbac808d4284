//! The client API and an in-process worker against a real server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers::distributed::{
    AckOutcome, CancelOutcome, Config, DistError, Job, JobInfo, JobState, RedisScheduler, Worker,
    WorkerEvent,
};

use super::{server, wait_until};

fn config(ns: &str) -> Config {
    Config::default()
        .namespace(ns)
        .shards(4)
        .slice(Duration::from_millis(500))
}

#[test]
fn schedule_inspect_cancel_and_typed_errors() {
    let Some(redis) = server() else { return };
    let s = RedisScheduler::connect(&redis.url(), config("api")).unwrap();
    let now = s.now_ms().unwrap();
    let due = s
        .schedule_after(
            "a",
            "noop",
            &serde_json::json!({"x": 1}),
            Duration::from_secs(60),
        )
        .unwrap();
    assert!(
        due >= now + 60_000 && due < now + 65_000,
        "due {due} now {now}"
    );
    match s.inspect("a").unwrap() {
        Some(JobInfo::Live {
            kind,
            payload,
            state,
            due_ms,
            period_ms,
            attempt,
            fence,
            ..
        }) => {
            assert_eq!((kind.as_str(), payload.as_str()), ("noop", r#"{"x":1}"#));
            assert_eq!(
                (state, due_ms, period_ms, attempt, fence),
                (JobState::Scheduled, due, 0, 0, 0)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(s.schedule_after("a", "noop", &(), Duration::ZERO), Err(DistError::AlreadyScheduled(id)) if id == "a")
    );
    assert_eq!(s.cancel("a").unwrap(), CancelOutcome::Cancelled);
    assert_eq!(s.cancel("a").unwrap(), CancelOutcome::AlreadyGone);
    assert!(matches!(
        s.inspect("a").unwrap(),
        Some(JobInfo::Tombstone { .. })
    ));
    assert!(matches!(
        s.schedule_after("a", "noop", &(), Duration::ZERO),
        Err(DistError::Tombstoned(_))
    ));
    assert_eq!(s.cancel("never").unwrap(), CancelOutcome::NotFound);
    assert_eq!(s.inspect("never").unwrap(), None);

    assert!(matches!(Job::new("", "k"), Err(DistError::InvalidId(_))));
    assert!(matches!(
        Job::new("x".repeat(513), "k"),
        Err(DistError::InvalidId(_))
    ));
    assert!(matches!(Job::new("ok", ""), Err(DistError::InvalidId(_))));
    assert!(matches!(
        s.schedule_at_fixed_rate("p", "k", &(), Duration::ZERO, Duration::ZERO),
        Err(DistError::ZeroPeriod)
    ));
    assert!(matches!(
        s.schedule_after("big", "k", &(), Duration::MAX),
        Err(DistError::DelayOverflow)
    ));
    assert!(matches!(
        s.schedule_at("neg", "k", &(), -5),
        Err(DistError::DelayOverflow)
    ));
    assert!(matches!(
        RedisScheduler::connect(&redis.url(), Config::default().shards(0)),
        Err(DistError::InvalidConfig(_))
    ));
    assert!(matches!(
        RedisScheduler::connect(&redis.url(), Config::default().namespace("a{b}")),
        Err(DistError::InvalidConfig(_))
    ));
    assert!(matches!(
        Worker::builder(&redis.url(), config("api"))
            .threads(0)
            .start(),
        Err(DistError::InvalidConfig(_))
    ));
    assert!(matches!(
        Worker::builder(&redis.url(), config("api"))
            .lease(Duration::from_millis(10))
            .heartbeat(Duration::from_millis(10))
            .start(),
        Err(DistError::InvalidConfig(_))
    ));
}

#[test]
fn scripts_are_reloaded_after_script_flush() {
    let Some(redis) = server() else { return };
    let s = RedisScheduler::connect(&redis.url(), config("flush")).unwrap();
    s.schedule_after("a", "noop", &(), Duration::from_secs(60))
        .unwrap();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    // EVALSHA now answers NOSCRIPT; the client loads the script and retries.
    s.schedule_after("b", "noop", &(), Duration::from_secs(60))
        .unwrap();
    assert_eq!(s.cancel("a").unwrap(), CancelOutcome::Cancelled);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    let batch: Vec<Job> = (0..3)
        .map(|i| Job::new(format!("m{i}"), "noop").unwrap())
        .collect();
    assert!(s.schedule_many(&batch).unwrap().iter().all(Result::is_ok));
}

type Log = Arc<Mutex<Vec<WorkerEvent>>>;

fn worker(url: &str, ns: &str, log: &Log) -> schedulers::distributed::WorkerBuilder {
    let log = log.clone();
    Worker::builder(url, config(ns))
        .threads(2)
        .lease(Duration::from_millis(600))
        .poll_interval(Duration::from_millis(10))
        .backoff(Duration::from_millis(10), Duration::from_millis(40))
        .on_event(move |e| log.lock().unwrap().push(e.clone()))
}

fn finished(log: &Log, id: &str) -> Vec<AckOutcome> {
    log.lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Finished { fire, outcome, .. } if fire.id == id => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn failures_retry_with_backoff_then_dead_letter() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let w = worker(&redis.url(), "retry", &log)
        .max_attempts(3)
        .handler("flaky", move |f| {
            assert_eq!(f.fire_id(), format!("{}:{}", f.id, f.due_ms));
            if c.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("first attempt panics");
            }
            Ok(())
        })
        .handler("bad", |_| Err("always".into()))
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("retry")).unwrap();
    s.schedule_after("flaky", "flaky", &(), Duration::ZERO)
        .unwrap();
    s.schedule_after("bad", "bad", &(), Duration::ZERO).unwrap();
    s.schedule_after("orphan", "nobody-handles-this", &(), Duration::ZERO)
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || finished(
        &log, "flaky"
    )
    .contains(&AckOutcome::Done)));
    assert_eq!(
        finished(&log, "flaky"),
        [AckOutcome::Retry, AckOutcome::Done]
    );
    assert!(wait_until(Duration::from_secs(10), || s
        .dead_letters()
        .unwrap()
        .len()
        == 2));
    assert_eq!(
        finished(&log, "bad"),
        [AckOutcome::Retry, AckOutcome::Retry, AckOutcome::Dead]
    );
    match s.inspect("bad").unwrap() {
        Some(JobInfo::Live {
            state: JobState::Dead,
            attempt: 3,
            last_error: Some(e),
            ..
        }) => assert_eq!(e, "always"),
        other => panic!("{other:?}"),
    }
    // A dead job can be cancelled (removed); its id is then a tombstone.
    assert_eq!(s.cancel("bad").unwrap(), CancelOutcome::Cancelled);
    assert_eq!(s.dead_letters().unwrap().len(), 1);
    w.shutdown();
    w.join();
}

#[test]
fn periodic_job_keeps_its_grid_and_cancel_in_flight_is_the_last_run() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let w = worker(&redis.url(), "periodic", &log)
        .handler("tick", move |_| {
            // The fourth run is slow, so the cancel lands while it is in flight.
            if r.fetch_add(1, Ordering::SeqCst) == 3 {
                std::thread::sleep(Duration::from_millis(300));
            }
            Ok(())
        })
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("periodic")).unwrap();
    let first = s
        .schedule_at_fixed_rate(
            "t",
            "tick",
            &(),
            Duration::from_millis(50),
            Duration::from_millis(50),
        )
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || runs
        .load(Ordering::SeqCst)
        == 4));
    assert_eq!(s.cancel("t").unwrap(), CancelOutcome::InFlight);
    assert!(matches!(
        s.inspect("t").unwrap(),
        Some(JobInfo::Live {
            cancel_requested: true,
            ..
        })
    ));
    assert!(wait_until(Duration::from_secs(10), || finished(&log, "t")
        .len()
        == 4));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(runs.load(Ordering::SeqCst), 4, "no run after the cancel");
    assert!(matches!(
        s.inspect("t").unwrap(),
        Some(JobInfo::Tombstone { .. })
    ));
    let outcomes = finished(&log, "t");
    assert_eq!(outcomes[3], AckOutcome::Done);
    let dues: Vec<i64> = log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Started { fire, .. } => Some(fire.due_ms),
            _ => None,
        })
        .collect();
    assert_eq!(
        dues,
        (0..4).map(|k| first + 50 * k).collect::<Vec<_>>(),
        "fires on the grid"
    );
    w.shutdown();
    w.join();
}

#[test]
fn graceful_shutdown_finishes_the_running_job() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let w = worker(&redis.url(), "shutdown", &log)
        .handler("slow", |_| {
            std::thread::sleep(Duration::from_millis(400));
            Ok(())
        })
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("shutdown")).unwrap();
    s.schedule_after("slow", "slow", &(), Duration::ZERO)
        .unwrap();
    // Wait until the handler runs (a claimed job not yet started would be
    // released at shutdown instead).
    assert!(wait_until(Duration::from_secs(10), || {
        log.lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, WorkerEvent::Started { .. }))
    }));
    assert_eq!(w.in_flight(), 1);
    w.shutdown();
    w.join();
    assert_eq!(finished(&log, "slow"), [AckOutcome::Done]);
    assert!(matches!(
        s.inspect("slow").unwrap(),
        Some(JobInfo::Tombstone { .. })
    ));
    // A worker that is shut down claims nothing more.
    s.schedule_after("later", "slow", &(), Duration::ZERO)
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(matches!(
        s.inspect("later").unwrap(),
        Some(JobInfo::Live {
            state: JobState::Scheduled,
            ..
        })
    ));
}
