//! An indexed binary min-heap of timers: the storage of `HeapTimer`
//! (`java.util.Timer`'s `TaskQueue`) and `ScheduledThreadPool` (the JDK's
//! `DelayedWorkQueue`).
//!
//! Entries are ordered by deadline, then by submission sequence number, so
//! ties come out in submission order. Every key remembers its position in
//! the heap (the JDK's `heapIndex`), so removing or moving a timer is
//! O(log n) with no search.
//!
//! # Costs
//!
//! Insert, remove and reschedule are O(log n); for random deadlines an
//! insert moves O(1) entries on average. Poll is O(log n) per expired
//! timer, or, when many come due at once (a burst, a driver catching up),
//! one pass over the heap plus a sort of the due ones. An entry is 24
//! bytes (deadline, sequence, key) and each key has a 4-byte position.
//!
//! # Staging
//!
//! A new timer given by [`stage`](TimerQueue::stage) waits outside the heap,
//! in a list in the order staged, whose earliest deadline counts in
//! [`next_deadline`](TimerQueue::next_deadline); a poll moves the staged
//! timers into the heap once the earliest may be due, a chunk a poll ahead
//! of it if there are many. A staged timer is removed in O(1), and a purge
//! reads the staged ones in the order they came (their keys' state in
//! order through memory, where the heap's order is random) and orders
//! nothing: a timeout cancelled in time never enters the heap.

use super::{move_from, Expired, Key, TimerQueue, MOVE_CHUNK};

const ABSENT: u32 = u32::MAX;
/// Marks a position in the staging list (keys and positions stay below it).
const STAGED: u32 = 1 << 31;

/// Where a key's entry is.
enum Slot {
    Heap(usize),
    Staged(usize),
}

/// Entries [`IndexedHeap::next_wake`] looks at, at most: enough for the
/// few timers within a slack of the head, and a bound on a driver's work
/// when thousands share one deadline.
const NEXT_WAKE_VISITS: usize = 64;

/// Heaps from this size poll many due timers at once in bulk (see
/// `IndexedHeap::poll_bulk`).
const BULK_MIN: usize = 64;

/// Due timers from which a poll of a heap of `n` goes in bulk: where `k`
/// pops of O(log n) each would cost about twice a bulk poll's pass over
/// the heap.
fn bulk_from(n: usize) -> usize {
    let log = (usize::BITS - n.leading_zeros()) as usize;
    2 * n / log
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    deadline: u64,
    seq: u64,
    key: Key,
}

/// An indexed binary heap of timers. See the [module docs](self).
///
/// # Examples
///
/// ```
/// use schedulers::core::{Expired, IndexedHeap, TimerQueue};
///
/// let mut heap = IndexedHeap::new();
/// heap.insert(7, 30);
/// heap.insert(3, 10);
/// heap.insert(5, 10); // a tie: after key 3, which came first
/// assert!(heap.remove(7));
/// let mut due = Vec::new();
/// heap.poll(10, &mut due);
/// assert_eq!(due, [Expired { key: 3, deadline: 10 }, Expired { key: 5, deadline: 10 }]);
/// ```
#[derive(Debug)]
pub struct IndexedHeap {
    entries: Vec<Entry>,
    /// Timers not in the heap yet, in the order staged, from `moved` on.
    staged: Vec<Entry>,
    /// Staged entries before this index have moved into the heap: the
    /// oldest move first, so that a burst joins in the order it came.
    moved: usize,
    /// A lower bound of the staged deadlines (`u64::MAX` with none).
    staged_min: u64,
    /// Each key's index in `entries`, or `STAGED |` its index in `staged`,
    /// or `ABSENT`.
    pos: Vec<u32>,
    seq: u64,
}

impl Default for IndexedHeap {
    fn default() -> IndexedHeap {
        IndexedHeap {
            entries: Vec::new(),
            staged: Vec::new(),
            moved: 0,
            staged_min: u64::MAX,
            pos: Vec::new(),
            seq: 0,
        }
    }
}

impl IndexedHeap {
    /// An empty heap.
    pub fn new() -> IndexedHeap {
        IndexedHeap::default()
    }

    /// Gives back most of what the entries' array holds beyond a quarter
    /// full (after a burst), down to [`IDLE_KEEP`](super::IDLE_KEEP): a
    /// driver calls it before it sleeps for long.
    pub(crate) fn trim(&mut self) {
        let (len, capacity) = (self.entries.len(), self.entries.capacity());
        if capacity > super::IDLE_KEEP && len < capacity / 4 {
            self.entries.shrink_to((2 * len).max(super::IDLE_KEEP));
        }
        super::trim(&mut self.staged);
    }

