//! The grammar, field by field, and its errors.

use proptest::prelude::*;

use super::super::{Calendar, Cron, Dialect, Field};
use super::ts;

fn bits(values: impl IntoIterator<Item = u32>) -> u64 {
    values.into_iter().fold(0, |m, v| m | 1 << v)
}

fn cron(text: &str) -> Cron {
    Cron::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The field, the offending text and the message of a refused expression.
fn refused(text: &str) -> (Option<Field>, String, String) {
    let err = Cron::parse(text).expect_err(text);
    assert!(err.is_syntax(), "{text}: {err}");
    (
        err.field(),
        err.text().unwrap_or_default().to_owned(),
        err.to_string(),
    )
}

#[test]
fn dialect_follows_the_field_count() {
    assert_eq!(cron("* * * * *").dialect(), Dialect::Unix);
    assert_eq!(cron("* * * * * ?").dialect(), Dialect::Quartz);
    assert_eq!(cron("* * * * * ? 2030").dialect(), Dialect::Quartz);
    assert_eq!(cron("  0\t9 * * 1  ").as_str(), "0\t9 * * 1");
    for text in ["", "   ", "* * * *", "* * * * * * * *"] {
        let err = Cron::parse(text).unwrap_err();
        assert!(err.is_syntax() && err.field().is_none(), "{text}: {err}");
    }
    assert_eq!(
        Cron::parse("* * * *").unwrap_err().to_string(),
        "bad cron expression `* * * *`: 4 fields; expected 5 (Unix: minute hour day-of-month \
         month day-of-week) or 6-7 (Quartz: second minute hour day-of-month month day-of-week \
         [year])"
    );
}

#[test]
fn unix_fires_at_second_zero() {
    let c = cron("*/20 * * * *");
    assert_eq!(c.seconds, 1);
    assert_eq!(c.minutes, bits([0, 20, 40]));
}

#[test]
fn each_field_takes_its_range_and_refuses_beyond() {
    // (expression with X at the field, field, min, max) in both dialects.
    let cases: [(&str, Field, u32, u32); 9] = [
        ("X * * * * ?", Field::Second, 0, 59),
        ("0 X * * * ?", Field::Minute, 0, 59),
        ("0 0 X * * ?", Field::Hour, 0, 23),
        ("0 0 0 X * ?", Field::DayOfMonth, 1, 31),
        ("0 0 0 ? X *", Field::Month, 1, 12),
        ("0 0 0 ? * X", Field::DayOfWeek, 1, 7),
        ("0 0 0 ? * * X", Field::Year, 1970, 2199),
        ("X * * * *", Field::Minute, 0, 59),
        ("0 0 * * X", Field::DayOfWeek, 0, 7),
    ];
    for (template, field, min, max) in cases {
        for ok in [min, max] {
            cron(&template.replace('X', &ok.to_string()));
        }
        for bad in [max + 1].into_iter().chain(min.checked_sub(1)) {
            let text = template.replace('X', &bad.to_string());
            let (f, t, msg) = refused(&text);
            assert_eq!(f, Some(field), "{text}");
            assert_eq!(t, bad.to_string(), "{text}");
            assert_eq!(
                msg,
                format!("bad {field} field `{bad}`: {bad} is out of range {min}-{max}")
            );
        }
    }
}

#[test]
fn lists_ranges_and_steps() {
    assert_eq!(cron("0 1,2,5-7 * * *").hours, bits([1, 2, 5, 6, 7]));
    assert_eq!(cron("*/15 * * * *").minutes, bits([0, 15, 30, 45]));
    assert_eq!(cron("5/15 * * * *").minutes, bits([5, 20, 35, 50]));
    assert_eq!(cron("10-30/10 * * * *").minutes, bits([10, 20, 30]));
    assert_eq!(cron("0 0 1/10 * *").days.dom, bits([1, 11, 21, 31]));
    // Quartz: `7/6` in months is July only.
    assert_eq!(cron("0 0 0 1 7/6 ?").months, bits([7]));
    assert_eq!(cron("0 * * * *").hours, (1 << 24) - 1);
    assert!(cron("0 * * * *").every_hour() && cron("0 0-23 * * *").every_hour());
    assert!(!cron("0 0-22 * * *").every_hour());
    for (text, why) in [
        ("*/0 * * * *", "step 0 is out of range 1-60"),
        ("*/61 * * * *", "step 61 is out of range 1-60"),
        ("*/ * * * *", "`/` is followed by a step, a number"),
        ("1,,2 * * * *", "an empty item"),
        ("1- * * * *", "is not a number"),
        ("-1 * * * *", "is not a number"),
        ("+1 * * * *", "is not a number"),
        ("1.5 * * * *", "is not a number"),
    ] {
        let (field, _, msg) = refused(text);
        assert_eq!(field, Some(Field::Minute), "{text}");
        assert!(msg.contains(why), "{text}: {msg}");
    }
}

#[test]
fn ranges_that_wrap_around_the_field() {
    assert_eq!(cron("0 22-2 * * *").hours, bits([22, 23, 0, 1, 2]));
    assert_eq!(cron("0 22-2/2 * * *").hours, bits([22, 0, 2]));
    assert_eq!(cron("0 0 1 NOV-FEB *").months, bits([11, 12, 1, 2]));
    assert_eq!(cron("0 0 28-2 * *").days.dom, bits([28, 29, 30, 31, 1, 2]));
    // Weekdays are kept Sunday = bit 0 whatever the dialect.
    assert_eq!(cron("0 0 * * FRI-MON").days.dow, bits([5, 6, 0, 1]) as u8);
    assert_eq!(cron("0 0 0 ? * FRI-MON").days.dow, bits([5, 6, 0, 1]) as u8);
    assert_eq!(cron("0 0 0 ? * 6-2").days.dow, bits([5, 6, 0, 1]) as u8);
    let (field, _, msg) = refused("0 0 0 ? * * 2030-2020");
    assert_eq!(field, Some(Field::Year));
    assert!(msg.contains("runs backwards"), "{msg}");
}

#[test]
fn names_are_case_insensitive() {
    let by_name = cron("0 0 * jan-Mar,DEC mon-fri");
    let by_number = cron("0 0 * 1-3,12 1-5");
    assert_eq!(
        (by_name.months, by_name.days),
        (by_number.months, by_number.days)
    );
    assert_eq!(cron("0 0 0 ? * sun").days.dow, 1);
    assert_eq!(
        cron("0 0 0 ? * 1").days.dow,
        1,
        "Quartz counts from Sunday = 1"
    );
    let (field, text, msg) = refused("0 0 * * FUN");
    assert_eq!((field, text.as_str()), (Some(Field::DayOfWeek), "FUN"));
    assert!(msg.ends_with("`FUN` is not a number, or SUN-SAT"), "{msg}");
    let (field, ..) = refused("0 0 * MON *");
    assert_eq!(field, Some(Field::Month));
    let (field, ..) = refused("0 JAN * * *");
    assert_eq!(field, Some(Field::Hour));
}

#[test]
fn sunday_is_0_and_7_in_unix_1_in_quartz() {
    for text in [
        "0 0 * * 0",
        "0 0 * * 7",
        "0 0 * * SUN",
        "0 0 0 ? * 1",
        "0 0 0 ? * SUN",
    ] {
        assert_eq!(cron(text).days.dow, 1, "{text}");
    }
    assert_eq!(cron("0 0 * * 5-7").days.dow, bits([5, 6, 0]) as u8);
    assert_eq!(cron("0 0 * * */2").days.dow, bits([0, 2, 4, 6]) as u8);
    assert_eq!(cron("0 0 0 ? * */2").days.dow, bits([0, 2, 4, 6]) as u8);
    let (field, _, msg) = refused("0 0 0 ? * 0");
    assert_eq!(field, Some(Field::DayOfWeek));
    assert!(msg.ends_with("0 is out of range 1-7"), "{msg}");
}

#[test]
fn day_specials() {
    let c = cron("0 0 0 L,L-3,LW,15W * ?");
    assert_eq!(c.days.dom_last, 1 | 1 << 3);
    assert!(c.days.dom_last_weekday);
    assert_eq!(c.days.dom_nearest, 1 << 15);
    // Quartz 6 = Friday; Unix 5 = Friday: bit 5 either way.
    assert_eq!(cron("0 0 0 ? * 6L").days.dow_last, 1 << 5);
    assert_eq!(cron("0 0 * * 5L").days.dow_last, 1 << 5);
    assert_eq!(cron("0 0 0 ? * FRIL").days.dow_last, 1 << 5);
    assert_eq!(cron("0 0 0 ? * 6#3").days.dow_nth, 1 << (5 * 5 + 2));
    assert_eq!(cron("0 0 * * fri#3").days.dow_nth, 1 << (5 * 5 + 2));
    // `L` alone in day-of-week is Saturday, as in Quartz.
    assert_eq!(cron("0 0 0 ? * L").days.dow, 1 << 6);
    assert_eq!(cron("0 0 * * L").days.dow, 1 << 6);
    assert_eq!(cron("0 0 ? * ?").days.dom, cron("0 0 * * *").days.dom);

    for (text, field, why) in [
        ("0 L * * *", Field::Hour, "only for the day fields"),
        (
            "0 0 0 L-0 * ?",
            Field::DayOfMonth,
            "out of range L-1 to L-30",
        ),
        (
            "0 0 0 L-31 * ?",
            Field::DayOfMonth,
            "out of range L-1 to L-30",
        ),
        (
            "0 0 0 LX * ?",
            Field::DayOfMonth,
            "after `L` comes `W`, `-n` or nothing",
        ),
        (
            "0 0 0 32W * ?",
            Field::DayOfMonth,
            "32 is out of range 1-31",
        ),
        (
            "0 0 0 W * ?",
            Field::DayOfMonth,
            "`W` follows one day of the month",
        ),
        ("0 0 0 1#2 * ?", Field::DayOfMonth, "`#` is for day-of-week"),
        ("0 0 0 ? * 5W", Field::DayOfWeek, "`W` is for day-of-month"),
        ("0 0 0 ? * MON#6", Field::DayOfWeek, "followed by 1-5"),
        ("0 0 0 ? * MON#0", Field::DayOfWeek, "followed by 1-5"),
        ("0 0 0 ? * 8#1", Field::DayOfWeek, "8 is out of range 1-7"),
        ("0 0 0 ? * 8L", Field::DayOfWeek, "8 is out of range 1-7"),
        (
            "0 0 0 ? * #1",
            Field::DayOfWeek,
            "`#` follows one day of the week",
        ),
        (
            "? 0 0 * * ?",
            Field::Second,
            "`?` is only for day-of-month and day-of-week",
        ),
        ("0 0 0 ?,1 * ?", Field::DayOfMonth, "`?` stands alone"),
    ] {
        let (f, _, msg) = refused(text);
        assert_eq!(f, Some(field), "{text}: {msg}");
        assert!(msg.contains(why), "{text}: {msg}");
    }
}

#[test]
fn quartz_wants_one_day_field_unrestricted() {
    let (field, text, msg) = refused("0 0 12 1 * MON");
    assert_eq!((field, text.as_str()), (Some(Field::DayOfWeek), "MON"));
    assert!(
        msg.contains("both day-of-month (`1`) and day-of-week are restricted"),
        "{msg}"
    );
    // `*` in one of them is accepted too (Spring's habit), meaning the other.
    assert_eq!(cron("0 0 12 * * MON").days, cron("0 0 12 ? * MON").days);
    assert!(!cron("0 0 12 * * MON").days.either);
}

#[test]
fn vixie_or_only_when_neither_day_field_starts_with_a_star() {
    assert!(cron("0 0 13 * FRI").days.either);
    assert!(!cron("0 0 * * FRI").days.either);
    assert!(!cron("0 0 13 * *").days.either);
    // Vixie cron tests the first character: `*/2` counts as unrestricted.
    assert!(!cron("0 0 */2 * FRI").days.either);
    assert!(!cron("0 0 13 * ?").days.either);
}

#[test]
fn years() {
    let c = cron("0 0 0 1 1 ? 2030/5");
    let years: Vec<i16> = (1970..=2199)
        .filter(|&y| c.years.unwrap().contains(y))
        .collect();
    assert_eq!(years, (2030..=2199).step_by(5).collect::<Vec<_>>());
    assert!(cron("0 0 0 1 1 ? *").years.is_none());
    let cal = Calendar::new(cron("0 0 0 1 1 ? 2030,2031"), jiff::tz::TimeZone::UTC);
    let all: Vec<String> = cal
        .fire_times(ts("2020-01-01T00:00:00Z"))
        .map(|z| z.timestamp().to_string())
        .collect();
    assert_eq!(all, ["2030-01-01T00:00:00Z", "2031-01-01T00:00:00Z"]);
    assert_eq!(cal.next_after(ts("2031-01-01T00:00:00Z")), None);
}

#[test]
fn macros() {
    for (name, same) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@MIDNIGHT", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ] {
        let (m, s) = (cron(name), cron(same));
        assert_eq!(m.as_str(), name);
        assert_eq!(
            (m.seconds, m.minutes, m.hours, m.days, m.months, m.years),
            (s.seconds, s.minutes, s.hours, s.days, s.months, s.years),
            "{name}"
        );
    }
    for text in ["@reboot", "@every", "@"] {
        let err = Cron::parse(text).unwrap_err();
        assert!(err.is_syntax() && err.field().is_none(), "{text}: {err}");
        assert_eq!(err.text(), Some(text));
    }
}

