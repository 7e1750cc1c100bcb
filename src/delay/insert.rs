//! Inserting, removing and resetting a [`DelayQueue`]'s values, keeping the queue's one
//! engine timer no later than the earliest of them.

use std::cmp::Reverse;
use std::time::{Duration, Instant};

use super::key::{Key, KeyError};
use super::queue::{DelayQueue, Item, Ordered, FAR};
use super::wheel::{InList, Link};
use crate::engine::{EngineShared, ScheduleError, ScheduleErrorKind};

impl<T> DelayQueue<T> {
    /// Holds `value` until `delay` from now and returns its key. Never fails: see
    /// [When the engine refuses](Self#when-the-engine-refuses), and
    /// [`try_insert`](Self::try_insert) to be told instead.
    pub fn insert(&mut self, value: T, delay: Duration) -> Key {
        let (deadline, tick) = self.after(delay);
        self.insert_with(value, deadline, tick)
    }

    /// Holds `value` until `deadline` (a past one is due at once), as [`insert`](Self::insert).
    pub fn insert_at(&mut self, value: T, deadline: Instant) -> Key {
        let tick = self.engine.clock().tick_at(deadline);
        self.insert_with(value, Some(deadline), tick)
    }

    /// As [`insert`](Self::insert), but a value the engine cannot serve is handed back.
    ///
    /// # Errors
    /// [`ScheduleError::DelayTooLong`](crate::ScheduleError::DelayTooLong) beyond the engine's
    /// range, [`ScheduleError::Shutdown`](crate::ScheduleError::Shutdown) after shutdown,
    /// [`ScheduleError::Full`](crate::ScheduleError::Full) if arming the timer hit the cap.
    /// Each holds the value.
    pub fn try_insert(&mut self, value: T, delay: Duration) -> Result<Key, ScheduleError<T>> {
        let (deadline, tick) = self.after(delay);
        self.try_insert_with(value, deadline, tick)
    }

    /// As [`insert_at`](Self::insert_at), but a value the engine cannot serve is handed back.
    ///
    /// # Errors
    /// As [`try_insert`](Self::try_insert).
    ///
    pub fn try_insert_at(&mut self, value: T, deadline: Instant) -> Result<Key, ScheduleError<T>> {
        let tick = self.engine.clock().tick_at(deadline);
        self.try_insert_with(value, Some(deadline), tick)
    }

    /// The deadline `delay` from now and its tick (`None`: beyond `Instant` or the range).
    fn after(&self, delay: Duration) -> (Option<Instant>, Option<u64>) {
        self.engine.clock().deadline_after(delay)
    }

    /// Inserts `value`, due at once if the engine refuses the queue's timer.
    fn insert_with(&mut self, value: T, deadline: Option<Instant>, tick: Option<u64>) -> Key {
        let (index, generation) = self.store(value, deadline);
        self.settle(index, generation, tick);
        Key::new(index, generation)
    }

    /// Stores `value`, due at `deadline`, under a new generation, in no list yet; returns its
    /// index and generation.
    fn store(&mut self, value: T, deadline: Option<Instant>) -> (usize, u64) {
        let generation = self.ids.next();
        let item = Item {
            value,
            deadline,
            link: Link::LOOSE,
        };
        (self.values.insert(generation, item), generation)
    }

    /// Inserts `value` if the engine serves it, else hands it back.
    fn try_insert_with(
        &mut self,
        value: T,
        deadline: Option<Instant>,
        tick: Option<u64>,
    ) -> Result<Key, ScheduleError<T>> {
        let Some(tick) = tick else {
            return Err(ScheduleError::DelayTooLong(value));
        };
        if self.stopped || self.engine.is_shutdown() {
            return Err(ScheduleError::Shutdown(value));
        }
        let due_now = self.is_due(tick);
        if !due_now {
            if let Err(why) = self.cover(tick) {
                return Err(ScheduleError::of_kind(why, value));
            }
        }
        let (index, generation) = self.store(value, deadline);
        if due_now || !self.wheel.insert(&mut self.values, index, tick) {
            self.make_due(index, generation);
        }
        Ok(Key::new(index, generation))
    }

    /// Whether the wheel has reached `tick` (an empty wheel first catches up to now).
    fn is_due(&mut self, tick: u64) -> bool {
        if self.wheel.is_empty() {
            self.wheel.catch_up(self.engine.clock().now_tick().get());
        }
        tick <= self.wheel.elapsed()
    }

