//! A cron expression read in a time zone, and the one DST rule.

use std::fmt;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use super::cron::Cron;
use super::error::CalendarError;

const NANO: SignedDuration = SignedDuration::from_nanos(1);

/// A cron expression read in a time zone: a calendar schedule, whose fire
/// times are instants.
///
/// The zone is UTC unless asked otherwise: an IANA name
/// ([`parse_in`](Calendar::parse_in)), the system's zone
/// ([`parse_local`](Calendar::parse_local)), or any [`TimeZone`]
/// ([`new`](Calendar::new)).
///
/// # The DST rule
///
/// A wall-clock time the zone skips (spring forward) fires once, at the
/// first instant after the gap: however many of the skipped times the
/// expression names, and also when it names the first time after the gap
/// too. A wall-clock time the zone repeats (fall back) fires once, at its
/// first occurrence, unless the hour field names all 24 hours: then it
/// fires at both, as each real hour does. Any change of a zone's offset
/// follows the rule, such as Samoa skipping 30 December 2011.
///
/// # Examples
///
/// ```
/// use schedulers::calendar::{jiff::Timestamp, Calendar};
///
/// // 02:30 every day in Berlin; 2024-03-31 skips 02:00-03:00.
/// let cal = Calendar::parse_in("30 2 * * *", "Europe/Berlin")?;
/// let after: Timestamp = "2024-03-30T12:00:00Z".parse().unwrap();
/// let fires: Vec<String> = cal.fire_times(after).take(3).map(|z| z.to_string()).collect();
/// assert_eq!(fires, [
///     "2024-03-31T03:00:00+02:00[Europe/Berlin]", // the first instant after the gap
///     "2024-04-01T02:30:00+02:00[Europe/Berlin]",
///     "2024-04-02T02:30:00+02:00[Europe/Berlin]",
/// ]);
/// # Ok::<(), schedulers::calendar::CalendarError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Calendar {
    cron: Cron,
    zone: TimeZone,
}

impl Calendar {
    /// A calendar of `cron` in `zone`.
    pub fn new(cron: Cron, zone: TimeZone) -> Calendar {
        Calendar { cron, zone }
    }

    /// Parses `cron` (see [`Cron::parse`]) and reads it in UTC.
    ///
    /// # Errors
    ///
    /// Those of [`Cron::parse`].
    pub fn parse(cron: &str) -> Result<Calendar, CalendarError> {
        Ok(Calendar::new(Cron::parse(cron)?, TimeZone::UTC))
    }

    /// Parses `cron` (see [`Cron::parse`]) and reads it in the IANA time
    /// zone `zone` (`"Europe/Berlin"`, `"America/New_York"`, `"UTC"`).
    ///
    /// # Errors
    ///
    /// Those of [`Cron::parse`], and one that
    /// [`is_unknown_zone`](CalendarError::is_unknown_zone) if the tz
    /// database has no zone of that name.
    pub fn parse_in(cron: &str, zone: &str) -> Result<Calendar, CalendarError> {
        let cron = Cron::parse(cron)?;
        let zone = TimeZone::get(zone).map_err(|e| CalendarError::unknown_zone(zone, &e))?;
        Ok(Calendar::new(cron, zone))
    }

    /// Parses `cron` (see [`Cron::parse`]) and reads it in the system's time
    /// zone (the `TZ` environment variable, else `/etc/localtime`), as it is
    /// now: a later change of the system's zone does not move the calendar.
    ///
    /// # Errors
    ///
    /// Those of [`Cron::parse`], and one that
    /// [`is_local_zone_unavailable`](CalendarError::is_local_zone_unavailable)
    /// if the system's zone cannot be determined.
    pub fn parse_local(cron: &str) -> Result<Calendar, CalendarError> {
        let cron = Cron::parse(cron)?;
        let zone = TimeZone::try_system().map_err(|e| CalendarError::local_zone(&e))?;
        Ok(Calendar::new(cron, zone))
    }

    /// The cron expression.
    pub fn cron(&self) -> &Cron {
        &self.cron
    }

