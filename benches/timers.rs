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
//! - `floor`: the bare cost a schedule + cancel cannot avoid on shardwheel's design: one
//!   reference-counted allocation of 48 bytes, one queue push and pop (crossbeam's `SegQueue`
//!   standing in for the engine's intrusive queue), one `compare_exchange` on an
//!   `AtomicU64`, and the free. On one thread, so malloc's per-thread cache serves the
//!   allocation and takes back the free; in the engine the free usually happens on a shard
//!   thread, which the floor does not show.
//!
//! Peers:
//!
//! - `shardwheel`: `TimerEngine::builder().build()` with the defaults (one shard per core,
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
//! - `mutex_heap`: the naive baseline, [`MutexHeapTimer`]: one mutex around a binary heap of
//!   deadlines and the pending callbacks, one thread sleeping on a condvar.
//!
//! Times are what the calling threads pay. Work a peer hands to a thread of its own
//! (shardwheel's shard threads, the hierarchical wheel's timer thread, futures-timer's helper
//! thread) runs beside them on the same cores and counts only as far as it slows them down;
//! between batches and samples it is left to drain, untimed. This flatters a peer whose
//! thread falls behind its callers: the hierarchical wheel's thread, in particular, took about
//! as long again as the timed part to drain its queue after a `schedule_cancel` sample on a
//! 2-core machine, so its sustainable churn rate is about half the reported one.
//!
//! Every peer takes part in every group. Configuration is at the bottom (`criterion_group!`):
//! 10 samples, 1 s warm-up and 3 s measurement per benchmark, which command-line flags
//! override.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode,
    Throughput,
};
use crossbeam_queue::SegQueue;
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use hierarchical_hash_wheel_timer::thread_timer::{TimerRef, TimerWithThread};
use hierarchical_hash_wheel_timer::{
    ClosureTimer, OneShotClosureState, PeriodicClosureState, Timer,
};
use shardwheel::{DelayQueue, TimerEngine, TimerHandle};

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

// ---------------------------------------------------------------------------------------------
// shardwheel

struct Shardwheel {
    engine: Arc<TimerEngine>,
}

impl Shardwheel {
    fn start(inline_callbacks: bool) -> Self {
        let builder = TimerEngine::builder();
        let builder = if inline_callbacks {
            builder.inline_callbacks()
        } else {
            builder
        };
        Shardwheel {
            engine: Arc::new(builder.build().expect("build the engine")),
        }
    }
}

struct ShardwheelLocal(Arc<TimerEngine>);

impl Local for ShardwheelLocal {
    type Handle = TimerHandle;

    fn schedule(&mut self, delay: Duration) -> TimerHandle {
        self.0.schedule(delay, || {}).expect("schedule")
    }

    fn cancel(&mut self, handle: TimerHandle) {
        black_box(handle.cancel());
    }
}

impl Peer for Shardwheel {
    type Local = ShardwheelLocal;

    fn local(&self) -> ShardwheelLocal {
        ShardwheelLocal(self.engine.clone())
    }

    fn settle(&self, live: usize) {
        // A shard takes its queues in once a tick; after that its wheel holds exactly the
        // timers still pending.
        thread::sleep(self.engine.tick());
        let give_up = Instant::now() + Duration::from_secs(5);
        loop {
            let in_wheel: u64 = self.engine.stats().shards.iter().map(|s| s.in_wheel).sum();
            if in_wheel == live as u64 {
                return;
            }
            if Instant::now() > give_up {
                eprintln!("shardwheel: {in_wheel} timers in the wheels, {live} expected");
                return;
            }
            thread::sleep(Duration::from_micros(200));
        }
    }

