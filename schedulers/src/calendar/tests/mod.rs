//! Tests of calendar schedules.

use jiff::Timestamp;

use super::Calendar;


/// An instant from RFC 3339 text.
pub(super) fn ts(text: &str) -> Timestamp {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The first `n` fire times after `after`, as RFC 3339 with the zone's offset.
pub(super) fn fires(cal: &Calendar, after: &str, n: usize) -> Vec<String> {
    cal.fire_times(ts(after))
        .take(n)
        .map(|z| z.strftime("%FT%T%:z").to_string())
        .collect()
}
