//! The `floor` group: the bare cost a schedule + cancel cannot avoid.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, Throughput};
use crossbeam_queue::SegQueue;

/// A stand-in for shardwheel's timer entry as the floor was first set: a state word, two
/// intrusive links and a boxed callback, 40 bytes; with the reference count, one 48-byte
/// allocation. (The engine's entry is now 8 bytes smaller: its callback box is one word.)
/// `timeout_poll`'s floor holds a waker instead, as a sleep's timer does.
pub(crate) struct FloorEntry<C = Option<Box<dyn FnOnce() + Send + Sync>>> {
    state: AtomicU64,
    links: [usize; 2],
    callback: C,
}

// The floor's entry stays the size it was set at, whichever callback it holds.
const _: () = assert!(std::mem::size_of::<FloorEntry>() == 40);
const _: () = assert!(std::mem::size_of::<FloorEntry<std::task::Waker>>() == 40);

const PENDING: u64 = 0;
const CANCELLED: u64 = 1;

/// The floor's timer: an entry pushed to a queue and taken from it, as a shard takes a timer.
/// Dropping it cancels with one `compare_exchange` and frees the entry. These are the steps
/// of `alloc_queue_cas_free`, whose body stays as first written: through this type it
/// measured 1–2 ns slower, which would move the figure the targets are set against.
pub(crate) struct FloorTimer<C> {
    /// The shard's reference, dropped first.
    taken: triomphe::Arc<FloorEntry<C>>,
    entry: triomphe::Arc<FloorEntry<C>>,
}

impl<C> FloorTimer<C> {
    #[inline]
    pub(crate) fn schedule(queue: &SegQueue<triomphe::Arc<FloorEntry<C>>>, callback: C) -> Self {
        let entry = triomphe::Arc::new(FloorEntry {
            state: AtomicU64::new(black_box(PENDING)),
            links: [0; 2],
            callback,
        });
        queue.push(entry.clone());
        let taken = queue.pop().expect("the entry just pushed");
        FloorTimer { taken, entry }
    }
}

impl<C> Drop for FloorTimer<C> {
    #[inline]
    fn drop(&mut self) {
        let won = self
            .entry
            .state
            .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        black_box((won, &self.taken.links, &self.taken.callback));
    }
}

pub(crate) fn floor(c: &mut Criterion) {
    let mut group = c.benchmark_group("floor");
    group.throughput(Throughput::Elements(1));
    let queue = SegQueue::new();
    group.bench_function("alloc_queue_cas_free", |b| {
        b.iter(|| {
            // The handle keeps one reference and the shard's queue carries the other.
            let entry = triomphe::Arc::new(FloorEntry {
                state: AtomicU64::new(black_box(PENDING)),
                links: [0; 2],
                callback: Some(Box::new(|| {})),
            });
            queue.push(entry.clone());
            let taken = queue.pop().expect("the entry just pushed");
            let won = entry
                .state
                .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
            black_box((won, &taken.links, &taken.callback));
            drop(taken);
            drop(entry);
        })
    });
    // What reclaiming entries through crossbeam-epoch would cost instead of a reference count:
    // an allocation, a pin, and a deferred destruction (the engine uses neither epoch nor this
    // bench's `Arc`; see the README's design section).
    group.bench_function("epoch_alloc_pin_defer", |b| {
        b.iter(|| {
            let guard = crossbeam_epoch::pin();
            let entry = crossbeam_epoch::Owned::new(FloorEntry {
                state: AtomicU64::new(black_box(PENDING)),
                links: [0; 2],
                callback: Some(Box::new(|| {})),
            })
            .into_shared(&guard);
            // SAFETY: the entry was never published, so no other thread can hold it; it is
            // destroyed once this guard's epoch has passed.
            unsafe { guard.defer_destroy(entry) };
        })
    });
    group.bench_function("refcount_alloc_clone_free", |b| {
        b.iter(|| {
            let entry = triomphe::Arc::new(FloorEntry {
                state: AtomicU64::new(black_box(PENDING)),
                links: [0; 2],
                callback: Some(Box::new(|| {})),
            });
            let held = entry.clone();
            drop(black_box(entry));
            drop(held);
        })
    });
    group.finish();
}