    fn fire(&self, delays: &[Duration]) {
        for &delay in delays {
            let handle = self.engine.schedule(delay, || {
                FIRED.fetch_add(1, Ordering::Release);
            });
            drop(handle.expect("schedule"));
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        for _ in 0..n {
            let handle = self.engine.schedule_at(due, || {
                FIRED.fetch_add(1, Ordering::Release);
            });
            drop(handle.expect("schedule"));
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        drop(self.engine.shutdown());
    }
}

// ---------------------------------------------------------------------------------------------
// tokio

struct Tokio {
    runtime: tokio::runtime::Runtime,
}

impl Tokio {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_time()
            .build()
            .expect("build the runtime");
        Tokio { runtime }
    }
}

struct TokioLocal;

impl Local for TokioLocal {
    type Handle = Pin<Box<tokio::time::Sleep>>;

    fn schedule(&mut self, delay: Duration) -> Self::Handle {
        let mut sleep = Box::pin(tokio::time::sleep(delay));
        // The first poll inserts the entry into the runtime's wheel.
        let ready = sleep.as_mut().now_or_never();
        debug_assert!(ready.is_none());
        sleep
    }

    fn cancel(&mut self, handle: Self::Handle) {
        drop(handle);
    }
}

impl Peer for Tokio {
    type Local = TokioLocal;

    fn local(&self) -> TokioLocal {
        TokioLocal
    }

    fn enter<R>(&self, body: impl FnOnce() -> R) -> R {
        self.runtime.block_on(async move { body() })
    }