    fn set_pos(&mut self, i: usize) {
        let key = self.entries[i].key as usize;
        self.pos[key] = i as u32;
    }

    fn slot(&self, key: Key) -> Option<Slot> {
        match self.pos.get(key as usize).copied() {
            None | Some(ABSENT) => None,
            Some(p) if p & STAGED != 0 => Some(Slot::Staged((p & !STAGED) as usize)),
            Some(p) => Some(Slot::Heap(p as usize)),
        }
    }

    fn entry(&self, key: Key) -> Option<&Entry> {
        match self.slot(key)? {
            Slot::Heap(i) => Some(&self.entries[i]),
            Slot::Staged(i) => Some(&self.staged[i]),
        }
    }

    fn staged_len(&self) -> usize {
        self.staged.len() - self.moved
    }

    /// Takes staged entry `i` out; the last staged entry fills its place.
    fn remove_staged(&mut self, i: usize) {
        let removed = self.staged.swap_remove(i);
        self.pos[removed.key as usize] = ABSENT;
        if let Some(last) = self.staged.get(i) {
            self.pos[last.key as usize] = STAGED | i as u32;
        }
        if self.staged_len() == 0 {
            self.drop_moved();
        }
    }

    /// Forgets the staged entries that moved (all of them, if
    /// `staged_len` is 0), and renumbers the rest.
    fn drop_moved(&mut self) {
        self.staged.drain(..self.moved);
        self.moved = 0;
        for (i, e) in self.staged.iter().enumerate() {
            self.pos[e.key as usize] = STAGED | i as u32;
        }
        if self.staged.is_empty() {
            self.staged_min = u64::MAX;
        }
    }

    /// When a poll begins to move the staged timers into the heap (see
    /// [`move_from`]); `u64::MAX` with none.
    fn unstage_at(&self) -> u64 {
        move_from(self.staged_min, self.staged_len() as u64)
    }

    /// Moves staged timers into the heap, oldest first: all of them if the
    /// earliest may be due at `now`, else a chunk once their time has come
    /// (see [`IndexedHeap::unstage_at`]). Many at once join the heap by a
    /// rebuild, O(n), rather than a sift each. Oldest first: timers of one
    /// deadline then join in the order of their sequence numbers, and each
    /// sift stops at once (newest first, each went up to the root).
    fn unstage(&mut self, now: u64) {
        let n = if self.staged_min <= now {
            self.staged_len()
        } else if self.unstage_at() <= now {
            MOVE_CHUNK.min(self.staged_len())
        } else {
            return;
        };
        let (from, first) = (self.moved, self.entries.len());
        self.moved += n;
        self.entries
            .extend_from_slice(&self.staged[from..self.moved]);
        if n > first {
            self.heapify();
        } else {
            for i in first..self.entries.len() {
                self.sift_up(i);
            }
        }
        // The moved slots go once they are half the list: O(1) a timer.
        if self.moved > self.staged.len() / 2 {
            self.drop_moved();
        }
    }

    fn sift_up(&mut self, mut i: usize) -> usize {
        let entry = self.entries[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.entries[parent] <= entry {
                break;
            }
            self.entries[i] = self.entries[parent];
            self.set_pos(i);
            i = parent;
        }
        self.entries[i] = entry;
        self.set_pos(i);
        i
    }

    /// The smaller of entry `i`'s children, if it has any.
    fn smaller_child(&self, i: usize) -> Option<usize> {
        let (n, left) = (self.entries.len(), 2 * i + 1);
        if left >= n {
            return None;
        }
        let right = left + 1;
        Some(if right < n && self.entries[right] < self.entries[left] {
            right
        } else {
            left
        })
    }

    fn sift_down(&mut self, mut i: usize) {
        let entry = self.entries[i];
        while let Some(child) = self.smaller_child(i) {
            if entry <= self.entries[child] {
                break;
            }
            self.entries[i] = self.entries[child];
            self.set_pos(i);
            i = child;
        }
        self.entries[i] = entry;
        self.set_pos(i);
    }

    /// Restores the order of entry `i` after its key changed.
    fn fix(&mut self, i: usize) {
        if self.sift_up(i) == i {
            self.sift_down(i);
        }
    }

