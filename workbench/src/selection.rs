//! Which subjects run on which workloads: every pair (`workbench run
//! --all`), the pairs named on the command line, or the **default
//! selection**, computed here so that the first run answers in minutes.
//!
//! The default selection ([`RULE`]) is a function of three tables: the
//! registry ([`crate::subjects::all`]: who runs which kind of workload), the
//! originals table ([`crate::report::originals::ORIGINALS`]: our four
//! algorithms and the Java originals each clones), and a reference run
//! ([`Reference`], `workbench/reference.toml`): the ranking of every subject
//! on every verdict figure and the seconds every run took, written by
//! `workbench reference` from the `results.json` of a `workbench run --all`.
//! A peer or a workload added later joins without an edit here: an original
//! at once (from the originals table), any peer as soon as the reference
//! is written again from a run that measured it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::estimate;
use crate::record::{Metric, Results, RunStatus, SelectionInfo, SubjectKind};
use crate::report::originals;
use crate::runner::Subject;
use crate::spec::Workload;

/// The reference run the default selection is computed from.
pub const REFERENCE: &str = include_str!("../reference.toml");

/// What the default selection may cost: the reference run's seconds of
/// every chosen run and subject start, times the repeats. Its runs take
/// about this long on the machine the reference ran on, about four
/// minutes in all with the start and the report. Enough for a peer on
/// every verdict row of our four's workloads but `idle` (at 220 s,
/// `scale` and `keepalive` had none).
pub const BUDGET_SECONDS: f64 = 230.0;

/// The share of [`BUDGET_SECONDS`] above which our four's runs of one
/// workload are too long for the default: it runs the best of ours on its
/// first figure instead (the calendar workload, whose runs each watch a
/// wall-clock window, would otherwise take 90 s of it).
pub const LONG_SHARE: f64 = 0.25;

/// Repeats of every (subject, workload) unless `--repeats` says otherwise.
/// Three is the fewest whose median drops one stray repeat, and the count
/// the noise mark is calibrated on: a figure is unstable when its range
/// over the repeats exceeds twice the run's median range, and the range of
/// two repeats reads about two thirds of the range of three (for normal
/// noise, 1.13σ against 1.69σ), so with fewer both marks would say less.
pub const REPEATS: usize = 3;

/// The default selection in one paragraph (`workbench list`, `--help`,
/// the page, the READMEs say it in these words).
pub const RULE: &str = "every shipped workload, quick size, 3 repeats. On each: our four algorithms (the originals \
    table's heap, stpe, wheel, hier; a workload none of them runs, such as distributed, gets instead the best of ours \
    and the strongest peer on its first verdict figure in the reference run; one whose runs of our four would take \
    more than a quarter of the budget, such as calendar, gets the best of ours on its first verdict figure, and on \
    the others within the budget). Then, as long as the reference run's \
    seconds of the chosen runs add up to at most 230 s, cheapest first within each step: on each figure the verdict \
    judges a workload by, the peer that was strongest in the reference run (workbench/reference.toml, written from a \
    `run --all`); then our four's originals (per row of the originals table); then the runner-up peer. \
    `run --all` runs every subject on every workload.";

/// One figure of the reference run: every subject ranked, best first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// The workload.
    pub workload: String,
    /// The verdict figure.
    pub metric: Metric,
    /// The pending count it was ranked at (sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Subjects and their medians, best first.
    pub ranked: Vec<(String, f64)>,
}

/// A reference run, as the default selection reads it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// The run's id.
    pub run: String,
    /// The commit it measured.
    pub commit: String,
    /// Its repeats.
    pub repeats: usize,
    /// The 1-minute load average when it started.
    pub load: f64,
    /// How long it took, seconds.
    pub wall_seconds: f64,
    /// Every verdict figure of every workload.
    #[serde(default)]
    pub figure: Vec<Figure>,
    /// workload -> subject -> the median seconds of its runs.
    #[serde(default)]
    pub seconds: BTreeMap<String, BTreeMap<String, f64>>,
    /// subject -> the median seconds of starting it (runner, warm-up).
    #[serde(default)]
    pub start: BTreeMap<String, f64>,
}

