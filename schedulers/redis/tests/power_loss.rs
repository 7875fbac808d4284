//! A simulated power loss of the whole system, and what each durability
//! keeps of what was acknowledged.
//!
//! Producer and workers run against a Redis whose AOF carries timestamp
//! annotations (`aof-timestamp-enabled yes`). Then the power goes: the
//! workers and Redis are killed (SIGKILL), and the AOF is cut back to what a
//! power loss leaves on disk, with `redis-check-aof --truncate-to-timestamp`:
//!
//! - under `appendfsync everysec` ([`Durability::Async`]) the disk holds the
//!   AOF as of its last fsync, up to about 2 s back (Redis fsyncs every
//!   second, and postpones an fsync while the previous one runs): the cut
//!   keeps what was written before the second preceding the loss's, 1 to 2
//!   s before it (the annotations count whole seconds);
//! - under `appendfsync always` ([`Durability::Fsync`] on Redis 7.0, which
//!   has no `WAITAOF`), Redis fsyncs before it replies, so everything
//!   acknowledged is on disk: the cut is at the loss.
//!
//! Redis restarts from the cut AOF, new workers drain the schedule, and the
//! histories (before the loss and after) are checked against what the
//! producer was told. The first mode loses acknowledged work (schedules,
//! acks that come back as same-fence re-runs, cancels that come back as
//! runs); the second must lose nothing.

use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::time::{Duration, Instant};

use schedulers_redis::{CancelOutcome, Config, Durability, Error, Job, LocalRedis, RedisScheduler};

use crate::support::{
    all_events, check_lost_replies, drained, redis_installed, wait_until, Event, Expect,
    WorkerOpts, WorkerProc,
};

/// What a run lost of what was acknowledged (printed whole through
/// `Debug`).
#[derive(Debug, Default)]
#[allow(dead_code)]
struct Losses {
    scheduled: usize,
    cancelled: usize,
    /// Acknowledged schedules that never ran.
    lost_schedules: usize,
    /// Fires that ran twice under the same fence (a claim or an ack rolled
    /// back).
    same_fence_reruns: usize,
    /// Runs claimed after a cancel that had been acknowledged.
    runs_after_cancel: usize,
}

fn losses(events: &[Event], jobs: &BTreeMap<String, Expect>) -> Losses {
    let mut l = Losses {
        scheduled: jobs.len(),
        cancelled: jobs.values().filter(|e| e.cancelled_at.is_some()).count(),
        ..Losses::default()
    };
    let mut fences: HashMap<(String, i64), usize> = HashMap::new();
    let mut started: HashMap<&str, Vec<&Event>> = HashMap::new();
    for e in events.iter().filter(|e| e.ev == "start") {
        *fences.entry((e.fire_id(), e.fence)).or_default() += 1;
        started.entry(&e.id).or_default().push(e);
    }
    l.same_fence_reruns = fences.values().filter(|&&n| n > 1).count();
    for (id, exp) in jobs {
        let runs = started.get(id.as_str()).map_or(&[][..], Vec::as_slice);
        match exp.cancelled_at {
            None if runs.is_empty() => l.lost_schedules += 1,
            Some(t) if runs.iter().any(|r| r.claimed > t) => l.runs_after_cancel += 1,
            _ => {}
        }
    }
    l
}

