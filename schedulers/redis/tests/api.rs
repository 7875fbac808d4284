//! The client API and an in-process worker against a real server.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedulers_redis::{
    AckOutcome, CancelOutcome, Config, Error, Fire, HandlerError, Job, JobInfo, JobState,
    LocalRedis, LocalServerError, RedisScheduler, Worker, WorkerEvent,
};

use crate::support::{
    config, redis_installed, schedule_noops_now, server, wait_until, worker, Log,
};

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
        matches!(s.schedule_after("a", "noop", &(), Duration::ZERO), Err(Error::AlreadyScheduled(id)) if id == "a")
    );
    assert_eq!(s.cancel("a").unwrap(), CancelOutcome::Cancelled);
    assert_eq!(s.cancel("a").unwrap(), CancelOutcome::AlreadyGone);
    assert!(matches!(
        s.inspect("a").unwrap(),
        Some(JobInfo::Tombstone { .. })
    ));
    assert!(matches!(
        s.schedule_after("a", "noop", &(), Duration::ZERO),
        Err(Error::Tombstoned(_))
    ));
    assert_eq!(s.cancel("never").unwrap(), CancelOutcome::NotFound);
    assert_eq!(s.inspect("never").unwrap(), None);

    assert!(matches!(Job::new("", "k"), Err(Error::InvalidId(_))));
    assert!(matches!(
        Job::new("x".repeat(513), "k"),
        Err(Error::InvalidId(_))
    ));
    assert!(matches!(Job::new("ok", ""), Err(Error::InvalidId(_))));
    assert!(matches!(
        s.schedule_at_fixed_rate("p", "k", &(), Duration::ZERO, Duration::ZERO),
        Err(Error::ZeroPeriod)
    ));
    assert!(matches!(
        s.schedule_after("big", "k", &(), Duration::MAX),
        Err(Error::DelayOverflow)
    ));
    assert!(matches!(
        s.schedule_at("neg", "k", &(), -5),
        Err(Error::DelayOverflow)
    ));
    assert!(matches!(
        RedisScheduler::connect(&redis.url(), Config::default().shards(0)),
        Err(Error::InvalidConfig(_))
    ));
    assert!(matches!(
        RedisScheduler::connect(&redis.url(), Config::default().namespace("a{b}")),
        Err(Error::InvalidConfig(_))
    ));
    assert!(matches!(
        Worker::builder(&redis.url(), config("api"))
            .threads(0)
            .start(),
        Err(Error::InvalidConfig(_))
    ));
    assert!(matches!(
        Worker::builder(&redis.url(), config("api"))
            .lease(Duration::from_millis(10))
            .heartbeat(Duration::from_millis(10))
            .start(),
        Err(Error::InvalidConfig(_))
    ));
}

#[test]
fn a_local_server_that_exits_at_start_says_why() {
    if !redis_installed() {
        return;
    }
    let refused = LocalRedis::builder()
        .set("maxmemory-policy", "not-a-policy")
        .start();
    match refused {
        Err(LocalServerError::Exited(why)) => {
            assert!(
                why.contains("not-a-policy"),
                "the log is not in the error: {why}"
            )
        }
        other => panic!("expected Exited with the server's log, got {other:?}"),
    }
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

/// A handler that takes `ms` milliseconds a job.
fn slow(ms: u64) -> impl Fn(&Fire) -> Result<(), HandlerError> + Send + Sync + 'static {
    move |_| {
        std::thread::sleep(Duration::from_millis(ms));
        Ok(())
    }
}

