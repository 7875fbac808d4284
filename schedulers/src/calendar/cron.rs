//! The expression's field sets as bit masks, and the zone-free search for
//! the next civil (wall-clock) time they match.

use std::fmt;
use std::str::FromStr;

use jiff::civil::{Date, DateTime};

use super::error::CalendarError;
use super::parse;

/// Which syntax an expression was written in, told apart by its number of
/// fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Five fields, `minute hour day-of-month month day-of-week`, firing at
    /// second 0; day of week 0-7 (0 and 7 Sunday); a day matches if either
    /// day field does when both are restricted (Vixie cron).
    Unix,
    /// Six or seven fields, `second minute hour day-of-month month
    /// day-of-week [year]`; day of week 1-7 (1 Sunday); a day matches if
    /// both day fields do (Quartz, which wants `?` in one of them).
    Quartz,
}

/// A parsed cron expression: which seconds, minutes, hours, days, months and
/// years of the wall clock it names. It knows no time zone: a
/// [`Calendar`](super::Calendar) reads it in one.
///
/// Every field is a bit set, so matching a time is a few ANDs and finding
/// the next match skips whole fields (the next set bit) instead of stepping
/// through seconds.
///
/// # Examples
///
/// ```
/// use schedulers::calendar::{Cron, Dialect};
///
/// let weekdays = Cron::parse("30 9 * * MON-FRI")?;
/// assert_eq!(weekdays.dialect(), Dialect::Unix);
/// let quartz: Cron = "0 15 10 L * ?".parse()?; // 10:15:00 on the last day of every month
/// assert_eq!(quartz.dialect(), Dialect::Quartz);
/// assert_eq!(quartz.to_string(), "0 15 10 L * ?");
/// # Ok::<(), schedulers::calendar::CalendarError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Cron {
    pub(super) text: Box<str>,
    pub(super) dialect: Dialect,
    /// Bits 0-59.
    pub(super) seconds: u64,
    /// Bits 0-59.
    pub(super) minutes: u64,
    /// Bits 0-23.
    pub(super) hours: u64,
    pub(super) days: Days,
    /// Bits 1-12.
    pub(super) months: u64,
    /// `None`: every year.
    pub(super) years: Option<Years>,
}

/// Every hour of the day: the hour field that makes a fold fire twice.
pub(super) const ALL_HOURS: u64 = (1 << 24) - 1;

/// The two day fields and how they combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub(super) struct Days {
    /// Plain days of the month, bits 1-31 (`*` and `?` set them all).
    pub(super) dom: u64,
    /// `L` (bit 0) and `L-n` (bit n): the last day, n days before it.
    pub(super) dom_last: u32,
    /// `LW`: the last weekday (Monday to Friday) of the month.
    pub(super) dom_last_weekday: bool,
    /// `nW` (bit n): the weekday nearest day n, within its month.
    pub(super) dom_nearest: u64,
    /// Plain days of the week, bit 0 Sunday to bit 6 Saturday.
    pub(super) dow: u8,
    /// `nL` (bit n): the last such weekday of the month.
    pub(super) dow_last: u8,
    /// `n#k` (bit 5n + k - 1): the k-th such weekday of the month.
    pub(super) dow_nth: u64,
    /// A day matches if either field does (Vixie, both restricted);
    /// otherwise if both do.
    pub(super) either: bool,
}

/// Years 1970-2199 (Quartz's range), bit `year - 1970`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Years(pub(super) [u64; 4]);

impl Years {
    pub(super) const FIRST: i16 = 1970;
    pub(super) const LAST: i16 = 2199;