    fn fire(&self, delays: &[Duration]) {
        for &delay in delays {
            self.runtime.spawn(async move {
                tokio::time::sleep(delay).await;
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        let due = tokio::time::Instant::from_std(due);
        for _ in 0..n {
            self.runtime.spawn(async move {
                tokio::time::sleep_until(due).await;
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        self.runtime.shutdown_timeout(Duration::from_secs(5));
    }
}

// ---------------------------------------------------------------------------------------------
// hierarchical_hash_wheel_timer

type WheelTimer = TimerWithThread<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;
type WheelRef = TimerRef<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;

struct HashWheel {
    timer: WheelTimer,
    /// Hands each local handle its own range of timer ids.
    next_range: AtomicU64,
}

impl HashWheel {
    fn start() -> Self {
        HashWheel {
            timer: WheelTimer::new().expect("start the timer thread"),
            next_range: AtomicU64::new(0),
        }
    }

    fn id_range(&self) -> u64 {
        self.next_range.fetch_add(1 << 40, Ordering::Relaxed)
    }
}

struct HashWheelLocal {
    timer: WheelRef,
    next_id: u64,
}

impl Local for HashWheelLocal {
    type Handle = u64;

    fn schedule(&mut self, delay: Duration) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.timer.schedule_action_once(id, delay, |_| {});
        id
    }

    fn cancel(&mut self, id: u64) {
        self.timer.cancel(&id);
    }
}

impl Peer for HashWheel {
    type Local = HashWheelLocal;

    fn local(&self) -> HashWheelLocal {
        HashWheelLocal {
            timer: self.timer.timer_ref(),
            next_id: self.id_range(),
        }
    }

    fn settle(&self, _live: usize) {
        // The timer thread takes messages in order, and runs a zero-delay timer as it takes it
        // in: once this one has run, everything sent before it has been taken in.
        let (done, ran) = mpsc::channel();
        self.timer
            .timer_ref()
            .schedule_action_once(self.id_range(), Duration::ZERO, move |_| {
                let _ = done.send(());
            });
        ran.recv_timeout(Duration::from_secs(60))
            .expect("the timer thread drains its queue");
    }

    fn fire(&self, delays: &[Duration]) {
        let mut timer = self.timer.timer_ref();
        let first = self.id_range();
        for (id, &delay) in (first..).zip(delays) {
            timer.schedule_action_once(id, delay, |_| {
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        let mut timer = self.timer.timer_ref();
        let first = self.id_range();
        for id in first..first + n as u64 {
            let delay = due.saturating_duration_since(Instant::now());
            timer.schedule_action_once(id, delay, |_| {
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        self.timer.shutdown().expect("stop the timer thread");
    }
}

// ---------------------------------------------------------------------------------------------
// futures-timer

/// futures-timer's global timer: its helper thread starts on first use and is never stopped.
struct FuturesTimer;

struct FuturesTimerLocal;

impl Local for FuturesTimerLocal {
    type Handle = futures_timer::Delay;

    fn schedule(&mut self, delay: Duration) -> futures_timer::Delay {
        // `Delay::new` hands the timer to the helper thread; the first poll sets its waker.
        let mut timer = futures_timer::Delay::new(delay);
        let ready = (&mut timer).now_or_never();
        debug_assert!(ready.is_none());
        timer
    }

    fn cancel(&mut self, handle: futures_timer::Delay) {
        drop(handle);
    }
}

impl Peer for FuturesTimer {
    type Local = FuturesTimerLocal;

    fn local(&self) -> FuturesTimerLocal {
        FuturesTimerLocal
    }

    fn settle(&self, _live: usize) {
        // The helper thread offers no way to ask whether it is idle; give it a moment.
        thread::sleep(Duration::from_millis(2));
    }

    fn fire(&self, delays: &[Duration]) {
        futures::executor::block_on(async {
            let mut pending: FuturesUnordered<_> = delays
                .iter()
                .map(|&delay| futures_timer::Delay::new(delay))
                .collect();
            while pending.next().await.is_some() {
                FIRED.fetch_add(1, Ordering::Release);
            }
        });
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        futures::executor::block_on(async {
            let mut pending: FuturesUnordered<_> = (0..n)
                .map(|_| futures_timer::Delay::new(due.saturating_duration_since(Instant::now())))
                .collect();
            let scheduled = Instant::now();
            while pending.next().await.is_some() {
                FIRED.fetch_add(1, Ordering::Release);
            }
            scheduled
        })
    }

    fn shutdown(self) {}
}

// ---------------------------------------------------------------------------------------------
// The naive baseline

type Callback = Box<dyn FnOnce() + Send>;

/// A naive timer: one mutex around a binary heap of `(deadline, id)` and a map from id to the
/// callbacks still pending, and one thread that sleeps on a condvar until the earliest deadline
/// (woken when a timer with an earlier one arrives) and runs what is due. Cancelling removes
/// the callback; its heap entry stays behind as a tombstone, swept once tombstones outnumber
/// the live timers.
struct MutexHeapTimer {
    shared: Arc<HeapShared>,
    thread: JoinHandle<()>,
}

struct HeapShared {
    state: Mutex<HeapState>,
    wake: Condvar,
}

struct HeapState {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    callbacks: HashMap<u64, Callback>,
    next_id: u64,
    stop: bool,
}

impl MutexHeapTimer {
    fn start() -> Self {
        let shared = Arc::new(HeapShared {
            state: Mutex::new(HeapState {
                heap: BinaryHeap::new(),
                callbacks: HashMap::new(),
                next_id: 0,
                stop: false,
            }),
            wake: Condvar::new(),
        });
        let runner = shared.clone();
        let thread = thread::Builder::new()
            .name("mutex-heap-timer".into())
            .spawn(move || runner.run())
            .expect("start the timer thread");
        MutexHeapTimer { shared, thread }
    }
}

impl HeapShared {
    fn schedule(&self, delay: Duration, callback: Callback) -> u64 {
        let at = Instant::now() + delay;
        let mut state = self.state.lock().unwrap();
        let id = state.next_id;
        state.next_id += 1;
        let earliest = state
            .heap
            .peek()
            .is_none_or(|Reverse((first, _))| at < *first);
        state.heap.push(Reverse((at, id)));
        state.callbacks.insert(id, callback);
        drop(state);
        if earliest {
            self.wake.notify_one();
        }
        id
    }

    fn cancel(&self, id: u64) -> bool {
        let mut state = self.state.lock().unwrap();
        let cancelled = state.callbacks.remove(&id).is_some();
        let HeapState {
            heap, callbacks, ..
        } = &mut *state;
        if heap.len() > 2 * callbacks.len() + 1024 {
            heap.retain(|Reverse((_, id))| callbacks.contains_key(id));
        }
        cancelled
    }

    fn run(&self) {
        let mut due = Vec::new();
        let mut state = self.state.lock().unwrap();
        while !state.stop {
            let now = Instant::now();
            match state.heap.peek() {
                Some(&Reverse((at, _))) if at > now => {
                    state = self.wake.wait_timeout(state, at - now).unwrap().0;
                }
                Some(_) => {
                    while let Some(&Reverse((at, id))) = state.heap.peek() {
                        if at > now {
                            break;
                        }
                        state.heap.pop();
                        due.extend(state.callbacks.remove(&id));
                    }
                    drop(state);
                    due.drain(..).for_each(|callback| callback());
                    state = self.state.lock().unwrap();
                }
                None => state = self.wake.wait(state).unwrap(),
            }
        }
    }
}

struct MutexHeapLocal(Arc<HeapShared>);

impl Local for MutexHeapLocal {
    type Handle = u64;

    fn schedule(&mut self, delay: Duration) -> u64 {
        self.0.schedule(delay, Box::new(|| {}))
    }

    fn cancel(&mut self, id: u64) {
        black_box(self.0.cancel(id));
    }
}

impl Peer for MutexHeapTimer {
    type Local = MutexHeapLocal;

    fn local(&self) -> MutexHeapLocal {
        MutexHeapLocal(self.shared.clone())
    }

    fn fire(&self, delays: &[Duration]) {
        for &delay in delays {
            let callback = Box::new(|| {
                FIRED.fetch_add(1, Ordering::Release);
            });
            self.shared.schedule(delay, callback);
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        for _ in 0..n {
            let callback = Box::new(|| {
                FIRED.fetch_add(1, Ordering::Release);
            });
            self.shared
                .schedule(due.saturating_duration_since(Instant::now()), callback);
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        self.shared.state.lock().unwrap().stop = true;
        self.shared.wake.notify_one();
        self.thread.join().expect("join the timer thread");
    }
}

// ---------------------------------------------------------------------------------------------
// The patterns

type Group<'a> = BenchmarkGroup<'a, WallTime>;

fn bench_schedule<P: Peer>(group: &mut Group<'_>, name: &str, peer: P, delays: &[Duration]) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            peer.enter(|| {
                let mut local = peer.local();
                let mut handles = Vec::with_capacity(delays.len());
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    for &delay in delays {
                        handles.push(local.schedule(delay));
                    }
                    total += start.elapsed();
                    for handle in handles.drain(..) {
                        local.cancel(handle);
                    }
                    peer.settle(0);
                }
                total
            })
        })
    });
    peer.shutdown();
}

fn bench_cancel<P: Peer>(group: &mut Group<'_>, name: &str, peer: P, delays: &[Duration]) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            peer.enter(|| {
                let mut local = peer.local();
                let mut handles = Vec::with_capacity(delays.len());
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    handles.extend(delays.iter().map(|&delay| local.schedule(delay)));
                    peer.settle(delays.len());
                    let start = Instant::now();
                    for handle in handles.drain(..) {
                        local.cancel(handle);
                    }
                    total += start.elapsed();
                    peer.settle(0);
                }
                total
            })
        })
    });
    peer.shutdown();
}