/// How many runs started, and the ids handed back unstarted.
fn started_and_released(log: &Log) -> (u64, Vec<String>) {
    let (mut started, mut released) = (0, Vec::new());
    for e in log.lock().unwrap().iter() {
        match e {
            WorkerEvent::Started { .. } => started += 1,
            WorkerEvent::Released { fire } => released.push(fire.id.clone()),
            _ => {}
        }
    }
    (started, released)
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
    // The dead letters are in Redis before the worker records the outcome
    // of its ack: wait for both.
    assert!(wait_until(Duration::from_secs(10), || s
        .dead_letters()
        .unwrap()
        .len()
        == 2
        && finished(&log, "bad").contains(&AckOutcome::Dead)));
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

/// The claim reply carries a job's record as text, fields split by `|`:
/// an id, a kind and a payload full of separators and non-ASCII text reach
/// the handler unchanged, with the due time, period, fence and attempt.
#[test]
fn a_fire_carries_what_was_scheduled() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let (id, kind) = ("id|1|é", "kind|x|ü|");
    let payload = serde_json::json!({"text": "a|b|1|2|ß", "n": [1, 2]});
    let w = worker(&redis.url(), "fields", &log)
        .handler(kind, |_| Ok(()))
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("fields")).unwrap();
    let due = s
        .schedule_at_fixed_rate(
            id,
            kind,
            &payload,
            Duration::ZERO,
            Duration::from_secs(3600),
        )
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || finished(&log, id)
        .len()
        == 1));
    let fire = log
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            WorkerEvent::Started { fire, .. } => Some(fire.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!((fire.id.as_str(), fire.kind.as_str()), (id, kind));
    assert_eq!(fire.payload::<serde_json::Value>().unwrap(), payload);
    assert_eq!(
        (fire.due_ms, fire.period_ms, fire.fence, fire.attempt),
        (due, 3_600_000, 1, 1)
    );
    assert_eq!(finished(&log, id), [AckOutcome::Next(due + 3_600_000)]);
    w.shutdown();
    w.join();
}

#[test]
fn graceful_shutdown_finishes_the_running_job() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let w = worker(&redis.url(), "shutdown", &log)
        .handler("slow", slow(400))
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

#[test]
fn slow_handlers_keep_the_default_buffer_at_one_batch() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    // Two threads at 20 ms a job drain at most 100 jobs/s, a job per 10 ms
    // of work: the adaptive buffer stays at its floor, one batch, however
    // long the backlog (a buffer of 16 batches would hold all of it).
    let w = worker(&redis.url(), "floor", &log)
        .batch(8)
        .handler("slow", slow(20))
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("floor")).unwrap();
    for i in 0..100 {
        s.schedule_after(&format!("f-{i}"), "slow", &(), Duration::ZERO)
            .unwrap();
    }
    let mut most = 0;
    for _ in 0..60 {
        most = most.max(w.in_flight());
        assert_eq!(w.stats().buffer, 8, "the buffer left its floor");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Held = buffered (8) + running (2) + finished and waiting for their
    // ack (the settler gathers for 5 ms; a slow settle on a loaded machine
    // lets a few more wait). With `.buffer(128)` this reads 96.
    assert!(
        (8..=30).contains(&most),
        "held at most {most} of a backlog of 100 (a batch of 8, 2 threads)"
    );
    w.shutdown();
    w.join();
}

#[test]
fn fast_handlers_grow_the_default_buffer_past_one_batch() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    // A backlog of 3,000 due jobs, then a worker with no-op handlers: they
    // drain far more than 800 jobs/s (8 jobs per 10 ms) on any machine, so
    // the buffer grows past its batch of 8 while the backlog lasts.
    let s = RedisScheduler::connect(&redis.url(), config("grow")).unwrap();
    schedule_noops_now(&s, (0..3000).map(|i| format!("g-{i}")));
    let w = worker(&redis.url(), "grow", &log)
        .batch(8)
        .handler("noop", |_| Ok(()))
        .start()
        .unwrap();
    // Sampled every millisecond from the start, beside the drain.
    let most = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let all_ran = std::thread::scope(|sc| {
        sc.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(w.stats().buffer, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let ran = wait_until(Duration::from_secs(30), || {
            w.stats().claimed == 3000 && w.in_flight() == 0
        });
        done.store(true, Ordering::Relaxed);
        ran
    });
    assert!(all_ran, "claimed {} of 3000", w.stats().claimed);
    let most = most.into_inner();
    assert!(
        (9..=8 * 16).contains(&most),
        "the buffer's largest capacity through a backlog of 3000 was {most}"
    );
    w.shutdown();
    w.join();
}

