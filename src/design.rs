//! Design notes: where each part of the engine lives, and which module tells each protocol.
//!
//! This module holds no code. The source files' own documentation tells each protocol in full,
//! with its memory orderings; this page names the parts and points to them. Paths are given as
//! plain text (`src/shard/lane.rs`) and are relative to the crate's root.
//!
//! # What the engine is
//!
//! An engine has several shards. Each shard owns one hierarchical timing wheel and one tick
//! thread, and only that thread touches the wheel. A timer is one reference-counted entry; a
//! schedule routes it to a shard (the calling thread's home shard, or its key's), and within
//! the shard to the calling thread's lane, and pushes it onto one of the lane's lock-free queues; the tick thread moves queued entries into its wheel on
//! its next turn. Each entry has one atomic state word, and a timer's fate is decided by one
//! compare-and-swap on it: PENDING→CANCELLED by a cancel, PENDING→FIRED by the shard. The
//! callbacks a turn fires run on a rayon pool (or inline, or on a spawner of the user's).
//!
//! # Layers
//!
//! Lowest first: each layer imports only from itself and the layers listed before it.
//!
//! ```text
//! trace      events for the rare things (the `tracing` feature)            src/trace.rs
//! sync       the loom shim, claims, counters, the cap                      src/sync/
//! slab       where entries live: counted pointers into slots of chunks     src/slab/
//! entry      the timer entry, its state word, the type-erased callback     src/entry/
//! time       the tick clock and ManualClock                                src/time/
//! queue      inbound MPSC queue, owner's SPSC ring, unlink stack, recycler src/queue/
//! wheel      the hierarchical timing wheel, single-threaded                src/wheel/
//! callbacks  where fired callbacks run: executor, relay and runners, pool  src/callbacks/
//! placement  pinning a tick thread to its cpu (opt-in), and unpinning it   src/placement/
//! shard      the tick loop, its lanes, the sleep signal, lateness          src/shard/
//! timer      handles, repeating timers, Sleep, Timeout, Interval           src/timer/
//! engine     TimerEngine, builders, routing, shutdown, statistics, errors  src/engine/
//! tower      TimeoutLayer (the `tower` feature)                            src/tower/
//! delay      DelayQueue                                                    src/delay/
//! metrics    the stats to the `metrics` facade (the `metrics` feature)     src/metrics.rs
//! ```
//!
//! # The life of a timer
//!
//! 1. **Schedule** (src/engine/api.rs). The deadline is rounded up to a tick. The calling
//!    thread's lane index picks its home shard, or a hash of the key picks the shard
//!    (src/engine/routing.rs); the lane index picks the lane there, made by the thread's first
//!    schedule into the shard (src/shard/lanes.rs; a thread-local keeps the home lane,
//!    src/engine/core.rs). The lane admits the timer
//!    (not shut down, not beyond `max_delay()`, a permit taken) and pushes its
//!    entry onto the owner's ring if the calling thread owns the lane, else (or when the ring
//!    is full) onto the lane's inbound queue. It then wakes the shard if the shard announced a
//!    sleep, and reads the stop flag again: if shutdown began and the producer wins
//!    PENDING→HANDED_BACK, the callback comes back in `ScheduleError::Shutdown` (src/shard/lane.rs).
//! 2. **Into the wheel.** On its next turn the shard takes the entry off the queue. It drops an
//!    entry cancelled while queued (giving back its permit), fires one due already, and links any
//!    other into a wheel slot, setting LINKED in its state word (src/shard/worker.rs,
//!    src/wheel/hierarchy.rs).
//! 3. **Cancel** (src/timer/handle.rs). One CAS, PENDING→CANCELLED. If the word it replaced had
//!    LINKED set, the canceller pushes the entry onto its lane's unlink stack and wakes the
//!    shard, which unlinks it on its next turn. Only then is the callback destroyed, on the
//!    cancelling thread.
//! 4. **Fire.** The shard advances its wheel to the current tick and wins PENDING→FIRED for
//!    each due entry. The turn's callbacks are handed over to the executor as one batch and
//!    each runs under `catch_unwind`; a one-shot timer's permit is released when
//!    its callback begins (src/callbacks/run.rs). After a repeating timer's callback returns,
//!    the thread that ran it re-arms the entry, FIRED→PENDING, and queues it again
//!    (src/timer/repeating.rs).
//! 5. **Memory back.** The one-shot entries a turn fired that no handle holds have their slots
//!    freed together at the end of the advance. Dead entries the shard drops (cancelled while
//!    queued, or unlinked for a request) go back to their lane as spares if no one else holds
//!    them and the lane has an owner; the rest are freed when their last holder drops them, and a
//!    freed slot goes onto its chunk's free stack (src/queue/recycle.rs, src/slab/chunk.rs).
//!    The engine's drop frees a lane's spares and gives up its chunks only if no other thread
//!    owns the lane, closing it to owners; an owned lane keeps both until it is dropped.
//! 6. **Shutdown** (src/engine/shutdown.rs). The engine sets each shard's stop flag, joins the
//!    tick threads, waits for the callbacks in flight and joins the pool, then empties wheels
//!    and queues, winning PENDING→HANDED_BACK for every timer still pending and handing it back as
//!    `Unfired`.
//!
//! # Invariants
//!
//! - **Never early.** A deadline rounds up to a tick and the present rounds down; the shard
//!   re-reads the deadline from the state word each time it handles an entry, and its
//!   PENDING→FIRED CAS compares the whole word, so an entry met before its deadline (reset, or
//!   clamped from beyond the wheel's span) is linked again, not fired. The time-stamp-counter
//!   bound is used only to round new deadlines up.
//! - **At most once.** Leaving `Pending` is one CAS that exactly one party wins (canceller,
//!   shard, or shutdown), and only the winner touches the callback. A repeating timer returns
//!   to `Pending` only through the FIRED→PENDING CAS made after its run.
//! - **Never after a successful cancel.** `cancel()` returning `true` means the callback will
//!   not run (for a repeating timer: no run after the one under way, if any).
//! - **Nothing lost.** Every timer scheduled is fired, cancelled, handed back by `shutdown`,
//!   or refused, its callback returned in the error.
//! - **One thread per wheel.** Only the shard's tick thread touches its wheel and the links of
//!   the entries in it; shutdown empties the wheel only after joining that thread.
//! - **The cap bounds what the engine holds.** A timer holds its permit from admission until
//!   its callback begins, it is handed back, or (cancelled) its shard drops its entry; a
//!   repeating timer holds one place until it stops.
//! - **Cancelled memory comes back within about a tick.** The unlink request of a timer
//!   cancelled while linked wakes its shard, which unlinks the entry on its next turn.
//! - **No lost wake-up.** A push and a shard's sleep announcement form a Dekker pair: either
//!   the shard sees the work or the producer sees the announcement.
//! - **Shutdown waits.** `shutdown`, and the engine's `Drop`, from outside its callbacks return
//!   only once no callback of the engine runs and every thread it started is joined.
//! - **No input panics the engine.** Refusals are errors carrying the callback; a panicking
//!   callback is caught and counted; a panic of the tick thread itself aborts the process.
//!
//! # Hand-built mechanisms
//!
//! - Time-stamp-counter clock, src/time/tsc.rs: a cheap upper bound on the monotonic clock,
//!   used to round a new timer's deadline up; off where the kernel does not keep time with it.
//! - Reciprocal division, src/time/tick.rs: nanoseconds to ticks without a divide instruction.
//! - Relay, src/callbacks/relay.rs, with claims, src/sync/claims.rs: long-lived runners on
//!   the pool take handed-over batches as ranges and steal halves of each other's ranges.
//! - Chunk slab, src/slab/: a lane's owner carves entries from chunks of slots; any thread
//!   frees a slot; a sweep notices chunks left mostly free and frees them (a trim).
//! - Intrusive queues, src/queue/: the inbound MPSC queue through the entries' `next` links,
//!   the owner's SPSC ring, and the unlink stack through the emptied callback cell, on the
//!   take-all stack of src/sync/stack.rs.
//! - Recycler, src/queue/recycle.rs: dead entries go back to their lane's owner for reuse, so a
//!   timer scheduled and cancelled costs no allocation and no free across threads.
//! - One-word callback box, src/entry/callback.rs: a thin pointer to a header naming the
//!   callback's function table; a capture-free callback allocates nothing.
//! - Closing protocol, src/engine/closing.rs: how concurrent callers of `shutdown` meet.
//!
//! Why no epoch-based reclamation: no other thread reads an entry's memory after its last
//! holder drops it. An entry is shared by its handle and its shard for as long as the handle
//! lives and the wheel's lists are single-threaded, so a reference count settles it.
//!
//! # Where each protocol is told
//!
//! - The state word: src/entry/state.rs (its layout), src/entry/node.rs (who writes which
//!   field, and the one CAS loop every transition goes through).
//! - Lanes and owners: src/shard/lane.rs (what a lane carries, the owner's paths, the lane
//!   passing to the next thread when its owner exits, admission and queueing); making lanes
//!   as threads arrive, and the shard finding them: src/shard/lanes.rs; lane indices:
//!   src/sync/ids.rs.
//! - The inbound queue: src/queue/inbound.rs; the owner's ring: src/queue/ring.rs.
//! - Unlink requests: src/queue/unlink.rs, on src/sync/stack.rs.
//! - Reset: src/timer/handle.rs (the doc of `TimerHandle::reset`).
//! - The wheel: src/wheel/mod.rs and src/wheel/level.rs.
//! - Time: src/time/tick.rs, src/time/tsc.rs, src/time/manual.rs (the catch-up a manual clock
//!   asks of an engine, and its look-ahead for the earliest deadline pending:
//!   src/engine/core.rs; the shard's side of the look-ahead: `ShardShared::ask_earliest` in
//!   src/shard/core.rs).
//! - The tick loop: src/shard/worker.rs.
//! - Sleeping and waking: src/shard/signal.rs; the kernel's timer
//!   slack and slice: src/placement/waking.rs.
//! - The relay: src/callbacks/relay.rs, with src/sync/claims.rs and src/callbacks/executor.rs.
//! - Shutdown: src/engine/shutdown.rs, src/engine/closing.rs, and the producer's half in
//!   src/shard/lane.rs.
//! - Repeating timers: src/timer/repeating.rs (fixed rate and fixed delay, `Repeat`); their
//!   options: src/engine/repeat.rs.
//! - Sleep and Timeout: src/timer/sleep.rs; Interval: src/timer/interval.rs.
//! - The delay queue: src/delay/queue.rs (the doc of `DelayQueue`) and src/delay/wheel.rs.
//! - The cap: src/sync/cap.rs.
//! - The slab: src/slab/chunk.rs; recycling: src/queue/recycle.rs.
//! - Pinning and unpinning: src/placement/watch.rs, with src/placement/affinity.rs.
//! - Lateness: src/shard/lateness.rs.
//!
//! # What the loom models cover
//!
//! The models are in loom-tests/ (see loom-tests/mod.rs); the `sync` shim gives loom every
//! atomic, lock and allocation the protocols use. Each model's doc names the bug it catches.
//!
//! - `cancel_vs_fire`: a cancel racing the shard's firing of a linked timer; one side wins.
//! - `two_cancels_one_winner`: two cancels of one timer; exactly one returns `true`.
//! - `schedule_vs_shutdown`: a schedule racing shutdown; fired, handed back or refused, once.
//! - `two_producers_vs_shutdown`: shutdown waits for a producer half-way through its push.
//! - `cancel_vs_transfer`: a cancel racing the shard's move of an entry from queue to wheel.
//! - `sleep_vs_insert`: the shard announcing a sleep while a timer is inserted; no lost wake-up.
//! - `sleep_vs_cancel`: the same while a canceller pushes an unlink request.
//! - `sleep_vs_first_schedule`: the same while a producer makes its lane and pushes onto it.
//! - `reset_vs_fire`: a reset to later racing the firing; never fired at the old deadline.
//! - `cancel_vs_rearm`: a cancel racing a repeating timer's run and re-arm; no run after it.
//! - `poll_vs_fire`: a task polling its `Sleep` with a new waker while the timer fires; woken.
//! - `ring_hands_over_each_timer_once`: the owner's ring; each timer once, in order.
//! - `spares_reach_the_owner_once`: spares given by the shard reach the owner once, unshared.
//! - `the_lane_passes_to_the_next_owner_whole`: an owner leaving as another claims; no count lost.
//! - `the_drop_frees_the_spares_of_a_lane_no_thread_owns`: the engine's drop against an owner
//!   taking a spare; the drop frees spares only of a lane it closed.
//! - `cancel_vs_shutdown`: a cancel of a linked timer racing the drain; its count freed once.
//! - `every_caller_waits_for_the_finish`: two callers of `shutdown`; neither returns early.
//! - `the_next_caller_joins_a_shutdown_begun_inside_a_callback`: the outside caller joins it.
//! - `delay_queue_poll_vs_fire`: a task polling a `DelayQueue` while the queue's timer fires.
//! - `relay_hand_over_vs_runner_parking`: a batch handed over while a runner parks still runs.
//! - `relay_counts_a_batch_in_a_runners_hands_as_waiting`: the shard sees such callbacks wait.
//! - `slab_chunk_is_freed_once_by_its_last_user`: slots freed on other threads; one free each.
//! - `slab_slots_freed_together_free_each_chunk_once`: the same with slots freed together.
//! - `slab_trim_leaves_its_chunks_behind_while_their_slots_are_freed`: a trim racing frees.
//! - `claims_each_item_is_taken_once_by_holder_or_thief`: a range's holder against a thief.
//! - `lookahead_answer_vs_question`: a manual clock's question for the earliest deadline
//!   against the shard's answer; an answer seen is the shard's.
//!
//! # Glossary
//!
//! - **shard**: one wheel, the tick thread that alone touches it, and the lanes into it.
//! - **lane**: one of a shard's inbound sides, used by the producer thread whose lane index
//!   picks it (by several, past 1,024 threads at once): its queues, its spares, its chunks,
//!   its counters.
//! - **lane index**: a small number per live thread, reused after the thread exits; it picks
//!   the thread's lane in each shard and its home shard.
//! - **home shard**: where the calling thread's unkeyed timers go.
//! - **owner** (of a lane): the first thread to schedule through the lane, until it exits; it
//!   alone uses the lane's ring, spares and chunks, and counts without read-modify-writes.
//! - **tick**: the engine's unit of time; deadlines are counted in ticks from its start.
//! - **turn**: one pass of a shard's tick loop (`Shard::turn`).
//! - **wheel**: a shard's hierarchical timing wheel, levels of slots.
//! - **level**: one of the wheel's rows of 64 slots; level n's slots are 64^n ticks wide.
//! - **slot**: one position of a level: the entries due within its span of ticks. (Elsewhere
//!   the word names what it belongs to: a chunk's slot, a thread slot, a runner's claims slot.)
//! - **entry**: one timer's reference-counted memory: state word, links, callback cell.
//! - **chunk**: a block of entry slots that a lane's owner carves new entries from.
//! - **spare**: a dead, unshared entry the shard gives back to its lane for the owner to reuse.
//! - **unlink request**: a cancelled entry still linked in the wheel (LINKED), pushed onto its
//!   lane's unlink stack so that the shard takes it out.
//! - **place** and **release**: a place is one unit of the cap, taken at admission; it is
//!   released when the engine is done with the timer.
//! - **hand over**: the shard passing a turn's fired callbacks to the executor as one batch.
//! - **runner**: a long-lived job on a pool thread that runs handed-over callbacks.
//! - **range**: the part of a batch a runner holds, its two ends packed in one word.
//! - **steal**: a runner with nothing to run taking the back half of another runner's range.
//! - **pin** and **unpin**: with `pin_threads(true)` a tick thread binds itself to one cpu; a
//!   pinned thread whose turns begin late several times in a row unpins itself for good.
//! - **cpu**: a processor the system schedules threads on (never called a core here).
//! - **Dekker pair**: a producer's push then its read of the sleep word (or the stop flag),
//!   against the shard's announcement (or shutdown's flag) then its look at the queues; each
//!   side passes a SeqCst fence between its write and its read (src/shard/signal.rs).
//! - **stand-in timer**: the timer a `Sleep` or `Interval` (so also a `DelayQueue` holding only
//!   values beyond range) holds at the farthest deadline the engine takes when its own
//!   deadline is beyond `max_delay()`, renewed as it comes due, so that shutdown hands it back.
//! - **look-ahead**: a manual clock asking each shard thread, by ticket, for the earliest
//!   deadline pending in its wheel, answered after a complete turn.
//! - **handed back**: a pending timer whose entry shutdown took (PENDING→HANDED_BACK), returned to
//!   the caller as `Unfired`.
//! - **drop**: the engine is done with an entry (`Settled::Dropped`): the shard gives up its
//!   reference, keeping the entry as a spare or leaving it to be freed by its last holder; a
//!   cancelled timer's permit is given back then.
