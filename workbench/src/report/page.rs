//! The HTML page: the view of [`Results`] the template
//! (`workbench/templates/report.html`) renders, every string escaped by
//! askama except the inlined SVG charts (drawn by this crate) and the
//! page's own style and check script.

use askama::Template;

use super::charts::fmt_num;
use super::originals::{pairs, ORIGINALS};
use super::verdict::{picks, verdicts, Verdict};
use super::Chart;
use crate::record::{Metric, Record, Results, RunStatus, SubjectKind};

/// Two significant digits below 1 (0.0046 stays visible), else two decimals.
pub fn fmt_ratio(r: f64) -> String {
    if r == f64::INFINITY {
        "∞".to_owned()
    } else if !r.is_finite() {
        "–".to_owned()
    } else if r < 1.0 && r > 0.0 {
        let digits = (1 - r.log10().floor() as i32).max(2) as usize;
        format!("{r:.digits$}")
    } else {
        format!("{r:.2}")
    }
}

fn with_size(metric: Metric, label: String, size: Option<u64>) -> String {
    match size {
        Some(n) => format!("{label} {}", metric.size_label(n)),
        None => label,
    }
}

/// One row of the verdict table.
struct VerdictRow {
    workload: String,
    figure: String,
    ours: String,
    best: String,
    best_is_peer: bool,
    margin: String,
    noise: &'static str,
    class: &'static str,
}

impl VerdictRow {
    fn new(v: &Verdict) -> VerdictRow {
        let unit = v.metric.unit();
        let show =
            |e: &super::verdict::Entry| format!("{} ({} {unit})", e.subject, fmt_num(e.value));
        let (margin, class) = match (v.factor, &v.peer) {
            // Equal figures (0 wake-ups against 0, say): nobody is ahead.
            (Some(1.0), Some(p)) => (format!("level with {}", p.subject), ""),
            (Some(f), Some(p)) if v.ours_ahead => (
                format!("ours ahead of {} by ×{}", p.subject, fmt_ratio(f)),
                "best",
            ),
            (Some(f), Some(p)) => (
                format!("{} ahead of ours by ×{}", p.subject, fmt_ratio(f)),
                "worse",
            ),
            _ if v.ours.is_none() => ("none of ours ran it".into(), ""),
            _ => ("no peer ran it".into(), ""),
        };
        let margin = if v.fires_early.is_empty() {
            margin
        } else {
            format!(
                "{margin}; not ranked, they fire before their deadline: {}",
                v.fires_early.join(", ")
            )
        };
        let margin = match (&v.peer, v.peer_early) {
            (Some(p), Some((early, fired))) => format!(
                "{margin}; {} ran {early} of its {fired} timers before their deadline",
                p.subject
            ),
            _ => margin,
        };
        let margin = match (&v.ours, v.ours_wakes) {
            (Some(o), Some((per_s, ns))) => format!(
                "{margin}; {}'s {} wake-ups a second come to about {} ns of its {} ns a \
                 timer at this machine's cost of a wake-up (the hardware floors below)",
                o.subject,
                fmt_num(per_s),
                fmt_num(ns),
                fmt_num(o.value)
            ),
            _ => margin,
        };
        VerdictRow {
            workload: v.workload.clone(),
            figure: with_size(v.metric, v.metric.label(), v.size),
            ours: v.ours.as_ref().map_or_else(|| "–".into(), show),
            best: v.best().map_or_else(|| "–".into(), show),
            best_is_peer: v
                .best()
                .is_some_and(|b| v.peer.as_ref() == Some(b) && !v.ours_ahead),
            margin,
            noise: match (v.factor, v.beyond_noise) {
                (None, _) => "",
                (Some(_), true) => "beyond the noise",
                (Some(_), false) => "within the noise",
            },
            class,
        }
    }
}

/// One row of the "pick it when" table.
struct PickRow {
    subject: String,
    about: String,
    wins: Vec<String>,
    ahead: String,
}

/// One subject in the subjects table.
struct SubjectRow {
    name: String,
    kind: &'static str,
    about: String,
    /// Our four's fixed colour and marker; a peer's are its chart's.
    color: Option<(String, char)>,
}

