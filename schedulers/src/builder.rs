//! The settings every scheduler's builder shares.

use std::sync::Arc;

use crate::clock::Clock;

/// What to do with waiting tasks at `shutdown`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    /// Periodic tasks keep running after `shutdown` (default false).
    pub(crate) keep_periodic: bool,
    /// One-shot tasks not yet due still run after `shutdown` (default true).
    pub(crate) run_delayed: bool,
}

/// The settings every scheduler's builder has.
#[derive(Clone, Debug)]
pub(crate) struct Common {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) pending_limit: Option<usize>,
    pub(crate) keep_periodic: bool,
    pub(crate) run_delayed: bool,
    pub(crate) thread_name: String,
}

impl Common {
    pub(crate) fn policy(&self) -> Policy {
        Policy {
            keep_periodic: self.keep_periodic,
            run_delayed: self.run_delayed,
        }
    }

    pub(crate) fn new(thread_name: &str) -> Common {
        Common {
            clock: Arc::new(crate::clock::SystemClock),
            pending_limit: None,
            keep_periodic: false,
            run_delayed: true,
            thread_name: thread_name.to_owned(),
        }
    }
}

/// The builder methods every scheduler shares; expects a `common: Common` field.
macro_rules! common_builder_methods {
    () => {
        /// The clock the scheduler reads: [`SystemClock`](crate::SystemClock)
        /// by default, a [`ManualClock`](crate::ManualClock) for tests and
        /// simulations.
        pub fn clock(mut self, clock: impl crate::Clock) -> Self {
            self.common.clock = std::sync::Arc::new(clock);
            self
        }

        /// The most tasks that may wait at once; beyond it `submit` fails
        /// with [`Error::is_pending_limit`](crate::Error::is_pending_limit).
        /// Unlimited by default.
        pub fn pending_limit(mut self, limit: usize) -> Self {
            self.common.pending_limit = Some(limit);
            self
        }

        /// The name of the scheduler's thread (a prefix where it has several).
        pub fn thread_name(mut self, name: impl Into<String>) -> Self {
            self.common.thread_name = name.into();
            self
        }

        /// Whether periodic tasks keep running after `shutdown` (default
        /// false, as Java's `ScheduledThreadPoolExecutor`).
        pub fn continue_existing_periodic_tasks_after_shutdown(mut self, keep: bool) -> Self {
            self.common.keep_periodic = keep;
            self
        }

        /// Whether pending one-shot tasks still run after `shutdown`
        /// (default true, as Java's `ScheduledThreadPoolExecutor`).
        pub fn execute_existing_delayed_tasks_after_shutdown(mut self, run: bool) -> Self {
            self.common.run_delayed = run;
            self
        }
    };
}
pub(crate) use common_builder_methods;
