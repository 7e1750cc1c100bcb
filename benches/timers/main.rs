//! shardwheel beside the timers a Rust user would pick instead, on the same patterns.
//!
//! Groups (each reports elements per second):
//!
//! - `schedule`: schedule a batch of [`BATCH`] timers with no-op callbacks, delays uniform in
//!   [1 s, 30 s] from a fixed-seed splitmix64, keeping the handles. Only the scheduling is
//!   timed; the timers are cancelled (or dropped) afterwards, untimed.
//! - `cancel`: cancel a batch of [`BATCH`] timers that are already scheduled and, where a
//!   background thread takes timers in, already taken in. Only the cancelling is timed.
//! - `schedule_cancel`: the RPC churn pair. Each op schedules a timer and cancels the one the
//!   same thread scheduled [`RING`] ops earlier (a ring of handles), from 1 and from 2 threads
//!   that start together at a barrier. Timed from the first thread's start to the last
//!   thread's finish; throughput counts the ops of all threads.
//! - `fire`: schedule [`FIRE_BATCH`] timers due 1–3 ms ahead whose callbacks bump a counter;
//!   timed from the first schedule until every callback has run.
//! - `fire_burst`: schedule [`BURST`] timers all due at one instant [`BURST_LEAD`] ahead (the
//!   scheduling must be over by then, or the benchmark fails); timed from that instant until
//!   the last callback has run: how fast a peer fires a burst, not how long it takes to start.
//!   (hierarchical_hash_wheel_timer counts a delay from when its thread takes the message in,
//!   so its timers come due spread over the time its thread takes to drain them, and its
//!   figure includes that.)
//! - `delay_queue`: shardwheel's `DelayQueue` beside tokio-util's, each driven from one task
//!   in `Runtime::block_on` of a multi-thread tokio runtime (tokio-util's needs its time
//!   driver; shardwheel's needs no runtime but runs under the same one, so the executors
//!   match). Ids: `insert_remove/<peer>` inserts [`DQ_BATCH`] values with RPC-deadline delays
//!   and then removes each by its key, the path of a deadline that is met; `insert_expire/<peer>`
//!   inserts [`DQ_BATCH`] values due 1–2 ms ahead and is timed until the last has come out of
//!   the queue. See [`delay_queue`].
//! - `async`: timeouts and sleeps used from tasks on a tokio runtime's workers, beside
//!   `tokio::time` and futures-timer, and the timeouts beside pingora-timeout; `async_cpu` (on Linux), the loops of `async` timed by
//!   the whole process's CPU time. See [`tasks`].
//! - `timeout_poll`: a timeout made and polled to its end on one thread with no runtime, ready
//!   at once or pending once, shardwheel (also inside a deadline scope) beside tokio and
//!   the `floor` group's pieces made into a timeout: the engine's cost per timeout without
//!   an executor's noise. See [`poll`].
//! - `floor`: the bare cost a schedule + cancel cannot avoid on shardwheel's design: one
//!   reference-counted allocation of 48 bytes, one queue push and pop (crossbeam's `SegQueue`
//!   standing in for the engine's intrusive queue), one `compare_exchange` on an
//!   `AtomicU64`, and the free. On one thread, so malloc's per-thread cache serves the
//!   allocation and takes back the free; in the engine the free usually happens on a shard
//!   thread, which the floor does not show.
//! - `snapshot`: `TimerEngine::pending_timers` over a million pending timers, with sites off
//!   and on, and the lateness of a timer due every tick while it is taken; and schedule +
//!   cancel with and without `track_sites`. shardwheel alone. See [`snapshot`].
//!
//! Peers:
//!
//! - `shardwheel`: `TimerEngine::builder().build()` with the defaults (one shard per cpu,
//!   1 ms tick, callbacks on a rayon pool); in `fire` also `shardwheel_inline`, whose callbacks
//!   run on the shard threads.
//! - `tokio`: `tokio::time::sleep` on a multi-thread runtime. A sleep is boxed, pinned and
//!   polled once, which inserts it into the runtime's timer wheel; cancelling drops it. The
//!   threads' loops run inside `Runtime::block_on`. In `fire` each timer is a spawned task
//!   that sleeps and then runs the callback.
//! - `hierarchical_hash_wheel_timer`: its thread-backed `TimerWithThread` with closure state
//!   and `u64` ids; scheduling and cancelling send a message to the timer thread.
//! - `futures_timer`: `futures_timer::Delay`, polled once, dropped to cancel. It has no
//!   executor of its own: in `fire` the delays are driven by a `FuturesUnordered` on the
//!   benchmark thread, and the "callback" runs there as each completes.
//! - `mutex_heap`: the naive baseline, [`MutexHeapTimer`](peers::MutexHeapTimer): one mutex around a binary heap of
//!   deadlines and the pending callbacks, one thread sleeping on a condvar.
//!
//! Times are what the calling threads pay. Work a peer hands to a thread of its own
//! (shardwheel's shard threads, the hierarchical wheel's timer thread, futures-timer's helper
//! thread) runs beside them on the same cpus and counts only as far as it slows them down;
//! between batches and samples it is left to drain, untimed. This flatters a peer whose
//! thread falls behind its callers: the hierarchical wheel's thread, in particular, took about
//! as long again as the timed part to drain its queue after a `schedule_cancel` sample on a
//! 2-cpu machine, so its sustainable churn rate is about half the reported one.
//!
//! Files: `peers/` holds one file per peer, `patterns` what each group runs on a peer,
//! `groups` the groups every peer takes part in, and `reset`, `delay_queue`, `tasks` (the
//! `async` groups), `poll` (`timeout_poll`) and `floor` a file each.
//!
//! Every peer above takes part in every group but `snapshot` and `timeout_poll`. Configuration
//! is at the bottom (`criterion_group!`): 10 samples, 1 s warm-up and 3 s measurement per
//! benchmark, which command-line flags override.

