//! Calendar schedules (`schedulers::calendar`): the cost of one
//! `Calendar::next_after`, the call a driver makes per run of a calendar
//! task and a preview makes per fire time.
//!
//! Group `calendar/next_after`, one id per expression and zone: from an
//! instant that steps through a year (a fixed sequence), so that each call
//! starts from a different point of the calendar; every result is checked
//! against the one before (strictly later, at most a bound away).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use schedulers::calendar::jiff::{SignedDuration, Timestamp};
use schedulers::calendar::Calendar;

/// (id, expression, zone, the longest gap between two fire times).
const CASES: &[(&str, &str, &str, i64)] = &[
    ("every-minute", "* * * * *", "UTC", 60),
    (
        "weekdays-0900",
        "0 9 * * MON-FRI",
        "Europe/Berlin",
        4 * 86_400,
    ),
    (
        "quartz-every-20s",
        "*/20 * * * * ?",
        "America/New_York",
        3_600,
    ),
    (
        "last-friday",
        "0 15 10 ? * 6L",
        "America/New_York",
        36 * 86_400,
    ),
    (
        "nearest-weekday-15th",
        "0 0 12 15W * ?",
        "Australia/Lord_Howe",
        33 * 86_400,
    ),
    (
        "daily-0230-dst-gap",
        "0 30 2 * * ?",
        "Europe/Berlin",
        86_400 + 3_600,
    ),
    ("leap-day", "0 0 0 29 2 ?", "UTC", 8 * 366 * 86_400),
];

fn next_after(c: &mut Criterion) {
    let mut group = c.benchmark_group("calendar/next_after");
    let start: Timestamp = "2024-01-01T00:00:00Z".parse().expect("an instant");
    // 7919 seconds: a prime, so the starting points fall on every minute,
    // hour and weekday over the year.
    let step = SignedDuration::from_secs(7_919);
    for &(id, expr, zone, gap) in CASES {
        let cal = Calendar::parse_in(expr, zone).expect("a valid calendar");
        let gap = SignedDuration::from_secs(gap);
        group.bench_function(BenchmarkId::new(id, zone), |b| {
            let mut after = start;
            b.iter(|| {
                let next = cal.next_after(black_box(after)).expect("a next fire time");
                assert!(
                    next > after && next - after <= gap,
                    "{expr}: {after} -> {next}"
                );
                after += step;
                if after.as_second() > 1_767_225_600 {
                    after = start; // back to 2024-01-01 after 2025-12-31
                }
                next
            })
        });
    }
    group.finish();
}

criterion_group!(calendar, next_after);
criterion_main!(calendar);
