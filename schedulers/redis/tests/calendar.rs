//! Calendar jobs (cron in an IANA zone) and the missed-run and panic
//! policies on Redis: the API with an in-process worker, then the fault
//! scenarios around cron boundaries with worker processes, on one server and
//! on the shared Cluster (`cluster::…`).
//!
//! The cron is Quartz's per-second `* * * * * ?` (or a per-second one
//! restricted to hours of the zone), so a scenario sees several fires in a
//! few seconds.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use schedulers_redis::calendar::jiff::Timestamp;
use schedulers_redis::calendar::{Calendar, MissedRuns, OnPanic};
use schedulers_redis::{
    AckOutcome, CancelOutcome, Config, Error, Job, JobInfo, JobState, RedisScheduler, Worker,
    WorkerEvent,
};

use crate::support::{
    all_events, check, config, fire_times, fires_at, server, wait_until, worker, Backend, Event,
    Expect, Grid, Log, WorkerOpts, WorkerProc,
};

fn every_second(zone: &str) -> Calendar {
    Calendar::parse_in("* * * * * ?", zone).unwrap()
}

/// The due time and outcome of every finished run of `id`.
fn finished(log: &Log, id: &str) -> Vec<(i64, AckOutcome, Option<String>)> {
    log.lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::Finished {
                fire,
                outcome,
                error,
                ..
            } if fire.id == id => Some((fire.due_ms, outcome.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

fn next_fire(cal: &Calendar, ms: i64) -> i64 {
    cal.next_after(Timestamp::from_millisecond(ms).unwrap())
        .unwrap()
        .as_millisecond()
}

/// A calendar in a zone 10.5-11 hours off UTC, firing every second of the
/// zone's current hour and the next: a worker that read it in any other
/// zone would plan its next fire hours away.
#[test]
fn a_calendar_job_fires_at_the_previews_instants_in_its_zone() {
    let Some(redis) = server() else { return };
    let s = RedisScheduler::connect(&redis.url(), config("cal-zone")).unwrap();
    let before = s.now_ms().unwrap();
    let zone = "Australia/Lord_Howe";
    let hour = Timestamp::from_millisecond(before)
        .unwrap()
        .in_tz(zone)
        .unwrap()
        .hour();
    let cal = Calendar::parse_in(&format!("* * {hour},{} * * ?", (hour + 1) % 24), zone).unwrap();
    let first = s.schedule_calendar("c", "tick", &"p", &cal).unwrap();
    assert!(
        first > before && first <= before + 2000 && fires_at(&cal, first),
        "the first fire time after Redis's clock: {first}, clock {before}"
    );
    match s.inspect("c").unwrap() {
        Some(JobInfo::Live {
            state: JobState::Scheduled,
            due_ms,
            period_ms: 0,
            ..
        }) => assert_eq!(due_ms, first),
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(
            s.schedule_calendar("c", "tick", &"p", &cal),
            Err(Error::AlreadyScheduled(_))
        ),
        "the id is the idempotency key"
    );

    let log: Log = Arc::default();
    let w = worker(&redis.url(), "cal-zone", &log)
        .handler("tick", |_| Ok(()))
        .start()
        .unwrap();
    assert!(wait_until(Duration::from_secs(15), || finished(&log, "c")
        .len()
        >= 3));
    assert!(matches!(
        s.cancel("c").unwrap(),
        CancelOutcome::Cancelled | CancelOutcome::InFlight
    ));
    w.shutdown();
    w.join();

    let preview = fire_times(&cal, first, first + 10_000);
    let runs = finished(&log, "c");
    let dues: Vec<i64> = runs.iter().map(|r| r.0).take(3).collect();
    assert_eq!(dues, preview[..3], "the live fires are the preview's");
    for (due, outcome, _) in &runs[..2] {
        assert_eq!(
            *outcome,
            AckOutcome::Next(next_fire(&cal, *due)),
            "each ack moves the job to the next fire time"
        );
    }
    for e in log.lock().unwrap().iter() {
        if let WorkerEvent::Started { fire, at_ms } = e {
            assert!(*at_ms >= fire.due_ms && fire.claimed_ms >= fire.due_ms);
            assert_eq!((fire.payload.as_str(), fire.period_ms), ("\"p\"", 0));
        }
    }
}

#[test]
fn calendar_schedules_that_do_not_hold_together_are_refused() {
    let Some(redis) = server() else { return };
    let s = RedisScheduler::connect(&redis.url(), config("cal-bad")).unwrap();
    let cal = every_second("Europe/Berlin");
    let job = || Job::new("j", "k").unwrap();
    // A fixed offset has no IANA name for the workers to read back.
    let fixed = Calendar::new(
        cal.cron().clone(),
        schedulers_redis::calendar::jiff::tz::TimeZone::fixed(
            schedulers_redis::calendar::jiff::tz::offset(2),
        ),
    );
    assert!(matches!(
        job().on_calendar(&fixed),
        Err(Error::InvalidSchedule(_))
    ));
    // A calendar's grid cannot move.
    let delay = job()
        .on_calendar(&cal)
        .unwrap()
        .missed_runs(MissedRuns::Delay);
    assert!(matches!(s.schedule(&delay), Err(Error::Calendar(e)) if e.is_delay_on_calendar()));
    // Policies are for periodic jobs; a calendar job is due at its fires.
    assert!(matches!(
        s.schedule(&job().on_panic(OnPanic::Continue)),
        Err(Error::InvalidSchedule(_))
    ));
    assert!(matches!(
        s.schedule(&job().lateness_tolerance(Duration::from_secs(1))),
        Err(Error::InvalidSchedule(_))
    ));
    assert!(matches!(
        s.schedule(
            &job()
                .on_calendar(&cal)
                .unwrap()
                .after(Duration::from_secs(5))
        ),
        Err(Error::InvalidSchedule(_))
    ));
    // No fire time left.
    let past = Calendar::parse("0 0 0 1 1 ? 2020").unwrap();
    assert!(matches!(
        s.schedule_calendar("j", "k", &(), &past),
        Err(Error::InvalidSchedule(_))
    ));
    // A bad expression converts with `?`.
    let parsed = || -> Result<Calendar, Error> { Ok(Calendar::parse_in("0 25 * * *", "UTC")?) };
    assert!(matches!(parsed(), Err(Error::Calendar(e)) if e.is_syntax()));
    assert_eq!(s.job_count().unwrap(), 0, "nothing refused was stored");
}

#[test]
fn on_panic_continue_keeps_the_schedule_and_stop_dead_letters_it() {
    let Some(redis) = server() else { return };
    let log: Log = Arc::default();
    let w = worker(&redis.url(), "cal-panic", &log)
        .max_attempts(1)
        .handler("fail", |_| Err("no luck".into()))
        .handler("panic", |_| panic!("boom"))
        .start()
        .unwrap();
    let s = RedisScheduler::connect(&redis.url(), config("cal-panic")).unwrap();
    let cal = every_second("UTC");
    let on = |id: &str, kind: &str| Job::new(id, kind).unwrap().on_calendar(&cal).unwrap();
    s.schedule(&on("cont", "panic").on_panic(OnPanic::Continue))
        .unwrap();
    s.schedule(&on("stop", "fail")).unwrap();
    // A coalescing fixed-rate job: its next fire is the script's to compute.
    let rate = Job::new("rate", "fail")
        .unwrap()
        .at_fixed_rate(Duration::ZERO, Duration::from_millis(300))
        .unwrap()
        .on_panic(OnPanic::Continue);
    let rate_first = s.schedule(&rate).unwrap();
    let nexts = |id| {
        finished(&log, id)
            .iter()
            .filter(|r| matches!(r.1, AckOutcome::Next(_)))
            .count()
    };
    assert!(wait_until(Duration::from_secs(15), || nexts("cont") >= 2
        && nexts("rate") >= 2
        && finished(&log, "stop")
            .iter()
            .any(|r| r.1 == AckOutcome::Dead)));
    for id in ["cont", "rate"] {
        assert!(matches!(
            s.cancel(id).unwrap(),
            CancelOutcome::Cancelled | CancelOutcome::InFlight
        ));
    }
    w.shutdown();
    w.join();

    for (due, outcome, error) in finished(&log, "cont") {
        if let AckOutcome::Next(next) = outcome {
            assert_eq!(
                next,
                next_fire(&cal, due),
                "the failed fire gives way to the next"
            );
            assert_eq!(error.as_deref(), Some("the task panicked: boom"));
        }
    }
    for (due, outcome, _) in finished(&log, "rate") {
        if let AckOutcome::Next(next) = outcome {
            assert!(next > due && (next - rate_first) % 300 == 0, "on the grid");
        }
    }
    assert_eq!(
        finished(&log, "stop").len(),
        1,
        "Stop: the failed fire was the last"
    );
    let dead: Vec<String> = s.dead_letters().unwrap().into_iter().map(|d| d.0).collect();
    assert_eq!(dead, ["stop"]);
    match s.inspect("stop").unwrap() {
        Some(JobInfo::Live {
            state: JobState::Dead,
            last_error: Some(e),
            ..
        }) => assert_eq!(e, "no luck"),
        other => panic!("{other:?}"),
    }
}

/// A Quartz expression with a year names one second: after it, the job
/// ends as a one-shot job does, tombstoned.
#[test]
fn a_calendar_past_its_last_fire_time_ends_like_a_one_shot_job() {
    let Some(redis) = server() else { return };
    let s = RedisScheduler::connect(&redis.url(), config("cal-last")).unwrap();
    let at = (s.now_ms().unwrap() / 1000 + 2) * 1000;
    let t = Timestamp::from_millisecond(at)
        .unwrap()
        .in_tz("UTC")
        .unwrap();
    let cron = format!(
        "{} {} {} {} {} ? {}",
        t.second(),
        t.minute(),
        t.hour(),
        t.day(),
        t.month(),
        t.year()
    );
    let cal = Calendar::parse(&cron).unwrap();
    assert_eq!(s.schedule_calendar("once", "tick", &(), &cal).unwrap(), at);
    let log: Log = Arc::default();
    let w = worker(&redis.url(), "cal-last", &log)
        .handler("tick", |_| Ok(()))
        .start()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || !finished(
        &log, "once"
    )
    .is_empty()));
    w.shutdown();
    w.join();
    assert_eq!(finished(&log, "once"), [(at, AckOutcome::Done, None)]);
    assert!(matches!(
        s.inspect("once").unwrap(),
        Some(JobInfo::Tombstone { .. })
    ));
    assert!(matches!(
        s.schedule(&Job::new("once", "tick").unwrap()),
        Err(Error::Tombstoned(_))
    ));
    // Its calendar has no fire time left now.
    assert!(matches!(
        s.schedule_calendar("again", "tick", &(), &cal),
        Err(Error::InvalidSchedule(_))
    ));
}

/// The crate docs' example (`lib.rs`, "Calendar jobs"), run.
#[test]
fn the_crate_docs_calendar_example_runs() {
    let Some(redis) = server() else { return };
    let url = redis.url();
    let config = Config::default().namespace("reports");

    let sched = RedisScheduler::connect(&url, config.clone()).unwrap();
    let weekdays = Calendar::parse_in("0 0 9 ? * MON-FRI", "Europe/Berlin").unwrap();
    let digest = Job::new("digest", "digest")
        .unwrap()
        .on_calendar(&weekdays)
        .unwrap()
        .missed_runs(MissedRuns::OnceNow)
        .lateness_tolerance(Duration::from_secs(60))
        .on_panic(OnPanic::Continue);
    let first = sched.schedule(&digest).unwrap();
    let after = Timestamp::from_millisecond(sched.now_ms().unwrap()).unwrap();
    assert_eq!(
        first,
        weekdays.next_after(after).unwrap().as_millisecond(),
        "the next weekday 09:00 in Berlin"
    );

    let worker = Worker::builder(&url, config)
        .handler("digest", |fire| {
            println!("digest for {} (dedup key {})", fire.due_ms, fire.fire_id());
            Ok(())
        })
        .start()
        .unwrap();
    worker.shutdown();
    worker.join();
    assert_eq!(sched.cancel("digest").unwrap(), CancelOutcome::Cancelled);
}

// Fault scenarios: worker processes, histories, the checker.

/// Starts of `id`, in history order.
fn starts<'a>(events: &'a [Event], id: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.ev == "start" && e.id == id)
        .collect()
}

