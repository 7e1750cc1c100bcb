//! [`DelayQueue`]: values held until their deadlines in a wheel of the queue's own, behind one
//! engine timer.
//!
//! This file holds the type, its construction, storage and size; `insert` holds inserting,
//! removing and resetting values, `expiry` polling for the expired ones.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::task::Waker;
use std::time::Instant;

use super::key::Key;
use super::values::Values;
use super::wheel::{DelayWheel, InList, Link, Linked};
use crate::engine::{EngineShared, TimerEngine};
use crate::sync::next_ids;
use crate::sync::Arc;
use crate::timer::Sleep;

/// How many ids a queue takes at a time from the process-wide counter (see `sync::next_ids`).
const ID_BLOCK: u64 = 1 << 12;

/// A queue of values, each held until its deadline and then yielded by
/// [`poll_expired`](Self::poll_expired) (or as a [`Stream`](futures_core::Stream) of [`Expired`](super::Expired) values), its expiry
/// driven by the engine's timers: no runtime of its own is needed, and it works under any
/// executor.
///
/// ```
/// use std::time::Duration;
/// use futures::StreamExt;
/// use shardwheel::{DelayQueue, ManualClock, TimerEngine};
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
/// The queue keeps a link to the engine it was made with, not a borrow: it outlives the
/// `&TimerEngine` it was made from, and even the engine itself (see below). Its values wait in
/// a timing wheel of its own, in ticks of the engine's clock; the queue has one engine sleep
/// (a [`Sleep`](crate::Sleep)) at its earliest deadline, which takes its timer when the queue
/// is polled and wakes the task polling it. So an insert, remove or reset touches the engine
/// only when the queue's earliest deadline moves earlier (or the queue fills or empties), and
/// [`TimerEngine::pending`] counts a non-empty queue that has been polled as one timer.
///
/// # Order
///
/// A poll takes out every value whose tick has come, and yields them soonest deadline first;
/// values with equal deadlines come out in the order they were inserted. A value never comes
/// out before its deadline (except as below), and at most one tick plus scheduling noise after
/// it.
///
/// # Keys
///
/// A [`Key`] names one value in one queue, once. Every call that takes a key returns
/// [`KeyError`](super::KeyError) (or `None`) for a key that names nothing any more (its value was removed,
/// expired or cleared, even if its cell now holds another value) or that is another queue's;
/// none panics. [`remove`](Self::remove) returns `Result<T, KeyError>`,
/// [`try_remove`](Self::try_remove) the same as an `Option`.
///
/// # When the engine refuses
///
/// - A deadline beyond the engine's range ([`TimerEngine::max_delay`]) or beyond what `Instant`
///   can represent: [`insert`](Self::insert) keeps the value until the engine shuts down (or
///   until it is reset to a nearer deadline, or removed); [`try_insert`](Self::try_insert)
///   returns [`ScheduleError::DelayTooLong`](crate::ScheduleError::DelayTooLong) with the value.
/// - An engine shut down: `insert` makes the value due at once; `try_insert` returns
///   [`ScheduleError::Shutdown`](crate::ScheduleError::Shutdown) with the value.
/// - An engine at its cap ([`Builder::max_pending`](crate::Builder::max_pending)) when the
///   queue's timer must be armed or moved earlier: `insert` (and a reset) makes
///   the value due at once, so nothing waits for a timer that will never run; `try_insert`
///   returns [`ScheduleError::Full`](crate::ScheduleError::Full) with the value. If the timer is
///   refused when a poll re-arms it, the values of the earliest tick come out then.
/// - When the engine shuts down, the queue's timer is handed back, and dropping (or running)
///   it wakes the task polling the queue; from then on every value comes out as if due,
///   soonest first (its [`Expired::deadline`](super::Expired::deadline) is still the one it was given).
///
/// # Waking
///
/// `poll_expired` on an empty queue returns `Ready(None)`, and a task waiting on a queue (it
/// polled and got `Pending`) is woken when the last value is removed or the queue is cleared,
/// so that it sees `Ready(None)`. It is also woken when an insert or reset makes a value due at
/// once. A task that got `Ready(None)` is not woken by a later insert: poll again after one.
///
/// # Storage
///
/// Values are stored once, in a store of cells, which shrinks as the queue empties. When its
/// length falls to a quarter of its capacity, the free cells at its end are dropped, and the
/// storage shrinks to the cells left (not below the capacity the queue was made with,
/// [`with_capacity`](Self::with_capacity), none for [`new`](Self::new)) if that frees at least
/// half of it. When the queue empties, it keeps its storage for the next fill if its values
/// filled at least a quarter of it, and otherwise gives it back down to the capacity it was
/// made with: an empty queue holds that capacity, or at most four times what its last fill
/// used if that is more. A queue refilled to a size it held before, whose last drain left its
/// storage whole (as one that takes its values out oldest first does), grows nothing.
/// [`shrink_to_fit`](Self::shrink_to_fit) releases what it can at once, and
/// [`clear`](Self::clear) goes back to the capacity the queue was made with.
///
/// `DelayQueue<T>` is `Send` when `T` is, and `Sync` when `T` is.
pub struct DelayQueue<T> {
    pub(super) engine: Arc<EngineShared>,
    pub(super) values: Values<Item<T>>,
    pub(super) wheel: DelayWheel,
    /// The values taken out of the wheel, soonest first. A record is checked against its
    /// value's place when it comes out: a value reset or removed since leaves it stale.
    pub(super) due: BinaryHeap<Reverse<Due>>,
    /// The queue's one engine timer (see [`armed`](Self::armed)); `None` while the queue is
    /// empty, or after the engine refused it.
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

/// A value due, ordered as the queue yields it: by deadline, then by insertion (the key's
/// generation, taken from an increasing counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Due {
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

