//! One function per promise of the contract (see `Scheduler`'s docs).

use std::sync::{mpsc, Arc, OnceLock};
use std::time::Duration;

use schedulers::{OnShutdown, Scheduler, SchedulerExt, ShutdownPolicy, Task, TaskHandle};

use super::{ms, secs, Counter, Harness, Log, OverlapDetector, SelfHandle};

// ---- timing -------------------------------------------------------------

pub fn never_early(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let delays = [ms(1), ms(7), ms(250), secs(3), secs(90), secs(3600)];
    for (i, d) in delays.iter().enumerate() {
        let (log, clock) = (log.clone(), h.clock.clone());
        s.schedule(*d, move || log.record(&clock, i)).unwrap();
    }
    for (i, d) in delays.iter().enumerate() {
        // Just before the deadline nothing due later has started.
        let before = *d - Duration::from_nanos(1);
        if before > h.now() {
            h.advance(before - h.now());
        }
        assert_eq!(
            log.len(),
            i,
            "task {i} (due {d:?}) or a later one started early"
        );
        h.advance_past(*d);
        assert_eq!(
            log.len(),
            i + 1,
            "task {i} (due {d:?}) did not start within the granularity"
        );
    }
    for (i, (label, at)) in log.entries().into_iter().enumerate() {
        assert_eq!(label, i);
        h.assert_on_time(at, delays[i]);
    }
}

pub fn fires_within_granularity_across_delays(h: &Harness) {
    // Deadlines on, just before and just after tick boundaries, and across
    // several wheel revolutions.
    let s = h.scheduler();
    let log = Log::new();
    let mut delays = Vec::new();
    for base in [1u64, 10, 64, 100, 512, 1000, 5_000, 65_536] {
        for nudge in [-1i64, 0, 1] {
            let us = (base * 1000) as i64 + nudge * 500;
            delays.push(Duration::from_micros(us as u64));
        }
    }
    for (i, d) in delays.iter().enumerate() {
        let (log, clock) = (log.clone(), h.clock.clone());
        s.schedule(*d, move || log.record(&clock, i)).unwrap();
    }
    let mut step = Duration::ZERO;
    while log.len() < delays.len() && step < secs(200) {
        h.advance(Duration::from_micros(250));
        step += Duration::from_micros(250);
    }
    let entries = log.entries();
    assert_eq!(entries.len(), delays.len());
    for (i, at) in entries {
        h.assert_on_time(at, delays[i]);
    }
}

pub fn one_shot_runs_exactly_once(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let r = runs.clone();
    let handle = s.schedule(ms(100), move || r.bump()).unwrap();
    for _ in 0..10 {
        h.advance_ms(100);
    }
    assert_eq!(runs.get(), 1);
    assert!(handle.handle().is_done());
    assert!(!handle.handle().is_cancelled());
    assert!(!handle.handle().is_pending());
    assert_eq!(handle.handle().remaining(), Duration::ZERO);
}

pub fn one_shot_returns_its_value(h: &Harness) {
    let s = h.scheduler();
    let future = s.schedule(secs(1), || String::from("forty-two")).unwrap();
    h.advance_past(secs(1));
    assert!(future.handle().is_done());
    assert_eq!(
        future
            .handle()
            .wait_timeout(secs(10))
            .map(|()| "ok")
            .unwrap(),
        "ok"
    );
    assert_eq!(future.get().unwrap(), "forty-two");
}

pub fn zero_delay_runs_at_once(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    s.schedule(Duration::ZERO, move || l.record(&clock, ()))
        .unwrap();
    h.advance_past(Duration::ZERO);
    assert_eq!(log.len(), 1);
    h.assert_on_time(log.times()[0], Duration::ZERO);
}

// ---- cancel -------------------------------------------------------------

pub fn cancel_before_fire_prevents_the_run(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let r = runs.clone();
    let handle = s.schedule(secs(5), move || r.bump()).unwrap();
    let periodic = {
        let r = runs.clone();
        s.schedule_at_fixed_rate(secs(1), secs(1), move || r.bump())
            .unwrap()
    };
    h.advance(secs(4));
    assert_eq!(runs.get(), 4, "the periodic task ran at 1, 2, 3 and 4 s");
    assert!(
        handle.handle().cancel(),
        "the first cancel of a pending task stops it"
    );
    assert!(periodic.cancel());
    assert!(!handle.handle().cancel(), "a second cancel stops nothing");
    assert!(!periodic.cancel());
    assert!(handle.handle().is_cancelled() && handle.handle().is_done());
    assert!(periodic.is_cancelled() && periodic.is_done());
    h.advance(secs(60));
    assert_eq!(runs.get(), 4, "nothing ran after a successful cancel");
    assert!(handle.handle().wait().unwrap_err().is_cancelled());
    assert!(periodic.wait().unwrap_err().is_cancelled());
}

pub fn cancel_after_fire_returns_false(h: &Harness) {
    let s = h.scheduler();
    let handle = s.schedule(ms(10), || ()).unwrap();
    h.advance_past(ms(10));
    assert!(!handle.handle().cancel());
    assert!(!handle.handle().is_cancelled());
    assert!(handle.handle().is_done());
    assert!(handle.handle().wait().is_ok());
}

pub fn cancel_one_shot_from_inside_returns_false(h: &Harness) {
    let s = h.scheduler();
    let me: SelfHandle = Arc::new(OnceLock::new());
    let m = me.clone();
    let handle = s
        .schedule(ms(10), move || m.get().map(|h| h.cancel()))
        .unwrap();
    me.set(handle.handle().clone()).unwrap();
    h.advance_past(ms(10));
    assert_eq!(
        handle.get().unwrap(),
        Some(false),
        "a running one-shot has no future run to stop"
    );
}

