//! Doubly linked lists threaded through one slab of nodes by `u32` index:
//! the storage of both wheels (a wheel bucket, a Kafka bucket and the overdue
//! list are each one list).
//!
//! Nodes are named by the caller's [`Key`]s, so a timer's node is found
//! without a search and the slab never allocates per timer once it has
//! grown. A list's first node's `prev` and its last node's `next` hold the
//! list's number with a tag bit, so a node can be unlinked in O(1) without
//! knowing which list it is in. A node is 20 bytes: its deadline, its
//! submission sequence number and two links, in 4-byte words (a wheel's
//! whole cost per timer is the node and the caller's own slot).
//!
//! Sequence numbers are 32 bits: when they run out (after 4 billion
//! submissions), the linked nodes are renumbered in order, which keeps
//! their order and costs O(n log n) once per 4 billion.

use super::{Key, GROW, MAX_KEYS};

/// Marks a link that names a list, not a node: keys stay below it.
const TAG: u32 = MAX_KEYS as u32;
/// "Not linked" / "empty list".
pub(crate) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    /// The deadline, low and high halves (4-byte words keep the node at 20
    /// bytes).
    deadline: [u32; 2],
    pub(crate) seq: u32,
    prev: u32,
    next: u32,
}

impl Node {
    pub(crate) fn deadline(&self) -> u64 {
        u64::from(self.deadline[0]) | u64::from(self.deadline[1]) << 32
    }
}

#[derive(Clone, Copy, Debug)]
struct Ends {
    head: u32,
    tail: u32,
}

const EMPTY: Ends = Ends {
    head: NIL,
    tail: NIL,
};

/// A set of lists over one slab of nodes indexed by key.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    ends: Vec<Ends>,
    nodes: Vec<Node>,
    len: usize,
    /// The last sequence number handed out.
    seq: u32,
}

impl Lists {
    /// `lists` empty lists, numbered from 0.
    pub(crate) fn new(lists: usize) -> Lists {
        Lists {
            ends: vec![EMPTY; lists],
            nodes: Vec::new(),
            len: 0,
            seq: 0,
        }
    }

    /// Adds `more` empty lists; returns the number of the first.
    pub(crate) fn add_lists(&mut self, more: usize) -> u32 {
        let first = self.ends.len() as u32;
        self.ends.resize(self.ends.len() + more, EMPTY);
        first
    }

    /// Linked nodes, in all lists.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True if `key` is linked into a list.
    pub(crate) fn contains(&self, key: Key) -> bool {
        self.nodes.get(key as usize).is_some_and(|n| n.next != NIL)
    }

    /// The node of a linked key.
    pub(crate) fn node(&self, key: Key) -> Option<&Node> {
        self.nodes.get(key as usize).filter(|n| n.next != NIL)
    }

    /// The timing of a key, linked or not (as last [`Lists::set`]).
    pub(crate) fn timing(&self, key: Key) -> Node {
        self.nodes[key as usize]
    }

    pub(crate) fn is_empty(&self, list: u32) -> bool {
        self.ends[list as usize].head == NIL
    }

    /// The first node of `list`.
    pub(crate) fn head(&self, list: u32) -> Option<Key> {
        Some(self.ends[list as usize].head).filter(|&k| k != NIL)
    }

    /// The node after `key` in its list.
    pub(crate) fn next(&self, key: Key) -> Option<Key> {
        Some(self.nodes[key as usize].next).filter(|&k| k & TAG == 0)
    }

    /// Sets the deadline of an unlinked or linked key (links unchanged)
    /// and gives it the next sequence number: it now counts as submitted
    /// last among ties.
    #[inline]
    pub(crate) fn set(&mut self, key: Key, deadline: u64) {
        let i = key as usize;
        if i >= self.nodes.len() {
            self.grow(i);
        }
        let seq = self.next_seq();
        let n = &mut self.nodes[i];
        n.deadline = [deadline as u32, (deadline >> 32) as u32];
        n.seq = seq;
    }

    /// Adds unlinked nodes up to `key`'s, and to the end of its group of
    /// [`GROW`].
    #[cold]
    #[inline(never)]
    fn grow(&mut self, key: usize) {
        self.nodes.resize(
            (key + 1).next_multiple_of(GROW).min(MAX_KEYS),
            Node {
                deadline: [0; 2],
                seq: 0,
                prev: NIL,
                next: NIL,
            },
        );
    }

    fn next_seq(&mut self) -> u32 {
        if self.seq == u32::MAX {
            self.renumber();
        }
        self.seq += 1;
        self.seq
    }

    /// Numbers the linked nodes 1, 2, … in the order of their sequence
    /// numbers, so that those handed out next come after them.
    #[cold]
    #[inline(never)]
    fn renumber(&mut self) {
        let mut live: Vec<(u32, Key)> = self
            .linked()
            .map(|k| (self.nodes[k as usize].seq, k))
            .collect();
        live.sort_unstable();
        for (i, &(_, k)) in live.iter().enumerate() {
            self.nodes[k as usize].seq = i as u32 + 1;
        }
        self.seq = live.len() as u32;
    }

    /// Appends an unlinked key (whose timing is [`Lists::set`]) to `list`.
    pub(crate) fn push_back(&mut self, list: u32, key: Key) {
        debug_assert!(!self.contains(key) && (key as usize) < MAX_KEYS);
        let tail = self.ends[list as usize].tail;
        let n = &mut self.nodes[key as usize];
        n.next = TAG | list;
        n.prev = if tail == NIL { TAG | list } else { tail };
        if tail == NIL {
            self.ends[list as usize].head = key;
        } else {
            self.nodes[tail as usize].next = key;
        }
        self.ends[list as usize].tail = key;
        self.len += 1;
    }

