//! Design map: the parts of the engine and the path of one timer; the words the code uses
//! are in [`glossary`].
//!
//! This module holds no code. Each protocol is told in full, with its memory orderings, in
//! the module that carries it; this page points there. Paths are relative to the crate root.
//!
//! # What the engine is
//!
//! An engine has several shards. Each shard owns one hierarchical timing wheel and one tick
//! thread, and only that thread touches the wheel. A timer is one reference-counted entry,
//! pushed onto a lock-free queue of the calling thread's lane in the shard it is routed to;
//! the tick thread links it into its wheel on its next turn. Each entry has one atomic state
//! word, and a timer's fate is one compare-and-swap on it: PENDING→CANCELLED by a cancel,
//! PENDING→FIRED by the shard, PENDING→HANDED_BACK by shutdown. Fired callbacks run on a
//! rayon pool (or inline, or on the user's spawner).
//!
//! # Layers
//!
//! Lowest first; each imports only from itself and the layers before it.
//!
//! ```text
//! trace      events for the rare things (the `tracing` feature)            src/trace.rs
//! sync       the loom shim, claims, counters, the cap and its permits      src/sync/
//! slab       where entries live: counted pointers into blocks of chunks    src/slab/
//! entry      the timer entry, its state word, the type-erased callback     src/entry/
//! time       the tick clock and ManualClock                                src/time/
//! queue      inbound MPSC queue, owner's SPSC ring, unlink stack, recycler src/queue/
//! wheel      the hierarchical timing wheel, single-threaded                src/wheel/
//! callbacks  where fired callbacks run: executor, relay, runners, pool     src/callbacks/
//! pinning    pinning a tick thread to its cpu (opt-in), and unpinning it   src/pinning/
//! shard      the tick loop, lanes and their owners, the sleep signal       src/shard/
//! timer      handles, repeating timers, Sleep, Timeout, Interval, deadline src/timer/
//! clock      timers and sleeps on the boot and wall clocks, their rounds   src/clock/
//! engine     TimerEngine, builders, routing, shutdown, statistics, errors  src/engine/
//! tower      TimeoutLayer (the `tower` feature)                            src/tower/
//! delay      DelayQueue                                                    src/delay/
//! metrics    the stats to the `metrics` facade (the `metrics` feature)     src/metrics.rs
//! ```
//!
//! Inside a folder, files import one another without a circle, except src/entry/node.rs and
//! src/entry/callback.rs: an entry holds its callback, and a repeating callback's run is
//! handed its entry (for its handle), so the two types name each other.
//!
//! The engine behind a `TimerEngine` is two types: `Engine` (src/engine/shutdown.rs), what
//! the clones share, whose drop shuts the engine down; and `EngineShared`
//! (src/engine/shared.rs), the shards, lanes and clock, which outlive the engine's threads in
//! the handles, sleeps and delay queues that hold them.
//!
//! # The path of a schedule
//!
//! 1. `TimerEngine::schedule` (src/engine/api.rs) reads the present once
//!    (`TickClock::due_after`, src/time/tick.rs): the deadline rounded up to a tick, and when
//!    the timer was made.
//! 2. `EngineShared::lane` (src/engine/shared.rs) picks the calling thread's lane: in its home
//!    shard, kept in a thread-local, or in the key's shard (src/engine/routing.rs).
//!    `Lanes::lane` (src/shard/lanes.rs) makes it on first use, and `Access::of`
//!    (src/shard/lane/roles.rs) gives an `Owner` token if the thread owns it, claiming it if no
//!    thread does (`LaneCounts::ownership`, in the same file).
//! 3. `Lane::schedule` (src/shard/lane.rs) admits the timer: not shut down, not beyond
//!    `max_delay()`, and a permit taken if the engine has a cap (src/sync/cap.rs).
//! 4. The timer's kind builds its entry (`OneShot`, a sleep's `Wakes`, or `FirstRun` in
//!    src/timer/repeating.rs): the owner's in a spare (src/queue/recycle.rs) or a block of the
//!    lane's chunks (src/slab/allocator.rs); any other thread's in a block of its own.
//! 5. The owner keeps a timer due past the horizon (src/shard/shared.rs) young, in its
//!    lane's young queue (src/queue/young.rs); it pushes any other onto its ring
//!    (src/queue/ring.rs). Any other thread pushes onto the inbound queue
//!    (src/queue/inbound.rs).
//! 6. A SeqCst fence (a `Fenced`, src/sync/fenced.rs), then the stop flag: if shutdown began
//!    and this call wins PENDING→HANDED_BACK, the permit is released and the callback comes
//!    back, in `ScheduleError::Shutdown`.
//! 7. The owner sweeps the front of its young queue (src/shard/lane/young.rs), and the sleep
//!    word tells whether to wake the shard (src/shard/signal.rs); the caller gets a
//!    `TimerHandle` (src/timer/handle.rs).
//!
//! # The rest of a timer's life
//!
//! - **Youth** (src/queue/young.rs). Each schedule of the owner sweeps the front of its young
//!   queue: a timer cancelled young goes back into the owner's stash for its next schedule,
//!   never reaching the shard; a live one a millisecond old, or behind 1024 others, is sent
//!   to the ring. The shard takes a lane's young timers once the oldest is 2 ms old (its
//!   owner went quiet, or blocked, or exited), and sleeps no longer than that.
//! - **Into the wheel** (src/shard/worker.rs, src/wheel/hierarchy.rs). On its next turn the
//!   shard takes the entry off the queue, drops it if cancelled, fires it if due, and else
//!   links it into a wheel slot, setting LINKED in its state word.
//! - **Cancel** (src/timer/handle.rs). One CAS, PENDING→CANCELLED. If the word had LINKED,
//!   the canceller pushes an unlink request (src/queue/unlink.rs) and wakes the shard.
//! - **Fire.** The shard advances its wheel and wins PENDING→FIRED for each due entry; it
//!   hands the callbacks to the executor in batches as it walks (src/shard/worker.rs: the
//!   first of 64, each later one twice the size up to 4,096), so a crowded slot's first
//!   callbacks begin at once, and runners take each turn's first batch before the rest
//!   (src/callbacks/relay.rs). Each runs under `catch_unwind` (src/callbacks/run.rs). A
//!   repeating run returns its next tick; the runner stows the entry (FIRED→STOWED) on its
//!   shard's re-arm stack (src/queue/rearm.rs), and the shard re-arms it (STOWED→PENDING,
//!   src/entry/repeat.rs).
//! - **Memory back.** A turn frees the blocks of the one-shots it fired that no handle holds,
//!   together (src/slab/chunk.rs); dead entries go back to their lane's owner as spares. An
//!   owner that exits frees its spares and gives its lane's chunks up (`Lane::leave`); a
//!   chunk freed after its give-up waits for a calm turn of its engine's shards, which discard its
//!   pages and frees it (src/slab/discard.rs).
//! - **Shutdown** (src/engine/shutdown.rs, src/engine/closing.rs). Stop flags, join the tick
//!   threads, wait for the callbacks in flight, join the pool, then win PENDING→HANDED_BACK
//!   for every timer still pending and hand it back as `Unfired`.
//! - **Who owns what.** Counts: each handle's, and the engine's reference, one per arming,
//!   held by a queue, the wheel, then the unlink request's `UnlinkRef` (src/entry/unlink_ref.rs)
//!   or the runner's `Fired` and the re-arm stack. The callback: the entry's cell, until a won
//!   transition hands it to the canceller, the runner (who puts it back to stow) or `Unfired`.
//!   The `Permit`: the timer's from admission until the transition ending it gives it back
//!   (src/entry/permit.rs): a one-shot's fire, to the runner as the callback begins; a
//!   hand-back, to its winner; a stop, to the runner; a cancel leaves it with the engine's
//!   reference, whose holder ends the hold as it drops it (`Entry::end_cancelled_hold`). The
//!   re-arm: the shard's alone.
//!
//! # Invariants
//!
//! - **Never early.** A deadline rounds up to a tick and the present rounds down; the firing
//!   CAS compares the whole state word, so an entry met before its deadline is linked again.
//! - **At most once.** Leaving PENDING is one CAS that one party wins; only the winner
//!   touches the callback.
//! - **Never after a successful cancel**, and **nothing lost**: every timer is fired,
//!   cancelled, handed back or refused with its callback.
//! - **One thread per wheel**; shutdown empties a wheel only after joining its thread.
//! - **The cap bounds what the engine holds.** A permit is held from admission until the
//!   callback begins, the timer is handed back, or its cancelled entry is dropped; a repeating
//!   timer holds one until it stops. No permit is made from a count: only `Cap::take` and a
//!   transition that ends a hold make one, and its drop releases it.
//! - **No lost wake-up.** A push and a sleep announcement form a Dekker pair; a young timer
//!   wakes the shard only if it sleeps past the timer's horizon.
//! - **Shutdown waits** for the engine's callbacks and threads; **no input panics the engine.**
//!
//! # Hand-built mechanisms
//!
//! The time-stamp-counter clock (src/time/tsc.rs); reciprocal division (src/time/tick.rs); the
//! relay and its claims (src/callbacks/relay.rs, src/sync/claims.rs); the chunk slab
//! (src/slab/); the intrusive queues (src/queue/); the recycler (src/queue/recycle.rs); the
//! young queue (src/queue/young.rs); the one-word callback box, a task's waker in the word
//! itself (src/entry/callback.rs); the list of freed chunks (src/slab/discard.rs).
//! DECISIONS.md gives the measurement behind each. No epoch-based reclamation: no thread reads
//! an entry after its last holder drops it, so a reference count settles it.
//!
//! # Where each protocol is told
//!
//! - The state word and its one CAS loop: src/entry/state.rs, src/entry/node.rs.
//! - Lanes, admission and the producer's half of shutdown: src/shard/lane.rs; owners, their
//!   hand-over and the owner's and the taker's tokens: src/shard/lane/roles.rs; making
//!   lanes: src/shard/lanes.rs; lane indices and thread numbers: src/sync/ids.rs.
//! - The Dekker pairs, and which fence each relies on: src/sync/fenced.rs.
//! - The queues: src/queue/inbound.rs, src/queue/ring.rs, src/queue/unlink.rs on
//!   src/sync/stack.rs, src/queue/recycle.rs.
//! - Young timers: src/queue/young.rs; the owner's sweep: src/shard/lane/young.rs; the
//!   horizons: src/shard/shared.rs.
//! - Reset: `TimerHandle::reset` in src/timer/handle.rs; a boot or wall timer's, through
//!   src/shard/retime.rs to src/clock/timers.rs.
//! - The wheel: src/wheel/mod.rs, src/wheel/level.rs.
//! - Time: src/time/tick.rs, src/time/tsc.rs, src/time/manual.rs; a manual clock's catch-up
//!   and look-ahead: src/engine/shared.rs, src/shard/ask.rs. A turn: src/shard/worker.rs;
//!   the loop between turns: src/shard/worker/between.rs; sleeping and waking:
//!   src/shard/signal.rs.
//! - The relay: src/callbacks/relay.rs, src/sync/claims.rs, src/callbacks/executor.rs.
//! - Shutdown: src/engine/shutdown.rs, src/engine/closing.rs.
//! - Repeating timers: src/timer/repeating.rs, src/entry/repeat.rs, src/queue/rearm.rs; their
//!   options: src/engine/repeat.rs.
//! - Sleep: src/timer/sleep/mod.rs (after shutdown: src/time/fallback.rs); Timeout:
//!   src/timer/timeout.rs; Interval: src/timer/interval.rs; what a refused one tells its
//!   holder: src/engine/refused.rs. Deadline scopes: src/engine/deadline.rs; the current
//!   deadline, on its clock: src/timer/deadline.rs; a timeout's clamp: src/timer/timeout.rs.
//! - The free functions: src/engine/global.rs; the engine a thread or task has entered:
//!   src/engine/scope.rs. The delay queue: src/delay/queue.rs and src/delay/wheel.rs.
//! - The cap, and the sleeps waiting there for a permit: src/sync/cap.rs; how a hold ends:
//!   src/entry/permit.rs. The slab: src/slab/chunk.rs, src/slab/allocator.rs, and its freed
//!   chunks' pages: src/slab/discard.rs.
//! - Pinning: src/pinning/watch.rs, src/pinning/affinity.rs, src/pinning/waking.rs.
//! - Lateness: src/shard/lateness.rs.
//! - The boot and wall clocks: src/clock/mod.rs (estimates, a run's look, rounds, the clock
//!   thread and its `timerfd`s in src/clock/timerfd.rs); reading them: src/time/other.rs.
//! - Asking a shard thread about its wheel, by ticket (the look-ahead, the survey), and the one
//!   asking loop: src/shard/ask.rs.
//! - A snapshot: src/engine/snapshot.rs; a shard's survey of its wheel: src/shard/survey.rs,
//!   src/wheel/survey.rs; origins: src/shard/lane/origins.rs.
//!
//! # The loom models
//!
//! In loom-tests/ (see loom-tests/mod.rs), run by `.ci/run`; the `sync` shim gives loom every
//! atomic, lock and allocation the protocols use, and each model's doc names the bug it
//! catches. They cover: cancel against fire, transfer, re-arm, shutdown and another cancel;
//! schedule against shutdown (one and two producers); the sleep announcement against an insert,
//! a cancel and a first schedule; reset against fire; a task's poll against the fire of its
//! sleep and of its delay queue; the owner's ring, spares, hand-over and exit; the engine's
//! drop against an owner; callers of shutdown; the relay's hand-over and waiting count; the
//! slab's frees and trim; claims against a thief; a sleep waiting for a permit against a
//! release; two askers of the look-ahead, and a snapshot's survey; young timers against a
//! cancel from another thread, the shard's take, shutdown and the shard's sleep; a repeating
//! run's stow against shutdown and the shard's sleep; a clock timer's last run against a
//! cancel, and its reset against its firing and run; and, on capped engines, each permit given
//! back once. What loom cannot see (the ring's tail, the slab's live count, the freed chunks
//! waiting for their discard, which exist only outside loom, the clock thread's alarm, which
//! no model starts, a shard's `Retimer` in a std `OnceLock`, the fallback's waiting sleeps
//! behind std locks) ThreadSanitizer checks in CI
//! (.ci/sanitizers); no model polls a sleep after shutdown.

pub mod glossary;
