//! What a periodic job does when one of its fires comes due: the schedule
//! its record carries beyond the period (a calendar, a missed-run policy, a
//! panic policy, a lateness tolerance), and the plan of a claimed fire.
//!
//! The plan is made by the worker holding the fire's lease, in Rust (Lua
//! cannot read cron), from the record alone: the fire's due time, the Redis
//! time of the fire's **first** claim (written into the record by the claim
//! script, on the shard's clock), the period or calendar, the policy. So it
//! is a pure function of what Redis stores: every delivery of one fire (a
//! retry, a redelivery after a lost lease) plans the same run and the same
//! next fire, and no worker's clock or stale reading of Redis's clock enters
//! it. The settle script accepts a plan only from the lease's holder (the
//! fence), only if it is based on the record's first-claim time, and only if
//! the next fire is later than this one.

use std::num::NonZeroU64;
use std::time::Duration;

use schedulers::calendar::jiff::Timestamp;
use schedulers::calendar::{Calendar, MissedRuns, OnPanic};

use crate::job::Job;
use crate::Error;

/// The lateness tolerance of a periodic job that sets none
/// ([`Job::lateness_tolerance`]): 5 s, Quartz's in-memory misfire threshold.
/// A fire first claimed later than this after its due time is late, and its
/// job's [`MissedRuns`] policy applies.
pub const DEFAULT_LATENESS_TOLERANCE: Duration = Duration::from_secs(5);

/// A job's schedule beyond its period, as a worker plans with it (read from
/// the record's `sch` field, see [`scripts`](crate::scripts)). The panic
/// policy is the script's alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// `None`: coalesce (a fixed-rate job's default, computed by the
    /// script); calendar jobs always have one.
    pub(crate) missed: Option<MissedRuns>,
    pub(crate) tolerance_ms: u64,
    pub(crate) calendar: Option<Calendar>,
}

/// Why a calendar in a zone without an IANA name is refused: a worker
/// must read the zone back by its name.
pub(crate) const ZONE_WITHOUT_NAME: &str =
    "a calendar job's time zone must have an IANA name (such as Europe/Berlin), for workers to read it back";

/// What a settle tells the script about a fire the worker planned: the time
/// the plan is based on (the fire's first claim, which the script checks
/// against the record) and the job's next due time (`None`: the calendar
/// has no fire left, the job ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Planned {
    pub(crate) first_ms: i64,
    pub(crate) next_ms: Option<i64>,
}

impl Planned {
    /// The script argument: `<first>:<next>`, next `-1` for none.
    pub(crate) fn arg(&self) -> String {
        format!("{}:{}", self.first_ms, self.next_ms.unwrap_or(-1))
    }
}

/// What the worker does with a claimed fire of a planned job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Run it, for the grid point `due_ms` (the fire's own due time, or the
    /// one a late fire's policy picked); its ack carries `plan`.
    Run { due_ms: i64, plan: Planned },
    /// Run nothing: the policy passes over `skipped` fire times (this one
    /// and the others missed), and the job moves to the plan's next.
    Skip { plan: Planned, skipped: u64 },
}

