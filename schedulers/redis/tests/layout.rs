//! What a client is refused or kept from: a layout other than the recorded
//! one, another namespace's keys (ACL), an oversized payload; what a
//! finished id costs; and repeats of calls whose reply was lost.

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers_redis::{
    AckOutcome, CancelOutcome, Config, Error, Job, JobInfo, RedisScheduler, Worker, WorkerEvent,
    DEFAULT_MAX_PAYLOAD,
};

use crate::support::{read_history, schedule_noops_now, server, signal, wait_until};

#[test]
fn a_client_or_worker_with_another_layout_is_refused_at_start() {
    let Some(redis) = server() else { return };
    let url = redis.url();
    // The first client records the layout (library defaults: 8 shards).
    let s = RedisScheduler::connect(&url, Config::default().namespace("lay")).unwrap();
    s.schedule(&Job::new("a", "noop").unwrap()).unwrap();
    let other = Config::default().namespace("lay").shards(4);
    match RedisScheduler::connect(&url, other.clone()) {
        Err(Error::LayoutMismatch {
            namespace,
            recorded,
            configured,
        }) => {
            assert_eq!(namespace, "lay");
            assert!(recorded.contains("shards=8"), "{recorded}");
            assert!(configured.contains("shards=4"), "{configured}");
        }
        other => panic!("expected a layout mismatch, got {other:?}"),
    }
    assert!(matches!(
        Worker::builder(&url, other).start(),
        Err(Error::LayoutMismatch { .. })
    ));
    // A tombstone retention is part of the layout too.
    assert!(matches!(
        RedisScheduler::connect(
            &url,
            Config::default()
                .namespace("lay")
                .tombstone_ttl(Duration::from_secs(60))
        ),
        Err(Error::LayoutMismatch { .. })
    ));
    // The worker binary refuses to start, and says why.
    let out = Command::new(env!("CARGO_BIN_EXE_schedulers-redis-worker"))
        .args(["work", "--url", &url, "--ns", "lay", "--shards", "4"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("laid out"), "{err}");
}

#[test]
fn a_producer_and_the_worker_binary_on_their_defaults_run_every_job() {
    // Issue 17: the library defaulted to 8 shards and the binary to 4; 49
    // of 100 jobs ran. One default now, and the layout check besides.
    let Some(redis) = server() else { return };
    let url = redis.url();
    let s = RedisScheduler::connect(&url, Config::default().namespace("defaults")).unwrap();
    let jobs: Vec<Job> = (0..100)
        .map(|i| Job::new(format!("d{i}"), "noop").unwrap())
        .collect();
    assert!(s.schedule_many(&jobs).unwrap().iter().all(Result::is_ok));
    let history = redis.dir().join("defaults.jsonl");
    let mut w = Command::new(env!("CARGO_BIN_EXE_schedulers-redis-worker"))
        .args(["work", "--url", &url, "--ns", "defaults", "--poll-ms", "50"])
        .arg("--history")
        .arg(&history)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let done = wait_until(Duration::from_secs(20), || {
        read_history(&history)
            .iter()
            .filter(|e| e.ev == "end" && e.outcome == "done")
            .count()
            == 100
    });
    drop(w.stdin.take());
    let _ = w.wait();
    assert!(done, "all 100 jobs ran");
    assert_eq!(s.job_count().unwrap(), 0);
}

#[test]
fn a_user_limited_to_one_namespace_gets_noperm_for_another() {
    let Some(redis) = server() else { return };
    let mut admin = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    // Keys and channels of namespace `alice` only (see the module docs:
    // one pattern covers the shards and the layout key).
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("alice")
        .arg("on")
        .arg(">s3cret")
        .arg("resetkeys")
        .arg("~{tw:alice:*")
        .arg("resetchannels")
        .arg("&{tw:alice:*")
        .arg("+@all")
        .query(&mut admin)
        .unwrap();
    let url = format!("redis://alice:s3cret@127.0.0.1:{}/", redis.port());
    let config = Config::default().namespace("alice").shards(2);
    let s = RedisScheduler::connect(&url, config.clone()).unwrap();
    let ran = Arc::new(Mutex::new(0));
    let r = ran.clone();
    let w = Worker::builder(&url, config)
        .poll_interval(Duration::from_millis(20))
        .handler("noop", move |_| {
            *r.lock().unwrap() += 1;
            Ok(())
        })
        .start()
        .unwrap();
    s.schedule(&Job::new("a1", "noop").unwrap()).unwrap();
    assert!(wait_until(Duration::from_secs(10), || *ran.lock().unwrap() == 1));
    // Acked (the settle follows the handler by a few ms): a tombstone.
    assert!(wait_until(Duration::from_secs(10), || matches!(
        s.inspect("a1"),
        Ok(Some(JobInfo::Tombstone { .. }))
    )));
    assert_eq!(s.cancel("a1").unwrap(), CancelOutcome::AlreadyGone);
    w.shutdown();
    w.join();
    // Another namespace: refused by Redis, reported as its NOPERM.
    let e = RedisScheduler::connect(&url, Config::default().namespace("bob")).unwrap_err();
    match &e {
        Error::Redis(r) => assert_eq!(r.code(), Some("NOPERM"), "{e}"),
        other => panic!("expected NOPERM, got {other:?}"),
    }
    // And a wrong password is an authentication error, not a hang.
    let bad = format!("redis://alice:wrong@127.0.0.1:{}/", redis.port());
    assert!(matches!(
        RedisScheduler::connect(
            &bad,
            Config::default()
                .namespace("alice")
                .retry_for(Duration::ZERO)
        ),
        Err(Error::Redis(_))
    ));
}

#[test]
fn payloads_over_the_limit_get_a_typed_error() {
    let Some(redis) = server() else { return };
    let small = Config::default().namespace("payload").max_payload(1024);
    let s = RedisScheduler::connect(&redis.url(), small).unwrap();
    let big = "x".repeat(2000);
    match s.schedule(&Job::new("big", "noop").unwrap().payload(&big).unwrap()) {
        Err(Error::PayloadTooLarge { id, bytes, limit }) => {
            assert_eq!((id.as_str(), bytes, limit), ("big", 2002, 1024));
        }
        other => panic!("{other:?}"),
    }
    let jobs = vec![
        Job::new("ok", "noop").unwrap().payload(&"fine").unwrap(),
        Job::new("big", "noop").unwrap().payload(&big).unwrap(),
    ];
    let r = s.schedule_many(&jobs).unwrap();
    assert!(r[0].is_ok());
    assert!(matches!(r[1], Err(Error::PayloadTooLarge { .. })));
    assert_eq!(s.inspect("big").unwrap(), None, "nothing was stored");
    // The default limit (4 MiB) refuses the 64 MiB of the issue.
    let d =
        RedisScheduler::connect(&redis.url(), Config::default().namespace("payload-d")).unwrap();
    let huge = Job::new("huge", "noop")
        .unwrap()
        .payload(&"y".repeat(64 << 20))
        .unwrap();
    assert!(matches!(
        d.schedule(&huge),
        Err(Error::PayloadTooLarge { limit, .. }) if limit == DEFAULT_MAX_PAYLOAD
    ));
    assert!(matches!(
        RedisScheduler::connect(&redis.url(), Config::default().max_payload(0)),
        Err(Error::InvalidConfig(_))
    ));
}

/// Sums `MEMORY USAGE` over the keys matching `pattern`.
fn memory_of(con: &mut redis::Connection, pattern: &str) -> (u64, u64) {
    let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query(con).unwrap();
    let mut bytes = 0;
    for k in &keys {
        let b: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(k)
            .arg("SAMPLES")
            .arg(0)
            .query(con)
            .unwrap();
        bytes += b.unwrap_or(0);
    }
    (bytes, keys.len() as u64)
}

#[test]
fn a_finished_id_costs_under_16_bytes_of_tombstone() {
    let Some(redis) = server() else { return };
    let n: u64 = 100_000;
    let config = Config::default().namespace("tomb");
    let s = RedisScheduler::connect(&redis.url(), config.clone()).unwrap();
    let w = Worker::builder(&redis.url(), config)
        .threads(4)
        .batch(500)
        .buffer(2000)
        .poll_interval(Duration::from_millis(20))
        .handler("noop", |_| Ok(()))
        .start()
        .unwrap();
    schedule_noops_now(&s, (0..n).map(|i| format!("order-{i}-confirmation")));
    assert!(
        wait_until(Duration::from_secs(120), || s.job_count().unwrap() == 0),
        "the worker ran every job"
    );
    w.shutdown();
    w.join();
    let mut con = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let (sets, keys) = memory_of(&mut con, "{tw:tomb:*}:x:*");
    let (meta, _) = memory_of(&mut con, "{tw:tomb:*}:xm");
    let per_id = (sets + meta) as f64 / n as f64;
    // The outcome log (kept one to two windows, a minute by default).
    let (log, log_keys) = memory_of(&mut con, "{tw:tomb:*}:o:*");
    eprintln!(
        "outcome log of {n} acks: {log} B in {log_keys} hashes = {:.1} B per ack, for one to two windows",
        log as f64 / n as f64
    );
    let encodings: Vec<String> = {
        let ks: Vec<String> = redis::cmd("KEYS")
            .arg("{tw:tomb:*}:x:*")
            .query(&mut con)
            .unwrap();
        ks.iter()
            .map(|k| {
                redis::cmd("OBJECT")
                    .arg("ENCODING")
                    .arg(k)
                    .query::<String>(&mut con)
                    .unwrap()
            })
            .collect()
    };
    eprintln!(
        "tombstones of {n} ids: {sets} B in {keys} sets + {meta} B of bookkeeping = {per_id:.2} B/id; \
         encodings {:?}",
        encodings.iter().fold(std::collections::BTreeMap::new(), |mut m, e| {
            *m.entry(e.clone()).or_insert(0) += 1;
            m
        })
    );
    assert!(per_id <= 16.0, "{per_id:.2} B per id");
    assert!(encodings.iter().all(|e| e == "intset"));
    // Every one of them is still refused.
    for i in (0..n).step_by(997) {
        assert!(matches!(
            s.schedule(&Job::new(format!("order-{i}-confirmation"), "noop").unwrap()),
            Err(Error::Tombstoned(_))
        ));
    }
}

/// The tombstone bookkeeping of the one shard of `ns`: bucket -> (sets
/// per level, sets split, tombstones).
fn tomb_buckets(
    con: &mut redis::Connection,
    ns: &str,
) -> std::collections::BTreeMap<i64, (i64, i64, i64)> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{{tw:{ns}:*}}:xm"))
        .query(con)
        .unwrap();
    assert_eq!(keys.len(), 1, "one shard: {keys:?}");
    let fields: std::collections::HashMap<String, i64> =
        redis::cmd("HGETALL").arg(&keys[0]).query(con).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for (f, v) in &fields {
        let (what, b) = f.split_once(':').unwrap();
        let e = out.entry(b.parse::<i64>().unwrap()).or_insert((0, 0, 0));
        match what {
            "n" => e.0 = *v,
            "s" => e.1 = *v,
            _ => e.2 = *v,
        }
    }
    out
}

