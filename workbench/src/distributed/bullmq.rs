//! BullMQ, the peer of the Redis scheduler: the Node harness in
//! `workbench/bullmq/` (`bench.mjs`, with `bullmq` and `ioredis` pinned in
//! its `package.json` and installed by `npm ci`, which `scripts/test` runs)
//! drives the same drain and paced shapes with BullMQ delayed jobs
//! (`Queue.addBulk` with `delay`, a `Worker` with `concurrency` equal to our
//! threads per worker, BullMQ's default job options) against a fresh
//! `redis-server` started here for each measurement, and prints one line in
//! the format of our benchmark.
//!
//! Knobs (environment): `WORKBENCH_NODE` (the `node` binary, else `node` on
//! `PATH`), `WORKBENCH_BULLMQ_DIR` (the harness folder, else the one in
//! this source tree).

use std::path::{Path, PathBuf};
use std::process::Command;

use schedulers::distributed::LocalRedis;

use super::{parse_report, Report};

/// The subject-name prefix (`bullmq-1w`, …), also accepted by `-s bullmq`.
pub const SUBJECT_PREFIX: &str = "bullmq";

/// The subject's name for `workers` processes.
pub fn subject_name(workers: u64) -> String {
    format!("{SUBJECT_PREFIX}-{workers}w")
}

/// A usable harness: Node and the installed packages.
#[derive(Clone, Debug)]
pub struct Harness {
    node: PathBuf,
    dir: PathBuf,
    /// The installed BullMQ version.
    pub version: String,
}

impl Harness {
    /// Finds Node and the harness with its packages installed.
    ///
    /// # Errors
    ///
    /// One line saying what is missing and how to install it.
    pub fn find() -> Result<Harness, String> {
        let node = match std::env::var_os("WORKBENCH_NODE") {
            Some(p) => Some(PathBuf::from(p)),
            None => which("node"),
        }
        .filter(|p| p.is_file())
        .ok_or("Node is not installed (Debian: apt-get install nodejs npm)")?;
        let dir = std::env::var_os("WORKBENCH_BULLMQ_DIR").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("bullmq"),
            PathBuf::from,
        );
        if !dir.join("bench.mjs").is_file() {
            return Err(format!("no BullMQ harness at {}", dir.display()));
        }
        let installed = dir.join("node_modules/bullmq/package.json");
        let text = std::fs::read_to_string(&installed).map_err(|_| {
            format!(
                "BullMQ is not installed (run `npm ci --prefix {}`; scripts/test does)",
                dir.display()
            )
        })?;
        let version = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["version"].as_str().map(str::to_owned))
            .ok_or_else(|| format!("{}: no version", installed.display()))?;
        Ok(Harness { node, dir, version })
    }

    /// Runs one shape with `workers` Node worker processes against a fresh
    /// `redis-server`.
    ///
    /// # Errors
    ///
    /// Redis could not start, or the harness failed (its stderr).
    pub fn run(
        &self,
        shape: &str,
        workers: u64,
        jobs: u64,
        window_ms: u64,
        concurrency: u64,
    ) -> Result<Report, String> {
        let redis = LocalRedis::start().map_err(|e| e.to_string())?;
        let out = Command::new(&self.node)
            .current_dir(&self.dir)
            .arg("bench.mjs")
            .args(["--url", &redis.url(), "--shape", shape])
            .args([
                "--workers",
                &workers.to_string(),
                "--jobs",
                &jobs.to_string(),
            ])
            .args(["--window-ms", &window_ms.to_string()])
            .args(["--concurrency", &concurrency.to_string()])
            .output()
            .map_err(|e| format!("running {}: {e}", self.node.display()))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .rfind(|l| l.starts_with('{'))
            .ok_or("the BullMQ harness printed no result")?;
        parse_report(line)
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}
