//! How a shard thread sleeps without missing work: the sleep word and its wake-up protocol.
//!
//! A shard that has work flowing in polls once a tick and keeps its sleep word at `AWAKE`, so
//! producers never pay for a wake-up. A shard with empty queues sleeps until its wheel's next
//! deadline (or indefinitely) and says so in the sleep word first. The two sides form a Dekker
//! pair around SeqCst fences:
//!
//! - producer: push to a queue; fence; read the sleep word; if the shard announced a sleep,
//!   swap the word to `AWAKE` and, if this thread won the swap, unpark the shard.
//! - shard: write the sleep word; fence; look at the queues again; if they are not empty, put
//!   the word back to `AWAKE` and go round again instead of parking.
//!
//! Either the shard sees the item or the producer sees the announcement, so no work waits for a
//! shard that went to sleep past it. An unpark that lands before the park leaves a token, so the
//! park returns at once.

use crate::sync::{fence, thread, AtomicU64, Mutex, Ordering};

/// The sleep word's value while the shard is awake or polling once a tick.
const AWAKE: u64 = 0;
/// The sleep word's value while the shard sleeps until it is woken.
const FOREVER: u64 = u64::MAX;

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

    /// Producer side, after pushing work: wakes the shard if it announced a long sleep.
    pub(super) fn notify(&self) {
        // SeqCst: the producer's side of the Dekker pair (see the module docs).
        fence(Ordering::SeqCst);
        // Relaxed load: the fence above orders it after the push.
        // AcqRel swap: it decides which notifier unparks, and its Acquire half pairs with the
        // announcement's store so the thread handle recorded before it is visible to `unpark`.
        if self.sleep.load(Ordering::Relaxed) != AWAKE
            && self.sleep.swap(AWAKE, Ordering::AcqRel) != AWAKE
        {
            self.unpark();
        }
    }

    /// Wakes the shard whatever it is doing (shutdown, a manual clock moving).
    pub(crate) fn wake(&self) {
        self.sleep.store(AWAKE, Ordering::SeqCst);
        self.unpark();
    }

    /// Shard side: announces a sleep until tick `until` (or until woken). The caller must look
    /// at its queues after this and call [`awake`](Self::awake) instead of parking if any has
    /// work.
    pub(super) fn announce_sleep(&self, until: Option<u64>) {
        let word = until.map_or(FOREVER, |tick| tick.saturating_add(1).min(FOREVER - 1));
        self.sleep.store(word, Ordering::SeqCst);
        // SeqCst: the shard's side of the Dekker pair (see the module docs).
        fence(Ordering::SeqCst);
    }

    /// Shard side: back to polling; producers need not wake it.
    pub(crate) fn awake(&self) {
        // Relaxed: a stale `AWAKE` seen by a producer only costs it a skipped unpark of a
        // shard that is awake anyway; a stale announcement costs one spurious unpark.
        self.sleep.store(AWAKE, Ordering::Relaxed);
    }

    fn unpark(&self) {
        if let Some(thread) = &*self.thread.lock() {
            thread.unpark();
        }
    }
}