    pub(super) fn contains(&self, year: i16) -> bool {
        if !(Self::FIRST..=Self::LAST).contains(&year) {
            return false;
        }
        let i = (year - Self::FIRST) as usize;
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    /// The first year of the set at or after `year`.
    fn next(&self, year: i16) -> Option<i16> {
        let from = (year.max(Self::FIRST) - Self::FIRST) as usize;
        (from..=(Self::LAST - Self::FIRST) as usize)
            .find(|&i| self.0[i / 64] & (1 << (i % 64)) != 0)
            .map(|i| Self::FIRST + i as i16)
    }

    fn last(&self) -> Option<i16> {
        (0..=(Self::LAST - Self::FIRST) as usize)
            .rev()
            .find(|&i| self.0[i / 64] & (1 << (i % 64)) != 0)
            .map(|i| Self::FIRST + i as i16)
    }
}

/// The lowest set bit of `mask` at or above `from`.
fn next_bit(mask: u64, from: i8) -> Option<i8> {
    if !(0..64).contains(&from) {
        return None;
    }
    let m = mask & (u64::MAX << from);
    (m != 0).then(|| m.trailing_zeros() as i8)
}

/// Bits 0, 7, 14, 21, 28: one weekday's days, shifted to its first day.
const WEEKLY: u64 = 1 | 1 << 7 | 1 << 14 | 1 << 21 | 1 << 28;

impl Days {
    /// The days of one month the expression matches, bits 1-31. `first` is
    /// the weekday of the 1st (0 Sunday), `len` the month's length.
    pub(super) fn in_month(&self, first: u8, len: u8) -> u64 {
        let month = (u64::MAX >> (63 - len)) & !1;
        let weekday = |day: u8| (first + day - 1) % 7;
        // The first day of the month falling on weekday `wd`.
        let first_of = |wd: u8| (wd + 7 - first) % 7 + 1;
        let nearest_weekday = |day: u8| match weekday(day) {
            6 if day == 1 => 3,
            6 => day - 1,
            0 if day == len => day - 2,
            0 => day + 1,
            _ => day,
        };

        let mut dom = self.dom;
        for n in bits(u64::from(self.dom_last)) {
            if n < len {
                dom |= 1 << (len - n);
            }
        }
        if self.dom_last_weekday {
            dom |= 1 << nearest_weekday(len);
        }
        // The weekday nearest a day the month does not have (31W in
        // April) is its last weekday.
        for n in bits(self.dom_nearest) {
            dom |= 1 << nearest_weekday(n.min(len));
        }

        let mut dow = 0;
        for wd in bits(u64::from(self.dow)) {
            dow |= WEEKLY << first_of(wd);
        }
        for wd in bits(u64::from(self.dow_last)) {
            dow |= 1 << (len - (weekday(len) + 7 - wd) % 7);
        }
        for bit in bits(self.dow_nth) {
            let day = first_of(bit / 5) + 7 * (bit % 5);
            if day <= len {
                dow |= 1 << day;
            }
        }

        month & if self.either { dom | dow } else { dom & dow }
    }
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = u8> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let bit = mask.trailing_zeros() as u8;
            mask &= mask - 1;
            bit
        })
    })
}

/// A civil time at second resolution, fields in the order they compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Civil {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
}

impl Civil {
    fn of(dt: DateTime) -> Civil {
        Civil {
            year: dt.year(),
            month: dt.month(),
            day: dt.day(),
            hour: dt.hour(),
            minute: dt.minute(),
            second: dt.second(),
        }
    }

    /// Midnight of the 1st of `month` in `year`.
    fn month_start(year: i16, month: i8) -> Civil {
        Civil {
            year,
            month,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
        }
    }
}

impl Cron {
    /// Parses a cron expression: five fields (Unix), six or seven (Quartz),
    /// or a macro (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
    /// `@midnight`, `@hourly`). The [`calendar`](super) module docs have the
    /// syntax table.
    ///
    /// # Errors
    ///
    /// A [`CalendarError`] that [`is_syntax`](CalendarError::is_syntax) for
    /// a malformed expression, naming the field, its text and why; one that
    /// [`is_never_fires`](CalendarError::is_never_fires) for a well-formed
    /// expression that matches no date (`0 0 30 2 *`).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedulers::calendar::{Cron, Field};
    ///
    /// assert!(Cron::parse("0 0 12 ? * MON#2").is_ok()); // noon, the second Monday
    /// let err = Cron::parse("0 0 12 ? * MON#6").unwrap_err();
    /// assert_eq!(err.field(), Some(Field::DayOfWeek));
    /// ```
    pub fn parse(text: &str) -> Result<Cron, CalendarError> {
        let cron = parse::parse(text)?;
        if cron.first_ever().is_none() {
            return Err(CalendarError::never_fires(&cron.text));
        }
        Ok(cron)
    }

    /// The syntax the expression was written in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The expression as given (surrounding whitespace trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the hour field names all 24 hours, which makes a repeated
    /// (fall-back) wall-clock time fire at both of its instants.
    pub fn every_hour(&self) -> bool {
        self.hours == ALL_HOURS
    }

