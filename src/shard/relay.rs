//! Handing fired callbacks to the callback pool: a queue per shard, and runners on the pool that
//! take callbacks off the queues and park when there are none.
//!
//! Why not a pool job per batch: at every job a rayon pool wakes a sleeping thread, which
//! then spins through a few dozen rounds of `yield_now` before it sleeps again. A shard hands
//! over a batch every tick while timers come due, so at a 100 µs tick two shards kept both
//! cores of a two-core machine busy with spinning pool threads (1.9 s of CPU in a one-second
//! run of 100,000 trivial callbacks), and the tick threads waited behind them.
//!
//! The protocol, under one mutex (`State`):
//!
//! - **Shard** (`hand_over`): push the callbacks onto its queue, then lock. If a runner is
//!   idle, notify one; else, if no runner is alive, start one on the pool.
//! - **Shard, each turn** (`look_again`): if its queue still holds callbacks from an earlier
//!   turn (the runners are stuck in slow callbacks, or were not scheduled for a whole tick),
//!   lock; notify an idle runner, or else start another runner, up to the pool's size.
//! - **Runner**: take callbacks off every queue in turn, one per queue per round, until all
//!   are empty. Then lock and look at the queues again: if one has callbacks, go on. If
//!   another runner is idle already, or the relay is closed, end. Else wait, as the idle
//!   runner, until notified or until `LINGER` passes with nothing to do, and then end.
//!
//! A shard pushes before it locks, and a runner looks at the queues under the lock before it
//! waits: whichever of them locks second sees the other's side, so no callback waits for a
//! runner that went idle past it. A slow callback holds up only itself: while it runs, the
//! callbacks queued behind it stay queued for a tick, and the shard's next turn starts another
//! runner for them. A shard keeps polling once a tick while its queue holds callbacks (see
//! `worker`), so it is there to see that even when it has nothing else to do.
//!
//! Runners are started through a closure (the pool's `spawn`), which `close` drops, so the
//! pool can be joined; a shard that hands over callbacks after that runs them itself.

use std::time::Duration;

use super::core::ShardCore;
use super::run::{run_one, Runner};
use crate::entry::Fired;
use crate::sync::{Arc, Condvar, Mutex, Queue, StdArc};

/// How long an idle runner waits for callbacks before it ends, giving its pool thread back.
const LINGER: Duration = Duration::from_millis(50);

/// Runners that may wait for callbacks at once: two, so that a batch of several callbacks
/// finds two runners ready to share it.
const IDLE_RUNNERS: usize = 2;

/// A job for the pool.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// Starts a job on the pool.
pub(crate) type Spawn = StdArc<dyn Fn(Job) + Send + Sync>;

/// The hand-over from the shards to the pool's runners (see the module documentation).
pub(crate) struct Relay {
    /// One queue per shard, indexed as `shards`.
    queues: Box<[Queue<Fired>]>,
    shards: Box<[Arc<ShardCore>]>,
    state: Mutex<State>,
    wake: Condvar,
    /// The most runners alive at once: the pool's size.
    max_runners: usize,
    inflight: Arc<Inflight>,
}

struct State {
    /// Starts a runner; `None` once closed.
    spawn: Option<Spawn>,
    /// Runners started and not yet ended.
    alive: usize,
    /// Runners waiting for callbacks.
    idle: usize,
}

impl Relay {
    /// A relay for `shards` (in shard order), starting up to `max_runners` runners with
    /// `spawn`, and counting the callbacks it holds in `inflight`.
    pub(crate) fn new(
        shards: Vec<Arc<ShardCore>>,
        spawn: Spawn,
        max_runners: usize,
        inflight: Arc<Inflight>,
    ) -> StdArc<Self> {
        StdArc::new(Relay {
            queues: shards.iter().map(|_| Queue::new()).collect(),
            shards: shards.into_boxed_slice(),
            state: Mutex::new(State {
                spawn: Some(spawn),
                alive: 0,
                idle: 0,
            }),
            wake: Condvar::new(),
            max_runners: max_runners.max(1),
            inflight,
        })
    }

    /// Shard `shard` hands over `batch`.
    pub(crate) fn hand_over(self: &StdArc<Self>, shard: usize, batch: Vec<Fired>) {
        let queue = &self.queues[shard];
        let many = batch.len() > 1;
        self.inflight.begin(batch.len());
        for fired in batch {
            queue.push(fired);
        }
        self.find_runner(shard, false);
        if many {
            // A second runner, so that a slow callback in the batch holds up none of the rest.
            self.find_runner(shard, true);
        }
    }

