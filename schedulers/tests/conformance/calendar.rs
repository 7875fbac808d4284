//! Calendar tasks and the missed-run and panic policies, in virtual time: a
//! `ManualClock` whose wall clock starts at a chosen instant and can be
//! stepped (`set_wall`) or jumped by a suspend, apart from its monotonic
//! time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use schedulers::calendar::jiff::Timestamp;
use schedulers::calendar::{Calendar, MissedRuns, OnPanic};
use schedulers::{Clock, ManualClock, Scheduler, Task, TaskHandle};

use super::{ms, secs, Harness, Log};

/// An instant given as RFC 3339 text.
fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// An instant as a `SystemTime` (whole seconds after the epoch).
fn system(t: Timestamp) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(t.as_second() as u64)
}

/// The wall clock of `clock` now.
fn wall(clock: &ManualClock) -> Timestamp {
    Timestamp::try_from(clock.wall_now()).unwrap()
}

/// A harness whose wall clock starts at `start`.
fn from(h: &Harness, start: &str) -> Harness {
    h.at_wall(system(at(start)))
}

/// Records the wall-clock time of every run.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<Vec<Timestamp>>>);

impl Runs {
    fn recorder(&self, clock: &ManualClock) -> impl FnMut() + Send + 'static {
        let (runs, clock) = (self.clone(), clock.clone());
        move || runs.0.lock().unwrap().push(wall(&clock))
    }

    fn times(&self) -> Vec<Timestamp> {
        self.0.lock().unwrap().clone()
    }
}

/// Asserts each run started at its fire time, not early, at most one
/// granularity late.
#[track_caller]
fn assert_fired_at(h: &Harness, runs: &[Timestamp], expected: &[Timestamp]) {
    let late = |run: Timestamp, due: Timestamp| {
        run >= due && run.duration_since(due).unsigned_abs() <= h.granularity
    };
    assert_eq!(
        runs.len(),
        expected.len(),
        "runs {runs:?}, expected {expected:?}"
    );
    for (&run, &due) in runs.iter().zip(expected) {
        assert!(late(run, due), "ran at {run}, due {due} (runs {runs:?})");
    }
}

/// Asserts the next run is `left` away, give or take the granularity (a
/// run a tick late leaves less).
#[track_caller]
fn assert_remaining(h: &Harness, handle: &TaskHandle, left: Duration) {
    let r = handle.remaining();
    assert!(
        r <= left && r + h.granularity >= left,
        "remaining {r:?}, expected {left:?}"
    );
}

/// Advances virtual time to each next run of `handle` in turn, while that
/// is before `until` by the wall clock.
fn run_until(h: &Harness, handle: &TaskHandle, until: Timestamp) {
    let before = |left: Duration| {
        let next = wall(&h.clock).checked_add(left).unwrap();
        next < until
    };
    while handle.is_pending() && before(handle.remaining()) {
        h.advance(handle.remaining() + h.granularity);
    }
}

pub fn calendar_runs_at_its_fire_times(h: &Harness) {
    let h = from(h, "2024-05-06T08:59:30Z");
    let s = h.scheduler();
    let runs = Runs::default();
    let every_quarter = Calendar::parse_in("*/15 9-10 * * MON-FRI", "UTC").unwrap();
    let task = Task::calendar(every_quarter.clone(), runs.recorder(&h.clock));
    let handle = s.submit(Duration::ZERO, task).unwrap();
    assert_eq!(handle.remaining(), secs(30), "first fire time: 09:00");
    run_until(&h, &handle, at("2024-05-07T09:20:00Z"));
    let expected: Vec<_> = every_quarter
        .fire_times(at("2024-05-06T08:59:30Z"))
        .map(|t| t.timestamp())
        .take_while(|&t| t < at("2024-05-07T09:20:00Z"))
        .collect();
    assert_eq!(expected.len(), 10, "8 on Monday, 2 on Tuesday");
    assert_fired_at(&h, &runs.times(), &expected);
    assert!(handle.cancel());
}

