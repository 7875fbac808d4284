//! Workload specs: what a run does, as seeded TOML.
//!
//! A spec is one TOML file in `workbench/workloads/`. It is either a
//! **timeline** (one or more `[[group]]`s of timers, each with its arrival
//! process, delay distribution, and optional cancels and resets, executed
//! in real time), a **sweep** (`[sweep]`: schedule, reset and cancel cost
//! and memory per timer at a list of pending counts), durable jobs
//! (`[distributed]`, [`Distributed`]), threads sharing one subject
//! (`[contention]`, [`Contention`]) or calendar schedules (`[calendar]`,
//! [`Calendar`]). Every random choice
//! comes from `seed`, so the same spec gives the same operations in the same
//! order on every run and every subject.
//!
//! ```toml
//! name = "ack-timeout"
//! description = "1e6 message acks, 99% cancelled before they fire"
//! models = "IM message acks (seed 004), Kafka's purgatory"
//! seed = 4
//!
//! [[group]]
//! name = "ack"
//! count = 1_000_000
//! kind = "once"                                   # once | fixed-rate | fixed-delay
//! delay = { dist = "uniform", min = "10s", max = "30s" }
//! arrival = { rate = 200000.0, process = "poisson" }   # optional; absent: all at once
//! cancel = { fraction = 0.99, after = { dist = "lognormal", median = "50ms", sigma = 0.7 } }
//!
//! [quick]            # the quick suite's profile: multiplies counts and durations
//! count = 0.1
//! time = 0.05
//! ```
//!
//! Distributions (`dist`): `fixed` (`value`), `uniform` (`min`, `max`),
//! `exponential` (`mean`), `lognormal` (`median`, `sigma`, the standard
//! deviation of the log). Durations are strings with a unit: `"250us"`,
//! `"10ms"`, `"1.5s"`, `"2m"`, `"1h"`.
//!
//! Group fields: `count`, `kind`, `delay` (first delay), `period` (periodic
//! kinds; a duration), `run_for` (periodic kinds: how long they run before
//! the workload cancels them), `anchor` (`"schedule"`: the delay counts from
//! the moment of scheduling; `"start"`: from the start of the run, so a
//! fixed delay gives every timer the same deadline), `arrival`, `cancel`
//! (`fraction` of the timers, each cancelled `after` its scheduling), and
//! `reset` (heartbeats: gaps drawn from `every`, from the timer's arrival
//! `until` a time after the start; each heartbeat resets the timer to a
//! delay drawn from `delay`, by default the group's delay). Several groups
//! in one spec run at once: a mix of timer types per connection.
//!
//! Bad specs are refused with a [`SpecError`] that names the field
//! (`group[1].cancel.fraction: must be within 0..=1`).

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::random::{Dist, Rng};
use crate::record::Metric;

/// One workload, as read from a spec file (before a profile is applied).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// A short, unique name (`ack-timeout`); also the spec's file stem.
    pub name: String,
    /// One sentence: what the workload does.
    pub description: String,
    /// The real situation it models.
    #[serde(default)]
    pub models: String,
    /// The seed every random choice of the workload derives from.
    pub seed: u64,
    /// How long to wait for fires after the last deadline before counting a
    /// timer as missed.
    #[serde(default = "default_grace")]
    pub grace: Dur,
    /// Timer groups of a timeline workload.
    #[serde(default, rename = "group")]
    pub groups: Vec<Group>,
    /// A sweep over pending counts (instead of groups).
    #[serde(default)]
    pub sweep: Option<Sweep>,
    /// Durable jobs on the Redis scheduler (instead of groups).
    #[serde(default)]
    pub distributed: Option<Distributed>,
    /// Threads sharing one subject (instead of groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<Contention>,
    /// Calendar (cron) schedules (instead of groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendar: Option<Calendar>,
    /// The figures the report's verdict ranks subjects by on this workload,
    /// one row each: one metric or a list (default: lateness p99 for a
    /// timeline, batch schedule cost for a sweep, drain jobs/s and paced p99
    /// for distributed jobs).
    #[serde(
        default,
        with = "crate::metric::one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub verdict: Vec<Metric>,
    /// The quick suite's profile.
    #[serde(default)]
    pub quick: Option<Profile>,
}

/// What kind of run a workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// `[[group]]`s of timers executed in real time.
    Timeline,
    /// A `[sweep]` of batch loops over pending counts.
    Sweep,
    /// `[distributed]` jobs on Redis, run by worker processes.
    Distributed,
    /// `[contention]`: threads sharing one subject.
    Contention,
    /// `[calendar]` cron schedules firing at wall-clock instants.
    Calendar,
}

/// Calendar schedules (`[calendar]`): `schedules` cron schedules, schedule
/// `k` firing every `every` seconds at second `k mod every` of the minute
/// (cron `S/E * * * * *`; once a minute at second `k mod 60` when `every` is
/// `60s`), in the IANA time zone `zone`, watched for `run_for` from a common
/// start: lateness from the intended wall-clock instant, CPU per fire,
/// memory per schedule (see [`crate::calendar`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calendar {
    /// How many schedules.
    pub schedules: u64,
    /// Seconds between two fires of one schedule: a divisor of a minute.
    pub every: Dur,
    /// How long the fires are watched.
    pub run_for: Dur,
    /// The time zone the expressions are read in.
    #[serde(default = "utc")]
    pub zone: String,
    /// Handler threads of the subjects that run jobs on a pool (a Quartz
    /// cluster node's pool, BullMQ's `concurrency`).
    #[serde(default = "four")]
    pub threads: u64,
}

