//! Shutdown: stopping the shards, joining every thread the engine started, and handing back
//! every timer that neither fired nor was cancelled.
//!
//! Shutdown sets each shard's `stop` flag, wakes it and passes a SeqCst fence; joins the
//! shard threads; waits for callbacks in flight and joins the callback pool; and then empties
//! the wheels and the queues, winning PENDING→HANDED_BACK for each timer still pending. A `schedule`
//! racing it takes its own timer back (the producer's half, in `shard::lane`), so every timer
//! lands in exactly one place: fired, cancelled, handed back here, or refused. A producer
//! half-way through its push onto an inbound queue is waited for: the entries pushed after it
//! are reachable only through it, and their producers may not have seen the stop flag. The
//! engine joins the callback pool only if it started one; the shared pool, or one the user
//! gave, runs on.
//!
//! Callers of `shutdown` (and `drop`) meet in one [`Phase`](super::closing::Phase): the first does
//! the work, and every other caller from outside the engine's callbacks waits until it is done, so
//! none returns while a callback of the engine still runs. A shutdown begun inside one of the
//! engine's own callbacks cannot wait for that callback: it finishes on a thread of its own, and
//! the next caller from outside joins that thread and receives the timers it handed back.

use std::fmt;
use std::thread::JoinHandle;
use std::time::Instant;

use super::closing::{Closing, CompleteOnDrop, Duty};
use super::shared::{ClockWatch, EngineShared};
use crate::callbacks::{in_callback_of, CallbackPool};
use crate::entry::CallbackBox;
use crate::shard::Stopped;
use crate::sync::{thread, Arc, Fenced, Permits, StdArc};
use crate::time::CatchUp;
use crate::timer::TimerHandle;

/// The shutdown protocol as the engine uses it (see `closing`).
pub(super) type Shutdown = Closing<Threads, Vec<Unfired>>;

/// The threads an engine started, joined at shutdown.
pub(super) struct Threads {
    pub(super) shard_threads: Vec<JoinHandle<Stopped>>,
    pub(super) pool: Option<CallbackPool>,
    /// The caller drives the shards by hand (tests); shutdown is theirs to do.
    pub(super) driven: bool,
}

impl Threads {
    pub(super) fn with_pool(pool: Option<CallbackPool>) -> Self {
        Threads {
            shard_threads: Vec::new(),
            pool,
            driven: false,
        }
    }
}

/// A timer that neither fired nor was cancelled before [`TimerEngine::shutdown`](crate::TimerEngine::shutdown), handed back so
/// the caller can run it, log it or drop it.
pub struct Unfired {
    timer: TimerHandle,
    deadline: Instant,
    callback: CallbackBox,
}

impl Unfired {
    /// The timer, equal to the handle its `schedule` returned, so the caller can match what
    /// comes back to its own records.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let kept = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// let unfired = engine.shutdown();
    /// assert_eq!(unfired[0].timer(), &kept);
    /// ```
    pub fn timer(&self) -> &TimerHandle {
        &self.timer
    }

    /// The instant the timer was due, as [`TimerHandle::deadline`] gives it.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// let unfired = engine.shutdown();
    /// assert!(unfired[0].deadline() > std::time::Instant::now());
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Runs the callback now, on the calling thread.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let ran = Arc::new(AtomicBool::new(false));
    /// let flag = ran.clone();
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// engine.schedule(Duration::from_secs(60), move || flag.store(true, Ordering::SeqCst)).unwrap();
    /// for timer in engine.shutdown() {
    ///     timer.run();
    /// }
    /// assert!(ran.load(Ordering::SeqCst));
    /// ```
    pub fn run(self) {
        self.callback.call()
    }
}

impl fmt::Debug for Unfired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unfired")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// What the clones of a [`TimerEngine`](crate::TimerEngine) share; its drop shuts the engine down.
pub(super) struct Engine {
    pub(super) shared: Arc<EngineShared>,
    pub(super) shutdown: Shutdown,
    /// The engine's registration with its manual clock, if it has one and drives its shards
    /// itself: what the clock holds weakly, and the id to unwatch it by.
    watch: Option<(StdArc<ClockWatch>, u64)>,
}

impl Engine {
    pub(super) fn new(shared: Arc<EngineShared>, threads: Threads) -> Self {
        let watch = shared
            .clock
            .manual()
            .filter(|_| !threads.driven)
            .map(|clock| {
                let watch = StdArc::new(ClockWatch(shared.clone()));
                let weak: StdArc<dyn CatchUp> = watch.clone();
                let id = clock.watch(StdArc::downgrade(&weak));
                (watch, id)
            });
        Engine {
            shared,
            shutdown: Shutdown::new(threads),
            watch,
        }
    }

    /// Stops catching up with the manual clock, if the engine was.
    pub(super) fn unwatch_clock(&self) {
        if let (Some(clock), Some((_, id))) = (self.shared.clock.manual(), &self.watch) {
            clock.unwatch(*id);
        }
    }

