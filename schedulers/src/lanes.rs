//! How callers hand work to a scheduler's driver without its lock: one
//! *lane* per calling thread (up to [`LANES`] lanes, shared beyond that).
//!
//! A lane holds what its threads did since the driver last looked: new
//! timers (key and deadline) and resets (key and deadline); and a few free
//! keys for its next timers. (Cancels of timers the driver holds are marks
//! in the slab, see `Slab::mark`.) A caller takes only its own lane's lock,
//! which no other caller shares unless more threads than lanes schedule at
//! once, and the driver takes it when it wakes: so a
//! schedule costs one uncontended lock round trip and a push, never the
//! driver's lock.
//!
//! A reset goes to the lane of its task's key instead ([`Lanes::of_key`]),
//! and its CAS happens under that lane's lock: every reset of a task then
//! sits in one lane in the order of its CAS, so the driver, reading lanes
//! first in first out, applies the last one last.

use crate::core::Key;
use crate::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use crate::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};

/// A lane's lock: held for a few pushes, so a caller that finds it taken
/// spins a moment, then yields its time slice. A round trip is one locked
/// instruction (std's `Mutex` takes two: its unlock is a swap).
#[cfg(not(schedulers_loom))]
type Mutex<T> = spin::mutex::SpinMutex<T, spin::relax::Yield>;
#[cfg(not(schedulers_loom))]
type MutexGuard<'a, T> = spin::mutex::SpinMutexGuard<'a, T>;

#[cfg(not(schedulers_loom))]
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock()
}

/// Under the model (`crate::wake`), loom's mutex: a spin loop would
/// never let loom's scheduler switch threads.
#[cfg(schedulers_loom)]
type Mutex<T> = loom::sync::Mutex<T>;
#[cfg(schedulers_loom)]
type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

#[cfg(schedulers_loom)]
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().expect("no model thread panics holding a lane")
}

/// Lanes per scheduler: threads beyond this many share lanes.
#[cfg(not(schedulers_loom))]
pub(crate) const LANES: usize = 16;
/// Two under the model (`crate::wake`): every lane the driver looks at is
/// a lock loom interleaves.
#[cfg(schedulers_loom)]
pub(crate) const LANES: usize = 2;

/// Free keys a lane keeps; past this, it returns a batch to the pool.
pub(crate) const KEEP: usize = 4 * crate::slab::BATCH;

/// Entries for the driver in one lane at which the caller wakes the driver
/// whatever its plans: a bound on what the lanes hold (256 KB of entries a
/// lane), also while a virtual clock stands still; one wake-up per 16 Ki
/// timers a thread sets.
pub(crate) const LANE_NUDGE: usize = 16 * 1024;

/// The key of an entry taken back out by a canceller (see [`Spot`]).
pub(crate) const TAKEN_BACK: Key = Key::MAX;

/// Where a new timer's entry sits in a lane until the driver takes it in:
/// its handle keeps it, so that a cancel before then can take the entry
/// back out of the lane and leave the driver nothing to do. Only a hint:
/// the canceller checks that the entry there is still its key's (a key
/// has one incarnation while a handle holds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spot(u32);

impl Spot {
    /// No hint.
    pub(crate) const NONE: Spot = Spot(u32::MAX);
    const LANE_BITS: u32 = 4;
    /// Positions past 128 Ki (a lane the driver has not emptied for long)
    /// get no hint.
    const POSITION_BITS: u32 = 17;
    const EPOCH_BITS: u32 = 32 - Spot::LANE_BITS - Spot::POSITION_BITS;

    /// The entry at `position` in `lane`, in the lane's `epoch`-th filling
    /// (see `Slot::drains`; kept modulo 2^11, so an old spot may match by
    /// chance, which costs a look under the lock and nothing else).
    fn new(lane: usize, position: usize, epoch: u32) -> Spot {
        if position >= 1 << Spot::POSITION_BITS {
            return Spot::NONE;
        }
        let epoch = epoch & ((1 << Spot::EPOCH_BITS) - 1);
        let spot = epoch << (Spot::LANE_BITS + Spot::POSITION_BITS)
            | (position as u32) << Spot::LANE_BITS
            | lane as u32;
        match Spot(spot) {
            Spot::NONE => Spot::NONE,
            spot => spot,
        }
    }

