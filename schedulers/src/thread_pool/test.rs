//! Unit and property tests of the pure `DelayedWorkQueue` core, against a
//! sorted-list model: same entries, same order, every index right.

use std::cell::Cell;
use std::rc::Rc;

use proptest::prelude::*;

use super::queue::{DelayedWorkQueue, Indexed, NOT_QUEUED};

/// A test item: an id plus the index the heap records for it.
#[derive(Debug, Clone)]
struct Item {
    id: u32,
    index: Rc<Cell<usize>>,
}

impl Item {
    fn new(id: u32) -> Item {
        Item {
            id,
            index: Rc::new(Cell::new(NOT_QUEUED)),
        }
    }
}

impl Indexed for Item {
    fn heap_index(&self) -> usize {
        self.index.get()
    }
    fn set_heap_index(&self, index: usize) {
        self.index.set(index);
    }
}

fn same(a: &Item, b: &Item) -> bool {
    Rc::ptr_eq(&a.index, &b.index)
}

#[test]
fn pops_by_deadline_then_seq() {
    let mut q = DelayedWorkQueue::new();
    let items: Vec<Item> = (0..6).map(Item::new).collect();
    for (seq, (deadline, item)) in [30, 10, 20, 10, 30, 10].into_iter().zip(&items).enumerate() {
        q.push(deadline, seq as u64, item.clone());
        q.check();
    }
    let order: Vec<u32> = std::iter::from_fn(|| q.pop_due(u64::MAX))
        .map(|e| e.item.id)
        .collect();
    assert_eq!(order, [1, 3, 5, 2, 0, 4], "ties first-in first-out");
    assert!(items.iter().all(|i| i.heap_index() == NOT_QUEUED));
}

#[test]
fn pop_due_respects_now() {
    let mut q = DelayedWorkQueue::new();
    q.push(100, 0, Item::new(0));
    q.push(50, 1, Item::new(1));
    assert!(q.pop_due(49).is_none());
    assert_eq!(q.pop_due(50).map(|e| e.item.id), Some(1));
    assert!(q.pop_due(99).is_none());
    assert_eq!(q.pop_due(100).map(|e| e.item.id), Some(0));
    assert!(q.pop_due(u64::MAX).is_none());
    assert!(q.is_empty());
}

#[test]
fn push_reports_a_new_head() {
    let mut q = DelayedWorkQueue::new();
    assert!(q.push(10, 0, Item::new(0)), "first entry is the head");
    assert!(!q.push(20, 1, Item::new(1)));
    assert!(
        !q.push(10, 2, Item::new(2)),
        "a tie goes after the earlier seq"
    );
    assert!(q.push(9, 3, Item::new(3)));
}

#[test]
fn remove_any_position_keeps_heap_and_indices() {
    let mut q = DelayedWorkQueue::new();
    let items: Vec<Item> = (0..100).map(Item::new).collect();
    for (i, item) in items.iter().enumerate() {
        q.push(((i * 37) % 101) as u64, i as u64, item.clone());
    }
    q.check();
    for item in items.iter().step_by(3) {
        let e = q.remove(item, same).expect("queued");
        assert_eq!(e.item.id, item.id);
        assert_eq!(item.heap_index(), NOT_QUEUED);
        q.check();
        assert!(q.remove(item, same).is_none(), "removed once");
    }
    assert_eq!(q.len(), 100 - 34);
}

#[test]
fn remove_ignores_an_index_from_another_heap() {
    let mut a = DelayedWorkQueue::new();
    let mut b = DelayedWorkQueue::new();
    let x = Item::new(0);
    a.push(5, 0, Item::new(1));
    b.push(5, 0, x.clone());
    assert!(
        a.remove(&x, same).is_none(),
        "index 0 in `a` holds another item"
    );
    assert_eq!(a.len(), 1);
}

