//! Which days match: each day rule on a known calendar, in UTC.

use super::fires_in;

/// The dates (`YYYY-MM-DD`) of the first `n` fires of a daily-at-midnight
/// expression, from 2024-01-01.
fn days(expr: &str, n: usize) -> Vec<String> {
    fires_in(expr, "UTC", "2023-12-31T23:59:59Z", n)
        .into_iter()
        .map(|f| {
            assert!(f.ends_with("T00:00:00+00:00"), "{expr}: {f}");
            f[..10].to_owned()
        })
        .collect()
}

#[test]
fn last_day_and_offsets_from_it() {
    assert_eq!(
        days("0 0 0 L * ?", 4),
        ["2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30"]
    );
    assert_eq!(
        days("0 0 0 L-2 * ?", 3),
        ["2024-01-29", "2024-02-27", "2024-03-29"]
    );
    // L-30 exists only in 31-day months.
    assert_eq!(
        days("0 0 0 L-30 * ?", 3),
        ["2024-01-01", "2024-03-01", "2024-05-01"]
    );
    assert_eq!(days("0 0 L * *", 2), ["2024-01-31", "2024-02-29"]);
}

#[test]
fn last_weekday_of_the_month() {
    // 2024-03-31 is a Sunday, 2024-08-31 a Saturday.
    assert_eq!(
        days("0 0 0 LW * ?", 8),
        [
            "2024-01-31",
            "2024-02-29",
            "2024-03-29",
            "2024-04-30",
            "2024-05-31",
            "2024-06-28",
            "2024-07-31",
            "2024-08-30"
        ]
    );
}

#[test]
fn nearest_weekday_stays_in_its_month() {
    // 2024-06-15 is a Saturday -> Friday 14th; 2024-09-15 a Sunday -> Monday
    // 16th; 2024-06-01 a Saturday -> Monday 3rd (not May); 2024-03-31 a
    // Sunday -> Friday 29th (not April).
    assert_eq!(days("0 0 0 15W 6 ?", 1), ["2024-06-14"]);
    assert_eq!(days("0 0 0 15W 9 ?", 1), ["2024-09-16"]);
    assert_eq!(days("0 0 0 15W 5 ?", 1), ["2024-05-15"]);
    assert_eq!(days("0 0 0 1W 6 ?", 1), ["2024-06-03"]);
    assert_eq!(days("0 0 0 31W 3 ?", 1), ["2024-03-29"]);
    // April has no 31st: the weekday nearest it is the last, Tuesday 30th;
    // June's 30th is a Sunday: Friday 28th.
    assert_eq!(
        days("0 0 0 31W 3-6 ?", 4),
        ["2024-03-29", "2024-04-30", "2024-05-31", "2024-06-28"]
    );
}

#[test]
fn last_weekday_n_of_the_month() {
    // Last Friday: Quartz 6L, Unix 5L.
    let fridays = ["2024-01-26", "2024-02-23", "2024-03-29"];
    assert_eq!(days("0 0 0 ? * 6L", 3), fridays);
    assert_eq!(days("0 0 * * 5L", 3), fridays);
    assert_eq!(days("0 0 0 ? * FRIL", 3), fridays);
}

#[test]
fn nth_weekday_of_the_month() {
    assert_eq!(
        days("0 0 0 ? * MON#2", 3),
        ["2024-01-08", "2024-02-12", "2024-03-11"]
    );
    // A fifth Friday only in months that have one.
    assert_eq!(
        days("0 0 0 ? * 6#5", 3),
        ["2024-03-29", "2024-05-31", "2024-08-30"]
    );
    assert_eq!(
        days("0 0 * * 1#1,5#3", 3),
        ["2024-01-01", "2024-01-19", "2024-02-05"]
    );
}

#[test]
fn unix_either_day_field_when_both_are_restricted() {
    // Friday the 13th or any Friday or any 13th (Vixie).
    assert_eq!(
        days("0 0 13 * FRI", 4),
        ["2024-01-05", "2024-01-12", "2024-01-13", "2024-01-19"]
    );
    // Vixie cron's `*/2` counts as unrestricted: odd days that are Fridays.
    assert_eq!(
        days("0 0 */2 * FRI", 3),
        ["2024-01-05", "2024-01-19", "2024-02-09"]
    );
    assert_eq!(days("0 0 13 * *", 2), ["2024-01-13", "2024-02-13"]);
    assert_eq!(days("0 0 * * FRI", 2), ["2024-01-05", "2024-01-12"]);
}

#[test]
fn quartz_both_day_fields_when_one_is_a_star() {
    assert_eq!(days("0 0 0 * * FRI", 2), ["2024-01-05", "2024-01-12"]);
    assert_eq!(
        days("0 0 0 */10 * ?", 4),
        ["2024-01-01", "2024-01-11", "2024-01-21", "2024-01-31"]
    );
}

#[test]
fn steps_within_the_day() {
    assert_eq!(
        fires_in("*/20 59 23 31 12 ?", "UTC", "2024-01-01T00:00:00Z", 4),
        [
            "2024-12-31T23:59:00+00:00",
            "2024-12-31T23:59:20+00:00",
            "2024-12-31T23:59:40+00:00",
            "2025-12-31T23:59:00+00:00"
        ]
    );
    assert_eq!(
        fires_in("0 22-2/2 * * *", "UTC", "2024-01-01T21:00:00Z", 4),
        [
            "2024-01-01T22:00:00+00:00",
            "2024-01-02T00:00:00+00:00",
            "2024-01-02T02:00:00+00:00",
            "2024-01-02T22:00:00+00:00"
        ]
    );
}

#[test]
fn leap_days_and_strictly_after() {
    assert_eq!(
        fires_in("0 12 29 2 *", "UTC", "2024-03-01T00:00:00Z", 2),
        ["2028-02-29T12:00:00+00:00", "2032-02-29T12:00:00+00:00"]
    );
    // 2100 is not a leap year.
    assert_eq!(
        fires_in("0 12 29 2 *", "UTC", "2096-03-01T00:00:00Z", 1),
        ["2104-02-29T12:00:00+00:00"]
    );
    // From a fire time, or a nanosecond before it.
    let at = "2024-01-01T12:00:00Z";
    assert_eq!(
        fires_in("0 12 * * *", "UTC", at, 1),
        ["2024-01-02T12:00:00+00:00"]
    );
    assert_eq!(
        fires_in("0 12 * * *", "UTC", "2024-01-01T11:59:59.999999999Z", 1),
        ["2024-01-01T12:00:00+00:00"]
    );
    // Before 1970, and near the end of jiff's range.
    assert_eq!(
        fires_in("0 0 1 1 *", "UTC", "1969-06-01T00:00:00.5Z", 1),
        ["1970-01-01T00:00:00+00:00"]
    );
    // jiff's last instant is 9999-12-30T22:00:00Z (so that every offset
    // of it is a civil time): a fire time past it is none.
    assert_eq!(
        fires_in("59 21 * * *", "UTC", "9999-12-30T21:58:59Z", 2),
        ["9999-12-30T21:59:00+00:00"]
    );
}
