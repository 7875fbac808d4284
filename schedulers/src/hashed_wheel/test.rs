//! The wheel core against a model: never early, on its tick, FIFO within a
//! tick, rounds across many revolutions, O(1) cancel and deferred moves.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::tick_of;
use super::wheel::{ring_size, Expired, Key, Wheel};

fn advance(w: &mut Wheel<u32>, now: u64) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    w.advance(now, &mut out);
    out.into_iter().map(|e| (e.tick, e.item)).collect()
}

#[test]
fn size_is_rounded_up_to_a_power_of_two() {
    assert_eq!(Wheel::<u32>::new(0, 0).slots(), 1);
    assert_eq!(Wheel::<u32>::new(1, 0).slots(), 1);
    assert_eq!(Wheel::<u32>::new(300, 0).slots(), 512);
    assert_eq!(Wheel::<u32>::new(512, 0).slots(), 512);
    assert_eq!(ring_size(usize::MAX), 1 << 24);
    assert_eq!(ring_size((1 << 24) + 1), 1 << 24);
}

#[test]
fn deadline_rounds_up_to_a_tick_and_a_boundary_stays() {
    assert_eq!(tick_of(0, 1_000_000), 0);
    assert_eq!(tick_of(1, 1_000_000), 1);
    assert_eq!(tick_of(999_999, 1_000_000), 1);
    assert_eq!(
        tick_of(1_000_000, 1_000_000),
        1,
        "a deadline exactly on a tick fires on it"
    );
    assert_eq!(tick_of(1_000_001, 1_000_000), 2);
    assert_eq!(tick_of(u64::MAX, 1_000_000), u64::MAX / 1_000_000 + 1);
}

#[test]
fn fires_on_its_tick_never_before() {
    let mut w = Wheel::new(8, 0);
    w.insert(5, 0, 1);
    for now in 1..5 {
        assert!(advance(&mut w, now).is_empty(), "early at {now}");
    }
    assert_eq!(advance(&mut w, 5), [(5, 1)]);
    assert!(w.is_empty());
}

#[test]
fn rounds_across_many_revolutions() {
    // 8 slots; due after 10 full revolutions plus 3 ticks.
    let mut w = Wheel::new(8, 0);
    w.insert(83, 0, 7);
    w.insert(3, 1, 8); // same slot, due in the first round
    for now in 1..83 {
        let got = advance(&mut w, now);
        if now == 3 {
            assert_eq!(got, [(3, 8)]);
        } else {
            assert!(got.is_empty(), "fired at {now}: {got:?}");
        }
    }
    assert_eq!(advance(&mut w, 83), [(83, 7)]);
}

#[test]
fn a_jump_of_many_revolutions_expires_in_order() {
    let mut w = Wheel::new(4, 0);
    for (i, t) in [100u64, 7, 7, 1_000_000, 42, 5].into_iter().enumerate() {
        w.insert(t, i as u64, i as u32);
    }
    assert_eq!(
        advance(&mut w, 100),
        [(5, 5), (7, 1), (7, 2), (42, 4), (100, 0)]
    );
    assert_eq!(w.len(), 1);
    assert!(advance(&mut w, 999_999).is_empty());
    assert_eq!(advance(&mut w, 1_000_000), [(1_000_000, 3)]);
}

#[test]
fn same_tick_comes_out_in_sequence_order() {
    let mut w = Wheel::new(16, 0);
    let a = w.insert(20, 3, 3);
    w.insert(9, 1, 1);
    w.insert(9, 0, 0);
    // Moving `a` earlier into tick 9 puts it last by sequence.
    assert!(w.reschedule(a, 9, 4));
    w.insert(9, 2, 2);
    assert_eq!(advance(&mut w, 9), [(9, 0), (9, 1), (9, 2), (9, 3)]);
}

