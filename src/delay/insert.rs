//! Inserting, removing and resetting a [`DelayQueue`]'s values: placing them in the queue's
//! wheel, and keeping the queue's one engine timer no later than the earliest of them.

use std::cmp::Reverse;
use std::time::{Duration, Instant};

use super::key::{Key, KeyError};
use super::queue::{DelayQueue, Due, Item, FAR};
use super::wheel::{InList, Link};
use crate::engine::{EngineShared, ScheduleError, ScheduleErrorKind};

impl<T> DelayQueue<T> {
    /// Holds `value` until `delay` from now (by the engine's clock), and returns its key.
    ///
    /// Never fails: a delay beyond the engine's range keeps the value until the engine shuts
    /// down, and an engine that refuses the timer (shut down, or at its cap) makes the value
    /// due at once. See [When the engine refuses](Self#when-the-engine-refuses), and
    /// [`try_insert`](Self::try_insert) to be told instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert("request 1", Duration::from_secs(30));
    /// assert!(queue.deadline(&key).is_some());
    /// assert_eq!(queue.len(), 1);
    /// ```
    pub fn insert(&mut self, value: T, delay: Duration) -> Key {
        let (deadline, tick) = self.after(delay);
        self.insert_with(value, deadline, tick)
    }

    /// Holds `value` until `deadline`, and returns its key. A deadline already past makes the
    /// value due at once (or on the engine's next turn). As [`insert`](Self::insert) otherwise.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let at = Instant::now() + Duration::from_secs(30);
    /// let key = queue.insert_at("request 1", at);
    /// assert_eq!(queue.deadline(&key), Some(at));
    /// ```
    pub fn insert_at(&mut self, value: T, deadline: Instant) -> Key {
        let tick = self.engine.clock().tick_at(deadline);
        self.insert_with(value, Some(deadline), tick)
    }

    /// As [`insert`](Self::insert), but a value the engine cannot serve is handed back.
    ///
    /// # Errors
    /// [`ScheduleError::DelayTooLong`](crate::ScheduleError::DelayTooLong) if `delay` is beyond the engine's range,
    /// [`ScheduleError::Shutdown`](crate::ScheduleError::Shutdown) if the engine was shut down, [`ScheduleError::Full`](crate::ScheduleError::Full) if the
    /// queue's timer had to be armed (or moved earlier) and the engine, at its cap, refused.
    /// Each holds the value.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::ScheduleError;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// assert!(queue.try_insert("ok", Duration::from_secs(1)).is_ok());
    /// let far = engine.max_delay() * 2;
    /// assert!(matches!(queue.try_insert("far", far), Err(ScheduleError::DelayTooLong("far"))));
    /// assert_eq!(queue.len(), 1);
    /// ```
    pub fn try_insert(&mut self, value: T, delay: Duration) -> Result<Key, ScheduleError<T>> {
        let (deadline, tick) = self.after(delay);
        self.try_insert_with(value, deadline, tick)
    }

    /// As [`insert_at`](Self::insert_at), but a value the engine cannot serve is handed back.
    ///
    /// # Errors
    /// As [`try_insert`](Self::try_insert).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.try_insert_at(5, Instant::now() + Duration::from_secs(1)).unwrap();
    /// assert_eq!(queue.remove(&key), Ok(5));
    /// ```
    pub fn try_insert_at(&mut self, value: T, deadline: Instant) -> Result<Key, ScheduleError<T>> {
        let tick = self.engine.clock().tick_at(deadline);
        self.try_insert_with(value, Some(deadline), tick)
    }

    /// The deadline `delay` from now and its tick (`None`: beyond `Instant`, or beyond the
    /// engine's range), from one cheap read of the clock (see `TickClock::deadline_after`).
    fn after(&self, delay: Duration) -> (Option<Instant>, Option<u64>) {
        self.engine.clock().deadline_after(delay)
    }

    /// Inserts `value`, due at once if the engine refuses the queue's timer.
    fn insert_with(&mut self, value: T, deadline: Option<Instant>, tick: Option<u64>) -> Key {
        let generation = self.ids.next();
        let item = Item {
            value,
            deadline,
            link: Link::LOOSE,
        };
        let index = self.values.insert(generation, item);
        self.settle(index, generation, tick);
        Key::new(index, generation)
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
        let generation = self.ids.next();
        let item = Item {
            value,
            deadline,
            link: Link::LOOSE,
        };
        let index = self.values.insert(generation, item);
        if due_now || !self.wheel.insert(&mut self.values, index, tick) {
            self.make_due(index, generation);
        }
        Ok(Key::new(index, generation))
    }

    /// Whether `tick` has been reached by the wheel (which an empty wheel first catches up to
    /// the present).
    fn is_due(&mut self, tick: u64) -> bool {
        if self.wheel.is_empty() {
            self.wheel.catch_up(self.engine.clock().now_tick());
        }
        tick <= self.wheel.elapsed()
    }

    /// Places the loose value at `index` by `tick` (`None`: beyond the engine's range), with
    /// the queue's timer armed no later; due at once if the engine refuses the timer.
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

    /// Takes the value of `key` out of the queue. Removing the last value lets the queue's
    /// engine timer go.
    ///
    /// # Errors
    /// [`KeyError`] if `key` names no value in the queue (see [Keys](Self#keys)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert("request 1", Duration::from_secs(30));
    /// assert_eq!(queue.remove(&key), Ok("request 1")); // the response came in time
    /// assert!(queue.remove(&key).is_err());
    /// assert_eq!(engine.pending(), 0);
    /// ```
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

    /// As [`remove`](Self::remove), with `None` for a key that names no value.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert(1, Duration::from_secs(30));
    /// assert_eq!(queue.try_remove(&key), Some(1));
    /// assert_eq!(queue.try_remove(&key), None);
    /// ```
    pub fn try_remove(&mut self, key: &Key) -> Option<T> {
        self.remove(key).ok()
    }

    /// Moves the deadline of `key`'s value to `delay` from now, whether or not its old deadline
    /// has passed (a value that expired but was not yet yielded is held again). Only a new
    /// earliest deadline moves the queue's engine timer; a refusal is treated as
    /// [`insert`](Self::insert) treats it.
    ///
    /// # Errors
    /// [`KeyError`] if `key` names no value in the queue.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert("idle connection", Duration::from_secs(30));
    /// clock.advance(Duration::from_secs(20));
    /// queue.reset(&key, Duration::from_secs(30)).unwrap(); // it saw traffic
    /// assert_eq!(queue.deadline(&key), Some(clock.now() + Duration::from_secs(30)));
    /// ```
    pub fn reset(&mut self, key: &Key, delay: Duration) -> Result<(), KeyError> {
        let (deadline, tick) = self.after(delay);
        self.reset_to(key, deadline, tick)
    }

    /// As [`reset`](Self::reset), to `deadline`.
    ///
    /// # Errors
    /// [`KeyError`] if `key` names no value in the queue.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert("a", Duration::from_secs(30));
    /// let sooner = Instant::now() + Duration::from_secs(1);
    /// queue.reset_at(&key, sooner).unwrap();
    /// assert_eq!(queue.deadline(&key), Some(sooner));
    /// ```
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
    due: &mut std::collections::BinaryHeap<Reverse<Due>>,
    arms: &mut u64,
    now: Instant,
    index: usize,
    generation: u64,
    item: &mut Item<T>,
) {
    *arms += 1;
    item.link.place = InList::Due(*arms);
    due.push(Reverse(Due {
        deadline: item.deadline.unwrap_or(now),
        generation,
        index,
        arm: *arms,
    }));
}
