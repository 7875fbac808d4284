//! The state words of a scheduler's timers, readable without its lock.
//!
//! A timer is a small integer *key*. Its state word (see [`crate::state`])
//! lives here, in segments that never move once allocated, so a handle on
//! any thread reads and CASes it with no lock while the driver grows the
//! table. Segment `s` holds `4096 << s` words, so 20 segments cover every
//! key below 2^31 and a lookup is a shift and two loads. Segments are
//! allocated zeroed, so untouched capacity costs no resident memory, and
//! the words of a million timers (8 MB) fit in a typical L3 cache: a cancel
//! in random order rarely misses it.
//!
//! Keys whose last holder let go off the lock (a handle dropped on some
//! thread) go onto a lock-free stack linked through their own words; the
//! allocator, which runs under the scheduler's lock, takes the whole stack
//! at once when its private free list runs dry.

use crate::sync::atomic::AtomicU64;
use crate::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::OnceLock;

use crate::core::Key;
use crate::state;

use crate::core::MAX_KEYS;

const FIRST_BITS: u32 = 12;
/// Enough segments for every key below [`MAX_KEYS`].
const SEGMENTS: usize = 20;

/// The state words of every timer. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Slots {
    segments: [OnceLock<Box<[AtomicU64]>>; SEGMENTS],
    /// Keys freed off the lock: the first key plus one, or 0.
    freed: AtomicU64,
}

fn locate(key: Key) -> (usize, usize) {
    let i = u64::from(key) + (1 << FIRST_BITS);
    let bits = 63 - i.leading_zeros();
    let segment = (bits - FIRST_BITS) as usize;
    (segment, (i - (1 << bits)) as usize)
}

impl Slots {
    pub(crate) fn new() -> Slots {
        Slots {
            segments: Default::default(),
            freed: AtomicU64::new(0),
        }
    }

    /// The word of a key that was handed out.
    pub(crate) fn word(&self, key: Key) -> &AtomicU64 {
        let (segment, offset) = locate(key);
        let words = self.segments[segment]
            .get()
            .expect("a key is only handed out once its segment exists");
        &words[offset]
    }

    /// Makes `key`'s word exist (the allocator calls this before using a
    /// fresh key). False if `key` is past [`MAX_KEYS`].
    pub(crate) fn reserve(&self, key: Key) -> bool {
        if key as usize >= MAX_KEYS {
            return false;
        }
        let (segment, _) = locate(key);
        self.segments[segment].get_or_init(|| {
            std::iter::repeat_with(|| AtomicU64::new(0))
                .take((1 << FIRST_BITS) << segment)
                .collect()
        });
        true
    }

    /// Puts a key whose last holder let go onto the freed stack.
    pub(crate) fn push_freed(&self, key: Key) {
        let word = self.word(key);
        let mut head = self.freed.load(Acquire);
        loop {
            word.store(state::free_link(head), Relaxed);
            match self
                .freed
                .compare_exchange_weak(head, u64::from(key) + 1, AcqRel, Acquire)
            {
                Ok(_) => return,
                Err(actual) => head = actual,
            }
        }
    }

    /// Moves every key on the freed stack into `free`.
    pub(crate) fn take_freed(&self, free: &mut Vec<Key>) {
        if self.freed.load(Relaxed) == 0 {
            return; // the common case: no swap, which is a locked write
        }
        let mut next = self.freed.swap(0, AcqRel);
        while next != 0 {
            let key = (next - 1) as Key;
            free.push(key);
            next = state::link_of(self.word(key).load(Acquire));
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn keys_map_to_distinct_words() {
        let slots = Slots::new();
        for key in [0, 1, 4095, 4096, 12287, 12288, 1 << 20] {
            assert!(slots.reserve(key));
            slots.word(key).store(u64::from(key), Relaxed);
        }
        for key in [0, 1, 4095, 4096, 12287, 12288, 1 << 20] {
            assert_eq!(slots.word(key).load(Relaxed), u64::from(key));
        }
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(4096), (1, 0));
        assert_eq!(
            locate(MAX_KEYS as Key - 1),
            (SEGMENTS - 1, 4095),
            "the last key is early in the last segment"
        );
        assert!(!slots.reserve(MAX_KEYS as Key));
    }

    #[test]
    fn freed_keys_come_back() {
        let slots = Slots::new();
        for key in 0..10 {
            slots.reserve(key);
        }
        for key in [3, 7, 1] {
            slots.push_freed(key);
        }
        let mut free = Vec::new();
        slots.take_freed(&mut free);
        assert_eq!(free, [1, 7, 3]);
        slots.take_freed(&mut free);
        assert_eq!(free.len(), 3);
    }
}