#[test]
fn cancel_unlinks_without_scanning() {
    let mut w = Wheel::new(4, 0);
    let keys: Vec<Key> = (0..6).map(|i| w.insert(2, i, i as u32)).collect();
    assert_eq!(w.cancel(keys[0]), Some(0)); // head
    assert_eq!(w.cancel(keys[5]), Some(5)); // tail
    assert_eq!(w.cancel(keys[3]), Some(3)); // middle
    assert_eq!(w.cancel(keys[3]), None, "twice");
    assert_eq!(w.len(), 3);
    assert_eq!(advance(&mut w, 2), [(2, 1), (2, 2), (2, 4)]);
    // Freed keys are reused.
    let k = w.insert(3, 9, 9);
    assert!(keys.contains(&k));
}

#[test]
fn a_later_move_is_deferred_to_the_old_slot_visit() {
    let mut w = Wheel::new(8, 0);
    let k = w.insert(2, 0, 1);
    assert!(w.reschedule(k, 30, 1)); // slot 6, three rounds later
    assert!(
        advance(&mut w, 2).is_empty(),
        "the visit at 2 moves it, does not fire it"
    );
    for now in 3..30 {
        assert!(advance(&mut w, now).is_empty(), "early at {now}");
    }
    assert_eq!(advance(&mut w, 30), [(30, 1)]);
}

#[test]
fn an_earlier_move_takes_effect_at_once() {
    let mut w = Wheel::new(8, 0);
    let k = w.insert(60, 0, 1);
    assert!(w.reschedule(k, 3, 1));
    assert!(advance(&mut w, 2).is_empty());
    assert_eq!(advance(&mut w, 3), [(3, 1)]);
}

#[test]
fn past_deadlines_are_due_at_the_next_advance() {
    let mut w = Wheel::new(8, 10);
    w.insert(4, 0, 1);
    w.insert(10, 1, 2);
    assert_eq!(advance(&mut w, 10), [(4, 1), (10, 2)]);
    // Moved from the ready list to a later tick.
    let k = w.insert(1, 2, 3);
    assert!(w.reschedule(k, 12, 3));
    assert!(advance(&mut w, 11).is_empty());
    assert_eq!(advance(&mut w, 12), [(12, 3)]);
}

#[test]
fn drain_returns_everything_sorted() {
    let mut w = Wheel::new(8, 0);
    for (i, t) in [50u64, 3, 3, 9].into_iter().enumerate() {
        w.insert(t, i as u64, i as u32);
    }
    let all: Vec<_> = w
        .drain()
        .into_iter()
        .map(|e: Expired<u32>| (e.tick, e.item))
        .collect();
    assert_eq!(all, [(3, 1), (3, 2), (9, 3), (50, 0)]);
    assert!(w.is_empty());
    assert!(advance(&mut w, 100).is_empty());
}

#[test]
fn next_occupied_finds_the_first_non_empty_slot_within_the_limit() {
    let mut w = Wheel::new(16, 100);
    assert_eq!(w.next_occupied(64), 164, "empty: the limit");
    w.insert(140, 0, 1); // slot 12, first reached at tick 108
    assert_eq!(
        w.next_occupied(64),
        108,
        "the slot comes round before its timer is due"
    );
    assert_eq!(w.next_occupied(4), 104, "never beyond the limit");
    w.insert(103, 1, 2);
    assert_eq!(w.next_occupied(64), 103);
    w.insert(50, 2, 3); // already due: ready list
    assert_eq!(w.next_occupied(64), 101);
}

