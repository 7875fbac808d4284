//! The missed-run rule, on fixed-rate grids and calendars, and that both
//! grids follow the same rule.

use std::num::NonZeroU64;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use super::super::{Calendar, MissedRuns, OnPanic, Plan};
use super::ts;

const ALL: [MissedRuns; 4] = [
    MissedRuns::CatchUp,
    MissedRuns::Skip,
    MissedRuns::Delay,
    MissedRuns::OnceNow,
];

fn period(ns: u64) -> NonZeroU64 {
    NonZeroU64::new(ns).unwrap()
}

#[test]
fn on_time_every_policy_runs_the_due_point() {
    for policy in ALL {
        for now in [100, 105] {
            let plan = policy.plan_fixed_rate(period(10), 100, now, Duration::from_nanos(5));
            assert_eq!(
                plan,
                Plan {
                    run_now: Some(100),
                    next: Some(110),
                    skipped: 0
                },
                "{policy:?}"
            );
        }
    }
    // One nanosecond beyond the tolerance is late.
    let plan = MissedRuns::Skip.plan_fixed_rate(period(10), 100, 106, Duration::from_nanos(5));
    assert_eq!(
        plan,
        Plan {
            run_now: None,
            next: Some(110),
            skipped: 1
        }
    );
}

#[test]
fn late_each_policy_does_its_own_thing() {
    let plan =
        |policy: MissedRuns, now| policy.plan_fixed_rate(period(10), 100, now, Duration::ZERO);
    assert_eq!(
        plan(MissedRuns::CatchUp, 111),
        Plan {
            run_now: Some(100),
            next: Some(110),
            skipped: 0
        }
    );
    assert_eq!(
        plan(MissedRuns::Skip, 111),
        Plan {
            run_now: None,
            next: Some(120),
            skipped: 2
        }
    );
    assert_eq!(
        plan(MissedRuns::Delay, 111),
        Plan {
            run_now: Some(111),
            next: Some(121),
            skipped: 1
        }
    );
    assert_eq!(
        plan(MissedRuns::OnceNow, 111),
        Plan {
            run_now: Some(110),
            next: Some(120),
            skipped: 1
        }
    );
    // Far behind: 100..=1000 are due (91 points), now exactly on 1000.
    assert_eq!(
        plan(MissedRuns::Skip, 1000),
        Plan {
            run_now: None,
            next: Some(1010),
            skipped: 91
        }
    );
    assert_eq!(
        plan(MissedRuns::OnceNow, 1000),
        Plan {
            run_now: Some(1000),
            next: Some(1010),
            skipped: 90
        }
    );
    assert_eq!(
        plan(MissedRuns::Delay, 1001),
        Plan {
            run_now: Some(1001),
            next: Some(1011),
            skipped: 90
        }
    );
}

/// A driver: a timer at each deadline, which fires at the deadline or as
/// soon as the driver is free (a run takes `run_len`) and back (it was away
/// until `away`). Returns each run as (start, grid point), and the skipped.
fn drive(policy: MissedRuns, away: u64, run_len: u64, runs: usize) -> (Vec<(u64, u64)>, u64) {
    let (mut out, mut skipped, mut free) = (Vec::new(), 0, 0);
    let mut due = Some(0);
    while let Some(d) = due.filter(|_| out.len() < runs) {
        let now = d.max(free).max(away);
        let plan = policy.plan_fixed_rate(period(10), d, now, Duration::ZERO);
        skipped += plan.skipped;
        free = now;
        if let Some(point) = plan.run_now {
            out.push((now, point));
            free = now + run_len;
        }
        due = plan.next;
    }
    (out, skipped)
}

#[test]
fn after_an_outage_each_policy_returns_to_its_grid() {
    // Every 10 from 0; the driver was away until 35; runs take 1.
    assert_eq!(
        drive(MissedRuns::CatchUp, 35, 1, 6),
        (
            vec![(35, 0), (36, 10), (37, 20), (38, 30), (40, 40), (50, 50)],
            0
        )
    );
    assert_eq!(
        drive(MissedRuns::Skip, 35, 1, 3),
        (vec![(40, 40), (50, 50), (60, 60)], 4)
    );
    assert_eq!(
        drive(MissedRuns::OnceNow, 35, 1, 3),
        (vec![(35, 30), (40, 40), (50, 50)], 3)
    );
    assert_eq!(
        drive(MissedRuns::Delay, 35, 1, 3),
        (vec![(35, 35), (45, 45), (55, 55)], 3)
    );
}

#[test]
fn runs_longer_than_the_period() {
    // Every 10; each run takes 15.
    assert_eq!(
        drive(MissedRuns::CatchUp, 0, 15, 3),
        (vec![(0, 0), (15, 10), (30, 20)], 0)
    );
    assert_eq!(
        drive(MissedRuns::Skip, 0, 15, 3),
        (vec![(0, 0), (20, 20), (40, 40)], 2)
    );
    assert_eq!(
        drive(MissedRuns::OnceNow, 0, 15, 3),
        (vec![(0, 0), (15, 10), (30, 30)], 1)
    );
    assert_eq!(
        drive(MissedRuns::Delay, 0, 15, 3),
        (vec![(0, 0), (15, 15), (30, 30)], 0)
    );
}