    /// Shard `shard`, at the start of each turn: callbacks it handed over in an earlier turn
    /// that still wait to begin are stalled, so another runner is started for them.
    pub(crate) fn look_again(self: &StdArc<Self>, shard: usize) {
        if self.has_queued(shard) {
            self.find_runner(shard, true);
        }
    }

    /// Wakes an idle runner for the callbacks queued by shard `shard`; failing that, starts a
    /// runner if none is alive or the callbacks are `stalled` (see the module documentation).
    fn find_runner(self: &StdArc<Self>, shard: usize, stalled: bool) {
        let mut state = self.state.lock();
        if state.idle > 0 {
            self.wake.notify_one();
            return;
        }
        if (state.alive > 0 && !stalled) || state.alive >= self.max_runners {
            return;
        }
        let Some(spawn) = state.spawn.clone() else {
            // Closed: no pool to run them on. Run them here rather than lose them.
            drop(state);
            self.run_queued(shard);
            return;
        };
        state.alive += 1;
        drop(state);
        let relay = self.clone();
        spawn(Box::new(move || relay.runner()));
    }

    /// Whether shard `shard` has callbacks waiting for a runner.
    pub(crate) fn has_queued(&self, shard: usize) -> bool {
        !self.queues[shard].is_empty()
    }

    /// Ends the idle runners, and makes every runner end once the queues are empty; no runner
    /// is started after this. Drops the closure that starts them.
    pub(crate) fn close(&self) {
        let spawn = self.state.lock().spawn.take();
        drop(spawn);
        self.wake.notify_all();
    }

    fn any_queued(&self) -> bool {
        self.queues.iter().any(|queue| !queue.is_empty())
    }

    /// Runs the callbacks queued for shard `shard` on the calling thread.
    fn run_queued(&self, shard: usize) {
        let mut ran = 0;
        while self.run_next(shard) {
            ran += 1;
        }
        self.inflight.end(ran);
    }

    /// Takes one callback off shard `shard`'s queue and runs it; false if the queue was empty.
    fn run_next(&self, shard: usize) -> bool {
        let Some(fired) = self.queues[shard].pop() else {
            return false;
        };
        run_one(fired, &self.shards[shard], Runner::Other);
        true
    }

    /// Takes callbacks off the queues, one per queue in turn, until all are empty; returns how
    /// many it ran.
    fn run_all(&self) -> usize {
        let mut ran = 0;
        loop {
            let before = ran;
            for shard in 0..self.queues.len() {
                if self.run_next(shard) {
                    ran += 1;
                }
            }
            if ran == before {
                return ran;
            }
        }
    }

    /// A runner, on a pool thread (see the module documentation).
    fn runner(&self) {
        loop {
            let ran = self.run_all();
            if ran > 0 {
                self.inflight.end(ran);
            }
            let mut state = self.state.lock();
            loop {
                if self.any_queued() {
                    break;
                }
                if state.idle >= IDLE_RUNNERS || state.spawn.is_none() {
                    state.alive -= 1;
                    return;
                }
                state.idle += 1;
                let (woken, timed_out) = self.wake.wait_timeout(state, LINGER);
                state = woken;
                state.idle -= 1;
                if timed_out && !self.any_queued() {
                    state.alive -= 1;
                    return;
                }
            }
        }
    }
}

/// Counts callbacks handed to the pool and not yet run, so shutdown and a manual clock can
/// wait for callbacks in flight. (Tasks handed to a spawner are not counted: they run when the
/// user's executor runs them, which may need the very thread that would wait.) A runner counts
/// the callbacks it ran when it finds the queues empty, so the count reaches zero only once
/// nothing is queued and nothing runs.
pub(crate) struct Inflight {
    callbacks: Mutex<usize>,
    idle: Condvar,
}

impl Inflight {
    pub(crate) fn new() -> Self {
        Inflight {
            callbacks: Mutex::new(0),
            idle: Condvar::new(),
        }
    }

    fn begin(&self, n: usize) {
        *self.callbacks.lock() += n;
    }

    fn end(&self, n: usize) {
        let mut callbacks = self.callbacks.lock();
        *callbacks -= n;
        if *callbacks == 0 {
            self.idle.notify_all();
        }
    }

    /// Blocks until no callback is queued or running.
    pub(crate) fn wait_idle(&self) {
        let mut callbacks = self.callbacks.lock();
        while *callbacks > 0 {
            callbacks = self.idle.wait(callbacks);
        }
    }
}
