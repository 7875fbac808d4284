//! Buckets: Kafka's `TimerTaskList`, as circular doubly-linked lists whose
//! nodes live in one slab and link by index.
//!
//! Every bucket of every wheel is a circular list with a *sentinel* node, as
//! `TimerTaskList` has a root entry; all nodes, sentinels included, sit in
//! one `Vec` and point at each other with `u32` indices, so there are no raw
//! pointers, no `unsafe` and no allocation per timer once the slab has grown.
//! A node holds two 4-byte links, the expiration (in ticks), the sequence
//! number and the item: 40 bytes for a task reference (a 16-byte pointer to
//! a type-erased cell).
//!
//! Costs: push to the back, unlink and pop from the front are O(1) and touch
//! the node and its two neighbours. A freed node goes on a free list and is
//! reused by the next insert, so the slab never shrinks below its peak.
//!
//! Unlike `TimerTaskList`, a list has no lock (the whole wheel sits behind
//! the driver's one mutex) and does not keep its own expiration: the wheel
//! keeps one per bucket beside the sentinel index.

/// "No node".
const NIL: u32 = u32::MAX;

/// A node's index in the slab: a timer's or a bucket's identity.
pub(crate) type Key = u32;

#[derive(Debug)]
struct Node<T> {
    prev: u32,
    /// For a free node, the next free node.
    next: u32,
    expiration: u64,
    seq: u64,
    /// `None` for sentinels and free nodes.
    item: Option<T>,
}

/// A timer as it leaves a bucket for good.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Removed<T> {
    /// When it is due, in ticks.
    pub(crate) expiration: u64,
    pub(crate) seq: u64,
    pub(crate) item: T,
}

/// The slab of list nodes: every bucket of every wheel, and every timer.
#[derive(Debug)]
pub(crate) struct Buckets<T> {
    nodes: Vec<Node<T>>,
    free: u32,
    /// Timers held (sentinels not counted).
    len: usize,
}

impl<T> Buckets<T> {
    pub(crate) fn new() -> Buckets<T> {
        Buckets {
            nodes: Vec::new(),
            free: NIL,
            len: 0,
        }
    }

    /// Timers held, in all lists.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn alloc(&mut self, node: Node<T>) -> Key {
        if self.free != NIL {
            let key = self.free;
            let slot = &mut self.nodes[key as usize];
            self.free = slot.next;
            *slot = node;
            key
        } else {
            let key = u32::try_from(self.nodes.len()).ok().filter(|&k| k != NIL);
            // 4 billion timers need over 100 GiB: allocation fails first.
            let key = key.expect("more than 2^32 - 1 timers in one wheel");
            self.nodes.push(node);
            key
        }
    }

    /// A new, empty list; its key is the list's sentinel, and `tag` (the
    /// caller's name for the list) is what [`Buckets::unlink`] reports when
    /// the list becomes empty.
    pub(crate) fn new_list(&mut self, tag: u64) -> Key {
        let key = self.alloc(Node {
            prev: NIL,
            next: NIL,
            expiration: 0,
            seq: tag,
            item: None,
        });
        let node = &mut self.nodes[key as usize];
        node.prev = key;
        node.next = key;
        key
    }

    pub(crate) fn is_empty(&self, list: Key) -> bool {
        self.nodes[list as usize].next == list
    }

    /// Adds a timer at the back of `list`; returns its key.
    pub(crate) fn push_back(&mut self, list: Key, expiration: u64, seq: u64, item: T) -> Key {
        let key = self.alloc(Node {
            prev: NIL,
            next: NIL,
            expiration,
            seq,
            item: Some(item),
        });
        self.len += 1;
        self.link_back(list, key);
        key
    }

    /// Links a detached timer node at the back of `list`.
    pub(crate) fn link_back(&mut self, list: Key, key: Key) {
        let last = self.nodes[list as usize].prev;
        {
            let node = &mut self.nodes[key as usize];
            node.prev = last;
            node.next = list;
        }
        self.nodes[last as usize].next = key;
        self.nodes[list as usize].prev = key;
    }

    /// Detaches a linked timer node from whatever list holds it; the node
    /// stays allocated, to be linked again or freed. Returns the list's tag
    /// if that left the list empty.
    pub(crate) fn unlink(&mut self, key: Key) -> Option<u64> {
        let (prev, next) = {
            let node = &self.nodes[key as usize];
            (node.prev, node.next)
        };
        self.nodes[prev as usize].next = next;
        self.nodes[next as usize].prev = prev;
        // Only the sentinel is left when both neighbours are the same node.
        (prev == next).then(|| self.nodes[prev as usize].seq)
    }

    /// Detaches the first timer of `list`, or `None` if it is empty.
    pub(crate) fn pop_front(&mut self, list: Key) -> Option<Key> {
        let first = self.nodes[list as usize].next;
        if first == list {
            return None;
        }
        let _ = self.unlink(first);
        Some(first)
    }

    /// The item at `key`, if `key` is a timer (not a sentinel or free node).
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        self.nodes.get(key as usize).and_then(|n| n.item.as_ref())
    }

    /// Expiration (ticks) and sequence number of the timer at `key`.
    pub(crate) fn timing(&self, key: Key) -> (u64, u64) {
        let node = &self.nodes[key as usize];
        (node.expiration, node.seq)
    }

    /// Gives a timer node a new expiration and sequence number.
    pub(crate) fn set_timing(&mut self, key: Key, expiration: u64, seq: u64) {
        let node = &mut self.nodes[key as usize];
        node.expiration = expiration;
        node.seq = seq;
    }

    /// Frees a timer node already detached by [`Buckets::pop_front`] or
    /// [`Buckets::unlink`].
    pub(crate) fn free_detached(&mut self, key: Key) -> Removed<T> {
        let free = self.free;
        let node = &mut self.nodes[key as usize];
        let item = node
            .item
            .take()
            .expect("a detached timer node holds an item");
        node.next = free;
        node.prev = NIL;
        self.free = key;
        self.len -= 1;
        Removed {
            expiration: node.expiration,
            seq: node.seq,
            item,
        }
    }

    /// Bytes per node, as the slab holds them.
    #[cfg(test)]
    pub(crate) fn node_size() -> usize {
        std::mem::size_of::<Node<T>>()
    }

    /// The keys of `list`, front to back (for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn keys(&self, list: Key) -> Vec<Key> {
        let mut out = Vec::new();
        let mut at = self.nodes[list as usize].next;
        while at != list {
            out.push(at);
            at = self.nodes[at as usize].next;
        }
        out
    }
}