fn utc() -> String {
    "UTC".to_owned()
}

/// Threads sharing one subject (`[contention]`), as a server's I/O threads
/// set and clear request timeouts: at each thread count P of `threads`, a
/// fresh subject and P threads, each scheduling `pairs` one-shot timeouts
/// (delays from `delay`, far enough that none fires) with a 16-byte closure
/// (an id and an `Arc` of the thread's own connection), each cancelled
/// `window` requests after it was set (a ring of `window` live timeouts per
/// thread; the last ones are cancelled at the end), all threads started at
/// once. Thread `k` draws its delays from stream `k + 1` of the seed, at
/// every P. See [`crate::runner::contention`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contention {
    /// Thread counts, ascending.
    pub threads: Vec<u64>,
    /// Schedule + cancel pairs per thread.
    pub pairs: u64,
    /// Live timeouts per thread: each is cancelled this many requests later.
    #[serde(default = "thousand")]
    pub window: u64,
    /// The timeouts' delays.
    pub delay: Dist,
    /// Untimed pairs per thread on the fresh subject before the threads
    /// start together (at most `pairs`): thread start-up, first allocations
    /// and a JIT are not in the figures.
    #[serde(default = "twenty_thousand")]
    pub warm: u64,
}

fn thousand() -> u64 {
    1000
}

fn twenty_thousand() -> u64 {
    20_000
}

/// The most threads a contention workload starts.
pub const MAX_THREADS: u64 = 256;

/// Durable jobs on a Redis-backed scheduler, run by worker processes (the
/// subject says how many, and whose: ours or BullMQ), in two shapes measured
/// apart, because a paced load shows only the offered rate: **drain**
/// (capacity: `drain` jobs already due, then the workers start) and
/// **paced** (lateness: `paced` jobs due evenly over `window`, below
/// capacity). Each measurement runs against a fresh `redis-server`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Distributed {
    /// No-op jobs of the drain shape.
    pub drain: u64,
    /// No-op jobs of the paced shape.
    pub paced: u64,
    /// The paced jobs' due times spread evenly over this window.
    pub window: Dur,
    /// Handler threads per worker process (BullMQ: `concurrency`).
    #[serde(default = "four")]
    pub threads: u64,
    /// Shards of our schedule.
    #[serde(default = "eight")]
    pub shards: u64,
    /// How long an idle worker of ours is watched (not scaled by a profile:
    /// it is an observation time, not a load).
    #[serde(default = "five_seconds")]
    pub idle: Dur,
}

fn four() -> u64 {
    4
}

fn eight() -> u64 {
    8
}

fn five_seconds() -> Dur {
    Dur(Duration::from_secs(5))
}

fn default_grace() -> Dur {
    Dur(Duration::from_secs(1))
}

/// One group of timers of the same type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Name of the group (`ack`, `idle`).
    pub name: String,
    /// How many timers.
    pub count: u64,
    /// One-shot or periodic.
    #[serde(default)]
    pub kind: Kind,
    /// The first delay.
    pub delay: Dist,
    /// Whether `delay` counts from scheduling (default) or from the start of
    /// the run.
    #[serde(default)]
    pub anchor: Anchor,
    /// Period of a periodic timer (fixed-rate: between starts; fixed-delay:
    /// from the end of one run to the start of the next).
    #[serde(default)]
    pub period: Option<Dur>,
    /// How long periodic timers run before the workload cancels them.
    #[serde(default)]
    pub run_for: Option<Dur>,
    /// When timers are scheduled; absent: all at the start, back to back.
    #[serde(default)]
    pub arrival: Option<Arrival>,
    /// Which timers get cancelled, and when.
    #[serde(default)]
    pub cancel: Option<Cancel>,
    /// Heartbeats that reset timers.
    #[serde(default)]
    pub reset: Option<Reset>,
}

/// What kind of timer a group holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Runs once.
    #[default]
    Once,
    /// Periodic; next start = previous scheduled start + period.
    FixedRate,
    /// Periodic; next start = previous end + period.
    FixedDelay,
}

impl Kind {
    /// True for the periodic kinds.
    pub fn is_periodic(self) -> bool {
        self != Kind::Once
    }
}

/// What a group's delay counts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Anchor {
    /// From the moment the timer is scheduled.
    #[default]
    Schedule,
    /// From the start of the run: a fixed delay means one shared deadline.
    Start,
}

/// When a group's timers are scheduled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arrival {
    /// Timers scheduled per second, on average.
    pub rate: f64,
    /// `poisson` (exponential gaps, the default) or `uniform` (even gaps).
    #[serde(default)]
    pub process: Process,
}

/// An arrival process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Process {
    /// Exponential gaps: independent arrivals.
    #[default]
    Poisson,
    /// Even gaps.
    Uniform,
}