pub fn cancel_periodic_from_inside_stops_it(h: &Harness) {
    let s = h.scheduler();
    let me: SelfHandle = Arc::new(OnceLock::new());
    let results = Log::new();
    let (m, r, clock) = (me.clone(), results.clone(), h.clock.clone());
    let handle = s
        .schedule_at_fixed_rate(ms(10), ms(10), move || {
            if r.len() == 2 {
                let stopped = m.get().map(|h| h.cancel()).unwrap_or(false);
                r.record(&clock, stopped);
            } else {
                r.record(&clock, false);
            }
        })
        .unwrap();
    me.set(handle.clone()).unwrap();
    h.advance_past(ms(100));
    assert_eq!(
        results.labels(),
        [false, false, true],
        "the third run cancelled the task"
    );
    assert!(handle.is_cancelled());
    assert!(handle.is_done());
}

// ---- reset --------------------------------------------------------------

pub fn reset_moves_the_deadline_later(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let handle = s.schedule(secs(10), move || l.record(&clock, ())).unwrap();
    h.advance(secs(8));
    assert!(
        handle.handle().reset(secs(10)).unwrap(),
        "a pending task can be moved"
    );
    h.advance_past(secs(10));
    assert_eq!(log.len(), 0, "the old deadline no longer fires");
    h.advance_past(secs(18));
    assert_eq!(log.len(), 1);
    h.assert_on_time(log.times()[0], secs(18));
    h.advance(secs(60));
    assert_eq!(log.len(), 1, "moved, not copied");
}

pub fn reset_moves_the_deadline_earlier(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let handle = s
        .schedule(secs(3600), move || l.record(&clock, ()))
        .unwrap();
    h.advance(secs(1));
    assert!(handle.handle().reset(secs(2)).unwrap());
    assert_eq!(handle.handle().remaining(), secs(2));
    h.advance_past(secs(3));
    assert_eq!(log.len(), 1);
    h.assert_on_time(log.times()[0], secs(3));
    h.advance(secs(7200));
    assert_eq!(log.len(), 1, "the original deadline does not fire again");
    assert!(handle.handle().is_done());
}

pub fn reset_of_finished_or_cancelled_task_changes_nothing(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let r = runs.clone();
    let done = s.schedule(ms(1), move || r.bump()).unwrap();
    h.advance_past(ms(1));
    assert!(!done.handle().reset(secs(1)).unwrap());
    let r = runs.clone();
    let cancelled = s.schedule(secs(1), move || r.bump()).unwrap();
    assert!(cancelled.handle().cancel());
    assert!(!cancelled.handle().reset(ms(1)).unwrap());
    h.advance(secs(5));
    assert_eq!(runs.get(), 1);
    assert!(cancelled.handle().is_cancelled());
}

pub fn reset_periodic_continues_on_the_new_grid(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let handle = s
        .schedule_at_fixed_rate(secs(10), secs(10), move || l.record(&clock, ()))
        .unwrap();
    h.advance_past(secs(10)); // first run at 10 s; next due at 20 s
    assert!(handle.reset(secs(3)).unwrap()); // now due at ~13 s
    h.advance_past(secs(10) + h.granularity + secs(3));
    h.advance_past(secs(35) + h.granularity * 3);
    let times = log.times();
    assert_eq!(times.len(), 4, "10, 13, 23, 33: {times:?}");
    h.assert_on_time(times[0], secs(10));
    assert!(times[1] >= times[0] + secs(3) && times[1] <= times[0] + secs(3) + h.granularity);
    for k in 2..4 {
        assert!(times[k] >= times[1] + secs(10) * (k as u32 - 1));
    }
    assert!(handle.cancel());
}

pub fn remaining_counts_down(h: &Harness) {
    let s = h.scheduler();
    let handle = s.schedule(secs(10), || ()).unwrap();
    assert_eq!(handle.handle().remaining(), secs(10));
    h.advance(secs(4));
    assert_eq!(handle.handle().remaining(), secs(6));
    assert!(handle.handle().is_pending());
    assert!(handle.handle().cancel());
    assert_eq!(handle.handle().remaining(), Duration::ZERO);
}

// ---- periodic -----------------------------------------------------------

pub fn fixed_rate_runs_on_its_grid(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let handle = s
        .schedule_at_fixed_rate(ms(5), ms(10), move || l.record(&clock, ()))
        .unwrap();
    for _ in 0..100 {
        h.advance_ms(1);
    }
    let times = log.times();
    assert_eq!(times.len(), 10, "5, 15, …, 95 ms: {times:?}");
    for (k, at) in times.iter().enumerate() {
        h.assert_on_time(*at, ms(5 + 10 * k as u64));
    }
    assert!(handle.cancel());
}

/// Java's `[0,350,350,350,400,500]`: the first run takes 350 ms of a 100 ms
/// period; the three missed runs follow back to back, then the grid resumes.
pub fn fixed_rate_catches_up_after_a_slow_run(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let handle = s
        .schedule_at_fixed_rate(Duration::ZERO, ms(100), move || {
            l.record(&clock, ());
            if l.len() == 1 {
                clock.advance(ms(350)); // a slow first run
            }
        })
        .unwrap();
    h.advance(Duration::ZERO);
    h.advance_past(ms(350));
    let g = h.granularity;
    // `advance_past` adds one granularity itself: these land on 400 ms + 4g
    // and 500 ms + 5g, the bounds asserted below.
    h.advance_past(ms(400) + g * 3);
    h.advance_past(ms(500) + g * 4);
    let times = log.times();
    assert_eq!(times.len(), 6, "{times:?}");
    h.assert_on_time(times[0], Duration::ZERO);
    // Runs 2-4 are overdue when the slow run ends at 350 ms.
    let end_of_slow = times[0] + ms(350);
    for k in 1..4 {
        assert!(
            times[k] >= end_of_slow && times[k] <= end_of_slow + g * k as u32,
            "{times:?}"
        );
    }
    for (k, due) in [(4, ms(400)), (5, ms(500))] {
        assert!(times[k] >= due && times[k] <= due + g * 5, "{times:?}");
    }
    assert!(handle.cancel());
}

