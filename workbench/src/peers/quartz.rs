//! Quartz clustered on PostgreSQL: the distributed workload's third
//! implementation beside ours and BullMQ (`quartz-pg-1w`, `-2w`, `-4w`: 1,
//! 2 and 4 scheduler JVMs), and a subject of the `calendar` workload
//! (`quartz-pg-2w`).
//!
//! Every measurement gets a fresh PostgreSQL ([`LocalPostgres`]: `initdb`,
//! a free loopback port) and one driver JVM (`java peers.QuartzCluster`,
//! `workbench/java/QuartzCluster.java`, compiled with the other Java peers,
//! [`super::java::harness`]) that creates Quartz's schema from its own
//! `tables_postgres.sql`, creates the jobs through a client scheduler, starts
//! the nodes (child JVMs: `JobStoreTX`, `PostgreSQLDelegate`,
//! `isClustered=true`, Quartz's shipped defaults otherwise, a pool of the
//! workload's threads) and prints one line: drain jobs/s, paced lateness
//! (start − due, ms), and the database's cost per job: its CPU (the
//! postmaster and its children, from `/proc`), its transactions
//! (`pg_stat_database`) and the mean number of sessions waiting for a lock
//! (`pg_stat_activity` sampled every 10 ms). The seed (003) says a Quartz
//! cluster stalls on its database locks when jobs are many and frequent:
//! [`notes`] says what these figures show.
//!
//! No PostgreSQL, JVM, Quartz or JDBC jars: the subjects are skipped with
//! one note (`tests/quartz.rs` fails instead under CI).
//!
//! Knob (environment): `WORKBENCH_QUARTZ_SET="key=value;key=value"`:
//! Quartz properties set on every node on top of the defaults, to measure a
//! setting users change (`org.quartz.jobStore.acquireTriggersWithinLock=true`,
//! `org.quartz.scheduler.batchTriggerAcquisitionMaxCount=10`).

use std::process::Command;
use std::sync::Arc;

use crate::calendar::CalendarRun;
use crate::distributed::bench::BadReport;
use crate::peers::java::{harness, Harness};
use crate::postgres::{self, LocalPostgres};
use crate::record::{Measurement, Metric, Results, SubjectKind};
use crate::runner::{RunContext, RunError, Runner};
use crate::runner::{Subject, Unavailable};
use crate::spec::{Workload, WorkloadKind};

/// The subjects: (nodes, name, the workloads each runs). The calendar
/// workload runs on two nodes.
pub const SUBJECTS: [(u64, &str, &[WorkloadKind]); 3] = [
    (1, "quartz-pg-1w", &[WorkloadKind::Distributed]),
    (
        2,
        "quartz-pg-2w",
        &[WorkloadKind::Distributed, WorkloadKind::Calendar],
    ),
    (4, "quartz-pg-4w", &[WorkloadKind::Distributed]),
];

const ABOUT: [&str; 3] = [
    "Quartz 2.3.2 clustered on a fresh local PostgreSQL 15: 1 scheduler JVM (node), JobStoreTX + PostgreSQLDelegate, \
     isClustered, Quartz's shipped defaults otherwise (one trigger acquired at a time, c3p0 pool of 10, misfire threshold 60 s), \
     a pool of the workload's threads; jobs created by a client scheduler before the nodes start",
    "Quartz 2.3.2 clustered on a fresh local PostgreSQL 15: 2 scheduler JVMs (nodes), JobStoreTX + PostgreSQLDelegate, \
     isClustered, Quartz's shipped defaults otherwise (one trigger acquired at a time, c3p0 pool of 10, misfire threshold 60 s), \
     a pool of the workload's threads; jobs (calendar: CronTriggers) created by a client scheduler before the nodes start",
    "Quartz 2.3.2 clustered on a fresh local PostgreSQL 15: 4 scheduler JVMs (nodes), JobStoreTX + PostgreSQLDelegate, \
     isClustered, Quartz's shipped defaults otherwise (one trigger acquired at a time, c3p0 pool of 10, misfire threshold 60 s), \
     a pool of the workload's threads; jobs created by a client scheduler before the nodes start",
];

