//! The engine: routing timers to shards, counting them, and shutting down without losing one.
//!
//! Scheduling never touches a wheel. A timer becomes one `EntryRef` that is pushed onto an
//! `inserts` queue of the shard its task hash picks (or its key's hash, for the keyed forms),
//! in the lane of the calling thread. The shard places it on its next turn.
//!
//! Shutdown hands back every timer that neither fired nor was cancelled. It sets each shard's
//! `stop` flag, joins the shard threads, waits for callbacks in flight, and then empties the
//! wheels and the queues, winning INIT→RETURNED for each timer still pending. A `schedule`
//! racing it pushes its entry, passes a light barrier, and reads `stop` again: if it now sees
//! shutdown, it tries INIT→RETURNED itself and, if it wins, hands the callback back as
//! `ScheduleError::Shutdown`. Shutdown passes the heavy barrier after setting `stop` (see
//! [`crate::sync::barrier`]), so a producer that did not see `stop` pushed before shutdown
//! emptied the queues, and every timer lands in exactly one place.

use std::cell::Cell;
use std::future::IntoFuture;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rayon::ThreadPool;

use crate::builder::Builder;
use crate::callback::{unbox, Callback, Unfired};
use crate::clock::TickClock;
use crate::entry::{Entry, EntryRef};
use crate::error::{BuildError, ScheduleError};
use crate::executor::{in_callback_of, Inflight};
use crate::handle::TimerHandle;
use crate::inbound::Pop;
use crate::lane::{Lane, Ownership};
use crate::periodic::Repeating;
#[cfg(all(test, loom))]
use crate::shard::Shard;
use crate::shard::{ShardShared, Stopped};
use crate::sleep::{Sleep, Timeout};
use crate::stats::{ShardStats, Stats};
use crate::sync::{barrier, fence, thread, thread_slot, Arc, Mutex, Ordering, StdArc};

/// A sharded timer engine. See the [crate documentation](crate) for an overview.
///
/// `TimerEngine` is `Send + Sync`: share it by reference or in an `Arc`. Dropping it shuts it
/// down (dropping the timers that never ran) and joins every thread it started.
pub struct TimerEngine {
    shared: Arc<Shared>,
    runners: Mutex<Option<Runners>>,
    watch_id: Option<u64>,
}

/// What the engine, its handles' lanes and a manual clock share.
pub(crate) struct Shared {
    /// This engine's id, to recognise a call made from one of its own callbacks.
    pub(crate) id: u64,
    pub(crate) shards: Box<[Arc<ShardShared>]>,
    pub(crate) lanes: Box<[Arc<Lane>]>,
    pub(crate) lanes_per_shard: usize,
    pub(crate) clock: TickClock,
    pub(crate) inflight: Arc<Inflight>,
}

/// The threads an engine started, joined at shutdown.
pub(crate) struct Runners {
    shard_threads: Vec<JoinHandle<Stopped>>,
    pool: Option<OwnedPool>,
    driven: bool,
}

impl Runners {
    pub(crate) fn threads(pool: Option<OwnedPool>) -> Self {
        Runners {
            shard_threads: Vec::new(),
            pool,
            driven: false,
        }
    }

    #[cfg(all(test, loom))]
    pub(crate) fn driven(pool: Option<OwnedPool>) -> Self {
        Runners {
            shard_threads: Vec::new(),
            pool,
            driven: true,
        }
    }
}

/// A rayon pool the engine started, with the handles of its threads so shutdown can join them.
pub(crate) struct OwnedPool {
    pool: StdArc<ThreadPool>,
    threads: Vec<JoinHandle<()>>,
}

