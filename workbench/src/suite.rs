//! A suite: every chosen subject × every workload it runs × repeats, into
//! one [`Results`], handed out after every finished run so that a run
//! stopped midway keeps what it measured.
//!
//! Progress shows the time left ([`crate::estimate::Eta`]): first guessed
//! from the workloads' sizes, then learnt from the runs that finished.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::estimate::{self, Eta};
use crate::record::{
    Environment, Measurement, Metric, Results, RunInfo, RunStatus, Samples, WorkloadInfo,
};
use crate::runner::Subject;
use crate::runner::{measure, RunContext, Runner};
use crate::selection::Selection;
use crate::spec::{Workload, WorkloadKind};

/// What to run.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The subjects, in report order.
    pub subjects: Vec<Subject>,
    /// The workloads, with their profile already applied.
    pub workloads: Vec<Workload>,
    /// Repeats of every (subject, workload).
    pub repeats: usize,
    /// The run's id.
    pub run_id: String,
    /// The environment to stamp every record with.
    pub env: Environment,
    /// Show progress: bars on a terminal, else one line per finished run.
    pub progress: bool,
    /// Notes to carry into the report (how the sizes were chosen).
    pub notes: Vec<String>,
    /// Which of the pairs the subjects' kinds allow run
    /// ([`Selection::all`]: every one).
    pub selection: Selection,
    /// Time the hardware floors as the run starts ([`measure::floors`]):
    /// about 0.2 s of a release build, 2 s of a debug one.
    pub floors: bool,
}

/// The running suite's progress bars, so that a line printed meanwhile
/// ([`println`]) goes above them instead of through them.
static BARS: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// Prints a line to stderr, above the progress bars of a running suite.
pub fn println(line: &str) {
    let bars = BARS.lock().map(|b| b.clone()).unwrap_or(None);
    match bars {
        Some(m) if !m.is_hidden() => {
            let _ = m.println(line);
        }
        _ => eprintln!("{line}"),
    }
}

/// A selection that runs nothing.
#[derive(Debug, thiserror::Error)]
#[error("nothing to run: none of the chosen subjects ({subjects}) runs any of the chosen workloads ({workloads})")]
pub struct NothingToRun {
    /// The subjects chosen.
    pub subjects: String,
    /// The workloads chosen.
    pub workloads: String,
}

impl Suite {
    /// A suite for tests: every pair of `subjects` and `workloads` (the
    /// kinds allowing), `repeats` each, no progress output, no notes, no
    /// hardware floors (their own test times them), the environment
    /// stamped with the profile `test`. The command line sets every field
    /// itself.
    pub fn test(
        subjects: Vec<Subject>,
        workloads: Vec<Workload>,
        repeats: usize,
        run_id: &str,
    ) -> Suite {
        Suite {
            subjects,
            workloads,
            repeats,
            run_id: run_id.to_owned(),
            env: crate::env::detect("test"),
            progress: false,
            notes: Vec::new(),
            selection: Selection::all(),
            floors: false,
        }
    }

    /// Whether `s` runs `w`: its kinds allow it and the selection has it.
    pub fn runs(&self, s: &Subject, w: &Workload) -> bool {
        s.runs(w) && self.selection.includes(s.name, &w.name)
    }

    /// The (subject, workload) pairs that will run.
    pub fn pairs(&self) -> usize {
        self.subjects
            .iter()
            .map(|s| self.workloads.iter().filter(|w| self.runs(s, w)).count())
            .sum()
    }

    /// The first guess of the whole run's time, from the workloads' sizes
    /// and durations ([`estimate::run_seconds`]).
    pub fn guess(&self) -> std::time::Duration {
        self.eta().left()
    }

    /// The last (subject, workload) of a repeat among the subjects not
    /// skipped: its run ends the repeat.
    fn last_pair(&self, skipped: &Skipped) -> Option<(&'static str, String)> {
        self.subjects
            .iter()
            .filter(|s| !skipped.contains(s.name))
            .flat_map(|s| {
                self.workloads
                    .iter()
                    .filter(|w| self.runs(s, w))
                    .map(|w| (s.name, w.name.clone()))
                    .collect::<Vec<_>>()
            })
            .last()
    }

    fn eta(&self) -> Eta {
        let plan = self.subjects.iter().flat_map(|s| {
            self.workloads
                .iter()
                .filter(move |w| self.runs(s, w))
                .map(move |w| {
                    (
                        s.name,
                        s.timers.is_none(),
                        w.name.as_str(),
                        estimate::run_seconds(w),
                    )
                })
        });
        Eta::new(plan, self.repeats)
    }

    /// Checks that the selection runs something.
    ///
    /// # Errors
    ///
    /// [`NothingToRun`], naming the selection.
    pub fn check(&self) -> Result<(), NothingToRun> {
        if self.pairs() > 0 {
            return Ok(());
        }
        let names = |v: Vec<&str>| {
            if v.is_empty() {
                "none".to_owned()
            } else {
                v.join(", ")
            }
        };
        Err(NothingToRun {
            subjects: names(self.subjects.iter().map(|s| s.name).collect()),
            workloads: names(self.workloads.iter().map(|w| w.name.as_str()).collect()),
        })
    }

