//! One model, one property test, every core.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

const TICK: u64 = 1_000;

#[derive(Clone, Debug)]
enum Op {
    Insert(Key, u64),
    Remove(Key),
    Reschedule(Key, u64),
    Advance(u64),
    Purge(u64),
}

/// Operations on keys below `keys`, with these weights for inserts,
/// advances of time and purges (against 3 for the rest): with many keys,
/// many inserts, few advances and no purge, many timers come due at once.
fn op(keys: u32, insert: u32, advance: u32, purge: u32) -> impl Strategy<Value = Op> {
    // Delays from "already due" to many revolutions of a small ring, and
    // bursts: timers set together due in one or two ticks, far enough out to
    // sit above the hierarchical wheel's first level.
    let delay = prop_oneof![
        0..3 * TICK,
        0..64 * TICK,
        0..10_000 * TICK,
        (0..3u64).prop_map(|i| 300 * TICK + i * TICK * 2 / 5),
    ];
    prop_oneof![
        insert => (0..keys, delay.clone()).prop_map(|(k, d)| Op::Insert(k, d)),
        1 => (0..keys).prop_map(Op::Remove),
        2 => (0..keys, delay).prop_map(|(k, d)| Op::Reschedule(k, d)),
        advance => prop_oneof![0..2 * TICK, 0..100 * TICK, 0..20_000 * TICK].prop_map(Op::Advance),
        purge => any::<u64>().prop_map(Op::Purge),
    ]
}

/// The reference: a map from key to (deadline, sequence).
struct Model {
    /// Ticks of this length decide due-ness and order; 1 for exact order.
    tick: u64,
    exact: bool,
    timers: BTreeMap<Key, (u64, u64)>,
    seq: u64,
}

impl Model {
    fn order(&self, deadline: u64, seq: u64) -> (u64, u64) {
        (deadline.div_ceil(self.tick), seq)
    }

    fn due(&self, deadline: u64, now: u64) -> bool {
        if self.exact {
            deadline <= now
        } else {
            deadline.div_ceil(self.tick) <= now / self.tick
        }
    }

    /// When a poll would first return the earliest timer.
    fn first_due(&self) -> Option<u64> {
        let d = self.timers.values().map(|&(d, _)| d).min()?;
        Some(if self.exact {
            d
        } else {
            d.div_ceil(self.tick) * self.tick
        })
    }

    fn poll(&mut self, now: u64) -> Vec<Expired> {
        let mut due: Vec<_> = self
            .timers
            .iter()
            .filter(|(_, &(d, _))| self.due(d, now))
            .map(|(&k, &(d, s))| {
                (
                    self.order(d, s),
                    Expired {
                        key: k,
                        deadline: d,
                    },
                )
            })
            .collect();
        due.sort_by_key(|(o, _)| *o);
        for (_, e) in &due {
            self.timers.remove(&e.key);
        }
        due.into_iter().map(|(_, e)| e).collect()
    }
}

