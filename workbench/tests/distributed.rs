//! The distributed workload end to end, through the same suite as every
//! other workload: the workbench binary is the Redis worker, and a tiny
//! spec runs both shapes for ours and for BullMQ, the ceiling and the idle
//! worker; the report gives the figures, the charts and the verdict rows.
//! And the load benchmark by hand (`workbench redis-bench`): every shape
//! prints one JSON report per run with the figures the workbench reads.
//!
//! Without `redis-server`, Node or the BullMQ packages the test skips with
//! one line, except under CI (`CI` set), where `scripts/test` installs them
//! and a missing piece fails.

use std::path::PathBuf;
use std::process::Command;

use schedulers_redis::{find_redis_server, LocalRedis};
use workbench::distributed;
use workbench::peers::bullmq;
use workbench::record::{Metric, Results, RunStatus, SubjectKind};
use workbench::report;
use workbench::spec::Workload;
use workbench::subjects;
use workbench::suite::Suite;

mod support;
use support::skip;

const TINY: &str = r#"
    name = "tiny-jobs"
    description = "300 jobs drained, 200 paced over 300 ms"
    models = "a test"
    seed = 0
    verdict = ["drain_jobs_per_s", "paced_p99"]
    [distributed]
    drain = 300
    paced = 200
    window = "300ms"
    threads = 2
    shards = 2
    idle = "1s"
"#;

fn run(names: &[&str]) -> Results {
    let _ = distributed::WORKER_EXE.set(PathBuf::from(env!("CARGO_BIN_EXE_workbench")));
    let subjects = names
        .iter()
        .map(|n| subjects::find(n).unwrap_or_else(|| panic!("no subject {n}")))
        .collect();
    let suite = Suite::test(subjects, vec![Workload::parse(TINY).unwrap()], 1, "test");
    suite.check().unwrap();
    let mut updates = 0;
    let mut results = suite.run(&mut |r| {
        assert!(r.partial);
        updates += 1;
    });
    assert_eq!(updates, names.len(), "results after every finished run");
    let notes = report::notes::distributed(&results);
    results.notes.extend(notes);
    results
}

