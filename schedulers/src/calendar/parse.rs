//! From text to field sets: the Unix and Quartz grammars, and the errors
//! that name the field.

use super::cron::{Cron, Days, Dialect, Years};
use super::error::{CalendarError, Field};

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// The values a field takes, as written in the dialect.
#[derive(Clone, Copy)]
struct Range {
    min: u32,
    max: u32,
}

fn range(field: Field, dialect: Dialect) -> Range {
    let (min, max) = match field {
        Field::Second | Field::Minute => (0, 59),
        Field::Hour => (0, 23),
        Field::DayOfMonth => (1, 31),
        Field::Month => (1, 12),
        Field::DayOfWeek => match dialect {
            Dialect::Unix => (0, 7),
            Dialect::Quartz => (1, 7),
        },
        Field::Year => (Years::FIRST as u32, Years::LAST as u32),
    };
    Range { min, max }
}

/// One field as parsed: a plain set of values as written (bit = value) and,
/// for the day fields, the special items.
#[derive(Default)]
struct Parsed {
    /// Plain values as written (bit = value), but for years.
    values: u64,
    /// Years, bit `year - 1970`.
    years: [u64; 4],
    /// Starts with `*` or `?` (Vixie's "unrestricted" day field).
    star: bool,
    dom_last: u32,
    dom_last_weekday: bool,
    dom_nearest: u64,
    dow_last: u8,
    dow_nth: u64,
}

impl Parsed {
    fn add(&mut self, field: Field, value: u32) {
        if field == Field::Year {
            let i = (value - Years::FIRST as u32) as usize;
            self.years[i / 64] |= 1 << (i % 64);
        } else {
            self.values |= 1 << value;
        }
    }
}

/// Parses an expression (see [`Cron::parse`]); does not check that it ever
/// fires.
pub(super) fn parse(text: &str) -> Result<Cron, CalendarError> {
    let text = text.trim();
    let expanded = match text.strip_prefix('@') {
        Some(name) => Some(macro_fields(text, name)?),
        None => None,
    };
    let fields: Vec<&str> = expanded.unwrap_or(text).split_ascii_whitespace().collect();
    let dialect = match fields.len() {
        5 => Dialect::Unix,
        6 | 7 => Dialect::Quartz,
        0 => return Err(CalendarError::shape(text, "it is empty")),
        n => {
            return Err(CalendarError::shape(
                text,
                format!(
                    "{n} fields; expected 5 (Unix: minute hour day-of-month month day-of-week) \
                     or 6-7 (Quartz: second minute hour day-of-month month day-of-week [year])"
                ),
            ))
        }
    };
    let names: &[Field] = match dialect {
        Dialect::Unix => &[
            Field::Minute,
            Field::Hour,
            Field::DayOfMonth,
            Field::Month,
            Field::DayOfWeek,
        ],
        Dialect::Quartz => &[
            Field::Second,
            Field::Minute,
            Field::Hour,
            Field::DayOfMonth,
            Field::Month,
            Field::DayOfWeek,
            Field::Year,
        ],
    };
    let mut parsed: [Option<Parsed>; 7] = Default::default();
    for (&field, text) in names.iter().zip(&fields) {
        parsed[field as usize] = Some(parse_field(field, text, dialect)?);
    }
    let mut take = |field: Field| parsed[field as usize].take();
    let second = take(Field::Second).map_or(1, |p| p.values);
    let minute = take(Field::Minute).unwrap_or_default().values;
    let hour = take(Field::Hour).unwrap_or_default().values;
    let dom = take(Field::DayOfMonth).unwrap_or_default();
    let month = take(Field::Month).unwrap_or_default().values;
    let dow = take(Field::DayOfWeek).unwrap_or_default();
    // No year field, or `*`: every year, past Quartz's 2199 too.
    let years = take(Field::Year)
        .filter(|_| fields[6] != "*")
        .map(|y| Years(y.years));

    let either = match dialect {
        Dialect::Unix => !dom.star && !dow.star,
        Dialect::Quartz if !dom.star && !dow.star => {
            return Err(CalendarError::syntax(
                Field::DayOfWeek,
                fields[5],
                format!(
                    "both day-of-month (`{}`) and day-of-week are restricted; Quartz syntax \
                     needs `?` or `*` in one of them",
                    fields[3]
                ),
            ))
        }
        Dialect::Quartz => false,
    };
    // Weekdays as written -> bit 0 Sunday .. bit 6 Saturday.
    let sunday = match dialect {
        Dialect::Unix => 0,
        Dialect::Quartz => 1,
    };
    let to_weekday = |v: u32| ((v + 7 - sunday) % 7) as u8;
    let mut dow_bits = 0u8;
    for v in 0..=7 {
        if dow.values & (1 << v) != 0 {
            dow_bits |= 1 << to_weekday(v);
        }
    }
    let mut dow_last = 0u8;
    for v in 0..=7 {
        if dow.dow_last & (1 << v) != 0 {
            dow_last |= 1 << to_weekday(v);
        }
    }
    let mut dow_nth = 0u64;
    for v in 0..=7u32 {
        for k in 0..5 {
            if dow.dow_nth & (1 << (v * 5 + k)) != 0 {
                dow_nth |= 1 << (u32::from(to_weekday(v)) * 5 + k);
            }
        }
    }
    Ok(Cron {
        text: text.into(),
        dialect,
        seconds: second,
        minutes: minute,
        hours: hour,
        days: Days {
            dom: dom.values,
            dom_last: dom.dom_last,
            dom_last_weekday: dom.dom_last_weekday,
            dom_nearest: dom.dom_nearest,
            dow: dow_bits,
            dow_last,
            dow_nth,
            either,
        },
        months: month,
        years,
    })
}