fn check(queue: &mut impl TimerQueue, mut model: Model, ops: Vec<Op>) {
    let mut now = 0u64;
    for op in ops {
        match op.clone() {
            Op::Insert(k, d) if !model.timers.contains_key(&k) => {
                model.seq += 1;
                model.timers.insert(k, (now + d, model.seq));
                // Half as new timers (see `TimerQueue::stage`).
                if k % 2 == 0 {
                    queue.stage(k, now + d);
                } else {
                    queue.insert(k, now + d);
                }
            }
            Op::Insert(..) => {}
            Op::Remove(k) => {
                assert_eq!(queue.remove(k), model.timers.remove(&k).is_some());
            }
            Op::Reschedule(k, d) => {
                let present = model.timers.contains_key(&k);
                if present {
                    model.seq += 1;
                    model.timers.insert(k, (now + d, model.seq));
                }
                assert_eq!(queue.reschedule(k, now + d), present);
            }
            Op::Advance(dt) => {
                now += dt;
                let mut got = Vec::new();
                queue.poll(now, &mut got);
                assert_eq!(got, model.poll(now), "poll at {now}");
                // A queue may spread work that is not due yet over polls (the
                // hierarchical wheel moves a large bucket down a chunk per
                // poll): a driver polls again while `next_deadline` has
                // passed. Nothing comes due, and the work ends.
                let mut polls = 0;
                while queue.next_deadline().is_some_and(|d| d <= now)
                    && model.first_due().is_none_or(|d| d > now)
                {
                    polls += 1;
                    assert!(polls <= 48, "still polling at {now} after {polls} polls");
                    got.clear();
                    queue.poll(now, &mut got);
                    assert_eq!(got, [], "poll again at {now}");
                }
            }
            Op::Purge(mask) => {
                let mut removed = Vec::new();
                queue.retain(|k| mask >> (k % 64) & 1 == 1, &mut removed);
                removed.sort_unstable();
                let want: Vec<Key> = model
                    .timers
                    .keys()
                    .copied()
                    .filter(|k| mask >> (k % 64) & 1 == 0)
                    .collect();
                for k in &want {
                    model.timers.remove(k);
                }
                assert_eq!(removed, want);
            }
        }
        assert_eq!(queue.len(), model.timers.len());
        for (&k, &(d, _)) in &model.timers {
            assert_eq!(queue.deadline(k), Some(d));
        }
        match (queue.next_deadline(), model.first_due()) {
            (None, None) => {}
            (Some(got), Some(first)) => {
                assert!(got <= first, "next {got} after {first}");
                // A driver polls, then sleeps until `got`: one in the past
                // with nothing due would have it poll in vain for ever.
                // (Between polls a removal may leave a bound that costs one
                // poll in vain, which then refreshes it.)
                let polled = matches!(op, Op::Advance(_));
                assert!(
                    !polled || got > now || first <= now,
                    "next {got} passed at {now} after a poll, nothing due"
                );
            }
            (got, want) => panic!("next_deadline {got:?}, model {want:?}"),
        }
    }
    let mut rest = Vec::new();
    queue.drain(&mut rest);
    let mut want: Vec<_> = model
        .timers
        .iter()
        .map(|(&k, &(d, s))| {
            (
                model.order(d, s),
                Expired {
                    key: k,
                    deadline: d,
                },
            )
        })
        .collect();
    want.sort_by_key(|(o, _)| *o);
    assert_eq!(rest, want.into_iter().map(|(_, e)| e).collect::<Vec<_>>());
    assert!(queue.is_empty());
}