impl OwnedPool {
    pub(crate) fn start(threads: usize) -> Result<Self, BuildError> {
        let mut handles = Vec::with_capacity(threads);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("shardwheel-callback-{i}"))
            .spawn_handler(|thread| {
                let mut builder = std::thread::Builder::new();
                if let Some(name) = thread.name() {
                    builder = builder.name(name.to_owned());
                }
                if let Some(size) = thread.stack_size() {
                    builder = builder.stack_size(size);
                }
                handles.push(builder.spawn(|| thread.run())?);
                Ok(())
            })
            .build()
            .map_err(BuildError::Pool)?;
        Ok(OwnedPool {
            pool: StdArc::new(pool),
            threads: handles,
        })
    }

    pub(crate) fn pool(&self) -> StdArc<ThreadPool> {
        self.pool.clone()
    }

    /// Ends the pool and joins its threads. Called once no shard can hand it more work.
    fn join(self) {
        // The shards held the other references; they have exited. If someone else still holds
        // the pool, its threads live on with it and are not waited for.
        if let Ok(pool) = StdArc::try_unwrap(self.pool) {
            drop(pool);
            for thread in self.threads {
                let _ = thread.join();
            }
        }
    }
}

/// Why a timer was refused before it was made.
pub(crate) enum Refusal {
    Shutdown,
    TooLong,
    Full,
}

impl Refusal {
    fn hand_back<F>(self, callback: F) -> ScheduleError<F> {
        match self {
            Refusal::Shutdown => ScheduleError::Shutdown(callback),
            Refusal::TooLong => ScheduleError::DelayTooLong(callback),
            Refusal::Full => ScheduleError::Full(callback),
        }
    }
}

/// Checks that `lane`'s shard takes a timer due at `tick`, and takes a place under the cap.
#[inline]
pub(crate) fn admit(lane: &Lane, tick: Option<u64>) -> Result<u64, Refusal> {
    let refused = |refusal| {
        lane.counts.add_rejected();
        Err(refusal)
    };
    if lane.shard.is_stopped() {
        return refused(Refusal::Shutdown);
    }
    let Some(tick) = tick else {
        return refused(Refusal::TooLong);
    };
    if let Some(cap) = &lane.shard.cap {
        if !cap.try_take() {
            return refused(Refusal::Full);
        }
    }
    Ok(tick)
}

/// Queues `entry` for `lane`'s shard, `ownership` being the calling thread's for that lane.
/// If shutdown raced the push and this call wins the entry back (INIT→RETURNED), its callback
/// comes back as the error.
#[inline]
pub(crate) fn enqueue(
    lane: &Lane,
    ownership: Ownership,
    entry: &EntryRef,
) -> Result<(), Box<dyn Callback>> {
    let shard = &lane.shard;
    let mine = ownership.mine();
    lane.counts.add_scheduled(mine);
    if mine {
        // SAFETY: the calling thread owns the lane, so it is the ring's one producer.
        if let Err(full) = unsafe { lane.ring.push(entry.clone()) } {
            lane.inserts.push(full);
        }
    } else {
        lane.inserts.push(entry.clone());
    }
    // `notify` passes the light barrier before it reads the sleep word; the `stop` read below is
    // after that barrier too, which is what the shutdown hand-off relies on.
    shard.signal.notify();
    if shard.stop.load(Ordering::Relaxed) {
        fence(Ordering::SeqCst);
        if let Ok((_, callback)) = entry.give_back() {
            lane.counts.unschedule();
            shard.release_cap(1);
            return Err(callback);
        }
        // Shutdown already handed it back, or the shard fired it: it is accounted for.
    }
    Ok(())
}

/// Queues `entry` (as `enqueue`) and hands out its handle.
pub(crate) fn arm(
    lane: &Arc<Lane>,
    ownership: Ownership,
    entry: EntryRef,
) -> Result<TimerHandle, Box<dyn Callback>> {
    enqueue(lane, ownership, &entry)?;
    Ok(TimerHandle {
        entry,
        lane: lane.clone(),
    })
}

/// Spreads a hash over `shards` (Fibonacci hashing: the high bits of a multiply).
#[inline]
fn shard_for(hash: u64, shards: usize) -> usize {
    let mixed = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((mixed >> 32) as usize) % shards
}

