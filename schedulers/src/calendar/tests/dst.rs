//! The DST rule on real zone transitions, as a table. The expected fire
//! times are written by hand from the rule; the test prints the table
//! (`cargo test -p schedulers --lib calendar::tests::dst -- --nocapture`)
//! and then checks every row.

use jiff::tz::TimeZone;
use jiff::SignedDuration;

use super::super::Calendar;
use super::{fires, ts};

pub(super) struct Case {
    pub(super) zone: &'static str,
    /// The instant of the transition the case is about, checked against
    /// the tz database; `None` for a zone without one.
    pub(super) transition: Option<&'static str>,
    pub(super) expr: &'static str,
    pub(super) after: &'static str,
    pub(super) expected: &'static [&'static str],
}

pub(super) const CASES: &[Case] = &[
    // Europe/Berlin, spring forward: 02:00 CET -> 03:00 CEST.
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-03-31T01:00:00Z"),
        expr: "30 2 * * *",
        after: "2024-03-30T23:00:00Z",
        expected: &["2024-03-31T03:00:00+02:00", "2024-04-01T02:30:00+02:00"],
    },
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-03-31T01:00:00Z"),
        expr: "*/15 2 * * *",
        after: "2024-03-30T23:00:00Z",
        expected: &["2024-03-31T03:00:00+02:00", "2024-04-01T02:00:00+02:00"],
    },
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-03-31T01:00:00Z"),
        expr: "0,30 2,3 * * *",
        after: "2024-03-30T23:00:00Z",
        expected: &[
            "2024-03-31T03:00:00+02:00",
            "2024-03-31T03:30:00+02:00",
            "2024-04-01T02:00:00+02:00",
        ],
    },
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-03-31T01:00:00Z"),
        expr: "0 * * * *",
        after: "2024-03-30T23:30:00Z",
        expected: &[
            "2024-03-31T01:00:00+01:00",
            "2024-03-31T03:00:00+02:00",
            "2024-03-31T04:00:00+02:00",
        ],
    },
    // Europe/Berlin, fall back: 03:00 CEST -> 02:00 CET.
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-10-27T01:00:00Z"),
        expr: "30 2 * * *",
        after: "2024-10-26T22:00:00Z",
        expected: &["2024-10-27T02:30:00+02:00", "2024-10-28T02:30:00+01:00"],
    },
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-10-27T01:00:00Z"),
        expr: "*/30 2 * * *",
        after: "2024-10-26T22:00:00Z",
        expected: &[
            "2024-10-27T02:00:00+02:00",
            "2024-10-27T02:30:00+02:00",
            "2024-10-28T02:00:00+01:00",
        ],
    },
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-10-27T01:00:00Z"),
        expr: "0 * * * *",
        after: "2024-10-26T22:30:00Z",
        expected: &[
            "2024-10-27T01:00:00+02:00",
            "2024-10-27T02:00:00+02:00",
            "2024-10-27T02:00:00+01:00",
            "2024-10-27T03:00:00+01:00",
        ],
    },
    Case {
        zone: "Europe/Berlin",
        transition: Some("2024-10-27T01:00:00Z"),
        expr: "0 30 * * * ?",
        after: "2024-10-26T22:45:00Z",
        expected: &[
            "2024-10-27T01:30:00+02:00",
            "2024-10-27T02:30:00+02:00",
            "2024-10-27T02:30:00+01:00",
            "2024-10-27T03:30:00+01:00",
        ],
    },
    // America/New_York, spring forward: 02:00 EST -> 03:00 EDT.
    Case {
        zone: "America/New_York",
        transition: Some("2024-03-10T07:00:00Z"),
        expr: "30 2 * * *",
        after: "2024-03-10T05:00:00Z",
        expected: &["2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"],
    },
    Case {
        zone: "America/New_York",
        transition: Some("2024-03-10T07:00:00Z"),
        expr: "0 0/20 * * * ?",
        after: "2024-03-10T06:30:00Z",
        expected: &[
            "2024-03-10T01:40:00-05:00",
            "2024-03-10T03:00:00-04:00",
            "2024-03-10T03:20:00-04:00",
        ],
    },
    // America/New_York, fall back: 02:00 EDT -> 01:00 EST.
    Case {
        zone: "America/New_York",
        transition: Some("2024-11-03T06:00:00Z"),
        expr: "30 1 * * *",
        after: "2024-11-03T04:00:00Z",
        expected: &["2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"],
    },
    Case {
        zone: "America/New_York",
        transition: Some("2024-11-03T06:00:00Z"),
        expr: "*/30 * * * *",
        after: "2024-11-03T04:45:00Z",
        expected: &[
            "2024-11-03T01:00:00-04:00",
            "2024-11-03T01:30:00-04:00",
            "2024-11-03T01:00:00-05:00",
            "2024-11-03T01:30:00-05:00",
            "2024-11-03T02:00:00-05:00",
        ],
    },
    // Australia/Lord_Howe, half-hour spring forward: 02:00 -> 02:30.
    Case {
        zone: "Australia/Lord_Howe",
        transition: Some("2024-10-05T15:30:00Z"),
        expr: "15 2 * * *",
        after: "2024-10-05T13:00:00Z",
        expected: &["2024-10-06T02:30:00+11:00", "2024-10-07T02:15:00+11:00"],
    },
    Case {
        zone: "Australia/Lord_Howe",
        transition: Some("2024-10-05T15:30:00Z"),
        expr: "*/10 * * * *",
        after: "2024-10-05T15:15:00Z",
        expected: &[
            "2024-10-06T01:50:00+10:30",
            "2024-10-06T02:30:00+11:00",
            "2024-10-06T02:40:00+11:00",
        ],
    },
    // Australia/Lord_Howe, half-hour fall back: 02:00 -> 01:30.
    Case {
        zone: "Australia/Lord_Howe",
        transition: Some("2024-04-06T15:00:00Z"),
        expr: "45 1 * * *",
        after: "2024-04-06T13:30:00Z",
        expected: &["2024-04-07T01:45:00+11:00", "2024-04-08T01:45:00+10:30"],
    },
    Case {
        zone: "Australia/Lord_Howe",
        transition: Some("2024-04-06T15:00:00Z"),
        expr: "*/15 * * * *",
        after: "2024-04-06T14:20:00Z",
        expected: &[
            "2024-04-07T01:30:00+11:00",
            "2024-04-07T01:45:00+11:00",
            "2024-04-07T01:30:00+10:30",
            "2024-04-07T01:45:00+10:30",
            "2024-04-07T02:00:00+10:30",
        ],
    },
    // Pacific/Apia skips Friday 30 December 2011: -10:00 -> +14:00.
    Case {
        zone: "Pacific/Apia",
        transition: Some("2011-12-30T10:00:00Z"),
        expr: "0 12 * * *",
        after: "2011-12-28T22:00:00Z",
        expected: &[
            "2011-12-29T12:00:00-10:00",
            "2011-12-31T00:00:00+14:00",
            "2011-12-31T12:00:00+14:00",
        ],
    },
    Case {
        zone: "Pacific/Apia",
        transition: Some("2011-12-30T10:00:00Z"),
        expr: "0 0 * * *",
        after: "2011-12-28T22:00:00Z",
        expected: &[
            "2011-12-29T00:00:00-10:00",
            "2011-12-31T00:00:00+14:00",
            "2012-01-01T00:00:00+14:00",
        ],
    },
    Case {
        zone: "Pacific/Apia",
        transition: Some("2011-12-30T10:00:00Z"),
        expr: "0 9 30 12 *",
        after: "2011-12-28T22:00:00Z",
        expected: &["2011-12-31T00:00:00+14:00", "2012-12-30T09:00:00+14:00"],
    },
    // Asia/Tokyo has had no transition since 1951.
    Case {
        zone: "Asia/Tokyo",
        transition: None,
        expr: "30 2 * * *",
        after: "2024-03-30T15:00:00Z",
        expected: &["2024-03-31T02:30:00+09:00", "2024-04-01T02:30:00+09:00"],
    },
    Case {
        zone: "Asia/Tokyo",
        transition: None,
        expr: "0 * * * *",
        after: "2024-10-26T15:30:00Z",
        expected: &[
            "2024-10-27T01:00:00+09:00",
            "2024-10-27T02:00:00+09:00",
            "2024-10-27T03:00:00+09:00",
        ],
    },
];