#[test]
fn a_new_tombstone_bucket_is_sized_for_the_backlog_then_for_the_last_bucket() {
    let Some(redis) = server() else { return };
    // One shard, tombstone buckets of 2 s (an eighth of the retention).
    let config = Config::default()
        .namespace("tsize")
        .shards(1)
        .tombstone_ttl(Duration::from_secs(16));
    let bucket_ms = 2000;
    let s = RedisScheduler::connect(&redis.url(), config.clone()).unwrap();
    let n = 5000;
    schedule_noops_now(&s, (0..n).map(|i| format!("b-{i}")));
    let w = Worker::builder(&redis.url(), config)
        .threads(4)
        .poll_interval(Duration::from_millis(20))
        .handler("noop", |_| Ok(()))
        .start()
        .unwrap();
    assert!(wait_until(Duration::from_secs(60), || s
        .job_count()
        .unwrap()
        == 0));
    let mut con = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    // 5,000 pending when the first tombstone came: 5000 / 192 = 26 sets,
    // rounded up to 32, made at once; no split was needed.
    let drained = tomb_buckets(&mut con, "tsize");
    let total: i64 = drained.values().map(|b| b.2).sum();
    assert_eq!(total, n, "{drained:?}");
    assert!(
        drained
            .values()
            .all(|&(sets, split, _)| sets == 32 && split == 0),
        "{drained:?}"
    );
    // The next bucket, with nothing pending, is sized as the last one ended.
    let last = *drained.keys().next_back().unwrap();
    while s.now_ms().unwrap() < (last + 1) * bucket_ms {
        std::thread::sleep(Duration::from_millis(10));
    }
    s.schedule(&Job::new("after", "noop").unwrap()).unwrap();
    assert!(wait_until(Duration::from_secs(10), || s
        .job_count()
        .unwrap()
        == 0));
    let after = tomb_buckets(&mut con, "tsize");
    assert_eq!(
        after.get(&(last + 1)),
        Some(&(32, 0, 1)),
        "the job must end within the bucket after the drain's: {after:?}"
    );
    w.shutdown();
    w.join();
    // Every tombstone is found.
    for i in (0..n).step_by(97) {
        assert!(matches!(
            s.schedule(&Job::new(format!("b-{i}"), "noop").unwrap()),
            Err(Error::Tombstoned(_))
        ));
    }
}

