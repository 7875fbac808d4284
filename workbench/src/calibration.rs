//! The independent harness's figures for the peers
//! (`shared/reference/peer-calibration.md`, 2026-11-23, quiet machine), the
//! workloads and subjects that reproduce them (`workbench calibrate`), and
//! the comparison of a run against them. `workbench/README.md` explains
//! each difference beyond 30%.
//!
//! Quartz is not in that harness: its figures come from a standalone Java
//! main with the same definitions (`workbench/java/QuartzCalibrate.java`,
//! none of the workbench's code), run by `workbench calibrate` beside the
//! workbench's own run ([`quartz`]).
//!
//! | harness | workbench |
//! |---|---|
//! | W1 ack-timeout, 1e6, schedule / cancel ns (loops), B/timer | `ack-batch` (full size): `schedule_batch`, `cancel_batch`, `memory` at 1e6 |
//! | W2 fire lateness p50 | `fire-lateness` (full size): `lateness_p50` |
//! | W3 periodic p99 | `periodic-fixed-rate` (full size): `jitter_p99` |

use crate::record::{Metric, Results};

/// The workloads `workbench calibrate` runs, at full size.
pub const WORKLOADS: &[&str] = &["ack-batch", "fire-lateness", "periodic-fixed-rate"];

/// One figure of the harness: (peer, metric, value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// The workbench's name of the peer.
    pub peer: &'static str,
    /// The harness's name of it.
    pub harness_name: &'static str,
    /// W1 schedule ns/op, W1 cancel ns/op, W1 B/timer, W2 p50 µs, W3 p99 µs
    /// (`None`: the harness has none).
    pub figures: [Option<f64>; 5],
}

/// The figures in the order of [`Reference::figures`]: (workload, metric,
/// size).
pub const FIGURES: [(&str, Metric, Option<u64>); 5] = [
    ("ack-batch", Metric::ScheduleBatch, Some(1_000_000)),
    ("ack-batch", Metric::CancelBatch, Some(1_000_000)),
    ("ack-batch", Metric::Memory, Some(1_000_000)),
    ("fire-lateness", Metric::LatenessP50, None),
    ("periodic-fixed-rate", Metric::JitterP99, None),
];

/// The harness's table (2026-11-23, load 0.1-0.4, one run each).
pub const REFERENCE: &[Reference] = &[
    Reference {
        peer: "jdk-stpe-1-roc",
        harness_name: "JDK STPE 1 thread, removeOnCancel",
        figures: [
            Some(134.0),
            Some(458.0),
            Some(104.0),
            Some(52.0),
            Some(93.0),
        ],
    },
    Reference {
        peer: "jdk-stpe-1",
        harness_name: "JDK STPE 1 thread, lazy cancel",
        figures: [Some(148.0), Some(40.0), Some(104.0), Some(52.0), Some(96.0)],
    },
    Reference {
        peer: "jdk-stpe-2-roc",
        harness_name: "JDK STPE 2 threads, removeOnCancel",
        figures: [
            Some(129.0),
            Some(388.0),
            Some(104.0),
            Some(44.0),
            Some(104.0),
        ],
    },
    Reference {
        peer: "jdk-stpe-2",
        harness_name: "JDK STPE 2 threads, lazy cancel",
        figures: [
            Some(127.0),
            Some(40.0),
            Some(104.0),
            Some(46.0),
            Some(103.0),
        ],
    },
    Reference {
        peer: "jdk-timer",
        harness_name: "java.util.Timer",
        figures: [Some(98.0), Some(76.0), Some(64.0), Some(64.0), Some(987.0)],
    },
    Reference {
        peer: "netty-1ms",
        harness_name: "Netty HashedWheelTimer 1 ms / 512",
        figures: [
            Some(64.0),
            Some(122.0),
            Some(56.0),
            Some(1063.0),
            Some(1839.0),
        ],
    },
    Reference {
        peer: "netty-100ms",
        harness_name: "Netty HashedWheelTimer 100 ms / 512",
        figures: [Some(62.0), Some(66.0), Some(59.0), Some(51923.0), None],
    },
    Reference {
        peer: "delay-queue",
        harness_name: "tokio-util DelayQueue (current-thread runtime)",
        figures: [
            Some(62.0),
            Some(225.0),
            Some(56.0),
            Some(2042.0),
            Some(3102.0),
        ],
    },
    Reference {
        peer: "tokio-sleep",
        harness_name: "tokio spawned sleeps, current-thread",
        figures: [
            Some(395.0),
            Some(100.0),
            Some(583.0),
            Some(1107.0),
            Some(2010.0),
        ],
    },
    Reference {
        peer: "tokio-sleep-2w",
        harness_name: "tokio spawned sleeps, 2 workers",
        figures: [
            Some(660.0),
            Some(626.0),
            Some(575.0),
            Some(1091.0),
            Some(1904.0),
        ],
    },
    Reference {
        peer: "stp",
        harness_name: "scheduled-thread-pool 1 thread (lazy flag)",
        figures: [Some(98.0), Some(26.0), Some(96.0), Some(54.0), Some(121.0)],
    },
    Reference {
        peer: "stp-2",
        harness_name: "scheduled-thread-pool 2 threads (lazy flag)",
        figures: [Some(99.0), Some(27.0), Some(96.0), Some(45.0), Some(165.0)],
    },
];