/// Ends of `id` whose ack was applied (`next` or `done`).
fn acked<'a>(events: &'a [Event], id: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.ev == "end" && e.id == id && (e.outcome == "next" || e.outcome == "done"))
        .collect()
}

/// The latest due time of an acked run of `id`.
fn last_acked(events: &[Event], id: &str) -> Option<i64> {
    acked(events, id).iter().map(|e| e.due).max()
}

/// Every applied ack moved the job to the fire time after the one its run
/// stood for, whatever the policy (once now and skip run only for a point
/// whose next is the first after the claim).
fn assert_acks_chain(events: &[Event], id: &str, cal: &Calendar) {
    for e in acked(events, id) {
        if e.outcome == "next" {
            assert_eq!(
                e.next,
                Some(next_fire(cal, e.due)),
                "{id}: the ack of {} wrote another next fire",
                e.due
            );
        }
    }
}

/// No fire lost (catch-up): every fire time of `cal` from `from` to `to`
/// ran and was acked, and the acks chain; a fire ran more than once only
/// after a lease loss (`check` says which). Returns how many fires ran more
/// than once.
fn assert_every_fire_ran_and_was_acked(
    events: &[Event],
    id: &str,
    cal: &Calendar,
    from: i64,
    to: i64,
) -> usize {
    let acked_dues: Vec<i64> = acked(events, id).iter().map(|e| e.due).collect();
    for t in fire_times(cal, from, to) {
        assert!(
            acked_dues.contains(&t),
            "{id}: the fire at {t} was lost (acked: {acked_dues:?})"
        );
    }
    assert_acks_chain(events, id, cal);
    let mut dues: Vec<i64> = starts(events, id).iter().map(|e| e.due).collect();
    dues.sort_unstable();
    let n = dues.len();
    dues.dedup();
    n - dues.len()
}

