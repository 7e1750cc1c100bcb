//! Handing fired callbacks to the pool: queues of batches per shard, and runners on the pool
//! that share the batches out (see `claims`) and park when there are none. (A pool job per
//! batch would wake spinning rayon threads every tick; a queue entry per callback would slow a
//! burst.)
//!
//! The protocol, under one mutex (`State`):
//!
//! - **Shard** (`hand_over`): push the batch, then lock; notify an idle runner, else start one
//!   if none is alive. A batch of several does this twice, so a second runner shares it
//!   (while fewer runners than cpus are alive).
//! - **Shard, each turn** (`look_again`): if callbacks handed over earlier have not all begun
//!   (`ShardCallbacks::queued`, wherever they are), lock; notify an idle runner or start
//!   another, up to the pool's size.
//! - **Runner**: runs its own claim's range one callback at a time; when empty, takes a batch
//!   off the queues in turn, else steals half the fullest range. With nothing anywhere it locks
//!   and looks again: work, go on; another runner idle or relay closed, end; else wait as the
//!   idle runner until notified or `LINGER` passes, then end.
//!
//! A shard pushes before it locks and a runner looks under the lock before it waits, so
//! whichever locks second sees the other: no batch waits for a runner that went idle past it.
//! A slow callback holds up only itself: its range is there to steal, and the shard's next
//! turn starts another runner (it polls while handed callbacks have not begun, see `worker`).
//! `close` drops the spawning closure so the pool can be joined; later batches run inline.

use std::time::Duration;

use super::counts::RunsOn;
use super::counts::ShardCallbacks;
use super::run::run_one;
use crate::entry::Fired;
use crate::sync::{in_batches, Arc, Claim, Condvar, Holder, Mutex, SegQueue, StdArc};

/// How long an idle runner waits for callbacks before it ends, giving its pool thread back.
const LINGER: Duration = Duration::from_millis(50);

/// Threads that may wait for callbacks at once: two, so a batch finds two runners to share it.
const IDLE_RUNNERS: usize = 2;

/// A job for the pool.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// Starts a job on the pool.
pub(crate) type Spawn = StdArc<dyn Fn(Job) + Send + Sync>;

/// The hand-over from the shards to the pool's runners (see the module documentation).
pub(crate) struct Relay {
    /// The queues of batches of each shard, indexed as `shards`.
    queues: Box<[Queues]>,
    shards: Box<[Arc<ShardCallbacks>]>,
    /// One per runner that may be alive at once (the pool's size): the range it holds.
    claims: Box<[Claim<Fired>]>,
    state: Mutex<State>,
    wake: Condvar,
    inflight: Arc<Inflight>,
    /// The cpus the process may use: the most runners started to share batches.
    cpus: usize,
}

struct State {
    /// Starts a runner; `None` once closed.
    spawn: Option<Spawn>,
    /// Threads waiting for callbacks.
    idle: usize,
    /// The claims no runner holds: a runner is alive for each claim missing.
    free: Vec<usize>,
}

/// What a shard asks `find_runner` for, beyond waking an idle runner.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// A runner alive.
    One,
    /// Another to share a batch, while fewer runners than cpus are alive: runners past the
    /// cpus would only take turns on them with the shards.
    Share,
    /// Another for callbacks stalled behind slow ones, up to the pool's size.
    Another,
}

impl Relay {
    /// A relay for `shards`, starting up to `max_runners` runners with `spawn` (up to `cpus`
    /// to share batches), counting the callbacks it holds in `inflight`.
    pub(crate) fn new(
        shards: Vec<Arc<ShardCallbacks>>,
        spawn: Spawn,
        (max_runners, cpus): (usize, usize),
        inflight: Arc<Inflight>,
    ) -> StdArc<Self> {
        let max_runners = max_runners.max(1);
        StdArc::new(Relay {
            queues: shards.iter().map(|_| Queues::new()).collect(),
            shards: shards.into_boxed_slice(),
            claims: (0..max_runners).map(|_| Claim::new()).collect(),
            state: Mutex::new(State {
                spawn: Some(spawn),
                idle: 0,
                free: (0..max_runners).rev().collect(),
            }),
            wake: Condvar::new(),
            inflight,
            cpus: cpus.max(1),
        })
    }

