//! A suite: every chosen subject × every chosen workload × repeats, into
//! one [`Results`].

use std::collections::HashMap;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::record::{summarize, Environment, Record, Results, WorkloadInfo, FORMAT};
use crate::runner::{measure, RunContext};
use crate::spec::Workload;
use crate::subjects::Subject;

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
    /// Show progress bars on stderr (when it is a terminal).
    pub progress: bool,
    /// Notes to carry into the report (how the sizes were chosen).
    pub notes: Vec<String>,
}

impl Suite {
    /// Runs everything. A subject that cannot run here, or a run that
    /// fails, becomes a note in the results; the suite goes on.
    pub fn run(self) -> Results {
        let started = measure::now();
        let overhead = measure::timing_overhead();
        let mut notes = self.notes.clone();
        let multi = MultiProgress::with_draw_target(if self.progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let mut runners = Vec::new();
        for s in &self.subjects {
            match (s.runner)() {
                Ok(r) => runners.push((s, r)),
                Err(why) => notes.push(format!("{} skipped: {why}", s.name)),
            }
        }
        // One small discarded run per subject first, so that no measured
        // repeat pays for first-use costs (thread start-up, page faults, a
        // JIT) that the others do not.
        let warm = warm_up();
        for (_, runner) in &mut runners {
            let _ = runner.run(&warm, &RunContext::quiet(overhead));
        }
        let total = (self.repeats * self.workloads.len() * runners.len()) as u64;
        let overall = multi.add(ProgressBar::new(total));
        overall.set_style(style(
            "{prefix:>12} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ~{eta} left {msg}",
        ));
        overall.set_prefix("suite");
        let current = multi.add(ProgressBar::new(1));
        current.set_style(style("{prefix:>12} [{bar:30}] {msg}"));
        let ctx = RunContext {
            timing_overhead_ns: overhead,
            progress: current.clone(),
        };

        // Repeats outermost, so slow drifts of the machine hit every
        // subject alike instead of one subject's repeats.
        let mut samples: HashMap<Key, (String, Vec<f64>)> = HashMap::new();
        let mut order = Vec::new();
        let mut failed: Vec<(usize, usize)> = Vec::new();
        for rep in 0..self.repeats {
            for (wi, w) in self.workloads.iter().enumerate() {
                for (si, (s, runner)) in runners.iter_mut().enumerate() {
                    if failed.contains(&(si, wi)) {
                        overall.inc(1);
                        continue;
                    }
                    current.set_prefix(s.name);
                    current.set_message(format!(
                        "{} (repeat {}/{})",
                        w.name,
                        rep + 1,
                        self.repeats
                    ));
                    match runner.run(w, &ctx) {
                        Ok(ms) => {
                            for m in ms {
                                let key = (si, wi, m.metric.clone(), m.size);
                                let e = samples.entry(key.clone()).or_insert_with(|| {
                                    order.push(key);
                                    (m.unit.clone(), Vec::new())
                                });
                                e.1.push(m.value);
                            }
                        }
                        Err(e) => {
                            notes.push(format!("{} on {} failed: {e}", s.name, w.name));
                            failed.push((si, wi));
                        }
                    }
                    overall.inc(1);
                }
            }
        }
        current.finish_and_clear();
        overall.finish_and_clear();

        let mut records = Vec::new();
        // Report order: workload, subject, then the order metrics came in.
        order.sort_by_key(|(si, wi, _, _)| (*wi, *si));
        for key in order {
            let (unit, values) = &samples[&key];
            let (si, wi, metric, size) = key;
            let (value, spread) = summarize(values);
            records.push(Record {
                scheduler: runners[si].0.name.to_owned(),
                workload: self.workloads[wi].name.clone(),
                metric,
                value,
                unit: unit.clone(),
                size,
                samples: values.clone(),
                spread,
                seed: self.workloads[wi].seed,
                env: self.env.clone(),
            });
        }
        Results {
            format: FORMAT,
            run_id: self.run_id,
            env: self.env,
            repeats: self.repeats,
            wall_seconds: measure::now().duration_since(started).as_secs_f64(),
            timing_overhead_ns: overhead,
            subjects: runners.iter().map(|(s, _)| s.info()).collect(),
            workloads: self.workloads.iter().map(info).collect(),
            records,
            notes,
        }
    }
}

/// (subject index, workload index, metric, size).
type Key = (usize, usize, String, Option<u64>);

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

fn warm_up() -> Workload {
    // A constant, tested below; parsing it cannot fail.
    Workload::parse(WARM_UP).unwrap_or_else(|e| unreachable!("the warm-up spec is valid: {e}"))
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn info(w: &Workload) -> WorkloadInfo {
    WorkloadInfo {
        name: w.name.clone(),
        description: w.description.clone(),
        models: w.models.clone(),
        seed: w.seed,
        summary: w.summary(),
        sweep: w.sweep.is_some(),
    }
}

#[cfg(test)]
mod test {
    #[test]
    fn the_warm_up_spec_is_valid() {
        assert_eq!(super::warm_up().timers(), 500);
    }
}