/// A chart on the page, with every subject's figures beneath.
struct ChartView {
    id: String,
    title: String,
    svg: Option<String>,
    error: Option<String>,
    columns: Vec<String>,
    rows: Vec<ChartRow>,
}

/// One subject in the table beneath a chart.
struct ChartRow {
    name: String,
    role: String,
    color: Option<(String, char)>,
    cells: Vec<String>,
}

/// One cell of a workload's table.
struct CellView {
    text: String,
    ratio: String,
    spread: String,
    class: &'static str,
    title: String,
    flags: String,
}

/// One row of a workload's table.
struct TableRow {
    label: String,
    cells: Vec<CellView>,
}

/// A column head.
struct Head {
    name: String,
    peer: bool,
}

/// A workload's section.
struct WorkloadView {
    name: String,
    description: String,
    models: String,
    seed: u64,
    summary: Vec<String>,
    heads: Vec<Head>,
    rows: Vec<TableRow>,
}

/// A repeat that did not go well, or ran under load.
struct ProblemRow {
    subject: String,
    workload: String,
    repeat: usize,
    what: String,
    load: String,
}

/// One algorithm against its original.
struct OriginalGroup {
    heading: String,
    id: String,
    rows: Vec<OriginalRow>,
    differences: &'static [&'static str],
}

/// One figure against the original's.
struct OriginalRow {
    workload: String,
    metric: String,
    ours: String,
    original: String,
    peer: String,
    class: &'static str,
    ratio: String,
}

