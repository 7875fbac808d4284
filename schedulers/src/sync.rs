//! The atomics under the timer state word: std's, or loom's when the crate
//! is built with `--cfg schedulers_loom`, so that the model in `state::model` explores
//! every interleaving of the real protocol code (the way tokio's `loom` and
//! crossbeam's `primitive` modules switch).
//!
//! Only the state words (and the slab that holds them) go through here; the rest of the crate uses std
//! directly, and a `--cfg schedulers_loom` build is only for running the model.

#[cfg(not(schedulers_loom))]
pub(crate) use std::sync::atomic;

#[cfg(schedulers_loom)]
pub(crate) use loom::sync::atomic;
