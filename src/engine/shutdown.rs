//! Shutdown: stopping the shards, joining every thread the engine started, and handing back
//! every timer that neither fired nor was cancelled.
//!
//! Shutdown sets each shard's `stop` flag, wakes it and passes the heavy barrier; joins the
//! shard threads; waits for callbacks in flight and joins the callback pool; and then empties
//! the wheels and the queues, winning INIT→RETURNED for each timer still pending. A `schedule`
//! racing it takes its own timer back (the producer's half, in `shard::lane`), so every timer
//! lands in exactly one place: fired, cancelled, handed back here, or refused.

use std::fmt;
use std::thread::JoinHandle;
use std::time::Instant;

use super::api::TimerEngine;
use super::core::EngineCore;
use super::pool::OwnedPool;
use crate::entry::Callback;
use crate::shard::{in_callback_of, Stopped};
use crate::sync::{barrier, MutexGuard};

/// The threads an engine started, joined at shutdown.
pub(super) struct Runners {
    pub(super) shard_threads: Vec<JoinHandle<Stopped>>,
    pub(super) pool: Option<OwnedPool>,
    /// The caller drives the shards by hand (tests); shutdown is theirs to do.
    pub(super) driven: bool,
}

impl Runners {
    pub(super) fn threads(pool: Option<OwnedPool>) -> Self {
        Runners {
            shard_threads: Vec::new(),
            pool,
            driven: false,
        }
    }
}

/// A timer that neither fired nor was cancelled before [`TimerEngine::shutdown`], handed back so
/// the caller can run it, log it or drop it.
pub struct Unfired {
    deadline: Instant,
    callback: Box<dyn Callback>,
}

impl Unfired {
    /// The instant the timer was due (rounded up to the engine's tick).
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

impl TimerEngine {
    /// Stops the engine: stops the shards, waits for callbacks in flight, and hands back every
    /// timer that neither fired nor was cancelled. Afterwards `schedule` refuses with
    /// [`ScheduleError::Shutdown`](crate::ScheduleError::Shutdown). A second call returns an
    /// empty list.
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
                // Already shut down, or the shards belong to the caller (a driven engine).
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
        let core = self.core();
        if in_callback_of(core.id) {
            // Called from one of this engine's own callbacks (for example by dropping the last
            // reference to the engine there): waiting for callbacks in flight, or joining the
            // thread, would wait for this very call. Finish on a thread of its own; the timers
            // still pending are dropped there (and counted as handed back).
            let core = core.clone();
            let spawned = std::thread::Builder::new()
                .name("shardwheel-shutdown".into())
                .spawn(move || drop(core.finish(runners)));
            // If no thread can be had, the timers stay where they are, pending, and their memory
            // is freed as the handles go.
            drop(spawned);
            return Vec::new();
        }
        core.finish(runners)
    }

    pub(super) fn lock_runners(&self) -> MutexGuard<'_, Option<Runners>> {
        self.runners().lock()
    }

    /// Sets every shard's `stop` flag and wakes it; stops catching up with a manual clock.
    pub(super) fn stop_shards(&self) {
        self.unwatch_clock();
        for shard in self.core().shards.iter() {
            shard.set_stopped();
            shard.signal().wake();
        }
        // Pairs with the light barrier a racing `schedule` passes after its push (see
        // `shard::lane`).
        barrier::heavy();
    }
}

impl EngineCore {
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

    pub(super) fn finish_with(
        &self,
        pool: Option<OwnedPool>,
        stopped: Vec<Option<Stopped>>,
    ) -> Vec<Unfired> {
        self.inflight.wait_idle();
        if let Some(pool) = pool {
            pool.join();
        }
        self.collect(stopped)
    }

    /// Hands back every timer still pending in the stopped shards (one per shard, in order;
    /// `None` for a shard whose thread could not be joined, which `AbortOnUnwind` in
    /// `shard::worker` makes impossible short of a bug).
    fn collect(&self, stopped: Vec<Option<Stopped>>) -> Vec<Unfired> {
        let mut unfired = Vec::new();
        let mut entries = Vec::new();
        for (shard, stopped) in self.shards.iter().zip(stopped) {
            if let Some(stopped) = stopped {
                stopped.empty_into(&mut entries);
            }
            let before = unfired.len();
            for entry in entries.drain(..) {
                if let Ok((word, callback)) = entry.give_back() {
                    unfired.push(Unfired {
                        deadline: self.clock.instant_of(word.deadline()),
                        callback,
                    });
                }
            }
            let returned = unfired.len() - before;
            shard.counts().add_returned(returned as u64);
            shard.release_cap(returned);
        }
        unfired
    }
}

impl Drop for TimerEngine {
    fn drop(&mut self) {
        drop(self.shutdown());
        for lane in self.core().lanes.iter() {
            // SAFETY: a lane's owner takes spares only inside a call on this engine, and none
            // can be in progress while it is dropped.
            unsafe { lane.free_spares() };
        }
    }
}