/// A results file that cannot be a reference.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// Not a finished `run --all`.
    #[error("{0}")]
    NotAll(String),
    /// The shipped reference does not parse.
    #[error("workbench/reference.toml: {0}")]
    Toml(#[from] toml::de::Error),
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    })
}

impl Reference {
    /// The shipped reference (`workbench/reference.toml`).
    ///
    /// # Errors
    ///
    /// The TOML's, naming the line.
    pub fn shipped() -> Result<Reference, ReferenceError> {
        Ok(toml::from_str(REFERENCE)?)
    }

    /// The reference of a finished `run --all` and of runs of the subjects
    /// it could not start (`more`: BullMQ where Node's packages were
    /// missing, say): every verdict figure ranked as the verdict ranks it,
    /// and the seconds of every run. A subject of `more` that the first run
    /// measured is not taken again; `run` names every run used.
    ///
    /// # Errors
    ///
    /// As [`Reference::from_results`], for the first; a run of `more` that
    /// had not finished, or was made with another repeat count, is refused
    /// too.
    pub fn from_runs(all: &Results, more: &[Results]) -> Result<Reference, ReferenceError> {
        let mut merged = all.clone();
        for r in more {
            if r.partial || r.repeats != all.repeats {
                return Err(ReferenceError::NotAll(format!(
                    "{} had not finished or ran {} repeats, not {}",
                    r.run_id, r.repeats, all.repeats
                )));
            }
            let new: Vec<&str> = r
                .subjects
                .iter()
                .map(|s| s.name.as_str())
                .filter(|n| !all.subjects.iter().any(|s| s.name == *n))
                .collect();
            merged.subjects.extend(
                r.subjects
                    .iter()
                    .filter(|s| new.contains(&s.name.as_str()))
                    .cloned(),
            );
            merged.records.extend(
                r.records
                    .iter()
                    .filter(|x| new.contains(&x.scheduler.as_str()))
                    .cloned(),
            );
            merged.runs.extend(
                r.runs
                    .iter()
                    .filter(|x| new.contains(&x.subject.as_str()))
                    .cloned(),
            );
            merged.run_id = format!("{} + {} ({})", merged.run_id, r.run_id, new.join(", "));
            merged.wall_seconds += r.runs.iter().map(|x| x.seconds).sum::<f64>();
        }
        Reference::from_results(&merged)
    }

    /// The reference of a finished `run --all`: every verdict figure
    /// ranked as the verdict ranks it, and the seconds of every run.
    ///
    /// # Errors
    ///
    /// [`ReferenceError::NotAll`] for a partial run or one that did not
    /// run every subject (its ranking would only repeat its selection).
    pub fn from_results(results: &Results) -> Result<Reference, ReferenceError> {
        if results.partial {
            return Err(ReferenceError::NotAll(format!(
                "{} had not finished",
                results.run_id
            )));
        }
        match &results.selection {
            Some(s) if s.name == "all" => {}
            other => {
                return Err(ReferenceError::NotAll(format!(
                    "{} ran the {} selection; a reference is a `workbench run --all`",
                    results.run_id,
                    other.as_ref().map_or("unrecorded", |s| s.name.as_str())
                )))
            }
        }
        let figure = results
            .workloads
            .iter()
            .flat_map(|w| w.verdict.iter().map(move |m| (w, *m)))
            .map(|(w, metric)| {
                let rank = crate::report::verdict::ranking(results, w, metric);
                Figure {
                    workload: w.name.clone(),
                    metric,
                    size: rank.size,
                    ranked: rank
                        .entries
                        .into_iter()
                        .map(|(e, _)| (e.subject, (e.value * 1000.0).round() / 1000.0))
                        .collect(),
                }
            })
            .collect();
        let mut seconds: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
        let mut start: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in &results.runs {
            if !matches!(r.status, RunStatus::Failed { .. }) {
                seconds
                    .entry(r.workload.clone())
                    .or_default()
                    .entry(r.subject.clone())
                    .or_default()
                    .push(r.seconds);
            }
            if r.start > 0.0 {
                start.entry(r.subject.clone()).or_default().push(r.start);
            }
        }
        let round = |x: f64| (x * 100.0).round() / 100.0;
        Ok(Reference {
            run: results.run_id.clone(),
            commit: results.env.commit.clone(),
            repeats: results.repeats,
            load: results.load_start[0],
            wall_seconds: round(results.wall_seconds),
            figure,
            seconds: seconds
                .into_iter()
                .map(|(w, m)| {
                    let m = m
                        .into_iter()
                        .filter_map(|(s, v)| Some((s, round(median(v)?))))
                        .collect();
                    (w, m)
                })
                .collect(),
            start: start
                .into_iter()
                .filter_map(|(s, v)| Some((s, round(median(v)?))))
                .collect(),
        })
    }

