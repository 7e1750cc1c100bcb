//! The `timeout_poll` group: one thread, no runtime, a no-op waker. Each op makes a timeout
//! of 5 s and polls it to its end, so the engine's own cost per timeout stands alone, free of
//! an executor's noise:
//!
//! - `ready/<peer>`: the future is ready at the first poll; the timer is never registered.
//! - `pending_once/<peer>`: the future is pending once; the first poll registers the timer,
//!   the second finishes, and the drop cancels it.
//! - `pending_once_in_block/shardwheel`: `pending_once` made and awaited in an `async` block,
//!   as a call inside a scope is written, but with no scope.
//! - `pending_once_in_scope/shardwheel`: that block run inside a deadline scope a minute away
//!   (`within_at`, an instant read once, so no clock is read for the scope); less
//!   `pending_once_in_block`, what a scope adds to a timeout made in it.
//! - `pending_once/no_timer`: the two polls of the bare future, the floor under the others.
//!
//! Peers: `shardwheel` (the default engine's free `timeout`), `tokio` (`tokio::time::timeout`,
//! inside a current-thread runtime's context, which it needs).

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};

use crate::tasks::{DEADLINE, SCOPE};

/// Pending at its first poll (waking its waker), ready at the next.
struct PendingOnce(bool);

impl Future for PendingOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Polls `future` until it is ready (with a no-op waker: every future here wakes itself).
fn finish<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

pub(crate) fn timeout_poll(c: &mut Criterion) {
    // Start the default engine, untimed.
    drop(shardwheel::sleep(Duration::ZERO));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("build the runtime");
    let _tokio = runtime.enter();
    let mut group = c.benchmark_group("timeout_poll");
    let id = |bench, peer| BenchmarkId::new(bench, peer);
    group.bench_function(id("ready", "shardwheel"), |b| {
        b.iter(|| finish(shardwheel::timeout(DEADLINE, async { black_box(1) })))
    });
    group.bench_function(id("ready", "tokio"), |b| {
        b.iter(|| finish(tokio::time::timeout(DEADLINE, async { black_box(1) })))
    });
    group.bench_function(id("pending_once", "shardwheel"), |b| {
        b.iter(|| finish(shardwheel::timeout(DEADLINE, PendingOnce(false))))
    });
    group.bench_function(id("pending_once_in_block", "shardwheel"), |b| {
        b.iter(|| finish(async { shardwheel::timeout(DEADLINE, PendingOnce(false)).await }))
    });
    let scope_deadline = Instant::now() + SCOPE;
    group.bench_function(id("pending_once_in_scope", "shardwheel"), |b| {
        b.iter(|| {
            let scope = shardwheel::deadline::within_at(scope_deadline, async {
                shardwheel::timeout(DEADLINE, PendingOnce(false)).await
            });
            finish(scope)
        })
    });
    group.bench_function(id("pending_once", "tokio"), |b| {
        b.iter(|| finish(tokio::time::timeout(DEADLINE, PendingOnce(false))))
    });
    group.bench_function(id("pending_once", "no_timer"), |b| {
        b.iter(|| finish(black_box(PendingOnce(false))))
    });
    group.finish();
}
