//! The load benchmark the workbench runs must keep working: every shape
//! prints one JSON report per run with the figures the workbench reads.

use std::process::Command;

use super::server;

fn bench(redis_url: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_schedulers-redis-worker"))
        .args(["bench", "--url", redis_url])
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
