//! The verdict: for each workload, the best of our algorithms and the best
//! subject overall on the figure that workload is about, the margin between
//! ours and the best peer, and whether that margin exceeds the run's noise;
//! and a "pick it when" table computed from those wins. Pure functions of
//! [`Results`].

use crate::record::{Metric, Results, RunStatus, SubjectKind, WorkloadInfo};

/// A subject's figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The subject.
    pub subject: String,
    /// Its median.
    pub value: f64,
    /// Its spread over clean repeats.
    pub spread: f64,
}

/// The verdict on one workload by one figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The workload.
    pub workload: String,
    /// The figure it is judged by.
    pub metric: Metric,
    /// The size, for figures that have one (the largest every subject
    /// reached): a sweep's pending count, a contention run's threads.
    pub size: Option<u64>,
    /// The best of our algorithms.
    pub ours: Option<Entry>,
    /// The best peer.
    pub peer: Option<Entry>,
    /// How many times better the winner of (ours, peer) is than the other
    /// (≥ 1), when both ran.
    pub factor: Option<f64>,
    /// Ours is ahead of (or level with) the best peer.
    pub ours_ahead: bool,
    /// The margin is larger than the noise: the run's median spread and the
    /// spread of either figure.
    pub beyond_noise: bool,
    /// Subjects left out of a lateness ranking because they fire before
    /// their deadline (a timer that may run early is not "less late").
    pub fires_early: Vec<String>,
    /// On a ranking by another figure, how many timers the best peer ran
    /// before their deadline, of how many it ran, if any: its figure is
    /// the cost of a weaker promise (a wheel that rounds deadlines to its
    /// tick fires a batch at once).
    pub peer_early: Option<(u64, u64)>,
    /// On a ranking by CPU per timer, the best of ours's driver wake-ups a
    /// second and what they come to per timer (ns) at this machine's floor
    /// for one (`Floors::timed_wake`): the part of its figure no queue
    /// operation can take away while its driver wakes that often.
    pub ours_wakes: Option<(f64, f64)>,
}

impl Verdict {
    /// The best subject overall.
    pub fn best(&self) -> Option<&Entry> {
        match (&self.ours, &self.peer) {
            (Some(o), Some(p)) => Some(if self.ours_ahead { o } else { p }),
            (o, p) => o.as_ref().or(p.as_ref()),
        }
    }
}

/// The largest size at which every subject that has `metric` on `workload`
/// has it (sweeps, contention), else `None` (figures without a size).
fn common_size(results: &Results, workload: &str, metric: Metric) -> Option<u64> {
    let recs = || {
        results
            .records
            .iter()
            .filter(move |r| r.workload == workload && r.metric == metric)
    };
    let mut subjects: Vec<&str> = recs().map(|r| r.scheduler.as_str()).collect();
    subjects.dedup();
    subjects
        .iter()
        .map(|s| {
            recs()
                .filter(|r| r.scheduler == *s)
                .filter_map(|r| r.size)
                .max()
        })
        .collect::<Option<Vec<u64>>>()
        .and_then(|v| v.into_iter().min())
}

/// Every subject ranked on one figure of one workload, best first.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    /// The size, as in [`Verdict::size`].
    pub size: Option<u64>,
    /// Every subject with a figure, best first, with whether it is ours.
    pub entries: Vec<(Entry, SubjectKind)>,
    /// Subjects left out because they fire before their deadline (on a
    /// lateness figure: a timer that may run early is not "less late").
    pub fires_early: Vec<String>,
}

impl Ranking {
    /// The best entry of one kind.
    pub fn best(&self, kind: SubjectKind) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|(_, k)| *k == kind)
            .map(|(e, _)| e)
    }
}