    /// Shard `shard` hands over `batch`, of kind `kind` (see `Queues`).
    pub(crate) fn hand_over(self: &StdArc<Self>, shard: usize, batch: Vec<Fired>, kind: HandOver) {
        let queues = &self.queues[shard];
        let queue = match kind {
            HandOver::First => &queues.first,
            HandOver::Later => &queues.rest,
        };
        let many = batch.len() > 1;
        self.inflight.begin(batch.len());
        for batch in in_batches(batch) {
            queue.push(batch);
        }
        self.find_runner(shard, Want::One);
        if many {
            // A second runner, to steal half the first one's range.
            self.find_runner(shard, Want::Share);
        }
    }

    /// Shard `shard`, each turn: callbacks handed over earlier that still wait are stalled;
    /// start another runner for them.
    pub(crate) fn look_again(self: &StdArc<Self>, shard: usize) {
        if self.has_queued(shard) {
            self.find_runner(shard, Want::Another);
        }
    }

    /// Wakes an idle runner for the callbacks queued by shard `shard`; failing that, starts a
    /// runner as `want` asks (see the module documentation).
    fn find_runner(self: &StdArc<Self>, shard: usize, want: Want) {
        let mut state = self.state.lock();
        if state.idle > 0 {
            self.wake.notify_one();
            return;
        }
        let alive = self.claims.len() - state.free.len();
        let enough = match want {
            Want::One => alive > 0,
            Want::Share => alive >= self.cpus,
            Want::Another => false,
        };
        if enough || state.free.is_empty() {
            return;
        }
        let Some(spawn) = state.spawn.clone() else {
            // Closed: no pool to run them on. Run them here rather than lose them.
            drop(state);
            self.run_queued(shard);
            return;
        };
        let claim = state.free.pop().expect("a free claim");
        drop(state);
        let relay = self.clone();
        spawn(Box::new(move || relay.runner(claim)));
    }

    /// Whether callbacks shard `shard` handed over have not all begun; called by the shard,
    /// whose begun counts may lag, which only makes it look once more.
    pub(crate) fn has_queued(&self, shard: usize) -> bool {
        self.shards[shard].queued() > 0
    }

    /// Ends the idle runners, and every runner once all is empty; none starts after this.
    pub(crate) fn close(&self) {
        let spawn = self.state.lock().spawn.take();
        drop(spawn);
        self.wake.notify_all();
    }

    /// Whether any callback waits for a runner, on a queue or in a range.
    fn any_queued(&self) -> bool {
        self.queues.iter().any(Queues::any) || self.claims.iter().any(|claim| claim.left() > 0)
    }

    /// Runs the callbacks queued for shard `shard` on the calling thread.
    fn run_queued(&self, shard: usize) {
        let mut ran = 0;
        while let Some(batch) = self.queues[shard].pop() {
            for fired in batch {
                run_one(fired, &self.shards[shard], RunsOn::Other);
                ran += 1;
            }
        }
        self.inflight.end(ran);
    }

    /// Runs callbacks as the holder of claim `claim` until none is left: its range, then a
    /// batch off the queues (in `order`), then half another's range. Returns how many.
    fn run_all(&self, claim: usize, holder: &mut Holder<'_, Fired>, order: &mut Order) -> usize {
        let mut ran = 0;
        loop {
            while let Some((fired, shard)) = holder.take() {
                run_one(fired, &self.shards[shard], RunsOn::Pool(claim));
                ran += 1;
            }
            if let Some((batch, shard)) = self.pop_any(order) {
                holder.hold(batch, shard);
            } else if !self.steal(holder) {
                return ran;
            }
        }
    }