/// The cluster's subjects, for [`crate::peers::all`].
pub fn subjects() -> Vec<Subject> {
    SUBJECTS
        .iter()
        .zip(ABOUT)
        .map(|(&(nodes, name, workloads), about)| Subject {
            name,
            kind: SubjectKind::Peer,
            about,
            workloads,
            runner: Arc::new(move || {
                let harness = available()?;
                Ok(Box::new(Cluster { harness, nodes }) as Box<dyn Runner>)
            }),
            timers: None,
        })
        .collect()
}

/// The compiled harness with Quartz and the JDBC jars, and PostgreSQL.
///
/// # Errors
///
/// [`Unavailable`]: what is missing and the Debian package that has it.
pub fn available() -> Result<&'static Harness, Unavailable> {
    let h = harness()?;
    h.toolchain.quartz.clone()?;
    h.toolchain.jdbc.clone()?;
    postgres::find_binaries()
        .ok_or_else(|| Unavailable(postgres::PgError::NotInstalled.to_string()))?;
    Ok(h)
}

/// The driver's JVM flags: it only creates jobs and reads the nodes' lines.
const DRIVER_OPTS: &[&str] = &["-XX:+UseG1GC", "-Xmx1g"];

/// Runs `java peers.QuartzCluster MODE --url … --pg-pid … ARGS` against
/// `pg` and returns the last JSON line it printed.
fn driver(
    h: &Harness,
    pg: &LocalPostgres,
    mode: &str,
    args: &[String],
) -> Result<String, RunError> {
    let out = Command::new(&h.toolchain.java)
        .args(DRIVER_OPTS)
        .arg("-cp")
        .arg(h.classpath())
        .args(["peers.QuartzCluster", mode, "--url", &pg.jdbc_url()])
        .args(["--pg-pid", &pg.pid().to_string()])
        .args(
            std::env::var("WORKBENCH_QUARTZ_SET")
                .ok()
                .filter(|v| !v.trim().is_empty())
                .map(|v| vec!["--set".to_owned(), v])
                .unwrap_or_default(),
        )
        .args(args)
        .output()
        .map_err(|e| RunError::Child(format!("running {}: {e}", h.toolchain.java.display())))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let tail: Vec<&str> = err.lines().filter(|l| !l.starts_with('\t')).collect();
        return Err(RunError::Child(format!(
            "the Quartz cluster's driver failed ({}): {}",
            out.status,
            tail[tail.len().saturating_sub(4)..].join(" | ")
        )));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .rfind(|l| l.starts_with('{'))
        .map(str::to_owned)
        .ok_or_else(|| RunError::Child("the Quartz cluster's driver printed no result".into()))
}

/// One measurement of the distributed workload's shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bench {
    /// `drain` (all due, then the nodes start) or `paced` (due evenly over
    /// `window_ms`).
    pub drain: bool,
    /// Scheduler JVMs.
    pub nodes: u64,
    /// Jobs.
    pub jobs: u64,
    /// The paced window, ms.
    pub window_ms: u64,
    /// Pool threads per node.
    pub threads: u64,
    /// Every run also inserts a row into `workbench_runs(job, node)`.
    pub record: bool,
}

impl Bench {
    /// Runs it against `pg` (a fresh server: the driver creates the schema).
    ///
    /// # Errors
    ///
    /// The driver failed or printed nonsense.
    pub fn run(&self, h: &Harness, pg: &LocalPostgres) -> Result<Vec<Measurement>, RunError> {
        let mut args = vec![
            "--shape".to_owned(),
            if self.drain { "drain" } else { "paced" }.to_owned(),
            "--workers".to_owned(),
            self.nodes.to_string(),
            "--jobs".to_owned(),
            self.jobs.to_string(),
            "--threads".to_owned(),
            self.threads.to_string(),
            "--window-ms".to_owned(),
            self.window_ms.to_string(),
        ];
        if self.record {
            args.push("--record".to_owned());
        }
        Ok(parse_bench(&driver(h, pg, "bench", &args)?)?)
    }
}