pub fn fixed_rate_runs_never_overlap(h: &Harness) {
    let s = h.scheduler();
    let detector = OverlapDetector::default();
    let runs = Counter::default();
    let (d, r, clock) = (detector.clone(), runs.clone(), h.clock.clone());
    let handle = s
        .schedule_at_fixed_rate(Duration::ZERO, ms(10), move || {
            d.enter();
            r.bump();
            if r.get() <= 10 {
                clock.advance(ms(25)); // the first ten runs outlast two periods
            }
            d.exit();
        })
        .unwrap();
    while runs.get() < 20 {
        h.advance_ms(5);
    }
    assert!(handle.cancel());
    h.advance(secs(1));
    assert!(
        !detector.overlapped(),
        "two runs of one periodic task overlapped"
    );
}

/// The executor's rule: the next start is the previous *end* plus the delay
/// (`[0,450,550,650]` for a 350 ms first run and a 100 ms delay).
pub fn fixed_delay_counts_from_completion(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let handle = s
        .schedule_with_fixed_delay(Duration::ZERO, ms(100), move || {
            l.record(&clock, ());
            if l.len() == 1 {
                clock.advance(ms(350));
            }
        })
        .unwrap();
    h.advance(Duration::ZERO);
    let g = h.granularity;
    for step in 0..40 {
        let _ = step;
        h.advance_ms(20);
    }
    let times = log.times();
    assert!(times.len() >= 4, "{times:?}");
    let mut end = times[0] + ms(350);
    for at in &times[1..] {
        assert!(
            *at >= end + ms(100),
            "started before previous end + delay: {times:?}"
        );
        assert!(*at <= end + ms(100) + g, "started late: {times:?}");
        end = *at;
    }
    assert!(handle.cancel());
}

// ---- panics -------------------------------------------------------------

pub fn panic_in_one_shot_is_reported_and_survived(h: &Harness) {
    let s = h.scheduler();
    let boom = s.schedule(ms(1), || -> u8 { panic!("boom") }).unwrap();
    let after = s.schedule(ms(2), || 7u8).unwrap();
    h.advance_past(ms(2));
    let err = boom.get().unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.panic_message(), Some("boom"));
    assert_eq!(after.get().unwrap(), 7, "the scheduler survived the panic");
    let later = s.schedule(ms(1), || 8u8).unwrap();
    h.advance_past(h.now() + ms(1));
    assert_eq!(
        later.get().unwrap(),
        8,
        "and still accepts and runs new work"
    );
}

pub fn panic_in_periodic_stops_it_and_is_reported(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let others = Counter::default();
    let r = runs.clone();
    let failing = s
        .schedule_at_fixed_rate(ms(10), ms(10), move || {
            r.bump();
            if r.get() == 3 {
                panic!("third run failed");
            }
        })
        .unwrap();
    let o = others.clone();
    let healthy = s
        .schedule_with_fixed_delay(ms(10), ms(10), move || o.bump())
        .unwrap();
    for _ in 0..10 {
        h.advance_ms(10);
    }
    assert_eq!(runs.get(), 3, "no runs after the panic");
    assert!(failing.is_done());
    assert!(!failing.is_cancelled());
    assert!(!failing.cancel(), "nothing left to cancel");
    let err = failing.wait().unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.panic_message(), Some("third run failed"));
    assert!(
        others.get() >= 8,
        "other periodic tasks keep running: {}",
        others.get()
    );
    assert!(healthy.cancel());
}

// ---- ordering -----------------------------------------------------------

pub fn ties_run_in_submission_order(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    for i in 0..20 {
        let (l, clock) = (log.clone(), h.clock.clone());
        s.schedule(secs(1), move || l.record(&clock, i)).unwrap();
    }
    // Same deadline reached through different delays.
    h.advance(ms(500));
    for i in 20..30 {
        let (l, clock) = (log.clone(), h.clock.clone());
        s.schedule(ms(500), move || l.record(&clock, i)).unwrap();
    }
    h.advance_past(secs(1));
    assert_eq!(log.labels(), (0..30).collect::<Vec<_>>());
}

// ---- shutdown -----------------------------------------------------------

pub fn shutdown_rejects_new_work(h: &Harness) {
    let s = h.scheduler();
    assert!(!s.is_shutdown());
    s.shutdown();
    assert!(s.is_shutdown());
    assert!(s.schedule(ms(1), || ()).unwrap_err().is_shutdown());
    assert!(s
        .schedule_at_fixed_rate(ms(1), ms(1), || ())
        .unwrap_err()
        .is_shutdown());
    assert!(s
        .schedule_with_fixed_delay(ms(1), ms(1), || ())
        .unwrap_err()
        .is_shutdown());
    assert!(s
        .submit(ms(1), Task::once(|| ()))
        .unwrap_err()
        .is_shutdown());
    s.shutdown(); // idempotent
    let _ = s.shutdown_now();
    assert!(s.schedule(ms(1), || ()).unwrap_err().is_shutdown());
    h.advance(Duration::ZERO);
    assert!(s.await_termination(secs(30)));
    assert!(s.is_terminated());
}

pub fn shutdown_runs_pending_one_shots_and_stops_periodic(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let ticks = Counter::default();
    let r = runs.clone();
    let one_shot = s.schedule(secs(5), move || r.bump()).unwrap();
    let t = ticks.clone();
    let periodic = s
        .schedule_at_fixed_rate(secs(1), secs(1), move || t.bump())
        .unwrap();
    h.advance_past(secs(1));
    assert_eq!(ticks.get(), 1);
    s.shutdown();
    assert!(periodic.is_cancelled(), "periodic tasks stop at shutdown");
    assert!(!one_shot.handle().is_done());
    assert!(!s.is_terminated(), "a pending one-shot keeps it alive");
    h.advance_past(secs(5));
    assert_eq!(runs.get(), 1, "the pending one-shot still ran");
    assert_eq!(ticks.get(), 1, "the periodic task did not run again");
    assert!(s.await_termination(secs(30)));
    assert!(s.is_terminated());
    assert_eq!(s.metrics().pending, 0);
}

