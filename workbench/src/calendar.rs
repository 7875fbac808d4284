//! The `calendar` workload: many cron schedules firing at wall-clock
//! instants, second granularity (`workloads/calendar.toml`, the spec's
//! [`Calendar`] section).
//!
//! Schedule `k` of `N` fires every `every` seconds at second `k mod every`
//! of the minute ([`Schedule`]), so the fires spread evenly over the minute.
//! Every subject creates the `N` schedules, then its fires are watched over
//! a window `[T0, T0 + run_for)` that starts at a whole second after the
//! last schedule is in place; each reports the same [`CalendarRun`] (the
//! fires as (schedule, wall-clock µs), the window's start, what creating a
//! schedule cost, the CPU its processes and its store used over the window,
//! the bytes it holds per schedule), and [`figures`] turns it into the
//! figures, the same way for every subject:
//!
//! - **lateness** (`lateness_p50` … `lateness_max`, µs): fire − the instant
//!   the expression names, for every fire whose instant lies in the window.
//!   A fire is matched to the latest instant of its schedule at most
//!   [`EARLY_TOLERANCE_US`] after it: an early fire counts as 0 and in
//!   `early`;
//! - `fired` (distinct instants that fired), `missed` (instants in the
//!   window that never fired by its end plus the workload's grace: a
//!   repeat with any is left out of the medians), `duplicates` (an instant
//!   fired twice);
//! - `cpu_per_fire`, `store_cpu_per_fire` (µs), `memory_per_schedule` (B),
//!   `schedule_batch` (ns to create one schedule).
//!
//! # Subjects, and how ours join
//!
//! An in-process subject joins through
//! [`Timers::schedule_cron`](crate::runner::Timers::schedule_cron) (the
//! runner's [`crate::runner::InProcess`] runs this workload with [`run`]):
//! our schedulers implement it with the library's calendar tasks
//! ([`crate::subjects::SchedulerTimers`]), `tokio-cron-scheduler`
//! ([`crate::peers::tokio_cron`]) with its jobs; its default refuses with
//! [`NO_CALENDAR_API`], and a subject whose
//! [`crate::runner::Subject::workloads`] lists
//! [`WorkloadKind::Calendar`](crate::spec::WorkloadKind::Calendar) without
//! implementing it fails its runs with that reason. The Redis scheduler's
//! calendar jobs ([`crate::distributed::cron`]), Quartz in memory in its JVM
//! ([`crate::peers::java`]), the Quartz cluster on PostgreSQL
//! ([`crate::peers::quartz`]) and BullMQ's job schedulers
//! ([`crate::peers::bullmq_cron`]) run it as runners of their own; all
//! report a [`CalendarRun`].

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::record::{Measurement, Metric};
use crate::runner::timeline::{histogram, push_percentiles};
use crate::runner::{measure, within, Fire, Probe, RunContext, RunError, Steps, TimersFactory};
use crate::spec::{Calendar, Workload};

/// What [`Timers::schedule_cron`](crate::runner::Timers::schedule_cron)
/// says by default.
pub const NO_CALENDAR_API: &str =
    "no calendar API: this subject cannot schedule a cron expression \
     (Timers::schedule_cron is not implemented for it)";

/// How early a fire may come and still count as an early fire of the next
/// instant rather than a late fire of the one before (at most half the
/// schedule's period).
pub const EARLY_TOLERANCE_US: i64 = 1_000_000;

/// One calendar schedule: every `every` seconds at second `second` of the
/// minute (`second < every`, `every` divides 60), in the IANA zone `zone`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The second of the minute (mod `every`) it fires at.
    pub second: u32,
    /// Seconds between fires: a divisor of 60.
    pub every: u32,
    /// The IANA time zone the expression is read in.
    pub zone: String,
}

impl Schedule {
    /// Schedule `k` of the workload's calendar.
    pub fn of(c: &Calendar, k: usize) -> Schedule {
        let every = c.every.0.as_secs().clamp(1, 60) as u32;
        Schedule {
            second: (k % every as usize) as u32,
            every,
            zone: c.zone.clone(),
        }
    }

