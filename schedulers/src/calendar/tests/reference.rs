//! `next_after` against a brute-force reference: walk the wall clock minute
//! by minute, test every field by its definition (not the bit tricks of the
//! search), and apply the DST rule literally to each match.

use std::collections::BTreeSet;

use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use super::super::cron::{Cron, Days};
use super::super::Calendar;

fn has(mask: u64, v: i64) -> bool {
    (0..64).contains(&v) && mask & (1 << v) != 0
}

/// Whether `date` is a weekday, Monday to Friday.
fn is_weekday(date: Date) -> bool {
    date.weekday().to_monday_one_offset() <= 5
}

/// The weekday of `date`'s month closest to the `n`th (Quartz's `nW`),
/// whether or not the month has an `n`th.
fn nearest_weekday(date: Date, n: i8) -> Option<i8> {
    (1..=date.days_in_month())
        .filter(|&d| is_weekday(date.with().day(d).build().unwrap()))
        .min_by_key(|&d| (d - n).abs())
}

/// The day fields by their definitions.
fn day_matches(days: &Days, date: Date) -> bool {
    let (d, len) = (date.day(), date.days_in_month());
    let wd = date.weekday().to_sunday_zero_offset();
    let dom = has(days.dom, d.into())
        || (0..=30).any(|n| has(days.dom_last.into(), n) && i64::from(d) == i64::from(len) - n)
        || (days.dom_last_weekday
            && is_weekday(date)
            && (d + 1..=len).all(|later| !is_weekday(date.with().day(later).build().unwrap())))
        || (1..=31).any(|n| has(days.dom_nearest, n) && nearest_weekday(date, n as i8) == Some(d));
    let dow = has(days.dow.into(), wd.into())
        || (has(days.dow_last.into(), wd.into()) && d + 7 > len)
        || (1..=5)
            .any(|k| has(days.dow_nth, i64::from(wd) * 5 + k - 1) && i64::from(d - 1) / 7 + 1 == k);
    if days.either {
        dom || dow
    } else {
        dom && dow
    }
}

/// Every fire time in `(after, until]`, by the rule read literally: each
/// second of the wall clock the fields name, resolved in the zone.
fn reference(cron: &Cron, zone: &TimeZone, after: Timestamp, until: Timestamp) -> Vec<Timestamp> {
    let day = SignedDuration::from_hours(24);
    let first = (after - day).to_zoned_datetime(zone.clone()).date();
    let last = (until + day).to_zoned_datetime(zone.clone()).date();
    let mut fires = BTreeSet::new();
    // The last gap resolved: its wall-clock end, and the instant after it.
    let mut gap: Option<(DateTime, Timestamp)> = None;
    let mut date = first;
    while date <= last {
        let day_ok = cron.years.is_none_or(|y| y.contains(date.year()))
            && has(cron.months, date.month().into())
            && day_matches(&cron.days, date);
        let seconds =
            (0..24i8).flat_map(|h| (0..60i8).flat_map(move |m| (0..60i8).map(move |s| (h, m, s))));
        for (h, m, s) in seconds {
            if !(day_ok
                && has(cron.hours, h.into())
                && has(cron.minutes, m.into())
                && has(cron.seconds, s.into()))
            {
                continue;
            }
            let local = date.at(h, m, s, 0);
            match zone.to_ambiguous_timestamp(local).offset() {
                AmbiguousOffset::Unambiguous { offset } => {
                    fires.insert(offset.to_timestamp(local).unwrap());
                }
                AmbiguousOffset::Fold { before, after } => {
                    fires.insert(before.to_timestamp(local).unwrap());
                    if cron.every_hour() {
                        fires.insert(after.to_timestamp(local).unwrap());
                    }
                }
                AmbiguousOffset::Gap { .. } => {
                    if gap.is_none_or(|(end, _)| local >= end) {
                        // Walk the wall clock to the first time that exists.
                        let mut end = local;
                        let first = loop {
                            end += SignedDuration::from_secs(1);
                            if let AmbiguousOffset::Unambiguous { offset }
                            | AmbiguousOffset::Fold { before: offset, .. } =
                                zone.to_ambiguous_timestamp(end).offset()
                            {
                                break offset.to_timestamp(end).unwrap();
                            }
                        };
                        gap = Some((end, first));
                    }
                    fires.extend(gap.map(|(_, first)| first));
                }
            }
        }
        date = date.tomorrow().unwrap();
    }
    fires
        .into_iter()
        .filter(|&t| t > after && t <= until)
        .collect()
}

/// A field: one of a few texts, most of them chosen to meet DST hours.
fn one_of(options: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(options)
}

