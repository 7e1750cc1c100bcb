//! Design notes: how shardwheel holds millions of cancellable timers, and why each protocol
//! between its threads is correct.
//!
//! This module holds no code. It describes the engine as it is built now, layer by layer, with
//! the published algorithms each part follows. Each source file's own documentation gives the
//! details and the memory orderings; this is the map.
//!
//! # The problem
//!
//! A server holds a timer for every request in flight and every open connection: RPC
//! deadlines, idle timeouts, heartbeats, lease renewals. Nearly all of them are cancelled
//! before they run out, so scheduling and cancelling must be cheap and must not contend across
//! cores; the few that run out must fire on time and never early; a cancelled timer must stop
//! costing memory soon; and an engine holding millions of far-off timers must cost nothing
//! while it waits.
//!
//! # Shape
//!
//! An engine has N shards (default: one per core). Each shard owns a hierarchical timing wheel
//! that only its own tick thread touches, as plain single-threaded code. Producers never touch
//! a wheel: a timer is one reference-counted entry, pushed onto a lock-free queue into the
//! shard that a hash picks (src/engine/routing.rs: of the calling thread and its count of
//! timers so far, or of the caller's key for the keyed forms, so a connection's timers can
//! share a shard). The shard moves queued entries into its wheel on its next turn. All
//! concurrency lives at the edges: the queues into a shard, and one atomic state word per
//! entry.
//!
//! The source is layered. Each layer imports only from itself and the layers below it:
//!
//! ```text
//! delay    DelayQueue: values held until their deadlines, on engine timers   src/delay/
//! tower    TimeoutLayer and Timeout, tower middleware (the `tower` feature)  src/tower/
//! engine   TimerEngine, its builder, routing, shutdown, statistics, errors   src/engine/
//! timer    TimerHandle, repeating timers, Sleep, Timeout and Interval        src/timer/
//! shard    the tick loop, lanes, the sleep signal, the executor, the cap     src/shard/
//! wheel    the hierarchical timing wheel, single-threaded                    src/wheel/
//! queue    inbound MPSC queue, owner's SPSC ring, unlink stack, recycler     src/queue/
//! entry    the timer entry, its state word, the type-erased callback         src/entry/
//! time     the tick clock and ManualClock                                    src/time/
//! slab     where entries live: counted pointers into slots of chunks         src/slab/
//! sync     the loom shim, the asymmetric barrier, the queue stand-in         src/sync/
//! trace    events for the rare things (the `tracing` feature)                src/trace.rs
//! ```
//!
//! # The entry and its state word
//!
//! A timer is one slot of 40 bytes (src/entry/, src/slab/): a reference count (std's `Arc`
//! without the weak count, 32 bits wide beside the slot's index in its chunk), a packed
//! `AtomicU64` state word, the `next` and `prev` links of the lists it travels through, and the
//! callback in a box one pointer wide
//! (src/entry/callback.rs): the pointer leads to a header naming the callback type's table of
//! functions, followed by the captures. A callback that captures nothing is zero-sized and
//! costs no allocation of its own; its box points at a header in static memory. A
//! `Box<dyn FnOnce()>` would take two words, and the entry 48 bytes.
//!
//! The state word (src/entry/state.rs) holds everything more than one thread may read or
//! change, so that every transition is a single compare-and-swap:
//!
//! ```text
//!  63                                 13 12      7 6   4  3   2   1 0
//! +-------------------------------------+--------+-----+---+---+-----+
//! |           deadline (ticks)          |  slot  |level|REP|PLC| life|
//! +-------------------------------------+--------+-----+---+---+-----+
//! ```
//!
//! - `life`: the lifecycle, `Pending`, `Cancelled`, `Expired` or `Returned`.
//! - `PLC` (PLACED): the entry is linked into its shard's wheel. Only the shard sets it.
//! - `REP`: the timer repeats. Set at creation.
//! - `level`, `slot`: where in the wheel the entry is linked, meaningful while PLACED is set.
//! - `deadline`: the tick at or after which the timer fires, 51 bits.
//!
//! Leaving `Pending` is one compare-and-swap, and exactly one party wins it: INIT→CANCELLED by
//! `cancel`, INIT→EXPIRED by the shard, INIT→RETURNED at shutdown (or by a `schedule` that
//! raced shutdown). The winner alone owns the callback from then on: the canceller drops it,
//! the shard runs it, shutdown hands it back. The winner also owns the emptied callback cell,
//! which a cancel uses as a stack link (below). Every atomic operation on an entry lives in
//! src/entry/node.rs, and every transition of the state word goes through a single
//! compare-and-swap helper there, with AcqRel on success, so whoever reads a resolved word
//! also sees what its winner did before resolving it; the exception is the shard clearing
//! PLACED, one `fetch_and` (below), or a plain store once the lifecycle is final. This is the
//! single-word state machine of Netty's `HashedWheelTimeout` and of tokio's `TimerShared`, with
//! the deadline and the wheel position packed into the same word.
//!
//! Everything else in the engine is arranged so that the entry needs nothing more:
//!
//! - The `next` link carries the entry first through its shard's inbound queue, then through
//!   the wheel slot it is linked into. An entry leaves the queue before the shard links it,
//!   so the link never serves both at once. `prev` is the wheel's alone.
//! - An unlink request is the entry itself, linked through its emptied callback cell.
//! - The handle is the entry's reference count plus its lane's `Arc`.
//!
//! So a pending timer costs its 40-byte slot and nothing per timer elsewhere
//! (tests/footprint.rs counts it at the allocator). A block of its own per timer would cost
//! more than 40 bytes: glibc's malloc keeps a 40-byte request in a 48-byte chunk, and mimalloc,
//! on x86-64, steps its small size classes by two words, so the block takes 48 bytes there
//! too. So a lane's owner carves its timers' entries out of 16 KiB chunks (src/slab/): 408
//! slots behind a 32-byte header, handed out with no atomic operation; a slot freed on any
//! thread goes onto the lane's free stack and is handed out again; a chunk is freed once its
//! lane has let it go (its engine gone, or a trim after a spike) and its last timer with it.
//! Other threads' entries (the lane has one owner) are blocks of their own. idle-hold measures
//! 40.7 resident bytes per timer this way, against 48.3 with a block per timer. The cost: a
//! lane keeps the most chunks it needed until a sweep, one chunk per 64 allocations, has found
//! fewer than a quarter of their slots live twice in a row; then it starts afresh and lets the
//! old chunks go a few at a time. Queueing new timers through
//! crossbeam's `SegQueue` instead adds its blocks (504 bytes per 31 pushes), 16 bytes to every
//! timer, which stay resident: conn-idle measured 65 bytes per timer that way, against 48–50
//! with the intrusive queue.
//!
//! # Lanes and their owners
//!
//! Each shard's inbound side is split into a few lanes (src/shard/lane.rs), and each producer
//! thread uses the lane its thread slot picks, so queue tails and counters are written mostly
//! by one thread each instead of by every producer of the shard. A lane carries:
//!
//! - `inserts`: new timers, the intrusive MPSC queue below;
//! - the owner's ring: new timers from the lane's owner, an SPSC ring;
//! - `unlinks`: timers cancelled after the shard placed them, the unlink stack;
//! - `changes`: timers reset to an earlier deadline, crossbeam's `SegQueue` (a placed entry's
//!   links belong to the wheel and its callback cell is still full, so it has no free link);
//! - the spare entries the shard hands back for reuse, the chunk new entries are carved from,
//!   and the lane's counters.
//!
//! The first thread to schedule through a lane becomes its owner, until it exits, and three
//! fast paths are its alone:
//!
//! - **Counters.** It counts with a plain load and store into cells no other thread writes.
//!   Other threads use `fetch_add` on a second set, and a reader adds the two.
//! - **The ring** (src/queue/ring.rs). It queues new timers through a single-producer ring of
//!   4096 slots, a tick's worth at 4 M schedules a second: a pointer store and a Release store
//!   of the tail, with no read-modify-write. This is Lamport's ring buffer, with the producer
//!   keeping a cached copy of the consumer's index and reading the real one only when the ring
//!   looks full (as in Rigtorp's `SPSCQueue`). The shard reads every queued address at once
//!   and prefetches each entry, so the cache misses on entries just written by another core
//!   overlap; walking a linked queue means one dependent miss after another. When the ring is
//!   full, the owner falls back to `inserts`; the order between the two does not matter.
//! - **Spare entries** (src/queue/recycle.rs). In the RPC pattern most timers are cancelled
//!   while still queued, and the shard is then the last holder of the entry; freeing it there
//!   would be a free across threads. Instead the shard collects a turn's dead, unshared entries
//!   per lane and pushes them onto the lane's stack as one chain, with one compare-and-swap; at
//!   most 4096 sit there at a time, and past that the shard frees them. The owner takes the
//!   whole stack with one swap into a private stash and reuses the entries one by one,
//!   prefetching the next while it uses this one. A scheduled-and-cancelled timer then costs
//!   neither a malloc nor a free across threads.
//! - **The lane's chunk** (src/slab/). When there is no spare, the owner carves the entry out
//!   of the lane's chunk: a slot freed since, taken off the lane's free stack, or one never
//!   used. Only when every slot is live does it allocate a new chunk.
//!
//! When the owner thread exits, a thread-local record releases its lanes (a Release store), and the
//! next thread to schedule through one claims it (an Acquire compare-and-swap) and takes over the
//! owner's private state as it was left: the counter cells, the ring's producer side, the stash,
//! the chunks. Without the hand-over, a short-lived first thread (a set-up thread, or one benchmark
//! sample's worker) would keep a lane for good, and the threads doing the work would all take the
//! shared paths. A handle keeps its lane alive, so a cancel reaches the shard even after the engine
//! is gone.
//!
//! # The inbound queue
//!
//! `inserts` (src/queue/inbound.rs) is Dmitry Vyukov's intrusive MPSC node-based queue,
//! threaded through the entries' own `next` links, so queueing a timer allocates nothing. A
//! producer appends with one atomic swap of the back pointer and a store to the old back
//! entry's `next`; the single consumer (the shard thread, or shutdown once that thread is
//! joined) walks from the front. A stub node owned by the queue keeps it from ever being empty
//! of nodes. Between a producer's swap and its store the chain is briefly broken; the consumer
//! then sees `Busy` and tries again on a later turn, which is why the shard keeps polling while
//! any lane has work. Each queued entry carries one strong count, handed to whoever pops it.
//!
//! # Cancellation and unlink requests
//!
//! A cancel is one compare-and-swap, INIT→CANCELLED. If it lands while the entry is still
//! queued, that is all it costs: the shard drops (or recycles) the entry when it pops it. If
//! the word the swap replaced has PLACED set, the entry sits in a wheel slot, and holds its
//! memory there, until the shard unlinks it; waiting for the slot to come round would keep
//! cancelled timers alive for their whole delay, a leak Netty's wheel timer once had. So the
//! canceller also pushes an unlink request, and the shard unlinks and frees the entry on its
//! next turn, within about a tick.
//!
//! The request is the entry itself, on a per-lane stack (src/queue/unlink.rs) linked through
//! the emptied callback cell, which the cancel's winner owns: one compare-and-swap to push
//! (Release), no allocation, and the shard takes the whole stack with one swap (Acquire) per
//! turn, after which it owns every cell on the chain. The order of the chain does not matter:
//! the shard re-reads each entry's state word when it handles it.
//!
//! The unlink stack and the spare-entry stack are both a take-all Treiber stack
//! (src/queue/stack.rs): pushes swing the top with a compare-and-swap, and a consumer takes
//! everything with one swap. Nothing is ever popped alone, so the ABA problem of a Treiber
//! stack cannot arise. Each user picks the link: the unlink stack the callback cell, the spare
//! stack the `next` link.
//!
//! The push takes no reference count. The wheel holds a count for every entry linked in it,
//! and from the cancel on that count belongs to the request. The wheel therefore never lets go
//! of a cancelled entry still marked PLACED on its own: if it meets one first (its slot came
//! due, or shutdown is draining the wheel), it unlinks it, clears PLACED with one atomic
//! `fetch_and`, and leaves the count to the request. Whether a request is coming is read from
//! the word that `fetch_and` replaced: a cancel before it saw PLACED and pushes a request, a
//! cancel after it sees the entry unplaced and pushes none. So a cancel racing the drain is
//! decided by one atomic operation. An entry that is cancelled or handed back has no other
//! writer, so when the shard unlinks it for its request, a plain Release store clears PLACED.
//!
//! Because the request owns a count, nothing may skip it. `cancel` drops the callback (the
//! caller's code, whose `Drop` may panic) only after the request is pushed. A shard thread
//! that panics, which only a bug in the engine can make it do, aborts the process instead of
//! unwinding past a half-done turn, where a count could be released twice.
//!
//! Before unlinking a batch, the shard prefetches the slot-list neighbours of every entry
//! still linked: unlinking writes both neighbours, which lie anywhere in memory, and loading
//! them all first lets the misses overlap.
//!
//! # Reset
//!
//! `TimerHandle::reset` moves a pending timer by one compare-and-swap on its deadline field.
//! Pushing it later, as a connection does on every read, needs nothing else: when the old
//! slot comes due, the shard's INIT→EXPIRED swap fails on the new deadline, and the shard
//! places the entry again. Pulling it earlier also sends the entry down the lane's `changes`
//! queue, so the shard unlinks it and places it by its new deadline (or fires it). After a
//! reset that returned `true`, the timer never fires at its old deadline.
//!
//! # The wheel
//!
//! The wheel (src/wheel/) is Varghese and Lauck's scheme 7, hierarchical timing wheels, laid
//! out as in tokio's `runtime/time/wheel`: six levels of 64 slots, each slot an intrusive
//! doubly-linked list, each level with a `u64` bitmap of its occupied slots. Level `n` has
//! slots `64^n` ticks wide, so the wheel spans `2^36` ticks, 2.2 years at a 1 ms tick. An
//! entry due at `when` goes to the level of the highest bit in which `when` differs from the
//! wheel's current tick, into the slot given by that level's six bits of `when`. Insert and
//! unlink are O(1); the next deadline is a rotate and a `trailing_zeros` per level, so no empty
//! slot is ever visited; when a slot of a coarser level comes due, its entries move down to
//! finer levels. Deadlines beyond the span are clamped into the top level, which then acts as
//! a ring: an entry found there early is simply placed again.
//!
//! A slot holds four lists, its entries dealt round-robin onto them. Walking a list is a chain
//! of dependent cache misses; walking four in step keeps four in flight, and the entries taken
//! off are settled 64 at a time, while they are still in cache. A 200,000-timer burst fired
//! about twice as fast (7–9 to 12–13 M/s through the pool, 8–9 to 19–21 M/s inline), and at a
//! 100 µs tick the cascade of a 20,000-entry slot stopped being a 3 to 13 ms stall.
//!
//! The wheel is plain `&mut self` code with no atomics of its own. It re-reads an entry's
//! deadline from the state word whenever it handles the entry, so an entry found in a slot
//! before its deadline (after a reset, or clamped from beyond the span) is placed again, never
//! fired early.
//!
//! # Time
//!
//! The tick clock (src/time/tick.rs) counts ticks from the engine's start, in nanoseconds. A
//! deadline becomes a tick by rounding up and the present by rounding down, so a timer whose
//! tick has been reached is never early. Dividing by the tick length is a multiply by a
//! precomputed reciprocal, `floor((2^64 - 1) / d)`, whose 128-bit product's high half is the
//! quotient or one less, corrected by one comparison of the remainder: the method of Granlund
//! and Montgomery ("Division by invariant integers using multiplication", 1994), without
//! their extra bit of precision. It keeps a divide instruction off the scheduling path.
//!
//! Scheduling needs the present only to round `now + delay` up, so any reading at or after
//! the present will do. Where the kernel keeps its monotonic clock with the processor's
//! time-stamp counter (x86-64 Linux with the `tsc` clocksource, which the kernel picks only
//! when the counter is invariant and in step across cores), a new timer's deadline is taken
//! from a cheaper upper bound (src/time/tsc.rs): each thread keeps an anchor, a counter
//! reading with the clock reading taken just after it (bracketed by a second counter reading,
//! retried if the thread was preempted), and extrapolates from it at the counter's rate
//! raised by 0.2 %, more than NTP can slew the clock. It takes a new anchor every 250 µs of
//! extrapolation, so the bound runs at most 2 µs ahead of the present. The rate is measured
//! over windows of 10–40 ms and taken once two windows in a row agree within 1/4096 (a window
//! with a suspend in it does not); until then, and for good once a new anchor finds that the
//! old one would have read below the clock (the counter stopped keeping time with it), the
//! clock is read. Reading the counter costs about 9 ns against 23 for the clock; the schedule
//! path, which read the clock once per timer, went from 85 to 57 ns per schedule + cancel.
//! The shard still reads the clock itself, rounding down, to decide what is due: the bound is
//! never used to fire. Elsewhere (other systems, Miri, loom, a manual clock) the clock is
//! read.
//!
//! `ManualClock` (src/time/manual.rs) replaces the monotonic clock for tests. An engine built
//! on one registers with it, weakly, and `advance` moves the time (a Release store the shards
//! read with Acquire, so they see every timer scheduled before the move), then waits until
//! each engine's shards have completed a turn that read the new time and the callbacks they
//! fired have returned, repeating while callbacks schedule timers that are already due (at
//! most 1,024 rounds, so that a timer scheduling itself again with a zero delay cannot keep it
//! from returning).
//!
//! # The tick loop
//!
//! A shard's turn (src/shard/worker.rs):
//!
//! 1. take every lane's unlink stack and unlink those entries, and move the entries on the
//!    `changes` queues;
//! 2. take new timers from every lane's ring (whole) and `inserts` queue (a bounded number per
//!    lane per turn, so a flood of inserts cannot hold back firing), and place them (an entry
//!    cancelled while queued is dropped or recycled here);
//! 3. advance the wheel to the current tick, winning INIT→EXPIRED for each due timer, and free
//!    together the slots of the fired one-shot entries no one else holds (src/slab/chunk.rs
//!    `Frees`: no read-modify-write per entry);
//! 4. hand the turn's callbacks to the executor as one batch, and the dead, unshared entries
//!    back to their lanes.
//!
//! # A pinned thread on a busy core
//!
//! Each tick thread is pinned to a core (src/shard/pinning.rs). A pinned thread cannot move
//! away from a core it shares with a busy process: the scheduler gives it its share of that
//! core and no more, its turns begin late, and its queues grow, while other cores may be idle.
//! So every turn compares the tick it begins at with the tick it meant to begin at (the next
//! tick when polling, the wheel's next deadline when sleeping; nothing when it slept until
//! woken); a turn woken early by new work counts neither way, and a manual clock's jumps are
//! not watched at all. The time a turn itself takes counts: a thread preempted in the middle of
//! its turns is as starved as one that wakes late (excusing it let lateness under a hog grow
//! back to 30–120 ms). So a turn that runs long on its own (inline callbacks of 10 ms or more,
//! a flood of inserts) counts as late too. A turn more than 10 ms, and two ticks, late counts as
//! late (`late_turns` in the stats); after three in a row the thread widens its affinity to
//! every core the engine was built with and stays unpinned, even if no other process was on
//! its core: harmless beyond the pinning lost, and the stats show it. With eight busy loops
//! pinned to core 0 of the 2-core machine, this took the accuracy workload's worst lateness
//! from 26–53 ms to 18–23 ms and rpc-churn's peak resident set from 95–111 MB to 39–79 MB (see
//! BENCHMARKS.md).
//!
//! Shorter holds are caught by a neighbour (src/shard/moving.rs). A thread that has been woken
//! but waits, runnable, behind another thread on its own core cannot look at itself; and on a
//! small machine such waits of 3–8 ms are common: the kernel does not always preempt a busy
//! thread for a waking one, and a kernel thread that does not yield (the `kdamond` of a
//! memory-reclaiming host, under `PREEMPT_NONE`) holds its core for up to 8 ms, while the
//! other core sits idle. So each shard, at every turn, reads where the next shard (in a ring)
//! is in its loop: the tick its last turn began at and its sleep word. If that shard should
//! have begun a turn a millisecond (or a tick, if longer) ago and has not, and was seen so
//! that long ago already (a thread a producer has just woken is not behind), it moves its
//! thread to the engine's other cores (`sched_setaffinity` on its thread id); the kernel
//! moves a thread that waits to run at once, to where there is room. 50 ms later the same
//! shard sends it home, and the third time in a row it finds it behind soon after, it lets it
//! go of its core for good (the thread takes no part: one that went home by itself would wait
//! for its busy core inside that system call, out of the neighbour's reach). The neighbour
//! holds one word through each system call, and the thread, before it lets go of its core
//! itself or leaves its loop, waits that out and marks the word for good, so that no move
//! lands after (loom model 16). On the 2-core machine, in a noisy hour, this took the
//! accuracy workload's p99.9 from a median of 2.1 to 1.6 ms and slow-callback's from 2.3 to
//! 1.4 ms, with idle-hold unchanged and rpc-churn's throughput within the noise; with eight
//! busy loops on one core, accuracy's p99 went from 12.8 to 2.5 ms (see BENCHMARKS.md).
//!
//! # Sleeping and waking
//!
//! A tick thread asks the kernel for a timer slack of a hundredth of its tick (default 50 µs,
//! half of a 100 µs tick) and, under EEVDF (Linux 6.12 and later), for a scheduling slice of one
//! tick, so that on a core busy with another thread it is picked within about that instead of
//! after the other thread's 3 ms slice (src/shard/waking.rs). Its share of the core does not
//! change.
//!
//! A shard whose queues had work polls again after a tick; one that still has a backlog
//! yields and goes round at once. A shard with empty queues whose wheel has a slot due by the
//! next tick also just polls: nothing queued meanwhile can come due sooner. Otherwise it
//! announces, in its sleep word, a sleep until its wheel's next deadline (or indefinitely),
//! looks at its queues once more, and parks (src/shard/signal.rs). A producer, after its push,
//! reads the sleep word and wakes the shard only if it announced a sleep: the hot path pays
//! no system call, and an idle engine costs no CPU however many timers it holds.
//!
//! The announcement and the producers' push form a Dekker pair: each side writes, then reads
//! what the other wrote, and needs a store-to-load barrier in between, or both may read the old
//! values and a timer waits for a shard that went to sleep past it. The sides are unequal:
//! every schedule and cancel pushes, while a shard announces a sleep at most once a tick. So
//! on Linux the barrier is asymmetric (src/sync/barrier.rs). The shard, after its SeqCst store
//! of the sleep word and a SeqCst fence, calls `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`,
//! which makes every running thread of the process execute a full memory barrier before the
//! call returns (threads not running passed one when they were switched out). Producers then
//! need only a compiler fence. The argument: the barrier forced on a producer lands at an
//! instruction boundary; if its push came before that boundary, the push is visible before the
//! shard's call returns and the shard finds it; if after, the producer's read of the sleep word
//! comes later still and sees the announcement. Either way the work is found. This is the
//! scheme of folly's `asymmetricLightBarrier` and `asymmetricHeavyBarrier` and of liburcu's
//! membarrier flavour. Of the producers that see an announcement, the one whose swap of the
//! word back to awake wins unparks the shard; an unpark that lands before the park leaves a
//! token, so the park returns at once.
//!
//! The kind of barrier is chosen once per process, by the first engine built. Where
//! `membarrier` is missing (other systems, old kernels, sandboxes that forbid it, Miri) both
//! sides use a SeqCst fence; `Stats::asymmetric_barrier` says which. If the kernel refuses the
//! call later (a seccomp filter installed after the choice), the process falls back for good:
//! producers fence again, and the heavy side waits a millisecond after its fence before it
//! reads, long enough for a push already executed to leave its store buffer. That last resort
//! rests on timing rather than on the memory model, and costs only once the kernel has refused.
//!
//! Each `membarrier` call interrupts every core running a thread of the process, so on a
//! machine with many shards, a shard that is put to sleep and woken again and again costs every
//! core a little. The rule that a shard with a slot due by the next tick polls instead of
//! announcing a sleep keeps the call off the steady firing path (over the accuracy workload,
//! 2000 calls before the rule, 5 after). A longer poll before sleeping would bound the rest; it
//! is not built.
//!
//! # Callbacks
//!
//! The callbacks fired in one turn go to the executor (src/shard/executor.rs) as one batch. To
//! the rayon pool they go through a relay (src/shard/relay.rs, whose module documentation is
//! the protocol): onto the shard's queue, from which runners, long-lived jobs on pool threads,
//! take whole batches, and park on a condition variable when there is nothing left to take (an
//! idle runner ends after 50 ms, giving its thread back). A runner holds the batch it took as a
//! range and runs its callbacks one at a time from the front; a runner with nothing else to do
//! steals the back half of the fullest range (src/sync/claims.rs: the range's two ends share
//! one word, which the holder and the thieves change only by `compare_exchange`, so each
//! callback is handed out once, and a holder alone in its range pays one uncontended exchange
//! per callback). A batch of several callbacks wakes two runners; a shard some of whose
//! callbacks from an earlier turn have not begun (it counts what it fired against what the
//! runners began, so a callback counts wherever it waits) starts another runner, up to the
//! pool's size, and polls once a tick (once a millisecond, if the tick is longer) until all
//! have begun. So a slow callback holds up only itself, never a tick thread: while the pool
//! has a thread free, a callback behind it waits about a tick (at most about a millisecond)
//! for another runner, and then for that runner to reach its range (thieves
//! take from the fullest range first).
//! A queue entry per callback held a burst on the pool to about three quarters of its rate
//! now (see BENCHMARKS.md). A job per batch made rayon wake a sleeping thread for every batch,
//! which then spun through rounds of `yield_now` before it slept: at a 100 µs tick that kept
//! both cores of a two-core machine busy. The default pool
//! has four threads per core (at least 8): callbacks that block must not starve the rest. Each
//! callback runs under `catch_unwind`; a panic is counted and the others run on.
//! `inline_callbacks()` runs them on the tick thread instead, for callbacks known to be cheap;
//! `spawn_callbacks` hands each one, as a `Task`, to a spawner of the user's (and
//! `tokio_callbacks` is that spawner for a tokio runtime). A task dropped unrun runs its
//! callback in its drop, so an executor that throws work away loses no timer. The executor
//! counts the pool's batches in flight, so shutdown and `ManualClock::advance` can wait for
//! them; a spawner's tasks are not waited for, since they may need the very thread that waits.
//!
//! What operators read: each callback's start and end are counted in stripes (the tick thread
//! and each of the first 64 of the pool's runner slots in a stripe of its own, without
//! read-modify-writes,
//! which took a burst on the pool from 21 to 28 M/s; any other thread by its thread slot),
//! giving the callbacks queued and running, which also tell a shard whether its callbacks
//! have all begun; and the tick thread keeps a histogram of how late it fired
//! (src/shard/lateness.rs), one bucket per power of two of nanoseconds, counted from the start
//! of the tick before each timer's deadline tick to the hand-over of the turn's batch, so it
//! bounds the lateness against a requested deadline still ahead from above, by at most a tick
//! (a deadline already past counts from the tick it was scheduled in).
//!
//! # Shutdown
//!
//! `shutdown` (src/engine/shutdown.rs) sets each shard's stop flag, wakes the shard, and
//! passes the heavy barrier; then it joins the tick threads, waits for the callbacks in
//! flight, joins the pool's threads, and empties the wheels and the queues, winning
//! INIT→RETURNED for each timer still pending and handing it back as `Unfired`. A producer
//! half-way through its push onto `inserts` (between its swap and its link) is waited for: the
//! entries pushed after it are reachable only through it. The spare entries on the lanes'
//! stacks are freed then, and the owners' stashes when the engine is dropped.
//!
//! A `schedule` racing shutdown is the second Dekker pair: the producer pushes its entry, passes
//! the light barrier, and reads the stop flag again. If it now sees the flag, it tries
//! INIT→RETURNED itself and, if it wins, hands the callback back as `ScheduleError::Shutdown`.
//! Shutdown passes the heavy barrier after setting the flag, so a producer that did not see the
//! flag had pushed before shutdown emptied the queues, and every timer lands in exactly one
//! place: fired, cancelled, handed back by `shutdown`, or refused with its callback.
//!
//! Callers of `shutdown` (and `drop`) meet in one phase (src/engine/shutdown.rs): running,
//! stopping, finishing on a thread of its own, stopped. The first caller does the work; every
//! other caller from outside the engine's callbacks waits on a condition variable until it is
//! done, so none returns while a callback runs. A shutdown started from inside one of the
//! engine's own callbacks cannot wait for itself: waiting for the callbacks in flight would
//! wait for this very call. It stops the shards at once, returns an empty list, and finishes on
//! a thread of its own; the next caller from outside joins that thread and receives the timers
//! it handed back. If no thread can be had, those timers stay pending, and their memory is
//! freed as their handles go.
//!
//! # Repeating timers
//!
//! A repeating timer (src/timer/repeating.rs) is an entry with the REPEATING bit. When the
//! shard fires it, the runner gets the entry with the callback. After the user's `FnMut`
//! returns, the runner works out the next run, re-arms the entry, EXPIRED→INIT with the new
//! deadline (the one transition back to `Pending`, putting the callback back before the swap
//! that publishes it), and queues it to its shard again, like a new timer. Run `n` is due at
//! `start + n * period`; runs whose time has already come when the previous one finishes are
//! skipped, so a slow callback or a busy engine never causes a burst of catch-up runs. A cancel
//! while the callback runs is EXPIRED→CANCELLED (also from inside the callback) and makes the
//! re-arm fail, so the timer stops. A repeating timer holds one place under the engine's cap
//! for its whole life, so a full engine cannot stop it between two runs.
//!
//! # Sleep and Timeout
//!
//! `sleep` and `timeout` (src/timer/sleep.rs) are ordinary timers whose callback wakes the task
//! that polled last, under any executor. The callback owns a guard that wakes on drop, so a
//! sleep completes whether its timer runs, is handed back at shutdown, or could not be
//! scheduled at all: a task awaiting a timeout never hangs because its engine went away.
//! Dropping a `Sleep` cancels its timer and never wakes its task: the drop takes the registered
//! waker out before it cancels, so the guard the cancel drops finds none (a waker may itself
//! drop sleeps, and must not be re-entered).
//!
//! A sleep the engine refuses (shut down, or at its cap) completes at once under `sleep` and
//! `timeout`, which cannot fail; `try_sleep` and `try_timeout` (and their `_until`/`_at`
//! forms) return the refusal instead. Both go through one scheduling path that reports the
//! refusal; the infallible forms end the sleep on top of it.
//!
//! An `Interval` (src/timer/interval.rs) is one `Sleep` and the instant its next tick is due;
//! after each tick, the next due instant follows from its `MissedTickBehavior` and the sleep is
//! moved there (one CAS while its timer is pending). A tick is yielded once the engine's clock
//! has reached it, without waiting for the shard's turn, and yields the instant it was due.
//!
//! # The delay queue
//!
//! `DelayQueue<T>` (src/delay/) holds values until their deadlines and yields them as a
//! stream, in the shape of tokio-util's, without tokio-util's known failures: a stale key
//! that panics or reaches another value, an empty queue that never yields `None`, a waiting
//! task that the removal of the last value does not wake, storage that never shrinks. It keeps an
//! `EngineLink` (src/engine/link.rs), the engine's shared core, so it outlives the borrow it
//! was made from and the engine itself; a link schedules into new entries only, since the
//! lanes' spare entries may be taken only inside a call on the engine.
//!
//! Values live once, in a slab of slots with a free list; the slab gives storage back as the
//! queue empties (all of it, down to what `with_capacity` asked, when empty; the free end when
//! the length falls to a quarter of the capacity). A key is the slot and a generation drawn
//! from a process-wide increasing counter, so a key never names a value again after its own
//! is gone, nor a value of another queue; every call with such a key returns an error.
//!
//! Each value has one engine timer. Its callback carries a notice naming the slot and the
//! value's *arm* (a fresh id per timer the value is given); dropping the notice, which running
//! the callback does, pushes the record into an inbox (a mutex around a vector and the waker
//! of the task that polled last) and wakes that task. The callback touches nothing else. A poll
//! takes the whole inbox in, drops records whose arm is no longer the slot's (removed, or reset
//! onto a new timer), and yields from a min-heap by deadline and then generation, so a batch
//! comes out in deadline order and equal deadlines in insertion order. A reset first tries the
//! engine's in-place reset; once the timer has fired that fails, and the value gets a new arm.
//! The queue's own cancels drop notices inside a thread-local quiet mark, so they record
//! nothing; a notice dropped anywhere else (the timers handed back at shutdown, when dropped)
//! records, so the values of an engine that went away come out instead of hanging their task.
//! A refusal by the engine (shut down, full) makes an inserted value due at once; a deadline
//! out of the engine's range leaves it with no timer; `try_insert` hands the value back
//! instead. Removing the last value, or `clear`, wakes a waiting task, which then sees
//! `Ready(None)`.
//!
//! # The cap and bad input
//!
//! `max_pending` sets a cap on the timers the engine holds (src/shard/cap.rs): one shared
//! counter, taken by `fetch_add` on each schedule and released when the engine is done with a
//! timer: when its callback has returned, when it is handed back, or, once cancelled, when its
//! shard lets go of its entry (a timer cancelled while queued, when the shard takes it off the
//! queue; one cancelled while placed, when the shard takes its unlink request). So the cap
//! bounds the engine's timer memory even while a shard or the callback pool is stalled: a
//! producer that outruns it gets `Full`. Engines without a cap have no counter and pay nothing
//! for it.
//!
//! A zero or past delay is due at the current tick and fires on the shard's next turn.
//! `max_delay()` is always accepted: the wheel's span less two ticks, and never more than
//! about 292 years, so that a deadline in nanoseconds since the engine's start cannot overflow.
//! A delay beyond it or past what `Instant` can hold is refused with `DelayTooLong`; over the
//! cap, `Full`; after shutdown, `Shutdown`. Every refusal hands the callback back. A panicking
//! callback is caught and counted. No input panics the engine.
//!
//! # Why no epoch-based reclamation
//!
//! crossbeam-epoch solves a problem the engine does not have: a shared lock-free structure
//! whose nodes other threads may still be reading when one thread frees them. An entry is
//! shared by its handle and its shard for as long as the handle lives, far longer than any
//! epoch guard, and a reference count settles that; the wheel's lists are single-threaded. On
//! one thread, an entry's life through epoch reclamation (allocate, pin, `defer_destroy`)
//! costs 46.2 ns, through a reference count (allocate, clone, two drops) 24.6 ns.
//!
//! # What loom sees
//!
//! Every atomic, `Arc`, `Mutex`, `Condvar`, `UnsafeCell`, raw allocation and thread function the
//! protocols use comes from the `sync` shim (src/sync/), under std's paths. Under `cfg(loom)` they
//! are loom's, so the model checker sees every interleaving; otherwise std's. The shim's `Mutex`
//! never reports poisoning: the engine's critical sections only move a value in or out and never
//! leave it half-written, so a panic elsewhere leaves nothing to repair. The inbound queue, the
//! unlink stack, the ring, the spare stack and the slab are built on the shim's atomics, so loom
//! sees inside them. The `changes` queue is crossbeam's, which loom cannot see; under loom a
//! stand-in (src/sync/queue.rs) answers `is_empty` from a Release/Acquire counter, like a lock-free
//! queue, so a missing fence in the sleep protocol fails its model rather than passing on a mutex's
//! stronger ordering. Under loom both sides of the asymmetric barrier are SeqCst fences: the models
//! check the protocols, and a store-buffering litmus test in src/sync/barrier.rs checks the
//! `membarrier` pair on the machine, failing if the heavy side skips the system call.
//!
//! The models (loom-tests/, pulled into the crate because they step a shard's tick loop by
//! hand) each name the bug they catch, and each was checked by putting that bug in:
//!
//! - `cancel_vs_fire`: exactly one of INIT→CANCELLED and INIT→EXPIRED wins; the callback runs
//!   once if and only if `cancel()` returned false; the wheel ends empty and the callback
//!   freed either way. `two_cancels_one_winner`: two threads cancel one timer, exactly one gets
//!   `true`.
//! - `schedule_vs_shutdown`: each timer is fired, handed back, or refused with its callback,
//!   exactly once. `two_producers_vs_shutdown`: the same with two producers appending to the
//!   inbound queue while shutdown empties it (a producer half-way through its push must be
//!   waited for, or the one behind it is lost).
//! - `cancel_vs_transfer`: a cancel racing the shard's move of the entry from its queue into
//!   the wheel; the entry is unlinked and freed once, and nothing stays in the wheel.
//! - `sleep_vs_insert`, `sleep_vs_cancel`: the tick thread going to sleep while an earlier
//!   timer is inserted, or an unlink is requested: no lost wake-up.
//! - `reset_vs_fire`: a reset to later racing the shard firing the timer: if the reset wins,
//!   the timer never fires at the old deadline, and fires once at the new one.
//!   `cancel_vs_rearm`: a cancel racing a repeating timer's run and re-arm: the cancel always
//!   wins, and no run follows it.
//! - `poll_vs_fire`: a task polling a `Sleep` while its timer fires: the poll sees it, or the
//!   engine wakes the waker the poll stored.
//! - `ring_hands_over_each_timer_once`, `spares_reach_the_owner_once`,
//!   `the_lane_passes_to_the_next_owner_whole`: the owner's ring against the shard taking from
//!   it (every timer once, in order, none overwritten when the ring is full); the shard giving
//!   spare entries back while the owner takes them (each once, unshared, its links visible);
//!   and an owner letting its lane go while another thread claims it (the new owner's plain
//!   counting goes on from the old owner's count; a Relaxed claim loses an update). Under loom
//!   no thread owns a lane, so the ring and the spare stack are run directly. loom does not
//!   catch a Relaxed store of the ring's tail (it never lets the reader see the slot's older
//!   value, nor flags the entry read without a happens-before edge); ThreadSanitizer does, in
//!   CI's sanitizer step (checked by weakening the store: the engine tests report a race).
//! - `cancel_vs_shutdown`: a cancel of a placed timer racing shutdown's drain of the wheel:
//!   exactly one side wins the timer, and the entry's count, which the cancel's unlink request
//!   owns, is released exactly once (a drain that read the lifecycle apart from its unmarking
//!   frees the entry twice, and the model fails on the freed block).
//! - `every_caller_waits_for_the_finish` and
//!   `the_next_caller_joins_a_shutdown_begun_inside_a_callback`: callers of `shutdown` meeting
//!   in the closing protocol (src/engine/closing.rs): no caller from outside returns before
//!   the shutdown is finished, and one that comes after a shutdown begun inside a callback
//!   joins its finishing thread and receives its timers (a caller that returns instead of
//!   waiting, or a `finishing` that wakes no waiter, fails).
//! - `slab_chunk_is_freed_once_by_its_last_user`: slots freed on other threads while the
//!   allocator's user hands out more and then gives its chunks up: each value is dropped once
//!   and each chunk freed once (a give-up that does not add the slots it handed out leaks the
//!   chunk, which loom reports; a freer that frees at another count than the last failed the
//!   model once, when a later free read the freed block, which loom does not itself track:
//!   Miri's run of the slab's unit tests is the check on that).
//! - `slab_slots_freed_together_free_each_chunk_once`: slots of two chunks freed together on
//!   one thread while the allocator's user drops a reference to one of them and gives its
//!   chunks up: each value is dropped once, by its last holder, and each chunk freed once (a
//!   run of slots counted as one free leaks the chunk; a batch that takes a value another
//!   reference holds drops it under that holder). The order of pushes and counts is plain
//!   memory, for Miri (see the model's documentation).
//! - `slab_trim_leaves_its_chunks_behind_while_their_slots_are_freed`: a slot freed on another
//!   thread while the allocator's user trims (starts afresh and gives its old chunk up) and
//!   goes on allocating: each value is dropped once, each chunk freed once, and no slot of the
//!   chunk left behind handed out again (a trim that keeps the old free stack fails).
