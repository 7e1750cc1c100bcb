//! [`DelayQueue`]: values held until their deadlines, each with one engine timer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures_core::Stream;

use super::inbox::{quietly, Inbox, Notice, Record};
use super::key::{Expired, InsertError, Key, KeyError};
use super::slab::Slab;
use crate::engine::{EngineLink, ScheduleError, TimerEngine};
use crate::sync::{next_ids, Arc};
use crate::timer::TimerHandle;

/// How many ids a queue takes at a time from the process-wide counter (see `sync::next_ids`).
const ID_BLOCK: u64 = 1 << 12;

/// A queue of values, each held until its deadline and then yielded by
/// [`poll_expired`](Self::poll_expired) (or as a [`Stream`] of [`Expired`] values), its expiry
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
/// [`KeyError`] (or `None`) for a key that names nothing any more (its value was removed,
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
///   [`try_insert`](Self::try_insert) returns [`InsertError::DelayTooLong`] with the value.
/// - An engine shut down, or holding as many timers as its cap allows: `insert` keeps the value
///   as due at once, so it comes out of the next poll (nothing is lost, and a task waiting on
///   the queue does not wait for a timer that will never run); `try_insert` returns
///   [`InsertError::Shutdown`] or [`InsertError::Full`] with the value.
/// - A reset that the engine refuses is treated as `insert` treats it. At the cap, a value just
///   removed (or a timer just cancelled) frees its place only on its shard's next turn (see
///   [`Builder::max_pending`](crate::Builder::max_pending)), so an insert right after a
///   remove can still be refused, and its value come out at once.
/// - When the engine shuts down, the values whose timers it hands back come out of the next
///   poll as if due (their [`Expired::deadline`] is still the one they were given), unless the
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
    engine: EngineLink,
    slab: Slab<Entry<T>>,
    inbox: Arc<Inbox>,
    /// The values taken in from the inbox, soonest first. An entry is checked against its slot
    /// when it comes out, as a record is when it goes in.
    due: BinaryHeap<Reverse<Due>>,
    /// Records swapped out of the inbox, kept so that taking them in allocates nothing.
    taken: Vec<Record>,
    ids: Ids,
    /// The capacity asked for, which the queue's storage keeps when it shrinks by itself.
    floor: usize,
}

/// A value as the slab holds it.
struct Entry<T> {
    value: T,
    /// `None`: further away than `Instant` can represent.
    deadline: Option<Instant>,
    /// The value's timer (for a deadline beyond the engine's range, a stand-in at the farthest
    /// deadline); `None` if it has none (due at once because the engine refused it, or at the
    /// end of a manual clock's time).
    timer: Option<TimerHandle>,
    /// The id of the value's current timer (or placement as due at once): records and due
    /// entries with any other arm are stale.
    arm: u64,
}

/// A value due, ordered as the queue yields it: by deadline, then by insertion (the key's
/// generation, taken from an increasing counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    deadline: Instant,
    generation: u64,
    index: usize,
    arm: u64,
}

/// Why a value got no timer.
#[derive(Clone, Copy)]
enum NoTimer {
    TooFar,
    Shutdown,
    Full,
}

impl NoTimer {
    fn of<F>(refused: &ScheduleError<F>) -> NoTimer {
        match refused {
            ScheduleError::Shutdown(_) => NoTimer::Shutdown,
            ScheduleError::Full(_) => NoTimer::Full,
            ScheduleError::DelayTooLong(_) => NoTimer::TooFar,
        }
    }

    fn error<T>(self, value: T) -> InsertError<T> {
        match self {
            NoTimer::TooFar => InsertError::DelayTooLong(value),
            NoTimer::Shutdown => InsertError::Shutdown(value),
            NoTimer::Full => InsertError::Full(value),
        }
    }
}

/// The queue's supply of ids (key generations and timer arms): increasing, and unique in the
/// process.
struct Ids {
    next: u64,
    end: u64,
}

impl Ids {
    fn next(&mut self) -> u64 {
        if self.next == self.end {
            self.next = next_ids(ID_BLOCK);
            self.end = self.next.wrapping_add(ID_BLOCK);
        }
        let id = self.next;
        self.next = self.next.wrapping_add(1);
        id
    }
}

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
) -> Result<TimerHandle, NoTimer> {
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
        let why = NoTimer::of(&refused);
        // The callback handed back holds the notice: it was never scheduled.
        quietly(|| drop(refused));
        why
    })
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
            Err(NoTimer::TooFar) => (None, false),
            Err(NoTimer::Shutdown | NoTimer::Full) => (None, true),
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
            Err(why) => Err(why.error(value)),
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

    /// Puts the value in slot `index` among the values due, as arm `arm`, and wakes the task
    /// waiting on the queue.
    fn make_due(&mut self, index: usize, generation: u64, arm: u64, deadline: Option<Instant>) {
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
    fn rearm(&mut self, index: usize, generation: u64) {
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
            Err(NoTimer::TooFar) => {}
            Err(NoTimer::Shutdown | NoTimer::Full) => {
                self.make_due(index, generation, arm, deadline);
            }
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
    fn emptied(&mut self, wake: bool) {
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

// The queue never pins its values (they move in and out of the slab freely), so pinning the
// queue promises nothing about them.
impl<T> Unpin for DelayQueue<T> {}

impl<T> Stream for DelayQueue<T> {
    type Item = Expired<T>;

    /// As [`DelayQueue::poll_expired`]: the stream ends (for now) when the queue is empty.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.get_mut().poll_expired(cx)
    }
}

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