    /// As `workbench/reference.toml`: a header saying where it came from,
    /// then one line per figure and per workload's seconds.
    pub fn to_toml(&self) -> String {
        use std::fmt::Write as _;
        let key = |k: &str| {
            if !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                k.to_owned()
            } else {
                format!("{k:?}")
            }
        };
        let table = |m: &BTreeMap<String, f64>| {
            let cells: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{} = {v:?}", key(k)))
                .collect();
            format!("{{ {} }}", cells.join(", "))
        };
        let mut out = String::from(
            "# The reference run the default selection is computed from (workbench/src/selection.rs):\n\
             # every verdict figure ranked best first, and the median seconds of every run and of\n\
             # starting every subject, of a `workbench run --all`. Written by\n\
             # `cargo run --release -p workbench -- reference reports/<run>/results.json > workbench/reference.toml`;\n\
             # write it again after adding a peer or a workload, or when the figures move.\n\n",
        );
        let _ = writeln!(out, "run = {:?}", self.run);
        let _ = writeln!(out, "commit = {:?}", self.commit);
        let _ = writeln!(out, "repeats = {}", self.repeats);
        let _ = writeln!(out, "load = {:?}", self.load);
        let _ = writeln!(out, "wall_seconds = {:?}", self.wall_seconds);
        let _ = writeln!(out, "start = {}", table(&self.start));
        for f in &self.figure {
            let ranked: Vec<String> = f
                .ranked
                .iter()
                .map(|(s, v)| format!("[{s:?}, {v:?}]"))
                .collect();
            let _ = write!(
                out,
                "\n[[figure]]\nworkload = {:?}\nmetric = {:?}\n",
                f.workload,
                f.metric.name()
            );
            if let Some(n) = f.size {
                let _ = writeln!(out, "size = {n}");
            }
            let _ = writeln!(out, "ranked = [{}]", ranked.join(", "));
        }
        out.push_str("\n[seconds]\n");
        for (w, m) in &self.seconds {
            let _ = writeln!(out, "{} = {}", key(w), table(m));
        }
        out
    }

    fn figure(&self, workload: &str, metric: Metric) -> Option<&Figure> {
        self.figure
            .iter()
            .find(|f| f.workload == workload && f.metric == metric)
    }

    /// The median seconds of a run of (subject, workload), if it ran.
    pub fn seconds(&self, subject: &str, workload: &str) -> Option<f64> {
        self.seconds.get(workload)?.get(subject).copied()
    }
}