/// One step of a random history.
#[derive(Clone, Debug)]
enum Op {
    Insert(u64),
    Cancel(usize),
    Reschedule(usize, u64),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..200).prop_map(Op::Insert),
        1 => (0u64..3000).prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Cancel),
        2 => (any::<usize>(), 0u64..300).prop_map(|(i, d)| Op::Reschedule(i, d)),
        3 => (0u64..4).prop_map(Op::Advance),
        1 => (0u64..600).prop_map(Op::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The wheel returns exactly what a sorted map of (tick, seq) would:
    /// everything due by `now`, nothing later, in (tick, seq) order.
    #[test]
    fn matches_a_sorted_model(slots in 1usize..40, start in 0u64..5, ops in proptest::collection::vec(op(), 1..300)) {
        let mut w: Wheel<u32> = Wheel::new(slots, start);
        // model: (tick, seq) -> id; keys: id -> (key, tick, seq)
        let mut model: BTreeMap<(u64, u64), u32> = BTreeMap::new();
        let mut live: Vec<(u32, Key, u64, u64)> = Vec::new();
        let mut now = start;
        let mut seq = 0u64;
        let mut next_id = 0u32;
        for op in ops {
            match op {
                Op::Insert(d) => {
                    // Deadlines in the past as well as the future.
                    let tick = (now + d).saturating_sub(3);
                    let key = w.insert(tick, seq, next_id);
                    model.insert((tick, seq), next_id);
                    live.push((next_id, key, tick, seq));
                    next_id += 1;
                    seq += 1;
                }
                Op::Cancel(i) if !live.is_empty() => {
                    let (id, key, tick, s) = live.swap_remove(i % live.len());
                    prop_assert_eq!(w.cancel(key), Some(id));
                    prop_assert_eq!(model.remove(&(tick, s)), Some(id));
                }
                Op::Reschedule(i, d) if !live.is_empty() => {
                    let i = i % live.len();
                    let (id, key, tick, s) = live[i];
                    let new_tick = (now + d).saturating_sub(2);
                    prop_assert!(w.reschedule(key, new_tick, seq));
                    model.remove(&(tick, s));
                    model.insert((new_tick, seq), id);
                    live[i] = (id, key, new_tick, seq);
                    seq += 1;
                }
                Op::Advance(d) => {
                    now += d;
                    let mut out = Vec::new();
                    w.advance(now, &mut out);
                    let got: Vec<(u64, u64, u32)> = out.into_iter().map(|e| (e.tick, e.seq, e.item)).collect();
                    let due: Vec<(u64, u64)> = model.range(..(now + 1, 0)).map(|(k, _)| *k).collect();
                    let want: Vec<(u64, u64, u32)> = due.iter().map(|k| (k.0, k.1, model[k])).collect();
                    prop_assert_eq!(&got, &want, "at {}", now);
                    for k in due {
                        model.remove(&k);
                    }
                    live.retain(|(id, ..)| !got.iter().any(|g| g.2 == *id));
                }
                _ => {}
            }
            prop_assert_eq!(w.len(), model.len());
        }
    }

    /// Advanced one tick at a time, every timer comes out exactly on its
    /// tick (no lateness in the core; the driver adds at most one tick).
    #[test]
    fn one_tick_at_a_time_fires_exactly_on_the_tick(slots in 1usize..16, ticks in proptest::collection::vec(1u64..500, 1..60)) {
        let mut w: Wheel<u32> = Wheel::new(slots, 0);
        for (i, t) in ticks.iter().enumerate() {
            w.insert(*t, i as u64, i as u32);
        }
        for now in 1..=500u64 {
            for (tick, item) in advance(&mut w, now) {
                prop_assert_eq!(tick, now);
                prop_assert_eq!(ticks[item as usize], now);
            }
        }
        prop_assert!(w.is_empty());
    }
}

// ---- the driver, white-box ------------------------------------------------

mod driver {
    use std::time::Duration;

    use crate::clock::lock;
    use crate::hashed_wheel::{HashedWheelTimer, TRANSFER_BATCH};
    use crate::{ManualClock, Scheduler, SchedulerExt};

    fn timer(clock: &ManualClock) -> HashedWheelTimer {
        HashedWheelTimer::builder()
            .clock(clock.clone())
            .tick(Duration::from_millis(1))
            .wheel_size(64)
            .build()
            .unwrap()
    }