pub fn shutdown_now_returns_what_never_ran(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let mut handles = Vec::new();
    for i in 0..9 {
        let r = runs.clone();
        handles.push(s.schedule(secs(10 + i), move || r.bump()).unwrap());
    }
    let r = runs.clone();
    let periodic = s
        .schedule_at_fixed_rate(secs(1), secs(1), move || r.bump())
        .unwrap();
    let r = runs.clone();
    let ran = s.schedule(ms(1), move || r.bump()).unwrap();
    h.advance_past(ms(1));
    assert_eq!(runs.get(), 1);
    let never_ran = s.shutdown_now();
    assert_eq!(never_ran.len(), 10, "nine one-shots and the periodic task");
    for handle in never_ran.iter() {
        assert!(!handle.is_done(), "returned tasks are not done");
        assert!(!handle.is_cancelled(), "returned tasks are not cancelled");
        assert!(handle.wait().unwrap_err().is_abandoned());
    }
    assert!(
        handles.iter().all(|h| !h.handle().cancel()),
        "nothing left to cancel"
    );
    assert!(!periodic.cancel());
    assert!(ran.handle().is_done());
    h.advance(secs(60));
    assert_eq!(runs.get(), 1, "nothing returned by shutdown_now ran");
    assert!(s.await_termination(secs(30)));
    assert_eq!(s.metrics().pending, 0);
    assert!(s.shutdown_now().is_empty());
}

/// `shutdown_now` called while a periodic task runs: the run finishes, and
/// the task does not repeat, whatever the periodic shutdown policy.
pub fn shutdown_now_stops_a_running_periodic_task(h: &Harness) {
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let me: Arc<OnceLock<Arc<dyn Scheduler>>> = Arc::new(OnceLock::new());
    let runs = Counter::default();
    let returned = Counter::default();
    let (m, r, ret) = (me.clone(), runs.clone(), returned.clone());
    let periodic = s
        .schedule_at_fixed_rate(ms(10), ms(10), move || {
            r.bump();
            if let Some(s) = m.get() {
                for _ in s.shutdown_now() {
                    ret.bump();
                }
            }
        })
        .unwrap();
    let _later = s.schedule(secs(1), || ()).unwrap();
    me.set(s.clone()).unwrap();
    h.advance_past(ms(10));
    h.advance(secs(2));
    assert_eq!(runs.get(), 1, "the running periodic task did not repeat");
    assert_eq!(returned.get(), 1, "the pending one-shot came back");
    assert!(periodic.is_done());
    assert!(s.await_termination(secs(30)));
    assert_eq!(s.metrics().pending, 0);
}

/// Task state may own the last reference to its scheduler (a value, or the
/// closure of a cancelled task): wherever the scheduler frees it, its `Drop`
/// (a graceful shutdown) must not deadlock the scheduler's own thread.
pub fn a_task_may_hold_the_last_reference_to_its_scheduler(h: &Harness) {
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let as_value = s.clone();
    drop(s.schedule(ms(1), move || as_value).unwrap());
    let in_closure = s.clone();
    let cancelled = s.schedule(ms(5), move || drop(in_closure)).unwrap();
    assert!(cancelled.handle().cancel());
    drop(cancelled);
    let periodic_owner = s.clone();
    let periodic = s.schedule_at_fixed_rate(ms(2), ms(2), move || {
        let _ = &periodic_owner;
    });
    let later = s.schedule(ms(20), || "ran").unwrap();
    drop(s);
    h.advance_past(ms(3));
    assert!(periodic.unwrap().cancel());
    h.advance_past(ms(20));
    h.advance(secs(1));
    assert_eq!(later.get_timeout(secs(30)).unwrap(), "ran");
}

pub fn drop_is_a_graceful_shutdown(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let r = runs.clone();
    let handle = s.schedule(secs(1), move || r.bump()).unwrap();
    drop(s);
    h.advance_past(secs(1));
    assert_eq!(
        runs.get(),
        1,
        "dropping the scheduler does not lose a pending task"
    );
    assert!(handle.handle().is_done());
}

// ---- bad input ----------------------------------------------------------

pub fn zero_period_is_an_error(h: &Harness) {
    let s = h.scheduler();
    let ran = Counter::default();
    let r = ran.clone();
    assert!(s
        .schedule_at_fixed_rate(ms(1), Duration::ZERO, move || r.bump())
        .unwrap_err()
        .is_zero_period());
    let r = ran.clone();
    assert!(s
        .schedule_with_fixed_delay(ms(1), Duration::ZERO, move || r.bump())
        .unwrap_err()
        .is_zero_period());
    assert!(Task::fixed_rate(Duration::ZERO, || ())
        .unwrap_err()
        .is_zero_period());
    h.advance(secs(1));
    assert_eq!(ran.get(), 0);
    assert_eq!(s.metrics().pending, 0);
}

pub fn delay_overflow_is_an_error(h: &Harness) {
    let s = h.scheduler();
    let e = s.schedule(Duration::MAX, || ()).unwrap_err();
    assert!(e.is_delay_overflow(), "{e}");
    assert!(s
        .schedule_at_fixed_rate(Duration::MAX, ms(1), || ())
        .unwrap_err()
        .is_delay_overflow());
    assert!(s
        .schedule_with_fixed_delay(Duration::MAX, ms(1), || ())
        .unwrap_err()
        .is_delay_overflow());
    assert!(s
        .schedule(Duration::from_secs(u64::MAX / 2), || ())
        .unwrap_err()
        .is_delay_overflow());
    let handle = s.schedule(secs(1), || ()).unwrap();
    assert!(handle
        .handle()
        .reset(Duration::MAX)
        .unwrap_err()
        .is_delay_overflow());
    assert!(
        handle.handle().is_pending(),
        "a failed reset leaves the task where it was"
    );
    h.advance_past(secs(1));
    assert!(handle.handle().is_done());
    assert_eq!(s.metrics().pending, 0);
    // A due task still runs beside a rejected huge one (JDK DelayOverflow).
    let runs = Counter::default();
    let r = runs.clone();
    s.schedule(Duration::ZERO, move || r.bump()).unwrap();
    h.advance_past(h.now());
    assert_eq!(runs.get(), 1);
}

