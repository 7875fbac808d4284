//! How long a run will take: a first guess per (subject, workload) from the
//! workload's sizes and durations ([`run_seconds`]), replaced by what the
//! first repeats measured as they finish ([`Eta`]). The suite shows the
//! time left on its progress bar and on every progress line; the default
//! selection ([`crate::selection`]) sizes itself with the same guesses
//! where its reference run has no figure.

use std::collections::HashMap;
use std::time::Duration;

use crate::random::Dist;
use crate::runner::sweep::{MAX_CYCLES, TIMED_PER_SIZE};
use crate::spec::{Workload, WorkloadKind};

/// Starting a subject and its discarded warm-up run, in process.
pub const START_IN_PROCESS: f64 = 0.3;
/// Starting a subject in a child process (a JVM, Node) and warming it up.
pub const START_CHILD: f64 = 2.0;

/// A rough cost of one scheduler call (schedule, reset or cancel) in a
/// sweep's loops, with the subject's own allocation: the guess before a
/// subject's first repeat has measured it.
const NS_PER_CALL: f64 = 150.0;
/// Making and stopping a fresh subject for a sweep cycle (its threads).
const CYCLE_SECONDS: f64 = 0.002;
/// The memory probe: a fresh child process per sweep size.
const PROBE_SECONDS: f64 = 0.05;
/// Creating one calendar schedule, for a first guess (a Quartz cluster
/// takes milliseconds, our schedulers a microsecond).
const CREATE_SECONDS: f64 = 20e-6;
/// Jobs per second a distributed subject drains, for a first guess.
const JOBS_PER_S: f64 = 30_000.0;

/// The value a distribution is unlikely to exceed: its maximum, or for
/// the unbounded ones a high quantile (mean × 3, median × e^(2σ)).
fn typical_max(d: &Dist) -> f64 {
    let s = |ns: u64| ns as f64 / 1e9;
    match *d {
        Dist::Fixed { value } => s(value.nanos()),
        Dist::Uniform { max, .. } => s(max.nanos()),
        Dist::Exponential { mean } => 3.0 * s(mean.nanos()),
        Dist::Lognormal { median, sigma } => s(median.nanos()) * (2.0 * sigma).exp(),
    }
}

/// A first guess of one repeat of `w` (its profile applied), in seconds,
/// before anything was measured: a timeline lasts until its last timer
/// fires or is cancelled; a sweep's cycles cost their calls, and so do a
/// contention run's threads; a calendar run its window; a distributed
/// repeat drains, then paces its jobs over the window.
pub fn run_seconds(w: &Workload) -> f64 {
    match w.kind() {
        WorkloadKind::Timeline => timeline_seconds(w),
        WorkloadKind::Sweep => w.sweep.as_ref().map_or(0.0, |s| {
            let phases = 2.0 + if s.reset { 1.0 } else { 0.0 };
            s.sizes
                .iter()
                .map(|&n| {
                    let n = n.max(1) as f64;
                    let cycles = (TIMED_PER_SIZE as f64 / n).clamp(1.0, MAX_CYCLES as f64) + 1.0;
                    cycles * (n * phases * NS_PER_CALL / 1e9 + CYCLE_SECONDS)
                        + 0.25
                        + PROBE_SECONDS
                        + n * NS_PER_CALL / 1e9
                })
                .sum()
        }),
        // Every thread's pairs, two calls each; the threads share the
        // machine's cores, so their calls add up.
        WorkloadKind::Contention => w.contention.as_ref().map_or(0.0, |c| {
            c.threads
                .iter()
                .map(|&p| {
                    (c.warm + c.pairs) as f64 * p as f64 * 2.0 * NS_PER_CALL / 1e9 + CYCLE_SECONDS
                })
                .sum()
        }),
        // Creating the schedules, the lead to the window's first whole
        // second, the window and its grace.
        WorkloadKind::Calendar => w.calendar.as_ref().map_or(0.0, |c| {
            c.schedules as f64 * CREATE_SECONDS + c.run_for.0.as_secs_f64() + 3.0
        }),
        WorkloadKind::Distributed => w.distributed.as_ref().map_or(0.0, |d| {
            (d.drain + d.paced) as f64 / JOBS_PER_S + d.window.0.as_secs_f64() + 2.0
        }),
    }
}