    /// Takes entry `i` out; the last entry fills its place. At the root
    /// (a poll) it does so the bottom-up way (Floyd's): the hole goes down
    /// to a leaf along the smaller children, one comparison a level where a
    /// sift-down makes two, and the last entry goes up from there; being a
    /// leaf's, it rarely goes far (`core/poll` bench: 6-10 % less a timer).
    /// Elsewhere the hole would go further down than the entry needs to.
    fn remove_at(&mut self, i: usize) -> Entry {
        let last = self.entries.pop().expect("an entry to remove");
        let removed = if i < self.entries.len() {
            std::mem::replace(&mut self.entries[i], last)
        } else {
            last
        };
        self.pos[removed.key as usize] = ABSENT;
        if i == 0 && !self.entries.is_empty() {
            let leaf = self.hole_to_leaf(0);
            self.entries[leaf] = last;
            self.sift_up(leaf);
        } else if i < self.entries.len() {
            self.set_pos(i);
            self.fix(i);
        }
        removed
    }

    /// Moves the smaller child up into the hole at `i`, and so on down to
    /// a leaf; returns where the hole ends.
    fn hole_to_leaf(&mut self, mut i: usize) -> usize {
        while let Some(child) = self.smaller_child(i) {
            self.entries[i] = self.entries[child];
            self.set_pos(i);
            i = child;
        }
        i
    }

    /// True if 8 leaves spread over the bottom half of the heap, and the
    /// last, are all due at `now` (a look at 9 entries, mostly at the first).
    fn leaves_due(&self, now: u64) -> bool {
        let (n, half) = (self.entries.len(), self.entries.len() / 2);
        (0..8)
            .map(|i| half + i * (n - half) / 8)
            .chain([n - 1])
            .all(|i| self.entries[i].deadline <= now)
    }

    /// Counts down `left` for each entry due at `now` in the subtree at
    /// `i` (due entries hang together below the root), stopping at zero:
    /// O(entries due), whatever the heap's size.
    fn count_due(&self, i: usize, now: u64, left: &mut usize) {
        match self.entries.get(i) {
            Some(e) if e.deadline <= now && *left > 0 => {
                *left -= 1;
                self.count_due(2 * i + 1, now, left);
                self.count_due(2 * i + 2, now, left);
            }
            _ => {}
        }
    }

    /// A poll that takes many: the entries not due stay at the front, the
    /// due ones are sorted, and the rest is heaped again. A pass over the
    /// heap and a sort of the due, in order through memory, where a pop
    /// each costs O(log n), mostly cache misses at a large heap.
    fn poll_bulk(&mut self, now: u64, expired: &mut Vec<Expired>) {
        let mut kept = 0;
        for i in 0..self.entries.len() {
            if self.entries[i].deadline > now {
                self.entries.swap(kept, i);
                kept += 1;
            }
        }
        let due = &mut self.entries[kept..];
        // The entries' order (sequence numbers are unique), one comparison
        // each instead of two or three: a third less time at 1e5.
        due.sort_unstable_by_key(|e| u128::from(e.deadline) << 64 | u128::from(e.seq));
        expired.reserve(due.len());
        for e in due.iter() {
            self.pos[e.key as usize] = ABSENT;
            expired.push(Expired {
                key: e.key,
                deadline: e.deadline,
            });
        }
        self.entries.truncate(kept);
        self.heapify();
    }

