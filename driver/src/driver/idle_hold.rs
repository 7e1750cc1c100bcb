//! idle-hold: ten million pending timers, nothing due. Inserts them, then measures the CPU
//! time the whole process spends over five idle seconds, and how often the engine's tick
//! threads were switched in and out meanwhile.

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
    let Idle {
        cpu_pct: idle_cpu_pct,
        wakeups_per_sec,
    } = idle(ctx)?;
    ctx.progress
        .show(format_args!("idle-hold: releasing {timers} timers"));
    drop(handles);
    drop(engine);
    Ok(Report::new(Workload::IdleHold)
        .count("timers", count(timers))
        .fixed("insert_mops", insert_mops, 3)
        .fixed("bytes_per_timer", bytes_per_timer, 1)
        .fixed("idle_cpu_pct", idle_cpu_pct, 2)
        .fixed("shard_wakeups_per_sec", wakeups_per_sec, 2)
        .count("threads", count(threads)))
}

/// What the idle window cost.
struct Idle {
    /// The process's CPU time (user + sys) over the window, as a percentage of the window's
    /// wall-clock length.
    cpu_pct: f64,
    /// Context switches of the tick threads (voluntary and not) over the window, per second
    /// and per tick thread: how often a shard woke while nothing was due.
    wakeups_per_sec: f64,
}

fn idle(ctx: &Context) -> Result<Idle, Failure> {
    ctx.progress.show(format_args!(
        "idle-hold: measuring CPU time over {} s idle",
        IDLE.as_secs()
    ));
    let start = Instant::now();
    let cpu_before = proc::cpu_time()?;
    let (switches_before, _) = proc::tick_thread_switches()?;
    thread::sleep(IDLE);
    let (switches_after, shards) = proc::tick_thread_switches()?;
    let cpu_after = proc::cpu_time()?;
    let window = start.elapsed().as_secs_f64();
    ctx.progress.clear();
    let cpu_secs = cpu_after.saturating_sub(cpu_before).as_secs_f64();
    let switches = switches_after.saturating_sub(switches_before) as f64;
    Ok(Idle {
        cpu_pct: cpu_secs / window * 100.0,
        wakeups_per_sec: switches / window / shards.max(1) as f64,
    })
}