/// The hash of an unkeyed task: the calling thread's slot and its count of tasks so far.
#[inline]
fn task_hash() -> u64 {
    thread_local! {
        static TASKS: Cell<u64> = const { Cell::new(0) };
    }
    let n = TASKS.with(|tasks| {
        let n = tasks.get();
        tasks.set(n.wrapping_add(1));
        n
    });
    n ^ ((thread_slot() as u64) << 40)
}

impl TimerEngine {
    /// A builder with the defaults: one shard per core, 1 ms tick, a rayon callback pool,
    /// no cap, pinned tick threads.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// # drop(engine);
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) fn new(shared: Arc<Shared>, runners: Runners) -> Self {
        let watch_id = shared
            .clock
            .manual()
            .filter(|_| !runners.driven)
            .map(|clock| clock.watch(shared.clone()));
        TimerEngine {
            shared,
            runners: Mutex::new(Some(runners)),
            watch_id,
        }
    }

    pub(crate) fn add_shard_thread(&self, thread: JoinHandle<Stopped>) {
        if let Some(runners) = self.lock_runners().as_mut() {
            runners.shard_threads.push(thread);
        }
    }

    fn lock_runners(&self) -> crate::sync::MutexGuard<'_, Option<Runners>> {
        self.runners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `callback` once `delay` has passed (at the first tick at or after it). A zero delay
    /// fires on the next tick.
    ///
    /// # Errors
    /// Hands the callback back in [`ScheduleError::DelayTooLong`] if `delay` exceeds
    /// [`max_delay`](Self::max_delay), in [`ScheduleError::Full`] if the engine's cap is
    /// reached, and in [`ScheduleError::Shutdown`] after shutdown.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// engine.schedule(Duration::from_millis(5), move || tx.send("timeout").unwrap()).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("timeout"));
    /// ```
    pub fn schedule<F>(&self, delay: Duration, callback: F) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit(task_hash(), self.shared.clock.tick_after(delay), callback)
    }

    /// Runs `callback` at `deadline` (at the first tick at or after it). A deadline already
    /// past fires on the next tick.
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let timer = engine.schedule_at(Instant::now() + Duration::from_secs(1), || {}).unwrap();
    /// assert!(timer.cancel());
    /// ```
    pub fn schedule_at<F>(
        &self,
        deadline: Instant,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit(task_hash(), self.shared.clock.tick_at(deadline), callback)
    }

    /// As [`schedule`](Self::schedule), routed by `key` (a connection id, say): timers with
    /// the same key go to the same shard.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let connection_id = 42;
    /// let idle = engine.schedule_keyed(connection_id, Duration::from_secs(30), || {}).unwrap();
    /// let read = engine.schedule_keyed(connection_id, Duration::from_secs(5), || {}).unwrap();
    /// # idle.cancel(); read.cancel();
    /// ```
    pub fn schedule_keyed<F>(
        &self,
        key: u64,
        delay: Duration,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit(key, self.shared.clock.tick_after(delay), callback)
    }

    /// As [`schedule_at`](Self::schedule_at), routed by `key`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let t = engine.schedule_keyed_at(7, Instant::now() + Duration::from_secs(1), || {}).unwrap();
    /// # t.cancel();
    /// ```
    pub fn schedule_keyed_at<F>(
        &self,
        key: u64,
        deadline: Instant,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit(key, self.shared.clock.tick_at(deadline), callback)
    }

    /// Runs `callback` every `period`, at a fixed rate: the n-th run is due at
    /// `start + n·period`, where `start` is now, whatever the earlier runs cost. A run that
    /// would overlap the one before it, or that was missed (the engine was busy, or the
    /// callback ran long), is skipped, never queued up. `cancel()` on the handle stops it,
    /// also from inside the callback itself; shutdown hands it back like any pending timer
    /// (running it then runs it once). A period shorter than the tick repeats once a tick. A
    /// callback that panics stops its timer.
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule), for the first run.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let beats = Arc::new(AtomicUsize::new(0));
    /// let b = beats.clone();
    /// let heartbeat = engine
    ///     .schedule_repeating(Duration::from_secs(5), move || { b.fetch_add(1, Ordering::SeqCst); })
    ///     .unwrap();
    /// for _ in 0..4 {
    ///     clock.advance(Duration::from_secs(5));
    /// }
    /// assert_eq!(beats.load(Ordering::SeqCst), 4);
    /// assert!(heartbeat.cancel());
    /// clock.advance(Duration::from_secs(5));
    /// assert_eq!(beats.load(Ordering::SeqCst), 4);
    /// ```
    pub fn schedule_repeating<F>(
        &self,
        period: Duration,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnMut() + Send + 'static,
    {
        self.repeat(task_hash(), period, callback)
    }

    /// As [`schedule_repeating`](Self::schedule_repeating), routed by `key`, so a connection's
    /// heartbeat shares a shard with its other timers.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let heartbeat = engine.schedule_repeating_keyed(42, Duration::from_secs(10), || {}).unwrap();
    /// assert!(heartbeat.cancel());
    /// ```
    pub fn schedule_repeating_keyed<F>(
        &self,
        key: u64,
        period: Duration,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnMut() + Send + 'static,
    {
        self.repeat(key, period, callback)
    }

    fn repeat<F>(
        &self,
        route: u64,
        period: Duration,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnMut() + Send + 'static,
    {
        let lane = self.lane_for(route);
        let clock = &self.shared.clock;
        let start = clock.now();
        let first = start.checked_add(period);
        let tick = match admit(lane, first.and_then(|first| clock.tick_at(first))) {
            Ok(tick) => tick,
            Err(refusal) => return Err(refusal.hand_back(callback)),
        };
        let mut entry = EntryRef::new(Entry::new_periodic(tick));
        let repeating = Repeating::new(callback, start, period, lane.clone());
        match EntryRef::get_mut(&mut entry) {
            Some(unshared) => unshared.install(Box::new(repeating)),
            None => unreachable!("a new entry is not shared yet"),
        }
        arm(lane, Lane::ownership(lane), entry).map_err(|callback| {
            ScheduleError::Shutdown(unbox::<Repeating<F>>(callback).into_inner())
        })
    }

    /// A future that completes `delay` from now, woken by the engine: it needs no runtime of its
    /// own and works under any executor. Dropping it cancels its timer. A sleep the engine
    /// cannot hold (shut down, or at its cap) completes at once; one beyond
    /// [`max_delay`](Self::max_delay) never does.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let start = Instant::now();
    /// futures::executor::block_on(engine.sleep(Duration::from_millis(20)));
    /// assert!(start.elapsed() >= Duration::from_millis(20));
    /// ```
    pub fn sleep(&self, delay: Duration) -> Sleep {
        let lane = self.lane_for(task_hash());
        Sleep::on(lane, self.shared.clock.tick_after(delay))
    }

    /// As [`sleep`](Self::sleep), until `deadline`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let deadline = Instant::now() + Duration::from_millis(20);
    /// futures::executor::block_on(engine.sleep_until(deadline));
    /// assert!(Instant::now() >= deadline);
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        let lane = self.lane_for(task_hash());
        Sleep::on(lane, self.shared.clock.tick_at(deadline))
    }

    /// Runs `future` until `delay` has passed: its output, or [`Elapsed`](crate::Elapsed) if the
    /// deadline came first (the future is then dropped with the `Timeout`). Like
    /// [`sleep`](Self::sleep), a timeout the engine cannot hold (shut down, or at its cap)
    /// elapses at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let quick = futures::executor::block_on(engine.timeout(Duration::from_secs(5), async { 7 }));
    /// assert_eq!(quick, Ok(7));
    /// let slow = engine.timeout(Duration::from_millis(5), engine.sleep(Duration::from_secs(60)));
    /// assert!(futures::executor::block_on(slow).is_err());
    /// ```
    pub fn timeout<F: IntoFuture>(&self, delay: Duration, future: F) -> Timeout<F::IntoFuture> {
        Timeout::new(future.into_future(), self.sleep(delay))
    }

    /// The lane the calling thread schedules through for route 0 (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn lane_of_this_thread(&self) -> &Arc<Lane> {
        self.lane_for(0)
    }

    #[inline]
    fn lane_for(&self, route: u64) -> &Arc<Lane> {
        let shared = &*self.shared;
        let shard_index = shard_for(route, shared.shards.len());
        let lane_index =
            shard_index * shared.lanes_per_shard + thread_slot() % shared.lanes_per_shard;
        &shared.lanes[lane_index]
    }

    /// Routes and queues a timer due at `tick` (`None`: refused as too far away).
    fn submit<F>(
        &self,
        route: u64,
        tick: Option<u64>,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let lane = self.lane_for(route);
        let tick = match admit(lane, tick) {
            Ok(tick) => tick,
            Err(refusal) => return Err(refusal.hand_back(callback)),
        };
        let callback: Box<dyn Callback> = Box::new(callback);
        // SAFETY: this is a call on the engine.
        let ownership = Lane::ownership(lane);
        let entry = match unsafe { lane.spare(ownership) } {
            Some(mut spare) => match EntryRef::get_mut(&mut spare) {
                Some(unshared) => {
                    unshared.reuse(tick, callback);
                    spare
                }
                None => unreachable!("a spare entry is held by its lane alone"),
            },
            None => EntryRef::new(Entry::new(tick, callback)),
        };
        arm(lane, ownership, entry).map_err(|callback| ScheduleError::Shutdown(unbox(callback)))
    }

    /// The longest delay `schedule` always accepts: the wheel's span less two ticks (about
    /// 2.2 years at a 1 ms tick).
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let max = engine.max_delay();
    /// assert!(engine.schedule(max, || {}).is_ok());
    /// assert!(engine.schedule(max * 2, || {}).is_err());
    /// ```
    pub fn max_delay(&self) -> Duration {
        self.shared.clock.max_delay()
    }

    /// The engine's tick.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// assert_eq!(engine.tick(), std::time::Duration::from_millis(1));
    /// ```
    pub fn tick(&self) -> Duration {
        self.shared.clock.tick()
    }

    /// The engine's current time: the system's monotonic clock, or its manual clock.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// assert!(engine.now() <= std::time::Instant::now());
    /// ```
    pub fn now(&self) -> Instant {
        self.shared.clock.now()
    }

    /// The number of timers neither fired, cancelled nor handed back. Exact whenever the
    /// threads scheduling and cancelling are quiet.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let a = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// let _b = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// assert_eq!(engine.pending(), 2);
    /// a.cancel();
    /// assert_eq!(engine.pending(), 1);
    /// ```
    pub fn pending(&self) -> u64 {
        self.stats().pending
    }

    /// A snapshot of the engine's counters.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().shards(2).build().unwrap();
    /// engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// let stats = engine.stats();
    /// assert_eq!(stats.scheduled, 1);
    /// assert_eq!(stats.pending, 1);
    /// assert_eq!(stats.shards.iter().map(|s| s.pending).sum::<u64>(), 1);
    /// ```
    pub fn stats(&self) -> Stats {
        let shared = &*self.shared;
        let mut stats = Stats {
            scheduled: 0,
            fired: 0,
            cancelled: 0,
            returned: 0,
            rejected: 0,
            panicked: 0,
            pending: 0,
            asymmetric_barrier: barrier::is_asymmetric(),
            shards: Vec::with_capacity(shared.shards.len()),
        };
        for (shard, lanes) in shared
            .shards
            .iter()
            .zip(shared.lanes.chunks(shared.lanes_per_shard))
        {
            // Read what takes timers away before what adds them, so a snapshot taken while
            // threads are busy does not count a timer as gone before it counts it as scheduled.
            let fired = shard.counts.fired();
            let returned = shard.counts.returned();
            let cancelled: u64 = lanes.iter().map(|lane| lane.counts.cancelled()).sum();
            let scheduled: u64 = lanes.iter().map(|lane| lane.counts.scheduled()).sum();
            let pending = scheduled.saturating_sub(fired + cancelled + returned);
            stats.scheduled += scheduled;
            stats.fired += fired;
            stats.cancelled += cancelled;
            stats.returned += returned;
            stats.rejected += lanes.iter().map(|lane| lane.counts.rejected()).sum::<u64>();
            stats.panicked += shard.counts.panicked();
            stats.pending += pending;
            stats.shards.push(ShardStats {
                pending,
                in_wheel: shard.counts.in_wheel(),
                pinned_core: shard.pinned_core(),
            });
        }
        stats
    }

    /// Stops the engine: stops the shards, waits for callbacks in flight, and hands back every
    /// timer that neither fired nor was cancelled. Afterwards `schedule` refuses with
    /// [`ScheduleError::Shutdown`]. A second call returns an empty list.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// let cancelled = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// cancelled.cancel();
    /// assert_eq!(engine.shutdown().len(), 1);
    /// assert!(engine.shutdown().is_empty());
    /// assert!(engine.schedule(Duration::from_secs(1), || {}).is_err());
    /// ```
    pub fn shutdown(&self) -> Vec<Unfired> {
        let runners = {
            let mut runners = self.lock_runners();
            match runners.as_ref() {
                // Already shut down, or the shards belong to the caller (`shutdown_driven`).
                None => return Vec::new(),
                Some(r) if r.driven => return Vec::new(),
                Some(_) => {}
            }
            // Stop the shards before letting go of the lock, so a concurrent caller that finds
            // the runners gone also finds `schedule` refusing.
            self.stop_shards();
            runners.take()
        };
        let Some(runners) = runners else {
            return Vec::new();
        };
        if in_callback_of(self.shared.id) {
            // Called from one of this engine's own callbacks (for example by dropping the last
            // reference to the engine there): waiting for callbacks in flight, or joining the
            // thread, would wait for this very call. Finish on a thread of its own; the timers
            // still pending are dropped there (and counted as handed back).
            let shared = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name("shardwheel-shutdown".into())
                .spawn(move || drop(shared.finish(runners)));
            // If no thread can be had, the timers stay where they are, pending, and their memory
            // is freed as the handles go.
            drop(spawned);
            return Vec::new();
        }
        self.shared.finish(runners)
    }

    /// The engine's current tick (for tests that drive shards by hand).
    #[cfg(all(test, loom))]
    pub(crate) fn now_tick(&self) -> u64 {
        self.shared.clock.now_tick()
    }

    /// Shuts down an engine made by `Builder::build_driven`, given back its shards.
    #[cfg(all(test, loom))]
    pub(crate) fn shutdown_driven(&self, shards: Vec<Shard>) -> Vec<Unfired> {
        let Some(runners) = self.lock_runners().take() else {
            return Vec::new();
        };
        self.stop_shards();
        let stopped = shards.into_iter().map(|s| Some(s.stop())).collect();
        self.shared.finish_with(runners.pool, stopped)
    }

    fn stop_shards(&self) {
        if let (Some(clock), Some(id)) = (self.shared.clock.manual(), self.watch_id) {
            clock.unwatch(id);
        }
        for shard in self.shared.shards.iter() {
            shard.stop.store(true, Ordering::SeqCst);
            shard.signal.wake();
        }
        // Pairs with the light barrier a racing `schedule` passes after its push (module docs).
        barrier::heavy();
    }
}

