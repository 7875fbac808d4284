//! The preview: a calendar's next fire times, as Quartz's
//! `TriggerUtils.computeFireTimes` and Python's croniter list them.

use std::iter::FusedIterator;

use jiff::{Timestamp, ZonedDateTime};

use super::zone::Calendar;

impl Calendar {
    /// The fire times strictly after `after`, in order, each in the
    /// calendar's zone: what a "next runs" view shows, and what a test
    /// compares with a live scheduler.
    ///
    /// Each step is one [`next_after`](Calendar::next_after). The iterator
    /// ends when the calendar has no fire time left; most have no end, so
    /// bound it (`take(n)`, `take_while`).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedulers::calendar::{jiff::Timestamp, Calendar};
    ///
    /// // 10:15 on the third Friday of every month, New York time.
    /// let cal = Calendar::parse_in("0 15 10 ? * 6#3", "America/New_York")?;
    /// let after: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
    /// let next: Vec<String> = cal
    ///     .fire_times(after)
    ///     .take(3)
    ///     .map(|z| z.strftime("%F %T %Z").to_string())
    ///     .collect();
    /// assert_eq!(next, [
    ///     "2024-01-19 10:15:00 EST",
    ///     "2024-02-16 10:15:00 EST",
    ///     "2024-03-15 10:15:00 EDT",
    /// ]);
    /// # Ok::<(), schedulers::calendar::CalendarError>(())
    /// ```
    pub fn fire_times(&self, after: Timestamp) -> FireTimes<'_> {
        FireTimes {
            calendar: self,
            after: Some(after),
        }
    }
}

/// The fire times of a [`Calendar`] after an instant: see
/// [`Calendar::fire_times`].
#[derive(Clone, Debug)]
pub struct FireTimes<'a> {
    calendar: &'a Calendar,
    /// `None` once the calendar has run out.
    after: Option<Timestamp>,
}

impl Iterator for FireTimes<'_> {
    type Item = ZonedDateTime;

    fn next(&mut self) -> Option<ZonedDateTime> {
        let next = self.after.and_then(|t| self.calendar.next_after(t));
        self.after = next;
        next.map(|t| t.to_zoned_datetime(self.calendar.zone().clone()))
    }
}

impl FusedIterator for FireTimes<'_> {}
