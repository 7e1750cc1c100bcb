//! Waiting for the engine (or a counter) to reach a state: polling about once a millisecond,
//! with a timeout that fails the workload with a clear message.

use std::fmt;
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::TimerEngine;

use super::{Context, Failure};

/// The pause between two polls.
const POLL: Duration = Duration::from_millis(1);

/// The progress line is redrawn every this many polls.
const REDRAW_EVERY: u32 = 100;

/// Polls `probe` until it reports done, and returns the instant it first did. `probe` also
/// describes the state it saw, for the progress line and the timeout's message.
pub(crate) fn poll_until<S: fmt::Display>(
    ctx: &Context,
    what: &str,
    timeout: Duration,
    mut probe: impl FnMut() -> (bool, S),
) -> Result<Instant, Failure> {
    let start = Instant::now();
    let mut polls: u32 = 0;
    loop {
        let (done, state) = probe();
        let now = Instant::now();
        if done {
            ctx.progress.clear();
            return Ok(now);
        }
        if now.saturating_duration_since(start) > timeout {
            ctx.progress.clear();
            return Err(Failure::new(format!(
                "gave up after {} s waiting for {what} (last seen: {state})",
                timeout.as_secs()
            )));
        }
        if polls.is_multiple_of(REDRAW_EVERY) {
            ctx.progress.show(format_args!("{what}: {state}"));
        }
        polls = polls.wrapping_add(1);
        thread::sleep(POLL);
    }
}

/// Waits until the engine reports exactly `timers` pending timers and as many entries linked
/// into its wheels (all linked; or, with 0, all gone and unlinked). Returns the instant it saw
/// it.
pub(crate) fn until_in_wheels(
    ctx: &Context,
    engine: &TimerEngine,
    timers: u64,
    what: &str,
) -> Result<Instant, Failure> {
    poll_until(ctx, what, settle_timeout(timers), || {
        let seen = WheelCounts::of(engine);
        (seen.pending == timers && seen.in_wheel == timers, seen)
    })
}

/// Waits until every pending timer is linked into a wheel (none left in a queue, no cancelled
/// one left to unlink), however many fire meanwhile: seen so on two polls in a row, since a
/// queued timer and a cancelled one not yet unlinked could balance on one. Returns the
/// instant it first saw it.
pub(crate) fn until_linked(
    ctx: &Context,
    engine: &TimerEngine,
    what: &str,
) -> Result<Instant, Failure> {
    let timeout = settle_timeout(engine.pending());
    let mut seen_once = false;
    let mut first = Instant::now();
    poll_until(ctx, what, timeout, || {
        let seen = WheelCounts::of(engine);
        let linked = seen.pending == seen.in_wheel;
        if linked && !seen_once {
            first = Instant::now();
        }
        let done = linked && seen_once;
        seen_once = linked;
        (done, seen)
    })?;
    Ok(first)
}

/// A generous bound on how long the engine may take to link or unlink `timers` timers: a
/// minute plus 20 µs a timer.
pub(crate) fn settle_timeout(timers: u64) -> Duration {
    Duration::from_secs(60).saturating_add(Duration::from_micros(timers.saturating_mul(20)))
}

/// The engine's pending timers and the entries linked into its wheels, summed over shards.
struct WheelCounts {
    pending: u64,
    in_wheel: u64,
}

impl WheelCounts {
    fn of(engine: &TimerEngine) -> Self {
        let stats = engine.stats();
        WheelCounts {
            pending: stats.pending,
            in_wheel: stats.shards.iter().map(|shard| shard.in_wheel).sum(),
        }
    }
}

impl fmt::Display for WheelCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} pending, {} linked in the wheels",
            self.pending, self.in_wheel
        )
    }
}