    /// The seconds field: `S/E`, or `S` when it fires once a minute.
    pub fn seconds_field(&self) -> String {
        if self.every == 60 {
            self.second.to_string()
        } else {
            format!("{}/{}", self.second, self.every)
        }
    }

    /// Six fields, seconds first (the `cron` crate's, croner's and
    /// cron-parser's dialect): `S/E * * * * *`.
    ///
    /// ```
    /// use workbench::calendar::Schedule;
    ///
    /// let c = Schedule { second: 7, every: 15, zone: "UTC".into() };
    /// assert_eq!(c.expr(), "7/15 * * * * *");
    /// assert_eq!(Schedule { every: 60, ..c }.expr(), "7 * * * * *");
    /// ```
    pub fn expr(&self) -> String {
        format!("{} * * * * *", self.seconds_field())
    }

    /// The instant (Unix µs) a fire at `fire_us` was meant for: the latest
    /// of this schedule's instants at most [`EARLY_TOLERANCE_US`] (or half a
    /// period) after it. Whole-minute zone offsets (every zone today) keep
    /// the second of the minute in every zone.
    ///
    /// ```
    /// use workbench::calendar::Schedule;
    ///
    /// let c = Schedule { second: 7, every: 60, zone: "UTC".into() };
    /// assert_eq!(c.intended(67_250_000), 67_000_000); // 250 ms late
    /// assert_eq!(c.intended(66_900_000), 67_000_000); // 100 ms early
    /// assert_eq!(c.intended(125_000_000), 67_000_000); // 58 s late
    /// ```
    pub fn intended(&self, fire_us: i64) -> i64 {
        let period = i64::from(self.every) * 1_000_000;
        let offset = i64::from(self.second) * 1_000_000;
        let x = fire_us + EARLY_TOLERANCE_US.min(period / 2);
        (x - offset).div_euclid(period) * period + offset
    }
}

/// What a subject reports of one calendar run; [`figures`] computes the
/// figures from it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CalendarRun {
    /// The window's start, Unix µs (a whole second).
    pub start_us: i64,
    /// Creating one schedule, ns.
    pub schedule_ns: f64,
    /// CPU of the scheduler's own processes over the window and the grace
    /// after it, µs.
    pub cpu_us: f64,
    /// CPU of the store the schedules live in (Redis, PostgreSQL) over the
    /// same time, µs.
    #[serde(default)]
    pub store_cpu_us: Option<f64>,
    /// What the scheduler holds for every schedule together, bytes per
    /// schedule.
    #[serde(default)]
    pub bytes: Option<f64>,
    /// Every fire from a second before the window on: (schedule, Unix µs).
    pub fires: Vec<(u32, i64)>,
}

/// The section of a calendar workload.
///
/// # Errors
///
/// [`RunError::Inconsistent`] if `w` has none.
pub fn section(w: &Workload) -> Result<&Calendar, RunError> {
    w.calendar
        .as_ref()
        .ok_or_else(|| RunError::Inconsistent(format!("{} is not a calendar workload", w.name)))
}