/// Stops (SIGSTOP) the worker running a fire of `id` while the run is
/// still going: the first run with no end in its worker's history, checked
/// again once the worker is frozen (a loaded machine may have let it
/// finish first: then it goes on, and the next run is taken). Returns the
/// run's start.
fn freeze_mid_run(ws: &[&WorkerProc], id: &str) -> Event {
    let ended = |w: &WorkerProc, start: &Event| {
        w.events()
            .iter()
            .any(|e| e.ev == "end" && e.id == id && e.fence == start.fence)
    };
    for _ in 0..5 {
        let mut run = None;
        assert!(wait_until(Duration::from_secs(10), || {
            run = ws.iter().find_map(|w| {
                starts(&w.events(), id)
                    .into_iter()
                    .find(|e| !ended(w, e))
                    .cloned()
                    .map(|e| (*w, e))
            });
            run.is_some()
        }));
        let (w, start) = run.unwrap();
        w.signal("STOP");
        if !ended(w, &start) {
            return start;
        }
        w.signal("CONT");
    }
    panic!("no run of {id} could be caught before its end");
}

/// Waits until Redis's clock reads `ms`.
fn wait_for_redis_time(s: &RedisScheduler, ms: i64) {
    assert!(wait_until(Duration::from_secs(10), || s.now_ms().unwrap() >= ms));
}