impl Schedule {
    /// The schedule of `job` as its record stores it (see
    /// [`decode`](Self::decode)): empty for a one-shot job and for a
    /// fixed-rate one that chose nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchedule`] for a policy on a one-shot job, or a
    /// calendar job given another first due time than its next fire;
    /// [`Error::Calendar`] for [`MissedRuns::Delay`] on a calendar.
    pub(crate) fn text_of(job: &Job) -> Result<String, Error> {
        let chosen = job.missed.is_some() || job.on_panic.is_some() || job.tolerance.is_some();
        let missed = match (&job.calendar, job.period_ms) {
            (Some(_), _) => {
                if job.when != crate::When::NextFire {
                    return Err(Error::InvalidSchedule(
                        "a calendar job is first due at its next fire time (set no delay or time after on_calendar)",
                    ));
                }
                let m = job.missed.unwrap_or_default();
                m.check_calendar()?;
                Some(m)
            }
            (None, 0) if chosen => {
                return Err(Error::InvalidSchedule(
                    "a missed-run policy, a panic policy or a lateness tolerance is for fixed-rate and calendar jobs",
                ))
            }
            (None, 0) => return Ok(String::new()),
            (None, _) => job.missed,
        };
        let tolerance = job.tolerance.unwrap_or(DEFAULT_LATENESS_TOLERANCE);
        let tolerance_ms =
            u64::try_from(tolerance.as_millis()).map_err(|_| Error::DelayOverflow)?;
        let on_panic = job.on_panic.unwrap_or_default();
        if missed.is_none() && on_panic == OnPanic::Stop {
            return Ok(String::new());
        }
        // `<m><p><tolerance ms>[ <zone> <cron>]`: `m` the missed-run policy
        // (`-` coalesce, `c` catch up, `s` skip, `d` delay, `o` once now),
        // `p` the panic policy (`s` stop, `c` continue); the cron text last,
        // its fields one space apart.
        let m = match missed {
            None => '-',
            Some(MissedRuns::CatchUp) => 'c',
            Some(MissedRuns::Skip) => 's',
            Some(MissedRuns::Delay) => 'd',
            Some(MissedRuns::OnceNow) => 'o',
        };
        let p = match on_panic {
            OnPanic::Stop => 's',
            OnPanic::Continue => 'c',
        };
        let mut text = format!("{m}{p}{tolerance_ms}");
        if let Some(cal) = &job.calendar {
            let zone = cal
                .zone()
                .iana_name()
                .ok_or(Error::InvalidSchedule(ZONE_WITHOUT_NAME))?;
            let fields: Vec<&str> = cal.cron().as_str().split_ascii_whitespace().collect();
            text.push_str(&format!(" {zone} {}", fields.join(" ")));
        }
        Ok(text)
    }

    /// The schedule a record stores, `None` if empty: `<m><p><tolerance
    /// ms>[ <zone> <cron>]`, `m` the missed-run policy (`-` coalesce, `c`
    /// catch up, `s` skip, `d` delay, `o` once now), `p` the panic policy
    /// (`s` stop, `c` continue).
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] for text no client writes; [`Error::Calendar`]
    /// if this process cannot read the calendar back (its tz database
    /// lacks the zone).
    pub(crate) fn decode(text: &str) -> Result<Option<Schedule>, Error> {
        if text.is_empty() {
            return Ok(None);
        }
        let bad = || Error::Protocol(format!("job schedule {text:?}"));
        let mut parts = text.splitn(3, ' ');
        let head = parts.next().ok_or_else(bad)?;
        let mut chars = head.chars();
        let missed = match chars.next() {
            Some('-') => None,
            Some('c') => Some(MissedRuns::CatchUp),
            Some('s') => Some(MissedRuns::Skip),
            Some('d') => Some(MissedRuns::Delay),
            Some('o') => Some(MissedRuns::OnceNow),
            _ => return Err(bad()),
        };
        if !matches!(chars.next(), Some('s' | 'c')) {
            return Err(bad());
        }
        let tolerance_ms = chars.as_str().parse().map_err(|_| bad())?;
        let calendar = match (parts.next(), parts.next()) {
            (Some(zone), Some(cron)) => Some(Calendar::parse_in(cron, zone)?),
            (None, None) => None,
            _ => return Err(bad()),
        };
        if calendar.is_some() && missed.is_none() {
            return Err(bad());
        }
        Ok(Some(Schedule {
            missed,
            tolerance_ms,
            calendar,
        }))
    }

    /// What to do with a fire due at `due_ms` and first claimed at
    /// `first_ms` (both Redis's clock), of a job with `period_ms` (0 for a
    /// calendar): `None` if the job is not planned by the worker (a
    /// coalescing fixed-rate job, whose next fire the script computes).
    ///
    /// # Errors
    ///
    /// [`Error::DelayOverflow`] for times past the year 2554 (the rule
    /// counts fixed-rate grids in nanoseconds); [`Error::Calendar`] for
    /// [`MissedRuns::Delay`] on a calendar (refused at schedule).
    pub(crate) fn plan(
        &self,
        due_ms: i64,
        first_ms: i64,
        period_ms: i64,
    ) -> Result<Option<Decision>, Error> {
        let Some(policy) = self.missed else {
            return Ok(None);
        };
        let tolerance = Duration::from_millis(self.tolerance_ms);
        let (run_now, next, skipped) = match &self.calendar {
            Some(cal) => {
                let at = |ms| Timestamp::from_millisecond(ms).map_err(|_| Error::DelayOverflow);
                let p = policy.plan_calendar(cal, at(due_ms)?, at(first_ms)?, tolerance)?;
                let ms = |t: Timestamp| t.as_millisecond();
                (p.run_now.map(ms), p.next.map(ms), p.skipped)
            }
            None => {
                const NS: u64 = 1_000_000;
                let ns = |ms: i64| u64::try_from(ms).ok().and_then(|ms| ms.checked_mul(NS));
                let (Some(due), Some(now), Some(period)) = (
                    ns(due_ms),
                    ns(first_ms),
                    ns(period_ms).and_then(NonZeroU64::new),
                ) else {
                    return Err(Error::DelayOverflow);
                };
                let p = policy.plan_fixed_rate(period, due, now, tolerance);
                // Every point is a whole number of ms: sums of ms times.
                let ms = |t: u64| i64::try_from(t / NS).map_err(|_| Error::DelayOverflow);
                (
                    p.run_now.map(ms).transpose()?,
                    p.next.map(ms).transpose()?,
                    p.skipped,
                )
            }
        };
        let plan = Planned {
            first_ms,
            next_ms: next,
        };
        Ok(Some(match run_now {
            Some(due_ms) => Decision::Run { due_ms, plan },
            None => Decision::Skip { plan, skipped },
        }))
    }
}

