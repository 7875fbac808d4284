//! The report: `results.json`, one SVG per chart, and a self-contained
//! `index.html` (charts inlined, no scripts or styles fetched from
//! anywhere), all rendered from [`Results`] alone.
//!
//! The page opens with the verdict ([`verdict`]): per workload, the best of
//! our algorithms and the best subject overall, the margin and whether it
//! exceeds the run's noise, then a "pick it when" table computed from the
//! run. Then the charts (lateness percentiles per workload, cost per call,
//! batch cost, CPU per timer and memory against pending count, periodic
//! jitter; for the contention workload pairs/s and CPU per pair against the
//! threads ([`contention`]); for distributed jobs the backlog drain rate, the paced lateness
//! and Redis's cost per job), each algorithm against its Java original
//! ([`originals`]), every figure of every workload with its ratio to the
//! best peer, the notes a figure alone does not say ([`notes`]), and every
//! repeat that did not go well. The HTML comes from an askama template
//! (`workbench/templates/report.html`, auto-escaped).

pub mod charts;
pub mod contention;
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
    /// The SVG with what it shows, or why it could not be drawn.
    pub svg: Result<charts::Drawn, charts::ChartError>,
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
        if let Ok(drawn) = &c.svg {
            write_file(dir.join(format!("{}.svg", c.id)), &drawn.svg)?;
        }
    }
    write_file(dir.join("index.html"), page::render(results, &charts)?)
}

/// Every subject with a figure on a chart as a [`Series`], the ones the
/// chart draws marked ([`choose`]); for a chart whose points are costs or
/// lateness (lower is better). [`series_for`] says what each point is.
fn subjects_series(
    results: &Results,
    value: impl FnMut(&str, usize) -> Vec<(f64, Option<f64>)>,
) -> Vec<Series> {
    series_for(results, &[], &[], value)
}

/// [`subjects_series`] for a chart whose point `i` is a figure of
/// `metrics[i]` (one metric: every point), whose direction ranks the
/// subjects; `unranked` subjects are drawn only as ours or an original.
fn series_for(
    results: &Results,
    metrics: &[Metric],
    unranked: &[String],
    mut value: impl FnMut(&str, usize) -> Vec<(f64, Option<f64>)>,
) -> Vec<Series> {
    let mut series: Vec<Series> = results
        .subjects
        .iter()
        .enumerate()
        .map(|(i, s)| Series {
            name: s.name.clone(),
            color: 0,
            peer: s.kind == SubjectKind::Peer,
            drawn: false,
            role: String::new(),
            points: value(&s.name, i),
        })
        .filter(|s| s.points.iter().any(|p| p.1.is_some()))
        .collect();
    choose(results, &mut series, metrics, unranked);
    series
}

/// Peers drawn for being the strongest on a chart, at most.
const STRONGEST_PER_CHART: usize = 2;

