//! sleeping-tasks: what a task asleep on a timer costs in a tokio runtime, with shardwheel's
//! sleep and with tokio's. Not one of the five: it runs only when named.
//!
//! Each peer runs in a process of its own, since memory the first peer freed would be reused
//! by the second without growing the resident set: without `--peer` the driver runs itself
//! once per peer (with `--peer` and `--json`) and joins the two reports into one.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::TimerEngine;
use tokio::runtime::Runtime;

#[cfg(feature = "mimalloc")]
use super::alloc;
use super::args::{Options, Peer};
use super::report::Report;
use super::{child, count, mops, proc, wait, Context, Failure, Workload};

/// Tasks, unless `--timers` says otherwise.
const DEFAULT_TASKS: usize = 1_000_000;

/// The runtime's worker threads (fixed).
const WORKERS: usize = 2;

/// Every task's sleep: far longer than a run.
const SLEEP: Duration = Duration::from_secs(60);

/// Short sleeps awaited before the first reading, so the workers' first-use costs (stacks,
/// per-thread state of the timers) are not counted.
const WARM_UP_TASKS: usize = 64;

/// The pause between the last wait and the second reading of the resident set: time for the
/// last tasks counted as started to finish their sleep's first poll.
const SETTLE: Duration = Duration::from_millis(100);

/// The tasks of the measurement under way that have started (one at a time in a process).
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// The progress line is redrawn every this many spawns.
const PROGRESS_STEP: usize = 1 << 16;

/// The keys of `peer`'s bytes per task and of its spawn rate.
fn keys(peer: Peer) -> (&'static str, &'static str) {
    match peer {
        Peer::Shardwheel => (
            "shardwheel_bytes_per_task",
            "shardwheel_spawn_mtasks_per_sec",
        ),
        Peer::Tokio => ("tokio_bytes_per_task", "tokio_spawn_mtasks_per_sec"),
    }
}

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    match ctx.options.peer {
        Some(peer) => run_peer(ctx, peer),
        None => run_children(ctx),
    }
}

/// Runs each peer in a child process and joins their reports.
fn run_children(ctx: &Context) -> Result<Report, Failure> {
    let exe = child::this_program()?;
    let mut report = Report::new(Workload::SleepingTasks);
    for peer in Peer::ALL {
        let options = Options {
            peer: Some(peer),
            ..ctx.options.clone()
        };
        let args = options.child_args(Workload::SleepingTasks);
        let part = child::run_again(&exe, args, Workload::SleepingTasks)
            .map_err(|failure| Failure::new(format!("peer {}: {failure}", peer.name())))?;
        report = report.join(part);
    }
    Ok(report)
}

/// What one peer's tasks cost.
struct Measured {
    bytes_per_task: f64,
    spawn_mtasks_per_sec: f64,
}

fn run_peer(ctx: &Context, peer: Peer) -> Result<Report, Failure> {
    let tasks = ctx.options.timers.unwrap_or(DEFAULT_TASKS);
    let measured = match peer {
        Peer::Shardwheel => {
            let engine = start_default_engine(ctx)?;
            measure(ctx, tasks, shardwheel::sleep, Some(engine))?
        }
        Peer::Tokio => measure(ctx, tasks, tokio::time::sleep, None)?,
    };
    let (bytes_key, spawn_key) = keys(peer);
    Ok(Report::new(Workload::SleepingTasks)
        .count("tasks", count(tasks))
        .fixed(bytes_key, measured.bytes_per_task, 1)
        .fixed(spawn_key, measured.spawn_mtasks_per_sec, 3))
}

/// The default engine, built as the options ask.
fn start_default_engine(ctx: &Context) -> Result<&'static TimerEngine, Failure> {
    ctx.engine_builder()
        .build_global()
        .map_err(|error| Failure::new(format!("could not start the default engine: {error}")))?;
    Ok(shardwheel::default_engine())
}

