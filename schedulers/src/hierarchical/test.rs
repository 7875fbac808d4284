//! Tests of the pure core: buckets, delay queue and timing wheels, by
//! example and against a model (a sorted map of pending timers).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::bucket::{Buckets, Key, Removed};
use super::delay_queue::DelayQueue;
use super::timing_wheel::TimingWheels;

fn advance<T>(w: &mut TimingWheels<T>, now: u64) -> Vec<Removed<T>> {
    let mut out = Vec::new();
    w.advance(now, &mut out);
    out
}

fn ids(out: &[Removed<u64>]) -> Vec<u64> {
    out.iter().map(|r| r.item).collect()
}

// ---- buckets --------------------------------------------------------------

/// Ports Kafka's `TimerTaskListTest.testAll`
/// (`server-common/src/test/java/org/apache/kafka/server/util/timer/TimerTaskListTest.java`):
/// moving tasks between lists keeps the shared count, and cancelling them
/// empties the lists. Kafka moves a task by adding it to another list (its
/// old entry is removed); here a node is moved by unlinking and relinking it.
#[test]
fn kafka_timer_task_list_test_all() {
    let mut b: Buckets<u64> = Buckets::new();
    let (list1, list2, list3) = (b.new_list(1), b.new_list(2), b.new_list(3));
    let tasks: Vec<Key> = (1..=10u64)
        .map(|i| {
            let key = b.push_back(list1, 10, i, i);
            assert_eq!(b.len(), i as usize);
            key
        })
        .collect();
    assert_eq!(b.len(), tasks.len());
    // Re-inserting the existing tasks into another list keeps the count.
    for &key in &tasks[..4] {
        let before = b.len();
        b.unlink(key);
        b.link_back(list2, key);
        assert_eq!(b.len(), before);
    }
    assert_eq!(b.keys(list1).len(), 6);
    assert_eq!(b.keys(list2).len(), 4);
    for &key in &tasks[4..] {
        let before = b.len();
        b.unlink(key);
        b.link_back(list3, key);
        assert_eq!(b.len(), before);
    }
    assert_eq!(b.len(), tasks.len());
    assert_eq!(
        (
            b.keys(list1).len(),
            b.keys(list2).len(),
            b.keys(list3).len()
        ),
        (0, 4, 6)
    );
    assert_eq!(b.keys(list2), tasks[..4]);
    assert_eq!(b.keys(list3), tasks[4..]);
    // Cancelling the tasks empties the lists.
    for &key in &tasks {
        let emptied = b.unlink(key);
        b.free_detached(key);
        let _ = emptied;
    }
    assert_eq!(b.len(), 0);
    assert!(b.is_empty(list1) && b.is_empty(list2) && b.is_empty(list3));
}

#[test]
fn a_node_is_40_bytes() {
    // Two u32 links, expiration and seq, and a 16-byte `Arc<dyn ..>`.
    assert_eq!(Buckets::<crate::task::TaskRef>::node_size(), 40);
}

#[test]
fn unlink_reports_the_list_it_emptied() {
    let mut b: Buckets<u64> = Buckets::new();
    let list = b.new_list(7);
    let k1 = b.push_back(list, 1, 1, 1);
    let k2 = b.push_back(list, 1, 2, 2);
    let k3 = b.push_back(list, 1, 3, 3);
    assert_eq!(b.unlink(k2), None, "middle");
    assert_eq!(b.unlink(k1), None, "first of two");
    assert_eq!(b.unlink(k3), Some(7), "last one");
    assert!(b.is_empty(list));
}

#[test]
fn freed_nodes_are_reused_and_stale_keys_see_nothing() {
    let mut b: Buckets<u64> = Buckets::new();
    let list = b.new_list(0);
    let k = b.push_back(list, 5, 1, 100);
    b.unlink(k);
    assert_eq!(
        b.free_detached(k),
        Removed {
            expiration: 5,
            seq: 1,
            item: 100
        }
    );
    assert_eq!(b.get(k), None, "a freed key names no timer");
    assert_eq!(b.get(list), None, "a sentinel names no timer");
    let k2 = b.push_back(list, 6, 2, 200);
    assert_eq!(k2, k, "the slab reuses the freed node");
    assert_eq!(b.get(k2), Some(&200));
}

