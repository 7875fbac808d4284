//! Fault tests with worker processes: kill -9 (mid-handler, and holding a
//! full buffer of claimed jobs), SIGSTOP past the lease, all workers down
//! across slice boundaries, a Redis restart, cancel racing claim, one id
//! scheduled twice, connections killed under load, and a fault-free run of
//! 10⁴ jobs. Every scenario but the restart runs on one server and on the
//! shared Cluster (`cluster::…`); a master's failover is in
//! [`super::cluster`].

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use schedulers_redis::{shard_of, CancelOutcome, Error, Job, JobInfo, RedisScheduler};

use crate::support::{
    all_events, check, check_lost_replies, drained, server_with, wait_until, Backend, Event,
    Expect, WorkerOpts, WorkerProc,
};

fn expect(due: i64) -> Expect {
    Expect::once(due)
}

fn done(events: &[Event], id: &str) -> bool {
    events
        .iter()
        .any(|e| e.ev == "end" && e.id == id && e.outcome == "done")
}

/// Schedules `n` no-op jobs `prefix-i` due uniformly over `window` ms from
/// `start` (Redis ms); returns their expectations.
fn noops(
    s: &RedisScheduler,
    prefix: &str,
    n: usize,
    start: i64,
    window: i64,
) -> BTreeMap<String, Expect> {
    let jobs: Vec<Job> = (0..n)
        .map(|i| {
            let due = start
                + if n > 1 {
                    window * i as i64 / (n as i64 - 1)
                } else {
                    0
                };
            Job::new(format!("{prefix}-{i}"), "noop")
                .unwrap()
                .at_ms(due)
        })
        .collect();
    let mut out = BTreeMap::new();
    for (job, r) in jobs.iter().zip(s.schedule_many(&jobs).unwrap()) {
        out.insert(job.id().to_owned(), expect(r.unwrap()));
    }
    out
}

fn slow_job(s: &RedisScheduler, id: &str, sleep_ms: u64) -> Expect {
    let due = s
        .schedule(&Job::new(id, "sleep").unwrap().payload(&sleep_ms).unwrap())
        .unwrap();
    expect(due)
}

fn starts_of<'a>(events: &'a [Event], id: &str) -> Vec<&'a Event> {
    let mut v: Vec<&Event> = events
        .iter()
        .filter(|e| e.ev == "start" && e.id == id)
        .collect();
    v.sort_by_key(|e| e.fence);
    v
}