    /// A batch off the queues in `order` (see `Order`), with its shard.
    fn pop_any(&self, order: &mut Order) -> Option<(Vec<Fired>, usize)> {
        order.rest_first = !order.rest_first;
        let (one, other): (Pick, Pick) = if order.rest_first {
            (Queues::rest, Queues::first)
        } else {
            (Queues::first, Queues::rest)
        };
        (self.pop_from(&mut order.next, one)).or_else(|| self.pop_from(&mut order.next, other))
    }

    /// As `pop_any`, from the queue `pick` chooses of each shard.
    fn pop_from(&self, next: &mut usize, pick: Pick) -> Option<(Vec<Fired>, usize)> {
        let shards = self.queues.len();
        (0..shards).find_map(|i| {
            let shard = (*next + i) % shards;
            let batch = pick(&self.queues[shard]).pop()?;
            *next = shard + 1;
            Some((batch, shard))
        })
    }

    /// Steals half of the fullest range into `holder`'s; false if every range is empty.
    fn steal(&self, holder: &mut Holder<'_, Fired>) -> bool {
        loop {
            let Some(victim) = self.claims.iter().max_by_key(|claim| claim.left()) else {
                return false;
            };
            if victim.left() == 0 {
                return false;
            }
            // It may have emptied since: look again.
            if holder.steal(victim) {
                return true;
            }
        }
    }

    /// A runner, on a pool thread, holding claim `claim` (see the module documentation).
    fn runner(&self, claim: usize) {
        let mut holder = Holder::new(&self.claims[claim]);
        let mut order = Order {
            next: claim,
            rest_first: false,
        };
        loop {
            let ran = self.run_all(claim, &mut holder, &mut order);
            if ran > 0 {
                self.inflight.end(ran);
            }
            let mut state = self.state.lock();
            loop {
                if self.any_queued() {
                    break;
                }
                if state.idle >= IDLE_RUNNERS || state.spawn.is_none() {
                    state.end_runner(claim);
                    return;
                }
                state.idle += 1;
                let (woken, timed_out) = self.wake.wait_timeout(state, LINGER);
                state = woken;
                state.idle -= 1;
                if timed_out && !self.any_queued() {
                    state.end_runner(claim);
                    return;
                }
            }
        }
    }
}

impl State {
    /// A runner ends, giving its claim back.
    fn end_runner(&mut self, claim: usize) {
        self.free.push(claim);
    }
}

/// Which hand-over of a turn a batch is: its first, or one after it in a turn that fires many
/// (see `shard::worker`); the relay queues them apart (see [`Queues`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandOver {
    First,
    Later,
}

/// A shard's queued batches: each turn's first, and the batches a turn that fires many hands
/// over after its first (see `shard::worker`). A runner takes first batches before later ones
/// every other time (see `Order`), so a timer due while a storm drains waits for a batch or
/// two, not for the rest of the storm, and a steady flow of first batches starves no storm.
struct Queues {
    first: SegQueue<Vec<Fired>>,
    rest: SegQueue<Vec<Fired>>,
}

/// One of a shard's two queues.
type Pick = fn(&Queues) -> &SegQueue<Vec<Fired>>;

/// The order a runner takes queued batches in: the shards in turn from `next`, and each
/// time the other kind of batch first.
struct Order {
    next: usize,
    rest_first: bool,
}

impl Queues {
    fn new() -> Self {
        Queues {
            first: SegQueue::new(),
            rest: SegQueue::new(),
        }
    }

    fn any(&self) -> bool {
        !self.first.is_empty() || !self.rest.is_empty()
    }

    fn first(&self) -> &SegQueue<Vec<Fired>> {
        &self.first
    }

    fn rest(&self) -> &SegQueue<Vec<Fired>> {
        &self.rest
    }

    /// A queued batch, a first one if any.
    fn pop(&self) -> Option<Vec<Fired>> {
        self.first.pop().or_else(|| self.rest.pop())
    }
}

/// Counts callbacks handed to the pool and not yet run, so shutdown and a manual clock can
/// wait for them (a spawner's tasks are not counted: they may need the waiting thread). A
/// runner counts what it ran when it finds nothing left, so zero means nothing queued or
/// running.
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