/// Parses a line of `QuartzCluster bench`: drain jobs/s or paced lateness,
/// the database's CPU, transactions and lock waiters per job, the jobs that
/// never ran ([`Metric::Missed`]) and those that ran twice
/// ([`Metric::Duplicates`]).
///
/// # Errors
///
/// [`BadReport`], naming the line and what it lacks.
pub fn parse_bench(line: &str) -> Result<Vec<Measurement>, BadReport> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|source| BadReport::Json {
        line: line.to_owned(),
        source,
    })?;
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(&v, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| BadReport::Lacks {
                field: path.join("."),
                line: line.to_owned(),
            })
    };
    let drain = match v.get("shape").and_then(serde_json::Value::as_str) {
        Some("drain") => true,
        Some("paced") => false,
        other => {
            return Err(BadReport::Shape {
                shape: other.unwrap_or("").to_owned(),
                line: line.to_owned(),
            })
        }
    };
    let m = Measurement::new;
    let (cpu, tx, waiters) = if drain {
        (
            Metric::DbCpuDrain,
            Metric::DbTransactionsDrain,
            Metric::DbLockWaitersDrain,
        )
    } else {
        (
            Metric::DbCpuPaced,
            Metric::DbTransactionsPaced,
            Metric::DbLockWaitersPaced,
        )
    };
    let mut out = vec![
        m(cpu, field(&["db", "cpu_us_per_job"])?),
        m(tx, field(&["db", "transactions_per_job"])?),
        m(waiters, field(&["db", "lock_waiters"])?),
    ];
    if drain {
        out.push(m(Metric::DrainJobsPerS, field(&["jobs_per_sec"])?));
    } else {
        for ((metric, _), key) in Metric::PACED.iter().zip(["p50", "p90", "p99", "max"]) {
            out.push(m(*metric, field(&["lateness_ms", key])? * 1000.0));
        }
    }
    let (jobs, runs, distinct) = (field(&["jobs"])?, field(&["runs"])?, field(&["distinct"])?);
    out.push(m(Metric::Missed, (jobs - distinct).max(0.0)));
    out.push(m(Metric::Duplicates, (runs - distinct).max(0.0)));
    Ok(out)
}

/// One repeat's figures from its shapes: the counts summed (one sample each).
fn one_repeat(shapes: Vec<Vec<Measurement>>) -> Vec<Measurement> {
    let mut counts = [(Metric::Missed, 0.0), (Metric::Duplicates, 0.0)];
    let mut out = Vec::new();
    for m in shapes.into_iter().flatten() {
        match counts.iter_mut().find(|(c, _)| *c == m.metric) {
            Some((_, n)) => *n += m.value,
            None => out.push(m),
        }
    }
    out.extend(counts.map(|(c, n)| Measurement::new(c, n)));
    out
}

/// Runs calendar workload `w` on a cluster of `nodes` against `pg`.
///
/// # Errors
///
/// The workload is not a calendar one, or the driver failed.
pub fn calendar(
    h: &Harness,
    pg: &LocalPostgres,
    w: &Workload,
    nodes: u64,
) -> Result<CalendarRun, RunError> {
    let c = crate::calendar::section(w)?;
    let args: Vec<String> = [
        ("--workers", nodes.to_string()),
        ("--threads", c.threads.to_string()),
        ("--schedules", c.schedules.to_string()),
        ("--every-s", c.every.0.as_secs().to_string()),
        ("--run-for-ms", c.run_for.0.as_millis().to_string()),
        ("--grace-ms", w.grace.0.as_millis().to_string()),
        ("--zone", c.zone.clone()),
    ]
    .into_iter()
    .flat_map(|(k, v)| [k.to_owned(), v])
    .collect();
    let line = driver(h, pg, "calendar", &args)?;
    serde_json::from_str(&line).map_err(|e| {
        RunError::Child(format!(
            "the Quartz cluster's calendar report ({e}): {}",
            crate::calendar::head(&line)
        ))
    })
}