/// The subjects `workbench calibrate` runs: the harness's peers and Quartz.
pub fn peers() -> Vec<&'static str> {
    REFERENCE.iter().map(|r| r.peer).chain([QUARTZ]).collect()
}

/// The Quartz peer's name.
pub const QUARTZ: &str = "quartz";

/// Quartz's W1 size: at 1e6 its loops (3 µs a schedule, as much a cancel,
/// full collections of a 1 GB heap between them) outlast W1's shortest
/// delay, 10 s, so timers fire before their cancel and neither the
/// workbench nor the standalone main can measure it; at 1e5 both can
/// (`ack-batch`'s quick size).
pub const QUARTZ_W1: u64 = 100_000;

/// Quartz's figures by the harness's definitions, measured now by the
/// standalone main (a fresh JVM per workload, each after a warm-up at a
/// tenth of its size, the medians of `repeats` runs): W1 at [`QUARTZ_W1`],
/// its loops timed by the calling thread's CPU clock as the workbench's
/// batch costs are (the main prints wall time too, the harness's
/// definition, which the other engineers' builds on this shared machine
/// inflate); W2 at 1e5 over 2 s (its p50 with early fires as 0, as the
/// workbench counts them; the main prints the signed one too); W3 with
/// 1,000 tasks.
///
/// # Errors
///
/// Quartz or a JVM is missing, or a run failed.
pub fn quartz(repeats: usize) -> Result<Reference, crate::runner::Unavailable> {
    let mut runs: [Vec<f64>; 5] = Default::default();
    for _ in 0..repeats.max(1) {
        // The fields in the order of `Reference::figures`.
        let mut k = 0;
        for (workload, fields) in [
            (
                "w1",
                &["schedule_cpu_ns", "cancel_cpu_ns", "bytes_per_timer"][..],
            ),
            ("w2", &["p50_clamped_us"][..]),
            ("w3", &["p99_us"][..]),
        ] {
            let args = match workload {
                "w1" => vec![QUARTZ_W1.to_string()],
                _ => Vec::new(),
            };
            let v = crate::peers::quartz::calibrate(workload, &args)?;
            for f in fields {
                runs[k].push(v[*f].as_f64().ok_or_else(|| {
                    crate::runner::Unavailable(format!("QuartzCalibrate {workload} lacks {f}: {v}"))
                })?);
                k += 1;
            }
        }
    }
    Ok(Reference {
        peer: QUARTZ,
        harness_name: "QuartzCalibrate (standalone main, run now)",
        figures: runs.map(|v| Some(crate::record::summarize(&v).0)),
    })
}

