//! BullMQ's job schedulers on the `calendar` workload (`bullmq-cron`):
//! `workbench/bullmq/cron.mjs` (the BullMQ harness's packages) creates one
//! `Queue.upsertJobScheduler` per calendar schedule with its cron pattern
//! and time zone, all starting at the window's first second, then one
//! `Worker` process (`concurrency` = the workload's threads) runs them;
//! against a fresh `redis-server` started here. Redis's CPU (`INFO cpu`)
//! is the store's CPU, the growth of its keys (`MEMORY USAGE` summed over
//! them) the memory per schedule.

use std::sync::{Arc, OnceLock};

use schedulers_redis::LocalRedis;

use crate::calendar::{self, CalendarRun};
use crate::peers::bullmq::Harness;
use crate::record::{Measurement, SubjectKind};
use crate::runner::Subject;
use crate::runner::{RunContext, RunError, Runner};
use crate::spec::{Workload, WorkloadKind};

/// The subject's name.
pub const NAME: &str = "bullmq-cron";

/// The subject, for [`crate::peers::all`].
pub fn subject() -> Subject {
    Subject {
        name: NAME,
        kind: SubjectKind::Peer,
        about: about(),
        workloads: &[WorkloadKind::Calendar],
        runner: Arc::new(|| {
            let harness = Harness::find()?;
            Ok(Box::new(BullCron { harness }) as Box<dyn Runner>)
        }),
        timers: None,
    }
}

fn about() -> &'static str {
    static ABOUT: OnceLock<String> = OnceLock::new();
    ABOUT.get_or_init(|| {
        let version = Harness::find().map_or_else(|_| "(not installed)".to_owned(), |h| h.version);
        format!(
            "BullMQ {version} (Node) job schedulers on a fresh local Redis: Queue.upsertJobScheduler per calendar schedule \
             (cron pattern with seconds, tz, startDate; 100 upserts in flight), one Worker process with concurrency = the \
             workload's threads, default options"
        )
    })
}

/// BullMQ's job schedulers through the Node harness.
#[derive(Debug)]
struct BullCron {
    harness: Harness,
}

impl Runner for BullCron {
    fn run(&mut self, workload: &Workload, ctx: &RunContext) -> Result<Vec<Measurement>, RunError> {
        let c = calendar::section(workload)?;
        ctx.progress.set_length(1);
        let redis = LocalRedis::start().map_err(|e| RunError::Child(e.to_string()))?;
        let out = self
            .harness
            .node("cron.mjs")
            .args(["--url", &redis.url()])
            .args(["--schedules", &c.schedules.to_string()])
            .args(["--every-s", &c.every.0.as_secs().to_string()])
            .args(["--run-for-ms", &c.run_for.0.as_millis().to_string()])
            .args(["--grace-ms", &workload.grace.0.as_millis().to_string()])
            .args(["--zone", &c.zone])
            .args(["--concurrency", &c.threads.to_string()])
            .output()
            .map_err(|e| RunError::Child(format!("running node cron.mjs: {e}")))?;
        if !out.status.success() {
            return Err(RunError::Child(format!(
                "the BullMQ cron harness failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .rfind(|l| l.starts_with('{'))
            .ok_or_else(|| RunError::Child("the BullMQ cron harness printed no result".into()))?;
        let run: CalendarRun = serde_json::from_str(line).map_err(|e| {
            RunError::Child(format!(
                "the BullMQ cron report ({e}): {}",
                crate::calendar::head(line)
            ))
        })?;
        ctx.progress.set_position(1);
        calendar::figures(workload, &run)
    }
}