pub fn pending_limit_rejects_and_frees_capacity(h: &Harness) {
    let s = h.scheduler_with(Some(3));
    let runs = Counter::default();
    let mk = |r: &Counter| {
        let r = r.clone();
        move || r.bump()
    };
    let a = s.schedule(secs(1), mk(&runs)).unwrap();
    let _b = s.schedule(secs(2), mk(&runs)).unwrap();
    let _c = s
        .schedule_at_fixed_rate(secs(3), secs(3), mk(&runs))
        .unwrap();
    let err = s.schedule(secs(1), mk(&runs)).unwrap_err();
    assert!(err.is_pending_limit(), "{err}");
    assert!(s
        .schedule_with_fixed_delay(secs(1), secs(1), mk(&runs))
        .unwrap_err()
        .is_pending_limit());
    assert_eq!(s.metrics().pending, 3);
    assert!(a.handle().cancel());
    let d = s.schedule(secs(4), mk(&runs)).unwrap(); // a cancel frees capacity
    assert!(s
        .schedule(secs(1), mk(&runs))
        .unwrap_err()
        .is_pending_limit());
    h.advance_past(secs(2)); // b fires: frees one
    let _e = s.schedule(secs(10), mk(&runs)).unwrap();
    assert!(s
        .schedule(secs(1), mk(&runs))
        .unwrap_err()
        .is_pending_limit());
    h.advance_past(secs(4));
    assert_eq!(
        runs.get(),
        3,
        "b, the periodic task once, and d; nothing rejected ran"
    );
    assert!(d.handle().is_done());
}

pub fn metrics_count_pending_fired_cancelled(h: &Harness) {
    let s = h.scheduler();
    let handles: Vec<_> = (0..10)
        .map(|i| s.schedule(secs(1 + i), || ()).unwrap())
        .collect();
    let periodic = s.schedule_at_fixed_rate(ms(500), secs(1), || ()).unwrap();
    assert_eq!(s.metrics().pending, 11);
    assert!(handles[9].handle().cancel());
    assert!(handles[8].handle().cancel());
    h.advance_past(ms(3500)); // one-shots at 1, 2, 3 s; periodic at 0.5, 1.5, 2.5, 3.5 s
    let m = s.metrics();
    assert_eq!(m.fired, 7);
    assert_eq!(m.cancelled, 2);
    assert_eq!(m.pending, 11 - 2 - 3);
    assert!(periodic.cancel());
    assert_eq!(s.metrics().cancelled, 3);
    assert_eq!(s.metrics().pending, 5);
}

pub fn works_as_a_trait_object(h: &Harness) {
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || s.schedule(ms(i), move || i * 2).unwrap())
        })
        .collect();
    let futures: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    h.advance_past(ms(4));
    let values: Vec<u64> = futures.into_iter().map(|f| f.get().unwrap()).collect();
    assert_eq!(values, [0, 2, 4, 6]);
}

/// The same scenario twice gives the same history, to the nanosecond.
pub fn virtual_time_is_deterministic(h: &Harness) {
    fn run(h: &Harness) -> Vec<(usize, Duration)> {
        let h2 = h.fresh();
        let clock = h2.clock.clone();
        let s = h2.scheduler();
        let log = Log::new();
        for i in 0..50usize {
            let (l, c) = (log.clone(), clock.clone());
            let d = Duration::from_micros(((i * 7919) % 997) as u64 * 1000 + 17);
            s.schedule(d, move || l.record(&c, i)).unwrap();
        }
        let (l, c) = (log.clone(), clock.clone());
        let p = s
            .schedule_at_fixed_rate(ms(3), ms(50), move || l.record(&c, 1000))
            .unwrap();
        for _ in 0..120 {
            h2.advance_ms(9);
        }
        p.cancel();
        log.entries()
    }
    let first = run(h);
    assert_eq!(first.len(), 50 + 22);
    assert_eq!(first, run(h));
}

/// `virtual_time_is_deterministic` for several workers: the same scenario
/// twice gives the same runs at the same virtual times, in whatever order
/// the workers logged them (compared as sorted lists).
pub fn history_is_deterministic_as_a_set(h: &Harness) {
    fn run(h: &Harness) -> Vec<(usize, Duration)> {
        let h = h.fresh();
        let s = h.scheduler();
        let log = Log::new();
        for i in 0..50usize {
            let (l, c) = (log.clone(), h.clock.clone());
            // Pairs of tasks share a deadline, so workers really race.
            let d = Duration::from_micros(((i / 2 * 7919) % 997) as u64 * 1000 + 17);
            s.schedule(d, move || l.record(&c, i)).unwrap();
        }
        let (l, c) = (log.clone(), h.clock.clone());
        let p = s
            .schedule_at_fixed_rate(ms(3), ms(50), move || l.record(&c, 1000))
            .unwrap();
        for _ in 0..120 {
            h.advance_ms(9);
        }
        assert!(p.cancel());
        let mut entries = log.entries();
        entries.sort();
        entries
    }
    let first = run(h);
    assert_eq!(first.len(), 50 + 22);
    for _ in 0..3 {
        assert_eq!(first, run(h));
    }
}

// ---- a busy worker ------------------------------------------------------
//
// A task that came due while the thread that would run it is busy (the only
// worker of a pool, or the timer thread itself) waits; until it starts it is
// still pending, so cancel, reset and `shutdown_now` reach it as they reach
// any pending task. Each case runs a long task `busy` (due at 0) that moves
// virtual time from inside, as a slow task would, and acts on the others
// mid-run: `advance` called from a task returns once every scheduler has
// handed what is due to its executor, so a pool has the waiting task queued.

/// Schedules `busy` due now and runs it to the end: `advance` returns once
/// it and everything it let come due have run.
fn run_busy<T: Send + 'static>(
    h: &Harness,
    s: &dyn Scheduler,
    busy: impl FnOnce() -> T + Send + 'static,
) -> T {
    let busy = s.schedule(Duration::ZERO, busy).unwrap();
    h.advance(Duration::ZERO);
    busy.get_timeout(secs(30)).unwrap()
}

