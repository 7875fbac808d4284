//! The `scheduled-thread-pool` crate (sfackler): a binary heap under a
//! mutex with one condvar, with one or two worker threads.
//!
//! Its `JobHandle::cancel` sets a flag and says nothing, so the runner keeps
//! its own per-timer `Gates` to know whether a cancel stopped a run; reset
//! is cancel plus a new job (the crate has no move). Fixed-rate and
//! fixed-delay are the crate's own.

use std::sync::Arc;
use std::time::Duration;

use scheduled_thread_pool::{JobHandle, OnPoolDropBehavior, ScheduledThreadPool};

use super::Gates;
use crate::runner::{drive_threaded, App, Fire, Refused, Timers, TimersFactory};
use crate::spec::Kind;

/// One line for the report, one worker.
pub const ABOUT: &str =
    "scheduled-thread-pool 0.2: heap + mutex + condvar, lazy cancel flag, 1 worker; reset = cancel + new job";

/// One line for the report, two workers.
pub const ABOUT_2: &str =
    "scheduled-thread-pool 0.2: heap + mutex + condvar, lazy cancel flag, 2 workers; reset = cancel + new job";

/// The factory, with `threads` workers.
pub fn factory(threads: usize) -> TimersFactory {
    Arc::new(move |capacity| Box::new(Stp::new(capacity, threads)) as Box<dyn Timers>)
}

struct Stp {
    pool: ScheduledThreadPool,
    gates: Arc<Gates>,
    /// The handle of each timer, dense as a user keeps them: what a cancel
    /// reads besides the gate.
    handles: Vec<Option<JobHandle>>,
    /// The fire of each timer, for a reset's new job.
    fires: Vec<Option<Fire>>,
}

impl Stp {
    fn new(capacity: usize, threads: usize) -> Stp {
        let mut handles = Vec::with_capacity(capacity);
        handles.resize_with(capacity, || None);
        let mut fires = Vec::with_capacity(capacity);
        fires.resize_with(capacity, || None);
        let pool = ScheduledThreadPool::builder()
            .num_threads(threads)
            .thread_name_pattern("stp-{}")
            .on_drop_behavior(OnPoolDropBehavior::DiscardPendingScheduled)
            .build();
        Stp {
            pool,
            gates: Arc::new(Gates::new(capacity)),
            handles,
            fires,
        }
    }

    fn job(&self, id: usize, gen: u32, delay: Duration, fire: Fire) -> JobHandle {
        let gates = self.gates.clone();
        self.pool.execute_after(delay, move || {
            if gates.claim(id, gen) {
                fire.hit();
            }
        })
    }
}

impl Timers for Stp {
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), Refused> {
        self.handles[id] = Some(self.job(id, 0, delay, fire.clone()));
        self.fires[id] = Some(fire);
        Ok(())
    }

    fn schedule_periodic(
        &mut self,
        id: usize,
        kind: Kind,
        initial: Duration,
        period: Duration,
        fire: Fire,
    ) -> Result<(), Refused> {
        let (gates, f) = (self.gates.clone(), fire.clone());
        let run = move || {
            if gates.live(id) {
                f.hit();
            }
        };
        let h = match kind {
            Kind::FixedDelay => self.pool.execute_with_fixed_delay(initial, period, run),
            _ => self.pool.execute_at_fixed_rate(initial, period, run),
        };
        self.handles[id] = Some(h);
        self.fires[id] = Some(fire);
        Ok(())
    }

    fn cancel(&mut self, id: usize) -> bool {
        let stopped = self.gates.cancel(id);
        if let Some(h) = &self.handles[id] {
            h.cancel();
        }
        stopped
    }

    fn reset(&mut self, id: usize, delay: Duration) -> bool {
        let Some(gen) = self.gates.reset(id) else {
            return false;
        };
        if let (Some(h), Some(fire)) = (&self.handles[id], self.fires[id].clone()) {
            h.cancel();
            self.handles[id] = Some(self.job(id, gen, delay, fire));
        }
        true
    }

    fn drive(&mut self, app: &mut dyn App) {
        drive_threaded(self, app);
    }

    fn shutdown(self: Box<Self>) {
        let Stp { pool, handles, .. } = *self;
        for h in handles.iter().flatten() {
            h.cancel();
        }
        drop(pool); // pending jobs are discarded, the worker exits
    }
}
