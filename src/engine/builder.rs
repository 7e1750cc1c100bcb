//! Configuring and starting an engine.

use std::fmt;
use std::time::Duration;

use super::api::TimerEngine;
use super::error::BuildError;
use super::shared::EngineShared;
use super::shutdown::Threads;
use crate::callbacks::{CallbackPool, Executor, Inflight, Spawner, Task};
use crate::clock::ClockTimers;
use crate::entry::StateWord;
use crate::shard::{Lanes, Shard, ShardShared};
use crate::slab::Discards;
use crate::sync::{next_engine_id, Arc, Cap, Mutex, StdArc};
use crate::time::{ManualClock, TickClock};
use crate::wheel::SPAN;

/// Configures a [`TimerEngine`](crate::TimerEngine). Made by [`TimerEngine::builder`](crate::TimerEngine::builder).
///
/// ```
/// use std::time::Duration;
/// let engine = shardwheel::TimerEngine::builder()
///     .shards(2)
///     .tick(Duration::from_millis(1))
///     .callback_threads(4)
///     .max_pending(1_000_000)
///     .pin_threads(false)
///     .build()?;
/// # Ok::<(), shardwheel::engine::BuildError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a Builder starts no engine until `build` or `build_global`"]
pub struct Builder {
    shards: Option<usize>,
    tick: Duration,
    callbacks: Callbacks,
    max_pending: Option<usize>,
    pin: bool,
    clock: Option<ManualClock>,
    track_sites: bool,
    /// Room for lanes in each shard's table; `None`: the default. Models set it (see `hooks`).
    pub(super) lane_capacity: Option<usize>,
}

/// Where the engine runs its callbacks.
#[derive(Clone)]
enum Callbacks {
    /// The pool shared by engines that bring none.
    SharedPool,
    /// A pool of its own, of this many threads.
    OwnPool(usize),
    Inline,
    Spawner(Spawner),
}

impl fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Callbacks::SharedPool => f.write_str("SharedPool"),
            Callbacks::OwnPool(threads) => f.debug_tuple("OwnPool").field(threads).finish(),
            Callbacks::Inline => f.write_str("Inline"),
            Callbacks::Spawner(_) => f.write_str("Spawner"),
        }
    }
}

/// The most shards an engine may have.
const MAX_SHARDS: usize = 1024;
/// The most threads an engine's own callback pool may have.
const MAX_CALLBACK_THREADS: usize = 4096;
/// The longest tick: an hour.
const MAX_TICK: Duration = Duration::from_secs(3600);

/// An engine's parts before its threads start: what they share, the shards, the owned pool.
pub(super) type Assembled = (Arc<EngineShared>, Vec<Shard>, Option<CallbackPool>);

fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            shards: None,
            tick: Duration::from_millis(1),
            callbacks: Callbacks::SharedPool,
            max_pending: None,
            pin: false,
            clock: None,
            track_sites: false,
            lane_capacity: None,
        }
    }
}

impl TimerEngine {
    /// A builder with the defaults: one shard per cpu, 1 ms tick, the process's shared
    /// callback pool, no cap, unpinned tick threads.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

impl Builder {
    /// The number of shards, each with its own wheel and tick thread. Default: one per cpu;
    /// at most 1024.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The wheel's resolution. Default 1 ms; at least 1 µs, at most an hour. A timer fires at
    /// the first tick at or after its deadline.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Runs callbacks on a rayon pool of this many threads of the engine's own (at most 4096),
    /// joined at shutdown, instead of the process's shared pool (a thread per cpu, at least
    /// eight).
    pub fn callback_threads(mut self, threads: usize) -> Self {
        self.callbacks = Callbacks::OwnPool(threads);
        self
    }

    /// Runs callbacks on the shard's tick thread itself. Only for callbacks known to be cheap
    /// and never blocking: while one runs, its shard neither ticks nor takes new timers.
    pub fn inline_callbacks(mut self) -> Self {
        self.callbacks = Callbacks::Inline;
        self
    }

