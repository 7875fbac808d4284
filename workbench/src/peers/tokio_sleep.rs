//! tokio's own timers: one spawned task per timer, sleeping until its
//! deadline on a multi-thread runtime with one worker (the wheel's lock is
//! shared by the caller and the worker).
//!
//! Cancel is `JoinHandle::abort`; reset is abort plus a fresh spawn (a
//! spawned sleep cannot be moved from outside). Fixed-rate is an
//! `Interval` with `MissedTickBehavior::Burst` (tokio's catch-up); fixed-delay
//! sleeps `period` after each run. The deadline is computed at spawn time,
//! not at the task's first poll.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::task::JoinHandle;
use tokio::time::{interval_at, sleep, sleep_until, Instant, MissedTickBehavior};

use crate::runner::{Fire, Timers, TimersFactory};
use crate::spec::Kind;

/// One line for the report.
pub const ABOUT: &str = "tokio 1.x: a spawned task per timer sleeping on the runtime's wheel (1 worker); reset = abort + respawn";

/// The factory.
pub fn factory() -> TimersFactory {
    Arc::new(|capacity| Box::new(TokioSleep::new(capacity)) as Box<dyn Timers>)
}

struct TokioSleep {
    rt: Runtime,
    tasks: Vec<Option<(JoinHandle<()>, Fire)>>,
}

impl TokioSleep {
    fn new(capacity: usize) -> TokioSleep {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("tokio-sleep")
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a tokio runtime: {e}"));
        let mut tasks = Vec::with_capacity(capacity);
        tasks.resize_with(capacity, || None);
        TokioSleep { rt, tasks }
    }

    fn spawn_once(&self, deadline: Instant, fire: Fire) -> JoinHandle<()> {
        self.rt.spawn(async move {
            sleep_until(deadline).await;
            fire.hit();
        })
    }
}

impl Timers for TokioSleep {
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), String> {
        let h = self.spawn_once(Instant::now() + delay, fire.clone());
        self.tasks[id] = Some((h, fire));
        Ok(())
    }

    fn schedule_periodic(
        &mut self,
        id: usize,
        kind: Kind,
        initial: Duration,
        period: Duration,
        fire: Fire,
    ) -> Result<(), String> {
        let start = Instant::now() + initial;
        let f = fire.clone();
        let h = match kind {
            Kind::FixedDelay => self.rt.spawn(async move {
                sleep_until(start).await;
                loop {
                    f.hit();
                    sleep(period).await;
                }
            }),
            _ => self.rt.spawn(async move {
                let mut every = interval_at(start, period);
                every.set_missed_tick_behavior(MissedTickBehavior::Burst);
                loop {
                    every.tick().await;
                    f.hit();
                }
            }),
        };
        self.tasks[id] = Some((h, fire));
        Ok(())
    }

    fn cancel(&mut self, id: usize) -> bool {
        match &self.tasks[id] {
            Some((h, _)) => {
                let live = !h.is_finished();
                h.abort();
                live
            }
            None => false,
        }
    }

    fn reset(&mut self, id: usize, delay: Duration) -> bool {
        let Some((h, fire)) = self.tasks[id].take() else {
            return false;
        };
        let live = !h.is_finished();
        h.abort();
        if live {
            let h = self.spawn_once(Instant::now() + delay, fire.clone());
            self.tasks[id] = Some((h, fire));
        } else {
            self.tasks[id] = Some((h, fire));
        }
        live
    }

    fn shutdown(self: Box<Self>) {
        let TokioSleep { rt, tasks } = *self;
        for (h, _) in tasks.iter().flatten() {
            h.abort();
        }
        rt.shutdown_timeout(Duration::from_secs(10));
    }
}
