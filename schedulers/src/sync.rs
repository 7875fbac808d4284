//! The atomics under the task state machine: std's, or loom's when the crate
//! is built with `--cfg loom`, so that the model in `task::model` explores
//! every interleaving of the real protocol code (the way tokio's `loom` and
//! crossbeam's `primitive` modules switch).
//!
//! Only the state word goes through here; the rest of the crate uses std
//! directly, and a `--cfg loom` build is only for running the model.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic;

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
