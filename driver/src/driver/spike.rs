//! spike: memory after a spike. M idle timeouts scheduled from two threads that then exit, all
//! cancelled, then light churn, then idle: the resident set after each step shows what the
//! engine and the allocator give back. Not one of the five: it runs only when named.

use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{TimerEngine, TimerHandle};

use super::report::Report;
use super::rng::{Delays, Rng};
use super::{count, mb, proc, wait, Context, Failure, Workload};

/// Timers, unless `--timers` says otherwise.
const DEFAULT_TIMERS: usize = 4_000_000;

/// The threads the spike is scheduled from (fixed).
const THREADS: usize = 2;

/// The spike's delays: 10–20 minutes, so none is due during the run.
const DELAYS: Delays = Delays::secs(10 * 60, 20 * 60);

/// The seed stream of the spike's delays.
const STREAM: u64 = 6;

/// The churn: for [`CHURN`], batches of [`CHURN_BATCH`] timeouts due in 1–30 s, each batch
/// scheduled, then cancelled, then a pause of [`CHURN_PAUSE`].
const CHURN: Duration = Duration::from_secs(3);
const CHURN_BATCH: usize = 100;
const CHURN_PAUSE: Duration = Duration::from_millis(1);
const CHURN_DELAYS: Delays = Delays::secs(1, 30);

/// The seed stream of the churn's delays.
const CHURN_STREAM: u64 = 7;

/// The idle window after the churn.
const IDLE: Duration = Duration::from_secs(2);

/// The progress line is redrawn every this many cancels.
const PROGRESS_STEP: usize = 1 << 16;

/// The driver's global allocator, as the report names it.
const ALLOCATOR: &str = if cfg!(feature = "mimalloc") {
    "mimalloc"
} else {
    "system"
};

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let timers = ctx.options.timers.unwrap_or(DEFAULT_TIMERS);
    let engine = ctx.engine()?;
    let base_kb = proc::rss_kb()?;
    ctx.progress.show(format_args!(
        "spike: scheduling {timers} timers from {THREADS} threads"
    ));
    let handles = schedule(ctx, &engine, timers)?;
    wait::until_in_wheels(ctx, &engine, count(timers), "spike: linking timers")?;
    let spike_kb = proc::rss_kb()?;
    cancel_all(ctx, handles);
    wait::until_in_wheels(ctx, &engine, 0, "spike: reclaiming cancelled timers")?;
    let cancelled_kb = proc::rss_kb()?;
    churn(ctx, &engine)?;
    wait::until_in_wheels(ctx, &engine, 0, "spike: reclaiming the churn's timers")?;
    let calm_kb = proc::rss_kb()?;
    ctx.progress
        .show(format_args!("spike: idle for {} s", IDLE.as_secs()));
    thread::sleep(IDLE);
    ctx.progress.clear();
    let idle_kb = proc::rss_kb()?;
    drop(engine);
    Ok(Report::new(Workload::Spike)
        .count("timers", count(timers))
        .fixed("base_mb", mb(base_kb), 1)
        .fixed("spike_mb", mb(spike_kb), 1)
        .fixed("cancelled_mb", mb(cancelled_kb), 1)
        .fixed("calm_mb", mb(calm_kb), 1)
        .fixed("idle_mb", mb(idle_kb), 1)
        .label("allocator", ALLOCATOR))
}

/// Schedules `timers` timers from [`THREADS`] threads of their own, which hand their handles
/// back as they exit.
fn schedule(
    ctx: &Context,
    engine: &TimerEngine,
    timers: usize,
) -> Result<Vec<Vec<TimerHandle>>, Failure> {
    thread::scope(|scope| {
        let mut workers = Vec::with_capacity(THREADS);
        for index in 0..THREADS {
            let share = timers / THREADS + usize::from(index < timers % THREADS);
            let worker = thread::Builder::new()
                .name(format!("driver-{index}"))
                .spawn_scoped(scope, move || {
                    schedule_share(engine, share, Rng::new(STREAM, index))
                })
                .map_err(|error| Failure::new(format!("cannot start a thread: {error}")))?;
            workers.push(worker);
        }
        let shares = workers.into_iter().map(|worker| {
            worker
                .join()
                .unwrap_or_else(|_| Err(Failure::new("a worker thread panicked")))
        });
        let shares = shares.collect::<Result<Vec<_>, Failure>>();
        ctx.progress.clear();
        shares
    })
}

fn schedule_share(
    engine: &TimerEngine,
    share: usize,
    mut rng: Rng,
) -> Result<Vec<TimerHandle>, Failure> {
    let mut handles = Vec::new();
    handles
        .try_reserve_exact(share)
        .map_err(|_| Failure::new(format!("cannot allocate {share} handles")))?;
    for _ in 0..share {
        let handle = engine
            .schedule(rng.delay(DELAYS), || {})
            .map_err(Failure::schedule)?;
        handles.push(handle);
    }
    Ok(handles)
}

/// Cancels every timer from this thread, then drops the handles.
fn cancel_all(ctx: &Context, shares: Vec<Vec<TimerHandle>>) {
    let total: usize = shares.iter().map(Vec::len).sum();
    let mut refused = 0_u64;
    for (i, handle) in shares.iter().flatten().enumerate() {
        if !handle.cancel() {
            refused += 1;
        }
        if i % PROGRESS_STEP == 0 {
            ctx.progress
                .show(format_args!("spike: cancelling timers: {i}/{total}"));
        }
    }
    drop(shares);
    ctx.progress.clear();
    if refused > 0 {
        eprintln!(
            "spike: warning: {refused} of {total} timers could not be cancelled (already fired)"
        );
    }
}

/// Light churn on a thread of its own for [`CHURN`]: batches of timeouts scheduled and then
/// cancelled, a short pause after each batch.
fn churn(ctx: &Context, engine: &TimerEngine) -> Result<(), Failure> {
    ctx.progress
        .show(format_args!("spike: churning for {} s", CHURN.as_secs()));
    let churned = thread::scope(|scope| {
        thread::Builder::new()
            .name("driver-churn".to_owned())
            .spawn_scoped(scope, || churn_for(engine, CHURN))
            .map_err(|error| Failure::new(format!("cannot start a thread: {error}")))?
            .join()
            .unwrap_or_else(|_| Err(Failure::new("the churning thread panicked")))
    });
    ctx.progress.clear();
    churned
}

fn churn_for(engine: &TimerEngine, length: Duration) -> Result<(), Failure> {
    let mut rng = Rng::new(CHURN_STREAM, 0);
    let mut batch = Vec::with_capacity(CHURN_BATCH);
    let start = Instant::now();
    while start.elapsed() < length {
        for _ in 0..CHURN_BATCH {
            let handle = engine
                .schedule(rng.delay(CHURN_DELAYS), || {})
                .map_err(Failure::schedule)?;
            batch.push(handle);
        }
        for handle in batch.drain(..) {
            handle.cancel();
        }
        thread::sleep(CHURN_PAUSE);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_churn_cancels_every_timeout_it_schedules() {
        let engine = TimerEngine::builder().shards(1).build().unwrap();
        churn_for(&engine, Duration::from_millis(5)).unwrap();
        let stats = engine.stats();
        assert!(stats.scheduled >= count(CHURN_BATCH), "{stats:?}");
        assert_eq!(stats.cancelled, stats.scheduled, "{stats:?}");
        assert_eq!(stats.pending, 0, "{stats:?}");
    }
}