#[test]
fn purge_and_drain() {
    let mut q = DelayedWorkQueue::new();
    let items: Vec<Item> = (0..50).map(Item::new).collect();
    for (i, item) in items.iter().enumerate() {
        q.push(1000 - i as u64, i as u64, item.clone());
    }
    assert_eq!(q.purge(|e| e.item.id % 2 == 0).len(), 25);
    q.check();
    assert!(items
        .iter()
        .filter(|i| i.id % 2 == 1)
        .all(|i| i.heap_index() == NOT_QUEUED));
    assert!(q.purge(|_| true).is_empty());
    let drained: Vec<u64> = q.drain_sorted().into_iter().map(|e| e.deadline).collect();
    let mut sorted = drained.clone();
    sorted.sort();
    assert_eq!(drained, sorted);
    assert_eq!(drained.len(), 25);
    assert!(q.is_empty());
    assert!(items.iter().all(|i| i.heap_index() == NOT_QUEUED));
}

#[test]
fn purge_gives_back_memory() {
    let mut q = DelayedWorkQueue::new();
    let items: Vec<Item> = (0..10_000).map(Item::new).collect();
    for (i, item) in items.iter().enumerate() {
        q.push(i as u64, i as u64, item.clone());
    }
    assert_eq!(q.purge(|e| e.item.id < 100).len(), 9_900);
    q.check();
    assert_eq!(q.len(), 100);
    assert!(
        q.capacity() <= 1_000,
        "capacity {} kept after purging a burst",
        q.capacity()
    );
}

#[derive(Debug, Clone)]
enum Op {
    Push(u64),
    PopDue(u64),
    Remove(usize),
    Purge(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..64).prop_map(Op::Push),
        2 => (0u64..64).prop_map(Op::PopDue),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => any::<u8>().prop_map(Op::Purge),
    ]
}

proptest! {
    /// Any sequence of operations gives the same results as a sorted list,
    /// and every queued item knows its index after every step.
    #[test]
    fn matches_a_sorted_model(ops in proptest::collection::vec(op(), 1..300)) {
        let mut q = DelayedWorkQueue::new();
        let mut model: Vec<(u64, u64, u32)> = Vec::new();
        let mut items: Vec<Item> = Vec::new();
        let mut seq = 0u64;
        for op in ops {
            match op {
                Op::Push(d) => {
                    let item = Item::new(items.len() as u32);
                    items.push(item.clone());
                    let head = q.push(d, seq, item);
                    model.push((d, seq, items.len() as u32 - 1));
                    model.sort();
                    prop_assert_eq!(head, model[0].1 == seq);
                    seq += 1;
                }
                Op::PopDue(now) => {
                    let got = q.pop_due(now).map(|e| (e.deadline, e.seq, e.item.id));
                    let want = if model.first().is_some_and(|m| m.0 <= now) { Some(model.remove(0)) } else { None };
                    prop_assert_eq!(got, want);
                }
                Op::Remove(k) => {
                    if items.is_empty() { continue; }
                    let item = &items[k % items.len()];
                    let got = q.remove(item, same).map(|e| (e.deadline, e.seq, e.item.id));
                    let want = model.iter().position(|m| m.2 == item.id).map(|i| model.remove(i));
                    prop_assert_eq!(got, want);
                }
                Op::Purge(mask) => {
                    let keep = |id: u32| (mask >> (id % 8)) & 1 == 1;
                    let removed = q.purge(|e| keep(e.item.id)).len();
                    let before = model.len();
                    model.retain(|m| keep(m.2));
                    prop_assert_eq!(removed, before - model.len());
                }
            }
            q.check();
            prop_assert_eq!(q.len(), model.len());
            prop_assert_eq!(q.peek().map(|e| (e.deadline, e.seq)), model.first().map(|m| (m.0, m.1)));
            for item in &items {
                let queued = model.iter().any(|m| m.2 == item.id);
                prop_assert_eq!(item.heap_index() != NOT_QUEUED, queued);
            }
        }
        let drained: Vec<(u64, u64, u32)> = q.drain_sorted().into_iter().map(|e| (e.deadline, e.seq, e.item.id)).collect();
        prop_assert_eq!(drained, model);
    }
}
