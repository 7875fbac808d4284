//! The registry: every [`Subject`] the workbench knows, algorithms first;
//! and the adapter from the `schedulers` crate's API to the runner's
//! [`Timers`]. This module is the only place that calls the `schedulers`
//! API, so a change of that API is an edit here (the Redis scheduler's,
//! `schedulers-redis`, is called from [`crate::distributed`]).
//!
//! A scheduler of the `schedulers` crate joins with **one line** in
//! [`SCHEDULERS`]; a peer joins with one line in [`crate::peers::all`].

use std::sync::Arc;
use std::time::Duration;

use schedulers::calendar::Calendar;
use schedulers::{
    HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool, Scheduler,
    SchedulerExt, Task, TaskHandle,
};

use crate::calendar::Schedule;
use crate::record::SubjectKind;
use crate::runner::contention::{self, Request, Shared};
use crate::runner::{
    drive_threaded, App, Fire, OwnLateness, Refused, RunError, Subject, Timers, TimersFactory,
};
use crate::spec::{Kind, WorkloadKind};

/// One of this crate's schedulers, as the workbench builds it.
#[derive(Debug, Clone, Copy)]
pub struct Algorithm {
    /// Short name used on the command line and in reports.
    pub name: &'static str,
    /// One line for the report.
    pub about: &'static str,
    /// Builds it with default settings on the system clock (an error if the
    /// operating system refuses its threads).
    pub make: fn() -> Result<Box<dyn Scheduler>, schedulers::Error>,
}

/// Every scheduler of the `schedulers` crate. Add yours here.
pub const SCHEDULERS: &[Algorithm] = &[
    Algorithm {
        name: "heap",
        about: "HeapTimer: java.util.Timer clone, one thread, binary heap",
        make: || Ok(Box::new(HeapTimer::new()?)),
    },
    Algorithm {
        name: "heap-slack50",
        about: "HeapTimer with timer_slack(50 µs), the slack the JDK's threads run with: fewer wake-ups, later fires",
        make: || {
            let timer = HeapTimer::builder()
                .timer_slack(Duration::from_micros(50))
                .build()?;
            Ok(Box::new(timer))
        },
    },
    Algorithm {
        name: "stpe",
        about: "ScheduledThreadPool: ScheduledThreadPoolExecutor clone, 2 workers, leader/follower",
        make: || Ok(Box::new(ScheduledThreadPool::new(2)?)),
    },
    Algorithm {
        name: "wheel",
        about: "HashedWheelTimer: Netty-style flat wheel with rounds, 1 ms tick, fires at the exact deadline",
        make: || Ok(Box::new(HashedWheelTimer::new()?)),
    },
    Algorithm {
        name: "wheel-tick",
        about: "HashedWheelTimer in Netty's tick mode (precise(false)): fires at the end of its 1 ms tick",
        make: || Ok(Box::new(HashedWheelTimer::builder().precise(false).build()?)),
    },
    Algorithm {
        name: "hier",
        about: "HierarchicalWheelTimer: Kafka-style timing wheels + delay queue of buckets, 1 ms tick, exact deadline, tasks on the driver",
        make: || Ok(Box::new(HierarchicalWheelTimer::new()?)),
    },
    Algorithm {
        name: "hier-kafka",
        about: "HierarchicalWheelTimer as Kafka runs it: tick mode (precise(false)), tasks on a 1-thread pool",
        make: || {
            let timer = HierarchicalWheelTimer::builder()
                .precise(false)
                .executor(schedulers::Executor::pool(1)?)
                .build()?;
            Ok(Box::new(timer))
        },
    },
];