mod delay_queue;
mod floor;
mod groups;
mod patterns;
mod peers;
mod poll;
mod reset;
mod snapshot;
mod tasks;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

use delay_queue::delay_queue;
use floor::floor;
use groups::{cancel, fire, fire_burst, schedule, schedule_cancel};
use poll::timeout_poll;
use reset::reset;
use snapshot::snapshot;
use tasks::tasks;

/// Timers per batch in `schedule` and `cancel`.
const BATCH: usize = 10_000;
/// How many ops back a churn op cancels: the handles a thread keeps in flight.
const RING: usize = 1_000;
/// Timers per batch in `fire`.
const FIRE_BATCH: usize = 50_000;
/// Timers in a `fire_burst`.
const BURST: usize = 200_000;
/// How far ahead a `fire_burst`'s timers are due: time enough to schedule them all.
const BURST_LEAD: Duration = Duration::from_millis(400);
/// Delays a churn thread cycles through (a power of two).
const CHURN_DELAYS: usize = 4_096;

/// Counts the callbacks run in `fire`. A static, so the callbacks capture nothing.
static FIRED: AtomicUsize = AtomicUsize::new(0);

/// The splitmix64 generator: a fixed seed gives every peer the same delays.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` delays uniform in `[min, max]`.
fn delays(n: usize, seed: u64, min: Duration, max: Duration) -> Vec<Duration> {
    let mut rng = SplitMix64(seed);
    let span = (max - min).as_nanos() as u64 + 1;
    (0..n)
        .map(|_| min + Duration::from_nanos(rng.next() % span))
        .collect()
}

/// Delays of RPC deadlines: uniform in [1 s, 30 s].
fn rpc_delays(n: usize) -> Vec<Duration> {
    delays(n, 0x5EED, Duration::from_secs(1), Duration::from_secs(30))
}

/// Spins (yielding) until `n` callbacks have run.
fn wait_fired(n: usize) {
    let give_up = Instant::now() + Duration::from_secs(60);
    for spin in 1u64.. {
        if FIRED.load(Ordering::Acquire) >= n {
            return;
        }
        // Reading the clock on every turn would take time from the threads being waited for.
        if spin % 1024 == 0 {
            assert!(
                Instant::now() < give_up,
                "only {} of {n} callbacks ran within 60 s",
                FIRED.load(Ordering::Acquire)
            );
        }
        thread::yield_now();
    }
}

/// One timer implementation, as the benchmarks drive it.
trait Peer: Sync {
    /// What one thread schedules and cancels through.
    type Local: Local;

    /// A new per-thread scheduling handle.
    fn local(&self) -> Self::Local;

    /// Runs one thread's part of a benchmark where the peer's API may be called.
    fn enter<R>(&self, body: impl FnOnce() -> R) -> R {
        body()
    }

    /// Waits, untimed, until the peer's own threads have taken in what they were handed, with
    /// `live` timers still pending.
    fn settle(&self, _live: usize) {}

    /// Schedules one timer per delay, each with a callback that bumps [`FIRED`], and returns
    /// once all have run.
    fn fire(&self, delays: &[Duration]);

    /// Schedules `n` timers due at `due`, each with a callback that bumps [`FIRED`]; returns
    /// when the scheduling was over, once all have run.
    fn fire_burst(&self, due: Instant, n: usize) -> Instant;

    /// Stops the peer and joins its threads.
    fn shutdown(self);
}

/// A thread's scheduling handle.
trait Local {
    /// What cancels one timer.
    type Handle;

    /// Schedules a timer with a no-op callback.
    fn schedule(&mut self, delay: Duration) -> Self::Handle;

    /// Cancels a timer scheduled through this handle.
    fn cancel(&mut self, handle: Self::Handle);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = schedule, cancel, schedule_cancel, fire, fire_burst, reset, delay_queue, floor, tasks,
        timeout_poll, snapshot
}
criterion_main!(benches);
