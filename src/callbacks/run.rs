//! Running one fired callback, wherever it runs: under `catch_unwind` (a panic is counted
//! and its payload dropped safely), counted as begun and ended, and with its permit under the
//! engine's cap released as it begins. A repeating timer's run is followed by its stow onto its
//! shard's re-arm stack (see `entry::repeat`), or, if the timer ends there, by the end of its hold.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::counts::{RunsOn, ShardCallbacks};
use crate::entry::{Begun, CallbackBox, Entry, EntryRef, Fired};

thread_local! {
    /// The engine whose callback this thread is running (0: none).
    static RUNNING_FOR: Cell<u64> = const { Cell::new(0) };
}

/// Whether the calling thread is inside a callback of engine `engine`.
pub(crate) fn in_callback_of(engine: u64) -> bool {
    RUNNING_FOR.with(|running| running.get() == engine)
}

/// Runs one fired callback for `shard` on the calling thread: under `catch_unwind`, counted,
/// and releasing a one-shot timer's permit as it begins (see `Executor::run`).
pub(super) fn run_one(fired: Fired, shard: &ShardCallbacks, runner: RunsOn) {
    let (callback, mut repeating) = match fired.begin(shard.cap()) {
        Begun::Once(callback, permit) => {
            // Before the callback runs, so that it can schedule its successor at the cap.
            drop(permit);
            (callback, None)
        }
        Begun::Again(callback, entry) => (callback, Some(entry)),
    };
    let outer = RUNNING_FOR.with(|running| running.replace(shard.engine()));
    shard.runs().begin(runner);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let next = match &repeating {
            None => return callback.call(),
            Some(entry) => callback.call_repeating(entry),
        };
        if let Some((callback, tick)) = next {
            repeating = repeating
                .take()
                .and_then(|entry| stow(entry, callback, tick, shard));
        }
    }));
    shard.runs().end(runner);
    RUNNING_FOR.with(|running| running.set(outer));
    if let Err(payload) = outcome {
        shard.add_panicked();
        crate::trace::callback_panicked(&*payload);
        drop_payload(payload);
    }
    if let Some(entry) = repeating {
        // The timer ends with this run: FIRED for good, unless cancelled.
        drop(Entry::stop(entry, shard.cap()));
    }
}

/// Stows `entry` at `tick` with `callback` (FIRED→STOWED) onto its shard's re-arm stack.
/// Returns the entry, its callback dropped, if the timer ends instead: cancelled during the
/// run, or its shard stopped.
fn stow(
    entry: EntryRef,
    callback: CallbackBox,
    tick: u64,
    shard: &ShardCallbacks,
) -> Option<EntryRef> {
    if let Err(callback) = entry.stow(tick, callback) {
        drop(callback);
        return Some(entry);
    }
    // Counted before the shard can fire it, as a schedule is.
    shard.add_rearmed();
    let entry = shard.rearms().push(entry).err()?;
    // The shard stopped: the timer stops here, unless a cancel took it first.
    if let Some(callback) = entry.unstow() {
        shard.refuse_rearm();
        drop(callback);
    }
    Some(entry)
}

/// How many nested panic payloads `drop_payload` drops before it gives up.
const PAYLOAD_DROPS: usize = 8;

/// Drops a callback's panic payload without letting a panic in its `Drop` unwind into the tick
/// thread or the pool. Such a panic has a payload of its own, which is dropped the same way; a
/// chain of payloads that each panic on drop is cut after `PAYLOAD_DROPS` links, and the last
/// one leaked rather than dropped (the only way to stop a chain that need not end).
pub(super) fn drop_payload(mut payload: Box<dyn Any + Send>) {
    for _ in 0..PAYLOAD_DROPS {
        match catch_unwind(AssertUnwindSafe(|| drop(payload))) {
            Ok(()) => return,
            Err(next) => payload = next,
        }
    }
    std::mem::forget(payload);
}