/// The runs a live scheduler makes across daylight-saving transitions are
/// the calendar's preview, zone by zone: a gap (spring forward, Lord Howe's
/// half hour, Samoa's skipped day) and an overlap (fall back).
pub fn calendar_runs_match_the_preview_across_dst(h: &Harness) {
    let cases = [
        (
            "Europe/Berlin",
            "*/30 1-3 * * *",
            "2024-03-30T12:00:00Z",
            "2024-04-01T12:00:00Z",
        ),
        (
            "Europe/Berlin",
            "*/30 1-3 * * *",
            "2024-10-26T12:00:00Z",
            "2024-10-28T12:00:00Z",
        ),
        (
            "America/New_York",
            "0 1-3 * * *",
            "2024-03-09T12:00:00Z",
            "2024-03-11T12:00:00Z",
        ),
        (
            "America/New_York",
            "0 1-3 * * *",
            "2024-11-02T12:00:00Z",
            "2024-11-04T12:00:00Z",
        ),
        (
            "Australia/Lord_Howe",
            "*/30 1-2 * * *",
            "2024-04-05T12:00:00Z",
            "2024-04-07T12:00:00Z",
        ),
        (
            "Australia/Lord_Howe",
            "*/30 1-2 * * *",
            "2024-10-04T12:00:00Z",
            "2024-10-06T12:00:00Z",
        ),
        (
            "Pacific/Apia",
            "0 12 * * *",
            "2011-12-27T00:00:00Z",
            "2012-01-02T00:00:00Z",
        ),
    ];
    for (zone, cron, start, end) in cases {
        let h = from(h, start);
        let s = h.scheduler();
        let calendar = Calendar::parse_in(cron, zone).unwrap();
        let runs = Runs::default();
        let task = Task::calendar(calendar.clone(), runs.recorder(&h.clock));
        let handle = s.submit(Duration::ZERO, task).unwrap();
        run_until(&h, &handle, at(end));
        let expected: Vec<_> = calendar
            .fire_times(at(start))
            .map(|t| t.timestamp())
            .take_while(|&t| t < at(end))
            .collect();
        assert!(expected.len() >= 3, "{zone}: {expected:?}");
        assert_fired_at(&h, &runs.times(), &expected);
        assert!(handle.cancel());
    }
}