fn macro_fields(text: &str, name: &str) -> Result<&'static str, CalendarError> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "yearly" | "annually" => "0 0 1 1 *",
        "monthly" => "0 0 1 * *",
        "weekly" => "0 0 * * 0",
        "daily" | "midnight" => "0 0 * * *",
        "hourly" => "0 * * * *",
        "reboot" => {
            return Err(CalendarError::shape(
                text,
                "@reboot names no time of the calendar",
            ))
        }
        _ => {
            return Err(CalendarError::shape(
                text,
                "unknown macro; expected @yearly, @annually, @monthly, @weekly, @daily, \
                 @midnight or @hourly",
            ))
        }
    })
}

fn parse_field(field: Field, text: &str, dialect: Dialect) -> Result<Parsed, CalendarError> {
    let upper = text.to_ascii_uppercase();
    let mut parsed = Parsed {
        star: upper.starts_with('*') || upper.starts_with('?'),
        ..Parsed::default()
    };
    for item in upper.split(',') {
        parse_item(field, &upper, item, dialect, &mut parsed)
            .map_err(|why| CalendarError::syntax(field, text, why))?;
    }
    Ok(parsed)
}

/// One comma-separated item into `parsed`, or why not.
fn parse_item(
    field: Field,
    whole: &str,
    item: &str,
    dialect: Dialect,
    parsed: &mut Parsed,
) -> Result<(), String> {
    let r = range(field, dialect);
    let is_dom = field == Field::DayOfMonth;
    let is_dow = field == Field::DayOfWeek;
    if item.is_empty() {
        return Err("an empty item (two commas, or a comma at an end)".into());
    }
    if item == "?" {
        if !(is_dom || is_dow) {
            return Err("`?` is only for day-of-month and day-of-week".into());
        }
        if whole != "?" {
            return Err("`?` stands alone".into());
        }
        return add_range(field, r, r.min, r.max, 1, parsed);
    }
    if is_dom {
        if let Some(rest) = item.strip_prefix('L') {
            return match rest {
                "" => {
                    parsed.dom_last |= 1;
                    Ok(())
                }
                "W" => {
                    parsed.dom_last_weekday = true;
                    Ok(())
                }
                _ => {
                    let n = rest
                        .strip_prefix('-')
                        .ok_or_else(|| format!("`{item}`: after `L` comes `W`, `-n` or nothing"))?;
                    let n = number(n).ok_or_else(|| {
                        format!("`{item}`: `L-n` wants a number of days before the last, 1-30")
                    })?;
                    if !(1..=30).contains(&n) {
                        return Err(format!("`{item}`: `L-{n}` is out of range L-1 to L-30"));
                    }
                    parsed.dom_last |= 1 << n;
                    Ok(())
                }
            };
        }
        if let Some(day) = item.strip_suffix('W') {
            let n = number(day).ok_or_else(|| {
                format!("`{item}`: `W` follows one day of the month, as in `15W`")
            })?;
            check(r, n)?;
            parsed.dom_nearest |= 1 << n;
            return Ok(());
        }
    }
    if is_dow {
        if item == "L" {
            // Quartz: `L` alone in day-of-week is its last day, Saturday.
            return add_range(field, r, saturday(dialect), saturday(dialect), 1, parsed);
        }
        if let Some(day) = item.strip_suffix('L') {
            let v = value(field, day, dialect)
                .ok_or_else(|| format!("`{item}`: `L` follows one day of the week, as in `5L`"))?;
            check(r, v)?;
            parsed.dow_last |= 1 << v;
            return Ok(());
        }
        if let Some((day, k)) = item.split_once('#') {
            let v = value(field, day, dialect).ok_or_else(|| {
                format!("`{item}`: `#` follows one day of the week, as in `MON#2`")
            })?;
            check(r, v)?;
            let k = number(k).filter(|k| (1..=5).contains(k)).ok_or_else(|| {
                format!("`{item}`: `#` is followed by 1-5, the week of the month")
            })?;
            parsed.dow_nth |= 1 << (v * 5 + k - 1);
            return Ok(());
        }
    }
    if item.contains(['L', 'W', '#']) && value(field, item, dialect).is_none() {
        let what = match field {
            Field::DayOfMonth => "`#` is for day-of-week",
            Field::DayOfWeek => "`W` is for day-of-month",
            _ => "`L`, `W` and `#` are only for the day fields",
        };
        return Err(format!("`{item}`: {what}"));
    }

    // `a`, `a-b`, `*`, each optionally `/step`.
    let (base, step) = match item.split_once('/') {
        Some((base, step)) => {
            let step = number(step)
                .ok_or_else(|| format!("`{item}`: `/` is followed by a step, a number"))?;
            let size = r.max - r.min + 1;
            if step == 0 || step > size {
                return Err(format!("`{item}`: step {step} is out of range 1-{size}"));
            }
            (base, Some(step))
        }
        None => (item, None),
    };
    let (start, end) = if base == "*" {
        (r.min, r.max)
    } else if let Some((a, b)) = base.split_once('-') {
        let a = value(field, a, dialect).ok_or_else(|| not_a_value(field, a))?;
        let b = value(field, b, dialect).ok_or_else(|| not_a_value(field, b))?;
        check(r, a)?;
        check(r, b)?;
        (a, b)
    } else {
        let a = value(field, base, dialect).ok_or_else(|| not_a_value(field, base))?;
        check(r, a)?;
        // `a/s` runs from a to the end of the range.
        (a, if step.is_some() { r.max } else { a })
    };
    add_range(field, r, start, end, step.unwrap_or(1), parsed)
}