fn kill9_mid_handler_redoes_the_job_with_the_same_fire_id(be: &Backend) {
    let o = WorkerOpts::new("k9");
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let mut a = WorkerProc::spawn(&be.url, &be.dir, "a", &o);
    let mut b = WorkerProc::spawn(&be.url, &be.dir, "b", &o);
    let mut jobs = BTreeMap::new();
    jobs.insert("slow".to_owned(), slow_job(&s, "slow", 1500));
    let now = s.now_ms().unwrap();
    jobs.extend(noops(&s, "q", 50, now + 100, 500));

    assert!(wait_until(Duration::from_secs(10), || all_events(&[
        &a, &b
    ])
    .iter()
    .any(|e| e.ev == "start" && e.id == "slow")));
    let a_has_it = a.events().iter().any(|e| e.ev == "start" && e.id == "slow");
    let (victim, survivor) = if a_has_it {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    victim.kill9();
    assert!(
        wait_until(Duration::from_secs(20), || done(&survivor.events(), "slow")),
        "the survivor never redid the job"
    );
    assert!(wait_until(Duration::from_secs(10), || {
        let ev = survivor.events();
        jobs.keys()
            .filter(|id| id.starts_with("q-"))
            .all(|id| done(&all_events(&[&*victim]), id) || done(&ev, id))
    }));
    survivor.stop();

    let events = all_events(&[&a, &b]);
    let runs = starts_of(&events, "slow");
    assert!(
        runs.len() >= 2,
        "killed mid-handler, the job must run again: {runs:?}"
    );
    assert_eq!(
        runs[0].fire_id(),
        runs[1].fire_id(),
        "a redelivery keeps the fire id"
    );
    assert!(runs[1].attempt > runs[0].attempt);
    // Normally the survivor's reaper records it; on a starved machine the
    // victim may have lost the lease (and recorded it) before the kill.
    assert!(
        events.iter().any(|e| (e.ev == "reaped" || e.ev == "lost")
            && e.id == "slow"
            && e.fence == runs[0].fence),
        "the lease loss of the killed run is recorded"
    );
    let sum = check(&events, &jobs);
    assert!(sum.repeated_fires >= 1);
}

fn kill9_with_a_full_buffer_runs_every_buffered_job_once_its_lease_lapses(be: &Backend) {
    let mut o = WorkerOpts::new("buf");
    // One slow handler thread and a buffer of 8: the worker holds a running
    // job and several claimed jobs it has not started.
    o.threads = 1;
    o.batch = Some(8);
    o.buffer = Some(8);
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let mut jobs = BTreeMap::new();
    for i in 0..20 {
        let id = format!("b-{i}");
        jobs.insert(id.clone(), slow_job(&s, &id, 200));
    }
    let mut a = WorkerProc::spawn(&be.url, &be.dir, "a", &o);
    assert!(wait_until(Duration::from_secs(10), || a
        .events()
        .iter()
        .any(|e| e.ev == "start")));
    // Freeze it so no heartbeat moves a lease, read what it holds, kill it.
    a.signal("STOP");
    let started: Vec<String> = a
        .events()
        .iter()
        .filter(|e| e.ev == "start")
        .map(|e| e.id.clone())
        .collect();
    let mut leases = BTreeMap::new();
    for id in jobs.keys() {
        if let Some(JobInfo::Live {
            lease_until_ms: Some(until),
            ..
        }) = s.inspect(id).unwrap()
        {
            leases.insert(id.clone(), until);
        }
    }
    a.kill9();
    let buffered: Vec<&String> = leases.keys().filter(|id| !started.contains(id)).collect();
    assert!(
        buffered.len() >= 4,
        "the killed worker held claimed jobs it had not started: leases {leases:?}, started {started:?}"
    );

    let mut b = WorkerProc::spawn(&be.url, &be.dir, "b", &o);
    assert!(
        wait_until(Duration::from_secs(30), || {
            let ev = b.events();
            jobs.keys()
                .filter(|id| !a.events().iter().any(|e| e.ev == "end" && &e.id == *id))
                .all(|id| done(&ev, id))
        }),
        "every job the killed worker held runs elsewhere"
    );
    b.stop();
    let events = all_events(&[&a, &b]);
    let sum = check(&events, &jobs);
    for id in &buffered {
        // Only the survivor ran it (the checker allows a repeat only after a
        // recorded loss, which a starved machine can cause).
        let runs = starts_of(&events, id);
        assert!(
            !runs.is_empty() && runs.iter().all(|r| r.worker == "b"),
            "{id} was never started by the killed worker: {runs:?}"
        );
        assert!(
            runs[0].claimed > leases[*id],
            "{id} ran at {} before the killed worker's lease lapsed at {}",
            runs[0].claimed,
            leases[*id]
        );
        assert!(
            events.iter().any(|e| e.ev == "reaped" && &e.id == *id),
            "the lapsed lease of {id} is recorded"
        );
    }
    eprintln!(
        "buffered at the kill: {}, repeated fires {}",
        buffered.len(),
        sum.repeated_fires
    );
}

fn sigstop_past_the_lease_then_sigcont_gets_its_ack_refused(be: &Backend) {
    let o = WorkerOpts::new("stop");
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let a = WorkerProc::spawn(&be.url, &be.dir, "a", &o);
    let b = WorkerProc::spawn(&be.url, &be.dir, "b", &o);
    let mut jobs = BTreeMap::new();
    jobs.insert("slow".to_owned(), slow_job(&s, "slow", 1000));

    assert!(wait_until(Duration::from_secs(10), || all_events(&[
        &a, &b
    ])
    .iter()
    .any(|e| e.ev == "start" && e.id == "slow")));
    let a_has_it = a.events().iter().any(|e| e.ev == "start" && e.id == "slow");
    let (mut paused, mut other) = if a_has_it { (a, b) } else { (b, a) };
    paused.signal("STOP");
    let redone = wait_until(Duration::from_secs(20), || done(&other.events(), "slow"));
    paused.signal("CONT");
    assert!(
        redone,
        "another worker must take over the job of a paused worker"
    );
    assert!(
        wait_until(Duration::from_secs(10), || paused
            .events()
            .iter()
            .any(|e| e.ev == "end" && e.id == "slow")),
        "the resumed worker finishes its handler and tries to ack"
    );
    paused.stop();
    other.stop();

    let events = all_events(&[&paused, &other]);
    let first = starts_of(&paused.events(), "slow")[0].clone();
    let end = paused
        .events()
        .into_iter()
        .find(|e| e.ev == "end" && e.id == "slow")
        .unwrap();
    assert_eq!(
        end.outcome, "stale",
        "the stale holder's ack must be refused"
    );
    assert_eq!(end.fence, first.fence);
    let runs = starts_of(&events, "slow");
    assert!(runs.len() >= 2 && runs.iter().all(|r| r.fire_id() == first.fire_id()));
    check(&events, &jobs);
}

fn all_workers_down_across_slice_boundaries_everything_overdue_fires_after_restart(be: &Backend) {
    let mut o = WorkerOpts::new("outage");
    o.slice_ms = 200;
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let now = s.now_ms().unwrap();
    // 300 jobs over 1.2 s: six slice boundaries while no worker runs.
    let mut jobs = noops(&s, "o", 300, now + 100, 1200);
    let tick_due = s
        .schedule(
            &Job::new("tick", "noop")
                .unwrap()
                .at_fixed_rate(Duration::from_millis(100), Duration::from_millis(100))
                .unwrap(),
        )
        .unwrap();
    jobs.insert("tick".into(), Expect::rate(tick_due, 100));
    let last_due = jobs.values().map(|e| e.due).max().unwrap();
    assert!(wait_until(Duration::from_secs(10), || s.now_ms().unwrap()
        > last_due + 500));
    let back_at = s.now_ms().unwrap();

    let mut w = WorkerProc::spawn(&be.url, &be.dir, "w", &o);
    assert!(wait_until(Duration::from_secs(20), || {
        let ev = w.events();
        jobs.keys()
            .filter(|id| id.starts_with("o-"))
            .all(|id| done(&ev, id))
    }));
    // Let the periodic job run on its grid for a while after catching up.
    assert!(wait_until(Duration::from_secs(10), || starts_of(
        &w.events(),
        "tick"
    )
    .len()
        >= 4));
    let t = s.cancel("tick").unwrap();
    assert!(matches!(
        t,
        CancelOutcome::Cancelled | CancelOutcome::InFlight
    ));
    jobs.get_mut("tick").unwrap().cancelled_at = Some(s.now_ms().unwrap());
    std::thread::sleep(Duration::from_millis(300));
    w.stop();

    let events = w.events();
    check(&events, &jobs);
    // Oldest first: within a shard, a job claimed later is never due earlier.
    let mut starts: Vec<&Event> = events
        .iter()
        .filter(|e| e.ev == "start" && e.id.starts_with("o-"))
        .collect();
    starts.sort_by_key(|e| (e.shard, e.claimed));
    for pair in starts.windows(2) {
        if pair[0].shard == pair[1].shard && pair[0].claimed < pair[1].claimed {
            assert!(
                pair[0].due <= pair[1].due,
                "catch-up not oldest first: {:?} then {:?}",
                pair[0],
                pair[1]
            );
        }
    }
    assert_eq!(
        shard_of("o-0", o.shards),
        starts.iter().find(|e| e.id == "o-0").unwrap().shard
    );
    // Missed periodic runs are coalesced: one run for everything due before
    // the workers came back, then the grid again.
    let ticks = starts_of(&events, "tick");
    let missed = ticks.iter().filter(|e| e.due < back_at).count();
    assert_eq!(
        missed, 1,
        "missed runs must be coalesced into one: {ticks:?}"
    );
    for pair in ticks.windows(2) {
        assert!(pair[1].due > pair[0].due);
    }
}

#[test]
fn redis_restart_keeps_acked_schedules() {
    let Some(mut redis) = server_with(true) else {
        return;
    };
    let (url, dir) = (redis.url(), redis.dir().to_owned());
    let mut o = WorkerOpts::new("restart");
    o.lease_ms = 1500;
    o.heartbeat_ms = 300;
    let s = RedisScheduler::connect(&url, o.config()).unwrap();
    let now = s.now_ms().unwrap();
    let mut jobs = noops(&s, "early", 100, now, 0);
    let mut w = WorkerProc::spawn(&url, &dir, "w", &o);
    assert!(wait_until(Duration::from_secs(10), || {
        let ev = w.events();
        jobs.keys().all(|id| done(&ev, id))
    }));
    // Acked schedules, due after the restart.
    let now = s.now_ms().unwrap();
    jobs.extend(noops(&s, "late", 200, now + 1500, 500));
    let per = s
        .schedule(
            &Job::new("per", "noop")
                .unwrap()
                .at_fixed_rate(Duration::from_millis(1500), Duration::from_millis(200))
                .unwrap(),
        )
        .unwrap();
    jobs.insert("per".into(), Expect::rate(per, 200));

    redis.restart().unwrap();

    assert!(
        wait_until(Duration::from_secs(20), || {
            let ev = w.events();
            jobs.keys()
                .filter(|id| id.starts_with("late-"))
                .all(|id| done(&ev, id))
        }),
        "schedules acked before the restart must all run after it"
    );
    assert!(wait_until(Duration::from_secs(10), || starts_of(
        &w.events(),
        "per"
    )
    .len()
        >= 2));
    // The producer's connection died with the old server: the call
    // reconnects and succeeds (issue 17: it used to fail once).
    s.now_ms()
        .expect("a producer call after a restart reconnects");
    let r = s.cancel("per").unwrap();
    assert!(
        matches!(r, CancelOutcome::Cancelled | CancelOutcome::InFlight),
        "{r:?}"
    );
    jobs.get_mut("per").unwrap().cancelled_at = Some(s.now_ms().unwrap());
    w.stop();
    let events = w.events();
    let sum = check(&events, &jobs);
    // Acks made before the restart survived it: the early jobs ran once.
    for i in 0..100 {
        assert_eq!(
            sum.runs[&format!("early-{i}")],
            1,
            "early-{i} ran again after the restart"
        );
    }
}

fn cancel_racing_claim_is_exact(be: &Backend) {
    let o = WorkerOpts::new("race");
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let a = WorkerProc::spawn(&be.url, &be.dir, "a", &o);
    let b = WorkerProc::spawn(&be.url, &be.dir, "b", &o);
    let now = s.now_ms().unwrap();
    // Jobs come due while the cancels run, so claims and cancels interleave.
    let mut jobs = noops(&s, "c", 400, now + 100, 300);
    let mut outcomes = BTreeMap::new();
    for (i, id) in jobs
        .keys()
        .cloned()
        .collect::<Vec<_>>()
        .into_iter()
        .enumerate()
    {
        if i % 2 == 0 {
            let r = s.cancel(&id).unwrap();
            let t = s.now_ms().unwrap();
            jobs.get_mut(&id).unwrap().cancelled_at = Some(t);
            outcomes.insert(id, r);
        }
    }
    let mut a = a;
    let mut b = b;
    assert!(wait_until(Duration::from_secs(20), || {
        let ev = all_events(&[&a, &b]);
        jobs.iter()
            .filter(|(_, e)| e.cancelled_at.is_none())
            .all(|(id, _)| done(&ev, id))
    }));
    std::thread::sleep(Duration::from_millis(200));
    a.stop();
    b.stop();
    let events = all_events(&[&a, &b]);
    let sum = check(&events, &jobs);
    let mut seen = BTreeMap::new();
    for (id, r) in &outcomes {
        *seen.entry(format!("{r:?}")).or_insert(0) += 1;
        let runs = sum.runs[id];
        match r {
            CancelOutcome::Cancelled => {
                assert_eq!(runs, 0, "{id} was cancelled while pending but ran")
            }
            CancelOutcome::InFlight => {
                assert_eq!(runs, 1, "{id} was in flight at cancel: exactly that run")
            }
            CancelOutcome::AlreadyGone => {
                assert_eq!(runs, 1, "{id} had finished before the cancel")
            }
            CancelOutcome::NotFound => panic!("{id} was scheduled, cancel must find it"),
        }
        // Permanent: the id cannot be scheduled again.
        assert!(matches!(
            s.schedule(&Job::new(id.as_str(), "noop").unwrap()),
            Err(Error::Tombstoned(_))
        ));
    }
    eprintln!("cancel outcomes: {seen:?}");
}

fn the_same_id_scheduled_twice_runs_once(be: &Backend) {
    let o = WorkerOpts::new("dup");
    let url = be.url.clone();
    let now = RedisScheduler::connect(&url, o.config())
        .unwrap()
        .now_ms()
        .unwrap();
    let due = now + 300;
    // Eight producers race to schedule the same 50 ids.
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|p| {
            let (url, cfg, barrier) = (url.clone(), o.config(), barrier.clone());
            std::thread::spawn(move || {
                let s = RedisScheduler::connect(&url, cfg).unwrap();
                barrier.wait();
                (0..50)
                    .map(|i| {
                        s.schedule(
                            &Job::new(format!("d-{i}"), "noop")
                                .unwrap()
                                .payload(&p)
                                .unwrap()
                                .at_ms(due),
                        )
                    })
                    .map(|r| match r {
                        Ok(_) => true,
                        Err(Error::AlreadyScheduled(_)) => false,
                        Err(e) => panic!("unexpected {e}"),
                    })
                    .collect::<Vec<bool>>()
            })
        })
        .collect();
    let wins: Vec<Vec<bool>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for i in 0..50 {
        assert_eq!(
            wins.iter().filter(|w| w[i]).count(),
            1,
            "exactly one producer wins d-{i}"
        );
    }
    let jobs: BTreeMap<String, Expect> = (0..50).map(|i| (format!("d-{i}"), expect(due))).collect();
    let mut w = WorkerProc::spawn(&url, &be.dir, "w", &o);
    assert!(wait_until(Duration::from_secs(10), || {
        let ev = w.events();
        jobs.keys().all(|id| done(&ev, id))
    }));
    // After it ran, the id is a tombstone: a late duplicate is refused.
    let s = RedisScheduler::connect(&url, o.config()).unwrap();
    assert!(matches!(
        s.schedule(&Job::new("d-0", "noop").unwrap()),
        Err(Error::Tombstoned(_))
    ));
    w.stop();
    let sum = check(&w.events(), &jobs);
    assert!(sum.runs.values().all(|&n| n == 1), "{:?}", sum.runs);
}

