//! The `async` group: timers used from tasks on a tokio runtime's worker threads, where a
//! tokio user meets them.
//!
//! Every benchmark runs on one multi-thread runtime with two workers. The timed part is one
//! task spawned from outside that spawns the working tasks, so that they start on the workers
//! (not in `block_on`), and awaits them all:
//!
//! - `timeout_ready/<peer>`: [`TASKS`] tasks, each looping `timeout(5 s, yield_now())`: a
//!   call answered after one yield, the timer cancelled unfired. `timeout_ready/no_timer`
//!   loops the bare `yield_now()`, the cost the timeout adds to.
//! - `sleep_reset/<peer>`: [`TASKS`] tasks, each holding an idle timer of 60 s and looping: a
//!   read (a `yield_now()`) raced against the timer, then the timer pushed 60 s ahead again,
//!   as a connection does on every read.
//! - `sleep_fire/<peer>`: [`FIRE_TASKS`] tasks, spawned untimed, that start together (a
//!   barrier) and each await one sleep of 1–3 ms (spread evenly) to completion. Timed from
//!   the start until the last has woken.
//! - `sleep_reset/no_timer` and `sleep_fire/no_timer` are the same loops with no timer (a
//!   future that is never ready; a yield instead of the sleep): the runtime's floor under
//!   them.
//!
//! Peers: `shardwheel` (the default engine's free functions), `tokio` (`tokio::time`) and
//! `futures_timer` (its `Delay`, raced against the future by hand for a timeout).

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use tokio::runtime::Runtime;
use tokio::sync::Barrier;
use tokio::task::yield_now;

/// Tasks in `timeout_ready` and `sleep_reset`.
const TASKS: usize = 200;
/// Operations each of those tasks does per iteration.
const TASK_OPS: usize = 50;
/// Tasks (each one sleep) in `sleep_fire`.
const FIRE_TASKS: usize = 10_000;
/// A timeout that is never reached.
const DEADLINE: Duration = Duration::from_secs(5);
/// An idle timeout that is never reached.
const IDLE: Duration = Duration::from_secs(60);

/// A timer implementation as a task uses it.
trait AsyncPeer: Copy + Send + Sync + 'static {
    /// A sleep that is already registered (polled once if the peer registers on poll).
    type Sleep: Future<Output = ()> + Unpin + Send;

    fn sleep(self, delay: Duration) -> Self::Sleep;

    /// Moves a sleep to `delay` from now.
    fn reset(self, sleep: &mut Self::Sleep, delay: Duration);

    /// `future` under a deadline `delay` from now; `Err` if the deadline came first.
    fn timeout<F: Future + Send>(
        self,
        delay: Duration,
        future: F,
    ) -> impl Future<Output = Result<F::Output, ()>> + Send;
}

#[derive(Clone, Copy)]
struct Shardwheel;

impl AsyncPeer for Shardwheel {
    type Sleep = shardwheel::Sleep;

    fn sleep(self, delay: Duration) -> Self::Sleep {
        shardwheel::sleep(delay)
    }

    fn reset(self, sleep: &mut Self::Sleep, delay: Duration) {
        sleep.reset(delay);
    }

    async fn timeout<F: Future + Send>(self, delay: Duration, future: F) -> Result<F::Output, ()> {
        shardwheel::timeout(delay, future).await.map_err(drop)
    }
}

#[derive(Clone, Copy)]
struct Tokio;

impl AsyncPeer for Tokio {
    type Sleep = Pin<Box<tokio::time::Sleep>>;

    fn sleep(self, delay: Duration) -> Self::Sleep {
        let mut sleep = Box::pin(tokio::time::sleep(delay));
        // The first poll puts the entry into the runtime's wheel.
        let _ = futures::FutureExt::now_or_never(sleep.as_mut());
        sleep
    }

    fn reset(self, sleep: &mut Self::Sleep, delay: Duration) {
        sleep.as_mut().reset(tokio::time::Instant::now() + delay);
    }

    async fn timeout<F: Future + Send>(self, delay: Duration, future: F) -> Result<F::Output, ()> {
        tokio::time::timeout(delay, future).await.map_err(drop)
    }
}

#[derive(Clone, Copy)]
struct FuturesTimer;

impl AsyncPeer for FuturesTimer {
    type Sleep = futures_timer::Delay;

    fn sleep(self, delay: Duration) -> Self::Sleep {
        futures_timer::Delay::new(delay)
    }

    fn reset(self, sleep: &mut Self::Sleep, delay: Duration) {
        sleep.reset(delay);
    }

    async fn timeout<F: Future + Send>(self, delay: Duration, future: F) -> Result<F::Output, ()> {
        let mut delay = futures_timer::Delay::new(delay);
        race(future, &mut delay).await.ok_or(())
    }
}

/// `Some` of `future`'s output, or `None` if `timer` completed first; `future` is polled first.
async fn race<F: Future, T: Future<Output = ()> + Unpin>(
    future: F,
    timer: &mut T,
) -> Option<F::Output> {
    let mut future = pin!(future);
    poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        match Pin::new(&mut *timer).poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Spawns `tasks` from a task on `runtime`'s workers and returns how long they took together.
fn on_workers<T>(runtime: &Runtime, tasks: impl FnOnce() -> Vec<T> + Send + 'static) -> Duration
where
    T: Future<Output = ()> + Send + 'static,
{
    runtime.block_on(async {
        tokio::spawn(async move {
            let start = Instant::now();
            let handles: Vec<_> = tasks().into_iter().map(tokio::spawn).collect();
            for handle in handles {
                handle.await.expect("a benchmark task panicked");
            }
            start.elapsed()
        })
        .await
        .expect("the benchmark's task panicked")
    })
}

fn timeout_ready<P: AsyncPeer>(runtime: &Runtime, peer: P, iters: u64) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, move || {
        (0..TASKS)
            .map(|_| async move {
                for _ in 0..ops {
                    let answer = peer.timeout(DEADLINE, yield_now()).await;
                    assert!(answer.is_ok(), "a timeout of 5 s elapsed");
                }
            })
            .collect()
    })
}