    fn lane(self) -> usize {
        (self.0 & ((1 << Spot::LANE_BITS) - 1)) as usize
    }

    fn position(self) -> usize {
        ((self.0 >> Spot::LANE_BITS) & ((1 << Spot::POSITION_BITS) - 1)) as usize
    }

    fn epoch(self) -> u32 {
        self.0 >> (Spot::LANE_BITS + Spot::POSITION_BITS)
    }
}

/// A new timer: its key and deadline (ticks).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Submitted {
    pub(crate) key: Key,
    pub(crate) deadline: u64,
}

/// A reset: the key and its new deadline.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moved {
    pub(crate) key: Key,
    pub(crate) deadline: u64,
}

/// What a lane holds. See the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct Lane {
    pub(crate) submitted: Vec<Submitted>,
    pub(crate) moved: Vec<Moved>,
    /// Timers cancelled before the driver took them in, taken back out of
    /// this lane (so the driver never counts them).
    pub(crate) taken_back: u64,
    /// New calendar tasks' first deadlines by the wall clock.
    pub(crate) calendars: Vec<(Key, crate::calendar::jiff::Timestamp)>,
    /// Keys this lane hands out next.
    pub(crate) free: Vec<Key>,
}

impl Lane {
    /// Entries for the driver.
    pub(crate) fn len(&self) -> usize {
        self.submitted.len() + self.moved.len()
    }

    /// True if the lane holds nothing for the driver.
    pub(crate) fn is_clean(&self) -> bool {
        self.submitted.is_empty() && self.moved.is_empty()
    }
}

/// One lane and whether the driver has work in it, on its own cache lines.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Slot {
    lane: Mutex<Lane>,
    /// Set by the caller that puts the first entry for the driver in a
    /// clean lane; cleared by the driver when it empties it.
    dirty: AtomicBool,
    /// The earliest deadline of the lane's entries (`NEVER` when empty):
    /// the driver never sleeps past it.
    earliest: AtomicU64,
    /// How many times the driver took the new timers out of this lane: a
    /// canceller whose spot names an earlier filling knows its entry is
    /// gone without taking the lock.
    drains: AtomicU32,
}

/// Every lane of a scheduler.
#[derive(Debug)]
pub(crate) struct Lanes {
    slots: Box<[Slot]>,
}

/// How many live threads hold each lane number. A new thread takes the
/// one fewest hold, so threads share a lane only while more than
/// [`LANES`] live at once, however many came and went before (numbered in
/// turn, a pool that replaces its threads would wrap onto the lanes of
/// threads still running).
#[derive(Debug)]
struct Census {
    held: [u32; LANES],
}

impl Census {
    /// A lane for a new thread: the lowest-numbered of those held least.
    fn take(&mut self) -> usize {
        let lane = (0..LANES).min_by_key(|&i| self.held[i]).unwrap_or(0);
        self.held[lane] += 1;
        lane
    }

    /// A thread holding `lane` ended.
    fn give(&mut self, lane: usize) {
        self.held[lane] = self.held[lane].saturating_sub(1);
    }
}

static CENSUS: std::sync::Mutex<Census> = std::sync::Mutex::new(Census { held: [0; LANES] });

fn census() -> std::sync::MutexGuard<'static, Census> {
    CENSUS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A thread's lane number, given back to the census when the thread ends.
struct Tenancy(usize);

impl Drop for Tenancy {
    fn drop(&mut self) {
        census().give(self.0);
    }
}

thread_local! {
    /// This thread's lane, the same in every scheduler.
    static MINE: Tenancy = Tenancy(census().take());
}

/// A caller's hold on its lane: the first entry pushed through it marks
/// the lane dirty when it was clean.
pub(crate) struct Held<'a> {
    pub(crate) lane: MutexGuard<'a, Lane>,
    slot: &'a Slot,
    index: usize,
    /// The lane was clean, and this hold has not marked it dirty yet.
    clean: bool,
}