    /// Puts entries in any order back in heap order (Floyd's, O(n)), and
    /// their keys' positions with them.
    fn heapify(&mut self) {
        for i in 0..self.entries.len() {
            self.set_pos(i);
        }
        for i in (0..self.entries.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Adds positions up to `key`'s, and to the end of its group of
    /// [`GROW`](super::GROW).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, key: usize) {
        self.pos
            .resize((key + 1).next_multiple_of(super::GROW), ABSENT);
    }

    /// A new key's entry, its position to be set.
    fn new_entry(&mut self, key: Key, deadline: u64) -> Entry {
        debug_assert!(!self.contains(key), "key {key} inserted twice");
        if key as usize >= self.pos.len() {
            self.grow(key as usize);
        }
        let seq = self.next_seq();
        Entry { deadline, seq, key }
    }

    /// When a driver must wake if each timer may start up to `slack(key)`
    /// after its deadline: the earliest `deadline + slack(key)` in the heap,
    /// `None` when it is empty. Only entries due before that answer are
    /// visited (in a heap they hang together below the root), at most 64;
    /// past those the answer is the earliest deadline left unvisited,
    /// earlier than the exact answer, never later.
    ///
    /// ```
    /// use schedulers::core::{IndexedHeap, TimerQueue};
    ///
    /// let mut heap = IndexedHeap::new();
    /// heap.insert(1, 100); // may start up to 50 late
    /// heap.insert(2, 130); // must start on time
    /// let slack = |key| if key == 1 { 50 } else { 0 };
    /// assert_eq!(heap.next_wake(slack), Some(130));
    /// heap.remove(2);
    /// assert_eq!(heap.next_wake(slack), Some(150));
    /// ```
    pub fn next_wake(&self, slack: impl Fn(Key) -> u64) -> Option<u64> {
        if self.is_empty() {
            return None;
        }
        // Staged timers count by their earliest deadline, slack aside.
        let (mut wake, mut visits) = (self.unstage_at(), NEXT_WAKE_VISITS);
        self.visit_for_wake(0, &slack, &mut wake, &mut visits);
        Some(wake)
    }

    fn visit_for_wake(
        &self,
        i: usize,
        slack: &impl Fn(Key) -> u64,
        wake: &mut u64,
        visits: &mut usize,
    ) {
        let Some(e) = self.entries.get(i) else {
            return;
        };
        if e.deadline >= *wake {
            return; // nothing below starts earlier
        }
        if *visits == 0 {
            *wake = e.deadline; // a bound for everything below
            return;
        }
        *visits -= 1;
        *wake = (*wake).min(e.deadline.saturating_add(slack(e.key)));
        self.visit_for_wake(2 * i + 1, slack, wake, visits);
        self.visit_for_wake(2 * i + 2, slack, wake, visits);
    }
}

impl TimerQueue for IndexedHeap {
    fn insert(&mut self, key: Key, deadline: u64) {
        let entry = self.new_entry(key, deadline);
        self.entries.push(entry);
        self.sift_up(self.entries.len() - 1);
    }

    fn stage(&mut self, key: Key, deadline: u64) {
        let entry = self.new_entry(key, deadline);
        self.pos[key as usize] = STAGED | self.staged.len() as u32;
        self.staged.push(entry);
        self.staged_min = self.staged_min.min(deadline);
    }

    fn remove(&mut self, key: Key) -> bool {
        match self.slot(key) {
            Some(Slot::Heap(i)) => {
                self.remove_at(i);
                true
            }
            Some(Slot::Staged(i)) => {
                self.remove_staged(i);
                true
            }
            None => false,
        }
    }

    fn reschedule(&mut self, key: Key, deadline: u64) -> bool {
        let Some(slot) = self.slot(key) else {
            return false;
        };
        let seq = self.next_seq();
        match slot {
            Slot::Heap(i) => {
                self.entries[i].deadline = deadline;
                self.entries[i].seq = seq;
                self.fix(i);
            }
            Slot::Staged(i) => {
                self.staged[i].deadline = deadline;
                self.staged[i].seq = seq;
                self.staged_min = self.staged_min.min(deadline);
            }
        }
        true
    }

