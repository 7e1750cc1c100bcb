//! [`DelayQueue`]: its type, construction, storage and size (`insert` and `expiry` hold the
//! rest).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::task::Waker;
use std::time::Instant;

use super::key::Key;
use super::values::Values;
use super::wheel::{DelayWheel, InList, Link, Linked};
use crate::engine::{current_engine, EngineShared, TimerEngine};
use crate::sync::next_ids;
use crate::sync::Arc;
use crate::timer::Sleep;

/// How many ids a queue takes at a time from the process-wide counter (see `sync::next_ids`).
const ID_BLOCK: u64 = 1 << 12;

/// A queue of values, each held until its deadline and then yielded by
/// [`poll_expired`](Self::poll_expired) or as a [`Stream`](futures_core::Stream) of
/// [`Expired`](super::Expired) values; driven by the engine's timers, under any executor.
///
/// ```
/// use std::time::Duration;
/// use futures::StreamExt;
/// use shardwheel::delay_queue::DelayQueue;
/// use shardwheel::{ManualClock, TimerEngine};
///
/// let clock = ManualClock::new();
/// let engine = TimerEngine::builder().manual_clock(&clock).build()?;
/// let mut queue = DelayQueue::new(&engine);
/// queue.insert("late", Duration::from_secs(20));
/// queue.insert("soon", Duration::from_secs(10));
/// let gone = queue.insert("cancelled", Duration::from_secs(5));
/// assert_eq!(queue.remove(&gone), Ok("cancelled"));
///
/// clock.advance(Duration::from_secs(20));
/// let expired = futures::executor::block_on(queue.by_ref().take(2).collect::<Vec<_>>());
/// let values: Vec<&str> = expired.into_iter().map(|e| e.into_inner()).collect();
/// assert_eq!(values, ["soon", "late"]);
/// // An empty queue ends the stream (until something is inserted).
/// assert!(futures::executor::block_on(queue.next()).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # The engine
///
/// The queue keeps a link to its engine, not a borrow, and may outlive it. Values wait in a
/// wheel of the queue's own; one engine [`Sleep`](crate::Sleep) sits at the earliest deadline,
/// so only a move of that deadline earlier (or filling or emptying) touches the engine, and
/// [`TimerEngine::pending`] counts a polled non-empty queue as one timer.
///
/// # Order
///
/// A poll yields every value whose tick has come, soonest deadline first, equal deadlines in
/// insertion order: never early (except as below), at most a tick plus noise late.
///
/// # Keys
///
/// A [`Key`] names one value in one queue, once. A key of a removed, expired or cleared value,
/// or of another queue, gets [`KeyError`](super::KeyError) (or `None`); nothing panics.
///
/// # When the engine refuses
///
/// - Beyond [`TimerEngine::max_delay`] or `Instant`: [`insert`](Self::insert) keeps the value
///   until shutdown (or a reset or remove); [`try_insert`](Self::try_insert) returns
///   [`ScheduleError::DelayTooLong`](crate::ScheduleError::DelayTooLong).
/// - Shut down: `insert` makes the value due at once; `try_insert` returns
///   [`ScheduleError::Shutdown`](crate::ScheduleError::Shutdown).
/// - At the cap ([`Builder::max_pending`](crate::engine::Builder::max_pending)) when the timer must be
///   armed or moved earlier: `insert` and `reset` make the value due at once; `try_insert`
///   returns [`ScheduleError::Full`](crate::ScheduleError::Full). A re-arm refused at a poll
///   brings the earliest tick's values out.
/// - At shutdown the timer is handed back, waking the polling task; every value then comes
///   out as if due, soonest first, keeping its [`Expired::deadline`](super::Expired::deadline).
///
/// # Waking
///
/// An empty queue polls `Ready(None)`. A task that got `Pending` is woken when the last value
/// is removed, the queue is cleared, or a value is made due at once; one that got
/// `Ready(None)` is not woken by a later insert.
///
/// # Storage
///
/// Values live once in a store of cells. When the length falls to a quarter of the capacity,
/// the free end is dropped if that frees half. An emptied queue keeps its storage if the fill
/// used a quarter of it, else goes back to the capacity it was made with
/// ([`with_capacity`](Self::with_capacity)). [`shrink_to_fit`](Self::shrink_to_fit) releases
/// what it can; [`clear`](Self::clear) goes back to the made-with capacity.
///
/// `DelayQueue<T>` is `Send` when `T` is, and `Sync` when `T` is.
pub struct DelayQueue<T> {
    pub(super) engine: Arc<EngineShared>,
    pub(super) values: Values<Item<T>>,
    pub(super) wheel: DelayWheel,
    /// The values taken out of the wheel, soonest first; a record left stale by a reset or
    /// remove is dropped when it comes out.
    pub(super) due: BinaryHeap<Reverse<Ordered>>,
    /// The queue's one engine timer; `None` while empty, or after the engine refused it.
    pub(super) sleep: Option<Sleep>,
    /// The task that polled last and got `Pending`.
    pub(super) waker: Option<Waker>,
    /// The engine refused a timer as shut down: every value is due.
    pub(super) stopped: bool,
    pub(super) ids: Ids,
    /// The last arm given to a value placed among the values due.
    pub(super) arms: u64,
}

