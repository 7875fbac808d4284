//! A suite: every chosen subject × every workload it runs × repeats, into
//! one [`Results`], handed out after every finished run so that a run
//! stopped midway keeps what it measured.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::record::{
    Environment, Measurement, Metric, Results, RunInfo, RunStatus, Samples, WorkloadInfo,
};
use crate::runner::Subject;
use crate::runner::{measure, RunContext, Runner};
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
    /// The (subject, workload) pairs that will run.
    pub fn pairs(&self) -> usize {
        self.subjects
            .iter()
            .map(|s| self.workloads.iter().filter(|w| s.runs(w)).count())
            .sum()
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
                workloads: self.workloads.iter().map(info).collect(),
                notes: self.notes.clone(),
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
        let lines = self.progress && !tty;
        let total = (self.repeats * self.pairs()) as u64;
        let overall = multi.add(ProgressBar::new(total));
        overall.set_style(style(
            "{prefix:>14} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ~{eta} left {msg}",
        ));
        overall.set_prefix("suite");
        let current = multi.add(ProgressBar::new(1));
        current.set_style(style("{prefix:>14} [{bar:30}] {msg}"));
        let ctx = RunContext {
            timing_overhead_ns: state.results.timing_overhead_ns,
            progress: current.clone(),
        };
        let mut skipped = Skipped::default();
        let mut done = 0u64;
        for rep in 0..self.repeats {
            for s in &self.subjects {
                let workloads: Vec<&Workload> =
                    self.workloads.iter().filter(|w| s.runs(w)).collect();
                if workloads.is_empty() || skipped.contains(s.name) {
                    continue;
                }
                let mut runner = match (s.runner)() {
                    Ok(r) => r,
                    Err(why) => {
                        skipped.note(&mut state.results.notes, s.name, &why.to_string());
                        done += workloads.len() as u64;
                        overall.set_position(done);
                        continue;
                    }
                };
                if !state.results.subjects.iter().any(|i| i.name == s.name) {
                    state.results.subjects.push(s.info());
                }
                warm_up(s, runner.as_mut(), &ctx);
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
                    let info = state.record(s.name, w, rep, outcome, seconds);
                    done += 1;
                    overall.set_position(done);
                    if lines {
                        eprintln!(
                            "workbench: [{done}/{total}] {} on {} (repeat {}/{}): {} in {seconds:.1} s, load {:.2}",
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
                    update(&state.snapshot(&self.workloads));
                }
            }
        }
        current.finish_and_clear();
        overall.finish_and_clear();
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
            seconds,
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
