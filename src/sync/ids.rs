//! Numbers that tell threads and engines apart.

/// A small per-thread number, handed out once per thread, that spreads producer threads over a
/// shard's lanes. Under loom every thread gets 0 (a static loom atomic cannot outlive a model).
#[cfg(not(loom))]
#[inline]
pub(crate) fn thread_number() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;
    /// `NUMBER` before the thread's first call: a number no thread has.
    const NONE: usize = usize::MAX;
    static NEXT: StdAtomicUsize = StdAtomicUsize::new(0);
    thread_local! {
        // Const and without a destructor: read on each schedule with no check of its own.
        static NUMBER: Cell<usize> = const { Cell::new(NONE) };
    }
    #[cold]
    fn first() -> usize {
        // Relaxed: the counter only hands out distinct numbers; nothing is published with it.
        let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        NUMBER.with(|cell| cell.set(number));
        number
    }
    match NUMBER.with(Cell::get) {
        NONE => first(),
        number => number,
    }
}

#[cfg(loom)]
pub(crate) fn thread_number() -> usize {
    0
}

/// The calling thread's lane index: the smallest free one when first asked, given back at
/// exit, so lanes follow the live threads. (A lane's owner is told by the never-reused
/// `owner_number`.) Past its thread-local destructors, the thread number; 0 under loom.
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

/// The calling thread's never-reused number, for a lane owner's single-writer paths (see
/// `lane`). `None` under loom (every thread is 0): models take the shared paths, and the
/// recycling stack has a model of its own.
#[cfg(not(loom))]
#[inline]
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
    // Relaxed: only hands out distinct numbers. A std atomic even under loom: no modelled
    // protocol, and a static loom atomic cannot outlive a model.
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The first of `count` consecutive numbers no other caller has had, each larger than every
/// earlier one: delay-queue keys, never valid in two queues nor twice in one.
pub(crate) fn next_ids(count: u64) -> u64 {
    use std::sync::atomic::AtomicU64 as StdAtomicU64;
    static NEXT: StdAtomicU64 = StdAtomicU64::new(1);
    // Relaxed: only hands out distinct, increasing blocks (a std atomic, as
    // `next_engine_id`).
    NEXT.fetch_add(count, std::sync::atomic::Ordering::Relaxed)
}
