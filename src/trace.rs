//! Events for the rare things, through `tracing` when the `tracing` feature is on; without it,
//! each function here compiles to nothing.
//!
//! Every event has the target `shardwheel`. Nothing on a hot path emits one: each marks a
//! failure (a callback or spawner panicked, a pin was refused, the
//! time-stamp counter fell behind the clock) or a moment
//! in an engine's life (shutdown began, shutdown ended).

use std::any::Any;

/// The text of a panic payload, if it has one.
#[cfg(feature = "tracing")]
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "(not a string)"
    }
}

/// A timer callback panicked (the engine caught it and went on).
pub(crate) fn callback_panicked(payload: &(dyn Any + Send)) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "shardwheel",
        panic = panic_message(payload),
        "a timer callback panicked"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = payload;
}

/// A user's spawner panicked while taking a task.
pub(crate) fn spawner_panicked() {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "shardwheel", "the callback spawner panicked");
}

/// The time-stamp counter fell behind the monotonic clock by `short_nanos` between two of a
/// thread's anchors: scheduling reads the clock from now on.
pub(crate) fn counter_off(short_nanos: u64) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "shardwheel",
        short_nanos,
        "the time-stamp counter fell behind the clock: scheduling reads the clock from now on"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = short_nanos;
}

/// A shard's tick thread could not be pinned to `cpu`, or was unpinned because its turns
/// began late there (`late`).
pub(crate) fn unpinned(cpu: usize, late: bool) {
    #[cfg(feature = "tracing")]
    if late {
        tracing::info!(
            target: "shardwheel",
            cpu,
            "a tick thread was unpinned: its turns began late"
        );
    } else {
        tracing::info!(target: "shardwheel", cpu, "a tick thread could not be pinned");
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (cpu, late);
}

/// Engine `engine` began to shut down.
pub(crate) fn shutdown_began(engine: u64) {
    #[cfg(feature = "tracing")]
    tracing::debug!(target: "shardwheel", engine, "shutdown began");
    #[cfg(not(feature = "tracing"))]
    let _ = engine;
}

/// Engine `engine` finished shutting down, handing back `unfired` timers.
pub(crate) fn shutdown_ended(engine: u64, unfired: usize) {
    #[cfg(feature = "tracing")]
    tracing::debug!(target: "shardwheel", engine, unfired, "shutdown ended");
    #[cfg(not(feature = "tracing"))]
    let _ = (engine, unfired);
}