/// Whether `metric` is a lateness figure.
/// `subject`'s wake-ups a second on `workload` and what they come to per
/// timer (ns) at the floor for one: wake-ups a second times the run's
/// median length times the floor, over the timers (its CPU over its CPU
/// per timer). `None` without a measured floor or with no wake-up.
fn wakes_of(results: &Results, subject: &str, workload: &str) -> Option<(f64, f64)> {
    let floor = results.floors?.timed_wake;
    let value = |metric| results.value(subject, workload, metric, None);
    let per_s = value(Metric::RunWakeupsPerS).filter(|&w| w > 0.0)?;
    let timers = value(Metric::Cpu)? * 1e6 / value(Metric::CpuPerTimer).filter(|&c| c > 0.0)?;
    let seconds: Vec<f64> = results
        .runs
        .iter()
        .filter(|r| r.subject == subject && r.workload == workload && r.status == RunStatus::Ok)
        .map(|r| r.seconds)
        .collect();
    let (seconds, _) = crate::record::summarize(&seconds);
    let per_timer = per_s * seconds * floor / timers;
    (floor > 0.0 && per_timer.is_finite()).then_some((per_s, per_timer))
}

fn is_lateness(metric: Metric) -> bool {
    Metric::LATENESS.iter().any(|(m, _)| *m == metric)
}

/// How many timers `subject` ran before their deadline on `workload`, of
/// how many it ran; `None` if none ran early.
fn early_of(results: &Results, subject: &str, workload: &str) -> Option<(u64, u64)> {
    let early = results.value(subject, workload, Metric::Early, None)?;
    let fired = results
        .value(subject, workload, Metric::Fired, None)
        .unwrap_or(0.0);
    (early > 0.0).then_some((early as u64, fired as u64))
}

