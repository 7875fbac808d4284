//! The load benchmark mode the workbench calls must keep working.

use std::process::Command;

use super::server;

#[test]
fn bench_mode_prints_one_json_report_per_worker_count() {
    let Some(redis) = server() else { return };
    let out = Command::new(env!("CARGO_BIN_EXE_schedulers-redis-worker"))
        .args([
            "bench",
            "--url",
            &redis.url(),
            "--workers",
            "1,2",
            "--jobs",
            "300",
        ])
        .args([
            "--window-ms",
            "200",
            "--lead-ms",
            "200",
            "--threads",
            "2",
            "--shards",
            "2",
        ])
        .output()
        .expect("run the bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let reports: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 2, "{text}");
    for (r, workers) in reports.iter().zip([1, 2]) {
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
    }
}
