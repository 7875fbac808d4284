//! What a wheel's poll hands out: the timers it expired, in (tick,
//! submission sequence) order, written straight into the caller's vector.

use super::Expired;

/// Appends expired timers to the caller's vector and leaves the new ones in
/// (tick, sequence number) order. They come in that order as a rule (one
/// bucket's list is in submission order): then nothing is copied or sorted,
/// and a burst of a million costs no buffer of its own. Otherwise (overdue
/// timers, several ticks' buckets in one poll) [`Due::finish`] sorts them,
/// with a sort that merges the runs they came in (a few, as a rule).
pub(super) struct Due<'a> {
    out: &'a mut Vec<Expired>,
    start: usize,
    last: Option<(u64, u32)>,
    sorted: bool,
}

impl<'a> Due<'a> {
    pub(super) fn new(out: &'a mut Vec<Expired>) -> Due<'a> {
        let start = out.len();
        Due {
            out,
            start,
            last: None,
            sorted: true,
        }
    }

    /// Appends `e`, whose tick and sequence number are `order`.
    pub(super) fn push(&mut self, order: (u64, u32), e: Expired) {
        self.sorted &= self.last.is_none_or(|last| last < order);
        self.last = Some(order);
        self.out.push(e);
    }

    /// Puts the appended timers in order, if they did not come in order;
    /// `order` gives each one's tick and sequence number again (a wheel's
    /// nodes keep them after the unlink).
    pub(super) fn finish(self, order: impl Fn(&Expired) -> (u64, u32)) {
        if self.sorted {
            return;
        }
        let new = &mut self.out[self.start..];
        let mut keyed: Vec<((u64, u32), Expired)> = new.iter().map(|e| (order(e), *e)).collect();
        keyed.sort_by_key(|&(order, _)| order);
        for (slot, (_, e)) in new.iter_mut().zip(keyed) {
            *slot = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: u32) -> Expired {
        Expired { key, deadline: 0 }
    }

    #[test]
    fn in_order_stays_as_it_came_and_out_of_order_is_sorted_after_what_was_there() {
        let mut out = vec![e(99)];
        let mut due = Due::new(&mut out);
        for (order, key) in [((1, 5), 1), ((1, 7), 2), ((2, 1), 3)] {
            due.push(order, e(key));
        }
        due.finish(|_| unreachable!("in order: nothing to sort"));
        assert_eq!(out.iter().map(|e| e.key).collect::<Vec<_>>(), [99, 1, 2, 3]);

        let orders = [(0, 0), (3, 1), (1, 9), (1, 2), (2, 0)];
        let mut due = Due::new(&mut out);
        for key in 1..=4 {
            due.push(orders[key as usize], e(key));
        }
        due.finish(|e| orders[e.key as usize]);
        let keys: Vec<u32> = out.iter().map(|e| e.key).collect();
        assert_eq!(
            keys,
            [99, 1, 2, 3, 3, 2, 4, 1],
            "the new ones sorted, the old left"
        );
    }
}