// ---- delay queue ----------------------------------------------------------

#[test]
fn delay_queue_polls_in_expiration_order_and_only_when_expired() {
    let mut q = DelayQueue::new();
    q.offer(3, 30);
    q.offer(1, 10);
    q.offer(2, 20);
    q.offer(2, 5); // moved earlier
    q.remove(3);
    assert_eq!(q.peek_expiration(), Some(5));
    assert_eq!(q.poll(4), None);
    assert_eq!(q.poll(10), Some((2, 5)));
    assert_eq!(q.poll(10), Some((1, 10)));
    assert_eq!(q.poll(u64::MAX), None);
    assert_eq!(q.len(), 0);
}

// ---- timing wheels --------------------------------------------------------

#[test]
fn timers_fire_at_their_tick_never_before() {
    let mut w = TimingWheels::new(20, 0);
    for (seq, e) in [5u64, 1, 19, 20, 21, 399, 400, 8000]
        .into_iter()
        .enumerate()
    {
        w.insert(e, seq as u64, e);
    }
    let mut fired = Vec::new();
    for now in 0..=8000 {
        for r in advance(&mut w, now) {
            assert_eq!(r.expiration, now, "fires exactly at its tick");
            fired.push(r.item);
        }
    }
    assert_eq!(fired, [1, 5, 19, 20, 21, 399, 400, 8000]);
    assert!(w.is_empty());
}

#[test]
fn overflow_levels_are_created_lazily() {
    let mut w = TimingWheels::new(20, 0);
    assert_eq!(w.levels(), 1);
    w.insert(19, 0, 0u64);
    assert_eq!(w.levels(), 1, "within the first wheel's span");
    w.insert(20, 1, 1);
    assert_eq!(w.levels(), 2, "one overflow wheel of 20-tick buckets");
    w.insert(400 * 20 - 1, 2, 2);
    assert_eq!(w.levels(), 3);
    w.insert(u64::MAX, 3, 3);
    // 20^15 > u64::MAX: level 14 spans everything.
    assert_eq!(w.levels(), 15);
}

#[test]
fn a_bucket_is_queued_once_per_revolution_and_leaves_when_emptied() {
    let mut w = TimingWheels::new(20, 0);
    let keys: Vec<Key> = (0..100).map(|i| w.insert(7, i, i)).collect();
    assert_eq!(w.queued_buckets(), 1, "one bucket, offered once");
    w.insert(8, 100, 100);
    assert_eq!(w.queued_buckets(), 2);
    for k in keys {
        assert!(w.remove(k).is_some());
    }
    assert_eq!(w.queued_buckets(), 1, "the emptied bucket left the queue");
    assert_eq!(w.next_expiration(), Some(8));
}

#[test]
fn current_time_is_a_multiple_of_the_tick_and_overdue_timers_come_first() {
    let mut w = TimingWheels::new(4, 3);
    assert_eq!(w.current(), 3);
    advance(&mut w, 10);
    assert_eq!(w.current(), 10);
    w.insert(10, 0, 0u64); // already due
    w.insert(5, 1, 1); // long overdue
    assert_eq!(w.next_expiration(), Some(10));
    let out = advance(&mut w, 10);
    assert_eq!(ids(&out), [1, 0], "sorted by (tick, seq)");
}

#[test]
fn ties_within_a_tick_come_out_in_seq_order_after_a_cascade() {
    // Seq 0 reaches tick 450 through two cascades, seq 1 is inserted
    // straight into the first wheel just before: the output is by seq.
    let mut w = TimingWheels::new(20, 0);
    w.insert(450, 0, 0u64);
    advance(&mut w, 440);
    w.insert(450, 1, 1);
    assert!(advance(&mut w, 449).is_empty());
    assert_eq!(ids(&advance(&mut w, 450)), [0, 1]);
}