/// Ranks every subject of `workload` on `metric`, as the verdict does:
/// at the largest size every subject reached (sweeps), subjects that fire
/// early left out of a lateness ranking, best first.
pub fn ranking(results: &Results, workload: &WorkloadInfo, metric: Metric) -> Ranking {
    let w = workload;
    // Sweeps at the largest pending count, contention at the largest
    // thread count every subject reached; None for figures without a size.
    let size = common_size(results, &w.name, metric);
    let early =
        |subject: &str| is_lateness(metric) && early_of(results, subject, &w.name).is_some();
    let fires_early: Vec<String> = results
        .subjects
        .iter()
        .filter(|s| early(&s.name))
        .map(|s| s.name.clone())
        .collect();
    let mut entries: Vec<(Entry, SubjectKind)> = results
        .records
        .iter()
        .filter(|r| {
            r.workload == w.name
                && r.metric == metric
                && r.size == size
                && r.value.is_finite()
                && !early(&r.scheduler)
        })
        .filter_map(|r| {
            let kind = results
                .subjects
                .iter()
                .find(|s| s.name == r.scheduler)?
                .kind;
            let entry = Entry {
                subject: r.scheduler.clone(),
                value: r.value,
                spread: r.spread,
            };
            Some((entry, kind))
        })
        .collect();
    // Stable: equal figures keep the results' order.
    entries.sort_by(|(a, _), (b, _)| {
        if metric.is_better(a.value, b.value) {
            std::cmp::Ordering::Less
        } else if metric.is_better(b.value, a.value) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    Ranking {
        size,
        entries,
        fires_early,
    }
}

/// The verdict on every workload, in the results' order: one per figure
/// the workload is judged by.
pub fn verdicts(results: &Results) -> Vec<Verdict> {
    let noise = results.noise().unwrap_or(0.0);
    results
        .workloads
        .iter()
        .flat_map(|w| w.verdict.iter().map(move |m| (w, *m)))
        .map(|(w, metric)| {
            let rank = ranking(results, w, metric);
            let ours = rank.best(SubjectKind::Algorithm).cloned();
            let peer = rank.best(SubjectKind::Peer).cloned();
            let (factor, ours_ahead, beyond_noise) = match (&ours, &peer) {
                (Some(o), Some(p)) => {
                    let ahead = !metric.is_better(p.value, o.value);
                    // The larger over the smaller, whichever direction is better.
                    // Infinite when the better one is zero (no wake-up at all, say).
                    let low = o.value.min(p.value);
                    let f = if low > 0.0 {
                        o.value.max(p.value) / low
                    } else if o.value.max(p.value) > 0.0 {
                        f64::INFINITY
                    } else {
                        1.0
                    };
                    let noise = noise.max(o.spread).max(p.spread);
                    (Some(f), ahead, f - 1.0 > noise)
                }
                _ => (None, peer.is_none(), false),
            };
            let peer_early = peer
                .as_ref()
                .filter(|_| !is_lateness(metric))
                .and_then(|p| early_of(results, &p.subject, &w.name));
            let ours_wakes = ours
                .as_ref()
                .filter(|_| metric == Metric::CpuPerTimer)
                .and_then(|o| wakes_of(results, &o.subject, &w.name));
            Verdict {
                workload: w.name.clone(),
                metric,
                size: rank.size,
                ours,
                peer,
                factor,
                ours_ahead,
                beyond_noise,
                fires_early: rank.fires_early,
                peer_early,
                ours_wakes,
            }
        })
        .collect()
}

/// One row of the "pick it when" table: one of our algorithms, the
/// workloads on which it is the best of ours, and how those compare with
/// the best peer.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    /// The algorithm.
    pub subject: String,
    /// What it is.
    pub about: String,
    /// Workloads where it is the best of ours, with what they model (with
    /// the figure, on a workload judged by several).
    pub wins: Vec<(String, String)>,
    /// Of those, where it is also ahead of every peer beyond the noise.
    pub ahead_of_peers: Vec<String>,
}

/// The "pick it when" table: every algorithm that ran, best-of-ours wins
/// first.
pub fn picks(results: &Results, verdicts: &[Verdict]) -> Vec<Pick> {
    let mut out: Vec<Pick> = results
        .subjects
        .iter()
        .filter(|s| s.kind == SubjectKind::Algorithm)
        .map(|s| {
            let mine = verdicts
                .iter()
                .filter(|v| v.ours.as_ref().is_some_and(|o| o.subject == s.name));
            let workload = |w: &str| results.workloads.iter().find(|x| x.name == w);
            let models = |w: &str| workload(w).map_or_else(String::new, |x| x.models.clone());
            let name = |v: &Verdict| match workload(&v.workload) {
                Some(w) if w.verdict.len() > 1 => format!("{} ({})", v.workload, v.metric.label()),
                _ => v.workload.clone(),
            };
            Pick {
                subject: s.name.clone(),
                about: s.about.clone(),
                wins: mine
                    .clone()
                    .map(|v| (name(v), models(&v.workload)))
                    .collect(),
                ahead_of_peers: mine
                    .filter(|v| v.peer.is_some() && v.ours_ahead && v.beyond_noise)
                    .map(name)
                    .collect(),
            }
        })
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.wins.len()));
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::record::{Environment, Measurement, Samples, SubjectInfo, WorkloadInfo};

    fn results(rows: &[(&str, &str, Metric, &[f64])]) -> Results {
        let mut s = Samples::default();
        for (subject, w, m, values) in rows {
            for (rep, v) in values.iter().enumerate() {
                s.add(subject, w, rep, true, &[Measurement::new(*m, *v)]);
            }
        }
        let subject = |name: &str, kind| SubjectInfo {
            name: name.into(),
            kind,
            about: format!("{name} about"),
        };
        let wl = |name: &str, verdict| WorkloadInfo {
            name: name.into(),
            description: String::new(),
            models: format!("{name} models"),
            seed: 1,
            summary: vec![],
            sweep: false,
            verdict: vec![verdict],
        };
        Results {
            subjects: vec![
                subject("heap", SubjectKind::Algorithm),
                subject("wheel", SubjectKind::Algorithm),
                subject("netty", SubjectKind::Peer),
            ],
            workloads: vec![
                wl("lateness", Metric::LatenessP99),
                wl("burst", Metric::FiresPerS),
            ],
            records: s.records(|_| 1, &Environment::default()),
            partial: false,
            ..Results::new("t".into(), Environment::default(), 3)
        }
    }

    #[test]
    fn the_verdict_names_the_best_of_ours_the_best_peer_and_the_margin() {
        let r = results(&[
            (
                "heap",
                "lateness",
                Metric::LatenessP99,
                &[100.0, 101.0, 99.0],
            ),
            (
                "wheel",
                "lateness",
                Metric::LatenessP99,
                &[900.0, 910.0, 890.0],
            ),
            (
                "netty",
                "lateness",
                Metric::LatenessP99,
                &[1000.0, 1010.0, 990.0],
            ),
            // Throughput: higher is better; ours behind by 2x.
            ("heap", "burst", Metric::FiresPerS, &[1e6, 1e6, 1e6]),
            ("wheel", "burst", Metric::FiresPerS, &[3e6, 2.9e6, 3.1e6]),
            ("netty", "burst", Metric::FiresPerS, &[6e6, 6e6, 6e6]),
        ]);
        let v = verdicts(&r);
        assert_eq!(v[0].ours.as_ref().unwrap().subject, "heap");
        assert_eq!(v[0].peer.as_ref().unwrap().subject, "netty");
        assert!(v[0].ours_ahead && v[0].beyond_noise);
        assert!((v[0].factor.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(v[0].best().unwrap().subject, "heap");

        assert_eq!(v[1].ours.as_ref().unwrap().subject, "wheel");
        assert!(!v[1].ours_ahead && v[1].beyond_noise);
        assert!((v[1].factor.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(v[1].best().unwrap().subject, "netty");

        let p = picks(&r, &v);
        assert_eq!(p[0].subject, "heap");
        assert_eq!(
            p[0].wins,
            vec![("lateness".to_owned(), "lateness models".to_owned())]
        );
        assert_eq!(p[0].ahead_of_peers, vec!["lateness".to_owned()]);
        assert_eq!(p[1].subject, "wheel");
        assert!(p[1].ahead_of_peers.is_empty());
    }

    #[test]
    fn a_subject_that_fires_early_is_not_ranked_on_lateness() {
        let r = results(&[
            ("heap", "lateness", Metric::LatenessP99, &[100.0]),
            ("netty", "lateness", Metric::LatenessP99, &[1.0]),
            ("netty", "lateness", Metric::Early, &[40.0]),
            ("heap", "lateness", Metric::Early, &[0.0]),
        ]);
        let v = verdicts(&r);
        assert!(v[0].peer.is_none());
        assert_eq!(v[0].fires_early, vec!["netty".to_owned()]);
        assert_eq!(v[0].best().unwrap().subject, "heap");
    }

    #[test]
    fn a_peer_that_fires_early_is_ranked_by_another_figure_and_named_so() {
        let r = results(&[
            ("heap", "burst", Metric::FiresPerS, &[10e6]),
            ("heap", "burst", Metric::Early, &[0.0]),
            ("heap", "burst", Metric::Fired, &[50e3]),
            ("netty", "burst", Metric::FiresPerS, &[20e6]),
            ("netty", "burst", Metric::Early, &[5547.0]),
            ("netty", "burst", Metric::Fired, &[50e3]),
        ]);
        let v = verdicts(&r);
        let burst = v.iter().find(|v| v.workload == "burst").unwrap();
        assert_eq!(burst.peer.as_ref().unwrap().subject, "netty");
        assert!(!burst.ours_ahead, "ranked, unlike on lateness");
        assert_eq!(burst.peer_early, Some((5547, 50_000)));
        let lateness = results(&[
            ("heap", "lateness", Metric::LatenessP99, &[100.0]),
            ("netty", "lateness", Metric::LatenessP99, &[1.0]),
            ("netty", "lateness", Metric::Early, &[40.0]),
        ]);
        assert_eq!(verdicts(&lateness)[0].peer_early, None, "not ranked there");
        let on_time = results(&[
            ("heap", "burst", Metric::FiresPerS, &[10e6]),
            ("netty", "burst", Metric::FiresPerS, &[20e6]),
            ("netty", "burst", Metric::Early, &[0.0]),
        ]);
        let v = verdicts(&on_time);
        assert_eq!(
            v.iter().find(|v| v.workload == "burst").unwrap().peer_early,
            None
        );
    }

    #[test]
    fn a_margin_inside_the_noise_is_called_so() {
        let r = results(&[
            (
                "heap",
                "lateness",
                Metric::LatenessP99,
                &[100.0, 130.0, 80.0],
            ),
            (
                "netty",
                "lateness",
                Metric::LatenessP99,
                &[105.0, 104.0, 106.0],
            ),
        ]);
        let v = verdicts(&r);
        assert!(v[0].ours_ahead);
        assert!(!v[0].beyond_noise, "{v:?}");
    }

    #[test]
    fn a_cpu_verdict_counts_what_the_best_of_ours_pays_for_its_wake_ups() {
        // 1e5 timers in 1 s: heap 60 ms of CPU (600 ns a timer) and 1,000
        // wake-ups a second, 20 µs each at the floor: 200 ns a timer.
        let mut r = results(&[
            ("heap", "ack", Metric::Cpu, &[60.0]),
            ("heap", "ack", Metric::CpuPerTimer, &[600.0]),
            ("heap", "ack", Metric::RunWakeupsPerS, &[1000.0]),
            ("wheel", "ack", Metric::Cpu, &[70.0]),
            ("wheel", "ack", Metric::CpuPerTimer, &[700.0]),
            ("wheel", "ack", Metric::RunWakeupsPerS, &[1000.0]),
            ("netty", "ack", Metric::CpuPerTimer, &[500.0]),
        ]);
        r.workloads[0].name = "ack".into();
        r.workloads[0].verdict = vec![Metric::CpuPerTimer];
        for subject in ["heap", "wheel", "netty"] {
            r.runs.push(crate::record::RunInfo {
                subject: subject.into(),
                workload: "ack".into(),
                repeat: 0,
                status: RunStatus::Ok,
                load: 0.0,
                handoff_ns: 0.0,
                seconds: 1.0,
                start: 0.0,
            });
        }
        assert_eq!(verdicts(&r)[0].ours_wakes, None, "no floor measured");
        r.floors = Some(crate::record::Floors {
            clock_read: 20.0,
            ordered_counter: 10.0,
            locked_rmw: 2.0,
            memory: 100.0,
            cancel_stream: 20.0,
            timed_wake: 20_000.0,
        });
        let v = &verdicts(&r)[0];
        assert_eq!(v.ours.as_ref().unwrap().subject, "heap");
        let (per_s, ns) = v.ours_wakes.expect("counted");
        assert_eq!(per_s, 1000.0);
        assert!((ns - 200.0).abs() < 1e-6, "{ns}");
        // Only a verdict by CPU per timer counts them.
        assert_eq!(verdicts(&r)[1].ours_wakes, None);
    }

    #[test]
    fn a_workload_judged_by_two_figures_has_a_verdict_row_for_each() {
        let mut r = results(&[
            ("heap", "jobs", Metric::DrainJobsPerS, &[30e3, 31e3, 29e3]),
            ("netty", "jobs", Metric::DrainJobsPerS, &[10e3, 10e3, 10e3]),
            ("heap", "jobs", Metric::PacedP99, &[2000.0, 2000.0, 2000.0]),
            ("netty", "jobs", Metric::PacedP99, &[80e3, 81e3, 79e3]),
        ]);
        r.workloads = vec![WorkloadInfo {
            name: "jobs".into(),
            description: String::new(),
            models: "jobs models".into(),
            seed: 0,
            summary: vec![],
            sweep: false,
            verdict: vec![Metric::DrainJobsPerS, Metric::PacedP99],
        }];
        let v = verdicts(&r);
        assert_eq!(
            v.iter().map(|v| v.metric).collect::<Vec<_>>(),
            [Metric::DrainJobsPerS, Metric::PacedP99]
        );
        assert!(v.iter().all(|v| v.ours_ahead && v.beyond_noise));
        assert!((v[0].factor.unwrap() - 3.0).abs() < 1e-9);
        assert!((v[1].factor.unwrap() - 40.0).abs() < 1e-9);
        let p = picks(&r, &v);
        assert_eq!(
            p[0].ahead_of_peers,
            ["jobs (drain jobs/s)", "jobs (paced p99)"]
        );
    }
}