impl Shared {
    /// Joins the stopped shard threads, waits for callbacks in flight, joins the pool and
    /// hands back what is still pending.
    fn finish(&self, runners: Runners) -> Vec<Unfired> {
        let stopped = runners
            .shard_threads
            .into_iter()
            .map(|thread| thread.join().ok())
            .collect();
        self.finish_with(runners.pool, stopped)
    }

    fn finish_with(&self, pool: Option<OwnedPool>, stopped: Vec<Option<Stopped>>) -> Vec<Unfired> {
        self.inflight.wait_idle();
        if let Some(pool) = pool {
            pool.join();
        }
        self.collect(stopped)
    }

    /// Hands back every timer still pending in the stopped shards' wheels (one per shard, in
    /// order; `None` for a shard whose thread could not be joined, which `AbortOnUnwind` in
    /// `shard` makes impossible short of a bug) and in the queues.
    fn collect(&self, stopped: Vec<Option<Stopped>>) -> Vec<Unfired> {
        let shared = self;
        let mut unfired = Vec::new();
        let mut entries = Vec::new();
        for ((shard, lanes), stopped) in shared
            .shards
            .iter()
            .zip(shared.lanes.chunks(shared.lanes_per_shard))
            .zip(stopped)
        {
            if let Some(mut stopped) = stopped {
                stopped.wheel.drain(&mut entries);
            }
            for lane in lanes {
                loop {
                    // SAFETY: the shard threads have been joined; this thread is the only
                    // consumer.
                    match unsafe { lane.inserts.pop() } {
                        Pop::Entry(entry) => entries.push(entry),
                        Pop::Empty => break,
                        // A producer is between its swap and its link. Entries pushed after
                        // it are reachable only through it, and their producers may not have
                        // seen the stop flag: wait for the link (a store away).
                        Pop::Busy => thread::yield_now(),
                    }
                }
                // SAFETY: as above.
                unsafe { lane.ring.take(usize::MAX, &mut entries) };
                // SAFETY: the shard's wheel has just been drained, which unlinked and unmarked
                // every entry (a shard thread that cannot be joined aborts the process first,
                // see `shard::AbortOnUnwind`).
                unsafe { lane.unlinks.release_all() };
                while lane.changes.pop().is_some() {}
                // The shard gives no more spares: free them now rather than with the lane, which
                // handles may keep alive long after.
                lane.spares.free_returned();
            }
            let before = unfired.len();
            for entry in entries.drain(..) {
                if let Ok((word, callback)) = entry.give_back() {
                    unfired.push(Unfired {
                        deadline: shared.clock.instant_of(word.deadline()),
                        callback,
                    });
                }
            }
            let returned = unfired.len() - before;
            shard.counts.add_returned(returned as u64);
            shard.release_cap(returned);
        }
        unfired
    }