#[test]
fn reschedule_moves_a_timer_without_changing_its_key() {
    let mut w = TimingWheels::new(20, 0);
    let k = w.insert(5000, 0, 42u64);
    assert!(w.reschedule(k, 3, 1));
    assert_eq!(w.get(k), Some(&42));
    assert_eq!(
        w.next_expiration(),
        Some(3),
        "the old bucket left the queue"
    );
    let out = advance(&mut w, 3);
    assert_eq!(
        out,
        [Removed {
            expiration: 3,
            seq: 1,
            item: 42
        }]
    );
    assert!(!w.reschedule(k, 9, 2), "a fired timer cannot move");
}

/// A timer days away (in 1 ms ticks) descends through the overflow wheels,
/// one cascade per level, and fires once, exactly at its tick.
#[test]
fn a_timer_days_away_cascades_and_fires_once_on_time() {
    let three_days = 3 * 24 * 3600 * 1000 + 12_345;
    let mut w = TimingWheels::new(20, 0);
    w.insert(three_days, 0, 7u64);
    let levels = w.levels();
    assert_eq!(levels, 7, "20^6 ms (17.8 h) < 3 days < 20^7 ms (14.8 days)");
    let mut wakes = 0;
    let mut fired = Vec::new();
    while let Some(t) = w.next_expiration() {
        wakes += 1;
        fired.extend(advance(&mut w, t));
    }
    assert_eq!(
        fired,
        [Removed {
            expiration: three_days,
            seq: 0,
            item: 7
        }]
    );
    assert!(
        wakes <= levels,
        "at most one wake-up per level, got {wakes}"
    );
}

// ---- against a model ------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Insert { delay: u64 },
    Remove { pick: usize },
    Reschedule { pick: usize, delay: u64 },
    Advance { by: u64 },
    AdvanceToNext,
}

fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..30,
        0u64..1_000,
        0u64..200_000,
        Just(0),
        Just(20),
        Just(400)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => delay().prop_map(|delay| Op::Insert { delay }),
        1 => any::<usize>().prop_map(|pick| Op::Remove { pick }),
        1 => (any::<usize>(), delay()).prop_map(|(pick, delay)| Op::Reschedule { pick, delay }),
        2 => prop_oneof![0u64..5, 0u64..500, 0u64..50_000].prop_map(|by| Op::Advance { by }),
        1 => Just(Op::AdvanceToNext),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the operations, the wheels hand back exactly the timers the
    /// model says are due, in `(tick, seq)` order, and never announce their
    /// next work later than the earliest pending timer.
    #[test]
    fn wheels_match_the_model(size in 2usize..24, start in 0u64..100_000, ops in prop::collection::vec(op(), 1..200)) {
        let mut w: TimingWheels<u64> = TimingWheels::new(size, start);
        // id -> (key, expiration, seq)
        let mut model: BTreeMap<u64, (Key, u64, u64)> = BTreeMap::new();
        let mut now = start;
        let mut seq = 0u64;
        for op in ops {
            match op {
                Op::Insert { delay } => {
                    seq += 1;
                    let e = now + delay;
                    let key = w.insert(e, seq, seq);
                    model.insert(seq, (key, e, seq));
                }
                Op::Remove { pick } => {
                    if let Some((&id, &(key, e, s))) = model.iter().nth(pick % model.len().max(1)) {
                        prop_assert_eq!(w.remove(key), Some(Removed { expiration: e, seq: s, item: id }));
                        model.remove(&id);
                    }
                }
                Op::Reschedule { pick, delay } => {
                    if let Some((&id, &(key, _, _))) = model.iter().nth(pick % model.len().max(1)) {
                        seq += 1;
                        let e = now + delay;
                        prop_assert!(w.reschedule(key, e, seq));
                        model.insert(id, (key, e, seq));
                    }
                }
                Op::Advance { by } => now += by,
                Op::AdvanceToNext => {
                    if let Some(t) = w.next_expiration() {
                        now = now.max(t);
                    }
                }
            }
            if let Some(earliest) = model.values().map(|&(_, e, _)| e).min() {
                let next = w.next_expiration();
                prop_assert!(next.is_some_and(|t| t <= earliest.max(w.current())), "next {:?} after earliest {}", next, earliest);
            } else {
                prop_assert!(w.is_empty());
            }
            let out = advance(&mut w, now);
            let mut due: Vec<(u64, u64, u64)> =
                model.iter().filter(|(_, &(_, e, _))| e <= now).map(|(&id, &(_, e, s))| (e, s, id)).collect();
            due.sort_unstable();
            let got: Vec<(u64, u64, u64)> = out.iter().map(|r| (r.expiration, r.seq, r.item)).collect();
            prop_assert_eq!(&got, &due);
            for (_, _, id) in due {
                model.remove(&id);
            }
            prop_assert_eq!(w.len(), model.len());
            prop_assert_eq!(w.current(), now);
        }
        let rest: Vec<u64> = w.drain().into_iter().map(|r| r.item).collect();
        let mut expected: Vec<(u64, u64, u64)> = model.iter().map(|(&id, &(_, e, s))| (e, s, id)).collect();
        expected.sort_unstable();
        prop_assert_eq!(rest, expected.into_iter().map(|(_, _, id)| id).collect::<Vec<_>>());
        prop_assert!(w.is_empty());
        prop_assert_eq!(w.next_expiration(), None);
    }
}