fn timeline_seconds(w: &Workload) -> f64 {
    let end = w
        .groups
        .iter()
        .map(|g| {
            let arrivals = g
                .arrival
                .as_ref()
                .map_or(0.0, |a| g.count as f64 / a.rate.max(1.0));
            let start = arrivals.min(3600.0);
            if let Some(run_for) = g.run_for {
                return typical_max(&g.delay) + run_for.0.as_secs_f64();
            }
            let fires = match &g.cancel {
                Some(c) if c.fraction >= 1.0 => typical_max(&c.after),
                _ => typical_max(&g.delay),
            };
            let resets = g.reset.as_ref().map_or(0.0, |r| {
                r.until.0.as_secs_f64() + typical_max(r.delay.as_ref().unwrap_or(&g.delay))
            });
            start + fires.max(resets)
        })
        .fold(0.0, f64::max);
    // Drawing the plan and building the subject: about a microsecond a timer.
    end + w.timers() as f64 * 1e-6
}

/// The time left of a suite, learnt as it goes: each (subject, workload)
/// starts at its first guess ([`run_seconds`], plus starting the subject);
/// once a repeat of it finished, its own mean; a pair not yet measured is
/// scaled by how far the measured runs of its workload (else of every
/// workload) were from their guesses.
#[derive(Clone, Debug, Default)]
pub struct Eta {
    /// (subject, workload) -> (guess, measured seconds so far).
    pairs: HashMap<(String, String), (f64, Vec<f64>)>,
    /// subject -> (guess, measured start seconds so far).
    starts: HashMap<String, (f64, Vec<f64>)>,
    /// Runs left per pair, starts left per subject.
    runs_left: HashMap<(String, String), usize>,
    starts_left: HashMap<String, usize>,
}