/// Cancels of a group's timers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cancel {
    /// Chance that a timer gets cancelled, 0 to 1.
    pub fraction: f64,
    /// When, after its scheduling.
    pub after: Dist,
}

/// Heartbeats that reset a group's timers (keepalive).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reset {
    /// Gap between two heartbeats of one timer.
    pub every: Dist,
    /// No heartbeats after this time from the start of the run.
    pub until: Dur,
    /// The new delay; absent: the group's `delay`.
    #[serde(default)]
    pub delay: Option<Dist>,
}

/// A sweep: cost and memory as the pending count grows, each phase a
/// batch loop (schedule every timer; reset each once; cancel a fraction of
/// them, both in random order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Pending counts to measure at, ascending.
    pub sizes: Vec<u64>,
    /// Delays of the pending timers: far enough that none fires.
    pub delay: Dist,
    /// Whether to reset every timer once before the cancels.
    #[serde(default = "yes")]
    pub reset: bool,
    /// The fraction of the timers cancelled (the first of a random
    /// permutation); 1 by default.
    #[serde(default = "one")]
    pub cancel: f64,
}

fn yes() -> bool {
    true
}

fn one() -> f64 {
    1.0
}

/// A profile: how the quick suite shrinks a workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Multiplies every group's count (and arrival rate, so the arrival
    /// span scales with `time` alone).
    #[serde(default)]
    pub count: Option<f64>,
    /// Multiplies every duration of the groups except `period`: a period is
    /// what a periodic workload is about, so the profile shortens how long it
    /// runs, not how often.
    #[serde(default)]
    pub time: Option<f64>,
    /// Replaces a sweep's sizes.
    #[serde(default)]
    pub sizes: Option<Vec<u64>>,
}

/// A duration written with a unit (`"10ms"`, `"1.5s"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl Dur {
    /// Nanoseconds (saturated).
    pub fn nanos(self) -> u64 {
        u64::try_from(self.0.as_nanos()).unwrap_or(u64::MAX)
    }

    pub(crate) fn scaled(self, f: f64) -> Dur {
        Dur(Duration::from_nanos((self.nanos() as f64 * f) as u64))
    }
}

impl std::str::FromStr for Dur {
    type Err = String;