/// Why the default selection runs a subject on a workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Why {
    /// One of our four algorithms.
    Ours,
    /// The best of ours on this figure in the reference run, on a workload
    /// none of our four runs.
    BestOfOurs(Metric),
    /// The strongest peer on this figure in the reference run.
    Strongest(Metric),
    /// The original (from the originals table) of one of our four.
    Original(String),
    /// The second-best peer on this figure in the reference run.
    RunnerUp(Metric),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Ours => f.write_str("ours"),
            Why::BestOfOurs(m) => write!(f, "best of ours on {}", m.label()),
            Why::Strongest(m) => write!(f, "strongest on {}", m.label()),
            Why::Original(of) => write!(f, "{of}'s original"),
            Why::RunnerUp(m) => write!(f, "runner-up on {}", m.label()),
        }
    }
}

/// One (subject, workload) of the default selection.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    /// The subject.
    pub subject: &'static str,
    /// The workload.
    pub workload: String,
    /// Why.
    pub why: Why,
    /// Seconds per run (the reference's, else a first guess).
    pub seconds: f64,
}

/// Which pairs a suite runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The default selection.
    Default,
    /// Every subject on every workload it runs (`--all`).
    All,
    /// The subjects named on the command line.
    Chosen,
}

/// A selection: which (subject, workload) pairs run, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// Which kind of selection.
    pub scope: Scope,
    /// The default selection's pairs (empty for the others).
    pub picks: Vec<Pick>,
    /// Pairs the default selection would have taken but for its budget.
    pub left_for_time: Vec<Pick>,
    /// What the default selection's runs cost, seconds (its estimate).
    pub seconds: f64,
    /// How the page and the terminal state it ([`Selection::describe`]).
    pub info: SelectionInfo,
}

impl Selection {
    /// Every pair (`--all`).
    pub fn all() -> Selection {
        Selection {
            scope: Scope::All,
            picks: Vec::new(),
            left_for_time: Vec::new(),
            seconds: 0.0,
            info: SelectionInfo {
                name: "all".into(),
                rule: "every subject on every workload it runs (--all)".into(),
                ..SelectionInfo::default()
            },
        }
    }

    /// The subjects and workloads named on the command line, every pair.
    pub fn chosen() -> Selection {
        Selection {
            scope: Scope::Chosen,
            info: SelectionInfo {
                name: "chosen".into(),
                rule: "the subjects and workloads named on the command line, every pair".into(),
                ..SelectionInfo::default()
            },
            ..Selection::all()
        }
    }

    /// Whether `subject` runs `workload` (a pair its kinds allow).
    pub fn includes(&self, subject: &str, workload: &str) -> bool {
        match self.scope {
            Scope::Default => self
                .picks
                .iter()
                .any(|p| p.subject == subject && p.workload == workload),
            Scope::All | Scope::Chosen => true,
        }
    }

    /// The subjects with at least one pair, in registry order.
    pub fn subjects(&self, all: &[Subject]) -> Vec<Subject> {
        all.iter()
            .filter(|s| {
                self.scope != Scope::Default || self.picks.iter().any(|p| p.subject == s.name)
            })
            .cloned()
            .collect()
    }

