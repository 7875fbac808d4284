//! Where a scheduler's timers live: a *slot* per key, holding the timer's
//! state word and its body, and the pool of free keys.
//!
//! A timer is a small integer *key*. Its state word (see [`crate::state`])
//! and its body (see [`crate::body`]) live in two arrays of segments that
//! never move once allocated, so any thread reads and CASes a word, and the
//! body's holder reads and writes the body, with no lock while the table
//! grows. Segment `s` holds `4096 << s` slots, so 20 segments cover every
//! key below [`MAX_KEYS`] and a lookup is a shift and two loads. The state
//! words are dense, 4 bytes each, so those of a million timers (4 MB) stay
//! in cache and a cancel in random order rarely misses it; the bodies (20
//! bytes) sit apart. Segments come from zeroed memory (all-zero is a free
//! slot), which costs nothing until a key there is first used.
//!
//! Keys are handed out in batches to the callers' lanes (see
//! [`crate::lanes`]), which return them in batches: the pool's lock is
//! taken once per [`BATCH`] keys, never per timer.

#![allow(unsafe_code)]

use std::sync::{Mutex, OnceLock};

use crate::body::Body;
use crate::clock::lock;
use crate::core::{Key, MAX_KEYS};
use crate::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use crate::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use crate::sync::cell::UnsafeCell;

const FIRST_BITS: u32 = 12;
/// Enough segments for every key below [`MAX_KEYS`].
const SEGMENTS: usize = 20;
/// Keys moved between the pool and a lane at a time.
pub(crate) const BATCH: usize = 64;

/// A body as a slot holds it: written by whoever the state word says holds
/// it.
pub(crate) type BodyCell = UnsafeCell<Body>;

/// Every slot of a scheduler, and its free keys. See the [module docs](self).
pub(crate) struct Slab {
    words: [OnceLock<Box<[AtomicU32]>>; SEGMENTS],
    bodies: [OnceLock<Box<[BodyCell]>>; SEGMENTS],
    /// A bit per key: cancelled after the driver took it in, and not yet
    /// seen by the driver (see [`Slab::mark`]); its canceller dropped the
    /// closure. A segment's bitmaps are made by its first mark (of their
    /// kind), not with its keys: a queue whose cancels never reach the
    /// driver has none (0.25 byte a key: 0.1-0.2 byte a timer less resident
    /// at 1e6, where the allocator clears reused memory for them).
    marks: [OnceLock<Box<[AtomicU64]>>; SEGMENTS],
    /// As `marks`, for a cancel that left the closure to the driver. Apart,
    /// so the driver knows which without reading each key's state word
    /// (another cache miss a cancel at a large queue).
    left: [OnceLock<Box<[AtomicU64]>>; SEGMENTS],
    /// A bit per word index of `marks` and `left`: either word may have a
    /// bit set.
    summary: [OnceLock<Box<[AtomicU64]>>; SEGMENTS],
    /// Some summary word went from empty to not since the driver looked.
    marked: AtomicBool,
    /// Marks made on a mark not yet taken (see [`Slab::mark`]).
    remarks: AtomicU64,
    /// The next key never handed out.
    fresh: AtomicU32,
    /// Free keys not held by a lane.
    pool: Mutex<Vec<Key>>,
}

// SAFETY: the bodies are `Send` (see `Body`), and the state words decide
// which single thread may touch each one at a time (see `crate::state`);
// everything else is atomics and a mutex.
unsafe impl Sync for Slab {}

/// Asks the CPU to bring the cache line of `at` close (a hint: a no-op
/// where there is no such instruction, and under loom).
fn prefetch<T>(at: *const T) {
    #[cfg(all(target_arch = "x86_64", not(schedulers_loom)))]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it reads nothing the program sees
        // and never faults, and SSE is part of every x86-64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
    }
    #[cfg(not(all(target_arch = "x86_64", not(schedulers_loom))))]
    let _ = at;
}

/// Keys in `segment`.
fn segment_len(segment: usize) -> usize {
    (1usize << FIRST_BITS) << segment
}

/// Where a key's slot is: its segment, and its offset there. Found once for
/// the several things of the key a call touches (its state word and its
/// mark, say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    segment: usize,
    offset: usize,
}

