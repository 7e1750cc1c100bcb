//! The owner's ring: a bounded SPSC queue of new timers from a lane's owner thread to its
//! shard (a Lamport ring; the producer caches `head`, as Rigtorp's `SPSCQueue`).
//!
//! A push is a store of the pointer and a Release store of `tail`, no read-modify-write. The
//! shard reads every cell between `head` and `tail` at once, so its cache misses overlap
//! (unlike the linked inbound queue). A full ring sends the owner to the inbound queue; order
//! between the two does not matter. Each pointer carries one strong count of its entry.

use std::ptr;

use crossbeam_utils::CachePadded;

use crate::entry::{Entry, EntryRef};
use crate::sync::{prefetch, AtomicPtr, AtomicUsize, Ordering, UnsafeCell};

/// Slots in a ring: a power of two. A handful under loom, so models reach a full ring.
#[cfg(not(loom))]
pub(crate) const RING_CELLS: usize = 4096;
#[cfg(loom)]
pub(crate) const RING_CELLS: usize = 2;

pub(crate) struct Ring {
    cells: Box<[AtomicPtr<Entry>]>,
    /// The next cell the producer writes; written by the producer only.
    tail: CachePadded<AtomicUsize>,
    /// The next cell the consumer reads; written by the consumer only.
    head: CachePadded<AtomicUsize>,
    /// The producer's last reading of `head`; the producer's alone.
    head_seen: CachePadded<UnsafeCell<usize>>,
}

// SAFETY: the cells and indices are atomic; `head_seen` is touched by the single producer
// only (`push`'s contract); the pointers carry counts of `Send + Sync` entries.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    pub(crate) fn new() -> Self {
        Ring {
            cells: (0..RING_CELLS)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            tail: CachePadded::new(AtomicUsize::new(0)),
            head: CachePadded::new(AtomicUsize::new(0)),
            head_seen: CachePadded::new(UnsafeCell::new(0)),
        }
    }

    /// Appends `entry`, or hands it back if the ring is full.
    ///
    /// # Safety
    /// One producer: the lane's owner thread.
    pub(crate) unsafe fn push(&self, entry: EntryRef) -> Result<(), EntryRef> {
        // Relaxed: only this thread writes `tail`.
        let tail = self.tail.load(Ordering::Relaxed);
        // SAFETY: by this function's contract the calling thread alone touches `head_seen`.
        let full = self.head_seen.with_mut(|seen| unsafe {
            if tail.wrapping_sub(*seen) < RING_CELLS {
                return false;
            }
            // Acquire: pairs with the consumer's Release store; read cells are free to reuse.
            *seen = self.head.load(Ordering::Acquire);
            tail.wrapping_sub(*seen) >= RING_CELLS
        });
        if full {
            return Err(entry);
        }
        let node = EntryRef::into_raw(entry).cast_mut();
        // Relaxed: published by the Release store of `tail` below.
        self.cells[tail % RING_CELLS].store(node, Ordering::Relaxed);
        // Release: the one edge publishing the entry to the consumer's Acquire of `tail`
        // (cell and entry writes are plain). loom misses this made Relaxed; TSan catches it.
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Whether nothing is queued. Any thread.
    pub(crate) fn is_empty(&self) -> bool {
        // Acquire: pairs with the producer's Release store of `tail`.
        self.tail.load(Ordering::Acquire) == self.head.load(Ordering::Acquire)
    }

    /// Takes up to `max` entries, oldest first, into `out`; returns how many.
    ///
    /// # Safety
    /// One consumer at a time: the shard thread, or, once it has been joined, shutdown.
    pub(crate) unsafe fn take(&self, max: usize, out: &mut Vec<EntryRef>) -> usize {
        // Relaxed: only the consumer writes `head`.
        let head = self.head.load(Ordering::Relaxed);
        // Acquire: pairs with the producer's Release store.
        let tail = self.tail.load(Ordering::Acquire);
        let n = tail.wrapping_sub(head).min(max);
        for i in 0..n {
            // Relaxed: ordered by the Acquire load of `tail`.
            let node = self.cells[head.wrapping_add(i) % RING_CELLS].load(Ordering::Relaxed);
            // The caller handles every entry taken next: start their cache misses together.
            prefetch(node);
            // SAFETY: every cell between `head` and `tail` holds a counted pointer, taken
            // only by the consumer.
            out.push(unsafe { EntryRef::from_raw(node) });
        }
        // Release: the producer's Acquire of `head` sees these cells read before reuse.
        self.head.store(head.wrapping_add(n), Ordering::Release);
        n
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        let mut rest = Vec::new();
        // SAFETY: `&mut self`: no producer or other consumer is left.
        unsafe { self.take(RING_CELLS, &mut rest) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::queue::tests::entry;
    use std::sync::Arc;

    fn deadlines(entries: &[EntryRef]) -> Vec<u64> {
        entries.iter().map(|e| e.state().deadline()).collect()
    }

    #[test]
    fn fills_refuses_when_full_and_wraps() {
        let ring = Ring::new();
        assert!(ring.is_empty());
        for round in 0..3u64 {
            for d in 0..RING_CELLS as u64 {
                // SAFETY: the test thread is the one producer.
                assert!(unsafe { ring.push(entry(round * 10_000 + d)) }.is_ok());
            }
            // SAFETY: as above.
            let refused = unsafe { ring.push(entry(1)) }.unwrap_err();
            assert_eq!(EntryRef::strong_count(&refused), 1, "handed back whole");
            let mut out = Vec::new();
            // SAFETY: the test thread is the one consumer.
            assert_eq!(unsafe { ring.take(10, &mut out) }, 10);
            // SAFETY: as above.
            assert_eq!(unsafe { ring.take(usize::MAX, &mut out) }, RING_CELLS - 10);
            let expected: Vec<u64> = (0..RING_CELLS as u64).map(|d| round * 10_000 + d).collect();
            assert_eq!(deadlines(&out), expected);
            assert!(ring.is_empty());
        }
    }

    #[test]
    fn dropping_a_ring_releases_what_it_holds() {
        let ring = Ring::new();
        let kept = entry(3);
        // SAFETY: the test thread is the one producer.
        unsafe { ring.push(kept.clone()) }.unwrap();
        assert_eq!(EntryRef::strong_count(&kept), 2);
        drop(ring);
        assert_eq!(EntryRef::strong_count(&kept), 1);
    }

    #[test]
    fn one_producer_one_consumer_lose_nothing() {
        let per: u64 = if cfg!(miri) { 300 } else { 200_000 };
        let ring = Arc::new(Ring::new());
        let producer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                for d in 0..per {
                    let mut next = entry(d);
                    // SAFETY: this thread is the one producer.
                    while let Err(back) = unsafe { ring.push(next) } {
                        next = back;
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut got = Vec::new();
        while (got.len() as u64) < per {
            // SAFETY: this thread is the one consumer.
            if unsafe { ring.take(64, &mut got) } == 0 {
                std::thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert_eq!(deadlines(&got), (0..per).collect::<Vec<_>>());
        assert!(ring.is_empty());
    }
}