#[test]
fn an_expression_that_never_fires_is_refused() {
    for text in [
        "0 0 30 2 *",
        "0 0 31 4,6,9,11 *",
        "0 0 0 30 2 ? 2024",
        "0 0 0 ? 2 5#5 2025",
    ] {
        let err = Cron::parse(text).unwrap_err();
        assert!(err.is_never_fires(), "{text}: {err}");
        assert_eq!(err.text(), Some(text));
    }
    // A leap day, a fifth Thursday in February (2024), are rare, not never.
    cron("0 0 29 2 *");
    cron("0 0 0 ? 2 5#5");
    cron("0 0 0 ? 2 5#5 2024");
}

#[test]
fn unknown_and_local_zones() {
    let err = Calendar::parse_in("* * * * *", "Mars/Olympus_Mons").unwrap_err();
    assert!(err.is_unknown_zone(), "{err}");
    assert_eq!(err.text(), Some("Mars/Olympus_Mons"));
    assert!(
        err.to_string()
            .starts_with("unknown time zone `Mars/Olympus_Mons`: "),
        "{err}"
    );
    // A bad expression is reported before the zone.
    assert!(Calendar::parse_in("* * *", "Mars/Olympus_Mons")
        .unwrap_err()
        .is_syntax());
    assert_eq!(
        Calendar::parse("0 0 * * *").unwrap().zone(),
        &jiff::tz::TimeZone::UTC
    );
    let berlin = Calendar::parse_in("0 0 * * *", "Europe/Berlin").unwrap();
    assert_eq!(berlin.zone().iana_name(), Some("Europe/Berlin"));
    assert_eq!(berlin.to_string(), "0 0 * * * in Europe/Berlin");
    // The system's zone: whatever it is here, asking for it works or says
    // why not.
    match Calendar::parse_local("0 0 * * *") {
        Ok(cal) => assert!(cal.next_after(ts("2024-01-01T00:00:00Z")).is_some()),
        Err(err) => assert!(err.is_local_zone_unavailable(), "{err}"),
    }
}

