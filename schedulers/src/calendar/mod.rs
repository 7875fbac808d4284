//! Calendar schedules: cron expressions read in a time zone, their next fire
//! times, and the rules for missed runs and panics.
//!
//! This module is pure: it owns no thread and reads no clock. The
//! schedulers ask it when a calendar task fires next and what to do after
//! an outage; a user asks it for a preview of the next runs. The
//! [guide] has the syntax table, the DST rule with examples, and the
//! missed-run policies beside Quartz's and tokio's.
//!
//! # Overview
//!
//! - [`Cron`]: a parsed expression, five fields (Unix, Vixie semantics) or
//!   six or seven (Quartz: seconds, `?`, `L`, `W`, `#`, an optional year).
//!   Each field is a bit set.
//! - [`Calendar`]: a `Cron` read in a time zone (UTC unless asked otherwise:
//!   an IANA name, or the system's zone). [`Calendar::next_after`] is the
//!   first fire time strictly after an instant; [`Calendar::fire_times`]
//!   iterates the following ones.
//! - [`MissedRuns`] and [`OnPanic`]: what a periodic or calendar task does
//!   about missed runs and panics; [`MissedRuns::plan_fixed_rate`] and
//!   [`MissedRuns::plan_calendar`] are the one rule, as a pure function of
//!   the grid, the deadline that came due and now.
//! - [`CalendarError`]: a bad expression (naming the field, its text and
//!   why), an unknown zone, an expression that never fires.
//!
//! Instants are [`jiff::Timestamp`]s, and fire times in the calendar's zone
//! [`jiff::ZonedDateTime`]s; `jiff` is re-exported here so that callers get
//! the version this crate uses. `std::time::SystemTime` converts both ways
//! with `Timestamp::try_from(system_time)` and
//! `SystemTime::try_from(timestamp)`.
//!
//! # Examples
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use schedulers::calendar::{jiff::Timestamp, Calendar};
//!
//! let cal = Calendar::parse_in("0 9 * * MON-FRI", "Europe/Berlin")?;
//! let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_717_754_400); // Fri 2024-06-07 10:00 UTC
//! let now = Timestamp::try_from(now).unwrap();
//! let next = cal.next_after(now).unwrap();
//! assert_eq!(next.to_zoned_datetime(cal.zone().clone()).to_string(),
//!            "2024-06-10T09:00:00+02:00[Europe/Berlin]");
//! # Ok::<(), schedulers::calendar::CalendarError>(())
//! ```
//!
//! # Choices
//!
//! **Time zones: jiff.** It names the two cases that matter here, a gap and
//! a fold (`AmbiguousOffset`), lists a zone's transitions
//! (`TimeZone::following`), and reads the system's tz database. The crate
//! turns on jiff's `tzdb-bundle-always`: jiff still reads
//! `/usr/share/zoneinfo` first (the system's copy, updated with the OS), and
//! falls back on the bundled copy only where the system has none, as in a
//! minimal container without `tzdata`, so `Europe/Berlin` resolves on every
//! machine. Measured on a small release binary (stripped): jiff adds about
//! 340 KB once a calendar is used, the bundled database another 250 KB;
//! a binary that uses no calendar grows by about 10 KB.
//!
//! **The cron parser: our own.** Of the maintained crates, `cron` and
//! `croner` are built on chrono, `saffron` is chrono-based and unmaintained
//! since 2021; `jiff-cron` (a port of `cron` to jiff) has no `L`, `W` or
//! `#`, always wants seconds, and leaves DST to jiff's default
//! disambiguation, which fires a skipped 02:30 at 03:30 and never fires the
//! second half of a fold; none offers the DST rule above, or field sets as
//! bit masks. Parsing and the search are a few hundred lines, tested
//! against a brute-force reference and against Quartz itself.

mod cron;
mod error;
mod parse;
mod policy;
mod preview;
mod zone;

#[cfg(test)]
mod tests;

/// Calendar schedules: the syntax table, the DST rule, missed runs beside
/// Quartz's misfire instructions and tokio's `MissedTickBehavior`.
pub mod guide {
    #![doc = include_str!("../../docs/calendar.md")]
}

pub use self::cron::{Cron, Dialect};
pub use self::error::{CalendarError, Field};
pub use self::policy::{MissedRuns, OnPanic, Plan};
pub use self::preview::FireTimes;
pub use self::zone::Calendar;
pub use jiff;
