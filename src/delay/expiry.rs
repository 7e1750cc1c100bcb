//! Taking the values of fired timers in, and yielding them soonest first.

use std::cmp::Reverse;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use futures_core::Stream;

use super::key::{Expired, Key};
use super::queue::{DelayQueue, Due};

impl<T> DelayQueue<T> {
    /// Puts the value in slot `index` among the values due, as arm `arm`, and wakes the task
    /// waiting on the queue.
    pub(super) fn make_due(
        &mut self,
        index: usize,
        generation: u64,
        arm: u64,
        deadline: Option<Instant>,
    ) {
        let deadline = deadline.unwrap_or_else(|| self.engine.now());
        self.due.push(Reverse(Due {
            deadline,
            generation,
            index,
            arm,
        }));
        if let Some(waker) = self.inbox.take_waker() {
            waker.wake();
        }
    }

    /// The next value whose deadline has passed, soonest first.
    ///
    /// - `Ready(Some(expired))`: a value expired; it is out of the queue, and its key names
    ///   nothing any more.
    /// - `Pending`: no value has expired yet; the task is woken when one does (or when the last
    ///   value is removed, or when a value is made due at once).
    /// - `Ready(None)`: the queue is empty. The task is not woken by a later insert.
    ///
    /// ```
    /// use std::task::{Context, Poll};
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    /// assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));
    /// queue.insert("x", Duration::from_secs(1));
    /// assert!(queue.poll_expired(&mut cx).is_pending());
    /// clock.advance(Duration::from_secs(1));
    /// match queue.poll_expired(&mut cx) {
    ///     Poll::Ready(Some(expired)) => assert_eq!(expired.into_inner(), "x"),
    ///     _ => unreachable!(),
    /// }
    /// ```
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        loop {
            let took = self.take_in(cx.waker());
            if let Some(expired) = self.pop_due() {
                return Poll::Ready(Some(expired));
            }
            if self.slab.len() == 0 {
                return Poll::Ready(None);
            }
            if !took {
                // The inbox was empty, and `waker` is registered with it.
                return Poll::Pending;
            }
        }
    }

    /// Moves the records of fired timers from the inbox to the values due, dropping stale
    /// ones. `false` if there were none, and then `waker` is registered for the next one.
    fn take_in(&mut self, waker: &Waker) -> bool {
        if !self.inbox.take_or_register(&mut self.taken, waker) {
            return false;
        }
        // Read once, after the records were taken: each timer fired before its record came.
        let now = self.engine.now();
        let mut taken = std::mem::take(&mut self.taken);
        for record in taken.drain(..) {
            let Some((generation, entry)) = self.slab.get_at(record.index) else {
                continue;
            };
            if entry.arm != record.arm {
                continue;
            }
            // A timer never fires before its deadline: one that did not reach it is a
            // stand-in for a deadline beyond the engine's range, come due (renewed here) or
            // handed back at shutdown (the value comes out, as every held one does then).
            let deadline = entry.deadline.filter(|&deadline| deadline <= now);
            match deadline {
                Some(deadline) => self.due.push(Reverse(Due {
                    deadline,
                    generation,
                    index: record.index,
                    arm: record.arm,
                })),
                None if self.engine.is_shutdown() => {
                    self.make_due(record.index, generation, record.arm, entry.deadline);
                }
                None => self.rearm(record.index, generation),
            }
        }
        self.taken = taken;
        true
    }

    /// Takes the soonest value due out of the queue, skipping stale entries.
    fn pop_due(&mut self) -> Option<Expired<T>> {
        while let Some(Reverse(due)) = self.due.pop() {
            let current = self
                .slab
                .get_at(due.index)
                .is_some_and(|(generation, entry)| {
                    generation == due.generation && entry.arm == due.arm
                });
            if !current {
                continue;
            }
            // Its timer fired or was let go: there is nothing to cancel.
            let Some(entry) = self.slab.remove(due.index, due.generation) else {
                continue;
            };
            if self.slab.len() == 0 {
                // The task polling is the one that would be woken: no need.
                self.emptied(false);
            }
            let key = Key::new(due.index, due.generation);
            return Some(Expired::new(entry.value, key, due.deadline));
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