/// The repro: the worker is busy for 600 ms; a one-shot and a
/// periodic task come due at 50 ms; at 250 ms both are cancelled, the
/// cancels return true, and neither ever runs.
pub fn cancel_reaches_a_task_waiting_behind_a_busy_worker(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let r = runs.clone();
    let one_shot = s.schedule(ms(50), move || r.bump()).unwrap().into_handle();
    let r = runs.clone();
    let periodic = s
        .schedule_at_fixed_rate(ms(50), ms(10), move || r.bump())
        .unwrap();
    let (clock, o, p) = (h.clock.clone(), one_shot.clone(), periodic.clone());
    let cancelled = run_busy(h, s.as_ref(), move || {
        clock.advance(ms(250));
        let cancelled = (o.cancel(), p.cancel());
        clock.advance(ms(350));
        cancelled
    });
    assert_eq!(
        cancelled,
        (true, true),
        "a task waiting for the busy worker is still pending: cancel stops it"
    );
    h.advance(secs(1));
    assert_eq!(runs.get(), 0, "a task whose cancel returned true never ran");
    assert!(one_shot.is_cancelled() && one_shot.is_done());
    assert!(periodic.is_cancelled() && periodic.is_done());
    assert_eq!(s.metrics().pending, 0);
    assert_eq!(s.metrics().cancelled, 2);
}

/// A task waiting behind the busy worker can be moved: it runs once, at
/// its new deadline or when the worker frees up, never at the old one.
pub fn reset_reaches_a_task_waiting_behind_a_busy_worker(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let moved = s
        .schedule(ms(50), move || l.record(&clock, ()))
        .unwrap()
        .into_handle();
    let (clock, m) = (h.clock.clone(), moved.clone());
    let reset = run_busy(h, s.as_ref(), move || {
        clock.advance(ms(250));
        let reset = m.reset(secs(1)).unwrap();
        clock.advance(ms(350));
        reset
    });
    assert!(
        reset,
        "a task waiting for the busy worker is still pending: reset moves it"
    );
    assert_eq!(log.len(), 0, "the old deadline does not fire");
    h.advance_past(ms(1250));
    assert_eq!(log.len(), 1, "moved, not copied");
    h.assert_on_time(log.times()[0], ms(1250));
    h.advance(secs(5));
    assert_eq!(log.len(), 1);
}

/// A task due with the busy one, right behind it, is reset from inside the
/// busy run and its only handle dropped. When the worker gets to it, its
/// claim meets the reset and lets go, so the reset on its way is the last
/// holder: the task is queued again at its new deadline and runs there,
/// once, its slot kept until then.
pub fn reset_reaches_a_task_due_with_the_busy_one_after_its_handle_is_gone(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    let (handles, handle) = mpsc::channel();
    let busy = s
        .schedule(Duration::ZERO, move || {
            let moved: TaskHandle = handle.recv().unwrap();
            let reset = moved.reset(secs(1)).unwrap();
            drop(moved);
            reset
        })
        .unwrap();
    let (l, clock) = (log.clone(), h.clock.clone());
    let moved = s
        .submit(Duration::ZERO, Task::once(move || l.record(&clock, ())))
        .unwrap();
    handles.send(moved).unwrap();
    h.advance(Duration::ZERO);
    assert!(busy.get_timeout(secs(30)).unwrap(), "the reset moves it");
    assert_eq!(log.len(), 0, "the old deadline does not fire");
    h.advance_past(secs(1));
    assert_eq!(log.len(), 1, "it runs at its new deadline");
    h.assert_on_time(log.times()[0], secs(1));
    h.advance(secs(5));
    assert_eq!(log.len(), 1, "once");
}

/// `shutdown_now` returns a task that came due but is waiting for the busy
/// worker: it never ran, and it never will.
pub fn shutdown_now_returns_a_task_waiting_behind_a_busy_worker(h: &Harness) {
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let runs = Counter::default();
    let r = runs.clone();
    let waiting = s.schedule(ms(50), move || r.bump()).unwrap();
    let (clock, me) = (h.clock.clone(), s.clone());
    let returned = run_busy(h, s.as_ref(), move || {
        clock.advance(ms(250));
        let returned = me.shutdown_now();
        clock.advance(ms(350));
        returned
    });
    assert_eq!(returned.len(), 1, "the waiting task is returned");
    assert!(returned[0].wait().unwrap_err().is_abandoned());
    h.advance(secs(1));
    assert_eq!(runs.get(), 0, "a task returned by shutdown_now never runs");
    assert!(waiting.handle().wait().unwrap_err().is_abandoned());
    assert!(s.await_termination(secs(30)));
    assert_eq!(s.metrics().pending, 0);
}

/// `shutdown` keeps a due one-shot waiting for the busy worker (it runs)
/// and stops a periodic task waiting there (it never runs again).
pub fn shutdown_applies_its_policy_to_tasks_waiting_behind_a_busy_worker(h: &Harness) {
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let (one_shot_runs, periodic_runs) = (Counter::default(), Counter::default());
    let r = one_shot_runs.clone();
    let one_shot = s.schedule(ms(50), move || r.bump()).unwrap();
    let r = periodic_runs.clone();
    let periodic = s
        .schedule_at_fixed_rate(ms(50), ms(10), move || r.bump())
        .unwrap();
    let (clock, me, p) = (h.clock.clone(), s.clone(), periodic.clone());
    let stopped = run_busy(h, s.as_ref(), move || {
        clock.advance(ms(250));
        me.shutdown();
        let stopped = p.is_cancelled();
        clock.advance(ms(350));
        stopped
    });
    assert!(
        stopped,
        "shutdown stops a periodic task waiting for the worker"
    );
    h.advance(secs(1));
    assert_eq!(periodic_runs.get(), 0, "the periodic task never ran");
    assert_eq!(one_shot_runs.get(), 1, "the due one-shot still ran");
    assert!(one_shot.handle().is_done());
    assert!(s.await_termination(secs(30)));
}

