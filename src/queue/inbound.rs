//! The inbound queue: Vyukov's intrusive MPSC queue threaded through the entries' `next` links,
//! so queueing a timer allocates nothing.
//!
//! Producers swap `back` and then store the old back's `next`; the consumer walks from
//! `front`, with a stub node keeping the queue non-empty. Between swap and store the chain is
//! broken and the consumer sees [`Pop::MidPush`], so the shard polls while a lane is non-empty.
//! Each entry carries one strong count; it leaves the queue before the wheel uses `next`.

use std::ptr;

use crossbeam_utils::CachePadded;

use crate::entry::{CallbackBox, Entry, EntryRef};
use crate::sync::{AtomicPtr, Ordering, UnsafeCell};

pub(crate) struct Inbound {
    /// The entry pushed last (or the stub): where producers append.
    back: CachePadded<AtomicPtr<Entry>>,
    /// The next entry to take (or the stub): the consumer's alone.
    front: CachePadded<UnsafeCell<*mut Entry>>,
    /// The queue's own node, re-appended whenever the last real entry is taken.
    stub: EntryRef,
}

/// What [`Inbound::pop`] found.
pub(crate) enum Pop {
    /// The oldest entry, with the count the queue held for it.
    Entry(EntryRef),
    /// Nothing queued.
    Empty,
    /// A producer is mid-push: it swapped `back` but has not linked its node yet. Vyukov
    /// calls this state inconsistent; try again later.
    MidPush,
}

// SAFETY: `front` is read and written only by the single consumer (`pop`'s contract), `back`
// and the entries' `next` links are atomic, and the entries themselves are `Send + Sync`.
unsafe impl Send for Inbound {}
// SAFETY: as above.
unsafe impl Sync for Inbound {}

impl Inbound {
    pub(crate) fn new() -> Self {
        let stub = EntryRef::new(Entry::new(0, CallbackBox::new(|| {})));
        let stub_ptr = EntryRef::as_ptr(&stub).cast_mut();
        Inbound {
            back: CachePadded::new(AtomicPtr::new(stub_ptr)),
            front: CachePadded::new(UnsafeCell::new(stub_ptr)),
            stub,
        }
    }

    fn stub_ptr(&self) -> *mut Entry {
        EntryRef::as_ptr(&self.stub).cast_mut()
    }

    /// Appends `entry`. Any thread.
    pub(crate) fn push(&self, entry: EntryRef) {
        self.append(EntryRef::into_raw(entry).cast_mut());
    }

    fn append(&self, node: *mut Entry) {
        // SAFETY: `node` is live: it holds the count `push` took over, or it is the stub, which
        // `self` owns. It is in no list, so nothing else writes its `next`.
        let node_ref = unsafe { &*node };
        // Relaxed: published by the Release half of the swap below.
        node_ref.next.store(ptr::null_mut(), Ordering::Relaxed);
        // AcqRel: Release publishes the node (cleared `next`, the entry) to the next producer
        // and the consumer; Acquire orders this after the previous producer's node.
        let previous = self.back.swap(node, Ordering::AcqRel);
        // SAFETY: `previous` is still in the queue (the consumer never takes the last node
        // while its `next` is null), so it is live.
        let previous = unsafe { &*previous };
        // Release: the consumer's Acquire load of this link sees the node fully written.
        previous.next.store(node, Ordering::Release);
    }

    /// Whether nothing is queued (a push half-way through counts as queued). Any thread.
    pub(crate) fn is_empty(&self) -> bool {
        // Acquire: pairs with the producers' swap.
        self.back.load(Ordering::Acquire) == self.stub_ptr()
    }

    /// Takes the oldest entry.
    ///
    /// # Safety
    /// One consumer at a time: the shard thread, or, once it has been joined, shutdown.
    pub(crate) unsafe fn pop(&self) -> Pop {
        let stub = self.stub_ptr();
        // SAFETY: by this function's contract the caller is the only consumer, and `front`
        // always points to a live node still in the queue.
        self.front.with_mut(|front| unsafe {
            let mut first = *front;
            // Acquire: pairs with the producer's Release store of this link.
            let mut next = (*first).next.load(Ordering::Acquire);
            if first == stub {
                if next.is_null() {
                    // Nothing behind the stub: empty, unless a producer is mid-push.
                    return if self.back.load(Ordering::Acquire) == stub {
                        Pop::Empty
                    } else {
                        Pop::MidPush
                    };
                }
                *front = next;
                first = next;
                next = (*first).next.load(Ordering::Acquire);
            }
            if !next.is_null() {
                *front = next;
                return Pop::Entry(EntryRef::from_raw(first));
            }
            // `first` is the last node linked: unless a producer is mid-push, put the stub
            // behind it so `first` can be taken.
            if first != self.back.load(Ordering::Acquire) {
                return Pop::MidPush;
            }
            self.append(stub);
            next = (*first).next.load(Ordering::Acquire);
            if !next.is_null() {
                *front = next;
                return Pop::Entry(EntryRef::from_raw(first));
            }
            Pop::MidPush
        })
    }
}

impl Drop for Inbound {
    fn drop(&mut self) {
        // `&mut self`: no producer is pushing; this thread is the only consumer.
        // SAFETY: as above.
        while let Pop::Entry(entry) = unsafe { self.pop() } {
            drop(entry);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::queue::tests::entry;
    use std::sync::Arc;
    use std::thread;

    fn pop(queue: &Inbound) -> Option<u64> {
        // SAFETY: the test thread is the only consumer.
        match unsafe { queue.pop() } {
            Pop::Entry(e) => Some(e.state().deadline()),
            Pop::Empty => None,
            Pop::MidPush => panic!("no producer is mid-push"),
        }
    }

    #[test]
    fn first_in_first_out_and_reusable_after_emptying() {
        let queue = Inbound::new();
        assert!(queue.is_empty());
        assert_eq!(pop(&queue), None);
        for round in 0..3 {
            for d in 0..5 {
                queue.push(entry(round * 10 + d));
            }
            assert!(!queue.is_empty());
            for d in 0..5 {
                assert_eq!(pop(&queue), Some(round * 10 + d));
            }
            assert!(queue.is_empty());
            assert_eq!(pop(&queue), None);
        }
    }

    #[test]
    fn dropping_a_queue_releases_what_it_holds() {
        let queue = Inbound::new();
        let kept = entry(7);
        queue.push(kept.clone());
        assert_eq!(EntryRef::strong_count(&kept), 2);
        drop(queue);
        assert_eq!(EntryRef::strong_count(&kept), 1);
    }

    #[test]
    fn many_producers_one_consumer_lose_nothing() {
        const PRODUCERS: u64 = 4;
        let per = if cfg!(miri) { 50 } else { 20_000 };
        let queue = Arc::new(Inbound::new());
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let queue = queue.clone();
                thread::spawn(move || {
                    for i in 0..per {
                        queue.push(entry(p * 1_000_000 + i));
                    }
                })
            })
            .collect();
        let mut seen = vec![Vec::new(); PRODUCERS as usize];
        let mut got = 0;
        while got < PRODUCERS * per {
            // SAFETY: this thread is the only consumer.
            match unsafe { queue.pop() } {
                Pop::Entry(e) => {
                    let d = e.state().deadline();
                    seen[(d / 1_000_000) as usize].push(d % 1_000_000);
                    got += 1;
                }
                Pop::Empty | Pop::MidPush => thread::yield_now(),
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        for per_producer in seen {
            // Each producer's entries arrive once each, in its order.
            assert_eq!(per_producer, (0..per).collect::<Vec<_>>());
        }
        assert!(queue.is_empty());
    }
}
