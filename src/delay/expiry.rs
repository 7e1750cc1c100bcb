//! Taking the values whose ticks have come out of the queue's wheel, and yielding them
//! soonest first; waiting on the queue's one engine timer when none has come.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures_core::Stream;

use super::insert::push_due;
use super::key::{Expired, Key};
use super::queue::{DelayQueue, FAR};
use super::wheel::InList;
use crate::shard::Refusal;
use crate::timer::Sleep;

impl<T> DelayQueue<T> {
    /// The next value whose deadline has passed, soonest first: `Ready(Some)` takes it out
    /// (its key names nothing after); `Pending` wakes the task when one is due, the last is
    /// removed or one is made due at once; `Ready(None)`: empty, not woken by a later insert.
    /// Cancel safe, as is the stream's `next()`: only the yielding `Ready` takes a value out.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        let mut looked_again = false;
        loop {
            if let Some(expired) = self.pop_due() {
                return Poll::Ready(Some(expired));
            }
            if self.values.len() == 0 {
                return Poll::Ready(None);
            }
            let now = self.engine.now();
            if self.stopped || self.engine.is_shutdown() {
                // The engine is gone: every value is due.
                self.stopped = true;
                self.take_all(now);
                return Poll::Ready(self.pop_due());
            }
            self.take_until(self.engine.clock().floor_tick(now).get(), now);
            if !self.due.is_empty() {
                continue;
            }
            // Nothing due: wait on the queue's timer, at the earliest tick left.
            let target = self.wheel.next_tick().unwrap_or(FAR);
            let fired = self.sleep.as_ref().map(Sleep::is_elapsed);
            if fired == Some(true) && !looked_again {
                // It fired since the clock was read: read it again before re-arming.
                looked_again = true;
                continue;
            }
            let current = fired == Some(false) && self.armed() == Some(target);
            if !current && self.arm(target).is_err() {
                if !self.stopped {
                    // At the engine's cap: the earliest values come out now, not never.
                    self.take_soonest(now);
                }
                continue;
            }
            match &self.waker {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => self.waker = Some(cx.waker().clone()),
            }
            if let Some(sleep) = self.sleep.as_mut() {
                if Pin::new(&mut *sleep).poll(cx).is_pending() {
                    if sleep.refusal() != Some(Refusal::Shutdown) {
                        return Poll::Pending;
                    }
                    // The engine stopped since it was looked at: nothing will wake the task.
                    self.stopped = true;
                }
            }
        }
    }

    /// Moves the values due at or before `tick` from the wheel to the values due.
    fn take_until(&mut self, tick: u64, now: Instant) {
        let (due, arms) = (&mut self.due, &mut self.arms);
        self.wheel
            .advance(&mut self.values, tick, |index, generation, item| {
                push_due(due, arms, now, index, generation, item)
            });
    }

    /// Moves every value to the values due.
    fn take_all(&mut self, now: Instant) {
        let (due, arms) = (&mut self.due, &mut self.arms);
        self.wheel
            .drain(&mut self.values, |index, generation, item| {
                push_due(due, arms, now, index, generation, item)
            });
    }

    /// Takes the wheel up to its earliest occupied slot (all values, if only far ones are left).
    fn take_soonest(&mut self, now: Instant) {
        match self.wheel.next_tick() {
            Some(tick) => self.take_until(tick, now),
            None => self.take_all(now),
        }
    }

    /// Takes the soonest value due out of the queue, skipping stale records.
    fn pop_due(&mut self) -> Option<Expired<T>> {
        while let Some(std::cmp::Reverse(due)) = self.due.pop() {
            let current = self
                .values
                .get(due.index, due.generation)
                .is_some_and(|item| item.link.list == InList::Due(due.arm));
            if !current {
                continue;
            }
            let Some(item) = self.values.remove(due.index, due.generation) else {
                continue;
            };
            if self.values.len() == 0 {
                // The task polling is the one that would be woken: no need.
                self.emptied(false);
            }
            let key = Key::new(due.index, due.generation);
            return Some(Expired::new(item.value, key, due.deadline));
        }
        None
    }
}

impl<T> Stream for DelayQueue<T> {
    type Item = Expired<T>;

    /// As [`DelayQueue::poll_expired`]: the stream ends (for now) when the queue is empty.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.get_mut().poll_expired(cx)
    }
}
