//! The report: `results.json`, one SVG per chart, and a self-contained
//! `index.html` (charts inlined, no scripts or styles fetched from
//! anywhere), all rendered from [`Results`] alone.
//!
//! Charts: lateness percentiles per workload, cost per operation, cost and
//! memory against pending count (log-log), periodic jitter, background CPU.
//! Tables: every figure of every workload with its ratio to the best peer,
//! and a headline table.

pub mod charts;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use charts::{Series, XAxis};

use crate::record::{metric, Record, Results};

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
    pub svg: Result<String, String>,
}

/// Writes `results.json`, every chart as `<id>.svg` and `index.html` into
/// `dir` (created if missing).
///
/// # Errors
///
/// The file system's, or JSON encoding's.
pub fn write(results: &Results, dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(results).map_err(io::Error::other)?;
    std::fs::write(dir.join("results.json"), json)?;
    let charts = charts_of(results);
    for c in &charts {
        if let Ok(svg) = &c.svg {
            std::fs::write(dir.join(format!("{}.svg", c.id)), svg)?;
        }
    }
    std::fs::write(dir.join("index.html"), html(results, &charts))
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
            peer: s.kind == crate::record::SubjectKind::Peer,
            points: value(&s.name, i),
        })
        .filter(|s| s.points.iter().any(|p| p.1.is_some()))
        .collect()
}

fn has(results: &Results, workload: &str, m: &str) -> bool {
    results
        .records
        .iter()
        .any(|r| r.workload == workload && r.metric == m)
}

fn val(
    results: &Results,
    subject: &str,
    workload: &str,
    m: &str,
    size: Option<u64>,
) -> Option<f64> {
    results.get(subject, workload, m, size).map(|r| r.value)
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
    let pct = ["p50", "p90", "p99", "p99.9", "max"];
    for w in &timeline {
        if !has(results, w, metric::LATENESS[0]) {
            continue;
        }
        let series = subjects_series(results, |s, _| {
            metric::LATENESS
                .iter()
                .enumerate()
                .map(|(i, m)| (i as f64, val(results, s, w, m, None)))
                .collect()
        });
        let title = format!("{w}: lateness percentiles (fire time − deadline)");
        let x = XAxis::Categories(pct.iter().map(|s| s.to_string()).collect());
        out.push(Chart {
            id: format!("lateness-{w}"),
            title: title.clone(),
            svg: charts::lines(&title, "percentile", "lateness (µs, log)", &x, &series),
        });
    }

    // Cost per operation.
    let mut cats = Vec::new();
    for w in &timeline {
        for op in [metric::SCHEDULE, metric::CANCEL, metric::RESET] {
            if has(results, w, op) {
                cats.push((w.to_string(), op));
            }
        }
    }
    if !cats.is_empty() {
        let series = subjects_series(results, |s, _| {
            cats.iter()
                .enumerate()
                .map(|(i, (w, op))| (i as f64, val(results, s, w, op, None)))
                .collect()
        });
        let names: Vec<String> = cats
            .iter()
            .map(|(w, op)| format!("{}\n{op}", short(w)))
            .collect();
        let title = "Cost per operation, from the application's thread".to_owned();
        out.push(Chart {
            id: "cost".into(),
            title: title.clone(),
            svg: charts::bars(&title, "ns/op (log)", &names, &series),
        });
    }

    // Sweeps: cost and memory against pending count.
    for w in results.workloads.iter().filter(|w| w.sweep) {
        for (m, what, unit) in [
            (metric::SCHEDULE, "schedule cost", "ns/op"),
            (metric::CANCEL, "cancel cost", "ns/op"),
            (metric::RESET, "reset cost", "ns/op"),
            (metric::MEMORY, "memory per pending timer", "bytes"),
        ] {
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
                id: format!("{}-{m}", w.name),
                title: title.clone(),
                svg: charts::lines(
                    &title,
                    "pending timers",
                    &format!("{unit} (log)"),
                    &XAxis::Log,
                    &series,
                ),
            });
        }
    }

    // Periodic jitter.
    let mut jcats = Vec::new();
    for w in &timeline {
        for (m, p) in [
            (metric::JITTER[0], "p50"),
            (metric::JITTER[1], "p99"),
            (metric::JITTER[3], "max"),
        ] {
            if has(results, w, m) {
                jcats.push((w.to_string(), m, p));
            }
        }
    }
    if !jcats.is_empty() {
        let series = subjects_series(results, |s, _| {
            jcats
                .iter()
                .enumerate()
                .map(|(i, (w, m, _))| (i as f64, val(results, s, w, m, None)))
                .collect()
        });
        let names: Vec<String> = jcats
            .iter()
            .map(|(w, _, p)| format!("{}\n{p}", short(w)))
            .collect();
        let title = "Periodic start jitter".to_owned();
        out.push(Chart {
            id: "jitter".into(),
            title: title.clone(),
            svg: charts::bars(&title, "µs (log)", &names, &series),
        });
    }

    // Background CPU per workload.
    let cpu: Vec<&str> = timeline
        .iter()
        .copied()
        .filter(|w| has(results, w, metric::CPU_BACKGROUND))
        .collect();
    if !cpu.is_empty() {
        let series = subjects_series(results, |s, _| {
            cpu.iter()
                .enumerate()
                .map(|(i, w)| (i as f64, val(results, s, w, metric::CPU_BACKGROUND, None)))
                .collect()
        });
        let names: Vec<String> = cpu.iter().map(|w| short(w).to_owned()).collect();
        let title = "CPU time of the scheduler's own threads per run".to_owned();
        out.push(Chart {
            id: "cpu".into(),
            title: title.clone(),
            svg: charts::bars(&title, "ms (log)", &names, &series),
        });
    }
    out
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