/// `kill -9` of the worker running a fire (mid-handler), then of a worker
/// just after a cron boundary (it may have claimed the new fire or not): no
/// fire time is lost, the killed fire runs again with the same fire id, and
/// every next fire is written once, by the worker whose ack holds the
/// fence.
fn calendar_kill9_around_a_cron_boundary_loses_no_fire(be: &Backend) {
    let o = WorkerOpts::new("cal-k9");
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let cal = every_second("America/New_York");
    let mut ws: BTreeMap<&str, WorkerProc> = ["a", "b"]
        .into_iter()
        .map(|n| (n, WorkerProc::spawn(&be.url, &be.dir, n, &o)))
        .collect();
    let job = Job::new("tick", "sleep")
        .unwrap()
        .payload(&400)
        .unwrap()
        .on_calendar(&cal)
        .unwrap();
    let first = s.schedule(&job).unwrap();
    let events = |ws: &BTreeMap<&str, WorkerProc>| all_events(&ws.values().collect::<Vec<_>>());

    // 1. Mid-handler: the run started, its 400 ms are not over.
    let killed = freeze_mid_run(&ws.values().collect::<Vec<_>>(), "tick");
    ws.get_mut(killed.worker.as_str()).unwrap().kill9();
    ws.insert("c", WorkerProc::spawn(&be.url, &be.dir, "c", &o));
    assert!(
        wait_until(Duration::from_secs(10), || acked(&events(&ws), "tick")
            .iter()
            .any(|e| e.due == killed.due)),
        "the killed fire runs again elsewhere"
    );

    // 2. Around a boundary: once caught up, 5 ms after the next fire time
    // an ack wrote, kill the worker that wrote it (which may or may not
    // have claimed that fire).
    let mut ack = None;
    assert!(wait_until(Duration::from_secs(10), || {
        let latest = acked(&events(&ws), "tick")
            .into_iter()
            .max_by_key(|e| e.due)
            .cloned();
        ack = latest.filter(|e| e.next.is_some_and(|n| n > s.now_ms().unwrap()));
        ack.is_some()
    }));
    let ack = ack.unwrap();
    let boundary = ack.next.unwrap();
    wait_for_redis_time(&s, boundary + 5);
    ws.get_mut(ack.worker.as_str()).unwrap().kill9();
    let alive: Vec<&str> = ["a", "b", "c"]
        .into_iter()
        .filter(|n| *n != killed.worker && *n != ack.worker)
        .collect();
    assert!(
        wait_until(Duration::from_secs(15), || last_acked(
            &all_events(&alive.iter().map(|n| &ws[n]).collect::<Vec<_>>()),
            "tick"
        )
        .is_some_and(|t| t >= boundary + 1000)),
        "the last worker goes on past the boundary"
    );
    assert!(matches!(
        s.cancel("tick").unwrap(),
        CancelOutcome::Cancelled | CancelOutcome::InFlight
    ));
    let cancelled_at = s.now_ms().unwrap();
    for n in &alive {
        ws.get_mut(n).unwrap().stop();
    }

    let events = events(&ws);
    let jobs = BTreeMap::from([(
        "tick".to_owned(),
        Expect {
            cancelled_at: Some(cancelled_at),
            ..Expect::calendar(first, &cal)
        },
    )]);
    let sum = check(&events, &jobs);
    let twice = assert_every_fire_ran_and_was_acked(
        &events,
        "tick",
        &cal,
        first,
        last_acked(&events, "tick").unwrap(),
    );
    let again: Vec<&Event> = starts(&events, "tick")
        .into_iter()
        .filter(|e| e.due == killed.due)
        .collect();
    assert!(
        again.len() >= 2 && again.iter().all(|e| e.fire == killed.fire),
        "the fire killed mid-run ran again with its fire id: {again:?}"
    );
    assert!(twice >= 1 && twice <= sum.lease_losses);
    eprintln!(
        "calendar kill -9: {} runs, {twice} fires run twice, {} lease losses",
        sum.runs["tick"], sum.lease_losses
    );
}

