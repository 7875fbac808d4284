//! tokio-util's `DelayQueue` (the tokio wheel with slab storage), driven
//! the way its users drive it: one task owns the queue, inserts, removes,
//! resets and polls it. Here that task is the application itself, running
//! on a current-thread runtime ([`Timers::drive`] runs it in `block_on`):
//! a schedule is `insert_at`, a cancel `remove`, a reset `reset_at`, and
//! between the application's events the task awaits `poll_expired` and
//! fires what expired. Periodic timers are re-inserted on expiry
//! (fixed-rate at the previous deadline + period, fixed-delay at now +
//! period), as a user's loop would.
//!
//! The queue is made with `DelayQueue::new()` and grows as users' queues
//! do. Outside [`Timers::drive`] (the criterion benches call the operations
//! directly) each operation enters the runtime first, since the queue's
//! timer needs a tokio context; inside it, nothing is added.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::time::Instant;
use tokio_util::time::delay_queue::{DelayQueue, Key};

use crate::runner::{App, Fire, Refused, Timers, TimersFactory};
use crate::spec::Kind;

/// One line for the report.
pub const ABOUT: &str = "tokio-util 0.7 DelayQueue owned by the application's task (current-thread runtime): insert, remove, reset and poll_expired on one thread";

/// The factory.
pub fn factory() -> TimersFactory {
    Arc::new(|capacity| Box::new(Dq::new(capacity)) as Box<dyn Timers>)
}

/// What the application keeps per timer besides its key: read when the
/// timer expires, never by a cancel or a reset.
struct Timer {
    fire: Fire,
    every: Option<(Kind, Duration)>,
    at: Instant,
}

struct Dq {
    /// `None` while [`Timers::drive`] runs the application inside it.
    rt: Option<Runtime>,
    q: DelayQueue<usize>,
    /// The key of each pending timer, dense as a user keeps them: all that
    /// a cancel or reset reads.
    keys: Vec<Option<Key>>,
    timers: Vec<Option<Timer>>,
}

impl Dq {
    fn new(capacity: usize) -> Dq {
        let rt = Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a tokio runtime: {e}"));
        let mut keys = Vec::with_capacity(capacity);
        keys.resize_with(capacity, || None);
        let mut timers = Vec::with_capacity(capacity);
        timers.resize_with(capacity, || None);
        Dq {
            rt: Some(rt),
            q: DelayQueue::new(),
            keys,
            timers,
        }
    }

    /// Runs `f` in the runtime's context: as is inside `drive`, else after
    /// entering it.
    fn in_context<R>(&mut self, f: impl FnOnce(&mut Dq) -> R) -> R {
        match self.rt.as_ref().map(Runtime::handle).cloned() {
            Some(h) => {
                let _g = h.enter();
                f(self)
            }
            None => f(self),
        }
    }

    fn insert(&mut self, id: usize, at: Instant, fire: Fire, every: Option<(Kind, Duration)>) {
        self.in_context(|dq| {
            dq.keys[id] = Some(dq.q.insert_at(id, at));
            dq.timers[id] = Some(Timer { fire, every, at });
        });
    }

    fn expired(&mut self, id: usize) {
        self.keys[id] = None;
        let Some(s) = self.timers[id].as_mut() else {
            return;
        };
        s.fire.hit();
        if let Some((kind, period)) = s.every {
            s.at = match kind {
                Kind::FixedDelay => Instant::now() + period,
                _ => s.at + period,
            };
            self.keys[id] = Some(self.q.insert_at(id, s.at));
        }
    }

    /// The owning task's wait: fires what expires until `until`.
    async fn wait_until(&mut self, until: Instant) {
        let sleep = tokio::time::sleep_until(until);
        tokio::pin!(sleep);
        loop {
            let expired = tokio::select! {
                biased;
                e = poll_fn(|cx| self.q.poll_expired(cx)) => e,
                () = &mut sleep => return,
            };
            match expired {
                Some(e) => self.expired(e.into_inner()),
                // Empty: nothing can expire before the application runs again.
                None => return sleep.await,
            }
        }
    }
}

impl Timers for Dq {
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), Refused> {
        self.insert(id, Instant::now() + delay, fire, None);
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
        self.insert(id, Instant::now() + initial, fire, Some((kind, period)));
        Ok(())
    }

    fn cancel(&mut self, id: usize) -> bool {
        // A removed timer never expires again, so a periodic one needs
        // nothing more.
        self.in_context(|dq| match dq.keys[id].take() {
            Some(key) => {
                dq.q.remove(&key);
                true
            }
            None => false,
        })
    }

    fn reset(&mut self, id: usize, delay: Duration) -> bool {
        self.in_context(|dq| match &dq.keys[id] {
            Some(key) => {
                let at = Instant::now() + delay;
                dq.q.reset_at(key, at);
                if let Some(s) = dq.timers[id].as_mut() {
                    s.at = at;
                }
                true
            }
            None => false,
        })
    }

    fn drive(&mut self, app: &mut dyn App) {
        let Some(rt) = self.rt.take() else {
            unreachable!("DelayQueue::drive re-entered");
        };
        rt.block_on(async {
            while let Some(until) = app.step(self) {
                self.wait_until(Instant::from_std(until)).await;
            }
        });
        self.rt = Some(rt);
    }

    fn shutdown(self: Box<Self>) {
        let Dq {
            rt,
            q,
            keys,
            timers,
        } = *self;
        drop((q, keys, timers));
        if let Some(rt) = rt {
            rt.shutdown_timeout(Duration::from_secs(10));
        }
    }
}
