//! tokio-util's `DelayQueue` (the tokio wheel with slab storage), owned by
//! one task on a one-worker runtime and driven by commands over an
//! unbounded channel: the way an application shares a `DelayQueue` between
//! threads, since the queue itself is single-owner.
//!
//! The caller's cost is a gate update plus a channel send; the queue's own
//! insert/remove/reset happen on the worker (in the background CPU figure).
//! Whether a cancel or reset stopped a run is decided by per-timer
//! `Gates`. Periodic timers are re-inserted on expiry (fixed-rate at the
//! previous deadline + period, fixed-delay at now + period).

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;
use tokio_util::time::delay_queue::{DelayQueue, Key};

use super::Gates;
use crate::runner::{Fire, Timers, TimersFactory};
use crate::spec::Kind;

/// One line for the report.
pub const ABOUT: &str =
    "tokio-util 0.7 DelayQueue owned by one task (1 worker), fed over a channel";

/// The factory.
pub fn factory() -> TimersFactory {
    Arc::new(|capacity| Box::new(Dq::new(capacity)) as Box<dyn Timers>)
}

enum Cmd {
    Insert {
        id: usize,
        at: Instant,
        fire: Fire,
        every: Option<(Kind, Duration)>,
    },
    Remove {
        id: usize,
    },
    Reset {
        id: usize,
        at: Instant,
        gen: u32,
    },
}

struct Dq {
    rt: Runtime,
    tx: UnboundedSender<Cmd>,
    gates: Arc<Gates>,
}

impl Dq {
    fn new(capacity: usize) -> Dq {
        let rt = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("delay-queue")
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a tokio runtime: {e}"));
        let (tx, rx) = unbounded_channel();
        let gates = Arc::new(Gates::new(capacity));
        rt.spawn(owner(rx, gates.clone(), capacity));
        Dq { rt, tx, gates }
    }
}

struct Slot {
    key: Option<Key>,
    fire: Fire,
    gen: u32,
    every: Option<(Kind, Duration)>,
    at: Instant,
}

/// The task that owns the queue.
async fn owner(mut rx: UnboundedReceiver<Cmd>, gates: Arc<Gates>, capacity: usize) {
    let mut q: DelayQueue<usize> = DelayQueue::with_capacity(capacity.min(1 << 20));
    let mut slots: Vec<Option<Slot>> = Vec::with_capacity(capacity);
    slots.resize_with(capacity, || None);
    loop {
        tokio::select! {
            biased;
            cmd = rx.recv() => match cmd {
                None => return,
                Some(Cmd::Insert { id, at, fire, every }) => {
                    let key = q.insert_at(id, at);
                    slots[id] = Some(Slot { key: Some(key), fire, gen: 0, every, at });
                }
                Some(Cmd::Remove { id }) => {
                    if let Some(key) = slots[id].as_mut().and_then(|s| s.key.take()) {
                        q.remove(&key);
                    }
                }
                Some(Cmd::Reset { id, at, gen }) => {
                    if let Some(s) = slots[id].as_mut() {
                        s.gen = gen;
                        s.at = at;
                        match &s.key {
                            Some(key) => q.reset_at(key, at),
                            None => s.key = Some(q.insert_at(id, at)),
                        }
                    }
                }
            },
            Some(expired) = poll_fn(|cx| q.poll_expired(cx)) => {
                let id = expired.into_inner();
                let Some(s) = slots[id].as_mut() else { continue };
                s.key = None;
                match s.every {
                    None => {
                        // A reset still in the channel leaves the generation
                        // ahead of ours: it will re-insert the timer.
                        if gates.generation(id) == s.gen && gates.claim(id, s.gen) {
                            s.fire.hit();
                        }
                    }
                    Some((kind, period)) => {
                        if gates.live(id) {
                            s.fire.hit();
                            s.at = match kind {
                                Kind::FixedDelay => Instant::now() + period,
                                _ => s.at + period,
                            };
                            s.key = Some(q.insert_at(id, s.at));
                        }
                    }
                }
            }
        }
    }
}

impl Timers for Dq {
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), String> {
        self.tx
            .send(Cmd::Insert {
                id,
                at: Instant::now() + delay,
                fire,
                every: None,
            })
            .map_err(|_| "queue owner gone".to_owned())
    }

    fn schedule_periodic(
        &mut self,
        id: usize,
        kind: Kind,
        initial: Duration,
        period: Duration,
        fire: Fire,
    ) -> Result<(), String> {
        let cmd = Cmd::Insert {
            id,
            at: Instant::now() + initial,
            fire,
            every: Some((kind, period)),
        };
        self.tx.send(cmd).map_err(|_| "queue owner gone".to_owned())
    }

    fn cancel(&mut self, id: usize) -> bool {
        let stopped = self.gates.cancel(id);
        let _ = self.tx.send(Cmd::Remove { id });
        stopped
    }

    fn reset(&mut self, id: usize, delay: Duration) -> bool {
        let Some(gen) = self.gates.reset(id) else {
            return false;
        };
        self.tx
            .send(Cmd::Reset {
                id,
                at: Instant::now() + delay,
                gen,
            })
            .is_ok()
    }

    fn shutdown(self: Box<Self>) {
        let Dq { rt, tx, .. } = *self;
        drop(tx);
        rt.shutdown_timeout(Duration::from_secs(10));
    }
}