    /// Runs everything; `update` gets the results so far after every
    /// finished (subject, workload, repeat), marked partial, and the final
    /// results are returned. A subject that cannot run here, or a run that
    /// fails, becomes a note and a failed repeat; the suite goes on.
    ///
    /// Repeats are outermost, so slow drifts of the machine hit every
    /// subject alike; within a repeat each subject's runner is made, used
    /// for its workloads and dropped, so at most one child JVM lives at a
    /// time.
    pub fn run(self, update: &mut dyn FnMut(&Results)) -> Results {
        let started = measure::now();
        let mut state = State {
            results: Results {
                load_start: measure::load_average(),
                timing_overhead_ns: measure::timing_overhead(),
                floors: self.floors.then(measure::floors),
                workloads: self.workloads.iter().map(info).collect(),
                notes: self.notes.clone(),
                selection: Some(self.selection.info.clone()),
                ..Results::new(self.run_id.clone(), self.env.clone(), self.repeats)
            },
            samples: Samples::default(),
        };
        let tty = std::io::stderr().is_terminal();
        let multi = MultiProgress::with_draw_target(if self.progress && tty {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        if let Ok(mut bars) = BARS.lock() {
            *bars = Some(multi.clone());
        }
        let lines = self.progress && !tty;
        let total = (self.repeats * self.pairs()) as u64;
        let mut eta = self.eta();
        let overall = multi.add(ProgressBar::new(total));
        overall.set_style(style(
            "{prefix:>14} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, {msg}",
        ));
        overall.set_prefix("suite");
        overall.set_message(format!("~{} left", estimate::human(eta.left())));
        let current = multi.add(ProgressBar::new(1));
        current.set_style(style("{prefix:>14} [{bar:30}] {msg}"));
        let ctx = RunContext {
            timing_overhead_ns: state.results.timing_overhead_ns,
            progress: current.clone(),
        };
        let mut skipped = Skipped::default();
        let mut done = 0u64;
        for rep in 0..self.repeats {
            let mut last = self.last_pair(&skipped);
            let mut told = false;
            for s in &self.subjects {
                let workloads: Vec<&Workload> =
                    self.workloads.iter().filter(|w| self.runs(s, w)).collect();
                if workloads.is_empty() || skipped.contains(s.name) {
                    continue;
                }
                let t0 = measure::now();
                let mut runner = match (s.runner)() {
                    Ok(r) => r,
                    Err(why) => {
                        skipped.note(&mut state.results.notes, s.name, &why.to_string());
                        eta.skipped(s.name);
                        last = self.last_pair(&skipped);
                        done += workloads.len() as u64;
                        overall.set_position(done);
                        continue;
                    }
                };
                if !state.results.subjects.iter().any(|i| i.name == s.name) {
                    state.results.subjects.push(s.info());
                }
                warm_up(s, runner.as_mut(), &ctx);
                let mut start = measure::now().duration_since(t0).as_secs_f64();
                for w in workloads {
                    current.set_prefix(s.name);
                    current.set_message(format!(
                        "{} (repeat {}/{})",
                        w.name,
                        rep + 1,
                        self.repeats
                    ));
                    let t0 = measure::now();
                    let outcome = runner.run(w, &ctx);
                    let seconds = measure::now().duration_since(t0).as_secs_f64();
                    let info = state.record(s.name, w, rep, outcome, seconds, start);
                    eta.finished(s.name, &w.name, seconds, start);
                    start = 0.0;
                    done += 1;
                    overall.set_position(done);
                    let left = format!("~{} left", estimate::human(eta.left()));
                    overall.set_message(left.clone());
                    if lines {
                        eprintln!(
                            "workbench: [{done}/{total}] {} on {} (repeat {}/{}): {} in {seconds:.1} s, load {:.2}, {left}",
                            s.name,
                            w.name,
                            rep + 1,
                            self.repeats,
                            status_text(&info.status),
                            info.load
                        );
                    }
                    state.results.wall_seconds =
                        measure::now().duration_since(started).as_secs_f64();
                    if last
                        .as_ref()
                        .is_some_and(|(a, b)| *a == s.name && *b == w.name)
                    {
                        state.results.repeats_done = rep + 1;
                        told = true;
                    }
                    update(&state.snapshot(&self.workloads));
                }
            }
            if !told {
                // The repeat's last subjects could not run here: its end
                // still gets an update.
                state.results.repeats_done = rep + 1;
                update(&state.snapshot(&self.workloads));
            }
        }
        current.finish_and_clear();
        overall.finish_and_clear();
        if let Ok(mut bars) = BARS.lock() {
            *bars = None;
        }
        state.results.wall_seconds = measure::now().duration_since(started).as_secs_f64();
        let mut results = state.snapshot(&self.workloads);
        results.partial = false;
        // Report order: the subjects as chosen.
        let order: Vec<&str> = self.subjects.iter().map(|s| s.name).collect();
        results
            .subjects
            .sort_by_key(|i| order.iter().position(|n| *n == i.name));
        results
    }
}

struct State {
    results: Results,
    samples: Samples,
}

/// The subjects that cannot run here, and the note that says why: one note
/// per reason, naming every subject it stopped (`bullmq-1w, bullmq-2w,
/// bullmq-4w skipped: Node is not installed …`).
#[derive(Default)]
struct Skipped {
    /// (why, index of its note, subjects).
    reasons: Vec<(String, usize, Vec<&'static str>)>,
}

impl Skipped {
    fn contains(&self, subject: &str) -> bool {
        self.reasons.iter().any(|(_, _, v)| v.contains(&subject))
    }

    fn note(&mut self, notes: &mut Vec<String>, subject: &'static str, why: &str) {
        let i = match self.reasons.iter().position(|(w, _, _)| w == why) {
            Some(i) => i,
            None => {
                notes.push(String::new());
                self.reasons
                    .push((why.to_owned(), notes.len() - 1, Vec::new()));
                self.reasons.len() - 1
            }
        };
        let (_, at, subjects) = &mut self.reasons[i];
        subjects.push(subject);
        notes[*at] = format!("{} skipped: {why}", subjects.join(", "));
    }
}

impl State {
    fn record(
        &mut self,
        subject: &str,
        w: &Workload,
        repeat: usize,
        outcome: Result<Vec<Measurement>, crate::runner::RunError>,
        seconds: f64,
        start: f64,
    ) -> RunInfo {
        let status = match &outcome {
            Ok(ms) => match ms
                .iter()
                .find(|m| m.metric == Metric::Missed && m.value > 0.0)
            {
                Some(m) => RunStatus::Missed {
                    missed: m.value as u64,
                },
                None => RunStatus::Ok,
            },
            Err(e) => RunStatus::Failed {
                error: e.to_string(),
            },
        };
        if let Ok(ms) = &outcome {
            self.samples
                .add(subject, &w.name, repeat, status == RunStatus::Ok, ms);
        }
        let info = RunInfo {
            subject: subject.to_owned(),
            workload: w.name.clone(),
            repeat,
            status,
            load: measure::load_average()[0],
            handoff_ns: measure::handoff_ns().unwrap_or(0.0),
            seconds,
            start,
        };
        self.results.runs.push(info.clone());
        info
    }

    fn snapshot(&self, workloads: &[Workload]) -> Results {
        let seed = |name: &str| {
            workloads
                .iter()
                .find(|w| w.name == name)
                .map_or(0, |w| w.seed)
        };
        Results {
            records: self.samples.records(seed, &self.results.env),
            ..self.results.clone()
        }
    }
}

fn status_text(s: &RunStatus) -> String {
    match s {
        RunStatus::Ok => "ok".into(),
        RunStatus::Missed { missed } => format!("MISSED {missed} timers (not in the medians)"),
        RunStatus::Failed { error } => format!("FAILED: {error}"),
    }
}

/// One small discarded run first, so that no measured run pays for
/// first-use costs (thread start-up, page faults, a JIT) that the others
/// do not.
fn warm_up(s: &Subject, runner: &mut dyn Runner, ctx: &RunContext) {
    let warm = warm_up_spec();
    if s.runs(&warm) {
        let _ = runner.run(&warm, &RunContext::quiet(ctx.timing_overhead_ns));
    }
}

/// The warm-up workload: a few hundred short timers, half cancelled.
pub const WARM_UP: &str = r#"
    name = "warm-up"
    description = "discarded warm-up run"
    seed = 0
    grace = "200ms"
    [[group]]
    name = "warm"
    count = 500
    delay = { dist = "uniform", min = "0ms", max = "20ms" }
    cancel = { fraction = 0.5, after = { dist = "fixed", value = "0ms" } }
"#;

fn warm_up_spec() -> Workload {
    // A constant, tested below; parsing it cannot fail.
    Workload::parse(WARM_UP).unwrap_or_else(|e| unreachable!("the warm-up spec is valid: {e}"))
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// The report's description of a workload.
pub fn info(w: &Workload) -> WorkloadInfo {
    WorkloadInfo {
        name: w.name.clone(),
        description: w.description.clone(),
        models: w.models.clone(),
        seed: w.seed,
        summary: w.summary(),
        sweep: w.kind() == WorkloadKind::Sweep,
        verdict: w.verdict_metrics(),
    }
}

#[cfg(test)]
mod test {
    #[test]
    fn the_warm_up_spec_is_valid() {
        assert_eq!(super::warm_up_spec().timers(), 500);
    }

    #[test]
    fn subjects_skipped_for_one_reason_share_one_note() {
        let mut notes = vec!["sizes".to_owned()];
        let mut s = super::Skipped::default();
        s.note(&mut notes, "bullmq-1w", "no Node");
        s.note(&mut notes, "jdk-timer", "no JVM");
        s.note(&mut notes, "bullmq-2w", "no Node");
        assert_eq!(
            notes,
            [
                "sizes",
                "bullmq-1w, bullmq-2w skipped: no Node",
                "jdk-timer skipped: no JVM"
            ]
        );
        assert!(s.contains("bullmq-2w") && !s.contains("heap"));
    }
}