fn no_timer(runtime: &Runtime, iters: u64) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, move || {
        (0..TASKS)
            .map(|_| async move {
                for _ in 0..ops {
                    yield_now().await;
                }
            })
            .collect()
    })
}

/// `sleep_reset`'s loop with a timer that is never ready and never moved: the floor.
fn reset_floor(runtime: &Runtime, iters: u64) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, move || {
        (0..TASKS)
            .map(|_| async move {
                let mut idle = std::future::pending::<()>();
                for _ in 0..ops {
                    let read = race(yield_now(), &mut idle).await;
                    assert!(read.is_some(), "a pending future completed");
                }
            })
            .collect()
    })
}

fn sleep_reset<P: AsyncPeer>(runtime: &Runtime, peer: P, iters: u64) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, move || {
        (0..TASKS)
            .map(|_| async move {
                let mut idle = peer.sleep(IDLE);
                for _ in 0..ops {
                    let read = race(yield_now(), &mut idle).await;
                    assert!(read.is_some(), "an idle timer of 60 s fired");
                    peer.reset(&mut idle, IDLE);
                }
            })
            .collect()
    })
}

fn sleep_fire<P: AsyncPeer>(runtime: &Runtime, peer: P, iters: u64) -> Duration {
    released_together(runtime, iters, move |delay| peer.sleep(delay))
}

/// `sleep_fire` with each task awaiting a yield instead of its sleep: what the runtime spends
/// releasing and joining the tasks, the floor under the sleeps (which add at least their
/// longest, 3 ms).
fn fire_floor(runtime: &Runtime, iters: u64) -> Duration {
    released_together(runtime, iters, |_| yield_now())
}

/// Spawns [`FIRE_TASKS`] tasks untimed, releases them together and times them until each has
/// awaited `wait` for its delay of 1–3 ms.
fn released_together<W: Future<Output = ()> + Send + 'static>(
    runtime: &Runtime,
    iters: u64,
    wait: impl Fn(Duration) -> W + Copy + Send + 'static,
) -> Duration {
    (0..iters)
        .map(|_| {
            runtime.block_on(async {
                tokio::spawn(async move {
                    // The tasks are spawned untimed and start sleeping together.
                    let start = Arc::new(Barrier::new(FIRE_TASKS + 1));
                    let handles: Vec<_> = (0..FIRE_TASKS)
                        .map(|i| {
                            let start = start.clone();
                            let delay =
                                Duration::from_micros(1_000 + (i * 2_000 / FIRE_TASKS) as u64);
                            tokio::spawn(async move {
                                start.wait().await;
                                wait(delay).await;
                            })
                        })
                        .collect();
                    start.wait().await;
                    let began = Instant::now();
                    for handle in handles {
                        handle.await.expect("a benchmark task panicked");
                    }
                    began.elapsed()
                })
                .await
                .expect("the benchmark's task panicked")
            })
        })
        .sum()
}

pub(crate) fn tasks(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("build the runtime");
    // Start the default engine, untimed.
    drop(shardwheel::sleep(Duration::ZERO));

    let mut group = c.benchmark_group("async");
    group.throughput(Throughput::Elements((TASKS * TASK_OPS) as u64));
    let id = |name, peer| BenchmarkId::new(name, peer);
    group.bench_function(id("timeout_ready", "shardwheel"), |b| {
        b.iter_custom(|iters| timeout_ready(&runtime, Shardwheel, iters))
    });
    group.bench_function(id("timeout_ready", "tokio"), |b| {
        b.iter_custom(|iters| timeout_ready(&runtime, Tokio, iters))
    });
    group.bench_function(id("timeout_ready", "futures_timer"), |b| {
        b.iter_custom(|iters| timeout_ready(&runtime, FuturesTimer, iters))
    });
    group.bench_function(id("timeout_ready", "no_timer"), |b| {
        b.iter_custom(|iters| no_timer(&runtime, iters))
    });
    group.bench_function(id("sleep_reset", "shardwheel"), |b| {
        b.iter_custom(|iters| sleep_reset(&runtime, Shardwheel, iters))
    });
    group.bench_function(id("sleep_reset", "tokio"), |b| {
        b.iter_custom(|iters| sleep_reset(&runtime, Tokio, iters))
    });
    group.bench_function(id("sleep_reset", "futures_timer"), |b| {
        b.iter_custom(|iters| sleep_reset(&runtime, FuturesTimer, iters))
    });
    group.bench_function(id("sleep_reset", "no_timer"), |b| {
        b.iter_custom(|iters| reset_floor(&runtime, iters))
    });
    group.throughput(Throughput::Elements(FIRE_TASKS as u64));
    group.bench_function(id("sleep_fire", "shardwheel"), |b| {
        b.iter_custom(|iters| sleep_fire(&runtime, Shardwheel, iters))
    });
    group.bench_function(id("sleep_fire", "tokio"), |b| {
        b.iter_custom(|iters| sleep_fire(&runtime, Tokio, iters))
    });
    group.bench_function(id("sleep_fire", "futures_timer"), |b| {
        b.iter_custom(|iters| sleep_fire(&runtime, FuturesTimer, iters))
    });
    group.bench_function(id("sleep_fire", "no_timer"), |b| {
        b.iter_custom(|iters| fire_floor(&runtime, iters))
    });
    group.finish();
}
