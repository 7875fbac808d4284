//! The contention workload in the report: total throughput and CPU per
//! pair against the number of threads sharing one subject, one line per
//! subject, and the notes a reader needs beside them (how many cores the
//! machine has, how each of ours scales, who leads at each P). Pure
//! functions of [`Results`].

use super::charts::{self, XAxis};
use super::{subjects_series, Chart};
use crate::record::{Metric, Results, SubjectKind};

/// The contention workloads of `results` (those with a thread-count
/// figure), with their thread counts, ascending.
fn workloads(results: &Results) -> Vec<(&str, Vec<u64>)> {
    results
        .workloads
        .iter()
        .filter_map(|w| {
            let mut threads: Vec<u64> = results
                .records
                .iter()
                .filter(|r| r.workload == w.name && r.metric == Metric::PairsPerS)
                .filter_map(|r| r.size)
                .collect();
            threads.sort_unstable();
            threads.dedup();
            (!threads.is_empty()).then_some((w.name.as_str(), threads))
        })
        .collect()
}

/// The machine's cores, as the environment record says.
fn cores(results: &Results) -> String {
    match results.env.cores {
        1 => "1 core".to_owned(),
        n => format!("{n} cores"),
    }
}

/// Per contention workload: pairs/s and whole-process CPU per pair against
/// the thread count, one line per subject.
pub fn charts(results: &Results) -> Vec<Chart> {
    let mut out = Vec::new();
    for (w, threads) in workloads(results) {
        let x = XAxis::Categories(threads.iter().map(|p| format!("P = {p}")).collect());
        for (m, id, what, short, unit) in [
            (
                Metric::PairsPerS,
                "pairs",
                "total schedule + cancel pairs/s, all threads (higher is better)",
                "pairs/s, all threads",
                "pairs/s (log)",
            ),
            (
                Metric::CpuPerPair,
                "cpu",
                "whole-process CPU per pair (lower is better)",
                "CPU per pair, whole process",
                "ns/pair (log)",
            ),
        ] {
            let series = subjects_series(results, |s, _| {
                threads
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (i as f64, results.value(s, w, m, Some(*p))))
                    .collect()
            });
            if series.is_empty() {
                continue;
            }
            let cores = cores(results);
            let caption = format!("{w}: {short} ({cores} here)");
            out.push(Chart {
                id: format!("{w}-{id}"),
                title: format!("{w}: {what} against threads sharing one subject ({cores} here)"),
                svg: charts::lines(&caption, "threads sharing the subject", unit, &x, &series),
            });
        }
    }
    out
}

