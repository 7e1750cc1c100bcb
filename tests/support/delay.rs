//! Helpers for the delay queue's tests: a counting waker, polling and draining a queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use shardwheel::{DelayQueue, Expired};

/// A waker that counts its wakes.
#[derive(Default)]
pub struct CountingWaker(AtomicUsize);

impl CountingWaker {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn counting() -> (Arc<CountingWaker>, Waker) {
    let count = Arc::new(CountingWaker::default());
    let waker = Waker::from(count.clone());
    (count, waker)
}

/// Polls once with `waker`.
pub fn poll<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> Poll<Option<Expired<T>>> {
    queue.poll_expired(&mut Context::from_waker(waker))
}

/// Every value `poll_expired` yields now, until it returns `Pending` or `Ready(None)`.
pub fn drain<T>(queue: &mut DelayQueue<T>) -> Vec<Expired<T>> {
    let waker = futures::task::noop_waker();
    let mut out = Vec::new();
    while let Poll::Ready(Some(expired)) = poll(queue, &waker) {
        out.push(expired);
    }
    out
}

pub fn values<T>(expired: Vec<Expired<T>>) -> Vec<T> {
    expired.into_iter().map(Expired::into_inner).collect()
}

pub const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}