    /// The default selection over `workloads` ([`RULE`]).
    pub fn default_for(
        subjects: &[Subject],
        workloads: &[Workload],
        reference: &Reference,
        repeats: usize,
    ) -> Selection {
        let algorithms: Vec<(&str, &str)> = subjects
            .iter()
            .filter(|s| s.kind == SubjectKind::Algorithm)
            .map(|s| (s.name, s.about))
            .collect();
        let four = originals::principal(&algorithms);
        let find = |name: &str| subjects.iter().find(|s| s.name == name);
        let runs = |name: &str, w: &Workload| find(name).is_some_and(|s| s.runs(w));
        let kind = |name: &str| find(name).map(|s| s.kind);
        let seconds = |name: &str, w: &Workload| {
            reference
                .seconds(name, &w.name)
                .unwrap_or_else(|| estimate::run_seconds(&w.quick()))
        };
        let start = |name: &str| {
            reference.start.get(name).copied().unwrap_or_else(|| {
                match find(name).and_then(|s| s.timers.as_ref()) {
                    Some(_) => estimate::START_IN_PROCESS,
                    None => estimate::START_CHILD,
                }
            })
        };
        let mut sel = Selection {
            scope: Scope::Default,
            info: SelectionInfo {
                name: "default".into(),
                rule: RULE.into(),
                ..SelectionInfo::default()
            },
            ..Selection::all()
        };
        let mut started: BTreeSet<&str> = BTreeSet::new();
        // Adds a pair: always, or only if it fits the budget.
        let mut take = |sel: &mut Selection, name: &str, w: &Workload, why: Why, always: bool| {
            let Some(s) = find(name) else { return };
            if sel
                .picks
                .iter()
                .any(|p| p.subject == s.name && p.workload == w.name)
            {
                return;
            }
            let each = seconds(s.name, w);
            let extra = repeats as f64
                * (each
                    + if started.contains(s.name) {
                        0.0
                    } else {
                        start(s.name)
                    });
            let pick = Pick {
                subject: s.name,
                workload: w.name.clone(),
                why,
                seconds: each,
            };
            if always || sel.seconds + extra <= BUDGET_SECONDS {
                sel.seconds += extra;
                started.insert(s.name);
                sel.picks.push(pick);
            } else {
                sel.left_for_time.push(pick);
            }
        };
        // The best-ranked subject of `want` kind on a figure, among those
        // that run the workload.
        let best = |w: &Workload, m: Metric, want: SubjectKind, nth: usize| {
            reference.figure(&w.name, m).and_then(|f| {
                f.ranked
                    .iter()
                    .filter(|(s, _)| kind(s) == Some(want) && runs(s, w))
                    .nth(nth)
                    .map(|(s, _)| s.clone())
            })
        };
        // Every step: (subject, workload, why), the mandatory one first.
        let mut steps: Vec<Vec<(String, &Workload, Why)>> = vec![Vec::new(); 4];
        for w in workloads {
            let mine: Vec<&str> = four.iter().copied().filter(|a| runs(a, w)).collect();
            let metrics = w.verdict_metrics();
            let ours_seconds: f64 =
                mine.iter().map(|a| seconds(a, w)).sum::<f64>() * repeats as f64;
            if ours_seconds > LONG_SHARE * BUDGET_SECONDS {
                // Too long for all four: the best of ours on the first
                // figure, and on the others if the budget allows.
                for (i, m) in metrics.iter().enumerate() {
                    let ours = best(w, *m, SubjectKind::Algorithm, 0)
                        .filter(|a| mine.contains(&a.as_str()))
                        .unwrap_or_else(|| mine[0].to_owned());
                    steps[usize::from(i > 0)].push((ours, w, Why::BestOfOurs(*m)));
                }
            } else {
                for a in &mine {
                    steps[0].push(((*a).to_owned(), w, Why::Ours));
                }
            }
            if mine.is_empty() {
                // The best of ours and the strongest peer on the first
                // figure, so that the workload's verdict compares
                // something (with no reference, the registry's first);
                // the best of ours on the others as the strongest peers.
                let first = |kind: SubjectKind| {
                    subjects
                        .iter()
                        .find(|s| s.kind == kind && s.runs(w))
                        .map(|s| s.name.to_owned())
                };
                for (i, m) in metrics.iter().enumerate() {
                    let ours = best(w, *m, SubjectKind::Algorithm, 0);
                    if i == 0 {
                        let peer =
                            best(w, *m, SubjectKind::Peer, 0).or_else(|| first(SubjectKind::Peer));
                        let ours = ours.or_else(|| first(SubjectKind::Algorithm));
                        steps[0].extend(ours.map(|a| (a, w, Why::BestOfOurs(*m))));
                        steps[0].extend(peer.map(|p| (p, w, Why::Strongest(*m))));
                    } else {
                        steps[1].extend(ours.map(|a| (a, w, Why::BestOfOurs(*m))));
                    }
                }
            }
            for m in &metrics {
                steps[1]
                    .extend(best(w, *m, SubjectKind::Peer, 0).map(|p| (p, w, Why::Strongest(*m))));
                steps[3]
                    .extend(best(w, *m, SubjectKind::Peer, 1).map(|p| (p, w, Why::RunnerUp(*m))));
            }
            for a in &mine {
                for row in originals::originals_of(a, &algorithms) {
                    // Of the row's configurations, the one that ranked best
                    // on the workload's first figure; one the reference
                    // never measured, in the table's order.
                    let rank = |o: &str| {
                        metrics
                            .first()
                            .and_then(|m| reference.figure(&w.name, *m))
                            .and_then(|f| f.ranked.iter().position(|(s, _)| s == o))
                            .unwrap_or(usize::MAX)
                    };
                    let theirs = row.iter().filter(|o| runs(o, w));
                    if let Some(o) = theirs.min_by_key(|o| rank(o)) {
                        steps[2].push(((*o).to_owned(), w, Why::Original((*a).to_owned())));
                    }
                }
            }
        }
        for (i, mut step) in steps.into_iter().enumerate() {
            // Within a step, the cheapest first: the most figures in the budget.
            if i > 0 {
                step.sort_by(|a, b| seconds(&a.0, a.1).total_cmp(&seconds(&b.0, b.1)));
            }
            for (name, w, why) in step {
                take(&mut sel, &name, w, why, i == 0);
            }
        }
        sel
    }

