//! tokio's own timers: one spawned task per timer, sleeping until its
//! deadline. The application is a task too ([`Timers::drive`] runs it in
//! the runtime's `block_on`), so it spawns from inside the runtime as tokio
//! users do. Two flavours: a current-thread runtime (the application and
//! the timers share one thread) and a multi-thread runtime with two workers
//! (the wheel's lock is shared by the application and the workers).
//!
//! Cancel is `JoinHandle::abort`; reset is abort plus a fresh spawn (a
//! spawned sleep cannot be moved from outside). Fixed-rate is an
//! `Interval` with `MissedTickBehavior::Burst` (tokio's catch-up); fixed-delay
//! sleeps `period` after each run. The deadline is computed at spawn time,
//! not at the task's first poll.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::JoinHandle;
use tokio::time::{interval_at, sleep, sleep_until, Instant, MissedTickBehavior};

use crate::runner::{App, Fire, Refused, Timers, TimersFactory};
use crate::spec::Kind;

/// One line for the report, current-thread flavour.
pub const ABOUT: &str = "tokio 1.x: a spawned task per timer sleeping on the runtime's wheel, spawned by the application's task (current-thread runtime); reset = abort + respawn";

/// One line for the report, two workers.
pub const ABOUT_2W: &str = "tokio 1.x: a spawned task per timer sleeping on the runtime's wheel, spawned by the application's task (multi-thread runtime, 2 workers); reset = abort + respawn";

/// The factory: `workers` 0 for a current-thread runtime, else a
/// multi-thread one with that many workers.
pub fn factory(workers: usize) -> TimersFactory {
    Arc::new(move |capacity| Box::new(TokioSleep::new(capacity, workers)) as Box<dyn Timers>)
}

struct TokioSleep {
    /// `None` while [`Timers::drive`] runs the application inside it.
    rt: Option<Runtime>,
    handle: Handle,
    tasks: Vec<Option<(JoinHandle<()>, Fire)>>,
}

impl TokioSleep {
    fn new(capacity: usize, workers: usize) -> TokioSleep {
        let mut b = if workers == 0 {
            Builder::new_current_thread()
        } else {
            let mut b = Builder::new_multi_thread();
            b.worker_threads(workers);
            b
        };
        let rt = b
            .thread_name("tokio-sleep")
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a tokio runtime: {e}"));
        let mut tasks = Vec::with_capacity(capacity);
        tasks.resize_with(capacity, || None);
        TokioSleep {
            handle: rt.handle().clone(),
            rt: Some(rt),
            tasks,
        }
    }

    fn spawn_once(&self, deadline: Instant, fire: Fire) -> JoinHandle<()> {
        self.handle.spawn(async move {
            sleep_until(deadline).await;
            fire.hit();
        })
    }
}

impl Timers for TokioSleep {
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), Refused> {
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
    ) -> Result<(), Refused> {
        let start = Instant::now() + initial;
        let f = fire.clone();
        let h = match kind {
            Kind::FixedDelay => self.handle.spawn(async move {
                sleep_until(start).await;
                loop {
                    f.hit();
                    sleep(period).await;
                }
            }),
            _ => self.handle.spawn(async move {
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

    fn drive(&mut self, app: &mut dyn App) {
        let Some(rt) = self.rt.take() else {
            unreachable!("TokioSleep::drive re-entered");
        };
        rt.block_on(async {
            while let Some(until) = app.step(self) {
                sleep_until(Instant::from_std(until)).await;
            }
        });
        self.rt = Some(rt);
    }

    fn shutdown(self: Box<Self>) {
        let TokioSleep { rt, tasks, .. } = *self;
        for (h, _) in tasks.iter().flatten() {
            h.abort();
        }
        if let Some(rt) = rt {
            rt.shutdown_timeout(Duration::from_secs(10));
        }
    }
}
