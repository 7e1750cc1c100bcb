//! What the queue hands out: keys, expired values, and the errors of its calls.

use std::error::Error;
use std::fmt;
use std::time::Instant;

/// Names a value in a [`DelayQueue`](crate::delay_queue::DelayQueue), returned by its `insert`.
/// A key names one value in one queue, once: after the value is removed, yielded or cleared
/// it names nothing, even if its cell is reused. Calls with such a key return [`KeyError`] or
/// `None`; none panics.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    index: usize,
    generation: u64,
}

impl Key {
    pub(super) fn new(index: usize, generation: u64) -> Self {
        Key { index, generation }
    }

    pub(super) fn index(self) -> usize {
        self.index
    }

    pub(super) fn generation(self) -> u64 {
        self.generation
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({}#{})", self.index, self.generation)
    }
}

/// A value whose deadline passed, as
/// [`DelayQueue::poll_expired`](crate::delay_queue::DelayQueue::poll_expired) yields it.
///
/// ```
/// use std::time::Duration;
/// use futures::StreamExt;
/// let clock = shardwheel::ManualClock::new();
/// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
/// let mut queue = shardwheel::delay_queue::DelayQueue::new(&engine);
/// let key = queue.insert(String::from("session"), Duration::from_secs(5));
/// clock.advance(Duration::from_secs(5));
/// let mut expired = futures::executor::block_on(queue.next()).unwrap();
/// assert_eq!(expired.key(), key);
/// assert_eq!(expired.deadline(), clock.now());
/// expired.get_mut().push_str("-1");
/// assert_eq!(expired.get_ref(), "session-1");
/// assert_eq!(expired.into_inner(), "session-1");
/// ```
#[derive(Debug)]
pub struct Expired<T> {
    value: T,
    key: Key,
    deadline: Instant,
}

impl<T> Expired<T> {
    pub(super) fn new(value: T, key: Key, deadline: Instant) -> Self {
        Expired {
            value,
            key,
            deadline,
        }
    }

    /// The value.
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The value, to change.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The value, taken out.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The key the value had (it names nothing in the queue any more).
    pub fn key(&self) -> Key {
        self.key
    }

    /// The deadline as given (not rounded). A value let out because the engine let its timer
    /// go (see [`DelayQueue`](crate::delay_queue::DelayQueue#when-the-engine-refuses)) may come out before.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// A key that names no value in the queue (removed, expired, cleared, or another queue's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyError(());

impl KeyError {
    pub(super) fn new() -> Self {
        KeyError(())
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no value in the delay queue has this key")
    }
}

impl Error for KeyError {}