    /// Whether the expression names the civil (wall-clock) time `dt`, to
    /// the second (a fraction of a second is ignored).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedulers::calendar::{jiff::civil::date, Cron};
    ///
    /// let cron = Cron::parse("0 0 12 LW * ?")?; // noon, the last weekday of the month
    /// assert!(cron.matches(date(2024, 8, 30).at(12, 0, 0, 0))); // a Friday
    /// assert!(!cron.matches(date(2024, 8, 31).at(12, 0, 0, 0)));
    /// # Ok::<(), schedulers::calendar::CalendarError>(())
    /// ```
    pub fn matches(&self, dt: DateTime) -> bool {
        let c = Civil::of(dt);
        let has = |mask: u64, v: i8| mask & (1 << v) != 0;
        self.years.is_none_or(|y| y.contains(c.year))
            && has(self.months, c.month)
            && has(self.day_mask(c.year, c.month), c.day)
            && has(self.hours, c.hour)
            && has(self.minutes, c.minute)
            && has(self.seconds, c.second)
    }

    fn day_mask(&self, year: i16, month: i8) -> u64 {
        match Date::new(year, month, 1) {
            Ok(first) => self.days.in_month(
                first.weekday().to_sunday_zero_offset() as u8,
                first.days_in_month() as u8,
            ),
            Err(_) => 0,
        }
    }

    /// The first civil time at or after `from` (whole seconds: anything
    /// below is ignored) that the expression names, and before `until` if
    /// given. Skips whole fields: a year, a month, a day, an hour or a
    /// minute that cannot match is passed in one step.
    pub(super) fn next_civil(&self, from: DateTime, until: Option<DateTime>) -> Option<DateTime> {
        let until = until.map(Civil::of);
        let mut c = Civil::of(from);
        let mut month_days: Option<(i16, i8, u64)> = None;
        loop {
            if until.is_some_and(|u| c >= u) {
                return None;
            }
            if let Some(years) = &self.years {
                let year = years.next(c.year)?;
                if year != c.year {
                    c = Civil::month_start(year, 1);
                    continue;
                }
            }
            if c.year > 9999 {
                return None;
            }
            match next_bit(self.months, c.month) {
                Some(m) if m == c.month => {}
                Some(m) => {
                    c = Civil::month_start(c.year, m);
                    continue;
                }
                None => {
                    c = Civil::month_start(c.year + 1, 1);
                    continue;
                }
            }
            let days = match month_days {
                Some((y, m, days)) if (y, m) == (c.year, c.month) => days,
                _ => {
                    let days = self.day_mask(c.year, c.month);
                    month_days = Some((c.year, c.month, days));
                    days
                }
            };
            match next_bit(days, c.day) {
                Some(d) if d == c.day => {}
                Some(d) => {
                    c = Civil {
                        day: d,
                        ..Civil::month_start(c.year, c.month)
                    };
                    continue;
                }
                None => {
                    c = if c.month == 12 {
                        Civil::month_start(c.year + 1, 1)
                    } else {
                        Civil::month_start(c.year, c.month + 1)
                    };
                    continue;
                }
            }
            match next_bit(self.hours, c.hour) {
                Some(h) if h == c.hour => {}
                Some(h) => {
                    (c.hour, c.minute, c.second) = (h, 0, 0);
                    continue;
                }
                None => {
                    (c.day, c.hour, c.minute, c.second) = (c.day + 1, 0, 0, 0);
                    continue;
                }
            }
            match next_bit(self.minutes, c.minute) {
                Some(m) if m == c.minute => {}
                Some(m) => {
                    (c.minute, c.second) = (m, 0);
                    continue;
                }
                None => {
                    (c.hour, c.minute, c.second) = (c.hour + 1, 0, 0);
                    continue;
                }
            }
            match next_bit(self.seconds, c.second) {
                Some(s) if s == c.second => {}
                Some(s) => {
                    c.second = s;
                    continue;
                }
                None => {
                    (c.minute, c.second) = (c.minute + 1, 0);
                    continue;
                }
            }
            return DateTime::new(c.year, c.month, c.day, c.hour, c.minute, c.second, 0).ok();
        }
    }

    /// Some civil time the expression names, if there is any: the Gregorian
    /// calendar repeats its weekdays and leap years every 400 years, so
    /// without a year field one cycle decides.
    fn first_ever(&self) -> Option<DateTime> {
        let (from, until) = match &self.years {
            Some(years) => (years.next(Years::FIRST)?, years.last()? + 1),
            None => (2000, 2400),
        };
        let at = |year| DateTime::new(year, 1, 1, 0, 0, 0, 0).ok();
        self.next_civil(at(from)?, Some(at(until)?))
    }
}

impl FromStr for Cron {
    type Err = CalendarError;

    fn from_str(text: &str) -> Result<Cron, CalendarError> {
        Cron::parse(text)
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cron({:?})", self.text)
    }
}