#[test]
fn an_ack_repeated_after_its_reply_was_lost_reports_what_happened() {
    // Issue 17: a worker whose connection broke repeats the ack, got STALE,
    // and reported an error for a job whose ack had been applied. Redis is
    // stopped while the ack is in flight, so the worker's read times out; on
    // SIGCONT Redis applies the first ack, and the repeat gets its outcome.
    let Some(redis) = server() else { return };
    let pid = redis.pid().unwrap();
    let config = Config::default()
        .namespace("repeat")
        .shards(2)
        .io_timeout(Duration::from_millis(300));
    let s = RedisScheduler::connect(&redis.url(), config.clone()).unwrap();
    let (finishing_tx, finishing) = mpsc::channel();
    let finishing_tx = Mutex::new(finishing_tx);
    let log: Arc<Mutex<Vec<WorkerEvent>>> = Arc::default();
    let l = log.clone();
    let w = Worker::builder(&redis.url(), config)
        .lease(Duration::from_secs(10))
        .poll_interval(Duration::from_millis(20))
        .handler("slow", move |_| {
            let _ = finishing_tx.lock().unwrap().send(());
            std::thread::sleep(Duration::from_millis(300));
            Ok(())
        })
        .on_event(move |e| l.lock().unwrap().push(e.clone()))
        .start()
        .unwrap();
    s.schedule(&Job::new("j", "slow").unwrap()).unwrap();
    finishing.recv_timeout(Duration::from_secs(10)).unwrap();
    // The handler returns in 300 ms: Redis is stopped by then.
    std::thread::sleep(Duration::from_millis(100));
    signal(pid, "STOP");
    std::thread::sleep(Duration::from_millis(1500));
    signal(pid, "CONT");
    let outcome = || {
        log.lock().unwrap().iter().find_map(|e| match e {
            WorkerEvent::Finished { fire, outcome, .. } if fire.id == "j" => Some(outcome.clone()),
            _ => None,
        })
    };
    assert!(wait_until(Duration::from_secs(30), || outcome().is_some()));
    w.shutdown();
    w.join();
    let errors = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, WorkerEvent::RedisError { .. }))
        .count();
    assert!(errors > 0, "the ack's first round trip failed");
    assert_eq!(
        outcome(),
        Some(AckOutcome::Done),
        "the repeat reports the applied ack"
    );
    assert!(matches!(
        s.inspect("j").unwrap(),
        Some(JobInfo::Tombstone { .. })
    ));
    let starts = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, WorkerEvent::Started { .. }))
        .count();
    assert_eq!(starts, 1);
}

