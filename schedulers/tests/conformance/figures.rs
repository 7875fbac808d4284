//! What a scheduler knows about itself ([`Metrics`]), checked figure by
//! figure against schedules whose every run is known, in virtual time: a
//! task due at `d` that starts during an advance to `t` starts at `t`
//! exactly (the clock stands still while the driver works), so its
//! lateness is `t - d`; a run takes no time unless the task itself
//! advances the clock.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use schedulers::calendar::{Calendar, MissedRuns};
use schedulers::{Histogram, Metrics, NamedMetrics, SchedulerExt, Task};

use super::{ms, secs, Harness};

/// The figures of the tasks named `name`.
fn named<'a>(m: &'a Metrics, name: &str) -> &'a NamedMetrics {
    m.by_name
        .iter()
        .find(|n| n.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no figures for {name:?} in {:?}", m.by_name))
}

/// A histogram of exactly these values.
fn of(values: &[Duration]) -> Histogram {
    let mut h = Histogram::new();
    values.iter().for_each(|&v| h.record(v));
    h
}

/// Every figure of [`Metrics`], on one schedule: one-shots on time and
/// late, a named fixed-rate task whose missed runs are skipped, one that
/// takes 250 ms, a panic, a cancel, rejections, and tasks of every kind
/// left pending.
pub fn figures_match_a_known_schedule(h: &Harness) {
    // 2023-11-14 22:13:20 UTC: the hourly calendar task's first fire is 46
    // minutes away, long after this test's last advance.
    let h = h.at_wall(SystemTime::UNIX_EPOCH + secs(1_700_000_000));
    let g = h.granularity;
    let s = h.scheduler();
    let empty = s.metrics();
    assert_eq!((empty.pending, empty.fired, empty.cancelled), (0, 0, 0));
    assert!(empty.lateness.is_empty() && empty.run_time.is_empty() && empty.by_name.is_empty());

    let a = s.submit(secs(1), Task::once(|| ()).named("a")).unwrap();
    let b = s.schedule(secs(2), || ()).unwrap();
    let c = s.schedule(secs(9), || ()).unwrap();
    let p = Task::fixed_rate(secs(1), || ()).unwrap();
    let p = p.missed_runs(MissedRuns::Skip).unwrap().named("p");
    let p = s.submit(secs(1), p).unwrap();
    let _d = s
        .schedule_with_fixed_delay(secs(100), secs(100), || ())
        .unwrap();
    let hourly = Calendar::parse_in("0 * * * *", "UTC").unwrap();
    let _cal = s.schedule_calendar(hourly, || ()).unwrap();

    let m = s.metrics();
    assert_eq!(m.pending, 6);
    let kinds = m.pending_by_kind;
    assert_eq!((kinds.one_shot, kinds.periodic, kinds.calendar), (3, 2, 1));
    assert_eq!((m.fired, m.lateness.count(), m.run_time.count()), (0, 0, 0));
    assert!(
        m.by_name.is_empty(),
        "figures by name start with a name's first run"
    );

    // 1 s: `a` and `p` on time.
    h.advance_past(secs(1));
    let m = s.metrics();
    assert_eq!(m.fired, 2);
    assert_eq!(m.lateness, of(&[g, g]));
    assert_eq!(m.run_time, of(&[Duration::ZERO; 2]));
    assert!(a.is_done());
    assert!(c.handle().cancel());

    // 4.5 s: `b` starts 2.5 s late; `p`'s runs at 2, 3 and 4 s are passed
    // over (its policy), and it runs next at 5 s.
    h.advance_past(ms(4500));
    let m = s.metrics();
    assert_eq!((m.fired, m.skipped, m.cancelled), (3, 3, 1));
    assert_eq!(m.lateness, of(&[g, g, ms(2500) + g]));
    assert_eq!(b.get().ok(), Some(()));
    let kinds = m.pending_by_kind;
    assert_eq!((kinds.one_shot, kinds.periodic, kinds.calendar), (0, 2, 1));

    // 5 s: `p` on time. 5.5 s + g: a run that takes 250 ms.
    h.advance_past(secs(5));
    let clock = h.clock.clone();
    let slow = Task::once(move || clock.advance(ms(250))).named("slow");
    let slow = s.submit(ms(500), slow).unwrap();
    h.advance_past(ms(5500) + g);
    assert!(slow.is_done());
    assert!(p.cancel());

    // 6.75 s + 2g: a named task panics.
    let boom = s
        .submit(secs(1), Task::once(|| panic!("boom")).named("boom"))
        .unwrap();
    h.advance_past(ms(6750) + g + g);
    let error = boom.wait().unwrap_err();
    assert_eq!(
        (error.task_name(), error.panic_message()),
        (Some("boom"), Some("boom"))
    );

    // Refused: a deadline past the end of time, named and not.
    let refused = s.submit(Duration::MAX, Task::once(|| ()).named("far"));
    assert_eq!(refused.unwrap_err().error().task_name(), Some("far"));
    assert!(s.submit(Duration::MAX, Task::once(|| ())).is_err());

    let m = s.metrics();
    assert_eq!(m.pending, 2);
    let kinds = m.pending_by_kind;
    assert_eq!((kinds.one_shot, kinds.periodic, kinds.calendar), (0, 1, 1));
    assert_eq!(
        (m.fired, m.cancelled, m.rejected, m.panicked, m.skipped),
        (6, 2, 2, 1, 3)
    );
    // a, p at 1 s; b; p at 5 s; slow; boom.
    assert_eq!(m.lateness, of(&[g, g, ms(2500) + g, g, g, g]));
    let mut runs = [Duration::ZERO; 6];
    runs[4] = ms(250);
    assert_eq!(m.run_time, of(&runs));

    assert_eq!(m.by_name.len(), 5, "a, p, slow, boom, far: {:?}", m.by_name);
    let a = named(&m, "a");
    assert_eq!((a.fired, a.panicked, a.skipped, a.rejected), (1, 0, 0, 0));
    assert_eq!(a.lateness, of(&[g]));
    let p = named(&m, "p");
    assert_eq!((p.fired, p.skipped), (2, 3));
    assert_eq!(p.lateness, of(&[g, g]));
    let slow = named(&m, "slow");
    assert_eq!(slow.run_time, of(&[ms(250)]));
    let boom = named(&m, "boom");
    assert_eq!((boom.fired, boom.panicked), (1, 1));
    let far = named(&m, "far");
    assert_eq!((far.fired, far.rejected), (0, 1));
    assert!(far.lateness.is_empty());
}