    /// Parses `<number><unit>`, unit one of `ns us ms s m h`.
    fn from_str(s: &str) -> Result<Dur, String> {
        let s = s.trim();
        let split = s
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or_else(|| format!("duration {s:?} has no unit (ns, us, ms, s, m, h)"))?;
        let (num, unit) = s.split_at(split);
        let value: f64 = num
            .trim()
            .parse()
            .map_err(|_| format!("duration {s:?}: {num:?} is not a number"))?;
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            _ => {
                return Err(format!(
                    "duration {s:?}: unknown unit {unit:?} (ns, us, ms, s, m, h)"
                ))
            }
        };
        let ns = value * scale;
        if !(ns.is_finite() && (0.0..1.8e19).contains(&ns)) {
            return Err(format!("duration {s:?} is negative or too large"));
        }
        Ok(Dur(Duration::from_nanos(ns as u64)))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.nanos();
        let (v, unit) = match ns {
            0 => return f.write_str("0s"),
            n if n % 3_600_000_000_000 == 0 => (n as f64 / 3.6e12, "h"),
            n if n >= 1_000_000_000 => (n as f64 / 1e9, "s"),
            n if n >= 1_000_000 => (n as f64 / 1e6, "ms"),
            n if n >= 1_000 => (n as f64 / 1e3, "us"),
            n => (n as f64, "ns"),
        };
        write!(f, "{}{unit}", (v * 1000.0).round() / 1000.0)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ns", self.nanos()))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A bad spec: which field, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// Where the spec came from (a file path), if known.
    pub source: Option<String>,
    /// The field, as a path (`group[0].cancel.fraction`), or empty when the
    /// parser reported the location in `message`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl SpecError {
    pub(crate) fn field(field: impl Into<String>, message: impl Into<String>) -> SpecError {
        SpecError {
            source: None,
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(src) = &self.source {
            write!(f, "{src}: ")?;
        }
        if self.field.is_empty() {
            write!(f, "{}", self.message.trim_end())
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

impl Workload {
    /// Parses and checks a spec.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] naming the field: TOML syntax, unknown or missing
    /// fields, wrong types and unparseable durations (with the line), or a
    /// value out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use workbench::spec::Workload;
    ///
    /// let w = Workload::parse(r#"
    ///     name = "tiny"
    ///     description = "ten timers"
    ///     seed = 1
    ///     [[group]]
    ///     name = "t"
    ///     count = 10
    ///     delay = { dist = "uniform", min = "1ms", max = "5ms" }
    /// "#).unwrap();
    /// assert_eq!(w.groups[0].count, 10);
    ///
    /// let err = Workload::parse(r#"
    ///     name = "bad"
    ///     description = "x"
    ///     seed = 1
    ///     [[group]]
    ///     name = "t"
    ///     count = 10
    ///     delay = { dist = "fixed", value = "1ms" }
    ///     cancel = { fraction = 1.5, after = { dist = "fixed", value = "1ms" } }
    /// "#).unwrap_err();
    /// assert_eq!(err.field, "group[0].cancel.fraction");
    /// ```
    pub fn parse(text: &str) -> Result<Workload, SpecError> {
        let w: Workload = toml::from_str(text).map_err(|e| SpecError::field("", e.to_string()))?;
        w.check()?;
        Ok(w)
    }

    /// Reads and parses a spec file.
    ///
    /// # Errors
    ///
    /// As [`Workload::parse`], with the path in [`SpecError::source`]; or the
    /// file could not be read.
    pub fn load(path: &Path) -> Result<Workload, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            source: Some(path.display().to_string()),
            field: String::new(),
            message: e.to_string(),
        })?;
        Workload::parse(&text).map_err(|mut e| {
            e.source = Some(path.display().to_string());
            e
        })
    }

    /// Checks every value; the error names the first bad field.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] naming the field.
    pub fn check(&self) -> Result<(), SpecError> {
        let ok_name = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok_name {
            return Err(SpecError::field(
                "name",
                "must be non-empty: letters, digits, '-' and '_'",
            ));
        }
        let kinds = [
            !self.groups.is_empty(),
            self.sweep.is_some(),
            self.distributed.is_some(),
            self.contention.is_some(),
            self.calendar.is_some(),
        ];
        match kinds.iter().filter(|k| **k).count() {
            0 => {
                return Err(SpecError::field(
                    "group",
                    "a workload needs [[group]]s, a [sweep], [distributed], [contention] or [calendar]",
                ))
            }
            1 => {}
            _ => {
                return Err(SpecError::field(
                    if self.sweep.is_some() {
                        "sweep"
                    } else if self.distributed.is_some() {
                        "distributed"
                    } else if self.contention.is_some() {
                        "contention"
                    } else {
                        "calendar"
                    },
                    "a workload has one of [[group]]s, a [sweep], [distributed], [contention] or [calendar], not several",
                ))
            }
        }
        if let Some(d) = &self.distributed {
            if [d.drain, d.paced, d.threads, d.shards].contains(&0)
                || d.window.0.is_zero()
                || d.idle.0.is_zero()
            {
                return Err(SpecError::field(
                    "distributed",
                    "drain, paced, threads, shards, window and idle must be above zero",
                ));
            }
        }
        if let Some(c) = &self.contention {
            c.check()?;
        }
        if let Some(c) = &self.calendar {
            c.check()?;
        }
        if let Some(sweep) = &self.sweep {
            check_sizes("sweep.sizes", &sweep.sizes)?;
            sweep.delay.check("sweep.delay")?;
            if !(0.0..=1.0).contains(&sweep.cancel) {
                return Err(SpecError::field("sweep.cancel", "must be within 0..=1"));
            }
        }
        for (i, g) in self.groups.iter().enumerate() {
            g.check(&format!("group[{i}]"))?;
        }
        if let Some(p) = &self.quick {
            for (field, v) in [("quick.count", p.count), ("quick.time", p.time)] {
                if let Some(v) = v {
                    if !(v.is_finite() && v > 0.0) {
                        return Err(SpecError::field(field, "must be a number above zero"));
                    }
                }
            }
            if let Some(sizes) = &p.sizes {
                check_sizes("quick.sizes", sizes)?;
            }
        }
        Ok(())
    }

    /// The workload as the quick suite runs it: the `[quick]` profile applied
    /// (counts at least 1), profile removed.
    pub fn quick(&self) -> Workload {
        let mut w = self.clone();
        let Some(p) = w.quick.take() else { return w };
        let (c, t) = (p.count.unwrap_or(1.0), p.time.unwrap_or(1.0));
        w.grace = w.grace.scaled(t.max(0.2));
        for g in &mut w.groups {
            g.count = ((g.count as f64 * c).round() as u64).max(1);
            g.delay = g.delay.scaled(t);
            g.run_for = g.run_for.map(|d| d.scaled(t));
            if let Some(a) = &mut g.arrival {
                a.rate *= c / t;
            }
            if let Some(x) = &mut g.cancel {
                x.after = x.after.scaled(t);
            }
            if let Some(r) = &mut g.reset {
                r.every = r.every.scaled(t);
                r.until = r.until.scaled(t);
                r.delay = r.delay.map(|d| d.scaled(t));
            }
        }
        if let (Some(s), Some(sizes)) = (&mut w.sweep, p.sizes) {
            s.sizes = sizes;
        }
        if let Some(d) = &mut w.distributed {
            d.drain = ((d.drain as f64 * c).round() as u64).max(1);
            d.paced = ((d.paced as f64 * c).round() as u64).max(1);
            d.window = d.window.scaled(t);
        }
        if let Some(x) = &mut w.contention {
            x.pairs = ((x.pairs as f64 * c).round() as u64).max(1);
        }
        if let Some(cal) = &mut w.calendar {
            cal.schedules = ((cal.schedules as f64 * c).round() as u64).max(1);
            // Whole seconds: the window is a number of the schedules' seconds.
            let secs = (cal.run_for.0.as_secs_f64() * t).round().max(1.0);
            cal.run_for = Dur(Duration::from_secs(secs as u64));
        }
        w
    }

    /// What kind of run it is.
    pub fn kind(&self) -> WorkloadKind {
        if self.sweep.is_some() {
            WorkloadKind::Sweep
        } else if self.distributed.is_some() {
            WorkloadKind::Distributed
        } else if self.contention.is_some() {
            WorkloadKind::Contention
        } else if self.calendar.is_some() {
            WorkloadKind::Calendar
        } else {
            WorkloadKind::Timeline
        }
    }

    /// The figures the verdict ranks by (see [`Workload::verdict`]).
    pub fn verdict_metrics(&self) -> Vec<Metric> {
        if !self.verdict.is_empty() {
            return self.verdict.clone();
        }
        match self.kind() {
            WorkloadKind::Timeline | WorkloadKind::Calendar => vec![Metric::LatenessP99],
            WorkloadKind::Sweep => vec![Metric::ScheduleBatch],
            WorkloadKind::Distributed => vec![Metric::DrainJobsPerS, Metric::PacedP99],
            WorkloadKind::Contention => vec![Metric::ContendedPairsPerS, Metric::PairsPerS],
        }
    }

    /// Multiplies every count (and sweep size) by `f`, for `--size`.
    pub fn resized(&self, f: f64) -> Workload {
        let mut w = self.clone();
        for g in &mut w.groups {
            g.count = ((g.count as f64 * f).round() as u64).max(1);
            if let Some(a) = &mut g.arrival {
                a.rate *= f;
            }
        }
        if let Some(s) = &mut w.sweep {
            for n in &mut s.sizes {
                *n = ((*n as f64 * f).round() as u64).max(1);
            }
        }
        if let Some(d) = &mut w.distributed {
            d.drain = ((d.drain as f64 * f).round() as u64).max(1);
            d.paced = ((d.paced as f64 * f).round() as u64).max(1);
            d.window = d.window.scaled(f);
        }
        if let Some(x) = &mut w.contention {
            x.pairs = ((x.pairs as f64 * f).round() as u64).max(1);
        }
        if let Some(c) = &mut w.calendar {
            c.schedules = ((c.schedules as f64 * f).round() as u64).max(1);
        }
        w
    }

    /// Total timers over all groups.
    pub fn timers(&self) -> u64 {
        self.groups.iter().map(|g| g.count).sum()
    }

    /// One line per group (or the sweep) giving its effective parameters.
    pub fn summary(&self) -> Vec<String> {
        if let Some(c) = &self.contention {
            let threads: Vec<String> = c.threads.iter().map(u64::to_string).collect();
            return vec![
                format!(
                    "P = {} threads sharing one fresh subject, each {} schedule + cancel pairs: a one-shot timeout (delay {}) with a 16-byte \
                     closure (an id and an Arc of the thread's own connection), cancelled {} requests later (the last {} at the end); \
                     {} untimed pairs per thread first",
                    threads.join(", "),
                    format_count(c.pairs),
                    c.delay,
                    format_count(c.window),
                    format_count(c.window.min(c.pairs)),
                    format_count(c.warm.min(c.pairs)),
                ),
                "pairs/s: every thread's pairs / (last thread's end − the moment the last thread was ready) · caller cpu/pair: \
                 the calling threads' own CPU per pair · cpu/pair: the whole process's CPU (getrusage; Java: every thread's \
                 schedstat) from the start to 100 ms after the last thread's end, per pair: what the subject's own threads do \
                 counts · contended pairs/s: the least pairs/s at any P ≥ 2"
                    .to_owned(),
            ];
        }
        if let Some(c) = &self.calendar {
            let every = c.every.0.as_secs();
            return vec![
                format!(
                    "{} cron schedules in {}, schedule k firing every {every} s at second k mod {every} (about {:.0} fires/s), watched for {} \
                     from a common start; {} handler threads where a subject runs jobs on a pool",
                    format_count(c.schedules),
                    c.zone,
                    c.schedules as f64 / every.max(1) as f64,
                    c.run_for,
                    c.threads
                ),
                "lateness: fire − the wall-clock instant the expression names (an early fire counts as 0 and in `early`) · \
                 cpu_per_fire: the scheduler's processes over the window · store_cpu_per_fire: its database or Redis · \
                 memory_per_schedule: what it holds per schedule (heap, RSS, Redis memory or database relations) · \
                 schedule (batch): creating one schedule"
                    .to_owned(),
            ];
        }
        if let Some(d) = &self.distributed {
            return vec![
                format!(
                    "drain: {} no-op jobs already due, then the workers start; paced: {} no-op jobs due evenly over {} ({:.0} jobs/s); \
                     {} handler threads (BullMQ: concurrency) per worker process; {} shards",
                    format_count(d.drain),
                    format_count(d.paced),
                    d.window,
                    d.paced as f64 / (d.window.nanos() as f64 / 1e9),
                    d.threads,
                    d.shards
                ),
                "drain jobs/s: first start to last ack · paced p50–max: start − due (ms resolution; ours on Redis's clock, \
                 BullMQ's and Quartz's on the host's) · a fresh redis-server per measurement; Redis CPU and commands per job from INFO; \
                 on redis-1w also the claim-script ceiling and an idle worker's round trips · the Quartz cluster on a fresh \
                 PostgreSQL per measurement: its CPU (/proc), transactions and sessions waiting for a lock per job"
                    .to_owned(),
            ];
        }
        if let Some(s) = &self.sweep {
            let sizes: Vec<String> = s.sizes.iter().map(|n| format_count(*n)).collect();
            let reset = if s.reset { "reset each once, " } else { "" };
            return vec![format!(
                "batch loops over {} pending timers, delays {}: schedule all, {reset}cancel {:.0}% in random order",
                sizes.join(", "),
                s.delay,
                s.cancel * 100.0
            )];
        }
        self.groups
            .iter()
            .map(|g| {
                let mut line = format!(
                    "{}: {} × {:?}, delay {}",
                    g.name,
                    format_count(g.count),
                    g.kind,
                    g.delay
                );
                if g.anchor == Anchor::Start {
                    line.push_str(" from the start of the run");
                }
                if let Some(p) = g.period {
                    line.push_str(&format!(", period {p}"));
                }
                if let Some(r) = g.run_for {
                    line.push_str(&format!(", for {r}"));
                }
                if let Some(a) = &g.arrival {
                    line.push_str(&format!(", arriving at {:.0}/s ({:?})", a.rate, a.process));
                }
                if let Some(c) = &g.cancel {
                    line.push_str(&format!(
                        ", {:.1}% cancelled after {}",
                        c.fraction * 100.0,
                        c.after
                    ));
                }
                if let Some(r) = &g.reset {
                    line.push_str(&format!(", reset every {} until {}", r.every, r.until));
                }
                line
            })
            .collect()
    }
}

/// `1000000` → `1e6`, `30000` → `3e4`, `1234` → `1234`.
pub fn format_count(n: u64) -> String {
    if n >= 1000 && n.is_multiple_of(10u64.pow(n.ilog10())) {
        let exp = n.ilog10();
        let lead = n / 10u64.pow(exp);
        if lead == 1 {
            format!("1e{exp}")
        } else {
            format!("{lead}e{exp}")
        }
    } else {
        n.to_string()
    }
}

fn check_sizes(field: &str, sizes: &[u64]) -> Result<(), SpecError> {
    if sizes.is_empty() || sizes.contains(&0) {
        return Err(SpecError::field(
            field,
            "needs at least one size, each above zero",
        ));
    }
    if sizes.windows(2).any(|w| w[0] >= w[1]) {
        return Err(SpecError::field(field, "must be strictly ascending"));
    }
    Ok(())
}

impl Contention {
    fn check(&self) -> Result<(), SpecError> {
        let t = &self.threads;
        if t.is_empty() || t.contains(&0) || t.iter().any(|p| *p > MAX_THREADS) {
            return Err(SpecError::field(
                "contention.threads",
                format!("needs at least one thread count, each from 1 to {MAX_THREADS}"),
            ));
        }
        if t.windows(2).any(|w| w[0] >= w[1]) {
            return Err(SpecError::field(
                "contention.threads",
                "must be strictly ascending",
            ));
        }
        if self.pairs == 0 || self.window == 0 {
            return Err(SpecError::field(
                "contention",
                "pairs and window must be above zero",
            ));
        }
        self.delay.check("contention.delay")
    }
}

impl Calendar {
    fn check(&self) -> Result<(), SpecError> {
        let every = self.every.0;
        let secs = every.as_secs();
        if every.subsec_nanos() != 0 || secs == 0 || 60 % secs != 0 {
            return Err(SpecError::field(
                "calendar.every",
                "whole seconds dividing a minute (1s, 2s, 3s, 4s, 5s, 6s, 10s, 12s, 15s, 20s, 30s, 60s)",
            ));
        }
        if self.schedules == 0 || self.threads == 0 || self.run_for.0.is_zero() {
            return Err(SpecError::field(
                "calendar",
                "schedules, threads and run_for must be above zero",
            ));
        }
        let name_ok = !self.zone.is_empty()
            && self
                .zone
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c));
        if !name_ok {
            return Err(SpecError::field(
                "calendar.zone",
                "an IANA time zone name (UTC, Europe/Berlin)",
            ));
        }
        Ok(())
    }
}