    /// Unlinks a linked key; returns the list it left if that list is now empty.
    pub(crate) fn unlink(&mut self, key: Key) -> Option<u32> {
        let Node { prev, next, .. } = self.nodes[key as usize];
        debug_assert!(next != NIL, "unlinking a key that is not linked");
        let mut emptied = None;
        if prev & TAG != 0 {
            let list = prev & !TAG;
            self.ends[list as usize].head = if next & TAG != 0 { NIL } else { next };
            if next & TAG != 0 {
                emptied = Some(list);
            }
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next & TAG != 0 {
            self.ends[(next & !TAG) as usize].tail = if prev & TAG != 0 { NIL } else { prev };
        } else {
            self.nodes[next as usize].prev = prev;
        }
        let n = &mut self.nodes[key as usize];
        n.prev = NIL;
        n.next = NIL;
        self.len -= 1;
        emptied
    }

    /// Empties `list` at once and returns its keys in order (their nodes
    /// keep their timing but are no longer linked).
    pub(crate) fn take(&mut self, list: u32, out: &mut Vec<Key>) {
        let mut key = self.ends[list as usize].head;
        self.ends[list as usize] = EMPTY;
        while key != NIL && key & TAG == 0 {
            let n = &mut self.nodes[key as usize];
            let next = n.next;
            n.prev = NIL;
            n.next = NIL;
            self.len -= 1;
            out.push(key);
            key = next;
        }
    }

    /// Unlinks the first key of `list`, if any, and returns it.
    pub(crate) fn pop_front(&mut self, list: u32) -> Option<Key> {
        let key = self.head(list)?;
        self.unlink(key);
        Some(key)
    }

    /// Moves every key of `from` to the end of `to`, in order, in O(1).
    pub(crate) fn append(&mut self, from: u32, to: u32) {
        let moved = self.ends[from as usize];
        if moved.head == NIL {
            return;
        }
        self.ends[from as usize] = EMPTY;
        let tail = self.ends[to as usize].tail;
        if tail == NIL {
            self.nodes[moved.head as usize].prev = TAG | to;
            self.ends[to as usize].head = moved.head;
        } else {
            self.nodes[moved.head as usize].prev = tail;
            self.nodes[tail as usize].next = moved.head;
        }
        self.nodes[moved.tail as usize].next = TAG | to;
        self.ends[to as usize].tail = moved.tail;
    }

    /// Unlinks every key and empties every list.
    pub(crate) fn clear(&mut self) {
        self.ends.fill(EMPTY);
        for n in &mut self.nodes {
            n.prev = NIL;
            n.next = NIL;
        }
        self.len = 0;
    }

    /// Every linked key, in slab order.
    pub(crate) fn linked(&self) -> impl Iterator<Item = Key> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.next != NIL)
            .map(|(k, _)| k as Key)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// Sequence numbers that run out are renumbered in order: ties still
    /// come out in the order they were set.
    #[test]
    fn sequence_numbers_renumber_in_order_when_they_run_out() {
        let mut lists = Lists::new(1);
        lists.seq = u32::MAX - 2;
        for k in [5, 3, 9, 1] {
            lists.set(k, 7);
            lists.push_back(0, k);
        }
        assert_eq!(
            lists.seq, 4,
            "renumbered to 1 and 2, then 3 and 4 handed out"
        );
        lists.set(2, 7);
        lists.push_back(0, 2);
        let mut order: Vec<(u32, Key)> = keys(&lists, 0)
            .into_iter()
            .map(|k| (lists.node(k).unwrap().seq, k))
            .collect();
        order.sort_unstable();
        let order: Vec<Key> = order.into_iter().map(|(_, k)| k).collect();
        assert_eq!(order, [5, 3, 9, 1, 2]);
        assert_eq!(lists.node(1).unwrap().deadline(), 7);
        assert_eq!(std::mem::size_of::<Node>(), 20);
    }

    fn keys(lists: &Lists, list: u32) -> Vec<Key> {
        std::iter::successors(lists.head(list), |&k| lists.next(k)).collect()
    }

    #[test]
    fn append_moves_a_whole_list_and_unlink_still_finds_the_ends() {
        let mut lists = Lists::new(3);
        for k in 0..6 {
            lists.set(k, 0);
        }
        for k in [0, 1, 2] {
            lists.push_back(0, k);
        }
        for k in [3, 4] {
            lists.push_back(1, k);
        }
        lists.append(0, 1);
        assert!(lists.is_empty(0));
        assert_eq!(keys(&lists, 1), [3, 4, 0, 1, 2]);
        lists.append(1, 2); // onto an empty list
        assert_eq!(keys(&lists, 2), [3, 4, 0, 1, 2]);
        lists.append(0, 2); // an empty list changes nothing
        assert_eq!(lists.unlink(2), None); // the tail names list 2
        assert_eq!(lists.pop_front(2), Some(3)); // so does the head
        lists.push_back(2, 5);
        assert_eq!(keys(&lists, 2), [4, 0, 1, 5]);
        for k in [4, 0, 1] {
            assert_eq!(lists.pop_front(2), Some(k));
        }
        assert_eq!(lists.unlink(5), Some(2));
        assert_eq!((lists.pop_front(2), lists.len()), (None, 0));
    }
}
