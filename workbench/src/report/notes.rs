//! Notes beside the figures: what a reader should know that no single
//! figure says. The report renders them with the run's other notes; this
//! module only computes.

use crate::peers::bullmq;
use crate::record::{Metric, Results, SubjectKind};

/// The cross-check of each of this crate's schedulers: its own lateness
/// (`Metrics::lateness`) against the workbench's measurement of the same
/// runs, on the workloads of one-shots. The two should agree within the
/// scheduler's runahead ([`schedulers::DEADLINE_RUNAHEAD`], the most its
/// deadlines are counted from after the clock) and a few clock reads: the
/// workbench reads the deadline before the schedule call and the fire time
/// inside the task, the scheduler both inside.
pub fn cross_check(results: &Results) -> Vec<String> {
    let mut out = Vec::new();
    for w in &results.workloads {
        for s in results
            .subjects
            .iter()
            .filter(|s| s.kind == SubjectKind::Algorithm)
        {
            let value = |m| results.value(&s.name, &w.name, m, None);
            let (Some(gap), Some(ours), Some(own)) = (
                value(Metric::OwnLatenessGap),
                value(Metric::LatenessMean),
                value(Metric::OwnLatenessMean),
            ) else {
                continue;
            };
            // Two clock reads around an empty operation, measured.
            let read = value(Metric::TimingOverhead).unwrap_or(f64::NAN) / 2.0;
            let runahead = schedulers::DEADLINE_RUNAHEAD.as_nanos() as f64;
            let p = |m| value(m).map_or("-".to_owned(), |v| format!("{v:.1}"));
            let runs = value(Metric::OwnLatenessRunsGap).unwrap_or(0.0);
            out.push(format!(
                "{}: {}'s own lateness agrees with the workbench's: mean {own:.2} µs against {ours:.2} µs, the workbench's later by {gap:.0} ns (up to {runahead:.0} of them the scheduler's runahead, the rest {:.1} clock reads of {read:.0} ns); p50 {} against {} µs, p99 {} against {} µs{}",
                w.name,
                s.name,
                (gap - runahead).max(0.0) / read,
                p(Metric::OwnLatenessP50),
                p(Metric::LatenessP50),
                p(Metric::OwnLatenessP99),
                p(Metric::LatenessP99),
                if runs == 0.0 {
                    String::new()
                } else {
                    format!(" ({runs:+.0} runs counted by the scheduler only)")
                },
            ));
        }
    }
    out
}

/// What the reader should know beside the figures of each distributed
/// workload of `results`: how close one worker drains to the claim-script
/// ceiling, how it compares with BullMQ at the same concurrency, and what
/// acknowledged writes and a Cluster cost.
pub fn distributed(results: &Results) -> Vec<String> {
    let (ours, peer) = ("redis-1w", bullmq::SUBJECTS[0].1);
    let mut out = Vec::new();
    for w in &results.workloads {
        let value = |s: &str, m| results.value(s, &w.name, m, None);
        let Some(drain) = value(ours, Metric::DrainJobsPerS) else {
            continue;
        };
        if let Some(c) = value(ours, Metric::ClaimCeiling) {
            out.push(format!(
                "{}: {ours} drains at {:.0}% of the claim-script ceiling measured on the same Redis ({drain:.0} of {c:.0} jobs/s)",
                w.name,
                100.0 * drain / c
            ));
        }
        if let Some(b) = value(peer, Metric::DrainJobsPerS) {
            out.push(format!(
                "{}: {ours} drains {:.1}× as fast as {peer} (BullMQ) at the same concurrency ({drain:.0} vs {b:.0} jobs/s)",
                w.name,
                drain / b
            ));
        }
        // What acknowledged writes cost, and a Cluster against one Redis.
        for (base, variant, what) in [
            (
                "redis-1w",
                "redis-fsync-1w",
                "Durability::Fsync (appendfsync always) against Async",
            ),
            (
                "redis-2w",
                "redis-cluster-2w",
                "a 3-master Cluster against one Redis",
            ),
            (
                "redis-cluster-2w",
                "redis-cluster-wait-2w",
                "Durability::Replicas(1) (WAIT 1) against Async on the Cluster",
            ),
        ] {
            let fig = |s: &str| {
                (
                    value(s, Metric::DrainJobsPerS),
                    value(s, Metric::RedisCpuDrain),
                    value(s, Metric::PacedP50),
                    value(s, Metric::PacedP99),
                )
            };
            if let (
                (Some(d0), Some(c0), Some(p50a), Some(p99a)),
                (Some(d1), Some(c1), Some(p50b), Some(p99b)),
            ) = (fig(base), fig(variant))
            {
                out.push(format!(
                    "{}: {what}: {variant} drains {d1:.0} jobs/s against {base}'s {d0:.0} ({:+.0}%), \
                     Redis CPU per drained job {c1:.1} µs against {c0:.1} µs, paced p50/p99 {:.0}/{:.0} ms against {:.0}/{:.0} ms",
                    w.name,
                    100.0 * (d1 - d0) / d0,
                    p50b / 1000.0,
                    p99b / 1000.0,
                    p50a / 1000.0,
                    p99a / 1000.0,
                ));
            }
        }
    }
    out
}