#[cfg(test)]
mod test {
    use std::time::Duration;

    use schedulers::calendar::{jiff::tz::TimeZone, Calendar, Cron, MissedRuns, OnPanic};

    use super::{Decision, Planned, Schedule};
    use crate::{Error, Job};

    fn sched(job: &Job) -> Option<Schedule> {
        Schedule::decode(&Schedule::text_of(job).unwrap()).unwrap()
    }

    #[test]
    fn a_schedule_survives_its_record() {
        let one_shot = Job::new("a", "k").unwrap();
        assert_eq!(Schedule::text_of(&one_shot).unwrap(), "");
        let rate = Job::new("a", "k")
            .unwrap()
            .at_fixed_rate(Duration::ZERO, Duration::from_secs(1))
            .unwrap();
        assert_eq!(Schedule::text_of(&rate).unwrap(), "", "today's rule");
        let rate = rate
            .missed_runs(MissedRuns::Delay)
            .on_panic(OnPanic::Continue);
        assert_eq!(Schedule::text_of(&rate).unwrap(), "dc5000");
        let s = sched(&rate).unwrap();
        assert_eq!(
            (s.missed, s.tolerance_ms, s.calendar),
            (Some(MissedRuns::Delay), 5000, None)
        );

        let cal = Calendar::parse_in("0  15 10 ? *\t6#3", "America/New_York").unwrap();
        let job = Job::new("a", "k")
            .unwrap()
            .on_calendar(&cal)
            .unwrap()
            .lateness_tolerance(Duration::from_millis(250));
        let text = Schedule::text_of(&job).unwrap();
        assert_eq!(text, "cs250 America/New_York 0 15 10 ? * 6#3");
        let back = Schedule::decode(&text).unwrap().unwrap();
        assert_eq!(
            back.missed,
            Some(MissedRuns::CatchUp),
            "a calendar's default"
        );
        assert_eq!(back.calendar.unwrap().zone(), cal.zone());
    }

