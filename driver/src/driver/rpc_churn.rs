//! rpc-churn: the RPC deadline pattern. Producer threads schedule timeouts and cancel all but
//! one in a hundred before they run out.

use std::time::Duration;

use shardwheel::{TimerEngine, TimerHandle};

use super::report::Report;
use super::rng::{Delays, Rng};
use super::{count, mb, mops, parallel, proc, slots, wait, Context, Failure, Workload};

/// Producer threads, unless `--threads` says otherwise.
const DEFAULT_THREADS: usize = 2;

/// Iterations per thread, unless `--ops` says otherwise.
const DEFAULT_OPS: u64 = 5_000_000;

/// Handles each thread keeps, unless `--window` says otherwise.
const DEFAULT_WINDOW: usize = 1000;

/// Every this many iterations the old timeout is left to run out instead of being cancelled.
const KEEP_EVERY: u64 = 100;

/// The timeouts' delays: 1–30 s.
const DELAYS: Delays = Delays::secs(1, 30);

/// The seed stream of the delays.
const STREAM: u64 = 1;

/// Workers report their progress every this many iterations.
const PROGRESS_STEP: u64 = 1 << 16;

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let threads = ctx.options.threads.unwrap_or(DEFAULT_THREADS);
    let ops = ctx.options.ops.unwrap_or(DEFAULT_OPS);
    let window = ctx.options.window.unwrap_or(DEFAULT_WINDOW);
    let engine = ctx.engine()?;
    let mut rings = rings(threads, window)?;
    // Best effort: the peak then covers this workload only, even after others in the process.
    proc::reset_peak_rss();
    let total = ops.saturating_mul(count(threads));
    let (cpu_before, shard_cpu_before) = (proc::cpu_time()?, proc::tick_thread_cpu()?);
    let elapsed = produce(ctx, &engine, &mut rings, ops)?;
    let cpu = proc::cpu_time()?.saturating_sub(cpu_before);
    let shard_cpu = proc::tick_thread_cpu()?.saturating_sub(shard_cpu_before);
    let peak_kb = proc::peak_rss_kb()?;
    drop(rings);
    drop(engine);
    Ok(Report::new(Workload::RpcChurn)
        .count("threads", count(threads))
        .count("ops", total)
        .fixed("secs", elapsed.as_secs_f64(), 3)
        .fixed("mops", mops(total, elapsed), 3)
        .fixed("peak_rss_mb", mb(peak_kb), 1)
        .fixed("cpu_ns_per_op", per_op(cpu, total), 1)
        .fixed("shard_cpu_ns_per_op", per_op(shard_cpu, total), 1)
        .count("window", count(window)))
}

/// Each producer's ring of `window` empty slots.
pub(super) fn rings(threads: usize, window: usize) -> Result<Vec<Ring>, Failure> {
    (0..threads).map(|_| slots(window, || None)).collect()
}

/// A producer's last handles.
pub(super) type Ring = Vec<Option<TimerHandle>>;

/// Runs one producer per ring on `engine`, `ops` iterations each, from a common start; returns
/// the time until the last finished. Then waits until the shards have taken in what the
/// producers queued, whose CPU the operations cost too.
pub(super) fn produce(
    ctx: &Context,
    engine: &TimerEngine,
    rings: &mut [Ring],
    ops: u64,
) -> Result<Duration, Failure> {
    let total = ops.saturating_mul(count(rings.len()));
    let elapsed = parallel::run_timed(
        ctx,
        "rpc-churn",
        total,
        rings.iter_mut().collect(),
        |index, ring| churn(ctx, engine, ring, ops, Rng::new(STREAM, index)),
    )?;
    wait::until_linked(ctx, engine, "rpc-churn: taking in")?;
    Ok(elapsed)
}

/// Nanoseconds of `cpu` per operation.
pub(super) fn per_op(cpu: Duration, ops: u64) -> f64 {
    cpu.as_nanos() as f64 / ops.max(1) as f64
}

/// One producer: iteration n takes the handle in slot n mod W, cancels it unless n is a
/// multiple of 100, and stores there the handle of a new no-op timeout.
fn churn(
    ctx: &Context,
    engine: &TimerEngine,
    ring: &mut [Option<TimerHandle>],
    ops: u64,
    mut random: Rng,
) -> Result<(), Failure> {
    let window = count(ring.len());
    for n in 0..ops {
        let index = usize::try_from(n % window).unwrap_or(0);
        let slot = &mut ring[index];
        if let Some(old) = slot.take() {
            if n % KEEP_EVERY != 0 {
                old.cancel();
            }
        }
        let timeout = engine
            .schedule(random.delay(DELAYS), || {})
            .map_err(Failure::schedule)?;
        *slot = Some(timeout);
        if n % PROGRESS_STEP == PROGRESS_STEP - 1 {
            ctx.progress.add(PROGRESS_STEP);
        }
    }
    Ok(())
}