/// One churn thread: fills its ring (untimed), waits for the others, runs `ops` ops, and
/// returns when it started and finished them.
fn churn_thread<P: Peer>(
    peer: &P,
    ops: u64,
    delays: &[Duration],
    start: &Barrier,
) -> (Instant, Instant) {
    peer.enter(|| {
        let mut local = peer.local();
        let mut ring: Vec<_> = delays[..RING]
            .iter()
            .map(|&delay| local.schedule(delay))
            .collect();
        let mask = delays.len() - 1;
        start.wait();
        let started = Instant::now();
        let mut slot = 0;
        for op in 0..ops as usize {
            let fresh = local.schedule(delays[op & mask]);
            let old = std::mem::replace(&mut ring[slot], fresh);
            local.cancel(old);
            slot += 1;
            if slot == RING {
                slot = 0;
            }
        }
        let finished = Instant::now();
        for handle in ring {
            local.cancel(handle);
        }
        (started, finished)
    })
}

fn bench_churn<P: Peer>(group: &mut Group<'_>, name: &str, peer: P, delays: &[Duration]) {
    for threads in [1, 2] {
        let id = if threads == 1 {
            "1_thread".to_owned()
        } else {
            format!("{threads}_threads")
        };
        group.throughput(Throughput::Elements(threads as u64));
        group.bench_function(BenchmarkId::new(name, id), |b| {
            b.iter_custom(|iters| {
                let start = Barrier::new(threads);
                let spans: Vec<(Instant, Instant)> = thread::scope(|scope| {
                    let workers: Vec<_> = (0..threads)
                        .map(|_| scope.spawn(|| churn_thread(&peer, iters, delays, &start)))
                        .collect();
                    workers
                        .into_iter()
                        .map(|worker| worker.join().expect("churn thread"))
                        .collect()
                });
                peer.settle(0);
                let first = spans.iter().map(|span| span.0).min().expect("a thread");
                let last = spans.iter().map(|span| span.1).max().expect("a thread");
                last - first
            })
        });
    }
    peer.shutdown();
}