/// SIGSTOP of the worker running a fire, past its lease, then SIGCONT:
/// another worker runs the fire again (same fire id) and writes the next
/// fire; the resumed worker's ack, with its plan of the same next fire, is
/// refused by the fence, so the next fire is written once and runs at most
/// once. The job skips missed runs with a tolerance shorter than the pause:
/// the redelivery is late, yet runs, since the fire was planned at its
/// first claim (on time) and a fire handed to a handler is never skipped.
fn calendar_sigstop_past_the_lease_then_sigcont_writes_no_next_fire(be: &Backend) {
    let o = WorkerOpts::new("cal-stop");
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let cal = every_second("Europe/Berlin");
    let a = WorkerProc::spawn(&be.url, &be.dir, "a", &o);
    let b = WorkerProc::spawn(&be.url, &be.dir, "b", &o);
    let job = Job::new("tick", "sleep")
        .unwrap()
        .payload(&300)
        .unwrap()
        .on_calendar(&cal)
        .unwrap()
        .missed_runs(MissedRuns::Skip)
        .lateness_tolerance(Duration::from_millis(300));
    let first = s.schedule(&job).unwrap();
    let paused_run = freeze_mid_run(&[&a, &b], "tick");
    let (mut paused, mut other) = if paused_run.worker == "a" {
        (a, b)
    } else {
        (b, a)
    };
    let redone = wait_until(Duration::from_secs(10), || {
        acked(&other.events(), "tick")
            .iter()
            .any(|e| e.due == paused_run.due)
    });
    paused.signal("CONT");
    assert!(redone, "another worker runs the paused worker's fire");
    assert!(
        wait_until(Duration::from_secs(10), || paused
            .events()
            .iter()
            .any(|e| e.ev == "end" && e.fence == paused_run.fence)),
        "the resumed worker finishes its run and acks"
    );
    let stale = paused
        .events()
        .into_iter()
        .find(|e| e.ev == "end" && e.fence == paused_run.fence)
        .unwrap();
    assert_eq!(
        (stale.outcome.as_str(), stale.next),
        ("stale", None),
        "the paused worker's ack and its next fire are refused"
    );
    assert!(wait_until(Duration::from_secs(10), || last_acked(
        &other.events(),
        "tick"
    )
    .is_some_and(|t| t >= paused_run.due + 1000)));
    assert!(matches!(
        s.cancel("tick").unwrap(),
        CancelOutcome::Cancelled | CancelOutcome::InFlight
    ));
    let cancelled_at = s.now_ms().unwrap();
    paused.stop();
    other.stop();

    let events = all_events(&[&paused, &other]);
    let jobs = BTreeMap::from([(
        "tick".to_owned(),
        Expect {
            cancelled_at: Some(cancelled_at),
            ..Expect::calendar(first, &cal)
        },
    )]);
    check(&events, &jobs);
    let again: Vec<&Event> = starts(&events, "tick")
        .into_iter()
        .filter(|e| e.due == paused_run.due)
        .collect();
    assert!(
        again.len() >= 2 && again[1].claimed > paused_run.due + 300,
        "the redelivery was late, and ran: {again:?}"
    );
    assert_acks_chain(&events, "tick", &cal);
    assert_policy_grid(&events, "tick", &cal, first);
    // The fire after the paused one ran at most once: its next was written
    // once (the checker allows a repeat only after a recorded lease loss).
    let after = next_fire(&cal, paused_run.due);
    let runs = starts(&events, "tick")
        .iter()
        .filter(|e| e.due == after)
        .count();
    let lost = events
        .iter()
        .any(|e| e.due == after && matches!(e.ev.as_str(), "reaped" | "lost"));
    assert!(runs <= 1 || lost, "the fire at {after} ran {runs} times");
}