/// Runs the standalone calibration (`java peers.QuartzCalibrate WORKLOAD
/// ARGS`, `workbench/java/QuartzCalibrate.java`: the in-memory peer's
/// set-up measured by the independent harness's definitions, none of the
/// workbench's code) in a fresh JVM with the Java peers' flags, and returns
/// its JSON line.
///
/// # Errors
///
/// Quartz or a JVM is missing, or the run failed (its stderr).
pub fn calibrate(workload: &str, args: &[String]) -> Result<serde_json::Value, Unavailable> {
    let h = harness()?;
    h.toolchain.quartz.clone()?;
    let out = Command::new(&h.toolchain.java)
        .args(super::java::JVM_OPTS)
        .arg("-cp")
        .arg(h.classpath())
        .args(["peers.QuartzCalibrate", workload])
        .args(args)
        .output()
        .map_err(|e| Unavailable(format!("running {}: {e}", h.toolchain.java.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(Unavailable(format!(
            "QuartzCalibrate {workload} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" | ")
        )));
    }
    let line = text
        .lines()
        .rfind(|l| l.starts_with('{'))
        .unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get(workload).cloned())
        .ok_or_else(|| Unavailable(format!("QuartzCalibrate {workload} printed {text:?}")))
}

fn start_postgres() -> Result<LocalPostgres, RunError> {
    LocalPostgres::start().map_err(|e| RunError::Child(e.to_string()))
}

/// One cluster subject: a number of nodes.
#[derive(Debug)]
struct Cluster {
    harness: &'static Harness,
    nodes: u64,
}

impl Runner for Cluster {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        if workload.calendar.is_some() {
            ctx.progress.set_length(1);
            let run = calendar(self.harness, &start_postgres()?, workload, self.nodes)?;
            ctx.progress.set_position(1);
            return crate::calendar::figures(workload, &run);
        }
        let d = workload.distributed.as_ref().ok_or_else(|| {
            RunError::Inconsistent(format!(
                "{} is neither distributed nor calendar",
                workload.name
            ))
        })?;
        ctx.progress.set_length(2);
        let mut shapes = Vec::new();
        for (i, (drain, jobs)) in [(true, d.drain), (false, d.paced)].into_iter().enumerate() {
            let bench = Bench {
                drain,
                nodes: self.nodes,
                jobs,
                window_ms: (d.window.nanos() / 1_000_000).max(1),
                threads: d.threads,
                record: false,
            };
            shapes.push(bench.run(self.harness, &start_postgres()?)?);
            ctx.progress.set_position(i as u64 + 1);
        }
        Ok(one_repeat(shapes))
    }
}