    fn poll(&mut self, now: u64, expired: &mut Vec<Expired>) {
        if self.staged_len() > 0 {
            self.unstage(now);
        }
        // After half the pops from which a bulk poll pays, count what else
        // is due, once: a poll of fewer pays nothing for the choice. If
        // leaves across the bottom row are all due, most likely are: count
        // at once, before pops stir an order the due may be in already
        // (timers of one deadline, inserted one after another).
        let n = self.entries.len();
        let check = if n < BULK_MIN {
            usize::MAX
        } else if self.leaves_due(now) {
            0
        } else {
            bulk_from(n) / 2
        };
        let mut popped = 0;
        while let Some(head) = self.entries.first().copied() {
            if head.deadline > now {
                break;
            }
            if popped == check {
                let mut left = bulk_from(self.entries.len());
                self.count_due(0, now, &mut left);
                if left == 0 {
                    return self.poll_bulk(now, expired);
                }
            }
            popped += 1;
            self.remove_at(0);
            expired.push(Expired {
                key: head.key,
                deadline: head.deadline,
            });
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        let heap = self.entries.first().map_or(u64::MAX, |e| e.deadline);
        Some(heap.min(self.unstage_at())).filter(|_| !self.is_empty())
    }

    fn drain(&mut self, out: &mut Vec<Expired>) {
        let mut all = std::mem::take(&mut self.entries);
        all.extend_from_slice(&self.staged[self.moved..]);
        self.staged.clear();
        self.moved = 0;
        self.staged_min = u64::MAX;
        all.sort_unstable();
        for e in &all {
            self.pos[e.key as usize] = ABSENT;
        }
        out.extend(all.iter().map(|e| Expired {
            key: e.key,
            deadline: e.deadline,
        }));
    }

    fn retain(&mut self, mut keep: impl FnMut(Key) -> bool, removed: &mut Vec<Key>) {
        let pos = &mut self.pos;
        let mut kept = |e: &Entry| {
            let kept = keep(e.key);
            if !kept {
                pos[e.key as usize] = ABSENT;
                removed.push(e.key);
            }
            kept
        };
        let before = self.entries.len();
        self.entries.retain(&mut kept);
        self.staged.drain(..self.moved);
        self.moved = 0;
        self.staged.retain(kept);
        if self.entries.len() < before {
            self.heapify();
        }
        // The staged ones keep their order: their positions and bound anew.
        self.staged_min = u64::MAX;
        for (i, e) in self.staged.iter().enumerate() {
            self.pos[e.key as usize] = STAGED | i as u32;
            self.staged_min = self.staged_min.min(e.deadline);
        }
    }

    fn len(&self) -> usize {
        self.entries.len() + self.staged_len()
    }

    fn contains(&self, key: Key) -> bool {
        self.slot(key).is_some()
    }

    fn deadline(&self, key: Key) -> Option<u64> {
        self.entry(key).map(|e| e.deadline)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::core::{IDLE_KEEP, MOVE_NS_PER_TIMER};

    /// Staged timers stay out of the heap until the earliest may be due,
    /// or, many of them, until their chunks begin ahead of it; a removal or
    /// a purge of a staged timer touches nothing else; a reschedule keeps
    /// it staged; whatever the path, polls give every timer in order.
    #[test]
    fn staged_timers_join_the_heap_when_the_first_may_be_due() {
        let mut heap = IndexedHeap::new();
        heap.insert(100, 5_000);
        let n = 7 * MOVE_CHUNK as u64;
        for key in 0..n {
            heap.stage(key as Key, 10_000 + key);
        }
        assert_eq!(heap.entries.len(), 1);
        assert_eq!(heap.next_deadline(), Some(5_000));
        assert!(heap.remove(3));
        assert!(heap.reschedule(4, 20_000));
        let mut removed = Vec::new();
        heap.retain(|key| key != 5, &mut removed);
        assert_eq!(removed, [5]);
        assert_eq!((heap.entries.len(), heap.staged_len()), (1, n as usize - 2));
        let mut due = Vec::new();
        heap.poll(5_000, &mut due);
        assert_eq!(
            due,
            [Expired {
                key: 100,
                deadline: 5_000
            }]
        );
        // Chunks ahead of the earliest (key 0, 10 µs), 50 ns a timer.
        let lead = (n - 2) * MOVE_NS_PER_TIMER;
        assert_eq!(heap.next_deadline(), Some(10_000 - lead));
        let mut polls = 0;
        while let Some(at) = heap.next_deadline().filter(|&at| at < 10_000) {
            due.clear();
            heap.poll(at, &mut due);
            assert_eq!(due, []);
            polls += 1;
        }
        assert_eq!(polls, 6, "the last chunk goes with the first timer");
        heap.poll(20_000, &mut due);
        let keys: Vec<Key> = due.iter().map(|e| e.key).collect();
        let mut want: Vec<Key> = (0..n as Key)
            .filter(|&k| k != 3 && k != 4 && k != 5)
            .collect();
        want.push(4);
        assert_eq!(keys, want);
        assert!(heap.is_empty());
        assert_eq!(heap.next_deadline(), None);
    }

    /// After a burst, a trim shrinks the entries' array once it is less
    /// than a quarter full (to twice its length, never below `IDLE_KEEP`);
    /// a third full, it keeps its array; what is left is still in order.
    #[test]
    fn a_trim_gives_back_what_a_burst_left() {
        let mut heap = IndexedHeap::new();
        let n = 4 * IDLE_KEEP as u32;
        for key in 0..n {
            heap.insert(key, u64::from(key));
        }
        let mut due = Vec::new();
        heap.poll(u64::from(n - n / 3), &mut due);
        let capacity = heap.entries.capacity();
        heap.trim();
        assert_eq!(heap.entries.capacity(), capacity, "a third full: kept");
        heap.poll(u64::from(n - IDLE_KEEP as u32 / 2), &mut due);
        heap.trim();
        assert!(
            heap.entries.capacity() <= IDLE_KEEP,
            "{}",
            heap.entries.capacity()
        );
        heap.poll(u64::from(n), &mut due);
        assert_eq!(due.len(), n as usize);
        assert!(due.windows(2).all(|w| w[0].deadline < w[1].deadline));
    }
}