impl Eta {
    /// Plans `repeats` runs of each (subject, workload, guess in seconds),
    /// and a start of each subject (`child`: out of process) per repeat.
    pub fn new<'a>(
        plan: impl IntoIterator<Item = (&'a str, bool, &'a str, f64)>,
        repeats: usize,
    ) -> Eta {
        let mut eta = Eta::default();
        for (subject, child, workload, guess) in plan {
            let key = (subject.to_owned(), workload.to_owned());
            eta.pairs.insert(key.clone(), (guess, Vec::new()));
            eta.runs_left.insert(key, repeats);
            let start = if child { START_CHILD } else { START_IN_PROCESS };
            eta.starts
                .entry(subject.to_owned())
                .or_insert((start, Vec::new()));
            eta.starts_left.insert(subject.to_owned(), repeats);
        }
        eta
    }

    /// A run of (subject, workload) took `seconds`, after `start` seconds
    /// of starting the subject (0 unless it was the subject's first run of
    /// the repeat).
    pub fn finished(&mut self, subject: &str, workload: &str, seconds: f64, start: f64) {
        let key = (subject.to_owned(), workload.to_owned());
        if let Some((_, v)) = self.pairs.get_mut(&key) {
            v.push(seconds);
        }
        if let Some(n) = self.runs_left.get_mut(&key) {
            *n = n.saturating_sub(1);
        }
        if start > 0.0 {
            if let Some((_, v)) = self.starts.get_mut(subject) {
                v.push(start);
            }
            if let Some(n) = self.starts_left.get_mut(subject) {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// A subject that cannot run here: nothing of it is left.
    pub fn skipped(&mut self, subject: &str) {
        self.starts_left.insert(subject.to_owned(), 0);
        for ((s, _), n) in &mut self.runs_left {
            if s == subject {
                *n = 0;
            }
        }
    }

    /// Measured over guessed, over the measured pairs of `workload` (every
    /// workload's when `None`); 1 before anything was measured.
    fn speed(&self, workload: Option<&str>) -> Option<f64> {
        let (guessed, took) = self
            .pairs
            .iter()
            .filter(|((_, w), (_, v))| !v.is_empty() && workload.is_none_or(|x| x == w))
            .fold((0.0, 0.0), |(g, t), (_, (guess, v))| {
                (g + guess, t + v.iter().sum::<f64>() / v.len() as f64)
            });
        (guessed > 0.0).then(|| took / guessed)
    }

    /// The seconds one more run of (subject, workload) is expected to take.
    pub fn expected(&self, subject: &str, workload: &str) -> f64 {
        let Some((guess, v)) = self.pairs.get(&(subject.to_owned(), workload.to_owned())) else {
            return 0.0;
        };
        if !v.is_empty() {
            return v.iter().sum::<f64>() / v.len() as f64;
        }
        let speed = self
            .speed(Some(workload))
            .or_else(|| self.speed(None))
            .unwrap_or(1.0);
        guess * speed
    }

    /// The time left: every run and start still to come, as expected now.
    pub fn left(&self) -> Duration {
        let runs: f64 = self
            .runs_left
            .iter()
            .map(|((s, w), n)| *n as f64 * self.expected(s, w))
            .sum();
        let starts: f64 = self
            .starts_left
            .iter()
            .map(|(s, n)| {
                let (guess, v) = &self.starts[s];
                let each = if v.is_empty() {
                    *guess
                } else {
                    v.iter().sum::<f64>() / v.len() as f64
                };
                *n as f64 * each
            })
            .sum();
        Duration::from_secs_f64((runs + starts).max(0.0))
    }
}

/// `3m05s`, `42s`: a duration as a person plans by.
pub fn human(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn shipped(name: &str) -> Workload {
        crate::workloads::shipped()
            .unwrap()
            .into_iter()
            .find(|w| w.name == name)
            .unwrap()
            .quick()
    }

    /// The guesses follow the specs: a timeline lasts as long as its last
    /// deadline (keepalive: heartbeats until 0.8 s, then the 0.6 s idle
    /// timeout), a held timer until its cancel, periodic tasks for their
    /// run; a larger sweep costs more.
    #[test]
    fn first_guesses_follow_the_workloads_durations() {
        let near = |w: &str, s: f64| {
            let got = run_seconds(&shipped(w));
            assert!(
                (got - s).abs() < 0.2 * s,
                "{w}: {got} s, expected about {s}"
            );
        };
        near("keepalive", 1.42);
        near("idle", 2.1);
        near("periodic-fixed-rate", 0.61);
        near("burst", 0.35);
        near("fire-lateness", 0.52);
        let scale = shipped("scale");
        let full = crate::workloads::shipped()
            .unwrap()
            .into_iter()
            .find(|w| w.name == "scale")
            .unwrap();
        assert!(run_seconds(&full) > 4.0 * run_seconds(&scale));
        assert!(run_seconds(&shipped("distributed")) > 4.0);
    }

    /// Before anything ran, the guesses; after a pair's first repeat, its
    /// own time; an unmeasured pair of a workload that ran slower than
    /// guessed is expected slower too.
    #[test]
    fn the_time_left_learns_from_the_first_repeats() {
        let mut eta = Eta::new([("a", false, "w", 1.0), ("b", false, "w", 1.0)], 3);
        let start = 2.0 * 3.0 * START_IN_PROCESS;
        assert!((eta.left().as_secs_f64() - (6.0 + start)).abs() < 1e-6);
        eta.finished("a", "w", 3.0, 0.5);
        // a: 2 more of 3 s; b: 3 of 1 s × 3 (w ran 3× its guess); starts:
        // a 2 × 0.5, b 3 × the guess.
        let want = 2.0 * 3.0 + 3.0 * 3.0 + 2.0 * 0.5 + 3.0 * START_IN_PROCESS;
        assert!(
            (eta.left().as_secs_f64() - want).abs() < 1e-6,
            "{:?}",
            eta.left()
        );
        eta.skipped("b");
        let want = 2.0 * 3.0 + 2.0 * 0.5;
        assert!((eta.left().as_secs_f64() - want).abs() < 1e-6);
        assert_eq!(human(Duration::from_secs(185)), "3m05s");
        assert_eq!(human(Duration::from_secs(42)), "42s");
    }
}
