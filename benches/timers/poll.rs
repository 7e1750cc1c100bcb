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
//! - `pending_once/no_timer`: the two polls of the bare future, under all the others.
//! - `pending_once/floor`: the `floor` group's schedule + cancel as a timeout would use it:
//!   the first pending poll schedules a `FloorTimer` holding a clone of the waker; the end
//!   cancels it. It reads no clock: the least a timeout on shardwheel's design can cost.
//! - `pending_once/floor_clock`: the same, reading the clock once when made as shardwheel
//!   does (the processor's time-stamp counter on x86-64, else `Instant::now`).
//!
//! Peers: `shardwheel` (the default engine's free `timeout`), `tokio` (`tokio::time::timeout`,
//! inside a current-thread runtime's context, which it needs).

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use crossbeam_queue::SegQueue;

use crate::floor::{FloorEntry, FloorTimer};

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

/// A timeout of the floor's pieces (see the module's docs), around `future`.
struct FloorTimeout<'a, F> {
    future: F,
    /// The clock's reading when made, or 0.
    made: u64,
    queue: &'a SegQueue<triomphe::Arc<FloorEntry<Waker>>>,
    timer: Option<FloorTimer<Waker>>,
}

impl<F: Future + Unpin> Future for FloorTimeout<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if let Poll::Ready(output) = Pin::new(&mut self.future).poll(cx) {
            self.timer = None;
            return Poll::Ready(output);
        }
        if self.timer.is_none() {
            // The deadline would count from the reading.
            black_box(self.made);
            self.timer = Some(FloorTimer::schedule(self.queue, cx.waker().clone()));
        }
        Poll::Pending
    }
}

impl<'a, F> FloorTimeout<'a, F> {
    fn new(future: F, queue: &'a SegQueue<triomphe::Arc<FloorEntry<Waker>>>, read: bool) -> Self {
        let made = if read { clock_reading() } else { 0 };
        FloorTimeout {
            future,
            made,
            queue,
            timer: None,
        }
    }
}

/// The cheapest clock reading shardwheel takes for a new timer.
#[cfg(target_arch = "x86_64")]
fn clock_reading() -> u64 {
    // SAFETY: `rdtsc` has no preconditions; every x86-64 processor has it.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn clock_reading() -> u64 {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
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
    let queue = SegQueue::new();
    for (peer, read) in [("floor", false), ("floor_clock", true)] {
        group.bench_function(id("pending_once", peer), |b| {
            b.iter(|| {
                finish(FloorTimeout::new(
                    black_box(PendingOnce(false)),
                    &queue,
                    read,
                ))
            })
        });
    }
    group.finish();
}