#[test]
fn the_suite_runs_ours_and_bullmq_on_both_shapes_and_reports_them() {
    if find_redis_server().is_none() {
        return skip("redis-server is not installed");
    }
    let bull = bullmq::Harness::find();
    if let Err(why) = &bull {
        skip(&format!("BullMQ: {why}"));
    }
    let mut names = vec!["redis-1w", "redis-2w"];
    if bull.is_ok() {
        names.extend(["bullmq-1w", "bullmq-2w"]);
    }
    let results = run(&names);
    for r in &results.runs {
        assert_eq!(r.status, RunStatus::Ok, "{r:?}");
        assert!(r.load >= 0.0);
    }
    let value = |subject: &str, m: Metric| {
        results
            .value(subject, "tiny-jobs", m, None)
            .unwrap_or_else(|| panic!("no {m} for {subject}: {:?}", results.records))
    };
    for s in &names {
        assert!(value(s, Metric::DrainJobsPerS) > 0.0, "{s}");
        let (p50, p99, max) = (
            value(s, Metric::PacedP50),
            value(s, Metric::PacedP99),
            value(s, Metric::PacedMax),
        );
        assert!(
            0.0 <= p50 && p50 <= p99 && p99 <= max,
            "{s}: {p50} {p99} {max}"
        );
        for m in [
            Metric::RedisCpuDrain,
            Metric::RedisCpuPaced,
            Metric::RedisCallsDrain,
            Metric::RedisCallsPaced,
        ] {
            assert!(value(s, m) > 0.0, "{s} {m}");
        }
        assert_eq!(value(s, Metric::Missed), 0.0, "{s}");
    }
    for s in ["redis-1w", "redis-2w"] {
        assert!(value(s, Metric::RoundTripsDrain) > 0.0);
        assert!(value(s, Metric::RoundTripsPaced) > 0.0);
    }
    // The ceiling and the idle worker once, on one worker.
    assert!(value("redis-1w", Metric::ClaimCeiling) > 0.0);
    assert!(value("redis-1w", Metric::IdleRoundTrips) >= 0.0);
    assert!(results
        .value("redis-2w", "tiny-jobs", Metric::ClaimCeiling, None)
        .is_none());
    assert!(
        results
            .notes
            .iter()
            .any(|n| n.contains("claim-script ceiling")),
        "{:?}",
        results.notes
    );
    if bull.is_ok() {
        assert!(
            results.notes.iter().any(|n| n.contains("BullMQ")),
            "{:?}",
            results.notes
        );
        assert!(results
            .subjects
            .iter()
            .any(|s| s.name == "bullmq-2w" && s.kind == SubjectKind::Peer));
    }

    // The report: a verdict row per figure, the charts, the table.
    let verdicts = report::verdict::verdicts(&results);
    assert_eq!(
        verdicts.iter().map(|v| v.metric).collect::<Vec<_>>(),
        [Metric::DrainJobsPerS, Metric::PacedP99]
    );
    assert!(verdicts.iter().all(|v| v.ours.is_some()));
    assert_eq!(verdicts[0].peer.is_some(), bull.is_ok());
    let ids: Vec<String> = report::charts_of(&results)
        .into_iter()
        .map(|c| {
            assert!(c.svg.is_ok(), "{}: {:?}", c.id, c.svg);
            c.id
        })
        .collect();
    for id in ["tiny-jobs-drain", "tiny-jobs-paced", "tiny-jobs-redis-cost"] {
        assert!(ids.iter().any(|i| i == id), "{id} not in {ids:?}");
    }
    let dir = std::env::temp_dir().join(format!("workbench-distributed-{}", std::process::id()));
    report::write(&results, &dir).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for text in ["drain jobs/s", "paced p99", "redis-1w", "claim ceiling"] {
        assert!(html.contains(text), "{text} not on the page");
    }
    if bull.is_ok() {
        assert!(html.contains("bullmq-1w"));
    }
    let back = report::read_results(&dir.join("results.json")).unwrap();
    assert_eq!(back.workloads[0].verdict, results.workloads[0].verdict);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh server, or `None` after [`skip`] when none is installed.
fn server() -> Option<LocalRedis> {
    if find_redis_server().is_none() {
        skip("redis-server is not installed");
        return None;
    }
    Some(LocalRedis::start().expect("start redis-server"))
}

/// `workbench redis-bench --url URL ARGS`: one report per line.
fn bench(redis_url: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_workbench"))
        .args(["redis-bench", "--url", redis_url])
        .args(args)
        .output()
        .expect("run the bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn drain_and_paced_print_one_report_per_worker_count() {
    let Some(redis) = server() else { return };
    for shape in ["paced", "drain"] {
        let reports = bench(
            &redis.url(),
            &[
                "--shape",
                shape,
                "--workers",
                "1,2",
                "--jobs",
                "300",
                "--window-ms",
                "200",
                "--lead-ms",
                "200",
                "--threads",
                "2",
                "--shards",
                "2",
            ],
        );
        assert_eq!(reports.len(), 2, "{reports:?}");
        for (r, workers) in reports.iter().zip([1, 2]) {
            assert_eq!(r["shape"], shape);
            assert_eq!(r["workers"], workers);
            assert_eq!(r["runs"], 300, "no faults: each job ran once");
            assert_eq!(
                r["runs_per_worker"].as_array().unwrap().len(),
                workers as usize
            );
            let l = &r["lateness_ms"];
            let (p50, p99, max) = (
                l["p50"].as_i64().unwrap(),
                l["p99"].as_i64().unwrap(),
                l["max"].as_i64().unwrap(),
            );
            assert!(0 <= p50 && p50 <= p99 && p99 <= max, "{r}");
            assert!(r["jobs_per_sec"].as_f64().unwrap() > 0.0);
            assert!(r["redis"]["cpu_us_per_job"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["redis"]["calls"]["evalsha"].as_u64().unwrap() > 0, "{r}");
            assert!(r["round_trips_per_job"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
}

#[test]
fn ceiling_and_idle_report_their_figures() {
    let Some(redis) = server() else { return };
    let c = &bench(
        &redis.url(),
        &["--shape", "ceiling", "--jobs", "500", "--shards", "2"],
    )[0];
    assert_eq!(c["claimed"], 500, "{c}");
    assert!(c["jobs_per_sec"].as_f64().unwrap() > 0.0);
    let i = &bench(
        &redis.url(),
        &[
            "--shape",
            "idle",
            "--seconds",
            "1",
            "--shards",
            "2",
            "--pending",
            "100",
        ],
    )[0];
    assert!(i["round_trips_per_s_per_shard"].as_f64().is_some(), "{i}");
}