/// One comparison: ours against the harness's.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The peer.
    pub peer: &'static str,
    /// The figure.
    pub metric: Metric,
    /// The workload.
    pub workload: &'static str,
    /// The pending count, for a sweep.
    pub size: Option<u64>,
    /// The workbench's median, if it measured one.
    pub ours: Option<f64>,
    /// The harness's.
    pub reference: f64,
}

impl Comparison {
    /// Ours / the harness's.
    pub fn ratio(&self) -> Option<f64> {
        self.ours.map(|o| o / self.reference)
    }

    /// Within 30% either way.
    pub fn agrees(&self) -> bool {
        self.ratio().is_some_and(|r| (1.0 / 1.3..=1.3).contains(&r))
    }
}

/// Every comparison for the peers that ran, against [`REFERENCE`] and the
/// references measured now (`live`: [`quartz`]).
pub fn compare(results: &Results, live: &[Reference]) -> Vec<Comparison> {
    let mut out = Vec::new();
    let ran = |p: &str| results.subjects.iter().any(|s| s.name == p);
    for r in REFERENCE.iter().chain(live).filter(|r| ran(r.peer)) {
        for (k, &(workload, metric, size)) in FIGURES.iter().enumerate() {
            let Some(reference) = r.figures[k] else {
                continue;
            };
            let size = size.map(|n| if r.peer == QUARTZ { QUARTZ_W1 } else { n });
            out.push(Comparison {
                peer: r.peer,
                metric,
                workload,
                size,
                ours: results.value(r.peer, workload, metric, size),
                reference,
            });
        }
    }
    out
}

/// The comparison as Markdown.
pub fn markdown(results: &Results, live: &[Reference]) -> String {
    let mut s = String::from(
        "| peer | figure | workbench | harness | ratio | within 30% |\n|---|---|---|---|---|---|\n",
    );
    for c in compare(results, live) {
        let _ = std::fmt::Write::write_fmt(
            &mut s,
            format_args!(
                "| {} | {}{} {} | {} | {:.0} | {} | {} |\n",
                c.peer,
                c.workload,
                c.size
                    .filter(|n| *n != 1_000_000)
                    .map_or(String::new(), |n| format!(
                        " at {}",
                        crate::spec::format_count(n)
                    )),
                c.metric.label(),
                c.ours.map_or("–".into(), |v| format!("{v:.0}")),
                c.reference,
                c.ratio().map_or("–".into(), |r| format!("×{r:.2}")),
                if c.ours.is_none() {
                    "not measured"
                } else if c.agrees() {
                    "yes"
                } else {
                    "NO"
                }
            ),
        );
    }
    s
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn every_reference_names_a_registered_peer_and_a_shipped_workload() {
        let names: Vec<&str> = crate::subjects::all().iter().map(|s| s.name).collect();
        for p in peers() {
            assert!(names.contains(&p), "{p} is not a subject");
        }
        let shipped = crate::workloads::shipped().unwrap();
        for (w, m, size) in FIGURES {
            let spec = shipped.iter().find(|s| s.name == w).unwrap();
            if let Some(n) = size {
                assert!(spec.sweep.as_ref().unwrap().sizes.contains(&n), "{w} @ {n}");
            }
            assert!(WORKLOADS.contains(&w));
            let _ = m;
        }
        let c = Comparison {
            peer: "x",
            metric: Metric::Memory,
            workload: "w",
            size: None,
            ours: Some(125.0),
            reference: 100.0,
        };
        assert!(c.agrees());
        assert!(!Comparison {
            ours: Some(131.0),
            ..c.clone()
        }
        .agrees());
        assert!(!Comparison {
            ours: Some(76.0),
            ..c
        }
        .agrees());
    }
}