/// What the distributed figures say about the seed's claim that a Quartz
/// cluster stalls on its database locks when jobs are many and frequent,
/// computed from the run: how drain capacity moves from one node to more,
/// the database's transactions, CPU and lock waiters per job, the paced
/// lateness against the offered rate, and the Redis scheduler and BullMQ
/// beside it.
pub fn notes(results: &Results, workloads: &[Workload]) -> Vec<String> {
    let mut out = Vec::new();
    let ran_cluster = results
        .subjects
        .iter()
        .any(|s| SUBJECTS.iter().any(|(_, n, _)| *n == s.name));
    if let Some(set) = std::env::var("WORKBENCH_QUARTZ_SET")
        .ok()
        .filter(|v| ran_cluster && !v.trim().is_empty())
    {
        out.push(format!(
            "The Quartz cluster ran with WORKBENCH_QUARTZ_SET={set:?}: these properties on top of Quartz's defaults"
        ));
    }
    for w in workloads {
        let Some(d) = &w.distributed else { continue };
        let value = |s: &str, m| results.value(s, &w.name, m, None);
        let ran: Vec<(u64, &str, f64)> = SUBJECTS
            .iter()
            .filter_map(|&(n, s, _)| Some((n, s, value(s, Metric::DrainJobsPerS)?)))
            .collect();
        let Some(&(_, s0, base)) = ran.first() else {
            continue;
        };
        let list = |f: &dyn Fn(&str) -> Option<f64>, digits: usize| {
            ran.iter()
                .map(|(_, s, _)| f(s).map_or("–".to_owned(), |v| format!("{v:.digits$}")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let nodes = ran
            .iter()
            .map(|(n, _, _)| n.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let waiters = |s: &str| value(s, Metric::DbLockWaitersDrain);
        let cores =
            |s: &str| Some(value(s, Metric::DbCpuDrain)? * value(s, Metric::DrainJobsPerS)? / 1e6);
        let verdict = claim(&ran, &waiters);
        out.push(format!(
            "{}: Quartz clustered on PostgreSQL drains {} jobs/s with {nodes} nodes: {verdict}. Per job the database ran {} \
             transactions and used {} µs of CPU ({} of a core while draining, on a machine of {} cores the nodes share with it); \
             sessions waiting for a lock averaged {} (pg_stat_activity every 10 ms)",
            w.name,
            list(&|s| value(s, Metric::DrainJobsPerS), 0),
            list(&|s| value(s, Metric::DbTransactionsDrain), 2),
            list(&|s| value(s, Metric::DbCpuDrain), 0),
            list(&cores, 2),
            results.env.cores,
            list(&waiters, 2),
        ));
        let offered = d.paced as f64 / (d.window.nanos() as f64 / 1e9);
        let paced: Vec<String> = ran
            .iter()
            .filter_map(|&(n, s, drain)| {
                let p99 = value(s, Metric::PacedP99)? / 1000.0;
                let side = if drain < offered { "above" } else { "below" };
                Some(format!(
                    "{n} node{}: p99 {p99:.0} ms ({offered:.0} jobs/s offered, {side} its drain capacity of {drain:.0})",
                    if n == 1 { "" } else { "s" }
                ))
            })
            .collect();
        if !paced.is_empty() {
            out.push(format!(
                "{}: Quartz on PostgreSQL at the paced load: {}",
                w.name,
                paced.join("; ")
            ));
        }
        let others: Vec<String> = ["redis-1w", "bullmq-1w"]
            .iter()
            .filter_map(|s| {
                Some(format!(
                    "{s} {:.1}×",
                    value(s, Metric::DrainJobsPerS)? / base
                ))
            })
            .collect();
        if !others.is_empty() {
            out.push(format!(
                "{}: against {s0}'s drain ({base:.0} jobs/s): {}",
                w.name,
                others.join(", ")
            ));
        }
    }
    out
}

/// What the drain figures say about the claim, from (nodes, subject,
/// drain jobs/s) in node order and each subject's lock waiters: whether
/// more nodes drain faster (by more than [`SCALES`]), and if not, whether
/// the extra nodes only wait longer for the database's lock.
fn claim(ran: &[(u64, &str, f64)], waiters: &dyn Fn(&str) -> Option<f64>) -> String {
    let (Some(&(n0, s0, base)), Some(&(nl, sl, last))) = (ran.first(), ran.last()) else {
        return String::new();
    };
    if ran.len() < 2 {
        return "one node only: no scaling to judge".to_owned();
    }
    let &(np, sp, peak) = ran
        .iter()
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .unwrap_or(&ran[0]);
    let lock = |from: &str, to: &str, said: &str| {
        let (a, b) = (waiters(from).unwrap_or(0.0), waiters(to).unwrap_or(0.0));
        if b > a + 0.1 {
            format!(", while the sessions waiting for a lock rise from {a:.2} to {b:.2}: {said}, as the seed says")
        } else {
            format!(", but no more sessions wait for a lock ({a:.2}, then {b:.2}): what stops them is not the lock")
        }
    };
    if peak / base < SCALES {
        format!(
            "more nodes do not drain faster (the best, {np} node{}, ×{:.2} of {n0}){}",
            if np == 1 { "" } else { "s" },
            peak / base,
            lock(s0, sl, "the nodes take turns on the database's lock")
        )
    } else if np == nl {
        format!(
            "capacity grows up to {np} nodes (×{:.2} of {n0}): the database's lock did not stop more nodes at this load, \
             against the seed's claim",
            peak / base
        )
    } else {
        format!(
            "capacity peaks at {np} nodes ({peak:.0} jobs/s, ×{:.2} of {n0}) and {nl} nodes drain ×{:.2} of that{}",
            peak / base,
            last / peak,
            lock(sp, sl, &format!("past {np} nodes they take turns on the database's lock"))
        )
    }
}

/// More nodes "drain faster" when the best of them drains this many times
/// one node's jobs/s: below it, the difference is within what two runs of
/// the same cluster on this shared machine differed by (125 and 178 jobs/s
/// for one node).
pub const SCALES: f64 = 1.5;

/// A note for every repeat that missed timers, jobs or calendar instants:
/// how many, and what that repeat measured of the ones that came (its
/// fires per second, its median lateness), so a left-out repeat says why.
pub fn missed_notes(results: &Results, workloads: &[Workload]) -> Vec<String> {
    results
        .runs
        .iter()
        .filter_map(|run| {
            let crate::record::RunStatus::Missed { missed } = run.status else {
                return None;
            };
            let w = workloads.iter().find(|w| w.name == run.workload)?;
            let sample = |m| {
                results
                    .get(&run.subject, &run.workload, m, None)?
                    .samples
                    .iter()
                    .find(|s| s.repeat == run.repeat)
                    .map(|s| s.value)
            };
            let (what, after) = match (&w.calendar, &w.distributed) {
                (Some(_), _) => ("instants of its window", "the window's end"),
                (_, Some(_)) => ("jobs", "the end of the run"),
                _ => ("timers", "the last deadline"),
            };
            let of = sample(Metric::Fired).map_or(String::new(), |f| format!(" of {:.0}", f + missed as f64));
            let mut s = format!(
                "{}: {} missed {missed}{of} {what} in repeat {}: they had not fired {} after {after} (the workload's grace)",
                run.workload,
                run.subject,
                run.repeat + 1,
                w.grace
            );
            if let Some(f) = sample(Metric::FiresPerS) {
                s.push_str(&format!("; it fired {f:.0} timers/s"));
            }
            if let Some(p) = sample(Metric::LatenessP50) {
                s.push_str(&format!("; the fires that came were {:.1} ms late at the median", p / 1000.0));
            }
            Some(s)
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    const DRAIN: &str = r#"{"shape":"drain","peer":"quartz","workers":2,"threads":4,"jobs":1000,"runs":1001,"distinct":999,"elapsed_ms":4000,"jobs_per_sec":250,"lateness_ms":{"p50":1,"p90":2,"p99":3,"max":4},"db":{"cpu_us_per_job":2500.5,"transactions_per_job":3.2,"lock_waiters":0.4},"insert_per_s":900,"load":"1 1 1"}"#;

    #[test]
    fn parses_both_shapes_and_counts_misses_and_duplicates_once_per_repeat() {
        let drain = parse_bench(DRAIN).unwrap();
        let has = |r: &[Measurement], m, v| r.contains(&Measurement::new(m, v));
        assert!(has(&drain, Metric::DrainJobsPerS, 250.0));
        assert!(has(&drain, Metric::DbCpuDrain, 2500.5));
        assert!(has(&drain, Metric::DbTransactionsDrain, 3.2));
        assert!(has(&drain, Metric::DbLockWaitersDrain, 0.4));
        assert!(has(&drain, Metric::Missed, 1.0));
        assert!(has(&drain, Metric::Duplicates, 2.0));
        let paced = parse_bench(&DRAIN.replace("\"drain\"", "\"paced\"")).unwrap();
        assert!(has(&paced, Metric::PacedP99, 3000.0));
        assert!(has(&paced, Metric::DbLockWaitersPaced, 0.4));
        assert!(!paced.iter().any(|m| m.metric == Metric::DrainJobsPerS));
        let rep = one_repeat(vec![drain, paced]);
        let count = |m| {
            rep.iter()
                .filter(|x| x.metric == m)
                .map(|x| x.value)
                .collect::<Vec<_>>()
        };
        assert_eq!(count(Metric::Missed), [2.0]);
        assert_eq!(count(Metric::Duplicates), [4.0]);
        let e = parse_bench(&DRAIN.replace("\"lock_waiters\":0.4", "\"x\":1")).unwrap_err();
        assert!(e.to_string().contains("db.lock_waiters"), "{e}");
        assert!(matches!(
            parse_bench(r#"{"shape":"storm"}"#),
            Err(BadReport::Shape { .. })
        ));
    }
    #[test]
    fn the_claim_is_judged_from_scaling_and_who_waits_for_the_lock() {
        let w = |s: &str| {
            Some(match s {
                "a" => 0.1,
                "b" => 0.37,
                _ => 1.9,
            })
        };
        // Flat within ×1.5: the extra nodes only wait for the lock.
        let flat = [(1, "a", 178.0), (2, "b", 149.0), (4, "c", 181.0)];
        let v = claim(&flat, &w);
        assert!(
            v.contains("do not drain faster (the best, 4 nodes, ×1.02 of 1)"),
            "{v}"
        );
        assert!(
            v.contains("from 0.10 to 1.90") && v.contains("as the seed says"),
            "{v}"
        );
        assert!(claim(&flat, &|_| Some(0.2)).contains("not the lock"));
        // A peak in the middle, then a fall while waiters rise.
        let peak = [(1, "a", 100.0), (2, "b", 194.0), (4, "c", 155.0)];
        let v = claim(&peak, &w);
        assert!(
            v.contains("peaks at 2 nodes (194 jobs/s, ×1.94 of 1)"),
            "{v}"
        );
        assert!(
            v.contains("×0.80 of that") && v.contains("past 2 nodes"),
            "{v}"
        );
        let growing = [(1, "a", 100.0), (2, "b", 180.0), (4, "c", 300.0)];
        assert!(claim(&growing, &w).contains("against the seed's claim"));
        assert!(claim(&flat[..1], &w).contains("one node only"));
    }
}
