//! What the workbench measures: every figure is a [`Metric`], which knows
//! its unit, which direction is better, and how to say what it means.
//!
//! Costs come in two kinds, and the names say which:
//!
//! - `*_call` (timelines): one call timed alone with two clock reads, on
//!   cold caches, less the measured cost of the clock reads. What one call
//!   costs when it happens on its own.
//! - `*_batch` (sweeps): a loop of calls timed as a whole by the calling
//!   thread's CPU clock, divided by the count. What a stream of calls costs,
//!   with independent cache misses overlapping as in a real caller's loop;
//!   on a quiet machine the same as wall time, on a shared one without the
//!   time slices lost to other processes.
//!
//! Neither counts work a scheduler defers to its own threads (an unlink on
//! the next tick, a purge): [`Metric::CpuPerTimer`] does, from the whole
//! process's CPU time.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Costs, lateness, memory.
    Lower,
    /// Throughput.
    Higher,
    /// A count or ratio that describes the run (how many fired) rather than
    /// ranks the subject.
    Neither,
}

/// The unit of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Unit {
    /// Nanoseconds per operation.
    #[serde(rename = "ns/op")]
    NsPerOp,
    /// Nanoseconds of CPU per timer.
    #[serde(rename = "ns/timer")]
    NsPerTimer,
    /// Microseconds.
    #[serde(rename = "µs")]
    Micros,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Millis,
    /// Nanoseconds.
    #[serde(rename = "ns")]
    Nanos,
    /// Bytes per pending timer.
    #[serde(rename = "B/timer")]
    BytesPerTimer,
    /// Fires (or jobs) per second.
    #[serde(rename = "fires/s")]
    PerSecond,
    /// A plain count.
    #[serde(rename = "count")]
    Count,
    /// A ratio (1 = as expected).
    #[serde(rename = "ratio")]
    Ratio,
    /// Milliseconds of CPU per second of wall time.
    #[serde(rename = "ms/s")]
    MillisPerSecond,
    /// Events (wake-ups) per second.
    #[serde(rename = "/s")]
    TimesPerSecond,
    /// Durable jobs per second.
    #[serde(rename = "jobs/s")]
    JobsPerSecond,
    /// Microseconds (of Redis CPU) per job.
    #[serde(rename = "µs/job")]
    MicrosPerJob,
    /// Redis commands per job.
    #[serde(rename = "calls/job")]
    CallsPerJob,
    /// Client round trips to Redis per job.
    #[serde(rename = "round trips/job")]
    RoundTripsPerJob,
    /// Client round trips to Redis per second.
    #[serde(rename = "round trips/s")]
    RoundTripsPerSecond,
    /// Schedule + cancel pairs per second (contention).
    #[serde(rename = "pairs/s")]
    PairsPerSecond,
    /// Nanoseconds (of CPU) per schedule + cancel pair (contention).
    #[serde(rename = "ns/pair")]
    NsPerPair,
    /// Database transactions per job.
    #[serde(rename = "transactions/job")]
    TransactionsPerJob,
    /// Database sessions (a mean over samples).
    #[serde(rename = "sessions")]
    Sessions,
    /// Microseconds of CPU per fire.
    #[serde(rename = "µs/fire")]
    MicrosPerFire,
    /// Bytes per calendar schedule.
    #[serde(rename = "B/schedule")]
    BytesPerSchedule,
}