/// Spawns `tasks` tasks that each await `sleep(SLEEP)`, twice, each time on a fresh runtime
/// dropped after: the first pass measures the memory the tasks take, the second, on memory
/// already resident, how fast they start. `engine` is the engine the sleeps are on, if any:
/// its timers are awaited linked before the reading, and gone after each drop.
fn measure<S, F>(
    ctx: &Context,
    tasks: usize,
    sleep: F,
    engine: Option<&TimerEngine>,
) -> Result<Measured, Failure>
where
    S: Future<Output = ()> + Send + 'static,
    F: Fn(Duration) -> S + Copy + Send + 'static,
{
    // The second pass reuses the first one's memory: page faults, whose cost swings with the
    // kernel's huge pages from run to run, for either peer, then set no spawn rate.
    #[cfg(feature = "mimalloc")]
    alloc::keep_freed_memory();
    let mut bytes_per_task = 0.0;
    let mut spawn_mtasks_per_sec = 0.0;
    for pass in [Pass::Memory, Pass::Spawning] {
        let runtime = runtime()?;
        runtime.block_on(warm_up(sleep));
        if let Some(engine) = engine {
            wait::until_in_wheels(ctx, engine, 0, "ending the warm-up sleeps")?;
        }
        let before_kb = proc::rss_kb()?;
        let elapsed = spawn_all(ctx, &runtime, tasks, sleep)?;
        if let Some(engine) = engine {
            wait::until_in_wheels(ctx, engine, count(tasks), "linking the sleeps' timers")?;
        }
        thread::sleep(SETTLE);
        let after_kb = proc::rss_kb()?;
        // Dropping the runtime waits for its workers to drop every task, and so every sleep.
        drop(runtime);
        if let Some(engine) = engine {
            wait::until_in_wheels(ctx, engine, 0, "cancelling the sleeps' timers")?;
        }
        match pass {
            Pass::Memory => {
                let grown_bytes = (after_kb as f64 - before_kb as f64) * 1024.0;
                bytes_per_task = grown_bytes / tasks.max(1) as f64;
            }
            Pass::Spawning => spawn_mtasks_per_sec = mops(count(tasks), elapsed),
        }
    }
    Ok(Measured {
        bytes_per_task,
        spawn_mtasks_per_sec,
    })
}

/// What a pass of [`measure`] reads.
#[derive(Clone, Copy)]
enum Pass {
    Memory,
    Spawning,
}

/// Spawns `tasks` sleeping tasks on `runtime`; returns the time from the first spawn until
/// every task has polled its sleep once.
fn spawn_all<S, F>(
    ctx: &Context,
    runtime: &Runtime,
    tasks: usize,
    sleep: F,
) -> Result<Duration, Failure>
where
    S: Future<Output = ()> + Send + 'static,
    F: Fn(Duration) -> S + Copy + Send + 'static,
{
    // Relaxed: the spawns below order it before every task's increment.
    STARTED.store(0, Ordering::Relaxed);
    let total = count(tasks);
    let start = Instant::now();
    for i in 0..tasks {
        // No join handle is kept: dropping it detaches the task.
        drop(runtime.spawn(sleeping_task(sleep)));
        if i % PROGRESS_STEP == 0 {
            ctx.progress
                .show(format_args!("spawning tasks: {i}/{total}"));
        }
    }
    let all_started = wait::poll_until(ctx, "starting tasks", wait::settle_timeout(total), || {
        // Relaxed: only the count is read; the tasks publish nothing else through it.
        let seen = STARTED.load(Ordering::Relaxed);
        (seen == tasks, format!("{seen}/{total} started"))
    })?;
    Ok(all_started.saturating_duration_since(start))
}

/// A multi-thread runtime of [`WORKERS`] threads with tokio's timer (the same for both peers).
fn runtime() -> Result<Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_time()
        .build()
        .map_err(|error| Failure::new(format!("could not start the tokio runtime: {error}")))
}

/// Spawns [`WARM_UP_TASKS`] tasks that each await a 1 ms sleep, and awaits them all.
async fn warm_up<S, F>(sleep: F)
where
    S: Future<Output = ()> + Send + 'static,
    F: Fn(Duration) -> S,
{
    let handles: Vec<_> = (0..WARM_UP_TASKS)
        .map(|_| tokio::spawn(sleep(Duration::from_millis(1))))
        .collect();
    for handle in handles {
        // A warm-up task cannot panic; an error would only mean it was cancelled.
        let _ = handle.await;
    }
}

/// A task that counts itself into [`STARTED`] and then awaits `sleep(SLEEP)`: its first
/// poll, which gives the sleep its timer, follows at once on the same thread. The task holds
/// the sleep and nothing else.
async fn sleeping_task<S, F>(sleep: F)
where
    S: Future<Output = ()>,
    F: Fn(Duration) -> S,
{
    // Relaxed: a count the driver only reads; nothing else is published through it.
    STARTED.fetch_add(1, Ordering::Relaxed);
    sleep(SLEEP).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_holds_its_sleep_and_nothing_else() {
        let task = sleeping_task(shardwheel::sleep);
        let sleep = std::mem::size_of::<shardwheel::Sleep>();
        assert!(std::mem::size_of_val(&task) <= sleep + 8);
        let task = sleeping_task(tokio::time::sleep);
        let sleep = std::mem::size_of::<tokio::time::Sleep>();
        assert!(std::mem::size_of_val(&task) <= sleep + 8);
    }
}
