//! [`DelayQueue`]: values held until their deadlines, each with one engine timer.

//!
//! This file holds the type, its construction, storage and size; `insert` holds inserting,
//! removing and resetting values, `expiry` polling for the expired ones.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::time::Instant;

use super::inbox::{quietly, Inbox, Record};
use super::key::Key;
use super::slab::Slab;
use crate::engine::{EngineLink, TimerEngine};
use crate::sync::{next_ids, Arc};
use crate::timer::TimerHandle;

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
/// `&TimerEngine` it was made from, and even the engine itself (see below). Each value has one
/// timer on the engine, which [`remove`](Self::remove) cancels and [`reset`](Self::reset)
/// moves; dropping the queue, or [`clear`](Self::clear), cancels them all. When a timer fires,
/// its callback (on the engine's callback pool) records the value in a small inbox the queue
/// shares with its timers and wakes the task that polled the queue last; the queue takes the
/// records in when it is polled next. The callback never touches the queue itself.
///
/// # Order
///
/// Each poll first takes in every value whose timer has fired, and yields them soonest deadline
/// first; values with equal deadlines come out in the order they were inserted. A value never
/// comes out before its deadline (except as below), and at most one tick plus scheduling
/// noise after it. The order holds among the values one poll takes in: the timers of a
/// queue's values fire on several shards, and their callbacks run on the pool's threads, so
/// a poll that comes while a tick's values are still being recorded may yield a value before
/// one due at the same tick (with the same deadline, or a nearby one) that is recorded later.
///
/// # Keys
///
/// A [`Key`] names one value in one queue, once. Every call that takes a key returns
/// [`KeyError`](super::KeyError) (or `None`) for a key that names nothing any more (its value was removed,
/// expired or cleared, even if its slot now holds another value) or that is another queue's;
/// none panics. [`remove`](Self::remove) returns `Result<T, KeyError>`,
/// [`try_remove`](Self::try_remove) the same as an `Option`.
///
/// # When the engine refuses
///
/// - A deadline beyond the engine's range ([`TimerEngine::max_delay`]) or beyond what `Instant`
///   can represent: [`insert`](Self::insert) keeps the value with a stand-in timer at the
///   farthest deadline the engine takes, renewed as it comes due, so the value expires only
///   when the engine shuts down (or once it is reset to a nearer deadline, or removed);
///   [`try_insert`](Self::try_insert) returns [`InsertError::DelayTooLong`](super::InsertError::DelayTooLong) with the value.
/// - An engine shut down, or holding as many timers as its cap allows: `insert` keeps the value
///   as due at once, so it comes out of the next poll (nothing is lost, and a task waiting on
///   the queue does not wait for a timer that will never run); `try_insert` returns
///   [`InsertError::Shutdown`](super::InsertError::Shutdown) or [`InsertError::Full`](super::InsertError::Full) with the value.
/// - A reset that the engine refuses is treated as `insert` treats it. At the cap, a value just
///   removed (or a timer just cancelled) frees its place only on its shard's next turn (see
///   [`Builder::max_pending`](crate::Builder::max_pending)), so an insert right after a
///   remove can still be refused, and its value come out at once.
/// - When the engine shuts down, the values whose timers it hands back come out of the next
///   poll as if due (their [`Expired::deadline`](super::Expired::deadline) is still the one they were given), unless the
///   caller of [`TimerEngine::shutdown`] keeps the handed-back timers; running one yields its
///   value, dropping it too.
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
/// Values are stored once, in a slab of slots. The slab shrinks as the queue empties: when it
/// is empty its storage goes back to the capacity the queue was made with
/// ([`with_capacity`](Self::with_capacity), none for [`new`](Self::new)), and when its length
/// falls to a quarter of its capacity, the free slots at its end are released.
/// [`shrink_to_fit`](Self::shrink_to_fit) releases what it can at once.
///
/// `DelayQueue<T>` is `Send` when `T` is, and `Sync` when `T` is.
pub struct DelayQueue<T> {
    pub(super) engine: EngineLink,
    pub(super) slab: Slab<Entry<T>>,
    pub(super) inbox: Arc<Inbox>,
    /// The values taken in from the inbox, soonest first. An entry is checked against its slot
    /// when it comes out, as a record is when it goes in.
    pub(super) due: BinaryHeap<Reverse<Due>>,
    /// Records swapped out of the inbox, kept so that taking them in allocates nothing.
    pub(super) taken: Vec<Record>,
    pub(super) ids: Ids,
    /// The capacity asked for, which the queue's storage keeps when it shrinks by itself.
    floor: usize,
}

/// A value as the slab holds it.
pub(super) struct Entry<T> {
    pub(super) value: T,
    /// `None`: further away than `Instant` can represent.
    pub(super) deadline: Option<Instant>,
    /// The value's timer (for a deadline beyond the engine's range, a stand-in at the farthest
    /// deadline); `None` if it has none (due at once because the engine refused it, or at the
    /// end of a manual clock's time).
    pub(super) timer: Option<TimerHandle>,
    /// The id of the value's current timer (or placement as due at once): records and due
    /// entries with any other arm are stale.
    pub(super) arm: u64,
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

/// The queue's supply of ids (key generations and timer arms): increasing, and unique in the
/// process.
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
        DelayQueue {
            engine: engine.link(),
            slab: Slab::with_capacity(capacity),
            inbox: Inbox::new(),
            due: BinaryHeap::new(),
            taken: Vec::new(),
            ids: Ids { next: 0, end: 0 },
            floor: capacity,
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
        self.slab
            .get(key.index(), key.generation())
            .and_then(|entry| entry.deadline)
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
        self.slab.get(key.index(), key.generation()).is_some()
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
        self.slab.len()
    }

    /// Whether the queue holds no value.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let queue = shardwheel::DelayQueue::<u8>::new(&engine);
    /// assert!(queue.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.slab.len() == 0
    }

    /// How many values the queue's slab has room for without growing (free slots between
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
    /// assert_eq!(queue.capacity(), 0); // an empty queue keeps only what `with_capacity` asked
    /// ```
    pub fn capacity(&self) -> usize {
        self.slab.capacity()
    }

    /// Releases what storage the queue can: all of it if the queue is empty, else the free
    /// slots after its last value (below the capacity it was made with, too).
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
        self.slab.shrink_to_fit();
        self.due.shrink_to_fit();
        self.taken.shrink_to_fit();
    }

    /// Removes every value, cancelling their timers, and releases the storage down to the
    /// capacity the queue was made with. Every key handed out so far names nothing afterwards.
    /// Wakes a task waiting on the queue, which then sees `Ready(None)`.
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
        let held = self.slab.len() > 0;
        self.cancel_all();
        self.slab.clear();
        self.emptied(held);
    }

    /// Cancels every value's timer.
    fn cancel_all(&mut self) {
        quietly(|| {
            for entry in self.slab.values_mut() {
                if let Some(timer) = entry.timer.take() {
                    timer.cancel();
                }
            }
        });
    }

    /// The queue holds no value any more: drops what is left of the values due and the records
    /// (all stale), their storage beyond the floor, and wakes the waiting task if `wake`.
    pub(super) fn emptied(&mut self, wake: bool) {
        self.due.clear();
        self.due.shrink_to(self.floor);
        self.taken.shrink_to(self.floor);
        let waker = self.inbox.discard(self.floor);
        if wake {
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

// The queue never pins its values (they move in and out of the slab freely), so pinning the
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

impl<T> Drop for DelayQueue<T> {
    fn drop(&mut self) {
        self.cancel_all();
    }
}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueue")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}