/// A headline figure: (workload, metric, at the largest common size, label).
const HEADLINE: &[(&str, &str, bool, &str)] = &[
    ("scale", metric::SCHEDULE, true, "schedule ns/op"),
    ("ack-timeout", metric::CANCEL, false, "ack cancel ns/op"),
    ("keepalive", metric::RESET, false, "keepalive reset ns/op"),
    ("scale", metric::MEMORY, true, "B/timer"),
    ("fire-lateness", "lateness_p99", false, "lateness p99 µs"),
    ("burst", metric::FIRES_PER_S, false, "burst fires/s"),
    (
        "periodic-fixed-rate",
        "jitter_p99",
        false,
        "fixed-rate jitter p99 µs",
    ),
    (
        "fire-lateness",
        metric::CPU_BACKGROUND,
        false,
        "lateness CPU ms",
    ),
    (
        crate::distributed::WORKLOAD,
        metric::FIRES_PER_S,
        false,
        "distributed drain jobs/s",
    ),
    (
        crate::distributed::WORKLOAD,
        "lateness_p99",
        false,
        "distributed paced p99 µs",
    ),
];

/// The largest size at which every subject that ran `workload` has
/// `metric` (subjects that did not run it, such as the distributed ones,
/// do not count).
fn common_size(results: &Results, workload: &str, m: &str) -> Option<u64> {
    results
        .subjects
        .iter()
        .filter(|s| {
            results
                .records
                .iter()
                .any(|r| r.scheduler == s.name && r.workload == workload)
        })
        .map(|s| {
            results
                .records
                .iter()
                .filter(|r| r.scheduler == s.name && r.workload == workload && r.metric == m)
                .filter_map(|r| r.size)
                .max()
        })
        .collect::<Option<Vec<u64>>>()
        .and_then(|v| v.into_iter().min())
}

/// One cell of the headline: the value and its ratio to the best peer.
pub type Cell = Option<(f64, Option<f64>)>;