    /// An empty queue whose values expire on `engine`'s timers. The queue does not borrow the
    /// engine: it may outlive the reference, and the engine too (see
    /// [When the engine refuses](Self#when-the-engine-refuses)).
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let queue: shardwheel::DelayQueue<u32> = shardwheel::DelayQueue::new(&engine);
    /// assert!(queue.is_empty());
    /// ```
    pub fn new(engine: &TimerEngine) -> Self {
        DelayQueue::with_capacity(engine, 0)
    }

    /// An empty queue with room for `capacity` values, which it keeps when it shrinks.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let queue: shardwheel::DelayQueue<u32> = shardwheel::DelayQueue::with_capacity(&engine, 100);
    /// assert!(queue.capacity() >= 100);
    /// ```
    pub fn with_capacity(engine: &TimerEngine, capacity: usize) -> Self {
        let engine = engine.shared().clone();
        let elapsed = engine.clock().now_tick();
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

    /// The deadline of `key`'s value, as given to its insert or last reset (not rounded to
    /// the engine's tick). `None` if `key` names no value in the queue, or if the value's
    /// deadline is further away than `Instant` can represent ([`contains`](Self::contains)
    /// tells the two apart).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert((), Duration::from_secs(30));
    /// assert!(queue.deadline(&key).unwrap() > engine.now());
    /// let forever = queue.insert((), Duration::MAX);
    /// assert_eq!(queue.deadline(&forever), None);
    /// assert!(queue.contains(&forever));
    /// ```
    pub fn deadline(&self, key: &Key) -> Option<Instant> {
        self.values
            .get(key.index(), key.generation())
            .and_then(|item| item.deadline)
    }

    /// The key of the value the queue yields next: the earliest deadline, the first inserted
    /// of those equal (tokio-util's `DelayQueue::peek`). Its cost grows with the values
    /// expired and not yet yielded, and with those sharing the earliest slot of the wheel.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// assert_eq!(queue.peek(), None);
    /// queue.insert("later", Duration::from_secs(60));
    /// let sooner = queue.insert("sooner", Duration::from_secs(5));
    /// assert_eq!(queue.peek(), Some(sooner));
    /// ```
    pub fn peek(&self) -> Option<Key> {
        // A value due (taken out of the wheel) comes before every value in it; a record whose
        // value was reset or removed since is stale.
        let due = self
            .due
            .iter()
            .map(|Reverse(due)| due)
            .filter(|due| {
                self.values
                    .get(due.index, due.generation)
                    .is_some_and(|item| item.link.place == InList::Due(due.arm))
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

    /// Whether `key` names a value in the queue (one not yet removed, yielded or cleared).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert(1, Duration::from_secs(30));
    /// assert!(queue.contains(&key));
    /// queue.remove(&key).unwrap();
    /// assert!(!queue.contains(&key));
    /// ```
    pub fn contains(&self, key: &Key) -> bool {
        self.values.get(key.index(), key.generation()).is_some()
    }

    /// The number of values in the queue, expired but not yet yielded ones included.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// queue.insert('a', Duration::from_secs(30));
    /// queue.insert('b', Duration::from_secs(30));
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the queue holds no value.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let queue = shardwheel::DelayQueue::<u8>::new(&engine);
    /// assert!(queue.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.values.len() == 0
    }

    /// Makes room for at least `additional` values more than the queue holds, so that
    /// inserting them does not grow its storage (tokio-util's `DelayQueue::reserve`). The
    /// room is kept as storage a fill grew is (see [Storage](Self#storage)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// queue.reserve(1000);
    /// let room = queue.capacity();
    /// assert!(room >= 1000);
    /// for i in 0..1000 {
    ///     queue.insert(i, Duration::from_secs(60));
    /// }
    /// assert_eq!(queue.capacity(), room);
    /// ```
    pub fn reserve(&mut self, additional: usize) {
        self.values.reserve(additional);
    }

    /// How many values the queue's values has room for without growing (free cells between
    /// held values included).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let keys: Vec<_> = (0..1000).map(|i| queue.insert(i, Duration::from_secs(30))).collect();
    /// assert!(queue.capacity() >= 1000);
    /// for key in &keys {
    ///     queue.remove(key).unwrap();
    /// }
    /// assert!(queue.capacity() >= 1000); // kept for the next fill
    /// let key = queue.insert(0, Duration::from_secs(30));
    /// queue.remove(&key).unwrap();
    /// assert_eq!(queue.capacity(), 0); // a small fill gave it back
    /// ```
    pub fn capacity(&self) -> usize {
        self.values.capacity()
    }

    /// Releases what storage the queue can: all of it if the queue is empty, else the free
    /// cells after its last value (below the capacity it was made with, too).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::with_capacity(&engine, 1000);
    /// queue.insert(1, Duration::from_secs(30));
    /// queue.shrink_to_fit();
    /// assert!(queue.capacity() < 1000);
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.values.shrink_to_fit();
        self.due.shrink_to_fit();
    }

    /// Removes every value and releases the storage down to the capacity the queue was made
    /// with (and the queue's engine timer). Every key handed out so far names nothing
    /// afterwards. Wakes a task waiting on the queue, which then sees `Ready(None)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut queue = shardwheel::DelayQueue::new(&engine);
    /// let key = queue.insert(1, Duration::from_secs(30));
    /// queue.clear();
    /// assert!(queue.is_empty());
    /// assert!(!queue.contains(&key));
    /// assert_eq!(engine.pending(), 0);
    /// ```
    pub fn clear(&mut self) {
        let held = self.values.len() > 0;
        let elapsed = self.wheel.elapsed();
        self.wheel = DelayWheel::new(elapsed);
        self.values.clear();
        self.emptied(held);
    }

    /// The queue holds no value any more: drops its engine timer and what is left of the
    /// values due (all stale), keeping no more room for them than the values kept, and wakes
    /// the waiting task if `wake`.
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

// The queue never pins its values (they move in and out of the values freely), so pinning the
// queue promises nothing about them.
impl<T> Default for DelayQueue<T> {
    /// An empty queue on the [`default_engine`](crate::default_engine).
    ///
    /// ```
    /// let queue: shardwheel::DelayQueue<u32> = shardwheel::DelayQueue::default();
    /// assert!(queue.is_empty());
    /// ```
    fn default() -> Self {
        DelayQueue::new(crate::default_engine())
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
