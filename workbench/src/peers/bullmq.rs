//! BullMQ, the peer of the Redis scheduler: the Node harness in
//! `workbench/bullmq/` (`bench.mjs`, with `bullmq` and `ioredis` pinned in
//! its `package.json` and `package-lock.json`, installed by `scripts/test`)
//! drives the same drain and paced shapes with BullMQ delayed jobs
//! (`Queue.addBulk` with `delay`, a `Worker` with `concurrency` equal to our
//! threads per worker, BullMQ's default job options) against a fresh
//! `redis-server` started here for each measurement, and prints one line in
//! the format of our load benchmark ([`crate::distributed::bench`]).
//!
//! Knobs (environment): `WORKBENCH_NODE` (the `node` binary, else `node` on
//! `PATH`), `WORKBENCH_BULLMQ_DIR` (the harness folder, else the one in
//! this source tree).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use schedulers_redis::LocalRedis;

use crate::distributed::bench::{one_repeat, parse_report, section, window_ms};
use crate::record::{Measurement, SubjectKind};
use crate::runner::{RunContext, RunError, Runner, Subject, Unavailable};
use crate::spec::{Workload, WorkloadKind};

/// The subjects: (worker processes, name).
pub(crate) const SUBJECTS: [(u64, &str); 3] =
    [(1, "bullmq-1w"), (2, "bullmq-2w"), (4, "bullmq-4w")];

/// BullMQ's subjects: `bullmq-1w`, `bullmq-2w`, `bullmq-4w`.
pub fn subjects() -> Vec<Subject> {
    SUBJECTS
        .iter()
        .enumerate()
        .map(|(i, &(workers, name))| Subject {
            name,
            kind: SubjectKind::Peer,
            about: about(i),
            workloads: &[WorkloadKind::Distributed],
            runner: Arc::new(move || {
                let harness = Harness::find()?;
                Ok(Box::new(Bull { harness, workers }) as Box<dyn Runner>)
            }),
            timers: None,
        })
        .collect()
}

/// Subject `i`'s description, with the BullMQ version installed.
fn about(i: usize) -> &'static str {
    static ABOUT: OnceLock<Vec<String>> = OnceLock::new();
    let all = ABOUT.get_or_init(|| {
        let version = Harness::find().map_or_else(|_| "(not installed)".to_owned(), |h| h.version);
        SUBJECTS
            .iter()
            .map(|(w, _)| {
                let processes = if *w == 1 { "process" } else { "processes" };
                format!(
                    "BullMQ {version} (Node) on a fresh local Redis: {w} worker {processes}, Worker concurrency = \
                     the workload's threads, delayed jobs added with Queue.addBulk, default job options"
                )
            })
            .collect()
    });
    all[i].as_str()
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
    /// [`Unavailable`]: one line saying what is missing and how to install
    /// it.
    pub fn find() -> Result<Harness, Unavailable> {
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
            return Err(format!("no BullMQ harness at {}", dir.display()).into());
        }
        let installed = dir.join("node_modules/bullmq/package.json");
        let text = std::fs::read_to_string(&installed).map_err(|_| {
            format!(
                "BullMQ is not installed (run `npm install --prefix {} --no-save`; scripts/test does)",
                dir.display()
            )
        })?;
        let version = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["version"].as_str().map(str::to_owned))
            .ok_or_else(|| format!("{}: no version", installed.display()))?;
        Ok(Harness { node, dir, version })
    }

    /// `node SCRIPT` in the harness's folder, where its packages resolve.
    pub fn node(&self, script: &str) -> Command {
        let mut c = Command::new(&self.node);
        c.current_dir(&self.dir).arg(script);
        c
    }

    /// Runs one shape with `workers` Node worker processes against a fresh
    /// `redis-server`.
    ///
    /// # Errors
    ///
    /// Redis could not start, or the harness failed (its stderr) or printed
    /// nonsense.
    pub fn run(
        &self,
        shape: &str,
        workers: u64,
        jobs: u64,
        window_ms: u64,
        concurrency: u64,
    ) -> Result<Vec<Measurement>, RunError> {
        let redis = LocalRedis::start().map_err(|e| RunError::Child(e.to_string()))?;
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
            .map_err(|e| RunError::Child(format!("running {}: {e}", self.node.display())))?;
        if !out.status.success() {
            return Err(RunError::Child(format!(
                "the BullMQ harness failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .rfind(|l| l.starts_with('{'))
            .ok_or_else(|| RunError::Child("the BullMQ harness printed no result".into()))?;
        Ok(parse_report(line)?)
    }
}

/// One BullMQ subject: the harness with a given number of worker processes.
#[derive(Debug)]
struct Bull {
    harness: Harness,
    workers: u64,
}

impl Runner for Bull {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        let d = section(workload)?;
        ctx.progress.set_length(2);
        let mut reports = Vec::new();
        for (i, (shape, jobs)) in [("drain", d.drain), ("paced", d.paced)]
            .into_iter()
            .enumerate()
        {
            reports.push(
                self.harness
                    .run(shape, self.workers, jobs, window_ms(d), d.threads)?,
            );
            ctx.progress.set_position(i as u64 + 1);
        }
        Ok(one_repeat(reports))
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}
