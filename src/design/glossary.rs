//! Glossary: one word per thing, which the code, the tests, the driver and the docs obey. This
//! module holds no code; the parts the words name are in [`design`](crate::design).
//!
//! The column "was called" lists retired words; `tests/design_map.rs`
//! fails if the code uses one of those in backticks, whole or, if it has no `_`, as a
//! `_`-separated part of a name (PLACED in PLACED_BIT).
//!
//! | word | meaning | was called |
//! |---|---|---|
//! | shard | one wheel, the tick thread that alone touches it, and the lanes into it | |
//! | lane | a shard's inbound side for one thread: queues, spares, chunks, counters | |
//! | lane index | a small number per live thread, reused after it exits; picks its lanes | |
//! | thread number | a number per thread, never reused; tells a lane's owner | `thread_slot` |
//! | home shard | where the calling thread's unkeyed timers go | |
//! | owner | the thread that alone uses a lane's ring, young queue, spares and chunks; its token, `Owner` | `Ownership` |
//! | taker, access | the one thread that takes from a shard's lanes: its shard thread, then shutdown (its token, `Taker`); a lane as the calling thread reaches it, as its owner or another thread (`Access`) | |
//! | young | a timer its owner keeps in its lane's young queue, due past the horizon | |
//! | horizon | how old a young timer gets before its shard takes it (`Horizon`) | |
//! | busy | the owner in a schedule on its lane: the young queue's `busy` flag, its guard `Busy`, `Take::Busy` | the young queue's `Home`, `Turn::Busy` |
//! | sweep | the owner's look at the front of its young queue on each schedule | |
//! | send, take | the owner moving a live young timer to the ring; the shard (or shutdown) moving every young timer of a lane out | |
//! | pending, fired, cancelled, handed back | a timer's four states, in `TimerState`, `Lifecycle` and the state word | `INIT`, `EXPIRED`, `RETURNED`, `is_expired` |
//! | stow, re-arm | a runner putting its repeating timer on its shard's re-arm stack (FIRED→STOWED); the shard making it pending again | a run's hand-back |
//! | hand back | win PENDING→HANDED_BACK and return the callback: shutdown, as `Unfired`, or a `schedule` that met it, in `ScheduleError::Shutdown` | an entry's `give_back` |
//! | fire | the shard's PENDING→FIRED; the callback goes to the executor | expire |
//! | linked | an entry in a wheel slot (the LINKED bit) | `PLACED`, `PLACED_BIT`, `unplaced` |
//! | mid-push | a producer between its swap of the inbound queue's back and its link (`Pop::MidPush`) | the inbound Pop's Busy |
//! | tick, turn | the engine's unit of time; one pass of a shard's tick loop | |
//! | `Tick`, `Nanos` | a tick's number from the engine's start; an instant in nanoseconds from the clock's origin (src/time/units.rs); a span of either stays a `u64` | |
//! | born, hurry | when a timer was made, in `Nanos` (`Due::born`); a thread asking the shard to take a lane's young timers at once (`Since::Hurry`) | a birth of 0 |
//! | wheel, level, slot | a shard's timing wheel; one of its rows of 64 slots; one position of a level; a delay queue's `DelayWheel` and `DelayLevel` place a value by the same `wheel::level_for` | |
//! | entry | one timer's reference-counted memory: state word, links, callback cell | |
//! | chunk, block | a run of blocks a lane's owner carves entries from; one entry's memory | a chunk's slot |
//! | cell | one word that a value is put into and taken out of: a callback cell, a ring's cell | |
//! | discard | giving a freed chunk's pages back to the system before the chunk is freed; a shard thread's wait for a calm turn in its engine's `Discards` | a process-wide list, its `Releaser` |
//! | retire | end a repeating timer for good: FIRED without REPEATING (`Entry::retire`) | |
//! | spare | a dead, unshared entry given back to its lane's owner, or swept, for reuse | |
//! | unlink request | a cancelled, linked entry pushed for its shard to take out | |
//! | permit | one unit of the cap, held by a timer until the engine is done with it | place, `release_cap` |
//! | hold, end a hold | a timer keeping its permit; the transition or drop that makes it a `Permit` again (a cancelled one's: `Entry::end_cancelled_hold`) | an entry's `let_go` |
//! | release | a permit's return to the cap, by the drop of a `Permit` or of `Permits` (`Cap::release`) | give-back, the cap's `give_back` |
//! | engine's reference | the one count per arming the engine holds: a queue's, the wheel's, an unlink request's or a runner's | |
//! | hand over | the shard passing fired callbacks to the executor, a batch at a time | |
//! | runner, claim | a long-lived job on a pool thread; the range of a batch it holds | claims `Slot` |
//! | steal | a runner with nothing to run taking half of another's claim | |
//! | pin, unpin | bind a tick thread to one cpu; undo it after late turns | `Placement` |
//! | cpu | a processor the system schedules threads on (never "core") | |
//! | shared | what a shard or engine shares with its handles: `ShardShared`, `EngineShared` | `EngineCore`, `ShardCore`, `EngineLink` |
//! | threads | the threads an engine started, joined at shutdown (`Threads`) | `Runners` |
//! | job | a boxed closure spawned onto a pool thread | |
//! | kind | what a timer runs, handed to `Lane::schedule` (`TimerKind`) | |
//! | stand-in timer | the timer a far `Sleep` holds at the farthest deadline the engine takes | |
//! | look-ahead | a manual clock asking a shard for its earliest pending deadline | |
//! | snapshot, survey, stage | the pending timers listed at once (`stats::PendingTimers`); a shard's walk of its wheel for one, a piece after each turn (`Surveying`); where a listed timer is: queued, linked, running or stowed (`stats::Stage`) | |
//! | origin, site | where (its site: the caller's `Location`), when and by which key a timer was made, kept beside its entry on an engine that tracks sites (`Origin`) | |
//! | Dekker pair | a write, a SeqCst fence (`Fenced`), then a read of what the other side wrote, against the same the other way (src/sync/fenced.rs) | |
//! | announcement | the sleep a shard writes in its sleep word: none, until a tick, or until woken (`Announced`) | |
//! | question, ticket, reply | what an asker asks a shard thread about its wheel (`Question`: the look-ahead, the survey); the number an asker holds for its answer; what it finds: open, given, or taken by another asker (`Reply`) | `Answer`, `take_answer`, `ask_earliest` |
//! | lateness | how late a timer fired, from the start of the tick before its deadline's; a shard counts it in its `LatenessRecorder`, of which `stats::Lateness` is a snapshot | the shard's Lateness |
//! | scope, entered engine | a future's polls run with an engine entered or a deadline current (`Scoped`, the one scope future); the engine the free functions use on a thread, entered by `TimerEngine::enter` or a scope (`EnterGuard`) | `Within` |
//! | deadline scope, current deadline | a scope with a deadline, made by `within`, current around each of its polls, the earlier winning when nested; the earliest deadline of the scopes the running poll is inside (`deadline::current`), on the clock of the engine that made it, to which a timeout made there is clamped (`Clamp`; inherited if the scope's came first) | |
//! | expired, item | a delay-queue value whose deadline passed (tokio-util's word); a delay-queue value with its deadline and list links | the delay queue's Entry |
//! | boot clock, wall clock, step, suspend | the other clocks a deadline can be on: time since boot, suspends counted (`OtherClock::Boot`); `SystemTime` (`OtherClock::Wall`); the wall clock set forward or back; the machine asleep, its monotonic clock stopped | |
//! | estimate, round, clock thread | the tick an other-clock deadline is timed at: the present plus what is left on its clock (`Look::At`); re-timing an engine's other-clock timers after a step or suspend (`ClockTimers::round`); the thread that runs an engine's rounds | |
