//! An unbounded multi-producer queue, visible to loom.

#[cfg(loom)]
use super::{AtomicUsize, Mutex, Ordering};

/// An unbounded multi-producer queue: crossbeam's lock-free `SegQueue`, or under loom a
/// loom-visible stand-in (loom cannot see inside crossbeam's atomics). The stand-in keeps its
/// items behind a loom mutex but answers `is_empty` from a separate length counter written
/// with Release and read with Acquire, like a lock-free queue's indices: it promises no more
/// ordering than the real queue does, so a protocol that leans on a missing fence fails the
/// model instead of passing through the mutex's stronger ordering.
pub(crate) struct SegQueue<T> {
    #[cfg(not(loom))]
    inner: crossbeam_queue::SegQueue<T>,
    #[cfg(loom)]
    inner: Mutex<std::collections::VecDeque<T>>,
    #[cfg(loom)]
    len: AtomicUsize,
}

#[cfg(not(loom))]
impl<T> SegQueue<T> {
    pub(crate) fn new() -> Self {
        SegQueue {
            inner: crossbeam_queue::SegQueue::new(),
        }
    }

    pub(crate) fn push(&self, value: T) {
        self.inner.push(value);
    }

    pub(crate) fn pop(&self) -> Option<T> {
        self.inner.pop()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

#[cfg(loom)]
impl<T> SegQueue<T> {
    pub(crate) fn new() -> Self {
        SegQueue {
            inner: Mutex::new(std::collections::VecDeque::new()),
            len: AtomicUsize::new(0),
        }
    }

    pub(crate) fn push(&self, value: T) {
        self.inner.lock().push_back(value);
        self.len.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn pop(&self) -> Option<T> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let value = self.inner.lock().pop_front();
        if value.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        value
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }
}
