//! `tokio-cron-scheduler` as its users run it, on the `calendar` workload:
//! a `JobScheduler::new()` (its in-memory stores) started on a
//! multi-thread tokio runtime, one `Job::new_async_tz` per calendar
//! schedule. Its scheduler loop wakes every 500 ms and looks at every job's
//! next tick (whole seconds), so a fire comes up to half a second after its
//! instant and the loop's cost grows with the number of jobs.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono_tz::Tz;
use tokio::runtime::Runtime;
use tokio_cron_scheduler::{Job, JobScheduler};
use uuid::Uuid;

use crate::calendar::Schedule;
use crate::runner::{drive_threaded, App, Fire, Refused, Timers, TimersFactory};
use crate::spec::Kind;

/// One line for the report.
pub const ABOUT: &str = "tokio-cron-scheduler 0.15 as its users run it: JobScheduler::new() (in-memory stores) started on a \
     multi-thread tokio runtime, one Job::new_async_tz per calendar schedule; its scheduler loop wakes every 500 ms and checks \
     every job's next tick (whole seconds): fires up to 0.5 s after their instant (calendar workload only)";

/// Makes a started scheduler on a fresh runtime (panics, as the other
/// peers' factories do, if the runtime or the scheduler cannot start).
pub fn factory() -> TimersFactory {
    Arc::new(|capacity| {
        Box::new(
            TokioCron::new(capacity)
                .unwrap_or_else(|e| panic!("cannot start tokio-cron-scheduler: {e}")),
        ) as Box<dyn Timers>
    })
}

/// A `JobScheduler` and the runtime it runs on.
pub struct TokioCron {
    rt: Runtime,
    sched: JobScheduler,
    ids: Vec<Option<Uuid>>,
}

impl std::fmt::Debug for TokioCron {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokioCron").finish_non_exhaustive()
    }
}

impl TokioCron {
    /// A started scheduler with room for `capacity` job ids.
    ///
    /// # Errors
    ///
    /// The runtime or the scheduler could not start.
    pub fn new(capacity: usize) -> Result<TokioCron, Box<dyn std::error::Error + Send + Sync>> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let sched = rt.block_on(async {
            let s = JobScheduler::new().await?;
            s.start().await?;
            Ok::<_, tokio_cron_scheduler::JobSchedulerError>(s)
        })?;
        Ok(TokioCron {
            rt,
            sched,
            ids: vec![None; capacity],
        })
    }
}

const CALENDAR_ONLY: &str = "tokio-cron-scheduler runs the calendar workload only here";

impl Timers for TokioCron {
    fn schedule(&mut self, _id: usize, _delay: Duration, _fire: Fire) -> Result<(), Refused> {
        Err(Refused::because(CALENDAR_ONLY))
    }

    fn schedule_periodic(
        &mut self,
        _id: usize,
        _kind: Kind,
        _initial: Duration,
        _period: Duration,
        _fire: Fire,
    ) -> Result<(), Refused> {
        Err(Refused::because(CALENDAR_ONLY))
    }

    fn cancel(&mut self, id: usize) -> bool {
        let Some(uuid) = self.ids.get_mut(id).and_then(Option::take) else {
            return false;
        };
        self.rt.block_on(self.sched.remove(&uuid)).is_ok()
    }

    fn reset(&mut self, _id: usize, _delay: Duration) -> bool {
        false
    }

    fn schedule_cron(&mut self, id: usize, cron: &Schedule, fire: Fire) -> Result<(), Refused> {
        let tz = Tz::from_str(&cron.zone)
            .map_err(|e| Refused::because(format!("time zone {:?}: {e}", cron.zone)))?;
        let job = Job::new_async_tz(cron.expr(), tz, move |_, _| {
            fire.hit();
            Box::pin(async {})
        })
        .map_err(|e| Refused(Box::new(e)))?;
        let uuid = self
            .rt
            .block_on(self.sched.add(job))
            .map_err(|e| Refused(Box::new(e)))?;
        if let Some(slot) = self.ids.get_mut(id) {
            *slot = Some(uuid);
        }
        Ok(())
    }

    fn drive(&mut self, app: &mut dyn App) {
        drive_threaded(self, app);
    }

    fn shutdown(self: Box<Self>) {
        let TokioCron { rt, mut sched, ids } = *self;
        let _ = rt.block_on(sched.shutdown());
        rt.shutdown_timeout(Duration::from_secs(5));
        drop(ids);
    }
}