impl Held<'_> {
    /// Pushes a new timer's entry; returns where it sits.
    pub(crate) fn submit(&mut self, entry: Submitted) -> Spot {
        self.lane.submitted.push(entry);
        self.dirty();
        self.due_by(entry.deadline);
        let epoch = self.slot.drains.load(Relaxed);
        Spot::new(self.index, self.lane.submitted.len() - 1, epoch)
    }

    /// Pushes a reset's entry.
    pub(crate) fn reset(&mut self, entry: Moved) {
        self.lane.moved.push(entry);
        self.dirty();
        self.due_by(entry.deadline);
    }

    /// Marks a clean lane dirty, before its earliest deadline moves: a
    /// driver that sees the deadline (and so will not sleep) sees the mark,
    /// and waits for this lane's lock to take the entry, instead of going
    /// round its loop until this caller lets go.
    fn dirty(&mut self) {
        if std::mem::take(&mut self.clean) {
            self.slot.dirty.store(true, Release);
        }
    }

    /// Gives the newest reset of `key` in this lane the new deadline (when
    /// the most resets are on their way already); false if none is here.
    /// An earlier deadline lowers the lane's earliest, as a push does: a
    /// driver going to sleep must see it.
    pub(crate) fn retarget(&mut self, key: Key, deadline: u64) -> bool {
        let Some(newest) = self.lane.moved.iter_mut().rev().find(|m| m.key == key) else {
            return false;
        };
        newest.deadline = deadline;
        self.due_by(deadline);
        true
    }

    /// Lowers the lane's earliest deadline to `deadline` if it is earlier.
    /// (A locked store only then, which with random deadlines is rare.)
    fn due_by(&self, deadline: u64) {
        if deadline < self.slot.earliest.load(Relaxed) {
            // SeqCst: against the driver's store of its wake-up and its look
            // at the lanes' earliest deadlines before it sleeps.
            self.slot.earliest.store(deadline, SeqCst);
        }
    }

    /// The entry of `key` at `spot`, if it is still in this lane.
    pub(crate) fn at(&mut self, spot: Spot, key: Key) -> Option<&mut Submitted> {
        debug_assert_eq!(spot.lane(), self.index);
        self.lane
            .submitted
            .get_mut(spot.position())
            .filter(|entry| entry.key == key)
    }
}

/// The calling thread's lane number, the same in every scheduler.
pub(crate) fn mine() -> usize {
    // Lane 0 while the thread ends (a handle dropped by another
    // thread-local's destructor): any lane works, it may be shared.
    MINE.try_with(|t| t.0).unwrap_or(0)
}

impl Lanes {
    pub(crate) fn new() -> Lanes {
        Lanes {
            slots: (0..LANES)
                .map(|_| Slot {
                    lane: Mutex::new(Lane::default()),
                    dirty: AtomicBool::new(false),
                    earliest: AtomicU64::new(u64::MAX),
                    drains: AtomicU32::new(0),
                })
                .collect(),
        }
    }

