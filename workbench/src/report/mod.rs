//! The report: `results.json`, one SVG per chart, and a self-contained
//! `index.html` (charts inlined, no scripts or styles fetched from
//! anywhere), all rendered from [`Results`] alone.
//!
//! The page opens with the verdict ([`verdict`]): per workload, the best of
//! our algorithms and the best subject overall, the margin and whether it
//! exceeds the run's noise, then a "pick it when" table computed from the
//! run. Then the charts (lateness percentiles per workload, cost per call,
//! batch cost, CPU per timer and memory against pending count, periodic
//! jitter; for distributed jobs the backlog drain rate, the paced lateness
//! and Redis's cost per job), each algorithm against its Java original
//! ([`originals`]), every figure of every workload with its ratio to the
//! best peer, the notes a figure alone does not say ([`notes`]), and every
//! repeat that did not go well. The HTML comes from an askama template
//! (`workbench/templates/report.html`, auto-escaped).

pub mod charts;
pub mod notes;
pub mod originals;
pub mod page;
pub mod verdict;

use std::io;
use std::path::{Path, PathBuf};

use charts::{Series, XAxis};

use crate::record::{Metric, Results, SubjectKind};

/// `reports/` at the root of the workspace this binary was built from.
pub fn default_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("reports"), |p| p.join("reports"))
}

/// Points `root/latest` at `dir` (a relative symlink where possible).
///
/// # Errors
///
/// The file system's.
pub fn point_latest(root: &Path, dir: &Path) -> io::Result<()> {
    let latest = root.join("latest");
    if latest.symlink_metadata().is_ok() {
        if latest.is_dir() && !latest.symlink_metadata()?.file_type().is_symlink() {
            std::fs::remove_dir_all(&latest)?;
        } else {
            std::fs::remove_file(&latest)?;
        }
    }
    let target = dir
        .file_name()
        .map_or_else(|| dir.to_path_buf(), PathBuf::from);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, latest)
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        std::fs::write(latest, dir.display().to_string())
    }
}

/// One chart of a report.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File stem and HTML id (`lateness-burst`).
    pub id: String,
    /// Caption.
    pub title: String,
    /// The SVG, or why it could not be drawn.
    pub svg: Result<String, charts::ChartError>,
}

/// A report that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// `results.json` could not be encoded or read.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The template failed.
    #[error("rendering the page: {0}")]
    Template(#[from] askama::Error),
}

fn write_file(path: PathBuf, text: impl AsRef<[u8]>) -> Result<(), ReportError> {
    std::fs::write(&path, text).map_err(|source| ReportError::Io { path, source })
}

/// Writes `results.json` alone (after every finished run, so an
/// interrupted run keeps what it measured).
///
/// # Errors
///
/// The file system's, or JSON encoding's.
pub fn write_results(results: &Results, dir: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join("results.json");
    let json = serde_json::to_string_pretty(results).map_err(|source| ReportError::Json {
        path: path.clone(),
        source,
    })?;
    // Write beside, then rename: a reader never sees half a file.
    let tmp = dir.join("results.json.tmp");
    write_file(tmp.clone(), json)?;
    std::fs::rename(&tmp, &path).map_err(|source| ReportError::Io { path, source })
}

/// Reads a `results.json`.
///
/// # Errors
///
/// The file system's, or a file that is not a results file of this format.
pub fn read_results(path: &Path) -> Result<Results, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ReportError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `results.json`, every chart as `<id>.svg` and `index.html` into
/// `dir` (created if missing).
///
/// # Errors
///
/// The file system's, JSON encoding's, or the template's.
pub fn write(results: &Results, dir: &Path) -> Result<(), ReportError> {
    write_results(results, dir)?;
    let charts = charts_of(results);
    for c in &charts {
        if let Ok(svg) = &c.svg {
            write_file(dir.join(format!("{}.svg", c.id)), svg)?;
        }
    }
    write_file(dir.join("index.html"), page::render(results, &charts)?)
}

