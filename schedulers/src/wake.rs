//! How callers and a sleeping driver agree on who wakes whom, with no lock
//! on the caller's side: a caller wakes the driver only when its work is
//! due before the driver would wake by itself, and a driver never sleeps
//! past work a caller left for it.
//!
//! Each side writes its own word, then reads the other's, both `SeqCst`:
//! a caller pushes its entry into its lane and lowers the lane's earliest
//! deadline (`Lanes`), then reads [`Wake::due_before`]; a driver about to
//! sleep publishes its wake-up time ([`Wake::sleep_until`]), then reads the
//! lanes' earliest deadline. One of the two sees the other: the caller
//! wakes the driver, or the driver does not sleep. A cancel that leaves its
//! closure to the driver does the same with [`Wake::leave_closure`], so a
//! driver that would sleep for hours drops it within a housekeeping period.
//!
//! So whatever gives a lane an entry's deadline lowers the lane's earliest:
//! a push, and a reset moved in place (`Held::retarget`). And a caller
//! marks the lane dirty before that, so a driver that sees the deadline
//! (and does not sleep) sees the mark and waits for the lane's lock,
//! instead of going round its loop until the caller lets go.
//!
//! With several driver threads (a pool's workers), the word says when the
//! first of the waiting ones wakes, and 0 only while a thread is awake and
//! will look at the lanes before it sleeps. A worker that goes to run
//! tasks stops looking: it publishes the waiting threads' first wake-up
//! and then reads the lanes, as a driver going to sleep does
//! ([`Wake::stop_looking`]), else a caller would take it for a looking
//! thread and leave the waiting ones asleep, its work waiting for the
//! running task to end.
//!
//! The caller's wake-up itself (`Shared::nudge`) takes the driver's lock,
//! which the driver holds from its look until its wait releases it: the
//! nudge lands before the look (which then sees it) or in the wait.
//!
//! The loom model below checks every interleaving of this (up to a bound
//! on preemptions) with the real lanes and flags. (Loom takes `SeqCst` accesses for weaker ones: see
//! [`seq_cst_in_model`] for the fences that set it right in its builds.)

use crate::lanes::Lanes;
use crate::sync::atomic::Ordering::SeqCst;
use crate::sync::atomic::{AtomicBool, AtomicU64};
use crate::sync::seq_cst_in_model;

/// The driver's planned wake-up and the closures left to it. See the
/// [module docs](self).
#[derive(Debug)]
pub(crate) struct Wake {
    /// When the first waiting driver wakes by itself, in ticks: `NEVER`
    /// while they wait for a signal, 0 while a driver is awake and looking.
    at: AtomicU64,
    /// A cancel left a closure to the driver since it last took the marks.
    closures_left: AtomicBool,
}

impl Wake {
    pub(crate) fn new() -> Wake {
        Wake {
            at: AtomicU64::new(0),
            closures_left: AtomicBool::new(false),
        }
    }

    /// True if work due at `at` (ticks), pushed into a lane before this
    /// call, comes before the waiting driver wakes by itself: then the
    /// caller wakes it. Never while a driver is awake (it looks at the
    /// lanes before it sleeps).
    pub(crate) fn due_before(&self, at: u64) -> bool {
        // After the caller's store to its lane (or its mark).
        seq_cst_in_model();
        at < self.at.load(SeqCst)
    }

    /// A cancel left its closure to the driver (after marking it): true if
    /// it is the first since the driver last took the marks. Then the
    /// caller wakes a driver that would not look within a housekeeping
    /// period by itself (`Shared::keep_house`).
    pub(crate) fn leave_closure(&self) -> bool {
        // After the mark. The load first: while the flag is up, a cancel
        // costs no locked instruction here.
        seq_cst_in_model();
        !self.closures_left.load(SeqCst) && !self.closures_left.swap(true, SeqCst)
    }

    /// The driver is about to take the marks: a closure left after this
    /// is announced again.
    pub(crate) fn closures_taken(&self) {
        self.closures_left.store(false, SeqCst);
        seq_cst_in_model();
    }

    /// The driver, about to sleep until `wake_at` (ticks), publishes it.
    /// False if it must not sleep after all (it is awake again): a lane
    /// holds work due before then, or, if it would sleep past a
    /// housekeeping period (`long`), a closure was left to it since it
    /// last took the marks (the flag is taken, so that its next wait
    /// sleeps).
    ///
    /// Other threads may wait already, until `others` at the earliest: a
    /// caller needs to wake one of them only for work due before the first
    /// of them wakes.
    pub(crate) fn sleep_until(
        &self,
        wake_at: u64,
        others: Option<u64>,
        lanes: &Lanes,
        long: bool,
    ) -> bool {
        self.at
            .store(others.map_or(wake_at, |o| o.min(wake_at)), SeqCst);
        seq_cst_in_model();
        if lanes.earliest() < wake_at || long && self.closures_left.swap(false, SeqCst) {
            self.awake();
            return false;
        }
        true
    }

    /// The driver is awake: no caller needs to wake it.
    pub(crate) fn awake(&self) {
        self.at.store(0, SeqCst);
    }

    /// A pool thread stops looking at the lanes (it runs tasks with the
    /// driver's lock released) while others wait until `others` at the
    /// earliest: callers must wake one of them for work due before then.
    /// Publishes it, then true if a lane holds such work already (the
    /// thread wakes one).
    pub(crate) fn stop_looking(&self, others: u64, lanes: &Lanes) -> bool {
        self.at.store(others, SeqCst);
        seq_cst_in_model();
        lanes.earliest() < others
    }

    #[cfg(test)]
    pub(crate) fn closures_left(&self) -> bool {
        self.closures_left.load(SeqCst)
    }

    #[cfg(test)]
    pub(crate) fn planned(&self) -> u64 {
        self.at.load(SeqCst)
    }

    /// As if the driver slept until `at`.
    #[cfg(test)]
    pub(crate) fn set_planned(&self, at: u64) {
        self.at.store(at, SeqCst);
    }
}

#[cfg(all(test, schedulers_loom))]
mod model;