    /// See [`TimerEngine::shutdown`](crate::TimerEngine::shutdown).
    pub(super) fn shutdown(&self) -> Vec<Unfired> {
        let inside = in_callback_of(self.shared.id);
        let shutdown = &self.shutdown;
        let duty = shutdown.begin(inside, |threads| {
            if threads.driven {
                // The shards belong to the caller (a driven engine): theirs to stop.
                return false;
            }
            crate::trace::shutdown_began(self.shared.id);
            self.stop_shards();
            true
        });
        match duty {
            Duty::Finish(threads) => {
                let _complete = CompleteOnDrop(shutdown);
                self.shared.finish(threads)
            }
            Duty::FinishElsewhere(threads) => {
                // If no thread can be had, the threads go with the closure, the shard threads
                // exit on their own (their stop flags are set), and the timers still pending
                // stay where they are, their memory freed as the handles go.
                let shared = self.shared.clone();
                let finisher =
                    thread::spawn_named("shardwheel-shutdown", move || shared.finish(threads));
                shutdown.finishing(finisher.ok());
                Vec::new()
            }
            Duty::Join(finisher) => {
                let _complete = CompleteOnDrop(shutdown);
                // The finishing thread never panics short of a bug in the engine; its timers
                // are then lost with it.
                finisher.join().unwrap_or_default()
            }
            Duty::Nothing => Vec::new(),
        }
    }

    /// Sets every shard's `stop` flag and wakes it; stops catching up with a manual clock.
    pub(super) fn stop_shards(&self) {
        self.unwatch_clock();
        for shard in self.shared.shards.iter() {
            shard.set_stopped();
            shard.signal().wake();
        }
        // Shutdown's half of the hand-off's Dekker pair (see `shard::lane`): the queues it
        // drains after this hold every push whose producer missed the flag.
        let _fenced = Fenced::now();
        // The sleeps waiting for a permit find the engine stopped.
        self.shared.shards[0].wake_room_waiters();
        self.shared.clocks.stop();
    }
}

impl EngineShared {
    /// Joins the stopped shard threads, waits for callbacks in flight, joins the pool and
    /// hands back what is still pending.
    fn finish(&self, threads: Threads) -> Vec<Unfired> {
        let stopped = threads
            .shard_threads
            .into_iter()
            .map(|thread| thread.join().ok())
            .collect();
        self.finish_with(threads.pool, stopped)
    }

    pub(super) fn finish_with(
        &self,
        pool: Option<CallbackPool>,
        stopped: Vec<Option<Stopped>>,
    ) -> Vec<Unfired> {
        // Before the hand-back: the clock thread moves no timer from here on.
        self.clocks.finish();
        self.inflight.wait_idle();
        if let Some(pool) = pool {
            pool.join();
        }
        let unfired = self.collect(stopped);
        // No shard of this engine will discard the chunks freed meanwhile.
        self.shards[0].discards().discard_some(usize::MAX);
        self.shards[0].wake_room_waiters();
        crate::trace::shutdown_ended(self.id, unfired.len());
        unfired
    }

    /// Hands back every timer still pending in the stopped shards (one per shard, in order;
    /// `None` for a shard whose thread could not be joined, which `AbortOnUnwind` in
    /// `shard::worker` makes impossible short of a bug).
    fn collect(&self, stopped: Vec<Option<Stopped>>) -> Vec<Unfired> {
        let mut unfired = Vec::new();
        let mut entries = Vec::new();
        for ((shard, lanes), stopped) in self.shards_with_lanes().zip(stopped) {
            if let Some(stopped) = stopped {
                stopped.empty_into(&mut entries);
            }
            let mut handed_back = 0;
            let mut released = Permits::new(shard.cap());
            for entry in entries.drain(..) {
                match entry.hand_back(shard.cap()) {
                    Ok(back) => {
                        handed_back += 1;
                        released.add(back.permit);
                        unfired.push(Unfired {
                            deadline: self.clock.instant_of(back.word.deadline()),
                            // Any lane of the shard serves the handle: it only reads the
                            // shard's clock, and a cancel of a returned timer does nothing.
                            timer: TimerHandle::of(entry, lanes[0].clone()),
                            callback: back.callback,
                        });
                    }
                    // Cancelled while queued: its permit is released here.
                    Err(_) => entry.end_cancelled_hold(&mut released),
                }
            }
            shard.counts().add_handed_back(handed_back as u64);
        }
        unfired
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        drop(self.shutdown());
        for (_, lanes) in self.shared.shards_with_lanes() {
            for lane in lanes {
                lane.free_spares();
            }
        }
        // The chunks the give-ups freed: no shard of this engine is left to discard them.
        self.shared.shards[0].discards().discard_some(usize::MAX);
    }
}