/// The page.
#[derive(Template)]
#[template(path = "report.html")]
struct Page {
    run_id: String,
    partial: bool,
    repeats: usize,
    repeats_done: usize,
    selection: Option<crate::record::SelectionInfo>,
    style: &'static str,
    check: &'static str,
    verdicts: Vec<VerdictRow>,
    picks: Vec<PickRow>,
    env: Vec<(&'static str, String)>,
    notes: Vec<String>,
    problems: Vec<ProblemRow>,
    loaded: String,
    subjects: Vec<SubjectRow>,
    originals: Vec<OriginalGroup>,
    charts: Vec<ChartView>,
    workloads: Vec<WorkloadView>,
}

const STYLE: &str = include_str!("../../templates/report.css");

/// Checks, in the browser, that every chart has a drawn size, every table
/// has rows, no table is wider than its box and the verdict comes first;
/// records the result on `<body data-check>` for the headless-browser test.
const CHECK: &str = include_str!("../../templates/check.js");

/// Renders the page.
///
/// # Errors
///
/// The template's.
pub fn render(results: &Results, charts: &[Chart]) -> Result<String, askama::Error> {
    page(results, charts).render()
}

fn page(results: &Results, charts: &[Chart]) -> Page {
    let e = &results.env;
    let v = verdicts(results);
    let cores = e.cores.max(1) as f64;
    let noise = results.noise().map_or("n/a (one repeat)".to_owned(), |s| {
        format!(
            "{:.1}% (median (max − min)/median over all figures)",
            s * 100.0
        )
    });
    let [l1, l5, l15] = results.load_start;
    let loads: Vec<f64> = results.runs.iter().map(|r| r.load).collect();
    let load_max = loads.iter().copied().fold(0.0, f64::max);
    let handoffs = results.handoff_range();
    let four = super::originals::principal(&super::originals::algorithms_of(results));
    Page {
        run_id: results.run_id.clone(),
        partial: results.partial,
        repeats: results.repeats,
        repeats_done: results.repeats_done,
        selection: results.selection.clone(),
        style: STYLE,
        check: CHECK,
        picks: picks(results, &v)
            .into_iter()
            .map(|p| PickRow {
                subject: p.subject,
                about: p.about,
                wins: p
                    .wins
                    .iter()
                    .map(|(w, models)| {
                        if models.is_empty() {
                            w.clone()
                        } else {
                            format!("{w}: {models}")
                        }
                    })
                    .collect(),
                ahead: if p.ahead_of_peers.is_empty() {
                    "–".into()
                } else {
                    p.ahead_of_peers.join(", ")
                },
            })
            .collect(),
        verdicts: v.iter().map(VerdictRow::new).collect(),
        env: vec![
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
                    "{} per subject and workload; a subject that runs timers in process or in a JVM first does one discarded \
                     warm-up run (the distributed subjects start fresh processes and a fresh Redis for every measurement); \
                     a sweep runs one untimed warm-up cycle at each size, then timed cycles until {} calls or {} cycles, \
                     and takes the median over them: the steady state of a long-running process",
                    results.repeats,
                    crate::runner::sweep::TIMED_PER_SIZE,
                    crate::runner::sweep::MAX_CYCLES
                ),
            ),
            ("wall time", format!("{:.0} s", results.wall_seconds)),
            (
                "load average at the start",
                format!("{l1:.2} / {l5:.2} / {l15:.2} (1 / 5 / 15 min)"),
            ),
            ("highest load after a run", format!("{load_max:.2}")),
            (
                "cross-core round trip",
                handoffs.map_or("not measured".to_owned(), |(lo, hi)| {
                    format!(
                        "{lo:.0} to {hi:.0} ns after the repeats \
                         (a cache line handed to another core and back)"
                    )
                }),
            ),
            (
                "hardware floors",
                results.floors.map_or("not measured".to_owned(), |f| floors_text(&f)),
            ),
            (
                "timing-loop overhead",
                format!(
                    "{:.1} ns per timed call (subtracted from per-call costs)",
                    results.timing_overhead_ns
                ),
            ),
            ("noise over repeats", noise),
        ],
        notes: results.notes.clone(),
        loaded: {
            let loaded: Vec<f64> = loads.iter().copied().filter(|l| *l > cores).collect();
            let mut notes = Vec::new();
            if !loaded.is_empty() {
                notes.push(format!(
                    "{} of {} repeats finished with the 1-minute load average above the {} cores ({:.2} to {:.2}): their figures are kept, but the machine was shared; compare ratios within this run, and rerun on a quiet machine before trusting absolute figures.",
                    loaded.len(),
                    loads.len(),
                    e.cores,
                    loaded.iter().copied().fold(f64::MAX, f64::min),
                    load_max
                ));
            }
            if let Some((lo, hi)) =
                handoffs.filter(|&(lo, hi)| crate::runner::measure::handoff_moved(lo, hi))
            {
                notes.push(format!(
                    "A cache line's round trip between two cores went from {lo:.0} to \
                     {hi:.0} ns between repeats: the host moved this machine's CPUs closer \
                     together or farther apart, or another process held a core (then the load says so). \
                     Whatever hands work to another thread costs more while they are far (each schedule of ours feeds the driver's lane: about a quarter more \
                     per schedule at 350 ns than at 100 on the 2-core VM this was built on); compare \
                     repeats with like round trips (results.json gives each repeat's)."
                ));
            }
            notes.join(" ")
        },
        problems: results
            .runs
            .iter()
            .filter(|r| r.status != RunStatus::Ok)
            .map(|r| ProblemRow {
                subject: r.subject.clone(),
                workload: r.workload.clone(),
                repeat: r.repeat + 1,
                what: match &r.status {
                    RunStatus::Ok => String::new(),
                    RunStatus::Missed { missed } => {
                        format!("{missed} timers never fired: shown, not in the medians")
                    }
                    RunStatus::Failed { error } => format!("failed: {error}"),
                },
                load: format!("{:.2}", r.load),
            })
            .collect(),
        subjects: results
            .subjects
            .iter()
            .map(|s| SubjectRow {
                name: s.name.clone(),
                kind: match s.kind {
                    SubjectKind::Algorithm => "ours",
                    SubjectKind::Peer => "peer",
                },
                about: s.about.clone(),
                color: four.iter().position(|a| *a == s.name).map(|style| {
                    (
                        super::charts::color_hex(style),
                        super::charts::marker(style).glyph(),
                    )
                }),
            })
            .collect(),
        originals: originals(results),
        charts: charts
            .iter()
            .map(|c| {
                let table = c.svg.as_ref().map(|d| d.table.clone()).unwrap_or_default();
                ChartView {
                    id: c.id.clone(),
                    title: c.title.clone(),
                    svg: c
                        .svg
                        .as_ref()
                        .ok()
                        .map(|d| d.svg.find("<svg").map_or(d.svg.as_str(), |i| &d.svg[i..]).to_owned()),
                    error: c.svg.as_ref().err().map(ToString::to_string),
                    columns: table.columns,
                    rows: table
                        .rows
                        .into_iter()
                        .map(|r| ChartRow {
                            name: r.name,
                            role: r.role,
                            color: r.drawn.map(|(c, m)| (c, m.glyph())),
                            cells: r.cells,
                        })
                        .collect(),
                }
            })
            .collect(),
        workloads: results
            .workloads
            .iter()
            .map(|w| WorkloadView {
                name: w.name.clone(),
                description: w.description.clone(),
                models: w.models.clone(),
                seed: w.seed,
                summary: w.summary.clone(),
                heads: results
                    .subjects
                    .iter()
                    .filter(|s| {
                        results
                            .records
                            .iter()
                            .any(|r| r.scheduler == s.name && r.workload == w.name)
                    })
                    .map(|s| Head {
                        name: s.name.clone(),
                        peer: s.kind == SubjectKind::Peer,
                    })
                    .collect(),
                rows: table(results, &w.name),
            })
            .collect(),
    }
}