/// What a reader should know beside the contention figures: the machine's
/// core count, how each of our algorithms scales from one thread to two
/// and from two to the most, and whether the best of ours leads every peer
/// at each thread count.
pub fn notes(results: &Results) -> Vec<String> {
    let mut out = Vec::new();
    for (w, threads) in workloads(results) {
        let cores = results.env.cores;
        let over: Vec<String> = threads
            .iter()
            .filter(|p| **p as usize > cores)
            .map(u64::to_string)
            .collect();
        out.push(format!(
            "{w}: this machine has {} (the environment record){}; each figure is what the threads got of them, with \
             the load average of each repeat in the runs table.",
            self::cores(results),
            if over.is_empty() {
                String::new()
            } else {
                format!(
                    ": at P = {} the threads outnumber the cores, so the total can at best hold, not grow, and a \
                     thread's wall time includes waiting for a core",
                    over.join(", ")
                )
            }
        ));
        let kind = |s: &str| {
            results
                .subjects
                .iter()
                .find(|x| x.name == s)
                .map(|x| x.kind)
        };
        let value = |s: &str, p: u64| results.value(s, w, Metric::PairsPerS, Some(p));
        let (lo, hi) = (threads[0], threads[threads.len() - 1]);
        let second = threads.get(1).copied();
        let scaling: Vec<String> = results
            .subjects
            .iter()
            .filter(|s| s.kind == SubjectKind::Algorithm)
            .filter_map(|s| {
                let two = second?;
                let (a, b, c) = (
                    value(&s.name, lo)?,
                    value(&s.name, two)?,
                    value(&s.name, hi)?,
                );
                Some(format!(
                    "{} ×{:.2} from P = {lo} to {two}, ×{:.2} from P = {two} to {hi}",
                    s.name,
                    b / a,
                    c / b
                ))
            })
            .collect();
        if !scaling.is_empty() {
            out.push(format!(
                "{w}: total throughput as threads are added (issue 28 asks ×1.6 or more from one thread to two and no drop \
                 after): {}.",
                scaling.join("; ")
            ));
        }
        let leads: Vec<String> = threads
            .iter()
            .filter_map(|&p| {
                let best = |k: SubjectKind| {
                    results
                        .subjects
                        .iter()
                        .filter(|s| kind(&s.name) == Some(k))
                        .filter_map(|s| value(&s.name, p).map(|v| (s.name.as_str(), v)))
                        .reduce(|a, b| if b.1 > a.1 { b } else { a })
                };
                let (o, pv) = (best(SubjectKind::Algorithm)?, best(SubjectKind::Peer)?);
                Some(format!(
                    "P = {p}: {} {} {} ({:.2}M against {:.2}M pairs/s)",
                    o.0,
                    if o.1 >= pv.1 { "ahead of" } else { "behind" },
                    pv.0,
                    o.1 / 1e6,
                    pv.1 / 1e6
                ))
            })
            .collect();
        if !leads.is_empty() {
            out.push(format!(
                "{w}: the best of ours against the best peer at each P: {}.",
                leads.join("; ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::record::{Environment, Measurement, Samples, SubjectInfo, WorkloadInfo};

    fn results(cores: usize) -> Results {
        let mut s = Samples::default();
        for (subject, p, v) in [
            ("heap", 1, 5e6),
            ("heap", 2, 4e6),
            ("heap", 8, 3e6),
            ("netty", 1, 11e6),
            ("netty", 2, 9e6),
            ("netty", 8, 2e6),
        ] {
            s.add(
                subject,
                "contention",
                0,
                true,
                &[
                    Measurement::at(Metric::PairsPerS, p, v),
                    Measurement::at(Metric::CpuPerPair, p, 1e9 / v),
                ],
            );
        }
        let env = Environment {
            cores,
            ..Environment::default()
        };
        Results {
            subjects: vec![
                SubjectInfo {
                    name: "heap".into(),
                    kind: SubjectKind::Algorithm,
                    about: String::new(),
                },
                SubjectInfo {
                    name: "netty".into(),
                    kind: SubjectKind::Peer,
                    about: String::new(),
                },
            ],
            workloads: vec![WorkloadInfo {
                name: "contention".into(),
                description: String::new(),
                models: String::new(),
                seed: 28,
                summary: vec![],
                sweep: false,
                verdict: vec![Metric::ContendedPairsPerS, Metric::PairsPerS],
            }],
            records: s.records(|_| 28, &env),
            partial: false,
            ..Results::new("t".into(), env, 1)
        }
    }

    #[test]
    fn the_charts_and_notes_say_the_core_count_of_the_record() {
        for cores in [2, 16] {
            let r = results(cores);
            let c = charts(&r);
            assert_eq!(
                c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
                ["contention-pairs", "contention-cpu"]
            );
            assert!(c[0].title.contains(&format!("({cores} cores here)")));
            assert!(c.iter().all(|c| c.svg.is_ok()));
            let n = notes(&r);
            assert!(
                n[0].contains(&format!("this machine has {cores} cores")),
                "{n:?}"
            );
            assert_eq!(n[0].contains("at P = 8 the threads outnumber"), cores == 2);
        }
    }

    #[test]
    fn the_notes_give_each_algorithm_its_scaling_and_the_lead_at_each_p() {
        let n = notes(&results(2));
        assert!(
            n[1].contains("heap ×0.80 from P = 1 to 2, ×0.75 from P = 2 to 8"),
            "{n:?}"
        );
        assert!(
            n[2].contains("P = 1: heap behind netty (5.00M against 11.00M pairs/s)"),
            "{n:?}"
        );
        assert!(n[2].contains("P = 8: heap ahead of netty"), "{n:?}");
    }
}
