//! The atomics and cells of the hand-offs between callers and drivers:
//! std's, or loom's when the crate is built with `--cfg schedulers_loom`,
//! so that the models in `state::model` and `wake::model` explore every
//! interleaving of the real protocol code (the way tokio's `loom` and
//! crossbeam's `primitive` modules switch).
//!
//! Only the state words, the bodies and the slab that holds them, the
//! lanes and the driver's wake-up flags go through here; the rest of the
//! crate uses std directly, and a `--cfg schedulers_loom` build is only for
//! running the models.

#[cfg(not(schedulers_loom))]
pub(crate) use std::sync::atomic;

#[cfg(schedulers_loom)]
pub(crate) use loom::sync::atomic;

#[cfg(schedulers_loom)]
pub(crate) use loom::cell;

/// std's `UnsafeCell` behind loom's access API (`with`, `with_mut`), so the
/// same code runs under the model.
#[cfg(not(schedulers_loom))]
pub(crate) mod cell {
    /// See the [module docs](self).
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// Calls `f` with a pointer for reading.
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a pointer for writing.
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// A `SeqCst` fence in model builds, nothing otherwise. Loom treats
/// `SeqCst` accesses as `AcqRel` (see its README), so a thread that stores
/// to one word and then loads another could, under the model, miss the
/// store of a thread doing the same the other way round: the language
/// forbids that for `SeqCst` accesses, and `crate::wake` relies on it.
/// Between such a store and load, this fence (which loom does model) keeps
/// the model to what `SeqCst` allows.
#[inline(always)]
pub(crate) fn seq_cst_in_model() {
    #[cfg(schedulers_loom)]
    loom::sync::atomic::fence(loom::sync::atomic::Ordering::SeqCst);
}