/// Property: for random expressions, zones and start instants (a year of
/// them, so daylight-saving transitions come up), the first dozen runs are
/// the preview's first dozen fire times.
pub fn live_runs_are_the_preview_for_any_calendar(h: &Harness) {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let minutes = prop::sample::select(vec!["0", "*/7", "0,20,45", "5-10", "59"]);
    let hours = prop::sample::select(vec!["*", "1-3", "*/5", "2", "0,12"]);
    let days = prop::sample::select(vec![
        "* * *",
        "1,15 * ?",
        "? * MON-FRI",
        "L * ?",
        "* 3,10 ?",
    ]);
    let zones = prop::sample::select(vec![
        "UTC",
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
        "America/Santiago",
    ]);
    let start = 1_704_067_200i64..1_735_689_600; // 2024
    let strategy = (minutes, hours, days, zones, start);
    let mut runner = TestRunner::new(Config {
        cases: 16,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |(minute, hour, days, zone, start)| {
            let cron = format!("0 {minute} {hour} {days}");
            let calendar = Calendar::parse_in(&cron, zone).unwrap();
            let start = Timestamp::from_second(start).unwrap();
            let expected: Vec<_> = calendar
                .fire_times(start)
                .take(12)
                .map(|t| t.timestamp())
                .collect();
            let h = h.at_wall(system(start));
            let s = h.scheduler();
            let runs = Runs::default();
            let task = Task::calendar(calendar, runs.recorder(&h.clock));
            let handle = s.submit(Duration::ZERO, task).unwrap();
            let until = expected
                .last()
                .unwrap()
                .checked_add(Duration::from_secs(1))
                .unwrap();
            run_until(&h, &handle, until);
            prop_assert!(handle.cancel());
            assert_fired_at(&h, &runs.times(), &expected);
            Ok(())
        })
        .unwrap();
}

/// The wall clock steps forward past fire times (an operator, NTP): the
/// task runs at once for what it missed, as its policy says; stepped back,
/// it runs no fire time twice and waits for its next one by the wall clock.
pub fn a_wall_clock_step_moves_calendar_runs(h: &Harness) {
    // (policy, runs at the step, fire times passed over)
    for (policy, runs_after_step, skipped) in [
        (MissedRuns::CatchUp, 4, 0),
        (MissedRuns::OnceNow, 1, 3),
        (MissedRuns::Skip, 0, 4),
    ] {
        let h = from(h, "2024-05-06T08:59:30Z");
        let s = h.scheduler();
        let runs = Runs::default();
        let quarters = Calendar::parse_in("*/15 * * * *", "UTC").unwrap();
        let task = Task::calendar(quarters, runs.recorder(&h.clock))
            .missed_runs(policy)
            .unwrap();
        let handle = s.submit(Duration::ZERO, task).unwrap();
        h.advance(secs(30) + h.granularity);
        assert_eq!(runs.times().len(), 1, "{policy:?}: 09:00");
        // Forward to 10:05: 09:15, 09:30, 09:45 and 10:00 are due.
        h.clock.set_wall(system(at("2024-05-06T10:05:00Z")));
        assert_eq!(
            runs.times().len(),
            1 + runs_after_step,
            "{policy:?}: {:?}",
            runs.times()
        );
        assert_remaining(&h, &handle, secs(10 * 60));
        assert_eq!(s.metrics().skipped, skipped, "{policy:?}");
        // Back to 09:20: 09:30 ... 10:00 already ran (or were passed over):
        // the next run is 10:15 by the wall clock, 55 minutes away.
        h.clock.set_wall(system(at("2024-05-06T09:20:00Z")));
        assert_remaining(&h, &handle, secs(55 * 60));
        let before = runs.times().len();
        h.advance(Duration::from_secs(50 * 60));
        assert_eq!(runs.times().len(), before, "{policy:?}: nothing runs twice");
        h.advance(Duration::from_secs(5 * 60) + h.granularity);
        assert_eq!(runs.times().len(), before + 1, "{policy:?}: 10:15");
        assert!(handle.cancel());
    }
}

/// The machine sleeps through fire times: when it resumes, the wall clock
/// has moved on and the monotonic one has not; the task runs for what it
/// missed as its policy says, then goes on with its fire times.
pub fn a_suspend_is_followed_by_the_missed_runs_policy(h: &Harness) {
    for (policy, runs_at_resume) in [
        (MissedRuns::CatchUp, 3),
        (MissedRuns::OnceNow, 1),
        (MissedRuns::Skip, 0),
    ] {
        let h = from(h, "2024-05-06T08:30:00Z");
        let s = h.scheduler();
        let runs = Runs::default();
        let hourly = Calendar::parse_in("0 * * * *", "UTC").unwrap();
        let task = Task::calendar(hourly, runs.recorder(&h.clock))
            .missed_runs(policy)
            .unwrap();
        let handle = s.submit(Duration::ZERO, task).unwrap();
        // Asleep from 08:30 to 11:10: 09:00, 10:00 and 11:00 came due.
        h.clock.suspend(Duration::from_secs(160 * 60));
        assert_eq!(runs.times().len(), runs_at_resume, "{policy:?}");
        assert!(runs
            .times()
            .iter()
            .all(|&t| t == at("2024-05-06T11:10:00Z")));
        assert_remaining(&h, &handle, secs(50 * 60));
        h.advance(Duration::from_secs(50 * 60) + h.granularity);
        assert_eq!(runs.times().len(), runs_at_resume + 1, "{policy:?}");
        assert!(handle.cancel());
    }
}

/// A calendar task reset runs at its new deadline, then at its fire times
/// from there; cancelled, it never runs, whatever the wall clock does.
pub fn reset_and_cancel_of_a_calendar_task(h: &Harness) {
    let h = from(h, "2024-05-06T08:00:00Z");
    let s = h.scheduler();
    let runs = Runs::default();
    let hourly = Calendar::parse_in("0 * * * *", "UTC").unwrap();
    let handle = s
        .submit(
            Duration::ZERO,
            Task::calendar(hourly.clone(), runs.recorder(&h.clock)),
        )
        .unwrap();
    assert_eq!(handle.remaining(), secs(3600));
    assert!(handle.reset(secs(10 * 60)).unwrap());
    h.advance(secs(10 * 60) + h.granularity);
    assert_eq!(runs.times().len(), 1, "the reset run at 08:10");
    assert_remaining(&h, &handle, secs(50 * 60));
    h.advance(secs(50 * 60));
    assert_eq!(runs.times().len(), 2, "09:00");
    assert!(handle.cancel());
    h.clock.set_wall(system(at("2024-05-06T12:00:00Z")));
    h.advance(secs(3 * 3600));
    assert_eq!(runs.times().len(), 2, "cancelled: no more runs");
    assert_eq!(s.metrics().pending, 0);
}

/// A fixed-rate task every `period` that logs its runs; its `n`-th run
/// (from 1) also calls `during` (to take time, or to panic).
fn logged_fixed_rate(
    h: &Harness,
    period: Duration,
    n: usize,
    during: impl Fn(&ManualClock) + Send + 'static,
) -> (Log<()>, Task) {
    let log = Log::new();
    let (l, clock) = (log.clone(), h.clock.clone());
    let task = Task::fixed_rate(period, move || {
        l.record(&clock, ());
        if l.len() == n {
            during(&clock);
        }
    })
    .unwrap();
    (log, task)
}

/// A fixed-rate task's missed runs after a slow run, by policy: the grid
/// is every 100 ms from 0 and the first run takes 350 ms.
pub fn fixed_rate_missed_runs_follow_the_policy(h: &Harness) {
    // (policy, the runs' start times in ms after the slow one, skipped)
    let cases = [
        (MissedRuns::CatchUp, &[350, 350, 350, 400][..], 0),
        (MissedRuns::Skip, &[400][..], 3),
        (MissedRuns::OnceNow, &[350, 400][..], 2),
        (MissedRuns::Delay, &[350, 450][..], 2),
    ];
    for (policy, expected, skipped) in cases {
        let h = h.fresh();
        let s = h.scheduler();
        let (log, task) = logged_fixed_rate(&h, ms(100), 1, |clock| clock.advance(ms(350)));
        let task = task.missed_runs(policy).unwrap();
        let handle = s.submit(Duration::ZERO, task).unwrap();
        h.advance(Duration::ZERO);
        let last = *expected.last().unwrap();
        h.advance_past(ms(last) + h.granularity * 4);
        let times = log.times();
        assert_eq!(times.len(), 1 + expected.len(), "{policy:?}: {times:?}");
        for (&t, &due) in times[1..].iter().zip(expected) {
            let due = ms(due);
            assert!(
                t >= due && t <= due + h.granularity * 5,
                "{policy:?}: {times:?}"
            );
        }
        assert_eq!(s.metrics().skipped, skipped, "{policy:?}");
        assert!(handle.cancel());
    }
}

/// A deadline late by less than its tolerance is on time: no policy
/// applies.
pub fn lateness_within_the_tolerance_is_not_a_missed_run(h: &Harness) {
    let s = h.scheduler();
    // The first run ends 30 ms into the next period.
    let (log, task) = logged_fixed_rate(h, ms(100), 1, |clock| clock.advance(ms(130)));
    let task = task
        .missed_runs(MissedRuns::Skip)
        .unwrap()
        .missed_run_tolerance(ms(50))
        .unwrap();
    let handle = s.submit(Duration::ZERO, task).unwrap();
    h.advance(Duration::ZERO);
    h.advance_past(ms(200));
    assert_eq!(
        log.len(),
        3,
        "0, 100 (late 30 ms: runs), 200: {:?}",
        log.times()
    );
    assert_eq!(s.metrics().skipped, 0);
    assert!(handle.cancel());
}

/// `OnPanic::Continue`: the panic is counted and the task keeps its
/// schedule; the default stops it.
pub fn a_periodic_task_may_continue_after_a_panic(h: &Harness) {
    let s = h.scheduler();
    let (log, task) = logged_fixed_rate(h, ms(10), 2, |_| panic!("second run failed"));
    let task = task.on_panic(OnPanic::Continue).unwrap();
    let handle = s.submit(ms(10), task).unwrap();
    for _ in 0..5 {
        h.advance_ms(10);
    }
    h.advance(h.granularity);
    assert_eq!(log.len(), 5, "{:?}", log.times());
    assert!(handle.is_pending(), "it goes on");
    assert_eq!(s.metrics().panicked, 1);
    assert!(handle.cancel());
}

/// Policies belong to periodic tasks; `Delay` cannot move a calendar's
/// grid; a calendar with no fire time left is refused with the task given
/// back.
pub fn calendar_and_policy_misuse_is_a_typed_error(h: &Harness) {
    let once = Task::once(|| ());
    assert!(once
        .missed_runs(MissedRuns::Skip)
        .unwrap_err()
        .is_not_periodic());
    let once = Task::once(|| ());
    assert!(once
        .on_panic(OnPanic::Continue)
        .unwrap_err()
        .is_not_periodic());
    let hourly = Calendar::parse_in("0 * * * *", "UTC").unwrap();
    let err = Task::calendar(hourly, || ())
        .missed_runs(MissedRuns::Delay)
        .unwrap_err();
    assert!(err.is_calendar());
    assert!(err.calendar_error().unwrap().is_delay_on_calendar());

    let h = from(h, "2024-05-06T08:00:00Z");
    let s = h.scheduler();
    let over = Calendar::parse_in("0 0 0 1 1 ? 2020", "UTC").unwrap();
    let rejected = s
        .submit(Duration::ZERO, Task::calendar(over, || ()))
        .unwrap_err();
    assert!(rejected.error().is_calendar(), "{}", rejected.error());
    assert!(rejected.error().calendar_error().unwrap().is_no_fire_left());
    assert!(rejected.into_task().is_some(), "the task is given back");
    assert_eq!(s.metrics().pending, 0);
}

/// The closure of a calendar task is dropped once, when the task ends: by
/// cancel, or when its calendar has no fire time left.
pub fn a_calendar_task_that_runs_out_ends_and_drops_its_closure(h: &Harness) {
    let h = from(h, "2029-12-31T23:00:00Z");
    let s = h.scheduler();
    let token = Arc::new(());
    let held = token.clone();
    let runs = Runs::default();
    let mut record = runs.recorder(&h.clock);
    let last = Calendar::parse_in("0 0 0 1 1 ? 2030", "UTC").unwrap();
    let handle = s
        .submit(
            Duration::ZERO,
            Task::calendar(last, move || {
                let _ = &held;
                record()
            }),
        )
        .unwrap();
    h.advance(secs(3600) + h.granularity);
    assert_eq!(runs.times().len(), 1);
    assert!(handle.is_done(), "no fire time left");
    assert!(handle.wait().is_ok());
    assert_eq!(Arc::strong_count(&token), 1, "the closure was dropped");
}

/// Keeps the scheduler trait object in use for the cases above.
#[allow(dead_code)]
fn _object(s: &dyn Scheduler) -> Option<TaskHandle> {
    s.submit(Duration::ZERO, Task::once(|| ())).ok()
}