    /// Cancelled timers leave the wheel (and free their slab entries) at
    /// the worker's next tick, not when their slot comes round.
    #[test]
    fn cancelled_timers_are_unlinked_at_the_next_tick() {
        let clock = ManualClock::new();
        let t = timer(&clock);
        let handles: Vec<_> = (0..1000)
            .map(|i| t.schedule(Duration::from_secs(60 + i), || ()).unwrap())
            .collect();
        clock.advance(Duration::from_millis(1));
        assert_eq!(lock(&t.shared.state).wheel.len(), 1000);
        for h in handles.iter().step_by(2) {
            assert!(h.cancel());
        }
        assert_eq!(
            t.metrics().pending,
            500,
            "capacity is freed by the cancel itself"
        );
        clock.advance(Duration::from_millis(1));
        assert_eq!(lock(&t.shared.state).wheel.len(), 500);
        for h in handles.iter().skip(1).step_by(2) {
            assert!(h.cancel());
        }
        clock.advance(Duration::from_millis(1));
        assert!(lock(&t.shared.state).wheel.is_empty());
    }

    /// A flood larger than the per-tick transfer bound is moved in batches
    /// and all of it still runs on time.
    #[test]
    fn a_flood_beyond_the_transfer_batch_all_runs() {
        let clock = ManualClock::new();
        let t = timer(&clock);
        let n = TRANSFER_BATCH * 2 + 7;
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..n {
            let ran = ran.clone();
            t.schedule(Duration::from_millis(2), move || {
                ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            })
            .unwrap();
        }
        clock.advance(Duration::from_millis(1));
        assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), 0);
        clock.advance(Duration::from_millis(1));
        assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), n);
    }

    /// On the real clock a sparse wheel lets the worker sleep many ticks;
    /// a submission due sooner must wake it (generous real-time bound: it
    /// would otherwise wait 64 ticks of 10 ms).
    #[test]
    fn a_sooner_submission_wakes_a_sleeping_worker() {
        use crate::{Clock, SystemClock};
        let t = HashedWheelTimer::builder()
            .tick(Duration::from_millis(10))
            .wheel_size(1024)
            .build()
            .unwrap();
        t.schedule(Duration::from_secs(3600), || ()).unwrap();
        // Let the worker transfer it and go to sleep for 64 ticks.
        let settle = t.schedule(Duration::from_millis(1), || ()).unwrap();
        settle.get().unwrap();
        let start = SystemClock.now();
        let soon = t
            .schedule(Duration::from_millis(10), move || SystemClock.now())
            .unwrap();
        let ran = soon.get().unwrap().duration_since(start);
        assert!(ran >= Duration::from_millis(10), "early: {ran:?}");
        assert!(
            ran < Duration::from_millis(400),
            "the sleeping worker was not woken: {ran:?}"
        );
    }

    /// A later reset is a deferred move: the entry stays in its slab slot
    /// and is moved when its old slot comes round.
    #[test]
    fn a_reset_keeps_the_same_slab_entry() {
        let clock = ManualClock::new();
        let t = timer(&clock);
        let h = t.schedule(Duration::from_millis(10), || ()).unwrap();
        clock.advance(Duration::from_millis(1));
        assert_eq!(lock(&t.shared.state).wheel.slab_size(), 1);
        for _ in 0..5 {
            assert!(h.reset(Duration::from_millis(500)).unwrap());
            clock.advance(Duration::from_millis(20));
        }
        let state = lock(&t.shared.state);
        assert_eq!(
            (state.wheel.len(), state.wheel.slab_size()),
            (1, 1),
            "moved in place, never copied"
        );
        drop(state);
        assert!(h.is_pending());
        clock.advance(Duration::from_millis(500));
        assert!(h.is_done());
        assert!(lock(&t.shared.state).wheel.is_empty());
    }
}