    /// Places the loose value at `index` by `tick` (`None`: beyond the range), with the timer
    /// armed no later; due at once if the engine refuses the timer.
    fn settle(&mut self, index: usize, generation: u64, tick: Option<u64>) {
        if !self.stopped && self.engine.is_shutdown() {
            self.stopped = true;
        }
        if !self.stopped {
            let placed = match tick {
                Some(tick) if self.is_due(tick) => false,
                Some(tick) => {
                    self.cover(tick).is_ok() && self.wheel.insert(&mut self.values, index, tick)
                }
                None => {
                    let armed = self.cover(FAR).is_ok();
                    if armed {
                        self.wheel.insert_far(&mut self.values, index);
                    }
                    armed
                }
            };
            if placed {
                return;
            }
        }
        self.make_due(index, generation);
    }

    /// Makes sure the queue's timer is armed at or before `tick` (`FAR`: armed at all).
    fn cover(&mut self, tick: u64) -> Result<(), ScheduleErrorKind> {
        let target = match self.armed() {
            Some(armed) if armed <= tick => return Ok(()),
            Some(_) => tick,
            // The values already held may be due sooner.
            None => self.wheel.next_tick().unwrap_or(FAR).min(tick),
        };
        self.arm(target)
    }

    /// Arms (or moves) the queue's timer to `target`. On a refusal the queue has none.
    pub(super) fn arm(&mut self, target: u64) -> Result<(), ScheduleErrorKind> {
        let tick = (target != FAR).then_some(target);
        let armed = match &mut self.sleep {
            Some(sleep) => EngineShared::reset_sleep(sleep, tick),
            None => self
                .engine
                .try_sleep(tick)
                .map(|sleep| self.sleep = Some(sleep)),
        };
        if let Err(why) = armed {
            self.sleep = None;
            self.stopped |= why == ScheduleErrorKind::Shutdown;
        }
        armed
    }

    /// Puts the value at `index` among the values due, and wakes the waiting task.
    pub(super) fn make_due(&mut self, index: usize, generation: u64) {
        let now = self.engine.now();
        if let Some((_, item)) = self.values.get_at_mut(index) {
            push_due(&mut self.due, &mut self.arms, now, index, generation, item);
        }
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    /// Takes the value of `key` out; removing the last one lets the engine timer go.
    ///
    /// # Errors
    /// [`KeyError`] if `key` names no value in the queue (see [Keys](Self#keys)).
    pub fn remove(&mut self, key: &Key) -> Result<T, KeyError> {
        let item = self
            .values
            .remove(key.index(), key.generation())
            .ok_or_else(KeyError::new)?;
        self.wheel.unlink(&mut self.values, &item.link);
        if self.values.len() == 0 {
            self.emptied(true);
        }
        Ok(item.value)
    }

    /// Moves `key`'s value to `delay` from now, even if it expired but was not yet yielded.
    /// Only a new earliest deadline moves the engine timer; refusals are as for `insert`.
    ///
    /// # Errors
    /// [`KeyError`] if `key` names no value in the queue.
    pub fn reset(&mut self, key: &Key, delay: Duration) -> Result<(), KeyError> {
        let (deadline, tick) = self.after(delay);
        self.reset_to(key, deadline, tick)
    }

    /// As [`reset`](Self::reset), to `deadline`.
    ///
    /// # Errors
    /// [`KeyError`] if `key` names no value in the queue.
    pub fn reset_at(&mut self, key: &Key, deadline: Instant) -> Result<(), KeyError> {
        let tick = self.engine.clock().tick_at(deadline);
        self.reset_to(key, Some(deadline), tick)
    }

    /// Moves `key`'s value to `deadline`, due at `tick`.
    fn reset_to(
        &mut self,
        key: &Key,
        deadline: Option<Instant>,
        tick: Option<u64>,
    ) -> Result<(), KeyError> {
        let (index, generation) = (key.index(), key.generation());
        let item = self
            .values
            .get_mut(index, generation)
            .ok_or_else(KeyError::new)?;
        item.deadline = deadline;
        // A record among the values due is stale once the value is loose.
        let link = std::mem::replace(&mut item.link, Link::LOOSE);
        self.wheel.unlink(&mut self.values, &link);
        self.settle(index, generation, tick);
        Ok(())
    }
}

/// Puts `item` (at `index`, of `generation`) among the values `due` under a new arm; a
/// deadline beyond `Instant` counts as `now`.
pub(super) fn push_due<T>(
    due: &mut std::collections::BinaryHeap<Reverse<Ordered>>,
    arms: &mut u64,
    now: Instant,
    index: usize,
    generation: u64,
    item: &mut Item<T>,
) {
    *arms += 1;
    item.link.list = InList::Due(*arms);
    due.push(Reverse(Ordered {
        deadline: item.deadline.unwrap_or(now),
        generation,
        index,
        arm: *arms,
    }));
}