/// `run_figures(false)`: the driver does not time its runs, so the
/// lateness and run-time histograms (overall and by name) stay empty, and
/// every count is kept: fired, panicked, cancelled, by name too.
pub fn untimed_runs_keep_every_count_and_no_histogram(h: &Harness) {
    let s = h.untimed_scheduler();
    let ran = Arc::new(AtomicU64::new(0));
    for k in 1..=5 {
        let ran = ran.clone();
        let task = Task::once(move || _ = ran.fetch_add(1, SeqCst)).named("tick");
        s.submit(ms(10 * k), task).unwrap();
    }
    let boom = Task::once(|| panic!("boom")).named("boom");
    let boom = s.submit(ms(20), boom).unwrap();
    let gone = s.schedule(ms(30), || ()).unwrap();
    assert!(gone.handle().cancel());
    let every = Task::fixed_rate(ms(10), || ()).unwrap();
    let every = s.submit(ms(10), every).unwrap();
    h.advance_past(ms(55));
    assert!(every.cancel());
    let m = s.metrics();
    assert_eq!(ran.load(SeqCst), 5);
    assert!(boom.is_done());
    // Five ticks, the panic, and the fixed-rate task at 10 to 50 ms.
    assert_eq!((m.fired, m.panicked, m.cancelled), (11, 1, 2));
    assert!(m.lateness.is_empty() && m.run_time.is_empty(), "{m:?}");
    let tick = named(&m, "tick");
    assert_eq!((tick.fired, tick.panicked), (5, 0));
    assert!(tick.lateness.is_empty() && tick.run_time.is_empty());
    let boom = named(&m, "boom");
    assert_eq!((boom.fired, boom.panicked), (1, 1));
}

/// Many tasks at scattered deadlines, the clock moved in uneven steps: the
/// lateness histogram holds, bucket for bucket, each run's start (the
/// first advance that reached its deadline) minus its deadline.
pub fn lateness_is_start_minus_deadline_for_every_run(h: &Harness) {
    let s = h.scheduler();
    let g = h.granularity;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    // Deadlines on a 10 ms grid, advances to 5 ms past it, plus the
    // granularity: whatever a wheel rounds, a task due by an advance's
    // target runs in that advance, and none runs early.
    let deadlines: Vec<u64> = (0..300).map(|_| 10 * (1 + next(200))).collect();
    let ran = Arc::new(AtomicU64::new(0));
    for &d in &deadlines {
        let ran = ran.clone();
        s.schedule(ms(d), move || ran.fetch_add(1, SeqCst)).unwrap();
    }
    let mut targets = Vec::new();
    let mut t = 0;
    while t < 2_000 {
        t += 10 * (1 + next(25));
        targets.push(t.min(2_000) + 5);
    }
    for &t in &targets {
        h.advance_past(ms(t));
    }
    assert_eq!(ran.load(SeqCst), 300);
    let expected: Vec<Duration> = deadlines
        .iter()
        .map(|&d| {
            let t = targets
                .iter()
                .find(|&&t| t >= d)
                .expect("an advance past it");
            ms(t - d) + g
        })
        .collect();
    let m = s.metrics();
    assert_eq!(m.fired, 300);
    assert_eq!(m.lateness, of(&expected));
    assert_eq!(m.run_time, of(&[Duration::ZERO; 300]));
}

/// A driver that sleeps until a deadline counts the wake-up (on the system
/// clock: a virtual clock's driver may find time moved before it sleeps).
///
/// A driver that starts late (a pool's worker starts with its first task)
/// finds the task due and never sleeps: on a busy machine that can take
/// longer than the delay, so each try waits twice as long as the one before,
/// and the check is that some try's wake-up was counted.
pub fn wakeups_count_the_driver_waking(h: &Harness) {
    let s = h.scheduler_on_system_clock();
    let before = s.metrics().wakeups;
    let mut runs = 0u64;
    for delay in [30, 60, 120, 240, 480, 960] {
        s.schedule(ms(delay), || ()).unwrap().get().unwrap();
        runs += 1;
        if s.metrics().wakeups > before {
            break;
        }
    }
    let m = s.metrics();
    assert!(
        m.wakeups > before,
        "{} wake-ups, {before} before, after {runs} runs",
        m.wakeups
    );
    assert_eq!(m.lateness.count(), runs);
    assert!(m.lateness.max().unwrap() < secs(10));
}