/// One run; `cut_back_s` is how far before the loss the disk's AOF ends.
fn power_loss_run(always: bool, d: Durability, cut_back_s: i64) -> Losses {
    let mut redis = LocalRedis::builder()
        .appendfsync_always(always)
        .set("aof-timestamp-enabled", "yes")
        .set("auto-aof-rewrite-percentage", "0")
        .start()
        .unwrap();
    let url = redis.url();
    let dir = redis.dir().to_owned();
    let mut o = WorkerOpts::new("power");
    o.durability = d;
    o.lease_ms = 1500;
    o.heartbeat_ms = 300;
    let s = RedisScheduler::connect(&url, o.config()).unwrap();
    let mut before: Vec<WorkerProc> = (0..2)
        .map(|i| WorkerProc::spawn(&url, &dir, &format!("before-{i}"), &o))
        .collect();
    // For 3 s: jobs due 2.5 s ahead, and every third one cancelled 1.5 s
    // (on a loaded machine, somewhat more) after it was scheduled, so the
    // last seconds before the loss hold schedules, claims, acks and cancels
    // of jobs stored earlier.
    let mut jobs = BTreeMap::new();
    let mut to_cancel: std::collections::VecDeque<(Instant, String)> = Default::default();
    let end = Instant::now() + Duration::from_secs(3);
    let schedule = |jobs: &mut BTreeMap<String, Expect>, id: &str| {
        let due = s
            .schedule(
                &Job::new(id, "noop")
                    .unwrap()
                    .after(Duration::from_millis(2500)),
            )
            .unwrap();
        let expect = Expect::once(due);
        jobs.insert(id.to_owned(), expect);
    };
    let mut i = 0;
    while Instant::now() < end {
        let id = format!("p-{i}");
        schedule(&mut jobs, &id);
        if i % 3 == 0 {
            to_cancel.push_back((Instant::now() + Duration::from_millis(1500), id));
        }
        // One cancel per schedule at most: a loaded machine that falls
        // behind on cancels must not stop scheduling for a second.
        if to_cancel
            .front()
            .is_some_and(|(at, _)| *at <= Instant::now())
        {
            let (_, id) = to_cancel.pop_front().unwrap();
            if s.cancel(&id).unwrap() == CancelOutcome::Cancelled {
                jobs.get_mut(&id).unwrap().cancelled_at = Some(s.now_ms().unwrap());
            }
        }
        i += 1;
    }
    // The power goes: the workers and Redis die milliseconds apart, and the
    // disk keeps the AOF up to its last fsync.
    for w in &mut before {
        w.kill9();
    }
    // The last acknowledged schedules come within milliseconds of the loss,
    // so the lost stretch holds some whatever pace the loop kept (a machine
    // under load once left it none).
    for k in 0..10 {
        schedule(&mut jobs, &format!("p-last-{k}"));
    }
    let lost_at = s.now_ms().unwrap();
    redis.kill();
    let cut = lost_at / 1000 - cut_back_s;
    let manifest = dir.join("appendonlydir").join("appendonly.aof.manifest");
    let out = Command::new("redis-check-aof")
        .arg("--truncate-to-timestamp")
        .arg(cut.to_string())
        .arg(&manifest)
        .output()
        .expect("run redis-check-aof");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    redis.start_again().unwrap();

    let mut after: Vec<WorkerProc> = (0..2)
        .map(|i| WorkerProc::spawn(&url, &dir, &format!("after-{i}"), &o))
        .collect();
    assert!(
        wait_until(Duration::from_secs(60), || drained(&url, &o)),
        "the schedule drains after the restart"
    );
    for w in &mut after {
        w.stop();
    }
    let refs: Vec<&WorkerProc> = before.iter().chain(&after).collect();
    let events = all_events(&refs);
    let l = losses(&events, &jobs);
    if d == Durability::Fsync {
        // A worker killed between Redis applying its ack and the history
        // line has run a job without recording the ack: "ran at least once"
        // is what can be asked of it; the drain above shows Redis finished
        // every job.
        check_lost_replies(&events, &jobs);
    }
    l
}

#[test]
fn a_power_loss_loses_acknowledged_work_under_async_and_nothing_under_fsync() {
    if !redis_installed() {
        return;
    }
    let everysec = power_loss_run(false, Durability::Async, 2);
    let always = power_loss_run(true, Durability::Fsync, 0);
    eprintln!("power loss, Async on appendfsync everysec (AOF cut 1-2 s back): {everysec:?}");
    eprintln!("power loss, Fsync on appendfsync always (AOF cut at the loss): {always:?}");
    assert!(
        everysec.lost_schedules > 0,
        "the cut AOF lost acknowledged schedules"
    );
    assert_eq!(
        (
            always.lost_schedules,
            always.same_fence_reruns,
            always.runs_after_cancel
        ),
        (0, 0, 0)
    );
}

#[test]
fn fsync_durability_is_refused_by_a_server_that_cannot_give_it() {
    if !redis_installed() {
        return;
    }
    // Redis 7.0 has no WAITAOF: Fsync needs appendfsync always.
    let redis = LocalRedis::start_with_fsync(false).unwrap();
    let config = Config::default()
        .namespace("fsync")
        .durability(Durability::Fsync)
        .retry_for(Duration::ZERO);
    match RedisScheduler::connect(&redis.url(), config) {
        Err(Error::DurabilityUnavailable(why)) => {
            assert!(why.contains("appendfsync everysec"), "{why}")
        }
        Ok(_) => {
            // A server with WAITAOF (7.2+) gives it whatever its fsync
            // policy.
        }
        other => panic!("{other:?}"),
    }
    // WAIT for a replica the server does not have: applied, not durable.
    let s = RedisScheduler::connect(
        &redis.url(),
        Config::default()
            .namespace("replicas")
            .durability(Durability::Replicas(1))
            .durability_timeout(Duration::from_millis(100))
            .retry_for(Duration::ZERO),
    );
    let s = s.unwrap();
    assert!(matches!(
        s.schedule(&Job::new("r", "noop").unwrap()),
        Err(Error::NotDurable(_))
    ));
}
