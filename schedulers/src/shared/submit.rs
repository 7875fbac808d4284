//! Submitting: a task becomes a key in the caller's lane, on its way to
//! the driver's queue.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use super::calendar::wall_after;
use super::{Shared, When};
use crate::calendar::jiff::Timestamp;
use crate::calendar::{Calendar, CalendarError};
use crate::clock::Timebase;
use crate::core::Key;
use crate::error::{Error, Kind, Rejected};
use crate::lanes::{Held, Spot, Submitted, LANE_NUDGE};
use crate::state;
use crate::task::Task;

impl Shared {
    /// Hands `task`, due at `when`, to the driver; returns its key, holding
    /// one reference for the caller's handle, and where its entry waits
    /// for the driver; or the task with the reason it was refused.
    pub(crate) fn submit(&self, when: When, task: Task) -> Result<(Key, Spot), Rejected> {
        let rule = task.body.rule();
        let periodic = rule.is_some();
        let calendar = rule.and_then(|rule| rule.calendar.as_deref());
        let (deadline, first_fire) = match self.first_deadline(when, calendar) {
            Ok(first) => first,
            Err(e) => return Err(Rejected::new(e, Some(task))),
        };
        if self.limited() && self.pending.fetch_add(1, SeqCst) >= self.pending_limit {
            self.pending.fetch_sub(1, SeqCst);
            let error = Error::new(Kind::PendingLimit(self.pending_limit));
            return Err(Rejected::new(error, Some(task)));
        }
        let mut held = self.lanes.mine();
        // Under the lane's lock: `shutdown` takes every lane's lock after
        // it sets the flag, so it sees this push or we see the flag.
        if self.is_shutdown() {
            drop(held);
            self.unpend();
            return Err(Rejected::new(Error::new(Kind::Shutdown), Some(task)));
        }
        let key = match held.lane.free.pop() {
            Some(key) => key,
            None if self.slab.take_keys(&mut held.lane.free) => {
                held.lane.free.pop().expect("a batch of keys was taken")
            }
            None => {
                drop(held);
                self.unpend();
                let error = Error::new(Kind::PendingLimit(self.slab.capacity() as usize));
                return Err(Rejected::new(error, Some(task)));
            }
        };
        // SAFETY: a free key: no other thread holds its body until the
        // state word is armed and the key pushed. Its body is empty (a key
        // is emptied before it is freed), so there is nothing to drop.
        let word = unsafe {
            self.slab.with_cell(key, |word, body| {
                debug_assert!(body.is_empty());
                std::mem::forget(std::mem::replace(body, task.body));
                word
            })
        };
        state::arm(word, periodic, first_fire.is_some());
        let spot = held.submit(Submitted { key, deadline });
        if let Some(due) = first_fire {
            held.lane.calendars.push((key, due));
        }
        self.after_push(deadline, periodic, held);
        Ok((key, spot))
    }

    /// After a caller pushed work for the driver (due at `deadline`) into the
    /// lane it `held`: releases the lane, and wakes the driver if the work
    /// is due before its planned wake-up, or if this push filled the lane to
    /// [`LANE_NUDGE`] (so that what waits in lanes stays bounded, even while
    /// time stands still). Else the driver takes it in when it wakes by
    /// itself: it never sleeps past the earliest deadline in a lane (see
    /// `Shared::wait`).
    ///
    /// A push adds one entry and only the driver takes entries out, so a
    /// lane reaches the bound once per filling: one nudge, not one per push
    /// while a descheduled driver has yet to empty it (with more callers
    /// than cores, those took the driver's lock thousands of times a
    /// filling).
    ///
    /// A periodic task may start `periodic_slack` late, unless it is due
    /// already: a driver on a virtual clock waits for a signal, and no
    /// advance of time would bring one. (The clock is read only for a
    /// slacked task: not on a one-shot's path.)
    pub(crate) fn after_push(&self, deadline: u64, periodic: bool, held: Held<'_>) {
        let crowded = held.lane.len() == LANE_NUDGE;
        drop(held);
        let slack = if periodic && self.periodic_slack > 0 && deadline > self.now() {
            self.periodic_slack
        } else {
            0
        };
        if self.wake.due_before(deadline.saturating_add(slack)) || crowded {
            self.nudge();
        }
    }

    /// Wakes a driver thread to look at the lanes and the queue now. Under
    /// the driver's lock, so a driver about to wait cannot miss it; a new
    /// head hands the pool's leader role on (the JDK's `offer`).
    pub(crate) fn nudge(&self) {
        let mut state = self.lock();
        state.nudged = true;
        state.roles.leader = None;
        if state.waiting > 0 {
            self.wakeup.notify_one();
        }
    }

    /// Takes a just-submitted task back out (its handle was never given
    /// out), as if it had never been accepted: for a scheduler that finds
    /// it cannot run it after all.
    pub(crate) fn take_back(&self, key: Key) -> Option<Task> {
        let mut state = self.lock();
        self.intake_for_query(&mut state);
        let word = self.slab.word(key);
        state::end_scheduled(word, state::CANCELLED, 0)?;
        self.unpend();
        state.balance -= 1;
        if state.queue.remove(key) {
            self.release_locked(&mut state, key);
        }
        // SAFETY: this thread ended the task before anyone ran it, and its
        // handle was never given out: the body is ours.
        let body = unsafe { self.slab.with_body(key, std::mem::take) };
        Some(Task { body })
    }

    /// A new task's first deadline in ticks, and for a calendar task the
    /// same by the wall clock: its first fire time after `when`.
    fn first_deadline(
        &self,
        when: When,
        calendar: Option<&Calendar>,
    ) -> Result<(u64, Option<Timestamp>), Error> {
        let deadline = self.deadline(when)?;
        let Some(calendar) = calendar else {
            return Ok((deadline, None));
        };
        let (now, wall_now) = (self.now(), self.wall_now());
        let from = wall_after(wall_now, Duration::from_nanos(deadline.saturating_sub(now)));
        let Some(due) = calendar.next_after(from) else {
            let over = CalendarError::none_after(calendar.cron().as_str(), from);
            return Err(Error::new(Kind::Calendar(over)));
        };
        Ok((self.ticks_of(due, now, wall_now), Some(due)))
    }

    /// A deadline in ticks.
    pub(crate) fn deadline(&self, when: When) -> Result<u64, Error> {
        match when {
            When::After(delay) => Timebase::deadline(self.deadline_clock(), delay),
            When::At(at) => self.timebase.deadline_at(at),
        }
    }
}
