//! Tests of calendar schedules: the parser field by field, the day rules,
//! the DST rule on real transitions, a brute-force reference, Quartz itself,
//! and the missed-run rule.

use jiff::Timestamp;

use super::Calendar;

mod days;
mod dst;
mod parse;
mod policy;
mod quartz;
mod reference;

/// An instant from RFC 3339 text.
fn ts(text: &str) -> Timestamp {
    text.parse()
        .unwrap_or_else(|e| panic!("{text} is not an instant: {e}"))
}

/// The first `n` fire times after `after`, as RFC 3339 with the zone's
/// offset (`2024-03-31T03:00:00+02:00`).
fn fires(cal: &Calendar, after: &str, n: usize) -> Vec<String> {
    cal.fire_times(ts(after))
        .take(n)
        .map(|z| z.strftime("%FT%T%:z").to_string())
        .collect()
}

/// `fires` of an expression in a zone.
fn fires_in(expr: &str, zone: &str, after: &str, n: usize) -> Vec<String> {
    let cal = Calendar::parse_in(expr, zone).unwrap_or_else(|e| panic!("{e}"));
    fires(&cal, after, n)
}
