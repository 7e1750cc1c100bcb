//! Numbers that tell threads and engines apart.

/// A small per-thread number, handed out once per thread, that spreads producer threads over a
/// shard's lanes. Under loom every thread gets 0 (a static loom atomic cannot outlive a model).
#[cfg(not(loom))]
pub(crate) fn thread_number() -> usize {
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;
    static NEXT: StdAtomicUsize = StdAtomicUsize::new(0);
    thread_local! {
        // Relaxed: the counter only hands out distinct numbers; nothing is published with it.
        static NUMBER: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    NUMBER.with(|number| *number)
}

#[cfg(loom)]
pub(crate) fn thread_number() -> usize {
    0
}

/// The calling thread's lane index: a small number, the smallest free one when the thread
/// first asks, given back when it exits. It picks the thread's lane in every shard and its home
/// shard, so lanes follow the threads alive now, not every thread there ever was. (Ownership
/// goes by `owner_number`, never reused, so a reused index cannot pass for a lane's owner.) A
/// thread past its thread-local destructors gets its thread number instead. 0 under loom.
#[cfg(not(loom))]
pub(crate) fn lane_index() -> usize {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::sync::{Mutex, PoisonError};

    /// The next index never handed out, and the indices given back.
    static FREE: Mutex<(usize, BinaryHeap<Reverse<usize>>)> = Mutex::new((0, BinaryHeap::new()));

    /// A thread's index; given back when the thread exits.
    struct Index(usize);

    impl Index {
        fn take() -> Self {
            let mut free = FREE.lock().unwrap_or_else(PoisonError::into_inner);
            match free.1.pop() {
                Some(Reverse(index)) => Index(index),
                None => {
                    free.0 += 1;
                    Index(free.0 - 1)
                }
            }
        }
    }

    impl Drop for Index {
        fn drop(&mut self) {
            let mut free = FREE.lock().unwrap_or_else(PoisonError::into_inner);
            free.1.push(Reverse(self.0));
        }
    }

    thread_local! {
        static INDEX: Index = Index::take();
    }
    INDEX
        .try_with(|index| index.0)
        .unwrap_or_else(|_| thread_number())
}

#[cfg(loom)]
pub(crate) fn lane_index() -> usize {
    0
}

/// The calling thread's number, when it may take a single-writer fast path: a lane's first
/// user becomes its owner and counts and recycles entries without read-modify-write
/// operations (see `lane`). Numbers are never reused, so no two threads share one. `None` under
/// loom, where every thread has number 0: models take the shared paths, and the recycling
/// stack has a model of its own.
#[cfg(not(loom))]
pub(crate) fn owner_number() -> Option<usize> {
    Some(thread_number())
}

#[cfg(loom)]
pub(crate) fn owner_number() -> Option<usize> {
    None
}

/// A number no other engine in this process has had.
pub(crate) fn next_engine_id() -> u64 {
    use std::sync::atomic::AtomicU64 as StdAtomicU64;
    static NEXT: StdAtomicU64 = StdAtomicU64::new(1);
    // Relaxed: only hands out distinct numbers. (A std atomic even under loom: ids are not part
    // of any modelled protocol, and a static loom atomic cannot outlive a model.)
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The first of `count` consecutive numbers that no other caller in this process has had, and
/// each larger than every number handed out before it: a delay queue's keys take theirs from
/// such blocks, so a key is never valid in two queues, nor twice in one.
pub(crate) fn next_ids(count: u64) -> u64 {
    use std::sync::atomic::AtomicU64 as StdAtomicU64;
    static NEXT: StdAtomicU64 = StdAtomicU64::new(1);
    // Relaxed: only hands out distinct, increasing blocks; nothing is published with them. (A
    // std atomic even under loom, as `next_engine_id`.) At a block of 2^12 per call, 2^52 calls
    // would be needed to wrap.
    NEXT.fetch_add(count, std::sync::atomic::Ordering::Relaxed)
}