/// The tick of a queue's sleep that ends only at shutdown.
pub(super) const FAR: u64 = u64::MAX;

/// A value as the values holds it.
pub(super) struct Item<T> {
    pub(super) value: T,
    /// `None`: further away than `Instant` can represent.
    pub(super) deadline: Option<Instant>,
    pub(super) link: Link,
}

impl<T> Linked for Item<T> {
    fn link(&mut self) -> &mut Link {
        &mut self.link
    }

    fn link_ref(&self) -> &Link {
        &self.link
    }
}

/// A value due, ordered as yielded: by deadline, then by insertion (the key's generation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Ordered {
    pub(super) deadline: Instant,
    pub(super) generation: u64,
    pub(super) index: usize,
    pub(super) arm: u64,
}

/// The queue's supply of key generations: increasing, and unique in the process.
pub(super) struct Ids {
    next: u64,
    end: u64,
}

impl Ids {
    pub(super) fn next(&mut self) -> u64 {
        if self.next == self.end {
            self.next = next_ids(ID_BLOCK);
            self.end = self.next.wrapping_add(ID_BLOCK);
        }
        let id = self.next;
        self.next = self.next.wrapping_add(1);
        id
    }
}

impl<T> DelayQueue<T> {
    /// The tick the queue's sleep is armed at (`FAR`: until shutdown), if it has one.
    pub(super) fn armed(&self) -> Option<u64> {
        let sleep = self.sleep.as_ref()?;
        Some(sleep.tick().unwrap_or(FAR))
    }

    /// An empty queue whose values expire on `engine`'s timers; it may outlive the engine.
    pub fn new(engine: &TimerEngine) -> Self {
        DelayQueue::with_capacity(engine, 0)
    }

    /// An empty queue with room for `capacity` values, which it keeps when it shrinks.
    pub fn with_capacity(engine: &TimerEngine, capacity: usize) -> Self {
        let engine = engine.shared().clone();
        let elapsed = engine.clock().now_tick().get();
        DelayQueue {
            engine,
            values: Values::with_capacity(capacity),
            wheel: DelayWheel::new(elapsed),
            due: BinaryHeap::new(),
            sleep: None,
            waker: None,
            stopped: false,
            ids: Ids { next: 0, end: 0 },
            arms: 0,
        }
    }

    /// The deadline of `key`'s value as given (not rounded). `None` if `key` names no value or
    /// the deadline is beyond `Instant` ([`contains`](Self::contains) tells them apart).
    pub fn deadline(&self, key: &Key) -> Option<Instant> {
        self.values
            .get(key.index(), key.generation())
            .and_then(|item| item.deadline)
    }

