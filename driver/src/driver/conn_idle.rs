//! conn-idle: many long-lived connection timeouts. Inserts M timers from T threads, measures
//! their memory once linked, cancels them all from one thread, and times how long the engine
//! takes to unlink them.

use std::time::{Duration, Instant};

use shardwheel::TimerHandle;

use super::fill::{fill, Filled};
use super::report::Report;
use super::rng::Delays;
use super::{count, mb, mops, proc, wait, Context, Failure, Workload};

/// Timers, unless `--timers` says otherwise.
const DEFAULT_TIMERS: usize = 1_000_000;

/// Inserting threads, unless `--threads` says otherwise.
const DEFAULT_THREADS: usize = 2;

/// The timers' delays: 60–120 s.
const DELAYS: Delays = Delays::secs(60, 120);

/// The seed stream of the delays.
const STREAM: u64 = 2;

/// The progress line is redrawn every this many cancels.
const PROGRESS_STEP: usize = 1 << 16;

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let timers = ctx.options.timers.unwrap_or(DEFAULT_TIMERS);
    let threads = ctx.options.threads.unwrap_or(DEFAULT_THREADS);
    let engine = ctx.engine()?;
    let Filled {
        handles,
        insert_mops,
        bytes_per_timer,
    } = fill(ctx, &engine, timers, threads, DELAYS, STREAM)?;
    let (cancel_time, cancelled_at) = cancel_all(ctx, &handles);
    let reclaimed_at = wait::until_in_wheels(ctx, &engine, 0, "reclaiming cancelled timers")?;
    let reclaim = reclaimed_at.saturating_duration_since(cancelled_at);
    drop(handles);
    let rss_after_kb = proc::rss_kb()?;
    drop(engine);
    Ok(Report::new(Workload::ConnIdle)
        .count("timers", count(timers))
        .fixed("insert_mops", insert_mops, 3)
        .fixed("bytes_per_timer", bytes_per_timer, 1)
        .fixed("cancel_mops", mops(count(timers), cancel_time), 3)
        .fixed("reclaim_ms", reclaim.as_secs_f64() * 1e3, 1)
        .fixed("rss_after_cancel_mb", mb(rss_after_kb), 1)
        .count("threads", count(threads)))
}

/// Cancels every timer from this thread. Returns the time it took and the instant it ended.
fn cancel_all(ctx: &Context, handles: &[Option<TimerHandle>]) -> (Duration, Instant) {
    let total = count(handles.len());
    let mut refused = 0_u64;
    let start = Instant::now();
    for (i, handle) in handles.iter().enumerate() {
        if let Some(handle) = handle {
            if !handle.cancel() {
                refused += 1;
            }
        }
        if i % PROGRESS_STEP == 0 {
            ctx.progress
                .show(format_args!("cancelling timers: {i}/{total}"));
        }
    }
    let end = Instant::now();
    ctx.progress.clear();
    if refused > 0 {
        eprintln!("conn-idle: warning: {refused} of {total} timers could not be cancelled (already fired)");
    }
    (end.saturating_duration_since(start), end)
}
