//! A subject: one scheduler or peer as the suite sees it, a name, a
//! description and how to get its [`Runner`], or why it cannot run here.

use std::fmt;
use std::sync::Arc;

use super::{InProcess, Runner, TimersFactory};
use crate::record::{SubjectInfo, SubjectKind};
use crate::spec::{Workload, WorkloadKind};

/// Why a subject cannot run here (a missing JVM, no `redis-server`): the
/// suite skips it with this message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

impl From<String> for Unavailable {
    fn from(why: String) -> Unavailable {
        Unavailable(why)
    }
}

impl From<&str> for Unavailable {
    fn from(why: &str) -> Unavailable {
        Unavailable(why.to_owned())
    }
}

/// Makes a subject's runner, or says why it cannot run here.
pub type RunnerFactory = Arc<dyn Fn() -> Result<Box<dyn Runner>, Unavailable> + Send + Sync>;

/// A subject the suite can run: its description and how to get a runner.
#[derive(Clone)]
pub struct Subject {
    /// Short name.
    pub name: &'static str,
    /// Algorithm or peer.
    pub kind: SubjectKind,
    /// One line for the report.
    pub about: &'static str,
    /// The kinds of workload it runs (the others are not asked of it).
    pub workloads: &'static [WorkloadKind],
    /// A runner, or why this subject cannot run here (a missing JVM, say):
    /// the suite then skips it with that message.
    pub runner: RunnerFactory,
    /// For in-process subjects, the factory of their [`Timers`](super::Timers) (the
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
    /// An in-process subject from its [`Timers`](super::Timers) factory.
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
            workloads: &[WorkloadKind::Timeline, WorkloadKind::Sweep],
            runner: Arc::new(move || {
                Ok(Box::new(InProcess::new(name, t.clone())) as Box<dyn Runner>)
            }),
            timers: Some(timers),
        }
    }

    /// Whether it runs `w`.
    pub fn runs(&self, w: &Workload) -> bool {
        self.workloads.contains(&w.kind())
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