    /// The key of the value yielded next: earliest deadline, first inserted of equals. Costs
    /// with the values due and not yet yielded, and those in the earliest wheel slot.
    pub fn peek(&self) -> Option<Key> {
        // A value due comes before every value in the wheel; stale records are skipped.
        let due = self
            .due
            .iter()
            .map(|Reverse(due)| due)
            .filter(|due| {
                self.values
                    .get(due.index, due.generation)
                    .is_some_and(|item| item.link.list == InList::Due(due.arm))
            })
            .min();
        if let Some(due) = due {
            return Some(Key::new(due.index, due.generation));
        }
        self.wheel
            .first_values(&self.values)
            .filter_map(|index| {
                let (generation, item) = self.values.get_at(index)?;
                // No deadline (beyond what an `Instant` holds) comes last.
                Some((item.deadline.is_none(), item.deadline, generation, index))
            })
            .min()
            .map(|(_, _, generation, index)| Key::new(index, generation))
    }

    /// Whether `key` names a value in the queue (not yet removed, yielded or cleared).
    pub fn contains(&self, key: &Key) -> bool {
        self.values.get(key.index(), key.generation()).is_some()
    }

    /// The number of values in the queue, expired but not yet yielded ones included.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the queue holds no value.
    pub fn is_empty(&self) -> bool {
        self.values.len() == 0
    }

    /// Makes room for `additional` more values, kept as a fill's storage is
    /// (see [Storage](Self#storage)).
    pub fn reserve(&mut self, additional: usize) {
        self.values.reserve(additional);
    }

    /// How many values the queue has room for without growing (free cells included).
    pub fn capacity(&self) -> usize {
        self.values.capacity()
    }

    /// Releases what storage it can: all if empty, else the free cells after the last value.
    pub fn shrink_to_fit(&mut self) {
        self.values.shrink_to_fit();
        self.due.shrink_to_fit();
    }

    /// Removes every value and releases the storage down to the capacity the queue was made
    /// Removes every value, releases storage down to the made-with capacity and the engine
    /// timer, and wakes a waiting task. Every key handed out so far names nothing after.
    pub fn clear(&mut self) {
        let held = self.values.len() > 0;
        let elapsed = self.wheel.elapsed();
        self.wheel = DelayWheel::new(elapsed);
        self.values.clear();
        self.emptied(held);
    }

    /// The queue holds no value any more: drops its engine timer and what is left of the
    /// The queue is empty: drops its timer and the (stale) values due, and wakes the waiting
    /// task if `wake`.
    pub(super) fn emptied(&mut self, wake: bool) {
        self.sleep = None;
        self.due.clear();
        self.due.shrink_to(self.values.capacity());
        if let Some(waker) = self.waker.take() {
            if wake {
                waker.wake();
            }
        }
    }
}

// The queue never pins its values, so pinning it promises nothing about them.
impl<T> Default for DelayQueue<T> {
    /// An empty queue on the engine the free functions use: the one entered
    /// ([`TimerEngine::enter`]), else the [`default_engine`](crate::default_engine).
    fn default() -> Self {
        DelayQueue::new(&current_engine())
    }
}

impl<T> Unpin for DelayQueue<T> {}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueue")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use super::DelayQueue;
    use crate::{ManualClock, TimerEngine};

    /// Inserts `count` values due in a second, lets them expire and takes them all out.
    fn expire(queue: &mut DelayQueue<usize>, clock: &ManualClock, count: usize) {
        for value in 0..count {
            queue.insert(value, Duration::from_secs(1));
        }
        clock.advance(Duration::from_secs(1));
        let mut cx = Context::from_waker(Waker::noop());
        let mut out = 0;
        while let Poll::Ready(Some(_)) = queue.poll_expired(&mut cx) {
            out += 1;
        }
        assert_eq!(out, count);
    }

    #[test]
    fn the_values_due_keep_no_more_room_than_the_store() {
        let clock = ManualClock::new();
        let engine = TimerEngine::builder()
            .manual_clock(&clock)
            .inline_callbacks()
            .build()
            .unwrap();
        let mut queue = DelayQueue::new(&engine);
        expire(&mut queue, &clock, 100);
        let (due, values) = (queue.due.capacity(), queue.values.capacity());
        assert!(due >= 100 && due <= values, "due {due}, values {values}");
        expire(&mut queue, &clock, 1);
        assert_eq!(queue.values.capacity(), 0);
        assert_eq!(queue.due.capacity(), 0);
    }
}
