//! How a shard thread sleeps without missing work: the sleep word and its wake-up protocol.
//!
//! A shard with work polls once a tick with its word at `AWAKE`, so producers pay nothing.
//! One with empty queues announces its sleep in the word first; a Dekker pair on SeqCst fences:
//!
//! - producer: push; fence ([`Fenced`]); read the word; if a sleep is announced, swap it to
//!   `AWAKE` and, winning, unpark the shard. A young timer (see `queue::young`) wakes it only if the sleep
//!   lasts past the tick by which the shard must take that timer.
//! - shard: write the word; fence; look at the queues; if not empty, back to `AWAKE`, no park.
//!
//! Either the shard sees the item or the producer the announcement. An unpark before the park
//! leaves a token, so the park returns at once.

use crate::sync::{thread, AtomicU64, Fenced, Mutex, Ordering};
use crate::time::Tick;

/// The sleep word's value while the shard is awake or polling once a tick.
const AWAKE: u64 = 0;
/// The sleep word's value while the shard sleeps until it is woken.
const FOREVER: u64 = u64::MAX;

/// The sleep a shard announced in its sleep word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Announced {
    /// No sleep: the shard is awake, or polls once a tick.
    Awake,
    /// A sleep until this tick begins.
    Until(Tick),
    /// A sleep until a producer or the engine wakes it.
    UntilWoken,
}

/// The sleep word's value for a sleep until tick `until`: the tick plus one, below `FOREVER`.
#[inline]
fn until_word(until: Tick) -> u64 {
    until.get().saturating_add(1).min(FOREVER - 1)
}

pub(crate) struct Signal {
    /// `AWAKE`, `FOREVER`, or the tick the shard sleeps until, plus one.
    sleep: AtomicU64,
    thread: Mutex<Option<thread::Thread>>,
}

impl Signal {
    pub(crate) fn new() -> Self {
        Signal {
            sleep: AtomicU64::new(AWAKE),
            thread: Mutex::new(None),
        }
    }

    /// Records the thread to unpark; called by the shard thread when it starts.
    pub(crate) fn set_thread(&self, thread: thread::Thread) {
        *self.thread.lock() = Some(thread);
    }

    /// Producer side, after pushing work and passing `fenced`: wakes the shard if it announced
    /// a sleep.
    #[inline]
    pub(super) fn notify(&self, fenced: &Fenced) {
        if self.announced(fenced) != Announced::Awake {
            self.wake_sleeper();
        }
    }

    /// Producer side, after its push and `fenced`: the sleep the shard announced.
    #[inline]
    pub(super) fn announced(&self, _: &Fenced) -> Announced {
        // Relaxed: the caller's fence orders it after the push (the producer's side of the
        // Dekker pair; see the module docs).
        match self.sleep.load(Ordering::Relaxed) {
            AWAKE => Announced::Awake,
            FOREVER => Announced::UntilWoken,
            until => Announced::Until(Tick::new(until - 1)),
        }
    }

    /// Producer side, having seen a sleep announced: wakes the shard unless another producer
    /// did first.
    pub(super) fn wake_sleeper(&self) {
        // AcqRel swap: decides which notifier unparks; its Acquire pairs with the
        // announcement so the recorded thread handle is visible to `unpark`.
        if self.sleep.swap(AWAKE, Ordering::AcqRel) != AWAKE {
            self.unpark();
        }
    }

    /// Wakes the shard whatever it is doing (shutdown, a manual clock moving).
    pub(crate) fn wake(&self) {
        self.sleep.store(AWAKE, Ordering::SeqCst);
        self.unpark();
    }

    /// Shard side: announces a sleep until tick `until` (`None`: until woken). The caller must
    /// then look at its queues after the fence returned and, if any has work, call
    /// [`awake`](Self::awake), not park.
    pub(super) fn announce_sleep(&self, until: Option<Tick>) -> Fenced {
        let word = until.map_or(FOREVER, until_word);
        self.sleep.store(word, Ordering::SeqCst);
        // The shard's side of the Dekker pair (see the module docs).
        Fenced::now()
    }

    /// Shard side, after [`announce_sleep`](Self::announce_sleep) and its look at the queues:
    /// the sleep ends sooner, at `until` (a young timer's horizon, see `queue::young`).
    pub(super) fn shorten_sleep(&self, until: Tick) {
        // Relaxed: a producer still reading the longer sleep wakes the shard needlessly, which
        // is harmless; the word only ever shrinks here.
        self.sleep.store(until_word(until), Ordering::Relaxed);
    }

    /// Shard side: back to polling; producers need not wake it.
    pub(crate) fn awake(&self) {
        // Relaxed: a stale `AWAKE` only skips unparking an awake shard; a stale announcement
        // costs one spurious unpark.
        self.sleep.store(AWAKE, Ordering::Relaxed);
    }

    fn unpark(&self) {
        if let Some(thread) = &*self.thread.lock() {
            thread.unpark();
        }
    }
}