impl Unit {
    /// How the unit is written.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns/op",
            Unit::NsPerTimer => "ns/timer",
            Unit::Micros => "µs",
            Unit::Millis => "ms",
            Unit::Nanos => "ns",
            Unit::BytesPerTimer => "B/timer",
            Unit::PerSecond => "fires/s",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
            Unit::MillisPerSecond => "ms/s",
            Unit::TimesPerSecond => "/s",
            Unit::JobsPerSecond => "jobs/s",
            Unit::MicrosPerJob => "µs/job",
            Unit::CallsPerJob => "calls/job",
            Unit::RoundTripsPerJob => "round trips/job",
            Unit::RoundTripsPerSecond => "round trips/s",
            Unit::PairsPerSecond => "pairs/s",
            Unit::NsPerPair => "ns/pair",
            Unit::TransactionsPerJob => "transactions/job",
            Unit::Sessions => "sessions",
            Unit::MicrosPerFire => "µs/fire",
            Unit::BytesPerSchedule => "B/schedule",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! metrics {
    ($($(#[$doc:meta])* $v:ident = $name:literal, $unit:ident, $better:ident;)*) => {
        /// A measured figure. Serialized as its name (`"lateness_p50"`), the
        /// form `results.json` and the Java harness use.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Metric {
            $($(#[$doc])* #[serde(rename = $name)] $v,)*
        }

        impl Metric {
            /// Every metric, in report order.
            pub const ALL: &'static [Metric] = &[$(Metric::$v),*];

            /// Its name in `results.json`.
            pub fn name(self) -> &'static str {
                match self { $(Metric::$v => $name,)* }
            }

            /// Its unit.
            pub fn unit(self) -> Unit {
                match self { $(Metric::$v => Unit::$unit,)* }
            }

            /// Which way is better.
            pub fn better(self) -> Better {
                match self { $(Metric::$v => Better::$better,)* }
            }
        }
    };
}

metrics! {
    /// One schedule timed alone (timeline), ns.
    ScheduleCall = "schedule_call", NsPerOp, Lower;
    /// One cancel timed alone (timeline), ns: a late one too.
    CancelCall = "cancel_call", NsPerOp, Lower;
    /// One reset timed alone (timeline), ns.
    ResetCall = "reset_call", NsPerOp, Lower;
    /// A loop of schedules / the count (sweep; the caller's CPU time), ns.
    ScheduleBatch = "schedule_batch", NsPerOp, Lower;
    /// A loop of cancels in random order / the count (sweep), ns.
    CancelBatch = "cancel_batch", NsPerOp, Lower;
    /// A loop of resets in random order / the count (sweep), ns.
    ResetBatch = "reset_batch", NsPerOp, Lower;
    /// CPU time of the whole process (the caller and every thread of the
    /// subject) per timer scheduled, ns: deferred work counts.
    CpuPerTimer = "cpu_per_timer", NsPerTimer, Lower;
    /// Resident memory per pending timer, bytes, measured in a fresh process.
    Memory = "memory", BytesPerTimer, Lower;
    /// Lateness p50: fire time − the deadline the subject's API was given, µs.
    LatenessP50 = "lateness_p50", Micros, Lower;
    /// Lateness p90, µs.
    LatenessP90 = "lateness_p90", Micros, Lower;
    /// Lateness p99, µs.
    LatenessP99 = "lateness_p99", Micros, Lower;
    /// Lateness p99.9, µs.
    LatenessP999 = "lateness_p99.9", Micros, Lower;
    /// Largest lateness, µs.
    LatenessMax = "lateness_max", Micros, Lower;
    /// The exact mean lateness of the one-shots, µs: for the cross-check
    /// with the subject's own ([`Metric::OwnLatenessMean`]).
    LatenessMean = "lateness_mean", Micros, Neither;
    /// The mean lateness the subject measured itself (this crate's
    /// schedulers: `Metrics::lateness`), µs, on one-shot workloads.
    OwnLatenessMean = "own_lateness_mean", Micros, Neither;
    /// The subject's own lateness p50, µs.
    OwnLatenessP50 = "own_lateness_p50", Micros, Neither;
    /// The subject's own lateness p99, µs.
    OwnLatenessP99 = "own_lateness_p99", Micros, Neither;
    /// The workbench's mean lateness minus the subject's own, ns: what
    /// separates the two measurements of the same runs (the workbench reads
    /// the deadline before the schedule call and the fire time inside the
    /// task; the scheduler reads both inside, and this crate's count their
    /// deadlines from the CPU's counter, some tens of ns later than a
    /// reading of the clock).
    OwnLatenessGap = "own_lateness_gap", Nanos, Neither;
    /// Runs the subject counted minus one-shots the workbench saw fire
    /// (and did not cancel): 0 when both measured the same runs.
    OwnLatenessRunsGap = "own_lateness_runs_gap", Count, Neither;
    /// Periodic start jitter p50: |start − ideal start|, µs.
    JitterP50 = "jitter_p50", Micros, Lower;
    /// Jitter p99, µs.
    JitterP99 = "jitter_p99", Micros, Lower;
    /// Jitter p99.9, µs.
    JitterP999 = "jitter_p99.9", Micros, Lower;
    /// Largest jitter, µs.
    JitterMax = "jitter_max", Micros, Lower;
    /// Mean over periodic tasks of |last start − its nominal time|, ms.
    Drift = "drift", Millis, Lower;
    /// One-shot fires per second of the firing phase (first to last fire).
    FiresPerS = "fires_per_s", PerSecond, Higher;
    /// One-shot timers that fired.
    Fired = "fired", Count, Neither;
    /// Timers that should have fired but had not by the end of the grace
    /// period: a correct scheduler has 0, and a repeat with any is not
    /// folded into a median.
    Missed = "missed", Count, Lower;
    /// Fires before their deadline.
    Early = "early", Count, Lower;
    /// Cancels that came too late (the timer had fired).
    CancelLate = "cancel_late", Count, Neither;
    /// Resets that came too late.
    ResetLate = "reset_late", Count, Neither;
    /// Runs of periodic timers.
    Runs = "runs", Count, Neither;
    /// Periodic runs counted, as a fraction of the nominal count.
    RunsRatio = "runs_ratio", Ratio, Neither;
    /// CPU time of the whole process during the run, ms.
    Cpu = "cpu", Millis, Lower;
    /// CPU time of the process minus the thread that drives the workload:
    /// what the subject's own threads burned, ms.
    CpuBackground = "cpu_background", Millis, Lower;
    /// Times per second the subject's threads were switched in over the
    /// whole run (context switches of every thread but the application's,
    /// from /proc, as [`Metric::WakeupsPerS`] counts them over a quiet
    /// stretch; the Java harness counts every JVM thread but its driver's):
    /// the wake-ups that much of the background CPU pays for. A subject
    /// with no thread of its own (one the application polls) has none.
    RunWakeupsPerS = "run_wakeups_per_s", TimesPerSecond, Lower;
    /// Background CPU per second over the longest stretch of a timeline
    /// with no event (a second or more), ms/s: what the subject's threads
    /// cost while it only holds timers.
    CpuBackgroundPerS = "cpu_background_per_s", MillisPerSecond, Lower;
    /// Times per second the subject's threads were switched in over that
    /// quiet stretch (context switches of every thread but the
    /// application's, from /proc): how often it wakes up while idle.
    WakeupsPerS = "wakeups_per_s", TimesPerSecond, Lower;
    /// The measured cost of two clock reads around an empty operation, ns:
    /// subtracted from every `*_call` cost, and reported.
    TimingOverhead = "timing_overhead", Nanos, Neither;
    /// Durable jobs (distributed workload): a backlog of jobs already due,
    /// drained by the workers, jobs/s from the first start to the last ack.
    /// Capacity.
    DrainJobsPerS = "drain_jobs_per_s", JobsPerSecond, Higher;
    /// Durable jobs due evenly over a window at a rate below capacity:
    /// lateness p50, start − due (millisecond resolution), µs.
    PacedP50 = "paced_p50", Micros, Lower;
    /// Paced lateness p90, µs.
    PacedP90 = "paced_p90", Micros, Lower;
    /// Paced lateness p99, µs.
    PacedP99 = "paced_p99", Micros, Lower;
    /// Largest paced lateness, µs.
    PacedMax = "paced_max", Micros, Lower;
    /// Redis's CPU time (`INFO cpu`) per job while draining, µs.
    RedisCpuDrain = "redis_cpu_per_job_drain", MicrosPerJob, Lower;
    /// Redis's CPU time per job at the paced load, µs.
    RedisCpuPaced = "redis_cpu_per_job_paced", MicrosPerJob, Lower;
    /// Redis commands per job while draining (`INFO commandstats`, which
    /// counts the commands scripts run too).
    RedisCallsDrain = "redis_calls_per_job_drain", CallsPerJob, Lower;
    /// Redis commands per job at the paced load.
    RedisCallsPaced = "redis_calls_per_job_paced", CallsPerJob, Lower;
    /// The worker processes' round trips to Redis per job while draining.
    RoundTripsDrain = "round_trips_per_job_drain", RoundTripsPerJob, Lower;
    /// The worker processes' round trips per job at the paced load.
    RoundTripsPaced = "round_trips_per_job_paced", RoundTripsPerJob, Lower;
    /// Jobs the claim script alone hands out per second of Redis CPU on the
    /// same Redis: the most one Redis core can give the workers, a yardstick
    /// for [`Metric::DrainJobsPerS`] rather than a figure to rank by.
    ClaimCeiling = "claim_ceiling", JobsPerSecond, Neither;
    /// An idle worker's round trips per second per shard (jobs pending an
    /// hour ahead, nothing due).
    IdleRoundTrips = "idle_round_trips_per_s_per_shard", RoundTripsPerSecond, Lower;
    /// Contention, at P threads sharing one subject: schedule + cancel
    /// pairs per second, all threads together, from the moment the last
    /// thread was ready to the last thread's end.
    PairsPerS = "pairs_per_s", PairsPerSecond, Higher;
    /// Contention: the least [`Metric::PairsPerS`] at any P of 2 or more
    /// (at P = 1 if only one thread ran): what a server whose I/O threads
    /// share the subject can count on, however many there are. A subject
    /// that is fast alone but collapses when shared scores its collapse.
    ContendedPairsPerS = "contended_pairs_per_s", PairsPerSecond, Higher;
    /// Contention, at P threads: the calling threads' own CPU time per
    /// pair (their CPU clocks over their loops), ns: spinning and lock
    /// hand-offs included; time waiting for a core or asleep on a lock not.
    CallerCpuPerPair = "caller_cpu_per_pair", NsPerPair, Lower;
    /// Contention, at P threads: the whole process's CPU time per pair, ns
    /// (the callers and every thread of the subject, until a settling
    /// pause after the last thread's end): work deferred to the subject's
    /// own threads counts.
    CpuPerPair = "cpu_per_pair", NsPerPair, Lower;
    /// Contention, at P threads: schedule + cancel pairs done (every cancel
    /// stopped its timer; a run where one did not fails).
    Pairs = "pairs", Count, Neither;
    /// Contention, at P threads: the calling threads' CPU time over the
    /// wall time, how many of them ran at once on average (at most P and
    /// the cores; about 1 when they took turns, on a loaded machine or
    /// behind a lock that lets one thread run on while the others sleep).
    Parallelism = "parallelism", Ratio, Neither;
    /// The database's CPU time per job while draining (a Quartz cluster:
    /// PostgreSQL's processes, from /proc), µs.
    DbCpuDrain = "db_cpu_per_job_drain", MicrosPerJob, Lower;
    /// The database's CPU time per job at the paced load, µs.
    DbCpuPaced = "db_cpu_per_job_paced", MicrosPerJob, Lower;
    /// Database transactions per job while draining (`pg_stat_database`).
    DbTransactionsDrain = "db_transactions_per_job_drain", TransactionsPerJob, Lower;
    /// Database transactions per job at the paced load.
    DbTransactionsPaced = "db_transactions_per_job_paced", TransactionsPerJob, Lower;
    /// Database sessions waiting for a lock while draining: the mean of
    /// `pg_stat_activity` sampled every 10 ms. Nodes that serialize on a
    /// lock show here.
    DbLockWaitersDrain = "db_lock_waiters_drain", Sessions, Lower;
    /// Database sessions waiting for a lock at the paced load.
    DbLockWaitersPaced = "db_lock_waiters_paced", Sessions, Lower;
    /// Calendar schedules: CPU time of the scheduler's own processes (the
    /// JVM, the worker processes, the workbench for an in-process subject)
    /// over the watched window, per fire, µs.
    CpuPerFire = "cpu_per_fire", MicrosPerFire, Lower;
    /// Calendar schedules: CPU time of the store they live in (Redis,
    /// PostgreSQL) over the window, per fire, µs.
    StoreCpuPerFire = "store_cpu_per_fire", MicrosPerFire, Lower;
    /// Calendar schedules: what the scheduler holds per schedule (heap,
    /// resident memory, Redis memory or database relations), bytes.
    MemoryPerSchedule = "memory_per_schedule", BytesPerSchedule, Lower;
    /// Runs beyond one per intended instant (a calendar fire or a job run
    /// twice): 0 for exactly-once.
    Duplicates = "duplicates", Count, Lower;
}

impl Metric {
    /// Lateness percentiles, in order, with the quantile each takes (1.0:
    /// the maximum).
    pub const LATENESS: [(Metric, f64); 5] = [
        (Metric::LatenessP50, 0.5),
        (Metric::LatenessP90, 0.9),
        (Metric::LatenessP99, 0.99),
        (Metric::LatenessP999, 0.999),
        (Metric::LatenessMax, 1.0),
    ];

    /// Paced lateness percentiles of the distributed workload, in order,
    /// with the quantile each takes (1.0: the maximum).
    pub const PACED: [(Metric, f64); 4] = [
        (Metric::PacedP50, 0.5),
        (Metric::PacedP90, 0.9),
        (Metric::PacedP99, 0.99),
        (Metric::PacedMax, 1.0),
    ];

    /// Jitter percentiles, in order, with their quantiles.
    pub const JITTER: [(Metric, f64); 4] = [
        (Metric::JitterP50, 0.5),
        (Metric::JitterP99, 0.99),
        (Metric::JitterP999, 0.999),
        (Metric::JitterMax, 1.0),
    ];

    /// True if this metric's size is a thread count (contention), not a
    /// pending count (sweeps).
    pub fn sized_by_threads(self) -> bool {
        matches!(
            self,
            Metric::PairsPerS
                | Metric::CallerCpuPerPair
                | Metric::CpuPerPair
                | Metric::Pairs
                | Metric::Parallelism
        )
    }

    /// How a figure's size reads after its label: `@1e6` (pending timers)
    /// or `@P=8` (threads).
    pub fn size_label(self, size: u64) -> String {
        if self.sized_by_threads() {
            format!("@P={size}")
        } else {
            format!("@{}", crate::spec::format_count(size))
        }
    }

    /// True if a lower value is better.
    pub fn lower_is_better(self) -> bool {
        self.better() != Better::Higher
    }

    /// Whether the metric ranks subjects (costs, lateness, throughput)
    /// rather than describes the run.
    pub fn ranks(self) -> bool {
        self.better() != Better::Neither && !matches!(self, Metric::Missed | Metric::Early)
    }

    /// A short label for tables: `schedule (call)`, `lateness p99`,
    /// `drain jobs/s`.
    pub fn label(self) -> String {
        let n = self.name();
        // `…_per_s` (not `…_per_shard`) reads `…/s`.
        let n = match n.find("_per_s") {
            Some(i) if matches!(n.as_bytes().get(i + 6), None | Some(b'_')) => {
                format!("{}/s{}", &n[..i], &n[i + 6..])
            }
            _ => n.to_owned(),
        };
        match n.rsplit_once('_') {
            Some((op, "call")) => format!("{op} (per call)"),
            Some((op, "batch")) => format!("{op} (batch)"),
            Some((what, p)) if p.starts_with('p') || p == "max" => {
                format!("{} {p}", what.replace('_', " "))
            }
            _ => n.replace('_', " "),
        }
    }

    /// `better` of `a` and `b` (by this metric's direction; magnitudes
    /// never have a sign, so plain comparison is right).
    pub fn is_better(self, a: f64, b: f64) -> bool {
        match self.better() {
            Better::Higher => a > b,
            _ => a < b,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Serde for a list of metrics written as one name or a list of names
/// (`verdict = "lateness_p99"`, `verdict = ["drain_jobs_per_s", "paced_p99"]`);
/// written back as one name when there is one.
pub mod one_or_many {
    use std::fmt;

    use serde::de::{self, IntoDeserializer, SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Metric;

    /// Writes one metric as its name, several as a list.
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(v: &[Metric], s: S) -> Result<S::Ok, S::Error> {
        match v {
            [one] => one.serialize(s),
            many => many.serialize(s),
        }
    }

    /// Reads a metric's name or a list of names.
    ///
    /// # Errors
    ///
    /// An unknown name (the message names it).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Metric>, D::Error> {
        struct OneOrMany;

        impl<'de> Visitor<'de> for OneOrMany {
            type Value = Vec<Metric>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a metric's name or a list of names")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<Metric>, E> {
                Metric::deserialize(v.into_deserializer()).map(|m| vec![m])
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Metric>, A::Error> {
                let mut out = Vec::new();
                while let Some(m) = seq.next_element()? {
                    out.push(m);
                }
                Ok(out)
            }
        }

        d.deserialize_any(OneOrMany)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn names_round_trip_and_carry_their_unit() {
        for m in Metric::ALL {
            let json = serde_json::to_string(m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<Metric>(&json).unwrap(), *m);
            let u = serde_json::to_string(&m.unit()).unwrap();
            assert_eq!(u, format!("\"{}\"", m.unit().as_str()));
        }
        assert_eq!(Metric::LatenessP999.name(), "lateness_p99.9");
        assert_eq!(Metric::ScheduleBatch.label(), "schedule (batch)");
        assert_eq!(Metric::LatenessP99.label(), "lateness p99");
        assert_eq!(Metric::DrainJobsPerS.label(), "drain jobs/s");
        assert_eq!(Metric::PacedP99.label(), "paced p99");
        assert_eq!(
            Metric::IdleRoundTrips.label(),
            "idle round trips/s per shard"
        );
        assert_eq!(Metric::DrainJobsPerS.unit().as_str(), "jobs/s");
        assert_eq!(Metric::PairsPerS.label(), "pairs/s");
        assert_eq!(Metric::ContendedPairsPerS.label(), "contended pairs/s");
        assert_eq!(Metric::CpuPerPair.label(), "cpu per pair");
        assert_eq!(Metric::PairsPerS.size_label(8), "@P=8");
        assert_eq!(Metric::Memory.size_label(1_000_000), "@1e6");
        assert!(Metric::PairsPerS.is_better(2e6, 1e6));
        assert!(!Metric::FiresPerS.lower_is_better());
        assert!(Metric::FiresPerS.is_better(2.0, 1.0));
        assert!(Metric::Drift.is_better(0.01, 0.03));
        assert!(serde_json::from_str::<Metric>("\"schedule\"").is_err());
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Judged {
        #[serde(with = "one_or_many")]
        verdict: Vec<Metric>,
    }

    #[test]
    fn a_verdict_is_one_metric_or_a_list() {
        let one: Judged = serde_json::from_str(r#"{"verdict":"lateness_p99"}"#).unwrap();
        assert_eq!(one.verdict, [Metric::LatenessP99]);
        assert_eq!(
            serde_json::to_string(&one).unwrap(),
            r#"{"verdict":"lateness_p99"}"#
        );
        let two: Judged =
            serde_json::from_str(r#"{"verdict":["drain_jobs_per_s","paced_p99"]}"#).unwrap();
        assert_eq!(two.verdict, [Metric::DrainJobsPerS, Metric::PacedP99]);
        let back: Judged = serde_json::from_str(&serde_json::to_string(&two).unwrap()).unwrap();
        assert_eq!(back, two);
        let e = serde_json::from_str::<Judged>(r#"{"verdict":["speed"]}"#).unwrap_err();
        assert!(e.to_string().contains("speed"), "{e}");
    }
}