fn three_workers_run_ten_thousand_jobs_exactly_once(be: &Backend) {
    let mut o = WorkerOpts::new("bulk");
    o.lease_ms = 10_000;
    o.heartbeat_ms = 2_000;
    o.shards = 8;
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let ws: Vec<WorkerProc> = (0..3)
        .map(|i| WorkerProc::spawn(&be.url, &be.dir, &format!("w{i}"), &o))
        .collect();
    let now = s.now_ms().unwrap();
    let jobs = noops(&s, "n", 10_000, now + 500, 1000);
    let refs: Vec<&WorkerProc> = ws.iter().collect();
    assert!(wait_until(Duration::from_secs(60), || {
        all_events(&refs)
            .iter()
            .filter(|e| e.ev == "end" && e.outcome == "done")
            .count()
            >= 10_000
    }));
    let mut ws = ws;
    for w in &mut ws {
        w.stop();
    }
    let refs: Vec<&WorkerProc> = ws.iter().collect();
    let events = all_events(&refs);
    let sum = check(&events, &jobs);
    assert!(
        sum.runs.values().all(|&n| n == 1),
        "without faults every job runs exactly once"
    );
    assert_eq!(sum.lease_losses, 0);
    assert_eq!(sum.repeated_fires, 0);
    let per_worker: Vec<usize> = refs
        .iter()
        .map(|w| w.events().iter().filter(|e| e.ev == "start").count())
        .collect();
    eprintln!("runs per worker: {per_worker:?}");
    assert!(
        per_worker.iter().all(|&n| n > 0),
        "all three workers took part: {per_worker:?}"
    );
}

