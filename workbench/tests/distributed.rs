//! The distributed workload end to end: the workbench binary is the Redis
//! worker, and a tiny plan runs every shape for ours and for BullMQ.
//!
//! Without `redis-server`, Node or the BullMQ packages the tests skip with
//! one line, except under CI (`CI` set), where `scripts/test` installs them
//! and a missing piece fails.

use std::ffi::OsString;

use workbench::distributed::{self, bullmq, dmetric, Plan};
use workbench::record::{metric, Environment};

fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Says why a test does not run, or fails under CI.
fn skip(why: &str) {
    assert!(!ci(), "under CI the distributed workload must run: {why}");
    // The real stderr, so the skip shows in the test output.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("SKIPPED: {why}\n").as_bytes(),
    );
}

fn worker() -> Vec<OsString> {
    vec![
        env!("CARGO_BIN_EXE_workbench").into(),
        distributed::WORKER_SUBCOMMAND.into(),
    ]
}

fn tiny() -> Plan {
    Plan {
        workers: vec![1, 2],
        drain_jobs: 300,
        paced_jobs: 200,
        window_ms: 300,
        threads: 2,
        shards: 2,
        idle_seconds: 1,
    }
}

#[test]
fn the_workbench_runs_ours_and_bullmq_on_every_shape() {
    if schedulers::distributed::find_redis_server().is_none() {
        return skip("redis-server is not installed");
    }
    let bull = bullmq::Harness::find();
    if let Err(why) = &bull {
        skip(&format!("BullMQ: {why}"));
    }
    let run = distributed::run(&tiny(), 1, &Environment::default(), &worker()).unwrap();
    let value = |subject: &str, m: &str| {
        run.records
            .iter()
            .find(|r| r.scheduler == subject && r.metric == m)
            .map(|r| r.value)
            .unwrap_or_else(|| panic!("no {m} for {subject}: {:?}", run.records))
    };
    let mut subjects = vec!["redis-1w", "redis-2w"];
    if bull.is_ok() {
        subjects.extend(["bullmq-1w", "bullmq-2w"]);
    }
    for s in &subjects {
        assert!(value(s, metric::FIRES_PER_S) > 0.0, "{s}");
        let (p50, p99, max) = (
            value(s, "lateness_p50"),
            value(s, "lateness_p99"),
            value(s, "lateness_max"),
        );
        assert!(
            0.0 <= p50 && p50 <= p99 && p99 <= max,
            "{s}: {p50} {p99} {max}"
        );
        for m in [dmetric::CPU_DRAIN, dmetric::CPU_PACED, dmetric::CALLS_DRAIN] {
            assert!(value(s, m) > 0.0, "{s} {m}");
        }
    }
    for s in ["redis-1w", "redis-2w"] {
        assert!(value(s, dmetric::ROUND_TRIPS_DRAIN) > 0.0);
    }
    assert!(value("redis-1w", dmetric::CLAIM_CEILING) > 0.0);
    assert!(value("redis-1w", dmetric::IDLE_ROUND_TRIPS) >= 0.0);
    assert!(
        run.notes.iter().any(|n| n.contains("claim-script ceiling")),
        "{:?}",
        run.notes
    );
    if bull.is_ok() {
        assert!(
            run.notes.iter().any(|n| n.contains("BullMQ")),
            "{:?}",
            run.notes
        );
        assert!(run.subjects.iter().any(|s| s.name == "bullmq-2w"));
    }
}
