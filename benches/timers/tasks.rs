//! The `async` and `async_cpu` groups: timers used from tasks on a tokio runtime's worker
//! threads, where a tokio user meets them.
//!
//! Every benchmark runs on one multi-thread runtime with two workers. The timed part is one
//! task spawned from outside that spawns the working tasks, so that they start on the workers
//! (not in `block_on`), and awaits them all:
//!
//! - `timeout_ready/<peer>`: [`TASKS`] tasks, each looping `timeout(5 s, yield_now())`: a
//!   call answered after one yield, the timer cancelled unfired. `timeout_ready/no_timer`
//!   loops the bare `yield_now()`, the cost the timeout adds to.
//! - `timeout_in_scope/shardwheel`: `timeout_ready`'s loop with each task inside a deadline
//!   scope of a minute (`shardwheel::deadline::within`): each poll sets and restores the
//!   current deadline, and each timeout is clamped against it. Less `timeout_ready`, the
//!   scope's cost per timeout.
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
//! `futures_timer` (its `Delay`, raced against the future by hand for a timeout); in
//! `timeout_ready` also `pingora_timeout`, the `fast_timeout` Cloudflare's proxy uses on its
//! hot paths: a timer made only once the future is pending, shared by every timeout of its
//! thread that ends in the same 10 ms bucket, fired by a thread of its own. It has no sleep
//! to push ahead, so it sits out `sleep_reset` and `sleep_fire`.
//!
//! `async_cpu` (on Linux) runs `timeout_ready` and `sleep_reset` timed by the CPU time of the
//! whole process instead of the wall clock: the runtime's workers, the timers' own threads
//! and anything else running, spinning included. Its throughput is operations per
//! CPU-second, less swayed by other load on the machine than the wall clock's. A timer
//! thread's work deferred past an iteration's end (a cancelled timer is freed at the next
//! tick) counts only where it overlaps the next iteration; an iteration lasts hundreds of
//! milliseconds, a tick one. `sleep_fire` is left out: its iterations last a few milliseconds, within
//! the delay with which the process clock counts threads running at the moment it is read.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
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
pub(crate) const DEADLINE: Duration = Duration::from_secs(5);
/// An idle timeout that is never reached.
const IDLE: Duration = Duration::from_secs(60);
/// A deadline scope around `timeout_in_scope`'s tasks (and `timeout_poll`'s): later than their
/// timeouts, which keep their own deadlines (and so their timers) as in `timeout_ready`.
pub(crate) const SCOPE: Duration = Duration::from_secs(60);

/// A timeout as a task uses it.
trait AsyncTimeout: Copy + Send + Sync + 'static {
    /// `future` under a deadline `delay` from now; `Err` if the deadline came first.
    fn timeout<F: Future + Send>(
        self,
        delay: Duration,
        future: F,
    ) -> impl Future<Output = Result<F::Output, ()>> + Send;
}

/// A timer implementation as a task uses it: its timeout, and a sleep it can move.
trait AsyncPeer: AsyncTimeout {
    /// A sleep that is already registered (polled once if the peer registers on poll).
    type Sleep: Future<Output = ()> + Unpin + Send;

    fn sleep(self, delay: Duration) -> Self::Sleep;

    /// Moves a sleep to `delay` from now.
    fn reset(self, sleep: &mut Self::Sleep, delay: Duration);
}

#[derive(Clone, Copy)]
struct Shardwheel;

impl AsyncTimeout for Shardwheel {
    async fn timeout<F: Future + Send>(self, delay: Duration, future: F) -> Result<F::Output, ()> {
        shardwheel::timeout(delay, future).await.map_err(drop)
    }
}

impl AsyncPeer for Shardwheel {
    type Sleep = shardwheel::Sleep;

    fn sleep(self, delay: Duration) -> Self::Sleep {
        shardwheel::sleep(delay)
    }