fn originals(results: &Results) -> Vec<OriginalGroup> {
    let pairs = pairs(results);
    ORIGINALS
        .iter()
        .filter_map(|o| {
            let rows: Vec<_> = pairs.iter().filter(|p| p.ours == o.ours).collect();
            let first = rows.first()?;
            let with = o.originals.map_or_else(
                || "the best Java peer per figure".to_owned(),
                |list| list.join(", "),
            );
            Some(OriginalGroup {
                heading: format!("{} ({}) vs {with}", o.ours, first.subject),
                id: format!("originals-{}", first.subject),
                differences: o.differences,
                rows: rows
                    .iter()
                    .map(|p| {
                        let better = p.ratio.is_finite()
                            && (p.ratio - 1.0).abs() > 1e-9
                            && (p.ratio < 1.0) == p.metric.lower_is_better();
                        OriginalRow {
                            workload: p.workload.clone(),
                            metric: with_size(p.metric, p.metric.label(), p.size),
                            ours: format!("{} {}", fmt_num(p.value), p.unit),
                            original: format!("{} {}", fmt_num(p.original_value), p.unit),
                            peer: p.original.clone(),
                            class: if better { "best" } else { "worse" },
                            ratio: format!("×{}", fmt_ratio(p.ratio)),
                        }
                    })
                    .collect(),
            })
        })
        .collect()
}

fn table(results: &Results, workload: &str) -> Vec<TableRow> {
    let recs: Vec<&Record> = results
        .records
        .iter()
        .filter(|r| r.workload == workload)
        .collect();
    let mut keys: Vec<(Metric, Option<u64>)> = recs.iter().map(|r| (r.metric, r.size)).collect();
    keys.sort();
    keys.dedup();
    keys.sort_by_key(|(m, size)| (*size, *m));
    let subjects: Vec<&str> = results
        .subjects
        .iter()
        .map(|s| s.name.as_str())
        .filter(|s| recs.iter().any(|r| r.scheduler == *s))
        .collect();
    keys.into_iter()
        .map(|(m, size)| {
            let best = m
                .ranks()
                .then(|| results.best_peer(workload, m, size))
                .flatten();
            TableRow {
                label: with_size(m, format!("{} ({})", m.label(), m.unit()), size),
                cells: subjects
                    .iter()
                    .map(|s| cell(results.get(s, workload, m, size), best))
                    .collect(),
            }
        })
        .collect()
}