impl Place {
    pub(crate) fn of(key: Key) -> Place {
        let i = u64::from(key) + (1 << FIRST_BITS);
        let bits = 63 - i.leading_zeros();
        Place {
            segment: (bits - FIRST_BITS) as usize,
            offset: (i - (1 << bits)) as usize,
        }
    }
}

/// `len` zeroed `T`s, from memory the allocator zeroes lazily (fresh pages
/// cost nothing until touched).
///
/// # Safety
///
/// All-zero bits are a valid `T`, and `T` is not zero-sized.
#[cfg(not(schedulers_loom))]
unsafe fn zeroed<T>(len: usize) -> Box<[T]> {
    use std::alloc::{alloc_zeroed, handle_alloc_error, Layout};
    let layout = Layout::array::<T>(len).expect("a segment fits the address space");
    // SAFETY: the layout has a non-zero size (`len > 0`, `T` not zero-sized).
    let ptr = unsafe { alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: `ptr` holds `len` zeroed `T`s, valid as the caller says, from
    // the global allocator with the layout `Box<[T]>` frees them with.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) }
}

impl Slab {
    pub(crate) fn new() -> Slab {
        Slab {
            words: Default::default(),
            bodies: Default::default(),
            marks: Default::default(),
            left: Default::default(),
            summary: Default::default(),
            marked: AtomicBool::new(false),
            remarks: AtomicU64::new(0),
            fresh: AtomicU32::new(0),
            pool: Mutex::new(Vec::new()),
        }
    }

    /// The state word of a key that was handed out.
    pub(crate) fn word(&self, key: Key) -> &AtomicU32 {
        self.word_at(Place::of(key))
    }

    /// As [`Slab::word`], of the key at `at`.
    #[inline]
    pub(crate) fn word_at(&self, at: Place) -> &AtomicU32 {
        let words = self.words[at.segment]
            .get()
            .expect("a key is only handed out once its segment exists");
        &words[at.offset]
    }

    /// The body of a key that was handed out.
    pub(crate) fn body(&self, key: Key) -> &BodyCell {
        self.body_at(Place::of(key))
    }

    /// As [`Slab::body`], of the key at `at`.
    #[inline]
    fn body_at(&self, at: Place) -> &BodyCell {
        let bodies = self.bodies[at.segment]
            .get()
            .expect("a key is only handed out once its segment exists");
        &bodies[at.offset]
    }

    /// Calls `f` on the body of `key`.
    ///
    /// # Safety
    ///
    /// The caller holds the body, as the state word of `key` says (see
    /// [`crate::state`]): no other thread touches it meanwhile.
    pub(crate) unsafe fn with_body<R>(&self, key: Key, f: impl FnOnce(&mut Body) -> R) -> R {
        // SAFETY: the caller holds the body, so this is the only reference.
        self.body(key).with_mut(|body| f(unsafe { &mut *body }))
    }

    /// As [`Slab::with_body`], with the state word of `key` too (found
    /// once for both). Inlined into `submit`, its one caller: the call
    /// took 11 of the 330 or so instructions of a schedule.
    ///
    /// # Safety
    ///
    /// As [`Slab::with_body`].
    #[inline(always)]
    pub(crate) unsafe fn with_cell<'a, R>(
        &'a self,
        key: Key,
        f: impl FnOnce(&'a AtomicU32, &mut Body) -> R,
    ) -> R {
        let Place { segment, offset } = Place::of(key);
        let (Some(words), Some(bodies)) = (self.words[segment].get(), self.bodies[segment].get())
        else {
            unreachable!("a key is only handed out once its segment exists");
        };
        // SAFETY: the caller holds the body, so this is the only reference.
        bodies[offset].with_mut(|body| f(&words[offset], unsafe { &mut *body }))
    }

    /// Calls `f` on the body of `key`, shared.
    ///
    /// # Safety
    ///
    /// No thread writes the body meanwhile, as the state word of `key`
    /// says (see [`crate::state`]).
    pub(crate) unsafe fn with_body_ref<R>(&self, key: Key, f: impl FnOnce(&Body) -> R) -> R {
        // SAFETY: the caller says no one writes it meanwhile.
        self.body(key).with(|body| f(unsafe { &*body }))
    }

    /// Marks the key at `at` cancelled for the driver to see, `left` if the
    /// closure was left to it: a bit in a dense bitmap (a fetch-or, no
    /// lock), and the first bit of a word also a bit in the summary.
    /// Returns true if this made the first mark since the driver last
    /// looked.
    ///
    /// The driver counts the cancels by the marks it takes. A mark whose
    /// canceller dropped the closure holds no reference, so a key can be
    /// freed, used again and marked again before the driver took its first
    /// mark: that second mark is counted in [`Slab::remarks`] (rare, so the
    /// common mark takes one locked instruction, not two). A left mark
    /// holds a reference, so its key is never marked again before the
    /// driver took it.
    ///
    /// Inlined into the cancel that calls it: a call's own instructions
    /// (saving registers, passing the key's place) cost a cancel at 1e6
    /// timers as much as the mark's (see `Shared::cancel`).
    #[inline(always)]
    pub(crate) fn mark(&self, at: Place, left: bool) -> bool {
        let Place { segment, offset } = at;
        let marks = if left { &self.left } else { &self.marks };
        // Made by the segment's first mark of its kind, before that mark's
        // summary bit: a scheduler whose cancels never reach the driver
        // never touches their pages.
        let marks = marks[segment].get_or_init(|| new_segment(segment_len(segment) / 64));
        let word = offset / 64;
        let bit = 1 << (offset % 64);
        let before = marks[word].fetch_or(bit, SeqCst);
        if before & bit != 0 {
            self.remarks.fetch_add(1, Relaxed);
            return false;
        }
        if before != 0 {
            return false; // its summary bit is set, or being taken
        }
        // A summary bit stands for both bitmaps' words: the driver takes
        // both when it takes the bit.
        let summary =
            self.summary[segment].get_or_init(|| new_segment(segment_len(segment) / 64 / 64));
        if summary[word / 64].fetch_or(1 << (word % 64), Release) != 0 {
            return false;
        }
        !self.marked.swap(true, SeqCst)
    }

    /// Marks made on a key's mark not yet taken, ever (see [`Slab::mark`]).
    pub(crate) fn remarks(&self) -> u64 {
        self.remarks.load(Relaxed)
    }

    /// Asks the CPU to fetch the state word and the body of `key` (each
    /// a cache line that may be far), for a loop over many keys to touch
    /// them a few keys later without waiting for each in turn.
    pub(crate) fn prefetch(&self, key: Key) {
        let at = Place::of(key);
        prefetch(self.word_at(at));
        prefetch(self.body_at(at));
    }

    /// As [`Slab::prefetch`], the state word alone.
    pub(crate) fn prefetch_word(&self, key: Key) {
        prefetch(self.word(key));
    }

    /// True if keys may be marked that the driver has not taken.
    pub(crate) fn any_marked(&self) -> bool {
        self.marked.load(SeqCst)
    }

    /// Moves every marked key into `dropped`, or `left` if the closure was
    /// left to the driver, in key order (the driver's sweep), clearing the
    /// marks.
    pub(crate) fn take_marks(&self, dropped: &mut Vec<Key>, left: &mut Vec<Key>) {
        if !self.marked.swap(false, SeqCst) {
            return;
        }
        for segment in 0..SEGMENTS {
            let Some(summary) = self.summary[segment].get() else {
                continue;
            };
            // The segment's first key.
            let base = segment_len(segment) - segment_len(0);
            let bitmaps = [&self.marks[segment], &self.left[segment]];
            for (s, sw) in summary.iter().enumerate() {
                let mut words = if sw.load(Relaxed) == 0 {
                    0
                } else {
                    sw.swap(0, Acquire)
                };
                while words != 0 {
                    let w = s * 64 + words.trailing_zeros() as usize;
                    words &= words - 1;
                    for (bitmap, into) in bitmaps.iter().zip([&mut *dropped, &mut *left]) {
                        // Looked up after the summary bit: a bitmap made
                        // before a bit that stands for it is seen.
                        let Some(bitmap) = bitmap.get() else {
                            continue;
                        };
                        // Skipped if empty (as a summary word is): a bit
                        // set after this load sets the summary bit again.
                        let mut bits = if bitmap[w].load(Relaxed) == 0 {
                            0
                        } else {
                            bitmap[w].swap(0, Acquire)
                        };
                        while bits != 0 {
                            let offset = w * 64 + bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            into.push((base + offset) as Key);
                        }
                    }
                }
            }
        }
    }

    /// Makes the segments of keys `from..to` exist.
    fn reserve(&self, from: Key, to: Key) {
        let (first, last) = (Place::of(from), Place::of(to - 1));
        for segment in first.segment..=last.segment {
            self.words[segment].get_or_init(|| new_segment(segment_len(segment)));
            self.bodies[segment].get_or_init(|| new_segment(segment_len(segment)));
        }
    }

    /// Moves up to [`BATCH`] free keys into `into`: from the pool, or never
    /// used ones. False if every key below [`MAX_KEYS`] is taken.
    pub(crate) fn take_keys(&self, into: &mut Vec<Key>) -> bool {
        {
            let mut pool = lock(&self.pool);
            let n = pool.len().min(BATCH);
            if n > 0 {
                let from = pool.len() - n;
                into.extend(pool.drain(from..));
                return true;
            }
        }
        let from = self.fresh.fetch_add(BATCH as u32, Relaxed);
        let Some(to) = from
            .checked_add(BATCH as u32)
            .filter(|&to| to as usize <= MAX_KEYS)
        else {
            self.fresh.fetch_sub(BATCH as u32, Relaxed);
            return false;
        };
        self.reserve(from, to);
        // Handed out lowest first (a lane pops from the end).
        into.extend((from..to).rev());
        true
    }

    /// Returns free keys to the pool.
    pub(crate) fn give_keys(&self, keys: impl IntoIterator<Item = Key>) {
        lock(&self.pool).extend(keys);
    }

    /// Keys handed out so far, free or not (the table's high-water mark).
    pub(crate) fn capacity(&self) -> Key {
        self.fresh.load(Relaxed).min(MAX_KEYS as Key)
    }
}

/// A segment of `len` free slots.
fn new_segment<T: Free>(len: usize) -> Box<[T]> {
    #[cfg(not(schedulers_loom))]
    {
        // SAFETY: `Free` types are free when all-zero (see its impls).
        unsafe { zeroed(len) }
    }
    #[cfg(schedulers_loom)]
    {
        std::iter::repeat_with(T::free).take(len).collect()
    }
}

/// What a slot's parts are when free; all-zero bits, in a normal build.
trait Free {
    #[cfg(schedulers_loom)]
    fn free() -> Self;
}

/// A free state word is 0 (`FREE`, no holders).
impl Free for AtomicU32 {
    #[cfg(schedulers_loom)]
    fn free() -> Self {
        AtomicU32::new(0)
    }
}

/// No marks.
impl Free for AtomicU64 {
    #[cfg(schedulers_loom)]
    fn free() -> Self {
        AtomicU64::new(0)
    }
}

/// An empty body is all-zero (see [`Body`]).
impl Free for BodyCell {
    #[cfg(schedulers_loom)]
    fn free() -> Self {
        UnsafeCell::new(Body::empty())
    }
}

impl std::fmt::Debug for Slab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slab")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A slab that handed out at least `n` keys, and the keys.
    fn slab_with_keys(n: usize) -> (Slab, Vec<Key>) {
        let slab = Slab::new();
        let mut keys = Vec::new();
        while keys.len() < n {
            assert!(slab.take_keys(&mut keys));
        }
        (slab, keys)
    }

    #[test]
    fn keys_map_to_distinct_slots() {
        let at = |segment, offset| Place { segment, offset };
        assert_eq!(Place::of(0), at(0, 0));
        assert_eq!(Place::of(4096), at(1, 0));
        assert_eq!(
            Place::of(MAX_KEYS as Key - 1),
            at(SEGMENTS - 1, 4095),
            "the last key is early in the last segment"
        );
        let (slab, keys) = slab_with_keys(5000);
        for &key in &keys {
            slab.word(key).store(key, Relaxed);
        }
        for &key in &keys {
            assert_eq!(slab.word(key).load(Relaxed), key);
        }
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "no key handed out twice");
    }

    #[test]
    fn marks_come_back_once_in_key_order() {
        let (slab, _) = slab_with_keys(9000);
        let (mut taken, mut left) = (Vec::new(), Vec::new());
        slab.take_marks(&mut taken, &mut left);
        assert!(taken.is_empty() && left.is_empty() && !slab.any_marked());
        assert!(
            slab.mark(Place::of(8191), false),
            "the first mark since the driver looked"
        );
        for key in [5000, 3, 4096, 64, 65, 8191] {
            assert!(!slab.mark(Place::of(key), false));
        }
        assert!(slab.any_marked());
        assert_eq!(slab.remarks(), 1, "8191 again before the driver took it");
        assert!(!slab.mark(Place::of(64), false));
        assert_eq!(slab.remarks(), 2, "and 64");
        slab.take_marks(&mut taken, &mut left);
        assert_eq!(taken, [3, 64, 65, 4096, 5000, 8191]);
        assert!(left.is_empty());
        taken.clear();
        slab.take_marks(&mut taken, &mut left);
        assert!(taken.is_empty(), "taken once");
        assert!(slab.mark(Place::of(7), false));
    }

    #[test]
    fn left_marks_come_back_apart_from_the_others() {
        let (slab, _) = slab_with_keys(9000);
        assert!(
            slab.mark(Place::of(70), true),
            "the first mark since the driver looked"
        );
        // Word 1 of the bitmaps holds a bit in each: one summary bit.
        assert!(!slab.mark(Place::of(65), false));
        assert!(!slab.mark(Place::of(8000), true));
        assert!(!slab.mark(Place::of(8001), false));
        let (mut taken, mut left) = (Vec::new(), Vec::new());
        slab.take_marks(&mut taken, &mut left);
        assert_eq!(taken, [65, 8001]);
        assert_eq!(left, [70, 8000]);
        assert_eq!(slab.remarks(), 0);
        // A left mark alone in its word sets the summary bit again.
        assert!(slab.mark(Place::of(71), true), "the driver looked");
        taken.clear();
        left.clear();
        slab.take_marks(&mut taken, &mut left);
        assert!(taken.is_empty());
        assert_eq!(left, [71]);
    }

    /// A segment's bitmaps come with its first mark of their kind, not
    /// with its keys, and a sweep passes over those not made yet.
    #[test]
    fn bitmaps_are_made_by_the_first_mark() {
        let (slab, _) = slab_with_keys(9000);
        let made = |bitmaps: &[OnceLock<Box<[AtomicU64]>>]| {
            bitmaps
                .iter()
                .map(|b| b.get().is_some())
                .collect::<Vec<_>>()
        };
        let none = vec![false; SEGMENTS];
        assert_eq!(made(&slab.marks), none);
        assert_eq!(made(&slab.left), none);
        assert_eq!(made(&slab.summary), none);
        assert_eq!(Place::of(5000).segment, 1);
        assert!(slab.mark(Place::of(5000), false));
        let mut only_1 = none.clone();
        only_1[1] = true;
        assert_eq!(made(&slab.marks), only_1);
        assert_eq!(made(&slab.summary), only_1);
        assert_eq!(made(&slab.left), none, "no left mark yet");
        let (mut taken, mut left) = (Vec::new(), Vec::new());
        slab.take_marks(&mut taken, &mut left);
        assert_eq!(taken, [5000]);
        assert!(left.is_empty());
        assert!(slab.mark(Place::of(5001), true));
        assert_eq!(made(&slab.left), only_1);
        taken.clear();
        slab.take_marks(&mut taken, &mut left);
        assert!(taken.is_empty());
        assert_eq!(left, [5001]);
    }

    #[test]
    fn freed_keys_come_back_before_fresh_ones() {
        let slab = Slab::new();
        let mut keys = Vec::new();
        assert!(slab.take_keys(&mut keys));
        slab.give_keys([7, 3]);
        let mut again = Vec::new();
        assert!(slab.take_keys(&mut again));
        assert_eq!(again, [7, 3]);
        assert_eq!(slab.capacity(), BATCH as Key);
    }

    #[test]
    fn a_fresh_slot_is_free_and_empty() {
        let slab = Slab::new();
        let mut keys = Vec::new();
        assert!(slab.take_keys(&mut keys));
        for &key in &keys {
            assert_eq!(slab.word(key).load(Relaxed), 0);
            // SAFETY: no other thread knows the slab.
            assert!(unsafe { slab.with_body(key, |b| b.is_empty()) });
        }
    }
}
