//! The pure heap core against a simple model: a sorted map of live entries.

use std::collections::{BTreeMap, HashSet};

use proptest::prelude::*;

use super::heap::TimerHeap;

/// An operation on the queue, as the driver would issue it.
#[derive(Clone, Debug)]
enum Op {
    /// Schedule a new timer `delay` ticks from now.
    Insert(u64),
    /// Cancel the n-th timer ever inserted (lazily: it stays in the heap).
    Cancel(usize),
    /// Move the n-th timer to `delay` ticks from now (new entry, old one dead).
    Reset(usize, u64),
    /// Advance time and pop everything due.
    Advance(u64),
    /// Drop dead entries.
    Purge,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..50).prop_map(Op::Insert),
        2 => (0usize..64).prop_map(Op::Cancel),
        2 => ((0usize..64), (0u64..50)).prop_map(|(i, d)| Op::Reset(i, d)),
        3 => (0u64..20).prop_map(Op::Advance),
        1 => Just(Op::Purge),
    ]
}

/// Runs `ops` against the heap (with lazy deletion, as the driver does) and
/// against the model; returns both firing histories as `(time, timer id)`.
type History = Vec<(u64, usize)>;

fn run(ops: &[Op]) -> (History, History) {
    let mut heap: TimerHeap<usize> = TimerHeap::new();
    let mut model: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    // Per timer id: its live (deadline, seq), if pending.
    let mut live: Vec<Option<(u64, u64)>> = Vec::new();
    let mut dead: HashSet<u64> = HashSet::new();
    let (mut now, mut seq) = (0u64, 0u64);
    let (mut fired_heap, mut fired_model) = (Vec::new(), Vec::new());
    for op in ops {
        match *op {
            Op::Insert(delay) => {
                let id = live.len();
                heap.push(now + delay, seq, id);
                model.insert((now + delay, seq), id);
                live.push(Some((now + delay, seq)));
                seq += 1;
            }
            Op::Cancel(n) if n < live.len() => {
                if let Some(key) = live[n].take() {
                    model.remove(&key);
                    dead.insert(key.1);
                }
            }
            Op::Reset(n, delay) if n < live.len() => {
                if let Some(key) = live[n] {
                    model.remove(&key);
                    dead.insert(key.1);
                    heap.push(now + delay, seq, n);
                    model.insert((now + delay, seq), n);
                    live[n] = Some((now + delay, seq));
                    seq += 1;
                }
            }
            Op::Advance(by) => {
                now += by;
                while let Some(e) = heap.pop_due(now) {
                    assert!(e.deadline <= now, "popped an entry that is not due");
                    if !dead.contains(&e.seq) {
                        fired_heap.push((e.deadline, e.item));
                        live[e.item] = None;
                    }
                }
                while let Some((&(deadline, _), _)) = model.first_key_value() {
                    if deadline > now {
                        break;
                    }
                    let (_, id) = model.pop_first().unwrap();
                    fired_model.push((deadline, id));
                }
            }
            Op::Purge => {
                let removed = heap.purge(|e| !dead.contains(&e.seq)).len();
                assert!(removed <= dead.len());
                assert_eq!(
                    heap.len(),
                    model.len(),
                    "after a purge only live entries remain"
                );
            }
            _ => {}
        }
    }
    (fired_heap, fired_model)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Same timers fire, in the same order (deadline, then submission),
    /// never early, and cancelled or moved entries never fire.
    #[test]
    fn heap_matches_the_model(ops in prop::collection::vec(op(), 1..200)) {
        let (heap, model) = run(&ops);
        prop_assert_eq!(heap, model);
    }
}

#[test]
fn ties_pop_in_sequence_order() {
    let mut heap = TimerHeap::new();
    for seq in (0..20u64).rev() {
        heap.push(5, seq, seq);
    }
    let order: Vec<u64> = std::iter::from_fn(|| heap.pop_due(5))
        .map(|e| e.item)
        .collect();
    assert_eq!(order, (0..20).collect::<Vec<_>>());
}

#[test]
fn pop_due_respects_now() {
    let mut heap = TimerHeap::new();
    heap.push(10, 0, "a");
    heap.push(3, 1, "b");
    assert!(heap.pop_due(2).is_none());
    assert_eq!(heap.pop_due(3).map(|e| e.item), Some("b"));
    assert!(heap.pop_due(9).is_none());
    assert_eq!(heap.pop_due(10).map(|e| e.item), Some("a"));
    assert!(heap.peek().is_none());
}

#[test]
fn purge_drops_only_dead_entries() {
    let mut heap = TimerHeap::new();
    for seq in 0..1000u64 {
        heap.push(seq % 37, seq, seq);
    }
    let removed = heap.purge(|e| e.seq % 3 != 0);
    assert_eq!(removed.len(), 334);
    assert!(removed.iter().all(|e| e.seq % 3 == 0));
    assert_eq!(heap.len(), 666);
    let drained = heap.drain_sorted();
    assert!(drained
        .windows(2)
        .all(|w| (w[0].deadline, w[0].seq) < (w[1].deadline, w[1].seq)));
    assert!(drained.iter().all(|e| e.seq % 3 != 0));
}