    /// The calling thread's lane, locked.
    pub(crate) fn mine(&self) -> Held<'_> {
        self.hold(mine())
    }

    /// The lane of every reset of `key`, locked.
    pub(crate) fn of_key(&self, key: Key) -> Held<'_> {
        self.hold(key as usize % LANES)
    }

    /// The lane `spot` names, locked, if its entry may still be there:
    /// `None` for no spot, or if the driver emptied the lane since (read
    /// without the lock: the count only grows under it, after the entries
    /// left).
    pub(crate) fn of_spot(&self, spot: Spot) -> Option<Held<'_>> {
        if spot == Spot::NONE {
            return None;
        }
        let drains = self.slots[spot.lane()].drains.load(Relaxed);
        let epoch = drains & ((1 << Spot::EPOCH_BITS) - 1);
        (epoch == spot.epoch()).then(|| self.hold(spot.lane()))
    }

    /// Timers cancelled before the driver took them in, in every lane.
    pub(crate) fn taken_back(&self) -> u64 {
        self.slots.iter().map(|s| lock(&s.lane).taken_back).sum()
    }

    fn hold(&self, i: usize) -> Held<'_> {
        let slot = &self.slots[i];
        let lane = lock(&slot.lane);
        let clean = lane.is_clean();
        Held {
            lane,
            slot,
            index: i,
            clean,
        }
    }

    /// True if any lane may hold work for the driver.
    pub(crate) fn any_dirty(&self) -> bool {
        self.slots.iter().any(|s| s.dirty.load(Acquire))
    }

    /// The earliest deadline of any lane's entries (`u64::MAX` if none).
    pub(crate) fn earliest(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.earliest.load(SeqCst))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Waits until no caller holds a lane: every push begun before this
    /// call is then in its lane.
    pub(crate) fn barrier(&self) {
        for slot in self.slots.iter() {
            drop(lock(&slot.lane));
        }
    }

    /// Every lane locked at once, in order (callers take one lane at a
    /// time, so this cannot deadlock with them). Clears the dirty marks
    /// and counts a filling of each lane with new timers in it: the caller
    /// empties the lanes.
    pub(crate) fn all(&self) -> Vec<MutexGuard<'_, Lane>> {
        self.slots
            .iter()
            .map(|s| {
                let lane = lock(&s.lane);
                s.dirty.store(false, Relaxed);
                s.earliest.store(u64::MAX, Relaxed);
                if !lane.submitted.is_empty() {
                    // Under the lock, the only writer.
                    s.drains
                        .store(s.drains.load(Relaxed).wrapping_add(1), Relaxed);
                }
                lane
            })
            .collect()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_new_thread_takes_a_lane_no_live_thread_holds() {
        let mut census = Census { held: [0; LANES] };
        let first: Vec<usize> = (0..LANES).map(|_| census.take()).collect();
        assert_eq!(first, (0..LANES).collect::<Vec<_>>(), "one thread a lane");
        census.give(5);
        census.give(9);
        assert_eq!(census.take(), 5, "a lane given back is taken again");
        assert_eq!(census.take(), 9);
        assert_eq!(census.take(), 0, "past 16 live threads, lanes are shared");
        assert_eq!(census.held[0], 2);
        census.give(3);
        assert_eq!(census.take(), 3, "not 1: a lane no live thread holds");
    }

    #[test]
    fn a_spot_names_lane_position_and_filling() {
        let spot = Spot::new(5, 1234, 77);
        assert_eq!((spot.lane(), spot.position(), spot.epoch()), (5, 1234, 77));
        let wrapped = Spot::new(15, 0, 1 << Spot::EPOCH_BITS);
        assert_eq!(wrapped.epoch(), 0, "fillings are counted modulo 2^11");
        assert_eq!(Spot::new(0, 1 << Spot::POSITION_BITS, 0), Spot::NONE);
        let all_ones = (1 << Spot::EPOCH_BITS) - 1;
        assert_eq!(
            Spot::new(15, (1 << Spot::POSITION_BITS) - 1, all_ones),
            Spot::NONE
        );
    }

    /// A reset moved in its lane to an earlier deadline lowers the lane's
    /// earliest: a driver about to sleep past it looks there (it used to
    /// keep the first deadline, and a driver could sleep through the move).
    #[test]
    fn a_reset_moved_earlier_in_its_lane_lowers_its_earliest_deadline() {
        let lanes = Lanes::new();
        let mut held = lanes.of_key(3);
        held.reset(Moved {
            key: 3,
            deadline: 70,
        });
        assert!(held.retarget(3, 5));
        assert!(!held.retarget(4, 5), "no reset of 4 here");
        drop(held);
        assert_eq!(lanes.earliest(), 5);
    }

    /// A canceller finds its entry through its spot until the driver
    /// empties the lane; after that, without taking the lane's lock.
    #[test]
    fn a_spot_is_stale_once_its_lane_was_emptied() {
        let lanes = Lanes::new();
        let mut held = lanes.mine();
        let spot = held.submit(Submitted {
            key: 7,
            deadline: 5,
        });
        drop(held);
        let found = lanes
            .of_spot(spot)
            .and_then(|mut h| h.at(spot, 7).map(|e| e.key));
        assert_eq!(found, Some(7));
        for mut lane in lanes.all() {
            lane.submitted.clear();
        }
        assert!(lanes.of_spot(spot).is_none(), "emptied since");
        assert!(lanes.of_spot(Spot::NONE).is_none());
        let mut held = lanes.mine();
        let next = held.submit(Submitted {
            key: 8,
            deadline: 5,
        });
        drop(held);
        assert!(lanes.of_spot(next).is_some(), "the next filling");
    }
}