#[test]
fn a_fixed_rate_grid_ends_at_u64_max() {
    let p = MissedRuns::CatchUp.plan_fixed_rate(period(10), u64::MAX - 5, u64::MAX, Duration::ZERO);
    assert_eq!(
        p,
        Plan {
            run_now: Some(u64::MAX - 5),
            next: None,
            skipped: 0
        }
    );
    let p =
        MissedRuns::Skip.plan_fixed_rate(period(10), u64::MAX - 25, u64::MAX - 1, Duration::ZERO);
    assert_eq!(
        p,
        Plan {
            run_now: None,
            next: None,
            skipped: 3
        }
    );
    let p = MissedRuns::Skip.plan_fixed_rate(period(u64::MAX), 0, 5, Duration::ZERO);
    assert_eq!(
        p,
        Plan {
            run_now: None,
            next: Some(u64::MAX),
            skipped: 1
        }
    );
}

#[test]
fn calendars_refuse_delay() {
    let cal = Calendar::parse("0 * * * *").unwrap();
    let (due, now) = (ts("2024-01-01T00:00:00Z"), ts("2024-01-01T05:00:00Z"));
    let err = MissedRuns::Delay
        .plan_calendar(&cal, due, now, Duration::ZERO)
        .unwrap_err();
    assert!(err.is_delay_on_calendar(), "{err}");
    assert!(MissedRuns::Delay
        .check_calendar()
        .unwrap_err()
        .is_delay_on_calendar());
    for policy in [MissedRuns::CatchUp, MissedRuns::Skip, MissedRuns::OnceNow] {
        policy.check_calendar().unwrap();
    }
}

#[test]
fn calendar_after_an_outage() {
    // Weekdays at 09:00 in New York; Monday's run comes due on Tuesday, 10:00.
    let cal = Calendar::parse_in("0 9 * * MON-FRI", "America/New_York").unwrap();
    let (due, now) = (ts("2024-06-10T13:00:00Z"), ts("2024-06-11T14:00:00Z"));
    let plan = |policy: MissedRuns| {
        let p = policy
            .plan_calendar(&cal, due, now, Duration::from_secs(1))
            .unwrap();
        (
            p.run_now.map(|t| t.to_string()),
            p.next.map(|t| t.to_string()),
            p.skipped,
        )
    };
    let (monday, tuesday, wednesday) = (
        "2024-06-10T13:00:00Z",
        "2024-06-11T13:00:00Z",
        "2024-06-12T13:00:00Z",
    );
    assert_eq!(
        plan(MissedRuns::CatchUp),
        (Some(monday.into()), Some(tuesday.into()), 0)
    );
    assert_eq!(plan(MissedRuns::Skip), (None, Some(wednesday.into()), 2));
    assert_eq!(
        plan(MissedRuns::OnceNow),
        (Some(tuesday.into()), Some(wednesday.into()), 1)
    );
    // Within the tolerance, on time.
    let p = MissedRuns::Skip
        .plan_calendar(
            &cal,
            due,
            due + SignedDuration::from_millis(999),
            Duration::from_secs(1),
        )
        .unwrap();
    assert_eq!(
        p,
        Plan {
            run_now: Some(due),
            next: Some(ts(tuesday)),
            skipped: 0
        }
    );
}

#[test]
fn a_calendar_that_runs_out() {
    let cal = Calendar::parse("0 0 0 1 1 ? 2030,2031").unwrap();
    let plan = |policy: MissedRuns, due| {
        policy
            .plan_calendar(&cal, ts(due), ts("2040-01-01T00:00:00Z"), Duration::ZERO)
            .unwrap()
    };
    let last = ts("2031-01-01T00:00:00Z");
    assert_eq!(
        plan(MissedRuns::CatchUp, "2031-01-01T00:00:00Z"),
        Plan {
            run_now: Some(last),
            next: None,
            skipped: 0
        }
    );
    assert_eq!(
        plan(MissedRuns::OnceNow, "2031-01-01T00:00:00Z"),
        Plan {
            run_now: Some(last),
            next: None,
            skipped: 0
        }
    );
    assert_eq!(
        plan(MissedRuns::Skip, "2031-01-01T00:00:00Z"),
        Plan {
            run_now: None,
            next: None,
            skipped: 1
        }
    );
    assert_eq!(
        plan(MissedRuns::Skip, "2030-01-01T00:00:00Z"),
        Plan {
            run_now: None,
            next: None,
            skipped: 2
        }
    );
}

#[test]
fn on_panic() {
    assert_eq!(OnPanic::default(), OnPanic::Stop);
    assert!(!OnPanic::Stop.repeats());
    assert!(OnPanic::Continue.repeats());
    assert_eq!(MissedRuns::default(), MissedRuns::CatchUp);
}

proptest! {
    /// One rule: a calendar that is a fixed grid in UTC (every 15 s) plans
    /// exactly as the fixed-rate grid of 15 s does.
    #[test]
    fn a_calendar_grid_and_a_fixed_rate_grid_agree(
        policy in prop::sample::select(&[MissedRuns::CatchUp, MissedRuns::Skip, MissedRuns::OnceNow][..]),
        due in 0u64..1_000_000,
        late in prop_oneof![0u64..30_000_000_000, 0u64..20_000_000_000_000],
        tolerance in prop::sample::select(&[0u64, 1, 1_000_000_000, 20_000_000_000][..]),
    ) {
        const SEC: u64 = 1_000_000_000;
        let cal = Calendar::parse("*/15 * * * * ?").unwrap();
        let due = due * 15 * SEC;
        let now = due + late;
        let tolerance = Duration::from_nanos(tolerance);
        let at = |ns: u64| Timestamp::from_nanosecond(i128::from(ns)).unwrap();
        let fixed = policy.plan_fixed_rate(period(15 * SEC), due, now, tolerance);
        let calendar = policy.plan_calendar(&cal, at(due), at(now), tolerance).unwrap();
        prop_assert_eq!(calendar, Plan {
            run_now: fixed.run_now.map(at),
            next: fixed.next.map(at),
            skipped: fixed.skipped,
        });
    }
}
