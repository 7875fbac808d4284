//! The wheels' staging list: new timers linked in one list of the wheel's
//! [`Lists`], in the order they came, until the earliest may come due,
//! instead of placed in their buckets at once. A timer cancelled before
//! then (an ack or request timeout cancelled in time, the common case) is
//! never placed, and a purge reads the staged ones in key order.
//!
//! The list keeps a lower bound of its deadlines and an upper bound of its
//! length; a wheel counts [`Staging::unstage_at`] in its next deadline, and
//! a poll places what [`Staging::take`] gives it: all of them once the
//! earliest may be due, or, more than a chunk, a chunk a poll from
//! [`move_from`] on.

use super::list::Lists;
use super::{move_from, Key, MOVE_CHUNK};

/// A wheel's staging list and its bounds.
#[derive(Debug)]
pub(crate) struct Staging {
    /// Its number among the wheel's lists.
    list: u32,
    /// A lower bound of the staged timers' deadlines (`u64::MAX` with none).
    earliest: u64,
    /// Staged timers, at most (a removal does not count down).
    len: u64,
}

impl Staging {
    /// An empty staging list: list `list` of the wheel's lists.
    pub(crate) fn new(list: u32) -> Staging {
        Staging {
            list,
            earliest: u64::MAX,
            len: 0,
        }
    }

    /// Its number among the wheel's lists.
    pub(crate) fn list(&self) -> u32 {
        self.list
    }

    /// Staged timers, at most.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Links `key` (timing set, due at `deadline`) at the end.
    pub(crate) fn push(&mut self, lists: &mut Lists, key: Key, deadline: u64) {
        lists.push_back(self.list, key);
        self.earliest = self.earliest.min(deadline);
        self.len += 1;
    }

    /// When a poll begins to move the staged timers (see [`move_from`]);
    /// `u64::MAX` with none.
    pub(crate) fn unstage_at(&self) -> u64 {
        move_from(self.earliest, self.len)
    }

    /// Unlinks into `out`, oldest first, the staged timers a poll at `now`
    /// places: all of them if the earliest may be due by the end of the
    /// tick after `now`'s (ticks of `tick` ns), else a chunk once
    /// [`Staging::unstage_at`] has come, else none. Forgets the bounds once
    /// none is left.
    pub(crate) fn take(&mut self, lists: &mut Lists, now: u64, tick: u64, out: &mut Vec<Key>) {
        let n = if self.earliest == u64::MAX {
            return;
        } else if self.earliest.div_ceil(tick) <= now / tick + 1 {
            usize::MAX
        } else if self.unstage_at() <= now {
            MOVE_CHUNK
        } else {
            return;
        };
        for _ in 0..n {
            let Some(key) = lists.pop_front(self.list) else {
                break;
            };
            out.push(key);
            self.len = self.len.saturating_sub(1);
        }
        if lists.is_empty(self.list) {
            self.vacate();
        }
    }

    /// Forgets the bounds: the list was emptied (by a removal, a drain, a
    /// purge that stages again).
    pub(crate) fn vacate(&mut self) {
        self.earliest = u64::MAX;
        self.len = 0;
    }
}
