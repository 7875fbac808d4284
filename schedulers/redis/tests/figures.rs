//! What a worker knows about itself (`Worker::metrics`), against a real
//! server: runs, failures, panics and skips by job kind, and lateness on
//! Redis's clock within bounds the schedule sets (the jobs were due a known
//! time before Redis's clock was read).

use std::time::Duration;

use schedulers_redis::calendar::MissedRuns;
use schedulers_redis::{Job, NamedMetrics, RedisScheduler, WorkerMetrics};

use crate::support::{config, server, wait_until, worker, Log};

fn kind<'a>(m: &'a WorkerMetrics, name: &str) -> &'a NamedMetrics {
    m.by_kind
        .iter()
        .find(|k| k.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no figures for {name:?}: {m:?}"))
}

#[test]
fn a_worker_counts_its_runs_lateness_and_run_time_by_kind() {
    #[cfg(feature = "metrics")]
    let snapshotter = recorder();
    let Some(redis) = server() else { return };
    let ns = "figures";
    let s = RedisScheduler::connect(&redis.url(), config(ns)).unwrap();
    let before = s.now_ms().unwrap();
    let job = |id: String, kind: &str, due: i64| Job::new(id, kind).unwrap().at_ms(due);
    let mut jobs: Vec<Job> = (0..5)
        .map(|i| job(format!("ok-{i}"), "ok", before - 3_000))
        .collect();
    jobs.push(job("fails".into(), "fails", before));
    jobs.push(job("panics".into(), "panics", before));
    // Due 10.5 s ago every second: its first claim passes over 11 fire
    // times (or more, if the claim comes later than half a second).
    let tick = Job::new("tick", "tick")
        .unwrap()
        .at_fixed_rate(Duration::ZERO, Duration::from_secs(1))
        .unwrap()
        .at_ms(before - 10_500)
        .missed_runs(MissedRuns::Skip);
    jobs.push(tick);
    assert!(s.schedule_many(&jobs).unwrap().iter().all(Result::is_ok));
    // Refused: an id taken (counted by the producer, under its kind).
    assert!(s.schedule(&job("ok-0".into(), "ok", before)).is_err());

    let log = Log::default();
    let w = worker(&redis.url(), ns, &log)
        .max_attempts(1)
        .handler("ok", |_| {
            std::thread::sleep(Duration::from_millis(20));
            Ok(())
        })
        .handler("fails", |_| Err("no such mailbox".into()))
        .handler("panics", |_| panic!("boom"))
        .handler("tick", |_| Ok(()))
        .start()
        .unwrap();
    let done = wait_until(Duration::from_secs(30), || {
        let m = w.metrics();
        m.fired >= 8 && m.skipped >= 11
    });
    let m = w.metrics();
    assert!(done, "{m:?}");
    let after = s.now_ms().unwrap();
    // The tick runs every second: a run of it may be in progress now, and
    // then that run is its last.
    let stopped = s.cancel("tick").unwrap();
    assert!(
        matches!(
            stopped,
            schedulers_redis::CancelOutcome::Cancelled | schedulers_redis::CancelOutcome::InFlight
        ),
        "{stopped:?}"
    );

    let ok = kind(&m, "ok");
    assert_eq!((ok.fired, ok.panicked), (5, 0));
    // Due 3 s before `before`, started before `after`.
    let late = |ms: i64| Duration::from_millis(ms as u64);
    assert!(
        ok.lateness.min().unwrap() >= late(3_000),
        "{:?}",
        ok.lateness
    );
    assert!(ok.lateness.max().unwrap() <= late(after - before + 3_000 + 1));
    assert!(ok.run_time.min().unwrap() >= Duration::from_millis(20));
    let fails = kind(&m, "fails");
    assert_eq!((fails.fired, fails.panicked), (1, 0));
    let panics = kind(&m, "panics");
    assert_eq!((panics.fired, panics.panicked), (1, 1));
    let tick = kind(&m, "tick");
    assert!(tick.skipped >= 11, "{tick:?}");
    assert!(tick.lateness.max().unwrap() <= late(after - before + 1));
    assert_eq!(m.fired, 5 + 1 + 1 + tick.fired);
    assert_eq!((m.failed, m.panicked, m.leases_lost), (2, 1, 0));
    assert_eq!(m.skipped, tick.skipped);
    assert_eq!(m.lateness.count(), m.fired);
    assert!(m.wakeups > 0);
    assert!(kind(&m, "ok").rejected == 0, "a worker refuses nothing");

    #[cfg(feature = "metrics")]
    {
        use metrics_util::debugging::DebugValue;
        use schedulers::observe;
        // One snapshot: it takes the counters' values (and zeroes them).
        let all = snapshotter.snapshot().into_vec();
        let count = |name: &str, task: &str| {
            all.iter()
                .find(|(k, ..)| {
                    let k = k.key();
                    k.name() == name && k.labels().any(|l| l.key() == "task" && l.value() == task)
                })
                .map(|(.., v)| match v {
                    DebugValue::Counter(n) => *n,
                    DebugValue::Histogram(v) => v.len() as u64,
                    DebugValue::Gauge(_) => u64::MAX,
                })
        };
        assert_eq!(count(observe::RUNS, "ok"), Some(5));
        assert_eq!(count(observe::LATENESS, "ok"), Some(5));
        assert_eq!(count(observe::PANICS, "panics"), Some(1));
        assert_eq!(count(schedulers_redis::FAILURES, "fails"), Some(1));
        assert_eq!(count(observe::SKIPPED, "tick"), Some(tick.skipped));
        assert_eq!(count(observe::REJECTED, "ok"), Some(1));
    }
    drop(w);
}

#[cfg(feature = "metrics")]
fn recorder() -> &'static metrics_util::debugging::Snapshotter {
    use std::sync::OnceLock;
    static S: OnceLock<metrics_util::debugging::Snapshotter> = OnceLock::new();
    S.get_or_init(|| {
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder
            .install()
            .expect("the only recorder of this test binary");
        snapshotter
    })
}