/// Every subject: the algorithms in [`SCHEDULERS`], the Redis scheduler's
/// ([`crate::distributed`]), then the peers.
pub fn all() -> Vec<Subject> {
    let mut v: Vec<Subject> = SCHEDULERS
        .iter()
        .map(|a| {
            let (name, make) = (a.name, a.make);
            let timers: TimersFactory = Arc::new(move |capacity| {
                // As the peers' factories do when their runtime cannot start.
                let scheduler = make().unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
                Box::new(SchedulerTimers::new(scheduler, capacity)) as Box<dyn Timers>
            });
            let subject = Subject {
                workloads: &[
                    WorkloadKind::Timeline,
                    WorkloadKind::Sweep,
                    WorkloadKind::Calendar,
                ],
                ..Subject::in_process(a.name, SubjectKind::Algorithm, a.about, timers)
            };
            // The contention workload's threads share one `Arc<dyn Scheduler>`.
            let shared = contention::runner(move |_threads| {
                make()
                    .map(Arc::<dyn Scheduler>::from)
                    .map_err(|e| RunError::Child(format!("cannot start {name}: {e}")))
            });
            contention::with(subject, shared)
        })
        .collect();
    v.extend(crate::distributed::subjects());
    v.extend(crate::peers::all());
    v
}

/// Looks a subject up by name, the reference subjects ([`Ballast`])
/// included.
pub fn find(name: &str) -> Option<Subject> {
    all()
        .into_iter()
        .find(|s| s.name == name)
        .or_else(|| Ballast::subject(name))
}

/// Any [`Scheduler`] as [`Timers`]: the handle of each timer in a
/// preallocated vector.
#[derive(Debug)]
pub struct SchedulerTimers {
    scheduler: Box<dyn Scheduler>,
    handles: Vec<Option<TaskHandle>>,
}

impl SchedulerTimers {
    /// Wraps `scheduler`, with room for `capacity` handles (allocated and
    /// touched now).
    pub fn new(scheduler: Box<dyn Scheduler>, capacity: usize) -> SchedulerTimers {
        let mut handles = Vec::with_capacity(capacity);
        handles.resize_with(capacity, || None);
        SchedulerTimers { scheduler, handles }
    }
}

impl Timers for SchedulerTimers {
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), Refused> {
        let h = self
            .scheduler
            .submit(delay, Task::once(move || fire.hit()))
            .map_err(|e| Refused(Box::new(e)))?;
        self.handles[id] = Some(h);
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
        let s = &self.scheduler;
        let h = match kind {
            Kind::FixedDelay => s.schedule_with_fixed_delay(initial, period, move || fire.hit()),
            _ => s.schedule_at_fixed_rate(initial, period, move || fire.hit()),
        };
        self.handles[id] = Some(h.map_err(|e| Refused(Box::new(e)))?);
        Ok(())
    }

    /// The library's calendar API: the workload's expression read in its
    /// zone ([`Calendar::parse_in`]), scheduled as a calendar task.
    fn schedule_cron(&mut self, id: usize, cron: &Schedule, fire: Fire) -> Result<(), Refused> {
        let calendar =
            Calendar::parse_in(&cron.expr(), &cron.zone).map_err(|e| Refused(Box::new(e)))?;
        let h = self
            .scheduler
            .schedule_calendar(calendar, move || fire.hit())
            .map_err(|e| Refused(Box::new(e)))?;
        self.handles[id] = Some(h);
        Ok(())
    }

    fn cancel(&mut self, id: usize) -> bool {
        // A cancelled timer's handle is done with, as a peer's is.
        self.handles[id]
            .take()
            .is_some_and(TaskHandle::cancel_and_drop)
    }

    fn reset(&mut self, id: usize, delay: Duration) -> bool {
        self.handles[id]
            .as_ref()
            .is_some_and(|h| h.reset(delay).unwrap_or(false))
    }

    fn drive(&mut self, app: &mut dyn App) {
        drive_threaded(self, app);
    }

    fn own_lateness(&self) -> Option<OwnLateness> {
        let lateness = self.scheduler.metrics().lateness;
        let ns = |d: Option<Duration>| d.unwrap_or_default().as_nanos() as f64;
        Some(OwnLateness {
            runs: lateness.count(),
            mean_ns: ns(lateness.mean()),
            p50_ns: ns(lateness.quantile(0.5)),
            p99_ns: ns(lateness.quantile(0.99)),
        })
    }

    fn shutdown(self: Box<Self>) {
        let SchedulerTimers { scheduler, handles } = *self;
        drop(scheduler.shutdown_now());
        let _ = scheduler.await_termination(Duration::from_secs(30));
        drop(handles);
    }
}