fn cell(r: Option<&Record>, best: Option<f64>) -> CellView {
    let Some(r) = r else {
        return CellView {
            text: "–".into(),
            ratio: String::new(),
            spread: String::new(),
            class: "",
            title: String::new(),
            flags: String::new(),
        };
    };
    let ratio = best
        .filter(|b| b.abs() > f64::EPSILON && r.value.is_finite())
        .map(|b| r.value / b);
    let dirty = r.samples.iter().filter(|s| !s.clean).count();
    let samples: Vec<String> = r
        .samples
        .iter()
        .map(|s| {
            format!(
                "{}{}",
                fmt_num(s.value),
                if s.clean { "" } else { " (not used)" }
            )
        })
        .collect();
    let mut flags = Vec::new();
    if r.unstable {
        flags.push("unstable".to_owned());
    }
    if dirty > 0 {
        flags.push(format!("{dirty} repeat(s) left out"));
    }
    CellView {
        text: fmt_num(r.value),
        ratio: ratio.map_or_else(String::new, |x| format!("×{}", fmt_ratio(x))),
        spread: if r.spread > 0.0 {
            format!("±{:.0}%", r.spread * 50.0)
        } else {
            String::new()
        },
        class: match ratio {
            _ if r.unstable || dirty > 0 => "unstable",
            Some(x) if (x - 1.0).abs() < 1e-9 => "best",
            Some(x) if !(0.5..=2.0).contains(&x) => "worse",
            _ => "",
        },
        title: format!("samples: {}", samples.join(", ")),
        flags: flags.join(", "),
    }
}

/// The verdict as Markdown (printed by `workbench run`).
pub fn verdict_markdown(results: &Results) -> String {
    let mut s = String::from(
        "| workload | judged by | best of ours | best overall | margin | noise |\n|---|---|---|---|---|---|\n",
    );
    for v in verdicts(results) {
        let r = VerdictRow::new(&v);
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.workload, r.figure, r.ours, r.best, r.margin, r.noise
        ));
    }
    s
}

