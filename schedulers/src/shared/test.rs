//! Unit tests of the shared state, on a threadless scheduler.

use super::*;
use crate::core::{HierarchicalWheel, IndexedHeap};
use crate::task::Task;

/// A scheduler's shared state on a virtual clock, with no driver
/// thread: the tests call what a driver would.
fn threadless(queue: Queue, periodic_slack: Duration) -> Arc<Shared> {
    Shared::new(Config {
        clock: Arc::new(crate::ManualClock::new()),
        queue,
        executor: Executor::inline(),
        policy: ShutdownPolicy::default(),
        pending_limit: None,
        remove_on_cancel: false,
        spin_budget: Duration::ZERO,
        timer_slack: crate::DEFAULT_TIMER_SLACK,
        periodic_slack,
    })
}

/// A periodic run may wait `periodic_slack` for others to share its
/// wake-up; a one-shot due meanwhile sets the wake-up instead.
#[test]
fn a_periodic_run_waits_its_slack_unless_a_one_shot_is_due_first() {
    let (ms, us) = (Duration::from_millis, Duration::from_micros);
    let shared = threadless(Queue::Heap(IndexedHeap::new()), us(50));
    let wake = || shared.next_wake(&shared.lock()).map(|t| t - shared.now());
    let tick = Task::fixed_rate(ms(10), || {}).unwrap();
    shared.submit(When::After(ms(1)), tick).unwrap();
    assert_eq!(wake(), Some(nanos(ms(1) + us(50))));
    shared
        .submit(When::After(ms(1) + us(20)), Task::once(|| ()))
        .unwrap();
    assert_eq!(wake(), Some(nanos(ms(1) + us(20))));
    shared
        .submit(When::After(us(900)), Task::once(|| ()))
        .unwrap();
    assert_eq!(wake(), Some(nanos(us(900))));
}

/// A wheel bucket grown big is offered ahead of its earliest deadline,
/// to move down in chunks: the submission that makes it so must wake a
/// driver planned for later, though the task itself is due after it.
#[test]
fn a_bucket_offered_ahead_of_its_deadline_wakes_the_driver() {
    let ms = |n: u64| n * 1_000_000;
    let wheels = HierarchicalWheel::new(ms(1), 8, 0, crate::core::Precision::Exact).unwrap();
    let shared = threadless(Queue::Hier(wheels), Duration::ZERO);
    shared.wake_at.store(ms(990), SeqCst); // a driver asleep until 990 ms
    let mut last = 0;
    for _ in 0..300 {
        let task = Task::once(|| ());
        last = shared
            .submit(When::After(Duration::from_secs(1)), task)
            .unwrap();
    }
    let mut inner = shared.lock();
    let head = inner.queue.next_deadline().unwrap();
    assert!(head < ms(990), "offered ahead, at {head}");
    assert!(shared.wakes_for(&mut inner, last, ms(1000)));
}