/// The headline table: (column titles, rows of (subject, cells)).
pub fn headline(results: &Results) -> (Vec<String>, Vec<(String, Vec<Cell>)>) {
    let mut cols = Vec::new();
    let mut keys = Vec::new();
    for &(w, m, sized, label) in HEADLINE {
        if !has(results, w, m) {
            continue;
        }
        let size = if sized {
            common_size(results, w, m)
        } else {
            None
        };
        if sized && size.is_none() {
            continue;
        }
        cols.push(match size {
            Some(n) => format!("{label} @{}", crate::spec::format_count(n)),
            None => label.to_owned(),
        });
        keys.push((w, m, size));
    }
    let rows = results
        .subjects
        .iter()
        .map(|s| {
            let cells = keys
                .iter()
                .map(|&(w, m, size)| {
                    val(results, &s.name, w, m, size)
                        .map(|v| (v, results.best_peer(w, m, size).and_then(|b| ratio(v, b))))
                })
                .collect();
            (s.name.clone(), cells)
        })
        .collect();
    (cols, rows)
}

fn ratio(v: f64, best: f64) -> Option<f64> {
    (best.abs() > f64::EPSILON).then(|| v / best)
}

/// A number with three significant figures, thousands as `k`/`M` above 1e5.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e5 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{:.0}", v)
    } else if a >= 10.0 {
        format!("{:.1}", v)
    } else {
        format!("{:.2}", v)
    }
}

