//! The peers: other implementations measured in the same run, so every
//! chart has a line for the best alternative. The Rust ones run in this
//! process through the same [`Timers`](crate::runner::Timers) interface as
//! our schedulers; the Java originals and BullMQ run in child processes,
//! each a [`Runner`](crate::runner::Runner) of its own.
//!
//! - [`tokio_sleep`]: tokio's own timers, a spawned task per timer sleeping
//!   on the runtime's hierarchical wheel (current-thread, and two workers).
//! - [`delay_queue`]: tokio-util's `DelayQueue` (the same wheel with slab
//!   storage) owned, filled and polled by the application's own task.
//! - [`nexus`]: `nexus-timer`'s slab-backed wheel, owned and polled by the
//!   application's thread.
//! - [`stp`]: the `scheduled-thread-pool` crate (a binary heap under a
//!   mutex; one and two workers), the closest Rust peer of
//!   `ScheduledThreadPoolExecutor`.
//! - [`java`]: the Java originals (JDK `Timer`, `ScheduledThreadPoolExecutor`,
//!   Netty's `HashedWheelTimer`) and Quartz in memory, each in a child JVM
//!   running the same specs.
//! - [`contention`]: the Rust peers shared between threads on the
//!   contention workload (`stp` and `stp-2` as they are; tokio's timer in
//!   the runtime's workers; nexus-timer and `DelayQueue` behind a mutex).
//! - [`quartz`]: Quartz clustered on PostgreSQL (1, 2 and 4 nodes) on the
//!   distributed workload, and on the calendar workload.
//! - [`tokio_cron`]: `tokio-cron-scheduler` on the calendar workload.
//! - [`bullmq`]: BullMQ, the peer of the Redis scheduler
//!   ([`crate::distributed`]) on the distributed workload, through a Node
//!   harness that reports as our load benchmark does.
//! - [`bullmq_cron`]: BullMQ's job schedulers on the calendar workload.
//!
//! A peer joins with one line in [`all`].

pub mod bullmq;
pub mod bullmq_cron;
pub mod contention;
pub mod delay_queue;
pub mod java;
pub mod nexus;
pub mod quartz;
pub mod stp;
pub mod tokio_cron;
pub mod tokio_sleep;

use std::sync::atomic::{AtomicU32, Ordering::AcqRel, Ordering::Acquire};

use crate::record::{Results, SubjectKind};
use crate::runner::Subject;
use crate::spec::{Workload, WorkloadKind};

/// Every peer. Add yours here.
pub fn all() -> Vec<Subject> {
    let peer = |name, about, make| Subject::in_process(name, SubjectKind::Peer, about, make);
    vec![
        peer("tokio-sleep", tokio_sleep::ABOUT, tokio_sleep::factory(0)),
        peer(
            "tokio-sleep-2w",
            tokio_sleep::ABOUT_2W,
            tokio_sleep::factory(2),
        ),
        peer("delay-queue", delay_queue::ABOUT, delay_queue::factory()),
        peer("nexus", nexus::ABOUT, nexus::factory()),
        peer("stp", stp::ABOUT, stp::factory(1)),
        peer("stp-2", stp::ABOUT_2, stp::factory(2)),
    ]
    .into_iter()
    .map(contention::extend) // stp, stp-2 also run the contention workload
    .chain(contention::subjects()) // the contention workload's shared peers
    .chain(java::subjects()) // the Java originals, each in a child JVM
    .chain(bullmq::subjects()) // the Redis scheduler's peer
    .chain(quartz::subjects()) // Quartz clustered on PostgreSQL
    .chain([
        Subject {
            workloads: &[WorkloadKind::Calendar],
            ..peer("tokio-cron", tokio_cron::ABOUT, tokio_cron::factory())
        },
        bullmq_cron::subject(),
    ])
    .collect()
}

/// What the reader should know about the runs of `workloads`: sweep sizes a
/// JVM could not hold, what the Quartz cluster's figures say, and what each
/// repeat that missed timers measured.
pub fn notes(results: &Results, workloads: &[Workload]) -> Vec<String> {
    let mut v = java::notes(results, workloads);
    v.extend(quartz::notes(results, workloads));
    v.extend(quartz::missed_notes(results, workloads));
    v
}

/// Per-timer state shared by a peer's caller and its timer thread, for
/// peers whose own handles cannot say whether a cancel or reset stopped a
/// run: low two bits pending/fired/cancelled, the rest a generation that a
/// reset bumps, so a run queued before the reset does not fire.
#[derive(Debug)]
pub(crate) struct Gates {
    cells: Box<[AtomicU32]>,
}

const PENDING: u32 = 0;
const FIRED: u32 = 1;
const CANCELLED: u32 = 2;

impl Gates {
    pub(crate) fn new(n: usize) -> Gates {
        Gates {
            cells: (0..n).map(|_| AtomicU32::new(PENDING)).collect(),
        }
    }

    fn update(&self, id: usize, f: impl Fn(u32) -> Option<u32>) -> Result<u32, u32> {
        self.cells[id].fetch_update(AcqRel, Acquire, f)
    }

    /// Cancels a pending timer; true iff it was pending.
    pub(crate) fn cancel(&self, id: usize) -> bool {
        self.update(id, |v| (v & 3 == PENDING).then_some((v & !3) | CANCELLED))
            .is_ok()
    }

    /// Starts a reset: the new generation if the timer was pending.
    pub(crate) fn reset(&self, id: usize) -> Option<u32> {
        self.update(id, |v| (v & 3 == PENDING).then_some(v.wrapping_add(4)))
            .ok()
            .map(|v| v.wrapping_add(4) >> 2)
    }

    /// Claims a one-shot run of generation `gen`; true iff it may fire.
    pub(crate) fn claim(&self, id: usize, gen: u32) -> bool {
        self.update(id, |v| {
            (v == gen << 2 | PENDING).then_some((v & !3) | FIRED)
        })
        .is_ok()
    }

    /// Whether a periodic timer is still live (not cancelled).
    pub(crate) fn live(&self, id: usize) -> bool {
        self.cells[id].load(Acquire) & 3 == PENDING
    }
}

#[cfg(test)]
mod test {
    use super::Gates;

    #[test]
    fn gates_decide_each_race_once() {
        let g = Gates::new(3);
        assert!(g.claim(0, 0));
        assert!(!g.cancel(0), "fired, so the cancel is late");
        assert!(g.reset(0).is_none());

        assert!(g.cancel(1));
        assert!(!g.claim(1, 0), "cancelled never fires");

        assert_eq!(g.reset(2), Some(1));
        assert!(!g.claim(2, 0), "the run queued before the reset is stale");
        assert!(g.claim(2, 1));
        assert!(!g.claim(2, 1), "fires once");
    }
}