/// Any [`Scheduler`] as the contention workload's threads share it: one
/// `Arc<dyn Scheduler>`; a timeout is `submit(delay, Task::once(..))`
/// whose closure holds the 16-byte request, cleared by
/// `TaskHandle::cancel_and_drop` (the handle is done with).
impl Shared for dyn Scheduler {
    type Handle = TaskHandle;

    fn schedule(&self, delay: Duration, request: Request) -> Result<TaskHandle, Refused> {
        self.submit(delay, Task::once(move || request.timed_out()))
            .map_err(|e| Refused(Box::new(e)))
    }

    fn cancel(&self, handle: TaskHandle) -> bool {
        handle.cancel_and_drop()
    }

    fn shutdown(&self) {
        drop(self.shutdown_now());
        let _ = self.await_termination(Duration::from_secs(30));
    }
}

/// A reference subject for checking the memory measurement: it holds
/// exactly `N` bytes per pending timer (`ballast-N`) and nothing else that
/// grows (its storage is reserved, untouched, when it is made, and filled
/// as timers are scheduled). Its timers never fire; cancel and reset work.
/// Not one of [`all`]: [`find`] and the memory probe know it.
#[derive(Debug)]
pub struct Ballast {
    per: usize,
    bytes: Vec<u8>,
}

const BALLAST_PENDING: u8 = 1;
const BALLAST_CANCELLED: u8 = 2;

impl Ballast {
    /// The name prefix: `ballast-64` holds 64 bytes per timer.
    pub const PREFIX: &'static str = "ballast-";

    /// Room for `capacity` timers of `per` bytes (at least 1).
    pub fn new(per: usize, capacity: usize) -> Ballast {
        let per = per.max(1);
        Ballast {
            per,
            bytes: Vec::with_capacity(per * capacity),
        }
    }

    /// The subject named `ballast-N`, if `name` is one.
    pub fn subject(name: &str) -> Option<Subject> {
        let per: usize = name.strip_prefix(Self::PREFIX)?.parse().ok()?;
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let make: TimersFactory =
            Arc::new(move |capacity| Box::new(Ballast::new(per, capacity)) as Box<dyn Timers>);
        Some(Subject::in_process(
            name,
            SubjectKind::Peer,
            "reference: holds exactly N bytes per pending timer",
            make,
        ))
    }

    fn state(&mut self, id: usize) -> Option<&mut u8> {
        self.bytes.get_mut(id * self.per)
    }
}

impl Timers for Ballast {
    fn schedule(&mut self, id: usize, _delay: Duration, _fire: Fire) -> Result<(), Refused> {
        let end = (id + 1) * self.per;
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        self.bytes[id * self.per..end].fill(0xA5);
        self.bytes[id * self.per] = BALLAST_PENDING;
        Ok(())
    }

    fn schedule_periodic(
        &mut self,
        _id: usize,
        _kind: Kind,
        _initial: Duration,
        _period: Duration,
        _fire: Fire,
    ) -> Result<(), Refused> {
        Err(Refused::because(
            "the ballast subject has no periodic timers",
        ))
    }

    fn cancel(&mut self, id: usize) -> bool {
        match self.state(id) {
            Some(s) if *s == BALLAST_PENDING => {
                *s = BALLAST_CANCELLED;
                true
            }
            _ => false,
        }
    }

    fn reset(&mut self, id: usize, _delay: Duration) -> bool {
        self.state(id).is_some_and(|s| *s == BALLAST_PENDING)
    }

    fn drive(&mut self, app: &mut dyn App) {
        drive_threaded(self, app);
    }

    fn shutdown(self: Box<Self>) {}
}