/// The headline table as Markdown (printed by `workbench run`).
pub fn headline_markdown(results: &Results) -> String {
    let (cols, rows) = headline(results);
    let mut s = String::new();
    let _ = writeln!(s, "| subject | {} |", cols.join(" | "));
    let _ = writeln!(s, "|---|{}", "---|".repeat(cols.len()));
    for (name, cells) in rows {
        let peer = if results.is_peer(&name) {
            " (peer)"
        } else {
            ""
        };
        let cells: Vec<String> = cells
            .iter()
            .map(|c| match c {
                Some((v, Some(r))) => format!("{} (×{:.2})", fmt_num(*v), r),
                Some((v, None)) => fmt_num(*v),
                None => "–".into(),
            })
            .collect();
        let _ = writeln!(s, "| {name}{peer} | {} |", cells.join(" | "));
    }
    s.push_str("\n(×r = ratio to the best peer; lower is better except fires/s)\n");
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
th:first-child,td:first-child{text-align:left}thead th{background:#f0f0f0}.r{color:#777;font-size:12px}\
.best{background:#e8f5e9}.worse{background:#fff3e0}figure{margin:1.5em 0}figcaption{font-weight:600;margin-bottom:.3em}\
.peer{color:#555;font-style:italic}.note{background:#fffbe6;border-left:4px solid #e0c000;padding:.4em .8em}\
code{background:#f4f4f4;padding:0 3px}";

/// Checks, in the browser, that every chart has a drawn size and every
/// table has rows; records the verdict on `<body data-check>` for the
/// headless-browser test.
const CHECK: &str = "(function(){var f=document.querySelectorAll('figure[data-chart]'),t=document.querySelectorAll('table[data-table]'),bad=[];\
f.forEach(function(x){var s=x.querySelector('svg');if(!s){bad.push(x.dataset.chart);return;}var b=s.getBoundingClientRect();\
if(b.width<100||b.height<100||s.querySelectorAll('polyline,path,rect,circle').length<3)bad.push(x.dataset.chart);});\
t.forEach(function(x){if(x.querySelectorAll('tbody tr').length<1||x.getBoundingClientRect().height<10)bad.push(x.dataset.table);});\
document.body.setAttribute('data-check',(bad.length?'bad ':'ok ')+f.length+' charts '+t.length+' tables '+bad.join(','));})();";

fn html(results: &Results, charts: &[Chart]) -> String {
    let e = &results.env;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Scheduler workbench – {}</title><style>{STYLE}</style></head><body>",
        esc(&results.run_id)
    );
    let _ = write!(h, "<h1>Scheduler workbench</h1><p>Run <code>{}</code>. Which scheduler for which workload, and what it costs: every algorithm of the <code>schedulers</code> crate and its peers ran the same seeded workloads; each figure is the median of {} repeats.</p>", esc(&results.run_id), results.repeats);
    let noise = results
        .median_spread()
        .map_or("n/a (one repeat)".to_owned(), |s| {
            format!(
                "{:.1}% (median of (max − min)/median over all figures)",
                s * 100.0
            )
        });
    let _ = write!(h, "<h2>Environment</h2><table data-table=\"env\"><tbody>");
    for (k, v) in [
        ("CPU", e.cpu.clone()),
        ("cores", e.cores.to_string()),
        ("OS", e.os.clone()),
        ("rustc", e.rustc.clone()),
        ("commit", e.commit.clone()),
        ("date", e.date.clone()),
        ("profile", e.profile.clone()),
        (
            "repeats",
            format!(
                "{} per subject and workload, after one discarded warm-up run per subject",
                results.repeats
            ),
        ),
        ("wall time", format!("{:.0} s", results.wall_seconds)),
        (
            "timing-loop overhead",
            format!(
                "{:.1} ns per timed operation (subtracted from per-op costs)",
                results.timing_overhead_ns
            ),
        ),
        ("noise over repeats", noise),
    ] {
        let _ = write!(h, "<tr><td>{k}</td><td>{}</td></tr>", esc(&v));
    }
    h.push_str("</tbody></table>");
    for n in &results.notes {
        let _ = write!(h, "<p class=\"note\">{}</p>", esc(n));
    }
    h.push_str("<h2>Subjects</h2><table data-table=\"subjects\"><thead><tr><th>name</th><th>kind</th><th>what and how it is driven</th></tr></thead><tbody>");
    for s in &results.subjects {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{:?}</td><td style=\"text-align:left\">{}</td></tr>",
            esc(&s.name),
            s.kind,
            esc(&s.about)
        );
    }
    h.push_str("</tbody></table>");

    // Headline.
    let (cols, rows) = headline(results);
    h.push_str("<h2>Headline</h2><p>Each figure with its ratio to the best peer (×1.00 is as good as the best peer; lower is better except fires/s).</p>");
    let _ = write!(
        h,
        "<table data-table=\"headline\"><thead><tr><th>subject</th>"
    );
    for c in &cols {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr></thead><tbody>");
    for (name, cells) in &rows {
        let class = if results.is_peer(name) {
            " class=\"peer\""
        } else {
            ""
        };
        let _ = write!(h, "<tr><td{class}>{}</td>", esc(name));
        for c in cells {
            h.push_str(&cell(c.map(|(v, r)| (v, r, 0.0))));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");

    // Each algorithm against the Java original it clones (issue 7).
    h.push_str(&crate::peers::java::originals_html(results));

    h.push_str("<h2>Charts</h2>");
    for c in charts {
        let _ = write!(
            h,
            "<figure id=\"{0}\" data-chart=\"{0}\"><figcaption>{1}</figcaption>",
            esc(&c.id),
            esc(&c.title)
        );
        match &c.svg {
            Ok(svg) => h.push_str(svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..])),
            Err(why) => {
                let _ = write!(h, "<p class=\"note\">chart not drawn: {}</p>", esc(why));
            }
        }
        let _ = write!(
            h,
            "<p class=\"r\"><a href=\"{}.svg\">{}.svg</a></p></figure>",
            esc(&c.id),
            esc(&c.id)
        );
    }

    h.push_str("<h2>Every figure, by workload</h2><p>Median over repeats; <span class=\"r\">×r</span> is the ratio to the best peer, <span class=\"r\">±s</span> half the spread over repeats. Hover a figure for every sample.</p>");
    for w in &results.workloads {
        let _ = write!(
            h,
            "<h3 id=\"w-{0}\">{0}</h3><p>{1}<br><i>Models:</i> {2}. Seed {3}.</p><ul>",
            esc(&w.name),
            esc(&w.description),
            esc(&w.models),
            w.seed
        );
        for line in &w.summary {
            let _ = write!(h, "<li>{}</li>", esc(line));
        }
        h.push_str("</ul>");
        h.push_str(&workload_table(results, &w.name));
    }
    let _ = write!(h, "<script>{CHECK}</script></body></html>");
    h
}

fn cell(c: Option<(f64, Option<f64>, f64)>) -> String {
    match c {
        None => "<td>–</td>".into(),
        Some((v, r, spread)) => {
            let class = match r {
                Some(r) if (r - 1.0).abs() < 1e-9 => " class=\"best\"",
                Some(r) if !(0.5..=2.0).contains(&r) => " class=\"worse\"",
                _ => "",
            };
            let ratio = r.map_or(String::new(), |r| {
                format!(" <span class=\"r\">×{r:.2}</span>")
            });
            let spread = if spread > 0.0 {
                format!(" <span class=\"r\">±{:.0}%</span>", spread * 50.0)
            } else {
                String::new()
            };
            format!("<td{class}>{}{ratio}{spread}</td>", fmt_num(v))
        }
    }
}

fn workload_table(results: &Results, workload: &str) -> String {
    let recs: Vec<&Record> = results
        .records
        .iter()
        .filter(|r| r.workload == workload)
        .collect();
    let mut keys: Vec<(String, Option<u64>, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for r in &recs {
        if seen.insert((r.metric.clone(), r.size)) {
            keys.push((r.metric.clone(), r.size, r.unit.clone()));
        }
    }
    if keys.is_empty() {
        return "<p class=\"note\">no figures (every subject failed or was skipped)</p>".into();
    }
    keys.sort_by_key(|(m, size, _)| (*size, metric_rank(m)));
    let mut h = format!(
        "<table data-table=\"{}\"><thead><tr><th>metric</th>",
        esc(workload)
    );
    for s in &results.subjects {
        let class = if s.kind == crate::record::SubjectKind::Peer {
            " class=\"peer\""
        } else {
            ""
        };
        let _ = write!(h, "<th{class}>{}</th>", esc(&s.name));
    }
    h.push_str("</tr></thead><tbody>");
    for (m, size, unit) in keys {
        let label = match size {
            Some(n) => format!("{m} @{} ({unit})", crate::spec::format_count(n)),
            None => format!("{m} ({unit})"),
        };
        let _ = write!(h, "<tr><td>{}</td>", esc(&label));
        let best = results.best_peer(workload, &m, size);
        for s in &results.subjects {
            match results.get(&s.name, workload, &m, size) {
                Some(r) => {
                    let samples: Vec<String> = r.samples.iter().map(|v| fmt_num(*v)).collect();
                    let td = cell(Some((
                        r.value,
                        best.and_then(|b| ratio(r.value, b)),
                        r.spread,
                    )));
                    h.push_str(&td.replacen(
                        "<td",
                        &format!("<td title=\"samples: {}\"", samples.join(", ")),
                        1,
                    ));
                }
                None => h.push_str("<td>–</td>"),
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    h
}

fn metric_rank(m: &str) -> usize {
    const ORDER: &[&str] = &[
        "schedule",
        "cancel",
        "reset",
        "memory",
        "lateness_p50",
        "lateness_p90",
        "lateness_p99",
        "lateness_p99.9",
        "lateness_max",
        "jitter_p50",
        "jitter_p99",
        "jitter_p99.9",
        "jitter_max",
        "drift",
        "fires_per_s",
        "fired",
        "runs",
        "runs_ratio",
        "missed",
        "early",
        "cancel_late",
        "reset_late",
        "cpu",
        "cpu_background",
    ];
    ORDER.iter().position(|o| *o == m).unwrap_or(ORDER.len())
}