/// `shutdown`, with a policy that cancels one-shots not yet due, judges a
/// one-shot by its newest deadline, a reset on its way included (as
/// `remaining` does). Just before it, from inside the busy run: one task
/// due with the busy one, waiting right behind it, is reset past now (its
/// claim will meet the reset), and one queued for later is reset to now.
/// The first is not yet due, so it is cancelled; the second is due, so it
/// runs, as a one-shot due and waiting with no reset does.
pub fn shutdown_judges_a_one_shot_by_the_reset_on_its_way(h: &Harness) {
    let policy = ShutdownPolicy::default().one_shot(OnShutdown::Cancel);
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler_with_policy(policy));
    let (later_runs, sooner_runs, due_runs) =
        (Counter::default(), Counter::default(), Counter::default());
    let (handles, handle) = mpsc::channel::<[TaskHandle; 2]>();
    let me = s.clone();
    let busy = s
        .schedule(Duration::ZERO, move || {
            let [later, sooner] = handle.recv().unwrap();
            let reset = (
                later.reset(secs(1)).unwrap(),
                sooner.reset(Duration::ZERO).unwrap(),
            );
            me.shutdown();
            (reset, later, sooner)
        })
        .unwrap();
    let r = later_runs.clone();
    let later = s
        .submit(Duration::ZERO, Task::once(move || r.bump()))
        .unwrap();
    let r = due_runs.clone();
    let due = s.schedule(Duration::ZERO, move || r.bump()).unwrap();
    let r = sooner_runs.clone();
    let sooner = s.submit(secs(10), Task::once(move || r.bump())).unwrap();
    handles.send([later, sooner]).unwrap();
    h.advance(Duration::ZERO);
    let (reset, later, sooner) = busy.get_timeout(secs(30)).unwrap();
    assert_eq!(reset, (true, true), "both resets move their tasks");
    h.advance(secs(20));
    assert_eq!(
        later_runs.get(),
        0,
        "reset past now: not yet due, cancelled"
    );
    assert!(later.is_cancelled());
    assert_eq!(sooner_runs.get(), 1, "reset to now: due, it runs");
    assert!(sooner.is_done());
    assert_eq!(due_runs.get(), 1, "a one-shot due at shutdown runs");
    assert!(due.handle().is_done());
    assert!(s.await_termination(secs(30)));
    assert_eq!(s.metrics().pending, 0);
}

/// Tasks that came due behind the busy worker start in deadline order, ties
/// in submission order, once it is free.
pub fn tasks_waiting_behind_a_busy_worker_start_in_order(h: &Harness) {
    let s = h.scheduler();
    let log = Log::new();
    for (label, due) in [(1, 50), (2, 50), (0, 40), (3, 50), (4, 200)] {
        let (l, clock) = (log.clone(), h.clock.clone());
        s.schedule(ms(due), move || l.record(&clock, label))
            .unwrap();
    }
    let clock = h.clock.clone();
    run_busy(h, s.as_ref(), move || clock.advance(ms(600)));
    assert_eq!(log.labels(), [0, 1, 2, 3, 4]);
}

// ---- termination, the end of time, destructors ---------------------------

/// After `shutdown`, the only thing keeping a scheduler alive is its pending
/// one-shots: cancelling the last one lets it terminate at once, not at the
/// cancelled task's old deadline (on virtual time and on the system clock,
/// where a driver may be parked on a timed wait until that deadline).
pub fn cancel_after_shutdown_lets_it_terminate_at_once(h: &Harness) {
    for s in [h.scheduler(), h.scheduler_on_system_clock()] {
        let far = s.schedule(secs(3600), || ()).unwrap();
        s.shutdown();
        assert!(!s.is_terminated(), "a pending one-shot keeps it alive");
        assert!(far.handle().cancel());
        assert!(
            s.await_termination(secs(10)),
            "a cancelled task must not keep the scheduler alive until its deadline"
        );
        assert_eq!(s.metrics().pending, 0);
    }
}

/// A pending one-shot kept by `shutdown` can still be moved: it runs at its
/// new deadline, and the scheduler terminates after it (a reset racing the
/// end must not let the driver exit with the task in flight).
pub fn reset_after_shutdown_still_runs_the_task(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let r = runs.clone();
    let task = s.schedule(secs(3600), move || r.bump()).unwrap();
    s.shutdown();
    for _ in 0..100 {
        assert!(task.handle().reset(secs(3600)).unwrap());
    }
    assert!(task.handle().reset(ms(5)).unwrap());
    h.advance_past(h.now() + ms(5));
    assert_eq!(runs.get(), 1);
    assert!(s.await_termination(secs(30)));
    assert_eq!(s.metrics().pending, 0);
}

/// Adapted from the JDK's `DelayOverflow`, carried to the end of time: a
/// period too large for the time range runs once, then waits "forever" and
/// can still be cancelled. Virtual time saturates at the end of what the
/// clock can represent: it never panics or wraps, and the task parked at
/// "never" stays there however far time moves.
pub fn the_end_of_time_is_never_reached(h: &Harness) {
    let s = h.scheduler();
    let runs = Counter::default();
    let (r1, r2) = (runs.clone(), runs.clone());
    let rate = s
        .schedule_at_fixed_rate(Duration::ZERO, Duration::MAX, move || r1.bump())
        .unwrap();
    let delay = s
        .schedule_with_fixed_delay(Duration::ZERO, Duration::MAX, move || r2.bump())
        .unwrap();
    // A long period is kept whole, not clamped: runs at 0, 200 and 400 years.
    let year = secs(365 * 24 * 3600);
    let long = Counter::default();
    let l = long.clone();
    let centuries = s
        .schedule_at_fixed_rate(Duration::ZERO, year * 200, move || l.bump())
        .unwrap();
    h.advance_past(Duration::ZERO);
    assert_eq!(runs.get(), 2);
    h.advance(year * 600); // beyond the 584 years of u64 nanoseconds
    assert_eq!(runs.get(), 2, "a task parked at \"never\" never runs again");
    assert_eq!(
        long.get(),
        3,
        "a 200-year period runs at 0, 200 and 400 years"
    );
    assert!(centuries.cancel());
    h.advance(Duration::MAX);
    h.advance(Duration::MAX);
    assert_eq!(runs.get(), 2);
    assert!(rate.cancel() && delay.cancel(), "still pending");
    let e = s.schedule(ms(1), || ()).unwrap_err();
    assert!(
        e.is_delay_overflow(),
        "no deadline fits after the end of time: {e}"
    );
}