fn subjects_series(
    results: &Results,
    mut value: impl FnMut(&str, usize) -> Vec<(f64, Option<f64>)>,
) -> Vec<Series> {
    results
        .subjects
        .iter()
        .enumerate()
        .map(|(i, s)| Series {
            name: s.name.clone(),
            color: i,
            peer: s.kind == SubjectKind::Peer,
            points: value(&s.name, i),
        })
        .filter(|s| s.points.iter().any(|p| p.1.is_some()))
        .collect()
}

fn has(results: &Results, workload: &str, m: Metric) -> bool {
    results
        .records
        .iter()
        .any(|r| r.workload == workload && r.metric == m)
}

/// Every chart the results support, in page order.
pub fn charts_of(results: &Results) -> Vec<Chart> {
    let mut out = Vec::new();
    let timeline: Vec<&str> = results
        .workloads
        .iter()
        .filter(|w| !w.sweep)
        .map(|w| w.name.as_str())
        .collect();

    // Lateness percentiles, one chart per workload.
    for w in &timeline {
        if has(results, w, Metric::LatenessP50) {
            out.push(percentiles_chart(
                results,
                w,
                &Metric::LATENESS,
                format!("lateness-{w}"),
                format!("{w}: lateness percentiles (fire time − deadline)"),
            ));
        }
    }

    // Per-call costs and whole-process CPU per timer, across timelines.
    let per_call = [Metric::ScheduleCall, Metric::CancelCall, Metric::ResetCall];
    for (id, title, unit, metrics) in [
        (
            "cost-call",
            "Cost per call, each call timed alone on the application's thread",
            "ns/op (log)",
            &per_call[..],
        ),
        (
            "cpu-per-timer",
            "Whole-process CPU per timer (caller + the subject's threads, deferred work included)",
            "ns/timer (log)",
            &[Metric::CpuPerTimer][..],
        ),
    ] {
        let cats: Vec<(&str, Metric)> = timeline
            .iter()
            .flat_map(|w| metrics.iter().map(move |m| (*w, *m)))
            .filter(|(w, m)| has(results, w, *m))
            .collect();
        if cats.is_empty() {
            continue;
        }
        let series = subjects_series(results, |s, _| {
            cats.iter()
                .enumerate()
                .map(|(i, (w, m))| (i as f64, results.value(s, w, *m, None)))
                .collect()
        });
        let names: Vec<String> = cats
            .iter()
            .map(|(w, m)| match metrics.len() {
                1 => short(w).to_owned(),
                _ => format!("{}\n{}", short(w), m.name().trim_end_matches("_call")),
            })
            .collect();
        out.push(Chart {
            id: id.into(),
            title: title.into(),
            svg: charts::bars(title, unit, &names, &series),
        });
    }

    // Sweeps: batch costs, CPU and memory against the pending count, or
    // side by side for a sweep at one size.
    let sweep_metrics = [
        (Metric::ScheduleBatch, "schedule, batch loop"),
        (Metric::ResetBatch, "reset, batch loop"),
        (Metric::CancelBatch, "cancel, batch loop"),
        (Metric::CpuPerTimer, "whole-process CPU per timer"),
        (Metric::Memory, "memory per pending timer"),
    ];
    for w in results.workloads.iter().filter(|w| w.sweep) {
        let mut sizes: Vec<u64> = results
            .records
            .iter()
            .filter(|r| r.workload == w.name)
            .filter_map(|r| r.size)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        if let [size] = sizes[..] {
            let cats: Vec<(Metric, &str)> = sweep_metrics
                .iter()
                .copied()
                .filter(|(m, _)| has(results, &w.name, *m))
                .collect();
            let series = subjects_series(results, |s, _| {
                cats.iter()
                    .enumerate()
                    .map(|(i, (m, _))| (i as f64, results.value(s, &w.name, *m, Some(size))))
                    .collect()
            });
            let names: Vec<String> = cats
                .iter()
                .map(|(m, _)| format!("{}\n({})", m.name(), m.unit()))
                .collect();
            let title = format!(
                "{} at {} pending: batch costs, CPU per timer, memory",
                w.name,
                crate::spec::format_count(size)
            );
            out.push(Chart {
                id: format!("{}-batch", w.name),
                title: title.clone(),
                svg: charts::bars(&title, "value (log)", &names, &series),
            });
            continue;
        }
        for (m, what) in sweep_metrics {
            if !has(results, &w.name, m) {
                continue;
            }
            let series = subjects_series(results, |s, _| {
                results
                    .records
                    .iter()
                    .filter(|r| r.scheduler == s && r.workload == w.name && r.metric == m)
                    .filter_map(|r| r.size.map(|n| (n as f64, Some(r.value))))
                    .collect()
            });
            let title = format!("{}: {what} against pending timers (log-log)", w.name);
            out.push(Chart {
                id: format!("{}-{}", w.name, m.name()),
                title: title.clone(),
                svg: charts::lines(
                    &title,
                    "pending timers",
                    &format!("{} (log)", m.unit()),
                    &XAxis::Log,
                    &series,
                ),
            });
        }
    }

    // Distributed jobs: capacity, paced lateness, Redis's cost per job.
    for w in results
        .workloads
        .iter()
        .filter(|w| has(results, &w.name, Metric::DrainJobsPerS))
    {
        let w = w.name.as_str();
        let title = format!("{w}: backlog drain, jobs/s (capacity; higher is better)");
        let (names, series) = bars_of(results, w, &[("drain", Metric::DrainJobsPerS)]);
        out.push(Chart {
            id: format!("{w}-drain"),
            title: title.clone(),
            svg: charts::bars(&title, "jobs/s (log)", &names, &series),
        });
        if has(results, w, Metric::PacedP50) {
            out.push(percentiles_chart(
                results,
                w,
                &Metric::PACED,
                format!("{w}-paced"),
                format!("{w}: lateness at the paced load (start − due, ms resolution)"),
            ));
        }
        let (names, series) = bars_of(
            results,
            w,
            &[
                ("Redis CPU µs\ndrain", Metric::RedisCpuDrain),
                ("Redis CPU µs\npaced", Metric::RedisCpuPaced),
                ("Redis calls\ndrain", Metric::RedisCallsDrain),
                ("Redis calls\npaced", Metric::RedisCallsPaced),
                ("round trips\ndrain", Metric::RoundTripsDrain),
                ("round trips\npaced", Metric::RoundTripsPaced),
            ],
        );
        if !names.is_empty() {
            let title =
                format!("{w}: Redis's cost per job (INFO cpu, commandstats; workers' round trips)");
            out.push(Chart {
                id: format!("{w}-redis-cost"),
                title: title.clone(),
                svg: charts::bars(&title, "per job (log)", &names, &series),
            });
        }
        let (names, series) = bars_of(
            results,
            w,
            &[
                ("DB CPU µs\ndrain", Metric::DbCpuDrain),
                ("DB CPU µs\npaced", Metric::DbCpuPaced),
                ("transactions\ndrain", Metric::DbTransactionsDrain),
                ("transactions\npaced", Metric::DbTransactionsPaced),
                ("lock waiters\ndrain", Metric::DbLockWaitersDrain),
                ("lock waiters\npaced", Metric::DbLockWaitersPaced),
            ],
        );
        if !names.is_empty() {
            let title = format!("{w}: PostgreSQL's cost per job (Quartz cluster)");
            out.push(Chart {
                id: format!("{w}-db-cost"),
                title: title.clone(),
                svg: charts::bars(&title, "per job / sessions (log)", &names, &series),
            });
        }
    }

    // Calendar schedules: what a fire and a schedule cost.
    for w in results
        .workloads
        .iter()
        .filter(|w| has(results, &w.name, Metric::CpuPerFire))
    {
        let w = w.name.as_str();
        let (names, series) = bars_of(
            results,
            w,
            &[
                ("CPU µs per fire\n(scheduler)", Metric::CpuPerFire),
                ("CPU µs per fire\n(its store)", Metric::StoreCpuPerFire),
                ("B per schedule", Metric::MemoryPerSchedule),
                ("ns to create\na schedule", Metric::ScheduleBatch),
            ],
        );
        let title = format!("{w}: cost per fire and per schedule");
        out.push(Chart {
            id: format!("{w}-cost"),
            title: title.clone(),
            svg: charts::bars(&title, "value (log)", &names, &series),
        });
    }

    // Periodic jitter.
    let mut jcats = Vec::new();
    for w in &timeline {
        for m in [Metric::JitterP50, Metric::JitterP99, Metric::JitterMax] {
            if has(results, w, m) {
                jcats.push((w.to_string(), m));
            }
        }
    }
    if !jcats.is_empty() {
        let series = subjects_series(results, |s, _| {
            jcats
                .iter()
                .enumerate()
                .map(|(i, (w, m))| (i as f64, results.value(s, w, *m, None)))
                .collect()
        });
        let names: Vec<String> = jcats
            .iter()
            .map(|(w, m)| format!("{}\n{}", short(w), m.name().trim_start_matches("jitter_")))
            .collect();
        let title = "Periodic start jitter: |start − ideal start|".to_owned();
        out.push(Chart {
            id: "jitter".into(),
            title: title.clone(),
            svg: charts::bars(&title, "µs (log)", &names, &series),
        });
    }
    out
}