fn bench_fire<P: Peer>(group: &mut Group<'_>, name: &str, peer: P, delays: &[Duration]) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                FIRED.store(0, Ordering::Release);
                let start = Instant::now();
                peer.fire(delays);
                total += start.elapsed();
            }
            total
        })
    });
    peer.shutdown();
}

fn bench_fire_burst<P: Peer>(group: &mut Group<'_>, name: &str, peer: P) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                FIRED.store(0, Ordering::Release);
                let due = Instant::now() + BURST_LEAD;
                let scheduled = peer.fire_burst(due, BURST);
                assert!(
                    scheduled < due,
                    "{name}: scheduling {BURST} timers took longer than {BURST_LEAD:?}"
                );
                total += due.elapsed();
            }
            total
        })
    });
    peer.shutdown();
}

// ---------------------------------------------------------------------------------------------
// The groups

fn schedule(c: &mut Criterion) {
    let delays = rpc_delays(BATCH);
    let mut group = c.benchmark_group("schedule");
    group.throughput(Throughput::Elements(BATCH as u64));
    bench_schedule(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_schedule(&mut group, "tokio", Tokio::start(), &delays);
    bench_schedule(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_schedule(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_schedule(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

fn cancel(c: &mut Criterion) {
    let delays = rpc_delays(BATCH);
    let mut group = c.benchmark_group("cancel");
    group.throughput(Throughput::Elements(BATCH as u64));
    bench_cancel(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_cancel(&mut group, "tokio", Tokio::start(), &delays);
    bench_cancel(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_cancel(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_cancel(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

fn schedule_cancel(c: &mut Criterion) {
    let delays = rpc_delays(CHURN_DELAYS);
    let mut group = c.benchmark_group("schedule_cancel");
    bench_churn(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_churn(&mut group, "tokio", Tokio::start(), &delays);
    bench_churn(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_churn(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_churn(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

fn fire(c: &mut Criterion) {
    let delays = delays(
        FIRE_BATCH,
        0xF12E,
        Duration::from_millis(1),
        Duration::from_millis(3),
    );
    let mut group = c.benchmark_group("fire");
    group.throughput(Throughput::Elements(FIRE_BATCH as u64));
    bench_fire(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_fire(
        &mut group,
        "shardwheel_inline",
        Shardwheel::start(true),
        &delays,
    );
    bench_fire(&mut group, "tokio", Tokio::start(), &delays);
    bench_fire(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_fire(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_fire(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

/// A burst: every timer due at one instant, timed from it to the last callback.
fn fire_burst(c: &mut Criterion) {
    let mut group = c.benchmark_group("fire_burst");
    group.throughput(Throughput::Elements(BURST as u64));
    group.sampling_mode(SamplingMode::Flat);
    bench_fire_burst(&mut group, "shardwheel", Shardwheel::start(false));
    bench_fire_burst(&mut group, "shardwheel_inline", Shardwheel::start(true));
    bench_fire_burst(&mut group, "tokio", Tokio::start());
    bench_fire_burst(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
    );
    bench_fire_burst(&mut group, "futures_timer", FuturesTimer);
    bench_fire_burst(&mut group, "mutex_heap", MutexHeapTimer::start());
    group.finish();
}

/// Pushing a pending timer's deadline later, as a connection does on every read: shardwheel's
/// `reset` (one CAS), shardwheel's cancel + schedule of a new timer, and tokio's
/// `Sleep::reset`. Only the moving is timed.
fn reset(c: &mut Criterion) {
    let delays = rpc_delays(BATCH);
    let later: Vec<Duration> = delays
        .iter()
        .map(|d| *d + Duration::from_secs(30))
        .collect();
    let mut group = c.benchmark_group("reset");
    group.throughput(Throughput::Elements(BATCH as u64));

    let engine = TimerEngine::builder().build().expect("build the engine");
    group.bench_function("shardwheel_reset", |b| {
        b.iter_custom(|iters| {
            let handles: Vec<_> = delays
                .iter()
                .map(|&d| engine.schedule(d, || {}).expect("schedule"))
                .collect();
            let start = Instant::now();
            for _ in 0..iters {
                for (handle, &delay) in handles.iter().zip(&later) {
                    black_box(handle.reset(delay));
                }
            }
            let took = start.elapsed();
            for handle in &handles {
                handle.cancel();
            }
            took
        })
    });
    group.bench_function("shardwheel_cancel_schedule", |b| {
        b.iter_custom(|iters| {
            let mut handles: Vec<_> = delays
                .iter()
                .map(|&d| engine.schedule(d, || {}).expect("schedule"))
                .collect();
            let start = Instant::now();
            for _ in 0..iters {
                for (handle, &delay) in handles.iter_mut().zip(&later) {
                    handle.cancel();
                    *handle = engine.schedule(delay, || {}).expect("schedule");
                }
            }
            let took = start.elapsed();
            for handle in &handles {
                handle.cancel();
            }
            took
        })
    });
    drop(engine.shutdown());

    let tokio = Tokio::start();
    group.bench_function("tokio_sleep_reset", |b| {
        b.iter_custom(|iters| {
            tokio.enter(|| {
                let mut local = tokio.local();
                let mut sleeps: Vec<_> = delays.iter().map(|&d| local.schedule(d)).collect();
                let start = Instant::now();
                for _ in 0..iters {
                    for (sleep, &delay) in sleeps.iter_mut().zip(&later) {
                        sleep.as_mut().reset(tokio::time::Instant::now() + delay);
                    }
                }
                start.elapsed()
            })
        })
    });
    tokio.shutdown();
    group.finish();
}

/// Values per `delay_queue` batch.
const DQ_BATCH: usize = 10_000;

/// `delay_queue/<case>/<peer>`, [`DQ_BATCH`] elements per iteration:
///
/// - `insert_remove/shardwheel`, `insert_remove/tokio_util`: insert [`DQ_BATCH`] values with
///   delays uniform in [1 s, 30 s], then remove every one by its key. Only that is timed. One
///   queue per peer, made once: shardwheel's gives its storage back each time it empties (and
///   each insert schedules, each remove cancels, a timer on the engine), tokio-util's keeps its
///   slab and holds its entries in a wheel of its own behind one runtime sleep.
/// - `insert_expire/shardwheel`, `insert_expire/tokio_util`: insert [`DQ_BATCH`] values due
///   1–2 ms ahead (spread evenly over that millisecond), then take values out of the queue as a
///   stream until all have come out. Timed from the first insert to the last value out, so the
///   ~2 ms wait is part of it; what differs between the peers is the inserts and how quickly
///   expired values reach the task (shardwheel: the engine's shards fire, the callbacks record
///   each value and wake the task; tokio-util: the runtime's timer wakes the task, which then
///   walks its own wheel).
fn delay_queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("delay_queue");
    group.throughput(Throughput::Elements(DQ_BATCH as u64));
    group.sample_size(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .expect("build the runtime");
    let engine = TimerEngine::builder().build().expect("build the engine");
    let delays = rpc_delays(DQ_BATCH);
    let soon: Vec<Duration> = (0..DQ_BATCH)
        .map(|i| Duration::from_micros(1_000 + (i * 1_000 / DQ_BATCH) as u64))
        .collect();

    let mut queue = DelayQueue::new(&engine);
    let mut keys = Vec::with_capacity(DQ_BATCH);
    group.bench_function(BenchmarkId::new("insert_remove", "shardwheel"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                keys.extend(delays.iter().enumerate().map(|(i, &d)| queue.insert(i, d)));
                for key in keys.drain(..) {
                    black_box(queue.remove(&key).ok());
                }
            }
            start.elapsed()
        })
    });
    group.bench_function(BenchmarkId::new("insert_expire", "shardwheel"), |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    for (i, &d) in soon.iter().enumerate() {
                        queue.insert(i, d);
                    }
                    let mut out = 0;
                    while let Some(expired) = queue.next().await {
                        black_box(expired);
                        out += 1;
                    }
                    assert_eq!(out, DQ_BATCH, "every value comes out");
                }
                start.elapsed()
            })
        })
    });
    drop(queue);
    drop(engine.shutdown());

    let mut queue = runtime.block_on(async { tokio_util::time::DelayQueue::new() });
    let mut keys = Vec::with_capacity(DQ_BATCH);
    group.bench_function(BenchmarkId::new("insert_remove", "tokio_util"), |b| {
        b.iter_custom(|iters| {
            let _context = runtime.enter();
            let start = Instant::now();
            for _ in 0..iters {
                keys.extend(delays.iter().enumerate().map(|(i, &d)| queue.insert(i, d)));
                for key in keys.drain(..) {
                    black_box(queue.remove(&key));
                }
            }
            start.elapsed()
        })
    });
    group.bench_function(BenchmarkId::new("insert_expire", "tokio_util"), |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    for (i, &d) in soon.iter().enumerate() {
                        queue.insert(i, d);
                    }
                    let mut out = 0;
                    while let Some(expired) = queue.next().await {
                        black_box(expired);
                        out += 1;
                    }
                    assert_eq!(out, DQ_BATCH, "every value comes out");
                }
                start.elapsed()
            })
        })
    });
    drop(queue);
    runtime.shutdown_timeout(Duration::from_secs(5));
    group.finish();
}

/// A stand-in for shardwheel's timer entry as the floor was first set: a state word, two
/// intrusive links and a boxed callback, 40 bytes; with the reference count, one 48-byte
/// allocation. (The engine's entry is now 8 bytes smaller: its callback box is one word.)
struct FloorEntry {
    state: AtomicU64,
    links: [usize; 2],
    callback: Option<Box<dyn FnOnce() + Send + Sync>>,
}

fn floor(c: &mut Criterion) {
    const PENDING: u64 = 0;
    const CANCELLED: u64 = 1;
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

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = schedule, cancel, schedule_cancel, fire, fire_burst, reset, delay_queue, floor
}
criterion_main!(benches);