/// The figures of one run of calendar workload `w` (see the module docs).
///
/// # Errors
///
/// [`RunError::Inconsistent`] if `w` is not a calendar workload or the run
/// names a schedule it does not have.
pub fn figures(w: &Workload, run: &CalendarRun) -> Result<Vec<Measurement>, RunError> {
    let c = section(w)?;
    let n = c.schedules as usize;
    let every = c.every.0.as_secs().clamp(1, 60);
    let from = run.start_us;
    let to = from + i64::try_from(c.run_for.0.as_micros()).unwrap_or(i64::MAX / 4);
    // Instants in [from, to) per residue of the second mod `every`, times the
    // schedules on that residue.
    let instants = |r: u64| {
        let (p, off) = (every as i64 * 1_000_000, r as i64 * 1_000_000);
        let first = (from - off + p - 1).div_euclid(p);
        let last = (to - 1 - off).div_euclid(p);
        (last - first + 1).max(0) as u64
    };
    let expected: u64 = (0..every)
        .map(|r| {
            let on_r = (n as u64 + every - 1 - r) / every;
            on_r * instants(r)
        })
        .sum();
    // The first fire of an instant counts; any later one is a duplicate.
    let mut fires = run.fires.clone();
    fires.sort_unstable_by_key(|&(k, at)| (at, k));
    let mut seen: HashMap<(u32, i64), i64> = HashMap::with_capacity(fires.len());
    let mut duplicates = 0u64;
    for &(k, at) in &fires {
        if k as usize >= n {
            return Err(RunError::Inconsistent(format!(
                "a fire of schedule {k}, of {n}"
            )));
        }
        let intended = Schedule::of(c, k as usize).intended(at);
        if !(from..to).contains(&intended) {
            continue;
        }
        match seen.entry((k, intended)) {
            std::collections::hash_map::Entry::Occupied(_) => duplicates += 1,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(at - intended);
            }
        }
    }
    let mut h = histogram();
    let mut early = 0u64;
    for &late in seen.values() {
        early += u64::from(late < 0);
        let _ = h.record((late.max(0) as u64 * 1_000).max(1));
    }
    let fired = seen.len() as u64;
    let mut out = Vec::new();
    push_percentiles(&h, &Metric::LATENESS, &mut out);
    let per_fire = |us: f64| us / fired.max(1) as f64;
    out.extend([
        Measurement::new(Metric::Fired, fired as f64),
        Measurement::new(Metric::Missed, expected.saturating_sub(fired) as f64),
        Measurement::new(Metric::Early, early as f64),
        Measurement::new(Metric::Duplicates, duplicates as f64),
        Measurement::new(Metric::ScheduleBatch, run.schedule_ns),
        Measurement::new(Metric::CpuPerFire, per_fire(run.cpu_us)),
    ]);
    if let Some(us) = run.store_cpu_us {
        out.push(Measurement::new(Metric::StoreCpuPerFire, per_fire(us)));
    }
    if let Some(b) = run.bytes {
        out.push(Measurement::new(Metric::MemoryPerSchedule, b));
    }
    Ok(out)
}