    fn reset(self, sleep: &mut Self::Sleep, delay: Duration) {
        sleep.reset(delay);
    }
}

#[derive(Clone, Copy)]
struct Tokio;

impl AsyncTimeout for Tokio {
    async fn timeout<F: Future + Send>(self, delay: Duration, future: F) -> Result<F::Output, ()> {
        tokio::time::timeout(delay, future).await.map_err(drop)
    }
}

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
}

#[derive(Clone, Copy)]
struct FuturesTimer;

impl AsyncTimeout for FuturesTimer {
    async fn timeout<F: Future + Send>(self, delay: Duration, future: F) -> Result<F::Output, ()> {
        let mut delay = futures_timer::Delay::new(delay);
        race(future, &mut delay).await.ok_or(())
    }
}

impl AsyncPeer for FuturesTimer {
    type Sleep = futures_timer::Delay;

    fn sleep(self, delay: Duration) -> Self::Sleep {
        futures_timer::Delay::new(delay)
    }

    fn reset(self, sleep: &mut Self::Sleep, delay: Duration) {
        sleep.reset(delay);
    }
}

#[derive(Clone, Copy)]
struct Pingora;

impl AsyncTimeout for Pingora {
    async fn timeout<F: Future + Send>(self, delay: Duration, future: F) -> Result<F::Output, ()> {
        pingora_timeout::fast_timeout::fast_timeout(delay, future)
            .await
            .map_err(drop)
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

/// What a benchmark times.
#[derive(Clone, Copy)]
enum Meter {
    /// The wall clock.
    Wall,
    /// The CPU time of the whole process, all threads together.
    #[cfg(target_os = "linux")]
    Cpu,
}

/// Where a [`Meter`] started.
enum Mark {
    Wall(Instant),
    #[cfg(target_os = "linux")]
    Cpu(Duration),
}

impl Meter {
    fn start(self) -> Mark {
        match self {
            Meter::Wall => Mark::Wall(Instant::now()),
            #[cfg(target_os = "linux")]
            Meter::Cpu => Mark::Cpu(process_cpu()),
        }
    }
}

impl Mark {
    fn elapsed(&self) -> Duration {
        match self {
            Mark::Wall(start) => start.elapsed(),
            #[cfg(target_os = "linux")]
            Mark::Cpu(start) => process_cpu().saturating_sub(*start),
        }
    }
}

/// The CPU time the process has used so far, all its threads together.
#[cfg(target_os = "linux")]
fn process_cpu() -> Duration {
    let mut now = std::mem::MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: `now` is valid for the call to write a `timespec` to.
    let done = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, now.as_mut_ptr()) };
    assert_eq!(done, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    // SAFETY: the call succeeded, so it wrote the whole `timespec`.
    let now = unsafe { now.assume_init() };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Spawns `tasks` from a task on `runtime`'s workers and returns how long they took together,
/// by `meter`.
fn on_workers<T>(
    runtime: &Runtime,
    meter: Meter,
    tasks: impl FnOnce() -> Vec<T> + Send + 'static,
) -> Duration
where
    T: Future<Output = ()> + Send + 'static,
{
    runtime.block_on(async {
        tokio::spawn(async move {
            let start = meter.start();
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

fn timeout_ready<P: AsyncTimeout>(
    runtime: &Runtime,
    peer: P,
    iters: u64,
    meter: Meter,
) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, meter, move || {
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

/// `timeout_ready` on shardwheel, each task inside a deadline scope.
fn timeout_in_scope(runtime: &Runtime, iters: u64, meter: Meter) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, meter, move || {
        (0..TASKS)
            .map(|_| {
                shardwheel::deadline::within(SCOPE, async move {
                    for _ in 0..ops {
                        let answer = Shardwheel.timeout(DEADLINE, yield_now()).await;
                        assert!(answer.is_ok(), "a timeout of 5 s elapsed");
                    }
                })
            })
            .collect()
    })
}

fn no_timer(runtime: &Runtime, iters: u64, meter: Meter) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, meter, move || {
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
fn reset_floor(runtime: &Runtime, iters: u64, meter: Meter) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, meter, move || {
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

fn sleep_reset<P: AsyncPeer>(runtime: &Runtime, peer: P, iters: u64, meter: Meter) -> Duration {
    let ops = iters as usize * TASK_OPS;
    on_workers(runtime, meter, move || {
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
    bench_loops(&mut group, &runtime, Meter::Wall);
    bench_fires(&mut group, &runtime);
    group.finish();
    #[cfg(target_os = "linux")]
    {
        let mut group = c.benchmark_group("async_cpu");
        bench_loops(&mut group, &runtime, Meter::Cpu);
        group.finish();
    }
}

/// `timeout_ready` and `sleep_reset` for every peer, timed by `meter`.
fn bench_loops(group: &mut BenchmarkGroup<'_, WallTime>, runtime: &Runtime, meter: Meter) {
    group.throughput(Throughput::Elements((TASKS * TASK_OPS) as u64));
    let id = |bench, peer| BenchmarkId::new(bench, peer);
    group.bench_function(id("timeout_ready", "shardwheel"), |b| {
        b.iter_custom(|iters| timeout_ready(runtime, Shardwheel, iters, meter))
    });
    group.bench_function(id("timeout_in_scope", "shardwheel"), |b| {
        b.iter_custom(|iters| timeout_in_scope(runtime, iters, meter))
    });
    group.bench_function(id("timeout_ready", "tokio"), |b| {
        b.iter_custom(|iters| timeout_ready(runtime, Tokio, iters, meter))
    });
    group.bench_function(id("timeout_ready", "futures_timer"), |b| {
        b.iter_custom(|iters| timeout_ready(runtime, FuturesTimer, iters, meter))
    });
    group.bench_function(id("timeout_ready", "pingora_timeout"), |b| {
        b.iter_custom(|iters| timeout_ready(runtime, Pingora, iters, meter))
    });
    group.bench_function(id("timeout_ready", "no_timer"), |b| {
        b.iter_custom(|iters| no_timer(runtime, iters, meter))
    });
    group.bench_function(id("sleep_reset", "shardwheel"), |b| {
        b.iter_custom(|iters| sleep_reset(runtime, Shardwheel, iters, meter))
    });
    group.bench_function(id("sleep_reset", "tokio"), |b| {
        b.iter_custom(|iters| sleep_reset(runtime, Tokio, iters, meter))
    });
    group.bench_function(id("sleep_reset", "futures_timer"), |b| {
        b.iter_custom(|iters| sleep_reset(runtime, FuturesTimer, iters, meter))
    });
    group.bench_function(id("sleep_reset", "no_timer"), |b| {
        b.iter_custom(|iters| reset_floor(runtime, iters, meter))
    });
}

/// `sleep_fire` for every peer, on the wall clock.
fn bench_fires(group: &mut BenchmarkGroup<'_, WallTime>, runtime: &Runtime) {
    group.throughput(Throughput::Elements(FIRE_TASKS as u64));
    let id = |bench, peer| BenchmarkId::new(bench, peer);
    group.bench_function(id("sleep_fire", "shardwheel"), |b| {
        b.iter_custom(|iters| sleep_fire(runtime, Shardwheel, iters))
    });
    group.bench_function(id("sleep_fire", "tokio"), |b| {
        b.iter_custom(|iters| sleep_fire(runtime, Tokio, iters))
    });
    group.bench_function(id("sleep_fire", "futures_timer"), |b| {
        b.iter_custom(|iters| sleep_fire(runtime, FuturesTimer, iters))
    });
    group.bench_function(id("sleep_fire", "no_timer"), |b| {
        b.iter_custom(|iters| fire_floor(runtime, iters))
    });
}