/// Random expressions in both dialects, with every special.
fn expression() -> impl Strategy<Value = String> {
    let minute = one_of(&[
        "*", "0", "30", "*/15", "0,30", "5-10", "45-15/10", "*/7", "59", "10/25",
    ]);
    let hour = one_of(&[
        "*", "*", "2", "1", "1-3", "*/3", "0,2,3", "22-2", "0-23", "1,2",
    ]);
    let dom = one_of(&[
        "*", "*", "*", "?", "1", "L", "L-2", "LW", "15W", "1W", "*/2", "28-31", "30", "5-20",
    ]);
    let month = one_of(&[
        "*",
        "*",
        "*",
        "3",
        "10,11",
        "MAR-NOV/2",
        "*/4",
        "DEC-FEB",
        "4",
    ]);
    let unix_dow = one_of(&[
        "*", "*", "?", "MON-FRI", "0", "7", "5L", "1#1", "FRI#2", "SAT,SUN", "6", "L",
    ]);
    let quartz_dow = one_of(&[
        "*", "*", "?", "MON-FRI", "1", "6L", "2#1", "FRI#2", "SAT,SUN", "7", "L",
    ]);
    let second = one_of(&["0", "0", "*/20", "0,30", "15", "*/30"]);
    let year = one_of(&["", "", "", " *", " 2000-2030", " 2011,2024", " 2010/2"]);
    (
        any::<bool>(),
        second,
        minute,
        hour,
        dom,
        month,
        unix_dow,
        quartz_dow,
        year,
    )
        .prop_map(|(quartz, s, mi, h, dom, mo, udow, qdow, y)| {
            if quartz {
                // Quartz wants one day field unrestricted.
                let dom = if dom == "*" || dom == "?" || qdow == "*" || qdow == "?" {
                    dom
                } else {
                    "?"
                };
                format!("{s} {mi} {h} {dom} {mo} {qdow}{y}")
            } else {
                format!("{mi} {h} {dom} {mo} {udow}")
            }
        })
}

const ZONES: &[&str] = &[
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    // DST at midnight: the day starts at 01:00.
    "America/Sao_Paulo",
    // Negative DST in the tz database: winter is the "summer" offset.
    "Europe/Dublin",
    "Asia/Kolkata",
    "UTC",
];

/// An instant near one of `zone`'s transitions in `year` (or anywhere in
/// the year for a zone without one), shifted by `shift` seconds.
fn instant_near_transition(zone: &TimeZone, year: i16, pick: usize, shift: i64) -> Timestamp {
    let start = jiff::civil::date(year, 1, 1)
        .at(0, 0, 0, 0)
        .to_zoned_datetime(zone.clone())
        .unwrap()
        .timestamp();
    let end = start + SignedDuration::from_hours(24 * 366);
    let transitions: Vec<Timestamp> = zone
        .following(start)
        .map(|t| t.timestamp())
        .take_while(|&t| t < end)
        .collect();
    let base = if transitions.is_empty() {
        start + SignedDuration::from_hours(24 * 180)
    } else {
        transitions[pick % transitions.len()]
    };
    base + SignedDuration::from_secs(shift)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every fire time in a window of two days around a transition, from
    /// `next_after` stepped along, equals the reference's.
    #[test]
    fn next_after_agrees_with_the_reference(
        expr in expression(),
        zone in prop::sample::select(ZONES),
        year in prop_oneof![Just(2011i16), 2000i16..2035],
        pick in 0usize..4,
        shift in -(36 * 3600i64)..(12 * 3600),
        half_second in any::<bool>(),
    ) {
        let cron = match Cron::parse(&expr) {
            Ok(cron) => cron,
            Err(e) => {
                prop_assert!(e.is_never_fires(), "{expr}: {e}");
                return Ok(());
            }
        };
        let zone_tz = TimeZone::get(zone).unwrap();
        let after = instant_near_transition(&zone_tz, year, pick, shift) + SignedDuration::from_millis(if half_second { 500 } else { 0 });
        let until = after + SignedDuration::from_hours(48);
        let cal = Calendar::new(cron.clone(), zone_tz.clone());
        let ours: Vec<Timestamp> = cal.fire_times(after).map(|z| z.timestamp()).take_while(|&t| t <= until).collect();
        let theirs = reference(&cron, &zone_tz, after, until);
        prop_assert_eq!(ours, theirs, "{} in {} after {}", expr, zone, after);
    }
}

/// The reference itself, on the Berlin fall-back hour (a check that it can
/// tell a wrong answer): every hour fires twice, 02:30 once.
#[test]
fn the_reference_reads_the_rule() {
    let zone = TimeZone::get("Europe/Berlin").unwrap();
    let after: Timestamp = "2024-10-26T22:00:00Z".parse().unwrap();
    let until = after + SignedDuration::from_hours(5);
    let hourly = reference(&Cron::parse("0 * * * *").unwrap(), &zone, after, until);
    let at = |t: &str| t.parse::<Timestamp>().unwrap();
    // 01:00+02, 02:00+02, 02:00+01, 03:00+01, 04:00+01.
    assert_eq!(
        hourly,
        [
            "2024-10-26T23:00:00Z",
            "2024-10-27T00:00:00Z",
            "2024-10-27T01:00:00Z",
            "2024-10-27T02:00:00Z",
            "2024-10-27T03:00:00Z"
        ]
        .map(at)
    );
    let once = reference(&Cron::parse("30 2 * * *").unwrap(), &zone, after, until);
    assert_eq!(once, ["2024-10-27T00:30:00Z".parse::<Timestamp>().unwrap()]);
    let spring = reference(
        &Cron::parse("*/15 2 * * *").unwrap(),
        &zone,
        "2024-03-30T23:00:00Z".parse().unwrap(),
        "2024-03-31T05:00:00Z".parse().unwrap(),
    );
    assert_eq!(
        spring,
        ["2024-03-31T01:00:00Z".parse::<Timestamp>().unwrap()]
    );
}