/// A value that panics when dropped.
struct PanicOnDrop(&'static str);

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("{}", self.0);
        }
    }
}

/// A destructor that panics — of a one-shot's value nobody collects, of a
/// cancelled task's closure — is contained as a panicking task is: the
/// scheduler keeps running later tasks, and the cancel still succeeds.
pub fn a_panicking_destructor_never_kills_the_scheduler(h: &Harness) {
    let s = h.scheduler();
    // A value nobody collects: the scheduler drops it.
    drop(
        s.schedule(ms(1), || PanicOnDrop("value dropped by the scheduler"))
            .unwrap(),
    );
    h.advance_past(ms(1));
    // A cancelled task's closure.
    let owner = PanicOnDrop("closure of a cancelled task");
    let cancelled = s.schedule(secs(1), move || drop(owner)).unwrap();
    assert!(cancelled.handle().cancel());
    drop(cancelled);
    let owner = PanicOnDrop("closure of a cancelled periodic task");
    let periodic = s
        .schedule_at_fixed_rate(ms(1), ms(1), move || {
            let _ = &owner;
        })
        .unwrap();
    h.advance_past(h.now() + ms(1));
    assert!(periodic.cancel());
    drop(periodic);
    h.advance(secs(2));
    // Not advanced: a live scheduler runs a task due now without help.
    let later = s.schedule(Duration::ZERO, || "still alive").unwrap();
    assert_eq!(
        later.get_timeout(secs(10)).map_err(|e| e.to_string()),
        Ok("still alive"),
        "the scheduler survived the panicking destructors"
    );
    assert_eq!(s.metrics().pending, 0);
}

/// `advance` returns only once the closure of a task that ended in it is
/// dropped. A driver drops such a closure after the run, with its lock
/// released, and must not look idle meanwhile: here the closure's
/// destructor blocks until the test releases it, holding that window open
/// (it was a rare CI failure of the case above, once in some 50,000 runs).
pub fn advance_waits_for_the_closure_of_a_task_that_ended(h: &Harness) {
    struct BlocksWhenDropped {
        dropping: mpsc::Sender<()>,
        release: mpsc::Receiver<()>,
    }
    impl Drop for BlocksWhenDropped {
        fn drop(&mut self) {
            let _ = self.dropping.send(());
            let _ = self.release.recv();
        }
    }
    let s = h.scheduler();
    let (dropping_tx, dropping) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let guard = BlocksWhenDropped {
        dropping: dropping_tx,
        release: release_rx,
    };
    let me: SelfHandle = Arc::new(OnceLock::new());
    let m = me.clone();
    let periodic = s
        .schedule_at_fixed_rate(ms(1), ms(1), move || {
            let _ = &guard;
            assert!(m.get().is_some_and(|h| h.cancel()));
        })
        .unwrap();
    me.set(periodic.clone()).unwrap();
    let (returned_tx, returned) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            h.advance_past(h.now() + ms(1));
            returned_tx.send(()).unwrap();
        });
        dropping
            .recv_timeout(secs(30))
            .expect("the closure is dropped after its last run");
        assert!(
            returned.recv_timeout(ms(200)).is_err(),
            "advance returned while the closure was still being dropped"
        );
        release.send(()).unwrap();
        returned
            .recv_timeout(secs(30))
            .expect("advance returns once the closure is dropped");
    });
    assert!(periodic.is_cancelled());
    drop(me);
}

/// A successful cancel lets go of the task's closure within a housekeeping
/// period, as the JDK's `FutureTask` drops its callable (at once): a
/// cancelled ack timer must not pin the buffer it captured while its handle
/// lives on, also when the driver would otherwise sleep for seconds. A
/// periodic task cancelled while it runs lets go when that run ends.
pub fn cancel_lets_go_of_the_closure(h: &Harness) {
    let s: Arc<dyn Scheduler> = Arc::from(h.scheduler());
    let buffer = Arc::new([0u8; 64]);
    let mut handles = Vec::new();
    for i in 0..500u64 {
        let b = buffer.clone();
        handles.push(
            s.schedule(secs(10 + i), move || b.len())
                .unwrap()
                .into_handle(),
        );
        let b = buffer.clone();
        handles.push(
            s.schedule_with_fixed_delay(secs(10 + i), secs(1), move || {
                let _ = b.len();
            })
            .unwrap(),
        );
    }
    h.advance(secs(1));
    assert!(handles.iter().all(|h| h.cancel()));
    h.advance(schedulers::HOUSEKEEPING);
    assert_eq!(
        Arc::strong_count(&buffer),
        1,
        "the closures of cancelled tasks are dropped while their handles live"
    );
    // Cancelled from inside its own run: let go when the run ends.
    let me: SelfHandle = Arc::new(OnceLock::new());
    let (m, b) = (me.clone(), buffer.clone());
    let periodic = s
        .schedule_at_fixed_rate(ms(1), ms(1), move || {
            let _ = b.len();
            assert!(m.get().is_some_and(|h| h.cancel()));
        })
        .unwrap();
    me.set(periodic.clone()).unwrap();
    h.advance_past(h.now() + ms(1));
    assert!(periodic.is_cancelled());
    assert_eq!(
        Arc::strong_count(&buffer),
        1,
        "dropped when its last run ended"
    );
    drop(me);
    assert!(!handles.is_empty() && !periodic.cancel());
}