/// The environment table's line on the hardware floors.
fn floors_text(f: &crate::record::Floors) -> String {
    let counter = if f.ordered_counter > 0.0 {
        format!(
            ", a read of the CPU's counter after the instructions before it {:.1} ns",
            f.ordered_counter
        )
    } else {
        String::new()
    };
    // A run made before the stream's floor was measured has none.
    let stream = if f.cancel_stream > 0.0 {
        format!(
            "; a cancel in a loop of random-order cancels at 1e6 pending, \
             stripped to a read of its handle and a CAS of its state word, \
             {:.1} ns: the least `cancel_batch` can take there (the loads of \
             several cancels overlap)",
            f.cancel_stream
        )
    } else {
        String::new()
    };
    let wake = if f.timed_wake > 0.0 {
        format!(
            "; a wake-up from a 1 ms timed wait {:.1} µs of CPU: the least \
             each of a driver thread's wake-ups costs (`run_wakeups_per_s`), \
             however little it does",
            f.timed_wake / 1e3
        )
    } else {
        String::new()
    };
    format!(
        "clock read {:.1} ns{counter}, locked read-modify-write {:.1} ns, \
         a load that waits for the one before it over {} MiB {:.0} ns: \
         the least a schedule (one reading of the time), a thread-safe call \
         (one locked instruction) and one cancel at 1e6 pending in random \
         order (its timer in no cache) can take here{stream}{wake}",
        f.clock_read,
        f.locked_rmw,
        crate::runner::measure::MEMORY_FLOOR_MIB,
        f.memory
    )
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn numbers_and_ratios_keep_their_digits() {
        assert_eq!(
            (
                fmt_ratio(0.0046),
                fmt_ratio(0.25),
                fmt_ratio(3.456),
                fmt_ratio(f64::NAN)
            ),
            ("0.0046".into(), "0.25".into(), "3.46".into(), "–".into())
        );
        assert_eq!(fmt_num(1_234_567.0), "1.23M");
        assert_eq!(fmt_num(0.0), "0.00");
    }

    /// A chart plotters could not draw says why where it would stand.
    #[test]
    fn a_chart_that_was_not_drawn_says_why_in_its_place() {
        let results = Results::new("t".into(), crate::record::Environment::default(), 1);
        let chart = Chart {
            id: "lateness-burst".into(),
            title: "lateness".into(),
            svg: Err(crate::report::charts::ChartError(
                "no room for the axis".into(),
            )),
        };
        let html = render(&results, &[chart]).expect("renders");
        assert!(
            html.contains("chart not drawn: no room for the axis"),
            "{html}"
        );
    }

    /// Repeats whose cross-core round trips differ by more than ×2 get a
    /// note saying the host moved the CPUs; alike ones only the range.
    #[test]
    fn a_host_that_moved_the_cpus_is_named_on_the_page() {
        let run = |handoff_ns| crate::record::RunInfo {
            subject: "heap".into(),
            workload: "w".into(),
            repeat: 0,
            status: RunStatus::Ok,
            load: 0.5,
            handoff_ns,
            seconds: 1.0,
            start: 0.0,
        };
        let mut results = Results::new("t".into(), crate::record::Environment::default(), 1);
        results.runs = vec![run(0.0), run(98.0), run(120.0)];
        let html = render(&results, &[]).expect("renders");
        assert!(html.contains("98 to 120 ns after the repeats"), "{html}");
        assert!(!html.contains("the host moved"), "{html}");
        results.runs.push(run(351.0));
        let html = render(&results, &[]).expect("renders");
        assert!(
            html.contains("went from 98 to 351 ns between repeats: the host moved"),
            "{html}"
        );
    }

    #[test]
    fn the_hardware_floors_are_on_the_page() {
        let mut results = Results::new("t".into(), crate::record::Environment::default(), 1);
        let html = render(&results, &[]).expect("renders");
        assert!(html.contains("hardware floors"), "{html}");
        assert!(!html.contains("clock read"), "none measured: {html}");
        results.floors = Some(crate::record::Floors {
            clock_read: 21.96,
            ordered_counter: 15.3,
            locked_rmw: 4.87,
            memory: 109.8,
            cancel_stream: 0.0,
            timed_wake: 0.0,
        });
        let html = render(&results, &[]).expect("renders");
        assert!(
            html.contains("clock read 22.0 ns, a read of the CPU&#39;s counter after the instructions before it 15.3 ns, locked read-modify-write 4.9 ns, a load that waits for the one before it over 64 MiB 110 ns"),
            "{html}"
        );
        assert!(
            !html.contains("random-order cancels"),
            "not measured: {html}"
        );
        results.floors = results.floors.map(|f| crate::record::Floors {
            cancel_stream: 17.26,
            ..f
        });
        let html = render(&results, &[]).expect("renders");
        assert!(html.contains("CAS of its state word, 17.3 ns"), "{html}");
        assert!(!html.contains("timed wait"), "not measured: {html}");
        results.floors = results.floors.map(|f| crate::record::Floors {
            timed_wake: 28_540.0,
            ..f
        });
        let html = render(&results, &[]).expect("renders");
        assert!(
            html.contains("a wake-up from a 1 ms timed wait 28.5 µs of CPU"),
            "{html}"
        );
    }

    #[test]
    fn equal_figures_are_level_not_ahead() {
        let entry = |subject: &str, value| crate::report::verdict::Entry {
            subject: subject.into(),
            value,
            spread: 0.0,
        };
        let mut v = Verdict {
            workload: "idle".into(),
            metric: Metric::WakeupsPerS,
            size: None,
            ours: Some(entry("heap", 0.0)),
            peer: Some(entry("tokio-sleep", 0.0)),
            factor: Some(1.0),
            ours_ahead: true,
            beyond_noise: false,
            fires_early: Vec::new(),
            peer_early: None,
            ours_wakes: None,
        };
        assert_eq!(VerdictRow::new(&v).margin, "level with tokio-sleep");
        v.ours = Some(entry("heap", 2.0));
        v.peer = Some(entry("tokio-sleep", 1.0));
        v.factor = Some(2.0);
        v.ours_ahead = false;
        assert_eq!(
            VerdictRow::new(&v).margin,
            "tokio-sleep ahead of ours by ×2.00"
        );
        v.peer_early = Some((942, 1001));
        assert_eq!(
            VerdictRow::new(&v).margin,
            "tokio-sleep ahead of ours by ×2.00; tokio-sleep ran 942 of its 1001 timers before their deadline"
        );
        v.ours_wakes = Some((966.0, 190.4));
        assert!(
            VerdictRow::new(&v).margin.ends_with(
                "; heap's 966 wake-ups a second come to about 190 ns of its 2.00 ns a timer \
                 at this machine's cost of a wake-up (the hardware floors below)"
            ),
            "{}",
            VerdictRow::new(&v).margin
        );
    }
}