#[test]
fn a_cancel_repeated_after_its_reply_was_lost_reports_what_happened() {
    let Some(redis) = server() else { return };
    let pid = redis.pid().unwrap();
    let config = Config::default()
        .namespace("repeat-cancel")
        .shards(2)
        .io_timeout(Duration::from_millis(300))
        .retry_for(Duration::from_secs(20));
    let s = Arc::new(RedisScheduler::connect(&redis.url(), config).unwrap());
    s.schedule(
        &Job::new("c", "noop")
            .unwrap()
            .after(Duration::from_secs(3600)),
    )
    .unwrap();
    signal(pid, "STOP");
    let c = s.clone();
    let cancel = std::thread::spawn(move || c.cancel("c"));
    std::thread::sleep(Duration::from_millis(1500));
    signal(pid, "CONT");
    // Without the outcome log the repeat would find a tombstone and say
    // AlreadyGone; it was this call that cancelled the job.
    assert_eq!(cancel.join().unwrap().unwrap(), CancelOutcome::Cancelled);
    assert_eq!(s.cancel("c").unwrap(), CancelOutcome::AlreadyGone);
}

#[test]
fn rediss_without_the_tls_feature_is_a_typed_error() {
    if cfg!(feature = "tls") {
        return;
    }
    assert!(matches!(
        RedisScheduler::connect("rediss://127.0.0.1:1/", Config::default()),
        Err(Error::InvalidConfig(_))
    ));
}
