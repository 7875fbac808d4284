//! The `tracing` facade: a span per run, events for panics and
//! rejections (see the [module docs](super) for the fields).

use tracing::field::Empty;

use crate::error::Error;

/// A run's span, entered while it runs.
pub(super) struct Span(tracing::span::EnteredSpan);

impl Span {
    #[inline]
    pub(super) fn enter(scheduler: &str, task: Option<&str>, lateness: u64) -> Span {
        let span = tracing::debug_span!(
            target: "schedulers::run",
            "run",
            scheduler,
            task = Empty,
            lateness_ns = lateness,
            run_ns = Empty,
            outcome = Empty,
        );
        if let Some(task) = task {
            span.record("task", task);
        }
        Span(span.entered())
    }

    pub(super) fn panicked(&self, scheduler: &str, task: Option<&str>, error: &Error) {
        tracing::warn!(target: "schedulers", scheduler, task, %error, "task panicked");
    }

    #[inline]
    pub(super) fn end(self, run: u64, panicked: bool) {
        let span = self.0;
        if !span.is_disabled() {
            span.record("run_ns", run);
            span.record("outcome", if panicked { "panicked" } else { "ok" });
        }
    }
}

pub(super) fn rejected(scheduler: &str, task: Option<&str>, error: &Error) {
    tracing::debug!(target: "schedulers", scheduler, task, %error, "task rejected");
}
