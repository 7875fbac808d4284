//! `nexus-timer`'s `Wheel` (a slab-backed hierarchical wheel without
//! per-timer allocation: 1 ms tick, 64 buckets per level, 8× per level, 7
//! levels, as the crate's defaults), driven as its users drive it: one
//! thread owns the wheel, schedules, cancels and reschedules on it, and
//! polls it (`poll_and_rebalance`, the crate's recommended poll) in its
//! loop, sleeping until the wheel's next deadline or the application's next
//! event. That thread is the application's own ([`Timers::drive`]), so the
//! wheel is never shared and nothing is locked, exactly as in an event loop.
//!
//! The wheel holds the timer's id; the application keeps the handles in a
//! dense table (as the crate's `RequestTracker` example keeps its handles
//! in a map) and the fire callback per id apart, read only when it fires.
//! A fired timer's handle is freed when its id comes out
//! of the poll. The wheel has no periodic timers: a periodic id is
//! scheduled again from the fire handler (fixed-rate at the previous
//! deadline + period, fixed-delay at now + period), as the crate's
//! heartbeat pattern does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nexus_timer::{TimerHandle, Wheel};

use crate::runner::{measure, App, Fire, Refused, Timers, TimersFactory};
use crate::spec::Kind;

/// One line for the report.
pub const ABOUT: &str = "nexus-timer 1.5 Wheel (slab-backed, no allocation per timer, 1 ms tick) owned and polled by the application's thread";

/// The factory.
pub fn factory() -> TimersFactory {
    Arc::new(|capacity| Box::new(Nexus::new(capacity)) as Box<dyn Timers>)
}

/// Slab chunk size: the crate's documented example value.
const CHUNK: usize = 4096;

/// What the application keeps per timer besides its handle: read when the
/// timer fires, never by a cancel or a reset.
struct Timer {
    fire: Option<Fire>,
    every: Option<(Kind, Duration)>,
    at: Instant,
}

struct Nexus {
    wheel: Wheel<usize>,
    /// The handle of each pending timer, dense (8 B) as a user keeps them:
    /// all that a cancel reads.
    handles: Vec<Option<TimerHandle<usize>>>,
    timers: Vec<Timer>,
    fired: Vec<usize>,
}

impl Nexus {
    fn new(capacity: usize) -> Nexus {
        let now = measure::now();
        let mut handles = Vec::with_capacity(capacity);
        handles.resize_with(capacity, || None);
        let mut timers = Vec::with_capacity(capacity);
        timers.resize_with(capacity, || Timer {
            fire: None,
            every: None,
            at: now,
        });
        Nexus {
            wheel: Wheel::unbounded(CHUNK, now),
            handles,
            timers,
            fired: Vec::with_capacity(1024),
        }
    }

    fn insert(&mut self, id: usize, at: Instant, fire: Fire, every: Option<(Kind, Duration)>) {
        self.handles[id] = Some(self.wheel.schedule(at, id));
        self.timers[id] = Timer {
            fire: Some(fire),
            every,
            at,
        };
    }

    /// Polls the wheel and runs what fired.
    fn poll(&mut self, now: Instant) {
        self.wheel.poll_and_rebalance(now, &mut self.fired);
        for k in 0..self.fired.len() {
            let id = self.fired[k];
            if let Some(h) = self.handles[id].take() {
                self.wheel.free(h); // fired: release the entry
            }
            let s = &mut self.timers[id];
            if let Some(f) = &s.fire {
                f.hit();
            }
            if let Some((kind, period)) = s.every {
                s.at = match kind {
                    Kind::FixedDelay => measure::now() + period,
                    _ => s.at + period,
                };
                self.handles[id] = Some(self.wheel.schedule(s.at, id));
            }
        }
        self.fired.clear();
    }
}

impl Timers for Nexus {
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), Refused> {
        self.insert(id, measure::now() + delay, fire, None);
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
        self.insert(id, measure::now() + initial, fire, Some((kind, period)));
        Ok(())
    }

    fn cancel(&mut self, id: usize) -> bool {
        // A cancelled timer never fires again, so a periodic one needs
        // nothing more.
        match self.handles[id].take() {
            Some(h) => self.wheel.cancel(h).is_some(),
            None => false,
        }
    }

    fn reset(&mut self, id: usize, delay: Duration) -> bool {
        match self.handles[id].take() {
            Some(h) => {
                let at = measure::now() + delay;
                self.handles[id] = Some(self.wheel.reschedule(h, at));
                self.timers[id].at = at;
                true
            }
            None => false,
        }
    }

    fn drive(&mut self, app: &mut dyn App) {
        while let Some(until) = app.step(self) {
            loop {
                let now = measure::now();
                self.poll(now);
                if now >= until {
                    break;
                }
                // After a poll the wheel's next deadline is exact (> now);
                // the next event waits on the pacing grid.
                let event = measure::event_wake(until);
                let wake = self.wheel.next_deadline().map_or(event, |d| d.min(event));
                measure::wait_until(wake);
            }
        }
    }

    fn shutdown(self: Box<Self>) {}
}

impl Drop for Nexus {
    /// A handle must be given back to the wheel, never dropped.
    fn drop(&mut self) {
        for h in self.handles.iter_mut().filter_map(Option::take) {
            let _ = self.wheel.cancel(h);
        }
    }
}
