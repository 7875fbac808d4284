//! What a scheduler knows about itself: the snapshot of its figures
//! ([`Metrics`]), and what the driver keeps for it.

use std::sync::atomic::Ordering::Acquire;

use super::{DriverState, Shared};
use crate::core::Key;
use crate::error::Rejected;
use crate::metrics::{Metrics, PendingByKind};
use crate::state;

impl Shared {
    /// The scheduler's figures now (see [`Metrics`]).
    pub(crate) fn metrics(&self) -> Metrics {
        let mut driver = self.lock();
        self.intake_for_query(&mut driver);
        let pending = self.pending_count(&driver);
        let mut metrics = Metrics {
            pending,
            pending_by_kind: self.pending_by_kind(&mut driver, pending),
            fired: driver.fired,
            cancelled: driver.cancelled_count + self.lanes.taken_back() + self.slab.remarks(),
            panicked: driver.panicked,
            skipped: driver.skipped,
            wakeups: self.wakeups(),
            ..Metrics::default()
        };
        drop(driver);
        self.observer.complete(&mut metrics);
        metrics
    }

    /// A periodic or calendar task was taken in: its key goes where
    /// [`Shared::pending_by_kind`] looks. Keys of tasks that ended are
    /// dropped there, or here once they outnumber the rest.
    pub(crate) fn note_periodic(&self, driver: &mut DriverState, key: Key) {
        driver.periodic_keys.insert(key);
        if driver.periodic_keys.len() >= driver.periodic_keys_bound {
            self.forget_ended(driver);
        }
    }

    /// Drops the keys whose slots no longer hold a live periodic task; the
    /// next time is when the set has doubled (amortised O(1) a key).
    fn forget_ended(&self, driver: &mut DriverState) {
        let slab = &self.slab;
        driver.periodic_keys.retain(|&key| {
            let w = slab.word(key).load(Acquire);
            state::is_periodic(w) && !state::is_terminal(w) && state::of(w) != state::FREE
        });
        driver.periodic_keys_bound = 2 * driver.periodic_keys.len() + 1024;
    }

    /// `pending` by kind: the periodic and calendar tasks waiting are
    /// counted among the keys noted; the rest of `pending` are one-shots.
    fn pending_by_kind(&self, driver: &mut DriverState, pending: usize) -> PendingByKind {
        self.forget_ended(driver);
        let (mut periodic, mut calendar) = (0, 0);
        for &key in &driver.periodic_keys {
            let w = self.slab.word(key).load(Acquire);
            if state::of(w) == state::SCHEDULED {
                if state::is_calendar(w) {
                    calendar += 1;
                } else {
                    periodic += 1;
                }
            }
        }
        PendingByKind {
            one_shot: pending.saturating_sub(periodic + calendar),
            periodic,
            calendar,
        }
    }

    /// `submit` refused a task: counted, and reported to the facades.
    pub(crate) fn rejected(&self, rejected: Rejected) -> Rejected {
        let error = rejected.error();
        self.observer.rejected(error.task_name(), error);
        rejected
    }
}