/// `2024-03-31 02:00 +01 -> 03:00 +02` for the transition at `at`: the
/// wall clock and offset just before it and at it.
fn transition_label(zone: &TimeZone, at: Option<&str>) -> String {
    let Some(at) = at else {
        return "none".into();
    };
    let at = ts(at);
    let found = zone
        .following(at - SignedDuration::from_secs(1))
        .next()
        .map(|t| t.timestamp());
    assert_eq!(found, Some(at), "no transition of {zone:?} at {at}");
    let (from, to) = (
        zone.to_offset(at - SignedDuration::from_nanos(1)),
        zone.to_offset(at),
    );
    let (before, after) = (from.to_datetime(at), to.to_datetime(at));
    let after_text = if after.date() == before.date() {
        after.strftime("%H:%M").to_string()
    } else {
        after.strftime("%F %H:%M").to_string()
    };
    format!(
        "{} {from} -> {after_text} {to}",
        before.strftime("%F %H:%M")
    )
}

#[test]
fn dst_table() {
    let mut rows = vec![
        "| zone | transition (wall clock) | expression | after | expected | actual |".to_owned(),
        "|---|---|---|---|---|---|".to_owned(),
    ];
    let mut wrong = Vec::new();
    for case in CASES {
        let zone = TimeZone::get(case.zone).unwrap();
        let label = transition_label(&zone, case.transition);
        let cal = Calendar::parse_in(case.expr, case.zone).unwrap();
        let actual = fires(&cal, case.after, case.expected.len());
        let after = ts(case.after)
            .to_zoned_datetime(zone)
            .strftime("%F %T%:z")
            .to_string();
        let same = actual == case.expected;
        rows.push(format!(
            "| {} | {label} | `{}` | {after} | {} | {} |",
            case.zone,
            case.expr,
            case.expected.join(", "),
            if same {
                "same".to_owned()
            } else {
                format!("**{}**", actual.join(", "))
            }
        ));
        if !same {
            wrong.push(format!("{} in {}: {actual:?}", case.expr, case.zone));
        }
    }
    println!("{}", rows.join("\n"));
    assert!(wrong.is_empty(), "rows that differ: {wrong:#?}");
}

/// `next_after` from any instant inside a transition's wall-clock mess
/// agrees with stepping through the fire times from before it.
#[test]
fn next_after_from_inside_a_fold_or_gap() {
    for case in CASES {
        let cal = Calendar::parse_in(case.expr, case.zone).unwrap();
        let all: Vec<_> = cal
            .fire_times(ts(case.after))
            .take(case.expected.len())
            .map(|z| z.timestamp())
            .collect();
        let (first, last) = (ts(case.after), *all.last().unwrap());
        let mut t = first;
        while t < last {
            let expected = all.iter().find(|&&f| f > t).copied();
            assert_eq!(
                cal.next_after(t),
                expected,
                "{} in {} after {t}",
                case.expr,
                case.zone
            );
            t += SignedDuration::from_secs(60 * 5 + 7);
        }
    }
}