/// Every worker down for more than two periods of a per-second calendar
/// (three fire times or more missed), then one back: each job's missed-run
/// policy decides what runs.
fn calendar_outage_of_several_periods_applies_each_missed_run_policy(be: &Backend) {
    let o = WorkerOpts::new("cal-out");
    let s = RedisScheduler::connect(&be.url, o.config()).unwrap();
    let cal = every_second("Asia/Tokyo");
    let tolerance = Duration::from_millis(300);
    let on = |id: &str| Job::new(id, "noop").unwrap().on_calendar(&cal).unwrap();
    let mut jobs = BTreeMap::new();
    for job in [
        on("catch-up"),
        on("skip")
            .missed_runs(MissedRuns::Skip)
            .lateness_tolerance(tolerance),
        on("once-now")
            .missed_runs(MissedRuns::OnceNow)
            .lateness_tolerance(tolerance),
    ] {
        let due = s.schedule(&job).unwrap();
        jobs.insert(job.id().to_owned(), Expect::calendar(due, &cal));
    }
    let delay = Job::new("delay", "noop")
        .unwrap()
        .at_fixed_rate(Duration::ZERO, Duration::from_millis(1000))
        .unwrap()
        .missed_runs(MissedRuns::Delay)
        .lateness_tolerance(tolerance);
    let delay_first = s.schedule(&delay).unwrap();
    jobs.insert("delay".to_owned(), Expect::on(delay_first, Grid::Moves));
    let last_first = jobs.values().map(|e| e.due).max().unwrap();
    wait_for_redis_time(&s, last_first + 2200);
    let back_at = s.now_ms().unwrap();

    let mut w = WorkerProc::spawn(&be.url, &be.dir, "w", &o);
    assert!(
        wait_until(Duration::from_secs(15), || {
            let ev = w.events();
            jobs.keys()
                .all(|id| last_acked(&ev, id).is_some_and(|t| t >= back_at + 1000))
        }),
        "every job runs again after the outage"
    );
    for (id, exp) in jobs.iter_mut() {
        assert!(matches!(
            s.cancel(id).unwrap(),
            CancelOutcome::Cancelled | CancelOutcome::InFlight
        ));
        exp.cancelled_at = Some(s.now_ms().unwrap());
    }
    w.stop();
    let events = w.events();
    check(&events, &jobs);

    // Catch-up: every missed fire ran, back to back after the restart.
    let first = jobs["catch-up"].due;
    assert_every_fire_ran_and_was_acked(
        &events,
        "catch-up",
        &cal,
        first,
        last_acked(&events, "catch-up").unwrap(),
    );
    let missed: Vec<&Event> = starts(&events, "catch-up")
        .into_iter()
        .filter(|e| e.due < back_at)
        .collect();
    assert!(
        missed.len() >= 3 && missed.iter().all(|e| e.claimed >= back_at),
        "catch-up runs the missed fires after the restart: {missed:?}"
    );

    // Skip: the first claim, late, runs nothing and passes over every fire
    // time due by then; the job goes on from the next one.
    let first = jobs["skip"].due;
    let skip = events
        .iter()
        .find(|e| e.ev == "skipped" && e.id == "skip")
        .expect("the late fire is skipped");
    assert_eq!(skip.due, first);
    assert_eq!(
        skip.skipped as usize,
        fire_times(&cal, first, skip.claimed).len(),
        "every fire time due by the first claim is passed over"
    );
    assert!(skip.skipped >= 3);
    assert_eq!(skip.next, Some(next_fire(&cal, skip.claimed)));
    assert!(
        starts(&events, "skip").iter().all(|e| e.due > skip.claimed),
        "no missed fire runs"
    );
    assert_policy_grid(&events, "skip", &cal, skip.next.unwrap());

    // Once now: one run, for the latest missed fire time, then the grid.
    let runs = starts(&events, "once-now");
    let once = runs[0];
    assert_eq!(
        once.due,
        *fire_times(&cal, jobs["once-now"].due, once.claimed)
            .last()
            .unwrap(),
        "the one run stands for the latest missed fire time"
    );
    assert!(
        once.due >= jobs["once-now"].due + 2000,
        "several periods were missed"
    );
    assert_policy_grid(&events, "once-now", &cal, once.due);

    // Delay (fixed rate): one run at the first claim, and the grid moves
    // there.
    let runs = starts(&events, "delay");
    assert_eq!(
        runs[0].due, runs[0].claimed,
        "the run stands for its first claim"
    );
    assert!(runs[0].claimed >= back_at);
    assert!(runs.len() >= 2);
    // Then on the moved grid; a later late claim (a loaded machine) moves
    // it again, to that claim.
    let mut anchor = runs[0].due;
    for r in &runs[1..] {
        if r.due == r.claimed && r.attempt == 1 {
            anchor = r.due;
        }
        assert_eq!((r.due - anchor) % 1000, 0, "off the moved grid: {r:?}");
    }
}

/// After a policy's first decision, every fire time from `from` on runs,
/// but those a later late claim passed over: recorded as skipped, or run
/// for by the next run's later point (once now), first claimed after them.
/// A loaded machine may claim a fire later than the tolerance.
fn assert_policy_grid(events: &[Event], id: &str, cal: &Calendar, from: i64) {
    let ran: Vec<&Event> = starts(events, id);
    let until = last_acked(events, id).unwrap();
    for t in fire_times(cal, from, until) {
        let skipped = events
            .iter()
            .any(|e| e.id == id && e.ev == "skipped" && e.due <= t && t <= e.claimed);
        let run_for_later = ran
            .iter()
            .filter(|e| e.due > t)
            .min_by_key(|e| e.due)
            .is_some_and(|e| e.attempt == 1 && t <= e.claimed);
        assert!(
            ran.iter().any(|e| e.due == t) || skipped || run_for_later,
            "{id}: the fire at {t} neither ran nor was passed over by its policy"
        );
    }
}

on_one_server_and_on_the_cluster!(
    calendar_kill9_around_a_cron_boundary_loses_no_fire,
    calendar_sigstop_past_the_lease_then_sigcont_writes_no_next_fire,
    calendar_outage_of_several_periods_applies_each_missed_run_policy,
);
