//! Inserting, removing and resetting a [`DelayQueue`]'s values, and scheduling the timers
//! that carry them.

use std::time::{Duration, Instant};

use super::inbox::{quietly, Inbox, Notice, Record};
use super::key::{InsertError, Key, KeyError};
use super::queue::{DelayQueue, Entry};
use crate::engine::{EngineLink, ScheduleError, ScheduleErrorKind};
use crate::sync::Arc;
use crate::timer::TimerHandle;

/// What a deadline beyond the engine's range gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Far {
    /// A stand-in timer at the farthest deadline the engine takes: renewed when it comes due
    /// (see `take_in`), handed back at shutdown.
    StandIn,
    /// No timer: the refusal `TooFar`.
    Refused,
}

/// Schedules the timer of the value in slot `index`, as arm `arm`.
fn arm_timer(
    engine: &EngineLink,
    inbox: &Arc<Inbox>,
    index: usize,
    arm: u64,
    deadline: Option<Instant>,
    far: Far,
) -> Result<TimerHandle, ScheduleErrorKind> {
    let notice = Notice::new(inbox.clone(), Record { index, arm });
    let callback = move || drop(notice);
    let scheduled = match deadline {
        Some(deadline) => engine.schedule_at(deadline, callback),
        None => Err(ScheduleError::DelayTooLong(callback)),
    };
    let scheduled = match scheduled {
        Err(ScheduleError::DelayTooLong(callback)) if far == Far::StandIn => {
            engine.schedule_farthest(callback)
        }
        scheduled => scheduled,
    };
    scheduled.map_err(|refused| {
        let why = refused.kind();
        // The callback handed back holds the notice: it was never scheduled.
        quietly(|| drop(refused));
        why
    })
}

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
        let deadline = self.engine.now().checked_add(delay);
        self.insert_with(value, deadline)
    }

    /// Holds `value` until `deadline`, and returns its key. A deadline already past makes the
    /// value due on the engine's next turn. As [`insert`](Self::insert) otherwise.
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
        self.insert_with(value, Some(deadline))
    }

    /// As [`insert`](Self::insert), but a value the engine cannot give a timer is handed back.
    ///
    /// # Errors
    /// [`InsertError::DelayTooLong`] if `delay` is beyond the engine's range,
    /// [`InsertError::Full`] if the engine is at its cap, [`InsertError::Shutdown`] if it was
    /// shut down. Each holds the value.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::InsertError;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// assert!(queue.try_insert("ok", Duration::from_secs(1)).is_ok());
    /// let far = engine.max_delay() * 2;
    /// assert!(matches!(queue.try_insert("far", far), Err(InsertError::DelayTooLong("far"))));
    /// assert_eq!(queue.len(), 1);
    /// ```
    pub fn try_insert(&mut self, value: T, delay: Duration) -> Result<Key, InsertError<T>> {
        let deadline = self.engine.now().checked_add(delay);
        self.try_insert_with(value, deadline)
    }

    /// As [`insert_at`](Self::insert_at), but a value the engine cannot give a timer is handed
    /// back.
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
    pub fn try_insert_at(&mut self, value: T, deadline: Instant) -> Result<Key, InsertError<T>> {
        self.try_insert_with(value, Some(deadline))
    }

    /// Inserts `value`, keeping it if the engine gives it no timer (see
    /// [When the engine refuses](Self#when-the-engine-refuses)).
    fn insert_with(&mut self, value: T, deadline: Option<Instant>) -> Key {
        let generation = self.ids.next();
        let index = self.slab.next_index();
        let armed = arm_timer(
            &self.engine,
            &self.inbox,
            index,
            generation,
            deadline,
            Far::StandIn,
        );
        let (timer, due_now) = match armed {
            Ok(timer) => (Some(timer), false),
            Err(ScheduleErrorKind::DelayTooLong) => (None, false),
            Err(_) => (None, true),
        };
        self.place(generation, value, deadline, timer, due_now)
    }

    /// Inserts `value` if the engine gives it a timer, else hands it back.
    fn try_insert_with(
        &mut self,
        value: T,
        deadline: Option<Instant>,
    ) -> Result<Key, InsertError<T>> {
        let generation = self.ids.next();
        let index = self.slab.next_index();
        match arm_timer(
            &self.engine,
            &self.inbox,
            index,
            generation,
            deadline,
            Far::Refused,
        ) {
            Ok(timer) => Ok(self.place(generation, value, deadline, Some(timer), false)),
            Err(why) => Err(InsertError::new(why, value)),
        }
    }

    /// Stores a value in the slot `next_index` announced, its first arm being its generation.
    fn place(
        &mut self,
        generation: u64,
        value: T,
        deadline: Option<Instant>,
        timer: Option<TimerHandle>,
        due_now: bool,
    ) -> Key {
        let entry = Entry {
            value,
            deadline,
            timer,
            arm: generation,
        };
        let index = self.slab.insert(generation, entry);
        if due_now {
            self.make_due(index, generation, generation, deadline);
        }
        Key::new(index, generation)
    }

    /// Takes the value of `key` out of the queue, cancelling its timer.
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
        let entry = self
            .slab
            .remove(key.index(), key.generation())
            .ok_or_else(KeyError::new)?;
        if let Some(timer) = &entry.timer {
            quietly(|| timer.cancel());
        }
        if self.slab.len() == 0 {
            self.emptied(true);
        }
        Ok(entry.value)
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
    /// has passed (a value that expired but was not yet yielded is held again). Pushing a
    /// pending deadline later moves its timer in place (one CAS on the engine); otherwise the
    /// value gets a new timer. A deadline the engine refuses is treated as
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
        let deadline = self.engine.now().checked_add(delay);
        self.reset_to(key, deadline)
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
        self.reset_to(key, Some(deadline))
    }

    fn reset_to(&mut self, key: &Key, deadline: Option<Instant>) -> Result<(), KeyError> {
        let index = key.index();
        let generation = key.generation();
        let entry = self
            .slab
            .get_mut(index, generation)
            .ok_or_else(KeyError::new)?;
        entry.deadline = deadline;
        if let (Some(timer), Some(deadline)) = (&entry.timer, deadline) {
            // Fails if the timer fired (its record may be on its way) or was let go, or if the
            // new deadline is beyond the engine's range.
            if timer.reset_at(deadline) {
                return Ok(());
            }
        }
        self.rearm(index, generation);
        Ok(())
    }

    /// Gives the value in slot `index` (of `generation`) a new timer for its deadline,
    /// cancelling the old one; a refusal makes it due at once.
    pub(super) fn rearm(&mut self, index: usize, generation: u64) {
        let arm = self.ids.next();
        let Some(entry) = self.slab.get_mut(index, generation) else {
            return;
        };
        if let Some(timer) = entry.timer.take() {
            quietly(|| timer.cancel());
        }
        // A new arm: whatever the old timer recorded, or the queue took in, is stale now.
        entry.arm = arm;
        let deadline = entry.deadline;
        let armed = arm_timer(
            &self.engine,
            &self.inbox,
            index,
            arm,
            deadline,
            Far::StandIn,
        );
        match armed {
            Ok(timer) => entry.timer = Some(timer),
            // The end of a manual clock's time: no tick is left to hold a stand-in at.
            Err(ScheduleErrorKind::DelayTooLong) => {}
            Err(_) => {
                self.make_due(index, generation, arm, deadline);
            }
        }
    }
}