    /// The time zone the expression is read in.
    pub fn zone(&self) -> &TimeZone {
        &self.zone
    }

    /// The first fire time strictly after `after`, or `None` if the
    /// calendar has none left (a year field in the past, or past the year
    /// 9999).
    ///
    /// Cheap: it steps field by field through the wall-clock times the
    /// expression names (a day that cannot match is skipped whole), and
    /// from one offset transition of the zone to the next, never through
    /// seconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedulers::calendar::{jiff::Timestamp, Calendar};
    ///
    /// let cal = Calendar::parse("0 0 9 ? * MON-FRI")?; // 09:00 UTC on weekdays
    /// let friday_noon: Timestamp = "2024-06-07T12:00:00Z".parse().unwrap();
    /// let next = cal.next_after(friday_noon).unwrap();
    /// assert_eq!(next.to_string(), "2024-06-10T09:00:00Z");
    /// // Strictly after: from a fire time, the following one.
    /// assert_eq!(cal.next_after(next).unwrap().to_string(), "2024-06-11T09:00:00Z");
    /// # Ok::<(), schedulers::calendar::CalendarError>(())
    /// ```
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let zone = &self.zone;
        let repeat_folds = self.cron.every_hour();
        // The segment of the zone's timeline holding `after`: one offset,
        // from the transition `start` (if any) to the next one, `end`.
        let mut offset = zone.to_offset(after);
        let mut end = following(zone, after);
        // The transition that began that segment and the offset before it,
        // needed only to skip the second half of a fold.
        let mut before = if repeat_folds {
            None
        } else {
            after
                .checked_add(NANO)
                .ok()
                .and_then(|t| zone.preceding(t).next())
                .and_then(|tr| {
                    let start = tr.timestamp();
                    Some((start, zone.to_offset(start.checked_sub(NANO).ok()?)))
                })
        };
        // Candidates are whole seconds strictly after `after`.
        let floor = after.as_second() - i64::from(after.subsec_nanosecond() < 0);
        let mut from = offset.to_datetime(Timestamp::from_second(floor.checked_add(1)?).ok()?);
        let mut found = None;
        loop {
            let mut lower = from;
            if let Some((start, previous)) = before {
                if previous > offset {
                    // A fold began this segment: its first part repeats
                    // wall-clock times the previous segment already had.
                    lower = lower.max(previous.to_datetime(start));
                }
            }
            let next = self.next_civil(lower, &mut found)?;
            let Some(e) = end else {
                return offset.to_timestamp(next).ok();
            };
            if next < offset.to_datetime(e) {
                return offset.to_timestamp(next).ok();
            }
            let next_offset = zone.to_offset(e);
            if next_offset > offset && next < next_offset.to_datetime(e) {
                // `next` does not exist: it is in the gap the transition
                // skips, so it fires at the first instant after.
                return Some(e);
            }
            before = (!repeat_folds).then_some((e, offset));
            offset = next_offset;
            from = offset.to_datetime(e);
            end = following(zone, e);
        }
    }

    /// The first wall-clock time at or after `lower` that the expression
    /// names, remembering the last search: while the segments of the
    /// timeline move on, the same answer holds until `lower` passes it.
    fn next_civil(
        &self,
        lower: DateTime,
        found: &mut Option<(DateTime, DateTime)>,
    ) -> Option<DateTime> {
        if let Some((from, next)) = *found {
            if from <= lower && lower <= next {
                return Some(next);
            }
        }
        let next = self.cron.next_civil(lower, None)?;
        *found = Some((lower, next));
        Some(next)
    }
}

/// The instant of the zone's first offset transition strictly after `t`.
fn following(zone: &TimeZone, t: Timestamp) -> Option<Timestamp> {
    zone.following(t).next().map(|tr| tr.timestamp())
}

impl fmt::Display for Calendar {
    /// The expression and the zone's IANA name, as in
    /// `0 9 * * MON-FRI in Europe/Berlin`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.zone.iana_name() {
            Some(name) => write!(f, "{} in {name}", self.cron),
            None => write!(f, "{} in {:?}", self.cron, self.zone),
        }
    }
}