/// Which series a chart draws, and in which style (colour and marker): our
/// four algorithms (the originals table's, always in styles 0-3; on a chart
/// none of them is on, the algorithms that win most of its points); the
/// peers that are best on the most points (up to
/// [`STRONGEST_PER_CHART`]); each drawn algorithm's original (the one of
/// its originals best on the most points); at most
/// [`charts::MAX_LINES`]. The rest stay in the chart's table.
fn choose(results: &Results, series: &mut [Series], metrics: &[Metric], unranked: &[String]) {
    let algorithms = originals::algorithms_of(results);
    let four = originals::principal(&algorithms);
    let lower = |i: usize| {
        metrics
            .get(i)
            .or(metrics.last())
            .is_none_or(|m| m.lower_is_better())
    };
    // How many points each of `among` is the best of them on.
    let wins = |series: &[Series], among: &[usize]| -> Vec<usize> {
        let mut w = vec![0; series.len()];
        let xs: Vec<f64> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .fold(Vec::new(), |mut v, x| {
                if !v.contains(&x) {
                    v.push(x);
                }
                v
            });
        for (i, x) in xs.iter().enumerate() {
            let at = |k: usize| {
                series[k]
                    .points
                    .iter()
                    .find(|p| p.0 == *x)
                    .and_then(|p| p.1)
                    .filter(|v| v.is_finite())
            };
            let best = among
                .iter()
                .filter_map(|&k| at(k).map(|v| (k, v)))
                .reduce(|a, b| {
                    let better = if lower(i) { b.1 < a.1 } else { b.1 > a.1 };
                    if better {
                        b
                    } else {
                        a
                    }
                });
            if let Some((k, _)) = best {
                w[k] += 1;
            }
        }
        w
    };
    let index = |name: &str| series.iter().position(|s| s.name == name);
    let by_wins = |series: &[Series], among: Vec<usize>| -> Vec<usize> {
        let w = wins(series, &among);
        let mut v: Vec<usize> = among.into_iter().filter(|&k| w[k] > 0).collect();
        v.sort_by_key(|&k| std::cmp::Reverse(w[k]));
        v
    };
    let mut chosen: Vec<(usize, Option<usize>, String)> = Vec::new();
    for (style, a) in four.iter().enumerate() {
        if let Some(k) = index(a) {
            chosen.push((k, Some(style), "ours".into()));
        }
    }
    if chosen.is_empty() {
        let ours: Vec<usize> = (0..series.len()).filter(|&k| !series[k].peer).collect();
        for k in by_wins(series, ours).into_iter().take(4) {
            chosen.push((k, None, "ours, best on this chart".into()));
        }
    }
    let peers: Vec<usize> = (0..series.len())
        .filter(|&k| series[k].peer && !unranked.contains(&series[k].name))
        .collect();
    for k in by_wins(series, peers).into_iter().take(STRONGEST_PER_CHART) {
        chosen.push((k, None, "strongest peer on this chart".into()));
    }
    for a in &four {
        if index(a).is_none() {
            continue;
        }
        for row in originals::originals_of(a, &algorithms) {
            let theirs: Vec<usize> = row.iter().filter_map(|o| index(o)).collect();
            let pick = by_wins(series, theirs.clone())
                .first()
                .or(theirs.first())
                .copied();
            if let Some(k) = pick {
                if let Some(c) = chosen.iter_mut().find(|c| c.0 == k) {
                    c.2.push_str(&format!("; {a}'s original"));
                } else {
                    chosen.push((k, None, format!("{a}'s original")));
                }
            }
        }
    }
    chosen.truncate(charts::MAX_LINES);
    // Our four keep styles 0-3 on every chart, present or not.
    let reserved = if chosen.iter().any(|c| c.1.is_some()) {
        four.len()
    } else {
        0
    };
    let mut free = reserved..charts::MAX_LINES;
    for (k, style, role) in chosen.iter().cloned() {
        let s = &mut series[k];
        s.drawn = true;
        s.role = role;
        s.color = style.or_else(|| free.next()).unwrap_or(0);
    }
    for s in series.iter_mut().filter(|s| !s.drawn) {
        s.role = "in the table only".into();
    }
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
        let ms: Vec<Metric> = cats.iter().map(|(_, m)| *m).collect();
        let series = series_for(results, &ms, &[], |s, _| {
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
            let ms: Vec<Metric> = cats.iter().map(|(m, _)| *m).collect();
            let series = series_for(results, &ms, &[], |s, _| {
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
            let series = series_for(results, &[m], &[], |s, _| {
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

    // Threads sharing one subject: pairs/s and CPU per pair against P.
    out.extend(contention::charts(results));

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
        // Jitter: lower is better on every point.
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
    // An early fire counts as 0 lateness: not ranked, and said so.
    let early: Vec<String> = results
        .subjects
        .iter()
        .filter(|s| {
            results
                .value(&s.name, w, Metric::Early, None)
                .is_some_and(|e| e > 0.0)
        })
        .map(|s| s.name.clone())
        .collect();
    let ms: Vec<Metric> = percentiles.iter().map(|(m, _)| *m).collect();
    let mut series = series_for(results, &ms, &early, |s, _| {
        percentiles
            .iter()
            .enumerate()
            .map(|(i, (m, _))| (i as f64, results.value(s, w, *m, None)))
            .collect()
    });
    for s in series.iter_mut().filter(|s| early.contains(&s.name)) {
        s.name.push_str(" (fires early)");
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

#[cfg(test)]
mod test {
    use super::charts::{color_hex, marker, MAX_LINES};
    use super::*;
    use crate::record::{Environment, Measurement, Samples, SubjectInfo, WorkloadInfo};

    /// A full run's shape: our seven algorithms (four and three variants),
    /// the Java originals and a dozen more peers, on a lateness timeline,
    /// per-call costs and a sweep where ours sit at 40-90 ns and the peers
    /// up to 600.
    fn crowded() -> Results {
        let ours = [
            ("heap", "HeapTimer"),
            ("heap-slack50", "HeapTimer with slack"),
            ("stpe", "ScheduledThreadPool"),
            ("wheel", "HashedWheelTimer"),
            ("wheel-tick", "HashedWheelTimer tick"),
            ("hier", "HierarchicalWheelTimer"),
            ("hier-kafka", "HierarchicalWheelTimer as Kafka"),
        ];
        let mut peers: Vec<String> = [
            "jdk-timer",
            "jdk-stpe-1",
            "jdk-stpe-2-roc",
            "netty-1ms",
            "netty-100ms",
        ]
        .map(str::to_owned)
        .to_vec();
        peers.extend((0..12).map(|i| format!("peer-{i}")));
        let mut subjects: Vec<SubjectInfo> = ours
            .iter()
            .map(|(n, about)| SubjectInfo {
                name: (*n).into(),
                kind: SubjectKind::Algorithm,
                about: (*about).into(),
            })
            .collect();
        subjects.extend(peers.iter().map(|n| SubjectInfo {
            name: n.clone(),
            kind: SubjectKind::Peer,
            about: String::new(),
        }));
        let mut s = Samples::default();
        for (k, subject) in subjects.iter().enumerate() {
            let f = k as f64;
            let lat: Vec<Measurement> = Metric::LATENESS
                .iter()
                .enumerate()
                .map(|(i, (m, _))| Measurement::new(*m, (1.0 + f) * 10f64.powi(i as i32)))
                .collect();
            let calls = [Metric::ScheduleCall, Metric::CancelCall]
                .map(|m| Measurement::new(m, 50.0 + 20.0 * f));
            let (lo, span) = if k < ours.len() {
                (40.0, 50.0 / 7.0)
            } else {
                (100.0, 30.0)
            };
            let scale: Vec<Measurement> = [1_000u64, 10_000, 100_000]
                .iter()
                .flat_map(|&n| {
                    [
                        Measurement::at(Metric::ScheduleBatch, n, lo + span * (f % 17.0)),
                        Measurement::at(Metric::Memory, n, 50.0 + f),
                    ]
                })
                .collect();
            for rep in 0..3 {
                s.add(&subject.name, "fire", rep, true, &lat);
                s.add(&subject.name, "fire", rep, true, &calls);
                s.add(&subject.name, "scale", rep, true, &scale);
            }
        }
        let wl = |name: &str, sweep, verdict| WorkloadInfo {
            name: name.into(),
            description: String::new(),
            models: String::new(),
            seed: 1,
            summary: vec![],
            sweep,
            verdict: vec![verdict],
        };
        Results {
            subjects,
            workloads: vec![
                wl("fire", false, Metric::LatenessP99),
                wl("scale", true, Metric::ScheduleBatch),
            ],
            records: s.records(|_| 1, &Environment::default()),
            partial: false,
            ..Results::new("t".into(), Environment::default(), 3)
        }
    }

    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_owned())
            })
            .collect()
    }

    /// Every chart of a crowded run draws at most ten subjects: our four
    /// in their fixed colours and markers, the strongest peers and the
    /// originals, each in a colour and a marker no other line of the chart
    /// has; every subject is in its table; the y axis is labelled across
    /// the plotted range, the labels written in the SVG.
    #[test]
    fn charts_draw_few_distinct_lines_and_label_their_whole_range() {
        let results = crowded();
        let charts = charts_of(&results);
        assert!(charts.len() >= 4, "{}", charts.len());
        for c in &charts {
            let d = c.svg.as_ref().unwrap_or_else(|e| panic!("{}: {e}", c.id));
            let legend = &d.legend;
            assert!(
                legend.len() <= MAX_LINES && legend.len() >= 6,
                "{}: {} lines",
                c.id,
                legend.len()
            );
            for (style, name) in ["heap", "stpe", "wheel", "hier"].iter().enumerate() {
                let e = legend
                    .iter()
                    .find(|e| e.name == *name)
                    .unwrap_or_else(|| panic!("{}: no {name}", c.id));
                assert_eq!(
                    (e.color.clone(), e.marker),
                    (color_hex(style), marker(style)),
                    "{}",
                    c.id
                );
            }
            assert!(legend
                .iter()
                .all(|e| !e.name.contains("slack50") && !e.name.contains("-tick")));
            for (i, a) in legend.iter().enumerate() {
                assert!(
                    d.svg.contains(&a.color.to_uppercase()),
                    "{}: {} not drawn",
                    c.id,
                    a.color
                );
                for b in &legend[..i] {
                    assert!(
                        a.color != b.color && a.marker != b.marker,
                        "{}: {} and {}",
                        c.id,
                        a.name,
                        b.name
                    );
                }
            }
            // The originals of our four that have figures: jdk-timer
            // (heap), the better JDK executor (stpe), a Netty (wheel).
            assert!(
                legend.iter().any(|e| e.name.starts_with("jdk-timer")),
                "{}",
                c.id
            );
            assert!(
                legend.iter().any(|e| e.name.starts_with("jdk-stpe")),
                "{}",
                c.id
            );
            assert!(
                legend.iter().any(|e| e.name.starts_with("netty")),
                "{}",
                c.id
            );
            assert_eq!(d.table.rows.len(), results.subjects.len(), "{}", c.id);
            // Labels across the range: at least three, each written, no gap
            // between two (or an end of the axis and its nearest label)
            // wider than the widest step between labels.
            let texts = svg_texts(&d.svg);
            let t = &d.y_ticks;
            assert!(t.len() >= 3, "{}: ticks {t:?}", c.id);
            for v in t {
                let label = charts::tick_label(*v);
                assert!(
                    texts.contains(&label),
                    "{}: no label {label} in {texts:?}",
                    c.id
                );
            }
            let step = t
                .windows(2)
                .map(|w| w[1] / w[0])
                .fold(1.0, f64::max)
                .max(2.0);
            let (lo, hi) = d.y_range;
            assert!(
                t[0] / lo <= step && hi / t[t.len() - 1] <= step,
                "{}: {t:?} over {lo}..{hi}",
                c.id
            );
        }
        // The sweep whose cheapest sit at 40-90 ns: labelled from 40 up.
        let scale = charts
            .iter()
            .find(|c| c.id == "scale-schedule_batch")
            .unwrap();
        let ticks = &scale.svg.as_ref().unwrap().y_ticks;
        assert!(ticks[0] <= 40.0, "{ticks:?}");
    }
}