/// The bars of workload `w`'s figures `cats` (label, metric) that it has:
/// their labels, and one series per subject.
fn bars_of(results: &Results, w: &str, cats: &[(&str, Metric)]) -> (Vec<String>, Vec<Series>) {
    let cats: Vec<(&str, Metric)> = cats
        .iter()
        .copied()
        .filter(|(_, m)| has(results, w, *m))
        .collect();
    let series = subjects_series(results, |s, _| {
        cats.iter()
            .enumerate()
            .map(|(i, (_, m))| (i as f64, results.value(s, w, *m, None)))
            .collect()
    });
    let names: Vec<String> = cats.iter().map(|(n, _)| (*n).to_owned()).collect();
    (names, series)
}

/// A line chart of workload `w`'s lateness percentiles (`percentiles`: the
/// metrics with their quantiles), one line per subject.
fn percentiles_chart(
    results: &Results,
    w: &str,
    percentiles: &[(Metric, f64)],
    id: String,
    title: String,
) -> Chart {
    let mut series = subjects_series(results, |s, _| {
        percentiles
            .iter()
            .enumerate()
            .map(|(i, (m, _))| (i as f64, results.value(s, w, *m, None)))
            .collect()
    });
    // An early fire counts as 0 lateness: say so where it happened.
    for s in &mut series {
        if results
            .value(&s.name, w, Metric::Early, None)
            .is_some_and(|e| e > 0.0)
        {
            s.name.push_str(" (fires early)");
        }
    }
    let x = XAxis::Categories(
        percentiles
            .iter()
            .map(|(m, _)| {
                m.name()
                    .rsplit_once('_')
                    .map_or(m.name(), |(_, p)| p)
                    .to_owned()
            })
            .collect(),
    );
    let svg = charts::lines(&title, "percentile", "lateness (µs, log)", &x, &series);
    Chart { id, title, svg }
}

fn short(w: &str) -> &str {
    match w {
        "periodic-fixed-rate" => "fixed-rate",
        "periodic-fixed-delay" => "fixed-delay",
        "fire-lateness" => "lateness",
        "ack-timeout" => "ack",
        other => other,
    }
}