fn saturday(dialect: Dialect) -> u32 {
    match dialect {
        Dialect::Unix => 6,
        Dialect::Quartz => 7,
    }
}

/// Values `start` to `end` by `step`; a range whose end is below its start
/// wraps around the field (`22-2` hours, `FRI-MON`), as in Quartz.
fn add_range(
    field: Field,
    r: Range,
    start: u32,
    end: u32,
    step: u32,
    parsed: &mut Parsed,
) -> Result<(), String> {
    // Seven weekdays in both dialects (a Unix 7 is Sunday again, 0).
    let size = if field == Field::DayOfWeek {
        7
    } else {
        r.max - r.min + 1
    };
    let span = if end >= start {
        end - start
    } else if field == Field::Year {
        return Err(format!("the range {start}-{end} runs backwards"));
    } else {
        end + size - start
    };
    let mut offset = 0;
    while offset <= span {
        parsed.add(field, r.min + (start + offset - r.min) % size);
        offset += step;
    }
    Ok(())
}

fn check(r: Range, v: u32) -> Result<(), String> {
    if (r.min..=r.max).contains(&v) {
        Ok(())
    } else {
        Err(format!("{v} is out of range {}-{}", r.min, r.max))
    }
}

fn not_a_value(field: Field, text: &str) -> String {
    let names = match field {
        Field::Month => ", or JAN-DEC",
        Field::DayOfWeek => ", or SUN-SAT",
        _ => "",
    };
    format!("`{text}` is not a number{names}")
}

/// Digits only (no sign, no spaces), as a number.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A number, or a month or weekday name where the field has names.
fn value(field: Field, text: &str, dialect: Dialect) -> Option<u32> {
    if let Some(n) = number(text) {
        return Some(n);
    }
    let (names, first): (&[&str], u32) = match field {
        Field::Month => (&MONTHS, 1),
        Field::DayOfWeek => (&WEEKDAYS, saturday(dialect) - 6),
        _ => return None,
    };
    names
        .iter()
        .position(|&n| n == text)
        .map(|i| i as u32 + first)
}