    #[test]
    fn a_schedule_that_does_not_hold_together_is_refused() {
        let one_shot = Job::new("a", "k").unwrap().on_panic(OnPanic::Continue);
        assert!(matches!(
            Schedule::text_of(&one_shot),
            Err(Error::InvalidSchedule(_))
        ));
        let cal = Calendar::parse("* * * * *").unwrap();
        let delay = Job::new("a", "k")
            .unwrap()
            .on_calendar(&cal)
            .unwrap()
            .missed_runs(MissedRuns::Delay);
        assert!(
            matches!(Schedule::text_of(&delay), Err(Error::Calendar(e)) if e.is_delay_on_calendar())
        );
        let moved = Job::new("a", "k")
            .unwrap()
            .on_calendar(&cal)
            .unwrap()
            .after(Duration::from_secs(1));
        assert!(matches!(
            Schedule::text_of(&moved),
            Err(Error::InvalidSchedule(_))
        ));
        let fixed = Calendar::new(
            Cron::parse("* * * * *").unwrap(),
            TimeZone::fixed(schedulers::calendar::jiff::tz::offset(2)),
        );
        assert!(matches!(
            Job::new("a", "k").unwrap().on_calendar(&fixed),
            Err(Error::InvalidSchedule(_))
        ));
        for bad in ["x", "c", "cx1", "cs", "cs1 UTC", "-s1 UTC * * * * *"] {
            assert!(
                matches!(Schedule::decode(bad), Err(Error::Protocol(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            Schedule::decode("cs1 Nowhere/Atlantis * * * * *"),
            Err(Error::Calendar(e)) if e.is_unknown_zone()
        ));
    }

    #[test]
    fn a_fire_is_planned_from_its_first_claim() {
        // Every 10 s from 100 s; the fire due at 100 s first claimed at
        // 135 s, 35 s late with a tolerance of 1 s.
        let rate = |m| {
            Schedule::decode(
                &Schedule::text_of(
                    &Job::new("a", "k")
                        .unwrap()
                        .at_fixed_rate(Duration::ZERO, Duration::from_secs(10))
                        .unwrap()
                        .missed_runs(m)
                        .lateness_tolerance(Duration::from_secs(1)),
                )
                .unwrap(),
            )
            .unwrap()
            .unwrap()
        };
        let planned = |next| Planned {
            first_ms: 135_000,
            next_ms: Some(next),
        };
        let run = |due_ms, next| Decision::Run {
            due_ms,
            plan: planned(next),
        };
        for (policy, decision) in [
            (MissedRuns::CatchUp, run(100_000, 110_000)),
            (
                MissedRuns::Skip,
                Decision::Skip {
                    plan: planned(140_000),
                    skipped: 4,
                },
            ),
            (MissedRuns::Delay, run(135_000, 145_000)),
            (MissedRuns::OnceNow, run(130_000, 140_000)),
        ] {
            let plan = rate(policy).plan(100_000, 135_000, 10_000).unwrap();
            assert_eq!(plan, Some(decision), "{policy:?}");
        }
        // On time (within the tolerance), every policy runs the fire.
        assert_eq!(
            rate(MissedRuns::Skip)
                .plan(100_000, 100_900, 10_000)
                .unwrap(),
            Some(Decision::Run {
                due_ms: 100_000,
                plan: Planned {
                    first_ms: 100_900,
                    next_ms: Some(110_000)
                }
            })
        );
        // A coalescing job is the script's to plan.
        let coalesce = Job::new("a", "k")
            .unwrap()
            .at_fixed_rate(Duration::ZERO, Duration::from_secs(10))
            .unwrap()
            .on_panic(OnPanic::Continue);
        let s = sched(&coalesce).unwrap();
        assert_eq!(s.plan(100_000, 135_000, 10_000).unwrap(), None);

        // A calendar that has run out: the last fire runs, no next.
        let cal = Calendar::parse("0 0 0 1 1 ? 2020").unwrap();
        let last = sched(&Job::new("a", "k").unwrap().on_calendar(&cal).unwrap()).unwrap();
        let due = 1_577_836_800_000; // 2020-01-01T00:00:00Z
        assert_eq!(
            last.plan(due, due + 3, 0).unwrap(),
            Some(Decision::Run {
                due_ms: due,
                plan: Planned {
                    first_ms: due + 3,
                    next_ms: None
                }
            })
        );
        assert_eq!(
            Planned {
                first_ms: 5,
                next_ms: None
            }
            .arg(),
            "5:-1"
        );
    }
}