impl Group {
    fn check(&self, at: &str) -> Result<(), SpecError> {
        if self.count == 0 {
            return Err(SpecError::field(
                format!("{at}.count"),
                "must be at least 1",
            ));
        }
        self.delay.check(&format!("{at}.delay"))?;
        if self.kind.is_periodic() {
            match self.period {
                None => {
                    return Err(SpecError::field(
                        format!("{at}.period"),
                        "a periodic group needs a period",
                    ))
                }
                Some(p) if p.0.is_zero() => {
                    return Err(SpecError::field(
                        format!("{at}.period"),
                        "must be above zero",
                    ))
                }
                _ => {}
            }
            if self.run_for.is_none() {
                return Err(SpecError::field(
                    format!("{at}.run_for"),
                    "a periodic group needs run_for",
                ));
            }
            if self.reset.is_some() {
                return Err(SpecError::field(
                    format!("{at}.reset"),
                    "resets are for one-shot groups",
                ));
            }
        } else {
            if self.period.is_some() {
                return Err(SpecError::field(
                    format!("{at}.period"),
                    "only periodic kinds take a period",
                ));
            }
            if self.run_for.is_some() {
                return Err(SpecError::field(
                    format!("{at}.run_for"),
                    "only periodic kinds take run_for",
                ));
            }
        }
        if let Some(a) = &self.arrival {
            if !(a.rate.is_finite() && a.rate > 0.0) {
                return Err(SpecError::field(
                    format!("{at}.arrival.rate"),
                    "must be a number above zero (timers per second)",
                ));
            }
        }
        if let Some(c) = &self.cancel {
            if !(0.0..=1.0).contains(&c.fraction) {
                return Err(SpecError::field(
                    format!("{at}.cancel.fraction"),
                    "must be within 0..=1",
                ));
            }
            c.after.check(&format!("{at}.cancel.after"))?;
        }
        if let Some(r) = &self.reset {
            r.every.check(&format!("{at}.reset.every"))?;
            if r.every.bound() == 0 {
                return Err(SpecError::field(
                    format!("{at}.reset.every"),
                    "heartbeat gaps must be above zero",
                ));
            }
            if let Some(d) = &r.delay {
                d.check(&format!("{at}.reset.delay"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const OK: &str = r#"
        name = "w"
        description = "d"
        seed = 7
        [[group]]
        name = "g"
        count = 100
        delay = { dist = "lognormal", median = "10ms", sigma = 0.5 }
        cancel = { fraction = 0.5, after = { dist = "exponential", mean = "1ms" } }
        [quick]
        count = 0.1
        time = 0.5
    "#;

    #[test]
    fn parses_and_applies_the_quick_profile() {
        let w = Workload::parse(OK).unwrap();
        let q = w.quick();
        assert_eq!(q.groups[0].count, 10);
        assert_eq!(
            q.groups[0].delay,
            Dist::Lognormal {
                median: Dur(Duration::from_millis(5)),
                sigma: 0.5
            }
        );
        assert!(q.quick.is_none());
    }

    fn err(text: &str) -> SpecError {
        Workload::parse(text).unwrap_err()
    }

    #[test]
    fn errors_name_the_field() {
        let e = err(&OK.replace("count = 100", "count = 0"));
        assert_eq!(e.field, "group[0].count");
        let e = err(&OK.replace("fraction = 0.5", "fraction = -1"));
        assert_eq!(e.field, "group[0].cancel.fraction");
        let e = err(&OK.replace("count = 100", "count = 100\nperiod = \"1s\""));
        assert_eq!(e.field, "group[0].period");
        let e = err(&OK.replace("count = 100", "count = 100\nkind = \"fixed-rate\""));
        assert_eq!(e.field, "group[0].period");
        // Parser errors carry the key in the message.
        let e = err(&OK.replace("count = 100", "cuont = 100"));
        assert!(e.message.contains("cuont"), "{e}");
        let e = err(&OK.replace("\"10ms\"", "\"10 parsecs\""));
        assert!(e.message.contains("unknown unit"), "{e}");
        assert!(e.message.contains("median"), "{e}");
        let e = err(&OK.replace("lognormal", "zipf"));
        assert!(e.message.contains("zipf"), "{e}");
        let e = err(&OK.replace("time = 0.5", "time = 0"));
        assert_eq!(e.field, "quick.time");
    }

    #[test]
    fn sweeps_and_distributed_workloads_are_checked() {
        let sweep = r#"
            name = "s"
            description = "d"
            seed = 1
            verdict = "cancel_batch"
            [sweep]
            sizes = [10, 100]
            delay = { dist = "fixed", value = "1h" }
            cancel = 0.5
            reset = false
        "#;
        let w = Workload::parse(sweep).unwrap();
        assert_eq!(w.kind(), WorkloadKind::Sweep);
        assert_eq!(w.verdict_metrics(), [Metric::CancelBatch]);
        let e = err(&sweep.replace("cancel = 0.5", "cancel = 1.5"));
        assert_eq!(e.field, "sweep.cancel");
        let e = err(&sweep.replace("cancel_batch", "speed"));
        assert!(e.message.contains("speed"), "{e}");

        let dist = r#"
            name = "d"
            description = "d"
            seed = 1
            [distributed]
            drain = 1000
            paced = 600
            window = "10s"
            [quick]
            count = 0.5
            time = 0.2
        "#;
        let w = Workload::parse(dist).unwrap();
        assert_eq!(w.kind(), WorkloadKind::Distributed);
        assert_eq!(
            w.verdict_metrics(),
            [Metric::DrainJobsPerS, Metric::PacedP99]
        );
        let q = w.quick().distributed.unwrap();
        assert_eq!(
            (q.drain, q.paced, q.window.nanos(), q.threads, q.shards),
            (500, 300, 2_000_000_000, 4, 8)
        );
        // The idle worker is watched as long at every size.
        assert_eq!(q.idle.nanos(), 5_000_000_000);
        let e = err(&dist.replace("drain = 1000", "drain = 0"));
        assert_eq!(e.field, "distributed");
        let e = err(&dist.replace("drain = 1000", "jobs = 1000"));
        assert!(e.message.contains("jobs"), "{e}");
        let both = format!(
            "{dist}\n[sweep]\nsizes = [1]\ndelay = {{ dist = \"fixed\", value = \"1h\" }}\n"
        );
        assert_eq!(err(&both).field, "sweep");
    }

    #[test]
    fn contention_workloads_are_checked_and_shrunk() {
        let c = r#"
            name = "c"
            description = "d"
            seed = 1
            [contention]
            threads = [1, 2, 4, 8]
            pairs = 1_000_000
            delay = { dist = "uniform", min = "10s", max = "30s" }
            [quick]
            count = 0.2
        "#;
        let w = Workload::parse(c).unwrap();
        assert_eq!(w.kind(), WorkloadKind::Contention);
        assert_eq!(
            w.verdict_metrics(),
            [Metric::ContendedPairsPerS, Metric::PairsPerS]
        );
        let x = w.contention.as_ref().unwrap();
        assert_eq!((x.window, x.warm), (1000, 20_000));
        assert_eq!(w.quick().contention.unwrap().pairs, 200_000);
        assert_eq!(w.resized(0.01).contention.unwrap().pairs, 10_000);
        assert!(w.summary()[0].starts_with("P = 1, 2, 4, 8 threads"));
        for (from, to, field) in [
            ("[1, 2, 4, 8]", "[2, 1]", "contention.threads"),
            ("[1, 2, 4, 8]", "[0, 1]", "contention.threads"),
            ("[1, 2, 4, 8]", "[1, 512]", "contention.threads"),
            ("[1, 2, 4, 8]", "[]", "contention.threads"),
            ("pairs = 1_000_000", "pairs = 0", "contention"),
            ("pairs = 1_000_000", "pairs = 1\nwindow = 0", "contention"),
        ] {
            assert_eq!(err(&c.replace(from, to)).field, field, "{to}");
        }
        let both =
            format!("{c}\n[sweep]\nsizes = [1]\ndelay = {{ dist = \"fixed\", value = \"1h\" }}\n");
        assert_eq!(err(&both).field, "sweep");
        // The Java harness reads the table from the JSON; other workloads
        // carry no `contention` key at all.
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(
            json["contention"]["threads"],
            serde_json::json!([1, 2, 4, 8])
        );
        let timeline = serde_json::to_value(Workload::parse(OK).unwrap()).unwrap();
        assert!(timeline.get("contention").is_none());
    }

    #[test]
    fn calendar_workloads_are_checked_and_shrunk_to_whole_seconds() {
        let cal = r#"
            name = "c"
            description = "d"
            seed = 1
            [calendar]
            schedules = 100_000
            every = "60s"
            run_for = "60s"
            [quick]
            count = 0.1
            time = 0.3333
        "#;
        let w = Workload::parse(cal).unwrap();
        assert_eq!(w.kind(), WorkloadKind::Calendar);
        assert_eq!(w.verdict_metrics(), [Metric::LatenessP99]);
        let c = w.calendar.as_ref().unwrap();
        assert_eq!((c.zone.as_str(), c.threads), ("UTC", 4));
        let q = w.quick().calendar.unwrap();
        assert_eq!((q.schedules, q.run_for.nanos()), (10_000, 20_000_000_000));
        assert_eq!(w.resized(0.5).calendar.unwrap().schedules, 50_000);
        assert!(w.summary()[0].contains("1667 fires/s"), "{:?}", w.summary());
        for (bad, field) in [
            ("every = \"60s\"", "every = \"7s\""),
            ("every = \"60s\"", "every = \"1.5s\""),
        ] {
            assert_eq!(err(&cal.replace(bad, field)).field, "calendar.every");
        }
        let e = err(&cal.replace(
            "run_for = \"60s\"",
            "run_for = \"60s\"\nzone = \"Mars; DROP\"",
        ));
        assert_eq!(e.field, "calendar.zone");
        let e = err(&cal.replace("schedules = 100_000", "schedules = 0"));
        assert_eq!(e.field, "calendar");
        let both = format!(
            "{cal}\n[sweep]\nsizes = [1]\ndelay = {{ dist = \"fixed\", value = \"1h\" }}\n"
        );
        assert_eq!(err(&both).field, "sweep");
    }

    #[test]
    fn durations_parse_and_print() {
        for (s, ns) in [
            ("250us", 250_000),
            ("1.5s", 1_500_000_000),
            ("2m", 120_000_000_000),
            ("7ns", 7),
        ] {
            let d: Dur = s.parse().unwrap();
            assert_eq!(d.nanos(), ns, "{s}");
            assert_eq!(d.to_string().parse::<Dur>().unwrap(), d);
        }
        assert!("10".parse::<Dur>().is_err());
        assert!("-1s".parse::<Dur>().is_err());
    }

    #[test]
    fn format_count_uses_powers_of_ten() {
        assert_eq!(format_count(1_000_000), "1e6");
        assert_eq!(format_count(30_000), "3e4");
        assert_eq!(format_count(1234), "1234");
        assert_eq!(format_count(10), "10");
    }
}