/// The first 200 characters of a report line, for an error message (a
/// report holds every fire).
pub fn head(line: &str) -> String {
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// Unix µs of a wall-clock reading.
pub fn unix_us(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The next whole second at least `lead` after `now_us`, Unix µs.
pub fn whole_second_after(now_us: i64, lead: Duration) -> i64 {
    let t = now_us + i64::try_from(lead.as_micros()).unwrap_or(0);
    (t + 999_999).div_euclid(1_000_000) * 1_000_000
}

/// How long creating the schedules may take before the window: the probe
/// keeps every fire from creation to the window's end.
const CREATION_ROOM: Duration = Duration::from_secs(120);

/// Runs calendar workload `w` on the in-process subject `name`: creates the
/// schedules through [`Timers::schedule_cron`](crate::runner::Timers::schedule_cron),
/// then watches a window starting a whole second after the last one (the
/// process's CPU over it); fire times are monotonic readings mapped to the
/// wall clock through one reading of both. Memory per schedule is measured
/// apart, in a fresh child process ([`memory_probe`]) where one is
/// available ([`MEMORY_PROBE_EXE`](crate::runner::MEMORY_PROBE_EXE)): in
/// this one, memory an earlier run freed would be reused and hide the cost.
///
/// # Errors
///
/// The subject refused a schedule (by default: [`NO_CALENDAR_API`]), or it
/// fired more often than a schedule can.
pub fn run(
    name: &str,
    make: &TimersFactory,
    w: &Workload,
    c: &Calendar,
    ctx: &RunContext,
) -> Result<Vec<Measurement>, RunError> {
    let n = c.schedules as usize;
    let every = c.every.0.max(Duration::from_secs(1));
    let span = CREATION_ROOM + c.run_for.0 + w.grace.0;
    let cap = (span.as_secs() / every.as_secs()) as usize + 2;
    ctx.progress.set_length(3);
    ctx.progress.set_position(0);
    let mut timers = make(n);
    let probe = Probe::new(measure::now(), 0, n, cap);
    let mut fires: Vec<Option<Fire>> = (0..n).map(|k| Some(probe.periodic(k))).collect();
    let crons: Vec<Schedule> = (0..n).map(|k| Schedule::of(c, k)).collect();
    let t0 = measure::now();
    within(timers.as_mut(), |t| create(t, &crons, &mut fires))?;
    let schedule_ns = measure::now().duration_since(t0).as_nanos() as f64 / n as f64;
    ctx.progress.set_position(1);

    // One reading of both clocks maps the probe's monotonic times to the wall.
    let (mono, wall) = (measure::now(), unix_us(SystemTime::now()));
    let start_us = whole_second_after(wall, Duration::from_secs(1));
    let start = mono + Duration::from_micros((start_us - wall) as u64);
    let end = start + c.run_for.0 + w.grace.0;
    let mut cpu0 = None;
    timers.drive(&mut Steps(|_: &mut dyn crate::runner::Timers| {
        let now = measure::now();
        if now >= start && cpu0.is_none() {
            cpu0 = Some(measure::cpu_process());
        }
        (now < end).then_some(if cpu0.is_none() { start } else { end })
    }));
    let cpu = measure::cpu_process().saturating_sub(cpu0.unwrap_or_default());
    ctx.progress.set_position(2);
    timers.shutdown();
    let bytes = match crate::runner::MEMORY_PROBE_EXE.get() {
        Some(exe) => child_memory(exe, name, c)?,
        None => memory_probe(make, c)?,
    };

    let epoch_us =
        wall - i64::try_from(mono.duration_since(probe.epoch()).as_micros()).unwrap_or(0);
    let mut run = CalendarRun {
        start_us,
        schedule_ns,
        cpu_us: cpu.as_secs_f64() * 1e6,
        store_cpu_us: None,
        bytes: Some(bytes),
        fires: Vec::new(),
    };
    for k in 0..n {
        let (count, times) = probe.runs(k);
        if count as usize > cap {
            return Err(RunError::Inconsistent(format!(
                "schedule {k} fired {count} times, more than {cap} in {} s",
                span.as_secs()
            )));
        }
        run.fires.extend(
            times
                .iter()
                .map(|t| (k as u32, epoch_us + (*t / 1_000) as i64))
                .filter(|(_, at)| *at >= start_us - EARLY_TOLERANCE_US),
        );
    }
    ctx.progress.set_position(3);
    figures(w, &run)
}

/// Creates schedule `k` of `crons` for every `k`, handing it its fire slot.
fn create(
    t: &mut dyn crate::runner::Timers,
    crons: &[Schedule],
    fires: &mut [Option<Fire>],
) -> Result<(), RunError> {
    for (k, cron) in crons.iter().enumerate() {
        let fire = fires[k].take().ok_or_else(|| {
            RunError::Inconsistent(format!("calendar schedule {k} created twice"))
        })?;
        t.schedule_cron(k, cron, fire)
            .map_err(|source| RunError::Refused {
                op: "schedule_cron",
                at: k,
                of: crons.len(),
                source,
            })?;
    }
    Ok(())
}

fn child_memory(exe: &std::path::Path, name: &str, c: &Calendar) -> Result<f64, RunError> {
    let section = serde_json::to_string(c)
        .map_err(|e| RunError::Child(format!("cannot encode the calendar: {e}")))?;
    let out = std::process::Command::new(exe)
        .args(["calendar-probe", name, &section])
        .output()
        .map_err(|e| RunError::Child(format!("calendar probe {}: {e}", exe.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| {
        RunError::Child(format!(
            "calendar probe for {name}: {} {}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })
}

/// Resident-set growth per schedule when `c`'s schedules are created on a
/// fresh subject in this process (the child's side of the measurement,
/// `workbench calendar-probe`). The runner's own storage (fire slots, the
/// expressions) is allocated before the first reading and kept past the
/// second, and the subject gets a moment to start its threads first.
///
/// # Errors
///
/// The subject refused a schedule.
pub fn memory_probe(make: &TimersFactory, c: &Calendar) -> Result<f64, RunError> {
    let n = c.schedules as usize;
    let mut timers = make(n);
    let probe = Probe::new(measure::now(), 0, n, 2);
    let mut fires: Vec<Option<Fire>> = (0..n).map(|k| Some(probe.periodic(k))).collect();
    let crons: Vec<Schedule> = (0..n).map(|k| Schedule::of(c, k)).collect();
    let until = measure::now() + Duration::from_millis(20);
    timers.drive(&mut Steps(|_: &mut dyn crate::runner::Timers| {
        (measure::now() < until).then_some(until)
    }));
    let r = within(timers.as_mut(), |t| {
        let rss0 = measure::rss_bytes();
        create(t, &crons, &mut fires)?;
        Ok(measure::rss_bytes().saturating_sub(rss0) as f64 / n.max(1) as f64)
    });
    timers.shutdown();
    drop((fires, crons));
    r
}

#[cfg(test)]
mod test {
    use super::*;

    fn workload(schedules: u64, every: &str, run_for: &str) -> Workload {
        Workload::parse(&format!(
            r#"
            name = "cal"
            description = "d"
            seed = 0
            [calendar]
            schedules = {schedules}
            every = "{every}"
            run_for = "{run_for}"
            "#
        ))
        .unwrap()
    }

    fn value(ms: &[Measurement], m: Metric) -> f64 {
        ms.iter()
            .find(|x| x.metric == m)
            .unwrap_or_else(|| panic!("no {m}"))
            .value
    }

    #[test]
    fn every_instant_in_the_window_is_expected_once_and_lateness_counts_from_it() {
        // 5 schedules every 2 s (seconds 0, 1, 0, 1, 0), window [100 s, 104 s):
        // instants 100, 102 for the three on 0; 101, 103 for the two on 1.
        let w = workload(5, "2s", "4s");
        let s = 1_000_000i64;
        let run = CalendarRun {
            start_us: 100 * s,
            schedule_ns: 900.0,
            cpu_us: 50.0,
            store_cpu_us: Some(20.0),
            bytes: Some(300.0),
            fires: vec![
                (0, 100 * s + 2_000),  // 2 ms late
                (0, 102 * s + 4_000),  // 4 ms late
                (1, 101 * s - 30_000), // 30 ms early
                (1, 101 * s),          // the same instant again: a duplicate
                (2, 100 * s + 1_000),
                (3, 99 * s),           // before the window: not counted
                (3, 104 * s + 10_000), // after it
                (4, 102 * s + 600_000),
            ],
        };
        let ms = figures(&w, &run).unwrap();
        assert_eq!(value(&ms, Metric::Fired), 5.0);
        assert_eq!(value(&ms, Metric::Missed), 10.0 - 5.0);
        assert_eq!(value(&ms, Metric::Early), 1.0);
        assert_eq!(value(&ms, Metric::Duplicates), 1.0);
        assert_eq!(value(&ms, Metric::CpuPerFire), 10.0);
        assert_eq!(value(&ms, Metric::StoreCpuPerFire), 4.0);
        assert_eq!(value(&ms, Metric::MemoryPerSchedule), 300.0);
        assert_eq!(value(&ms, Metric::ScheduleBatch), 900.0);
        let max = value(&ms, Metric::LatenessMax);
        assert!((599_000.0..=601_000.0).contains(&max), "{max}");
        let bad = CalendarRun {
            fires: vec![(5, 100 * s)],
            ..run
        };
        assert!(figures(&w, &bad).is_err());
    }

    #[test]
    fn once_a_minute_spreads_the_schedules_over_the_minute() {
        let w = workload(120, "60s", "20s");
        let c = w.calendar.as_ref().unwrap();
        assert_eq!(Schedule::of(c, 61).second, 1);
        assert_eq!(Schedule::of(c, 61).expr(), "1 * * * * *");
        // A 20 s window holds a third of the minute's instants.
        let run = CalendarRun {
            start_us: 60_000_000 * 7,
            ..CalendarRun::default()
        };
        assert_eq!(value(&figures(&w, &run).unwrap(), Metric::Missed), 40.0);
        assert_eq!(
            whole_second_after(1_500_000, Duration::from_secs(1)),
            3_000_000
        );
        assert_eq!(whole_second_after(2_000_000, Duration::ZERO), 2_000_000);
    }
}