// ---- driver, white-box ----------------------------------------------------

mod driver {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::Duration;

    use crate::clock::lock;
    use crate::hierarchical::{HierarchicalWheelTimer, CANCEL_BATCH};
    use crate::{Executor, ManualClock, Scheduler, SchedulerExt};

    fn nodes(timer: &HierarchicalWheelTimer) -> usize {
        lock(&timer.shared.state).wheel.len()
    }

    /// Cancelled nodes are unlinked in batches by the cancelling thread,
    /// without the driver: at most one unfinished batch stays linked, and
    /// `next_expiration` unlinks that too. The rest fire once, on time.
    #[test]
    fn cancels_unlink_in_batches_and_never_run() {
        let clock = ManualClock::new();
        let timer = HierarchicalWheelTimer::builder()
            .clock(clock.clone())
            .executor(Executor::inline())
            .build()
            .unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..1000)
            .map(|i| {
                let runs = runs.clone();
                timer
                    .schedule(
                        Duration::from_secs(3600) + Duration::from_millis(i),
                        move || runs.fetch_add(1, SeqCst),
                    )
                    .unwrap()
            })
            .collect();
        assert_eq!(nodes(&timer), 1000);
        for h in handles
            .iter()
            .step_by(5)
            .chain(handles.iter().skip(1).step_by(5))
            .chain(handles.iter().skip(2).step_by(5))
        {
            assert!(h.cancel());
        }
        let linked = nodes(&timer);
        assert!(
            (400..400 + CANCEL_BATCH).contains(&linked),
            "{linked} nodes linked after 600 cancels"
        );
        assert_eq!(timer.metrics().pending, 400);
        assert!(timer.next_expiration().is_some());
        assert_eq!(
            nodes(&timer),
            400,
            "next_expiration unlinks the unfinished batch"
        );
        clock.advance(Duration::from_secs(3601));
        assert_eq!(runs.load(SeqCst), 400);
        assert_eq!(nodes(&timer), 0);
    }

    /// A periodic task re-enters the wheel in a new node after each run; a
    /// cancel between runs unlinks that node and nothing else.
    #[test]
    fn cancel_between_periodic_runs_unlinks_only_the_current_node() {
        let clock = ManualClock::new();
        let timer = HierarchicalWheelTimer::builder()
            .clock(clock.clone())
            .executor(Executor::inline())
            .build()
            .unwrap();
        let periodic = timer
            .schedule_at_fixed_rate(Duration::from_millis(1), Duration::from_millis(1), || ())
            .unwrap();
        clock.advance(Duration::from_millis(1)); // ran once and re-entered the wheel
        let other = timer.schedule(Duration::from_millis(5), || 7).unwrap();
        assert!(periodic.cancel());
        assert!(timer.next_expiration().is_some()); // unlinks the batch
        assert_eq!(nodes(&timer), 1, "only the other timer is left");
        clock.advance(Duration::from_millis(5));
        assert_eq!(other.get().unwrap(), 7);
    }
}