#[test]
fn graceful_stop_hands_the_buffered_jobs_back_at_once() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    // A lease of a minute: a buffered job left to its lease would wait that
    // long; handed back, the next worker runs it at once.
    let w = worker(&redis.url(), "handback", &log)
        .threads(1)
        .lease(Duration::from_secs(60))
        .batch(8)
        .buffer(8)
        .handler("slow", slow(300))
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("handback")).unwrap();
    let ids: Vec<String> = (0..10).map(|i| format!("h-{i}")).collect();
    for id in &ids {
        s.schedule_after(id, "slow", &(), Duration::ZERO).unwrap();
    }
    // The first claim may come back with the first job alone (the worker
    // was waiting before the others were scheduled): wait for the buffer.
    assert!(
        wait_until(Duration::from_secs(10), || w.in_flight() >= 4),
        "one running and several buffered"
    );
    w.shutdown();
    w.join();
    let (started, released) = started_and_released(&log);
    assert!(released.len() >= 3, "{released:?}");
    assert_eq!(
        started + released.len() as u64,
        w.stats().claimed,
        "every claimed job either ran or came back"
    );
    assert_eq!(w.in_flight(), 0);
    for id in &released {
        match s.inspect(id).unwrap() {
            Some(JobInfo::Live {
                state: JobState::Scheduled,
                attempt: 0,
                lease_until_ms: None,
                run_ms,
                due_ms,
                ..
            }) => assert_eq!(run_ms, due_ms, "{id} is due again at once"),
            other => panic!("{id} was not handed back: {other:?}"),
        }
    }
    // Another worker runs them all well within the old lease.
    let log2: Log = Arc::default();
    let w2 = worker(&redis.url(), "handback", &log2)
        .handler("slow", slow(300))
        .threads(4)
        .start()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || ids.iter().all(
        |id| matches!(s.inspect(id), Ok(Some(JobInfo::Tombstone { .. })))
    )));
    w2.shutdown();
    w2.join();
}

/// A worker stopped in the middle of a backlog, with claim rounds in
/// flight, leaves no job leased: every job it claimed ran or was handed
/// back, and the rest wait for the next worker.
#[test]
fn a_worker_stopped_mid_backlog_leaves_nothing_leased() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let s = RedisScheduler::connect(&redis.url(), config("midstop")).unwrap();
    let n: u64 = 20_000;
    schedule_noops_now(&s, (0..n).map(|i| format!("m-{i}")));
    let w = worker(&redis.url(), "midstop", &log)
        .threads(4)
        .handler("noop", |_| Ok(()))
        .start()
        .unwrap();
    assert!(wait_until(Duration::from_secs(30), || w.stats().claimed >= 2000));
    w.shutdown();
    w.join();
    let claimed = w.stats().claimed;
    assert!(claimed < n, "stopped before the backlog was drained");
    let (started, released) = started_and_released(&log);
    assert_eq!(
        started + released.len() as u64,
        claimed,
        "every claimed job ran or came back"
    );
    assert_eq!(s.job_count().unwrap(), n - started, "every run was acked");
    let mut con = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let lease_sets: Vec<String> = redis::cmd("KEYS")
        .arg("{tw:midstop:*}:l")
        .query(&mut con)
        .unwrap();
    let mut leased = 0u64;
    for k in &lease_sets {
        leased += redis::cmd("ZCARD").arg(k).query::<u64>(&mut con).unwrap();
    }
    assert_eq!(leased, 0, "no job left leased");
}

#[test]
fn an_idle_worker_sleeps_and_wakes_for_an_earlier_job() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    // Looks at the shards only once a minute: a job runs promptly only if
    // the wake-up message (or the look forced by a resubscription) works.
    let w = worker(&redis.url(), "wake", &log)
        .lease(Duration::from_secs(30))
        .poll_interval(Duration::from_secs(60))
        .handler("noop", move |_| {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("wake")).unwrap();
    for i in 0..100 {
        s.schedule_after(
            &format!("later-{i}"),
            "noop",
            &(),
            Duration::from_secs(3600),
        )
        .unwrap();
    }
    // Idle: after its first look and reap, the worker sends nothing while
    // nothing changes, whatever is pending.
    std::thread::sleep(Duration::from_millis(300));
    let before = w.stats().commands;
    std::thread::sleep(Duration::from_millis(1000));
    let idle = w.stats().commands - before;
    assert!(idle <= 2, "an idle worker sent {idle} commands in a second");

    let due = s
        .schedule_after("soon", "noop", &(), Duration::from_millis(200))
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || ran
        .load(Ordering::SeqCst)
        == 1));
    let started = log.lock().unwrap().iter().find_map(|e| match e {
        WorkerEvent::Started { fire, at_ms } if fire.id == "soon" => {
            Some((fire.claimed_ms, *at_ms))
        }
        _ => None,
    });
    let (claimed, at) = started.unwrap();
    assert!(
        claimed >= due && at >= claimed,
        "due {due}, claimed {claimed}, started {at}"
    );

    // A lost subscription (messages sent meanwhile are gone for good): the
    // worker subscribes again and looks at every shard.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query(&mut con)
        .unwrap();
    assert_eq!(killed, 1);
    s.schedule_after("after-reconnect", "noop", &(), Duration::ZERO)
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || ran
        .load(Ordering::SeqCst)
        == 2));
    w.shutdown();
    w.join();
}
