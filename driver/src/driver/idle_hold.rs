//! idle-hold: ten million pending timers, nothing due. Inserts them, then measures the CPU
//! time the whole process spends over five idle seconds.

use std::thread;
use std::time::{Duration, Instant};

use super::fill::{fill, Filled};
use super::report::Report;
use super::rng::Delays;
use super::{count, proc, Context, Failure, Workload};

/// Timers, unless `--timers` says otherwise.
const DEFAULT_TIMERS: usize = 10_000_000;

/// Inserting threads, unless `--threads` says otherwise.
const DEFAULT_THREADS: usize = 2;

/// The timers' delays: 10–20 minutes, so none is due during the run.
const DELAYS: Delays = Delays::secs(10 * 60, 20 * 60);

/// The seed stream of the delays.
const STREAM: u64 = 5;

/// The idle window.
const IDLE: Duration = Duration::from_secs(5);

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let timers = ctx.options.timers.unwrap_or(DEFAULT_TIMERS);
    let threads = ctx.options.threads.unwrap_or(DEFAULT_THREADS);
    let engine = ctx.engine()?;
    let Filled {
        handles,
        insert_mops,
        bytes_per_timer,
    } = fill(ctx, &engine, timers, threads, DELAYS, STREAM)?;
    let idle_cpu_pct = idle_cpu_percent(ctx)?;
    ctx.progress
        .show(format_args!("idle-hold: releasing {timers} timers"));
    drop(handles);
    drop(engine);
    Ok(Report::new(Workload::IdleHold)
        .count("timers", count(timers))
        .fixed("insert_mops", insert_mops, 3)
        .fixed("bytes_per_timer", bytes_per_timer, 1)
        .fixed("idle_cpu_pct", idle_cpu_pct, 2)
        .count("threads", count(threads)))
}

/// The process's CPU time (user + sys) over the idle window, as a percentage of the window's
/// wall-clock length.
fn idle_cpu_percent(ctx: &Context) -> Result<f64, Failure> {
    ctx.progress.show(format_args!(
        "idle-hold: measuring CPU time over {} s idle",
        IDLE.as_secs()
    ));
    let start = Instant::now();
    let before = proc::cpu_time()?;
    thread::sleep(IDLE);
    let after = proc::cpu_time()?;
    let window = start.elapsed();
    ctx.progress.clear();
    let cpu_secs = after.saturating_sub(before).as_secs_f64();
    Ok(cpu_secs / window.as_secs_f64() * 100.0)
}