    /// Hands each fired callback to `spawn` as a [`Task`], to run wherever `spawn` puts it.
    /// `spawn` runs on the tick thread, so it must not block; a panic in it is counted. Tasks
    /// handed over are not waited for by `shutdown` or `ManualClock::advance`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// // A rayon pool shared with other work.
    /// let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap());
    /// let engine = shardwheel::TimerEngine::builder()
    ///     .spawn_callbacks(move |task| pool.spawn(move || task.run()))
    ///     .build()?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// engine.schedule(Duration::from_millis(1), move || tx.send(()).unwrap())?;
    /// rx.recv_timeout(Duration::from_secs(10))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_callbacks<S>(mut self, spawn: S) -> Self
    where
        S: Fn(Task) + Send + Sync + 'static,
    {
        self.callbacks = Callbacks::Spawner(StdArc::new(spawn));
        self
    }

    /// Runs each fired callback as a task on the tokio runtime behind `handle`, as
    /// [`spawn_callbacks`](Self::spawn_callbacks) does. After the runtime shuts down, callbacks
    /// run on the tick thread: shut the engine down first.
    ///
    /// ```
    /// use std::time::Duration;
    /// let runtime = tokio::runtime::Runtime::new()?;
    /// let engine = shardwheel::TimerEngine::builder()
    ///     .tokio_callbacks(runtime.handle().clone())
    ///     .build()?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// engine.schedule(Duration::from_millis(1), move || {
    ///     let on_runtime = tokio::runtime::Handle::try_current().is_ok();
    ///     tx.send(on_runtime).unwrap();
    /// })?;
    /// assert!(rx.recv_timeout(Duration::from_secs(10))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn tokio_callbacks(self, handle: tokio::runtime::Handle) -> Self {
        self.spawn_callbacks(move |task| {
            handle.spawn(async move { task.run() });
        })
    }

    /// Refuses new timers with [`ScheduleError::Full`](crate::ScheduleError::Full) while the
    /// engine holds this many (default: no cap). A timer holds its permit until its callback
    /// begins, it is handed back, or its shard drops it cancelled; a repeating one until it stops.
    pub fn max_pending(mut self, max: usize) -> Self {
        self.max_pending = Some(max);
        self
    }

    /// Whether to pin each tick thread to a cpu of its own (default: no), for machines the
    /// server owns. A refused pin, or a cpu that keeps its turns late, leaves it unpinned.
    pub fn pin_threads(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Reads time from `clock` instead of the system's monotonic clock: timers fire only as
    /// the clock is advanced. For deterministic tests.
    pub fn manual_clock(mut self, clock: &ManualClock) -> Self {
        self.clock = Some(clock.clone());
        self
    }

    /// Whether to keep each timer's origin (the line that scheduled it, when, its key) for
    /// [`TimerEngine::pending_timers`](crate::TimerEngine::pending_timers). Default: no. Off,
    /// a schedule pays one branch; on, 40 bytes a timer. Sleeps, timeouts and intervals are
    /// listed by the line that made them too.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().track_sites(true).build()?;
    /// engine.schedule(Duration::from_secs(60), || {})?;
    /// let line = line!() - 1;
    /// let snapshot = engine.pending_timers()?;
    /// assert_eq!(snapshot.timers[0].site.unwrap().line(), line);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn track_sites(mut self, track: bool) -> Self {
        self.track_sites = track;
        self
    }