fn connections_killed_under_load_lose_nothing(be: &Backend) {
    // Fault 3 of the design, without a proxy: Redis drops every worker
    // connection several times while claims, extensions and acks are in
    // flight, so some replies are lost after their script ran (a claim whose
    // reply is lost leaves a lease nobody holds; the reaper recovers it).
    let mut o = WorkerOpts::new("drop");
    o.lease_ms = 800;
    o.heartbeat_ms = 200;
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let mut wa = WorkerProc::spawn(&be.url, &be.dir, "a", &o);
    let mut wb = WorkerProc::spawn(&be.url, &be.dir, "b", &o);
    let now = s.now_ms().unwrap();
    let mut jobs = BTreeMap::new();
    for i in 0..150 {
        let id = format!("s-{i}");
        let due = s
            .schedule(
                &Job::new(id.as_str(), "sleep")
                    .unwrap()
                    .payload(&20)
                    .unwrap()
                    .at_ms(now + 100 + i * 8),
            )
            .unwrap();
        jobs.insert(id, expect(due));
    }
    let mut cons = be.node_connections();
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(150));
        for con in &mut cons {
            let _: i64 = redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("normal")
                .arg("SKIPME")
                .arg("yes")
                .query(con)
                .unwrap();
        }
    }
    // Completion is read from Redis: a worker whose ack reply was lost
    // cannot know that its ack was applied.
    assert!(
        wait_until(Duration::from_secs(30), || drained(&be.url, &o)),
        "every job must run and be acked despite the dropped connections"
    );
    wa.stop();
    wb.stop();
    let sum = check_lost_replies(&all_events(&[&wa, &wb]), &jobs);
    // Our own producer connection was dropped too: the next call reconnects.
    let _ = s.now_ms();
    for id in jobs.keys() {
        assert!(
            matches!(s.inspect(id), Ok(Some(JobInfo::Tombstone { .. }))),
            "{id} not acked"
        );
    }
    eprintln!(
        "repeated fires {}, lease losses {}",
        sum.repeated_fires, sum.lease_losses
    );
}

on_one_server_and_on_the_cluster!(
    kill9_mid_handler_redoes_the_job_with_the_same_fire_id,
    kill9_with_a_full_buffer_runs_every_buffered_job_once_its_lease_lapses,
    sigstop_past_the_lease_then_sigcont_gets_its_ack_refused,
    all_workers_down_across_slice_boundaries_everything_overdue_fires_after_restart,
    cancel_racing_claim_is_exact,
    the_same_id_scheduled_twice_runs_once,
    three_workers_run_ten_thousand_jobs_exactly_once,
    connections_killed_under_load_lose_nothing,
);