#[test]
fn display_and_from_str_round_trip() {
    let c: Cron = "0 15 10 ? * 6L 2024-2030".parse().unwrap();
    assert_eq!(c.to_string(), "0 15 10 ? * 6L 2024-2030");
    assert_eq!(Cron::parse(&c.to_string()).unwrap(), c);
    assert_eq!(format!("{c:?}"), "Cron(\"0 15 10 ? * 6L 2024-2030\")");
}

/// Text that looks like cron: fields of the characters cron uses.
fn cronish() -> impl Strategy<Value = String> {
    let field = "[0-9*?/,#LW-]{1,6}|[A-Za-z]{3}(-[A-Za-z]{3})?|[0-9]{1,3}([-/][0-9]{1,3})?";
    prop::collection::vec(prop::string::string_regex(field).unwrap(), 0..9)
        .prop_map(|fields| fields.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Arbitrary text never panics: an error or a cron whose next fire time
    /// is after the instant asked.
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>(), secs in 0i64..4_000_000_000) {
        check_never_panics(&text, secs);
    }

    #[test]
    fn cron_like_text_never_panics(text in cronish(), secs in 0i64..4_000_000_000) {
        check_never_panics(&text, secs);
    }
}

fn check_never_panics(text: &str, secs: i64) {
    if let Ok(cron) = Cron::parse(text) {
        let after = jiff::Timestamp::from_second(secs).unwrap();
        for zone in ["UTC", "Australia/Lord_Howe"] {
            let cal = Calendar::new(cron.clone(), jiff::tz::TimeZone::get(zone).unwrap());
            if let Some(next) = cal.next_after(after) {
                assert!(next > after, "{text} in {zone} after {after}: {next}");
            }
        }
    }
}