fn model(tick: u64, exact: bool) -> Model {
    Model {
        tick,
        exact,
        timers: BTreeMap::new(),
        seq: 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Hundreds pending and dozens due at a time: a heap's poll goes in
    /// bulk (from 64 pending), and must come out as a pop at a time would.
    /// Bursts: many timers set at once, due in a tick or two, so that the
    /// hierarchical wheel's buckets grow large (moved down whole, or a
    /// chunk per poll).
    #[test]
    fn hierarchical_wheel_matches_the_model_when_many_come_due(
        ops in prop::collection::vec(op(400, 40, 1, 0), 1..1500),
        size in prop_oneof![Just(2usize), Just(4), Just(20)],
        exact in any::<bool>(),
    ) {
        let precision = if exact { Precision::Exact } else { Precision::Tick };
        let mut wheels = HierarchicalWheel::new(TICK, size, 0, precision).unwrap();
        check(&mut wheels, model(TICK, exact), ops);
    }

    #[test]
    fn indexed_heap_matches_the_model_when_many_come_due(
        ops in prop::collection::vec(op(400, 40, 1, 0), 1..1500)
    ) {
        check(&mut IndexedHeap::new(), model(1, true), ops);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn indexed_heap_matches_the_model(ops in prop::collection::vec(op(48, 3, 3, 1), 1..200)) {
        check(&mut IndexedHeap::new(), model(1, true), ops);
    }

    #[test]
    fn hashed_wheel_matches_the_model(
        ops in prop::collection::vec(op(48, 3, 3, 1), 1..200),
        buckets in prop_oneof![Just(1usize), Just(8), Just(64), Just(512)],
        exact in any::<bool>(),
    ) {
        let precision = if exact { Precision::Exact } else { Precision::Tick };
        let mut wheel = HashedWheel::new(TICK, buckets, 0, precision).unwrap();
        check(&mut wheel, model(TICK, exact), ops);
    }

    #[test]
    fn hierarchical_wheel_matches_the_model(
        ops in prop::collection::vec(op(48, 3, 3, 1), 1..200),
        size in prop_oneof![Just(2usize), Just(3), Just(20), Just(64)],
        exact in any::<bool>(),
    ) {
        let precision = if exact { Precision::Exact } else { Precision::Tick };
        let mut wheels = HierarchicalWheel::new(TICK, size, 0, precision).unwrap();
        check(&mut wheels, model(TICK, exact), ops);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// `next_wake` is the earliest `deadline + slack` while it has few
    /// entries to look at, and never later than that with many (a tie of
    /// thousands at one deadline): a timer without slack is never late.
    #[test]
    fn the_heap_wakes_for_the_earliest_deadline_plus_slack(
        // Dense (many within a slack of the head) or spread out.
        deadlines in prop_oneof![Just(40u64), Just(500)]
            .prop_flat_map(|spread| prop::collection::vec(0..spread, 1..300)),
        // Half of the timers periodic, or nearly all (then the visits run out).
        slacked in prop_oneof![Just(0.5), Just(0.98)]
            .prop_flat_map(|p| prop::collection::vec(prop::bool::weighted(p), 300)),
        slack in 0..200u64,
    ) {
        let mut heap = IndexedHeap::new();
        for (key, &d) in deadlines.iter().enumerate() {
            heap.insert(key as Key, d);
        }
        let slack_of = |key: Key| if slacked[key as usize] { slack } else { 0 };
        let exact = deadlines
            .iter()
            .enumerate()
            .map(|(key, &d)| d + slack_of(key as Key))
            .min()
            .unwrap();
        let wake = heap.next_wake(slack_of).unwrap();
        let head = *deadlines.iter().min().unwrap();
        prop_assert!(head <= wake && wake <= exact, "head {head}, wake {wake}, exact {exact}");
        // Every entry visited is due before the head's deadline plus the slack.
        if deadlines.iter().filter(|&&d| d < head + slack).count() <= 64 {
            prop_assert_eq!(wake, exact);
        }
    }
}

#[test]
fn an_empty_heap_never_wakes() {
    assert_eq!(IndexedHeap::new().next_wake(|_| 10), None);
}

#[test]
fn a_far_timer_does_not_make_the_wheel_report_every_tick() {
    let mut wheel = HashedWheel::new(TICK, 64, 0, Precision::Tick).unwrap();
    wheel.insert(0, 1_000_000 * TICK);
    assert_eq!(wheel.next_deadline(), Some(1_000_000 * TICK));
    let mut due = Vec::new();
    wheel.poll(500 * TICK, &mut due);
    assert!(due.is_empty());
    assert_eq!(wheel.next_deadline(), Some(1_000_000 * TICK));
}

/// A wheel that empties skips its cursor ahead without visiting the buckets:
/// the bounds those buckets kept from removed timers must not come back as a
/// deadline in the past once a new timer arrives (a driver would never
/// sleep, and a virtual clock would never settle).
#[test]
fn an_emptied_wheel_forgets_the_bounds_of_removed_timers() {
    for precision in [Precision::Tick, Precision::Exact] {
        let mut wheel = HashedWheel::new(TICK, 512, 0, precision).unwrap();
        wheel.insert(1, 5 * TICK);
        assert!(wheel.remove(1));
        let mut due = Vec::new();
        wheel.poll(100 * TICK, &mut due);
        wheel.insert(2, 600 * TICK);
        assert_eq!(wheel.next_deadline(), Some(600 * TICK), "{precision:?}");
    }
}

#[test]
fn bad_wheel_settings_are_errors() {
    assert_eq!(
        HashedWheel::new(0, 8, 0, Precision::Tick).unwrap_err(),
        WheelError::ZeroTick
    );
    assert_eq!(
        HashedWheel::new(1, 6, 0, Precision::Tick).unwrap_err(),
        WheelError::Buckets(6)
    );
    assert_eq!(
        HierarchicalWheel::new(1, 1, 0, Precision::Tick).unwrap_err(),
        WheelError::Buckets(1)
    );
}

/// A bucket of the hierarchical wheel moves down ahead of its first
/// deadline, `MOVE_CHUNK` timers per poll, so a poll never holds up a
/// timer that is due behind a whole cascade; it begins `MOVE_NS_PER_TIMER`
/// a timer ahead, so that the cascade is over by then, unless the level below
/// does not reach that far: then half a tick ahead.
#[test]
fn a_large_bucket_moves_down_a_chunk_per_poll_ahead_of_time() {
    use super::{MOVE_CHUNK, MOVE_NS_PER_TIMER};
    // Level 0 spans ticks [0, 4); level 1 has buckets of 4 ticks. Level 0
    // spans tick 9 from tick 6 on: at most 3 ticks ahead.
    // Half a tick ahead where 50 ns a timer is less, or too long to fit.
    for (n, last_keyed) in [(5, 4), (100, 64)] {
        let mut wheels = HierarchicalWheel::new(TICK, 4, 0, Precision::Exact).unwrap();
        for k in 0..n {
            wheels.insert(k, 9 * TICK + u64::from(k));
        }
        let lead = last_keyed * MOVE_NS_PER_TIMER;
        assert!(!(TICK / 2..=3 * TICK).contains(&lead));
        assert_eq!(wheels.next_deadline(), Some(9 * TICK - TICK / 2), "{n}");
    }
    let mut wheels = HierarchicalWheel::new(TICK, 4, 0, Precision::Exact).unwrap();
    let n = 7 * MOVE_CHUNK as u32;
    for k in 0..n {
        wheels.insert(k, 9 * TICK + u64::from(k)); // all in bucket [8, 12)
    }
    // Keyed again as the bucket doubles: last at its 16th timer.
    assert_eq!(
        wheels.next_deadline(),
        Some(9 * TICK - 16 * MOVE_NS_PER_TIMER)
    );
    let now = 9 * TICK - TICK / 4;
    let mut due = Vec::new();
    let mut polls = 0;
    while wheels.next_deadline().is_some_and(|d| d <= now) {
        wheels.poll(now, &mut due);
        polls += 1;
        assert!(due.is_empty() && polls <= 7, "poll {polls}: {due:?}");
    }
    assert_eq!(polls, 7, "one chunk per poll");
    assert_eq!(wheels.next_deadline(), Some(9 * TICK));
    wheels.insert(n, 9 * TICK); // due with the first, after it in order
    wheels.poll(10 * TICK, &mut due);
    let keys: Vec<Key> = due.iter().map(|e| e.key).collect();
    // Tick 9 (key 0, then the late insert), then tick 10 in order.
    let mut want: Vec<Key> = (0..n).collect();
    want.insert(1, n);
    assert_eq!(keys, want);
}

/// A large bucket whose timers all fall due in one tick moves down a level
/// whole, in one poll ahead of time (one splice, not a timer at a time), and
/// they come out in order at their deadline: a burst is not held up by its
/// own cascade.
#[test]
fn a_large_bucket_due_in_one_tick_moves_down_whole() {
    use super::{MOVE_CHUNK, MOVE_NS_PER_TIMER};
    // Level 0 spans ticks [0, 4); level 1 has buckets of 4 ticks.
    let mut wheels = HierarchicalWheel::new(TICK, 4, 0, Precision::Exact).unwrap();
    let n = 7 * MOVE_CHUNK as u32;
    for k in 0..n {
        wheels.insert(k, 9 * TICK - u64::from(k % 2)); // all in tick 9
    }
    assert_eq!(
        wheels.next_deadline(),
        Some(9 * TICK - 1 - 16 * MOVE_NS_PER_TIMER)
    );
    let mut due = Vec::new();
    wheels.poll(9 * TICK - TICK / 4, &mut due);
    assert!(due.is_empty());
    assert_eq!(
        wheels.next_deadline(),
        Some(9 * TICK - 1),
        "moved down in one poll"
    );
    wheels.poll(9 * TICK, &mut due);
    let keys: Vec<Key> = due.iter().map(|e| e.key).collect();
    assert_eq!(keys, (0..n).collect::<Vec<_>>());
}

/// New timers wait in the hierarchical wheel's staging list, in no bucket
/// and out of the delay queue, until the earliest may come due; then all go
/// to their buckets at once. A removal that empties the list takes its
/// bound along; one that does not leaves it. More than a chunk move a chunk
/// a poll, from what moving them may take ahead of the earliest, and the
/// last chunk goes with the poll that runs it.
#[test]
fn new_timers_wait_unplaced_until_the_first_may_be_due() {
    use super::MOVE_CHUNK;
    let mut wheels = HierarchicalWheel::new(TICK, 4, 0, Precision::Exact).unwrap();
    wheels.stage(1, 600 * TICK);
    wheels.stage(2, 700 * TICK);
    assert_eq!(wheels.queued_buckets(), 0, "in no bucket yet");
    assert_eq!(wheels.levels(), 5, "the levels they need are made");
    assert!(wheels.remove(1));
    assert_eq!(
        wheels.next_deadline(),
        Some(600 * TICK),
        "a staged bound stays"
    );
    let mut due = Vec::new();
    wheels.poll(598 * TICK, &mut due);
    assert_eq!(wheels.queued_buckets(), 0, "not within a tick yet");
    wheels.poll(599 * TICK, &mut due);
    assert_eq!(due, []);
    assert_eq!(wheels.queued_buckets(), 1);
    assert_eq!(
        wheels.next_deadline(),
        Some(700 * TICK),
        "exact once placed"
    );
    wheels.stage(3, 650 * TICK);
    assert!(wheels.remove(3));
    assert_eq!(
        wheels.next_deadline(),
        Some(700 * TICK),
        "emptied: no bound"
    );
    wheels.poll(700 * TICK, &mut due);
    assert_eq!(
        due,
        [Expired {
            key: 2,
            deadline: 700 * TICK
        }]
    );
    due.clear();

    // 1 ns ticks and a level 0 of 65,536: every timer below has a bucket of
    // its own there, so only the staging list decides when polls come.
    let mut wheels = HierarchicalWheel::new(1, 1 << 16, 0, Precision::Exact).unwrap();
    let (first, n) = (50_000, 7 * MOVE_CHUNK as u64);
    let polls = polls_ahead_of_staged(&mut wheels, first, n);
    assert_eq!(polls, 6, "the last chunk goes with the first timer");
    let mut due = Vec::new();
    wheels.poll(first + n, &mut due);
    let keys: Vec<Key> = due.iter().map(|e| e.key).collect();
    assert_eq!(keys, (0..n as Key).collect::<Vec<_>>());
}

/// Stages `n` timers due 1 ns apart from `first`, then polls `queue` at
/// each next deadline before `first`: the first of those polls comes
/// [`MOVE_NS_PER_TIMER`](super::MOVE_NS_PER_TIMER) a timer ahead, and none
/// gives a timer. Returns how many polls there were.
pub(super) fn polls_ahead_of_staged(queue: &mut impl TimerQueue, first: u64, n: u64) -> usize {
    for k in 0..n {
        queue.stage(k as Key, first + k);
    }
    let mut at = queue.next_deadline().expect("timers staged");
    assert_eq!(at, first - n * super::MOVE_NS_PER_TIMER);
    let (mut due, mut polls) = (Vec::new(), 0);
    while at < first {
        queue.poll(at, &mut due);
        assert_eq!(due, [], "none due yet");
        polls += 1;
        at = queue.next_deadline().expect("timers staged");
    }
    polls
}
