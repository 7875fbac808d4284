//! The registry: every subject the workbench knows, algorithms first.
//!
//! A scheduler of the `schedulers` crate joins with **one line** in
//! [`SCHEDULERS`]; a peer joins with one line in [`crate::peers::all`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use schedulers::{
    HashedWheelTimer, HeapTimer, HierarchicalWheelTimer, ScheduledThreadPool, Scheduler,
    SchedulerExt, Task, TaskHandle,
};

use crate::record::{SubjectInfo, SubjectKind};
use crate::runner::{Fire, InProcess, Runner, Timers, TimersFactory};
use crate::spec::Kind;

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
        name: "stpe",
        about: "ScheduledThreadPool: ScheduledThreadPoolExecutor clone, 2 workers, leader/follower",
        make: || Ok(Box::new(ScheduledThreadPool::new(2)?)),
    },
    Algorithm {
        name: "wheel",
        about: "HashedWheelTimer: Netty-style flat wheel with rounds, 1 ms tick",
        make: || Ok(Box::new(HashedWheelTimer::new()?)),
    },
    Algorithm {
        name: "hier",
        about:
            "HierarchicalWheelTimer: Kafka-style timing wheels + delay queue of buckets, 1 ms tick",
        make: || Ok(Box::new(HierarchicalWheelTimer::new()?)),
    },
];

/// A subject the suite can run: its description and how to get a runner.
#[derive(Clone)]
pub struct Subject {
    /// Short name.
    pub name: &'static str,
    /// Algorithm or peer.
    pub kind: SubjectKind,
    /// One line for the report.
    pub about: &'static str,
    /// A runner, or why this subject cannot run here (a missing JVM, say):
    /// the suite then skips it with that message.
    pub runner: Arc<dyn Fn() -> Result<Box<dyn Runner>, String> + Send + Sync>,
    /// For in-process subjects, the factory of their [`Timers`] (the
    /// criterion benches use it); `None` for out-of-process peers.
    pub timers: Option<TimersFactory>,
}

impl fmt::Debug for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subject")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Subject {
    /// An in-process subject from its [`Timers`] factory.
    pub fn in_process(
        name: &'static str,
        kind: SubjectKind,
        about: &'static str,
        timers: TimersFactory,
    ) -> Subject {
        let t = timers.clone();
        Subject {
            name,
            kind,
            about,
            runner: Arc::new(move || {
                Ok(Box::new(InProcess::new(name, t.clone())) as Box<dyn Runner>)
            }),
            timers: Some(timers),
        }
    }

    /// The report's view of it.
    pub fn info(&self) -> SubjectInfo {
        SubjectInfo {
            name: self.name.to_owned(),
            kind: self.kind,
            about: self.about.to_owned(),
        }
    }
}

/// Every subject: the algorithms in [`SCHEDULERS`], then the peers.
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
            Subject::in_process(a.name, SubjectKind::Algorithm, a.about, timers)
        })
        .collect();
    v.extend(crate::peers::all());
    v
}

/// Looks a subject up by name.
pub fn find(name: &str) -> Option<Subject> {
    all().into_iter().find(|s| s.name == name)
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
    fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), String> {
        let h = self
            .scheduler
            .submit(delay, Task::once(move || fire.hit()))
            .map_err(|e| e.to_string())?;
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
    ) -> Result<(), String> {
        let s = &self.scheduler;
        let h = match kind {
            Kind::FixedDelay => s.schedule_with_fixed_delay(initial, period, move || fire.hit()),
            _ => s.schedule_at_fixed_rate(initial, period, move || fire.hit()),
        };
        self.handles[id] = Some(h.map_err(|e| e.to_string())?);
        Ok(())
    }

    fn cancel(&mut self, id: usize) -> bool {
        self.handles[id].as_ref().is_some_and(TaskHandle::cancel)
    }

    fn reset(&mut self, id: usize, delay: Duration) -> bool {
        self.handles[id]
            .as_ref()
            .is_some_and(|h| h.reset(delay).unwrap_or(false))
    }

    fn shutdown(self: Box<Self>) {
        let SchedulerTimers { scheduler, handles } = *self;
        drop(scheduler.shutdown_now());
        let _ = scheduler.await_termination(Duration::from_secs(30));
        drop(handles);
    }
}
