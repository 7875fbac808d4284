//! The one error type of calendar schedules.

use std::fmt;

/// A field of a cron expression, as named in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// Seconds, 0-59 (Quartz syntax only; the Unix syntax fires at second 0).
    Second,
    /// Minutes, 0-59.
    Minute,
    /// Hours, 0-23.
    Hour,
    /// Day of the month, 1-31.
    DayOfMonth,
    /// Month, 1-12 or `JAN`-`DEC`.
    Month,
    /// Day of the week: 0-7 (0 and 7 Sunday) in the Unix syntax, 1-7 (1
    /// Sunday) in Quartz's, or `SUN`-`SAT`.
    DayOfWeek,
    /// Year, 1970-2199 (Quartz syntax only, optional).
    Year,
}

impl Field {
    /// The field's name as errors show it.
    pub fn name(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
            Field::Year => "year",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a cron expression, a time zone or a missed-run policy was refused.
///
/// Opaque on purpose, as the crate's [`Error`](crate::Error) is: ask it what
/// happened with the `is_*` predicates, and which part of the expression
/// with [`field`](CalendarError::field) and [`text`](CalendarError::text).
/// `Display` says all of it in one line.
///
/// # Examples
///
/// ```
/// use schedulers::calendar::{Cron, Field};
///
/// let err = Cron::parse("0 25 * * *").unwrap_err();
/// assert!(err.is_syntax());
/// assert_eq!(err.field(), Some(Field::Hour));
/// assert_eq!(err.text(), Some("25"));
/// assert_eq!(err.to_string(), "bad hour field `25`: 25 is out of range 0-23");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CalendarError {
    kind: Kind,
}

#[derive(Clone, PartialEq, Eq)]
enum Kind {
    /// The expression has the wrong number of fields (or is an unknown macro).
    Shape {
        text: Box<str>,
        why: Box<str>,
    },
    /// One field is malformed: which, its text, why.
    Syntax {
        field: Field,
        text: Box<str>,
        why: Box<str>,
    },
    /// The expression is well formed but matches no date at all.
    NeverFires {
        text: Box<str>,
    },
    /// The expression has no fire time after a given instant (its years
    /// are over).
    NoneAfter {
        text: Box<str>,
        after: jiff::Timestamp,
    },
    UnknownZone {
        name: Box<str>,
        why: Box<str>,
    },
    LocalZone {
        why: Box<str>,
    },
    DelayOnCalendar,
}

impl CalendarError {
    pub(crate) fn shape(text: &str, why: impl Into<Box<str>>) -> CalendarError {
        CalendarError {
            kind: Kind::Shape {
                text: text.into(),
                why: why.into(),
            },
        }
    }

    pub(crate) fn syntax(field: Field, text: &str, why: impl Into<Box<str>>) -> CalendarError {
        CalendarError {
            kind: Kind::Syntax {
                field,
                text: text.into(),
                why: why.into(),
            },
        }
    }

    pub(crate) fn never_fires(text: &str) -> CalendarError {
        CalendarError {
            kind: Kind::NeverFires { text: text.into() },
        }
    }

    pub(crate) fn none_after(text: &str, after: jiff::Timestamp) -> CalendarError {
        CalendarError {
            kind: Kind::NoneAfter {
                text: text.into(),
                after,
            },
        }
    }

    pub(crate) fn unknown_zone(name: &str, cause: &jiff::Error) -> CalendarError {
        CalendarError {
            kind: Kind::UnknownZone {
                name: name.into(),
                why: cause.to_string().into(),
            },
        }
    }

    pub(crate) fn local_zone(cause: &jiff::Error) -> CalendarError {
        CalendarError {
            kind: Kind::LocalZone {
                why: cause.to_string().into(),
            },
        }
    }

    pub(crate) fn delay_on_calendar() -> CalendarError {
        CalendarError {
            kind: Kind::DelayOnCalendar,
        }
    }

    /// The expression is malformed: a field is (the field count, an unknown
    /// `@` macro, or one field's text; [`field`](Self::field) says which
    /// field when it is one).
    pub fn is_syntax(&self) -> bool {
        matches!(self.kind, Kind::Shape { .. } | Kind::Syntax { .. })
    }

    /// The expression is well formed but matches no date at all, such as
    /// the 30th of February (`0 0 30 2 *`).
    pub fn is_never_fires(&self) -> bool {
        matches!(self.kind, Kind::NeverFires { .. })
    }

    /// The expression has no fire time left after the instant a task was
    /// submitted for (its years are over, such as `0 0 1 1 * 2020` today).
    pub fn is_no_fire_left(&self) -> bool {
        matches!(self.kind, Kind::NoneAfter { .. })
    }

    /// The time zone name is not in the tz database.
    pub fn is_unknown_zone(&self) -> bool {
        matches!(self.kind, Kind::UnknownZone { .. })
    }

    /// The system's time zone was asked for and could not be determined.
    pub fn is_local_zone_unavailable(&self) -> bool {
        matches!(self.kind, Kind::LocalZone { .. })
    }

    /// [`MissedRuns::Delay`](super::MissedRuns::Delay) was asked of a
    /// calendar, whose grid is fixed to the wall clock and cannot move.
    pub fn is_delay_on_calendar(&self) -> bool {
        matches!(self.kind, Kind::DelayOnCalendar)
    }

    /// The field that is malformed, for a syntax error in one field.
    pub fn field(&self) -> Option<Field> {
        match self.kind {
            Kind::Syntax { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The offending text: a field's text, the whole expression, or the
    /// unknown zone's name.
    pub fn text(&self) -> Option<&str> {
        match &self.kind {
            Kind::Shape { text, .. }
            | Kind::Syntax { text, .. }
            | Kind::NeverFires { text }
            | Kind::NoneAfter { text, .. } => Some(text),
            Kind::UnknownZone { name, .. } => Some(name),
            Kind::LocalZone { .. } | Kind::DelayOnCalendar => None,
        }
    }
}

impl fmt::Display for CalendarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Shape { text, why } => write!(f, "bad cron expression `{text}`: {why}"),
            Kind::Syntax { field, text, why } => write!(f, "bad {field} field `{text}`: {why}"),
            Kind::NeverFires { text } => write!(
                f,
                "cron expression `{text}` matches no date (such as the 30th of February)"
            ),
            Kind::NoneAfter { text, after } => {
                write!(f, "cron expression `{text}` has no fire time after {after}")
            }
            Kind::UnknownZone { name, why } => write!(f, "unknown time zone `{name}`: {why}"),
            Kind::LocalZone { why } => write!(f, "the system's time zone is unavailable: {why}"),
            Kind::DelayOnCalendar => f.write_str(
                "MissedRuns::Delay moves a fixed-rate grid to now; a calendar's grid is fixed \
                 to the wall clock (use Skip or OnceNow)",
            ),
        }
    }
}

impl fmt::Debug for CalendarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CalendarError({self})")
    }
}

impl std::error::Error for CalendarError {}