    /// Brings the shards up to the manual clock's time (see `ManualClock::advance`): waits for
    /// each shard to complete a turn that began after this call (so it read the new time and
    /// found every timer scheduled before the clock moved), and for the callbacks it fired.
    pub(crate) fn settle(&self) {
        let target = self.clock.now_tick();
        loop {
            // A turn that was already under way when `start` was read may finish without
            // having seen the new time; the one after it cannot.
            let start: Vec<u64> = self.shards.iter().map(|s| s.counts.turns()).collect();
            let fired_before: u64 = self.shards.iter().map(|s| s.counts.fired()).sum();
            loop {
                let caught_up = self.shards.iter().zip(&start).all(|(shard, &start)| {
                    shard.is_stopped()
                        || (shard.counts.turns() >= start + 2 && shard.counts.processed() >= target)
                });
                if caught_up {
                    break;
                }
                // An idle shard sleeps until woken, so wake it for each turn waited for.
                for shard in self.shards.iter() {
                    shard.signal.wake();
                }
                thread::yield_now();
            }
            self.inflight.wait_idle();
            // Done once a whole round fired nothing and left nothing queued: callbacks may
            // have scheduled or re-armed timers that are due already.
            let fired_after: u64 = self.shards.iter().map(|s| s.counts.fired()).sum();
            let queued = self
                .lanes
                .iter()
                .any(|lane| !lane.shard.is_stopped() && lane.has_work());
            if fired_after == fired_before && !queued {
                return;
            }
        }
    }
}

impl Drop for TimerEngine {
    fn drop(&mut self) {
        drop(self.shutdown());
        for lane in self.shared.lanes.iter() {
            // SAFETY: a lane's owner takes spares only inside a call on this engine, and none
            // can be in progress while it is dropped.
            unsafe { lane.spares.free_stash() };
        }
    }
}

impl std::fmt::Debug for TimerEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerEngine")
            .field("tick", &self.tick())
            .field("stats", &self.stats())
            .finish()
    }
}