    /// Fills [`Selection::info`] for a run of `workloads`: its rule, who
    /// runs each workload and why, who does not run, and how to run the
    /// rest.
    pub fn describe(
        mut self,
        all: &[Subject],
        workloads: &[Workload],
        reference: &Reference,
    ) -> Selection {
        self.info = self.account(all, workloads, reference);
        self
    }

    fn account(
        &self,
        all: &[Subject],
        workloads: &[Workload],
        reference: &Reference,
    ) -> SelectionInfo {
        let ran: BTreeSet<&str> = self.subjects(all).iter().map(|s| s.name).collect();
        let left_out: Vec<String> = all
            .iter()
            .filter(|s| !ran.contains(s.name) && workloads.iter().any(|w| s.runs(w)))
            .map(|s| s.name.to_owned())
            .collect();
        let all_time = if reference.wall_seconds > 0.0 {
            format!(
                ", about {} on the machine of the reference run ({})",
                estimate::human(std::time::Duration::from_secs_f64(reference.wall_seconds)),
                reference.run
            )
        } else {
            String::new()
        };
        let rest = format!(
            "`cargo run --release -p workbench -- run --all`: every subject on every workload{all_time}; \
             `run -s NAME -w WORKLOAD`: one pair"
        );
        match self.scope {
            Scope::All => self.info.clone(),
            Scope::Chosen => SelectionInfo {
                left_out,
                rest,
                ..self.info.clone()
            },
            Scope::Default => SelectionInfo {
                name: "default".into(),
                rule: format!(
                    "{RULE} Reference run: {} (commit {}); by its times, this selection's runs take about {}.",
                    reference.run,
                    reference.commit,
                    estimate::human(std::time::Duration::from_secs_f64(self.seconds))
                ),
                lines: workloads
                    .iter()
                    .map(|w| {
                        let mut line = format!("{}: ", w.name);
                        let picks: Vec<String> = self
                            .picks
                            .iter()
                            .filter(|p| p.workload == w.name)
                            .map(|p| match p.why {
                                Why::Ours => p.subject.to_owned(),
                                _ => format!("{} ({})", p.subject, p.why),
                            })
                            .collect();
                        line.push_str(&picks.join(", "));
                        let left: Vec<String> = self
                            .left_for_time
                            .iter()
                            .filter(|p| p.workload == w.name)
                            .map(|p| format!("{} ({}, {:.1} s a run)", p.subject, p.why, p.seconds))
                            .collect();
                        if !left.is_empty() {
                            line.push_str("; left out for time: ");
                            line.push_str(&left.join(", "));
                        }
                        if w.verdict_metrics()
                            .iter()
                            .all(|m| reference.figure(&w.name, *m).is_none())
                        {
                            line.push_str("; not in the reference run: its peers run with --all");
                        }
                        line
                    })
                    .collect(),
                left_out,
                rest,
            },
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn shipped() -> (Vec<Subject>, Vec<Workload>, Reference) {
        (
            crate::subjects::all(),
            crate::workloads::shipped().unwrap(),
            Reference::shipped().unwrap(),
        )
    }

    /// The shipped reference names only subjects and workloads that
    /// exist, ranks every verdict figure of every shipped workload, and has
    /// the seconds of each of their runs.
    #[test]
    fn the_shipped_reference_matches_the_registry() {
        let (subjects, workloads, reference) = shipped();
        assert!(reference.repeats >= REPEATS && reference.wall_seconds > 0.0);
        for f in &reference.figure {
            let w = workloads.iter().find(|w| w.name == f.workload);
            let w = w.unwrap_or_else(|| panic!("no workload {}", f.workload));
            assert!(
                w.verdict_metrics().contains(&f.metric),
                "{}: {}",
                f.workload,
                f.metric
            );
            for (r, _) in &f.ranked {
                assert!(subjects.iter().any(|s| s.name == r), "no subject {r}");
                assert!(reference.seconds(r, &f.workload).is_some());
            }
        }
        for w in &workloads {
            for m in w.verdict_metrics() {
                assert!(
                    reference.figure(&w.name, m).is_some(),
                    "{} {m} is not in it",
                    w.name
                );
            }
        }
    }

    /// The default selection runs our four on every in-process workload,
    /// adds the strongest peer of each verdict figure, stays within its
    /// budget, and its subjects keep the registry's order.
    #[test]
    fn the_default_selection_runs_our_four_the_strongest_and_fits_its_budget() {
        let (subjects, workloads, reference) = shipped();
        let sel = Selection::default_for(&subjects, &workloads, &reference, REPEATS);
        let four = ["heap", "stpe", "wheel", "hier"];
        for w in workloads.iter().filter(|w| {
            four.iter()
                .any(|a| crate::subjects::find(a).unwrap().runs(w))
        }) {
            let ours: f64 = four
                .iter()
                .filter_map(|a| reference.seconds(a, &w.name))
                .sum();
            if ours * REPEATS as f64 > LONG_SHARE * BUDGET_SECONDS {
                // Too long for all four: the best of ours on each figure.
                assert!(
                    four.iter().any(|a| sel.includes(a, &w.name)),
                    "none of ours on {}",
                    w.name
                );
                assert!(!four.iter().all(|a| sel.includes(a, &w.name)), "{}", w.name);
            } else {
                for a in four {
                    assert!(sel.includes(a, &w.name), "{a} on {}", w.name);
                }
            }
        }
        assert!(
            !sel.includes("heap-slack50", "burst"),
            "variants are left to --all"
        );
        // Peers join only within the budget, and our four with the
        // distributed pair leave room for some.
        let optional = |p: &&Pick| {
            !matches!(p.why, Why::Ours | Why::BestOfOurs(_)) && p.workload != "distributed"
        };
        assert!(
            sel.picks.iter().any(|p| optional(&p)),
            "no peer fits: {:?}",
            sel.left_for_time
        );
        assert!(sel.seconds <= BUDGET_SECONDS, "{} s", sel.seconds);
        let strongest = sel
            .picks
            .iter()
            .filter(|p| matches!(p.why, Why::Strongest(_)))
            .count();
        let left = sel
            .left_for_time
            .iter()
            .filter(|p| matches!(p.why, Why::Strongest(_)))
            .count();
        assert!(strongest > 0 && strongest + left > 0);
        // Each strongest pick is the reference's best peer on its figure.
        for p in sel.picks.iter() {
            if let Why::Strongest(m) = p.why {
                let f = reference.figure(&p.workload, m).unwrap();
                let (best, _) = f
                    .ranked
                    .iter()
                    .find(|(r, _)| {
                        subjects
                            .iter()
                            .any(|s| s.name == r && s.kind == SubjectKind::Peer)
                    })
                    .unwrap();
                assert_eq!(best, p.subject);
            }
        }
        let names: Vec<&str> = sel.subjects(&subjects).iter().map(|s| s.name).collect();
        let order: Vec<usize> = names
            .iter()
            .map(|n| subjects.iter().position(|s| s.name == *n).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{names:?}");
    }

    /// A peer the reference never measured still joins when it is an
    /// original of one of our four (the originals table names it); a
    /// workload the reference lacks runs our four and says so.
    #[test]
    fn an_unmeasured_original_and_an_unmeasured_workload_are_handled() {
        let (subjects, workloads, _) = shipped();
        let empty = Reference::default();
        let burst: Vec<Workload> = workloads
            .into_iter()
            .filter(|w| w.name == "burst")
            .collect();
        let sel = Selection::default_for(&subjects, &burst, &empty, REPEATS);
        assert!(sel.includes("heap", "burst") && sel.includes("hier", "burst"));
        assert!(sel
            .picks
            .iter()
            .all(|p| !matches!(p.why, Why::Strongest(_))));
        // HeapTimer's original, jdk-timer, from the originals table alone.
        assert!(sel
            .picks
            .iter()
            .chain(&sel.left_for_time)
            .any(|p| p.subject == "jdk-timer" && p.why == Why::Original("heap".into())));
        let info = sel.describe(&subjects, &burst, &empty).info;
        assert!(
            info.lines[0].contains("not in the reference run"),
            "{:?}",
            info.lines
        );
        assert!(info.rest.contains("--all"));
        assert!(info.left_out.contains(&"nexus".to_owned()));
    }

    /// `workbench reference` refuses what is not a finished `run --all`.
    #[test]
    fn a_reference_comes_from_a_finished_run_of_every_subject() {
        let mut r = Results::new("t".into(), crate::record::Environment::default(), 3);
        assert!(Reference::from_results(&r).is_err(), "partial");
        r.partial = false;
        r.selection = Some(SelectionInfo {
            name: "default".into(),
            ..SelectionInfo::default()
        });
        assert!(Reference::from_results(&r).is_err(), "not --all");
        r.selection.as_mut().unwrap().name = "all".into();
        let back: Reference =
            toml::from_str(&Reference::from_results(&r).unwrap().to_toml()).unwrap();
        assert_eq!(back.run, "t");
    }

    /// A second run adds the subjects the first could not start, and only
    /// those; one with other repeats is refused.
    #[test]
    fn a_reference_takes_the_subjects_a_second_run_adds() {
        use crate::record::{Environment, SubjectInfo};
        let subject = |name: &str| SubjectInfo {
            name: name.into(),
            kind: SubjectKind::Peer,
            about: String::new(),
        };
        let mut all = Results::new("a".into(), Environment::default(), 3);
        all.partial = false;
        all.selection = Some(SelectionInfo {
            name: "all".into(),
            ..SelectionInfo::default()
        });
        all.subjects = vec![subject("heap")];
        let mut more = Results::new("b".into(), Environment::default(), 3);
        more.partial = false;
        more.subjects = vec![subject("heap"), subject("bullmq-1w")];
        let r = Reference::from_runs(&all, &[more.clone()]).unwrap();
        assert_eq!(r.run, "a + b (bullmq-1w)");
        more.repeats = 1;
        assert!(Reference::from_runs(&all, &[more]).is_err());
    }
}