    /// Starts the engine: one tick thread per shard, and the process's shared callback pool if
    /// it is not running yet (a thread per cpu, at least eight); with
    /// [`callback_threads`](Self::callback_threads), a pool of the engine's own instead.
    pub fn build(self) -> Result<TimerEngine, BuildError> {
        let pin = self.pin;
        let (shared, shards, pool) = self.assemble()?;
        let cpus = if pin {
            Some(crate::pinning::cpus()).filter(|cpus| !cpus.is_empty())
        } else {
            None
        };
        let engine = TimerEngine::new(shared, Threads::with_pool(pool));
        // Each tick thread says when it has pinned itself (or been refused), so the stats
        // say where it runs from the moment `build` returns.
        let (ready, pinned) = std::sync::mpsc::channel::<()>();
        for (index, shard) in shards.into_iter().enumerate() {
            let pin_to = cpus
                .as_ref()
                .map(|cpus| (cpus[index % cpus.len()], cpus.clone()));
            let ready = ready.clone();
            let handle = std::thread::Builder::new()
                .name(format!("sw-tick-{index}"))
                .spawn(move || {
                    let mut shard = shard;
                    if let Some((cpu, all)) = pin_to {
                        shard.pin(cpu, all);
                    }
                    drop(ready);
                    shard.run()
                })
                // On failure `engine` is dropped, which stops and joins the shards started so far.
                .map_err(BuildError::Spawn)?;
            engine.add_shard_thread(handle);
        }
        drop(ready);
        // Ends once every tick thread has dropped its sender: after pinning, or on its way out.
        for () in pinned.iter() {}
        Ok(engine)
    }

    pub(super) fn assemble(self) -> Result<Assembled, BuildError> {
        let shard_count = match self.shards {
            Some(0) => return Err(BuildError::ZeroShards),
            Some(n) if n > MAX_SHARDS => return Err(BuildError::TooManyShards),
            Some(n) => n,
            None => available_cpus().min(MAX_SHARDS),
        };
        if self.tick < Duration::from_micros(1) {
            return Err(BuildError::TickTooShort);
        }
        if self.tick > MAX_TICK {
            return Err(BuildError::TickTooLong);
        }
        if self.max_pending == Some(0) {
            return Err(BuildError::ZeroMaxPending);
        }
        match self.callbacks {
            Callbacks::OwnPool(0) => return Err(BuildError::ZeroCallbackThreads),
            Callbacks::OwnPool(n) if n > MAX_CALLBACK_THREADS => {
                return Err(BuildError::TooManyCallbackThreads)
            }
            _ => {}
        }
        let mut pool = match &self.callbacks {
            Callbacks::SharedPool => Some(CallbackPool::shared()),
            Callbacks::OwnPool(threads) => {
                Some(CallbackPool::start(*threads).map_err(BuildError::Spawn)?)
            }
            Callbacks::Inline | Callbacks::Spawner(_) => None,
        };

        let engine = next_engine_id();
        let clock = TickClock::new(self.tick, SPAN, StateWord::MAX_DEADLINE, self.clock);
        let cap = self.max_pending.map(|max| Arc::new(Cap::new(max)));
        let inflight = Arc::new(Inflight::new());
        let pool_threads = pool.as_ref().map_or(0, CallbackPool::threads);
        let discards = Discards::new();
        let shard_cores: Vec<Arc<ShardShared>> = (0..shard_count)
            .map(|_| {
                Arc::new(ShardShared::new(
                    engine,
                    clock.clone(),
                    cap.clone(),
                    pool_threads,
                    self.track_sites,
                    discards.clone(),
                ))
            })
            .collect();
        let executor = match (&self.callbacks, &mut pool) {
            (Callbacks::Inline, _) => Executor::Inline,
            (Callbacks::Spawner(spawn), _) => Executor::Spawner(spawn.clone()),
            (_, Some(pool)) => {
                let callbacks = shard_cores.iter().map(|s| s.callbacks().clone()).collect();
                let relay = pool.relay_for(callbacks, inflight.clone());
                Executor::Pool(relay, 0)
            }
            (_, None) => unreachable!("every mode without a pool is matched above"),
        };
        let lanes: Vec<Arc<Lanes>> = shard_cores
            .iter()
            .map(|shard| Arc::new(Lanes::new(shard.clone(), self.lane_capacity)))
            .collect();
        let shards = lanes
            .iter()
            .enumerate()
            .map(|(index, lanes)| Shard::new(lanes.clone(), executor.for_shard(index)))
            .collect();
        let shared = Arc::new(EngineShared {
            id: engine,
            shards: shard_cores.into_boxed_slice(),
            lanes: lanes.into_boxed_slice(),
            clocks: StdArc::new(ClockTimers::new(clock.clone())),
            clock,
            inflight,
            snapshots: Mutex::new(()),
        });
        Ok((shared, shards, pool))
    }
}
