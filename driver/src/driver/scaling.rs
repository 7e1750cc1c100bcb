//! scaling: how throughput and CPU per operation grow with threads, beside `tokio::time` on
//! the same threads. Not one of the five: it runs only when named.
//!
//! Each point is one (case, peer, thread count): `churn` is rpc-churn's loop, `timeout` a
//! timeout around a yield in tasks of a multi-thread tokio runtime. Every point's CPU is the
//! whole process's, over the timed part, per operation.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use super::report::{print_line, Report};
use super::rng::{Delays, Rng};
use super::{count, mops, proc, rpc_churn, Context, Failure, Workload};

/// Iterations per thread, unless `--ops` says otherwise.
const DEFAULT_OPS: u64 = 1_000_000;

/// Tasks per runtime worker in the `timeout` case.
const TASKS_PER_WORKER: u64 = 64;

/// The timeout each task puts around its yield: far longer than a run, so none fires.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The seed stream of the tokio churn's delays (the same delays as rpc-churn's).
const STREAM: u64 = 1;

/// Every this many iterations the old sleep is kept to run out instead of being dropped.
const KEEP_EVERY: u64 = 100;

/// Handles (or sleeps) each churn thread keeps.
const WINDOW: usize = 1000;

/// What a point measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Churn,
    Timeout,
}

/// Whose timer a point runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Shardwheel,
    Tokio,
    /// tokio's per-worker timer (`enable_alt_timer`, in a build with `--cfg tokio_unstable`).
    #[cfg_attr(not(tokio_unstable), allow(dead_code))]
    TokioAlt,
    /// No timer: the loop alone.
    None,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Churn => "churn",
            Case::Timeout => "timeout",
        }
    }

    /// The peers of this case, in the order a run takes them.
    fn peers(self) -> Vec<Peer> {
        let mut peers = vec![Peer::Shardwheel, Peer::Tokio];
        #[cfg(tokio_unstable)]
        peers.push(Peer::TokioAlt);
        if self == Case::Timeout {
            peers.push(Peer::None);
        }
        peers
    }
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Shardwheel => "shardwheel",
            Peer::Tokio => "tokio",
            Peer::TokioAlt => "tokio-alt",
            Peer::None => "none",
        }
    }
}

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let list = ctx
        .options
        .threads_list
        .clone()
        .unwrap_or_else(|| default_threads(cpus));
    let ops = ctx.options.ops.unwrap_or(DEFAULT_OPS);
    // The default engine serves shardwheel's `timeout`; built once, as the options ask.
    ctx.engine_builder()
        .build_global()
        .map_err(|error| Failure::new(format!("could not start the default engine: {error}")))?;
    let mut points = Vec::new();
    for &threads in &list {
        for case in [Case::Churn, Case::Timeout] {
            for peer in case.peers() {
                ctx.progress.show(format_args!(
                    "scaling: {} {} at {threads} threads",
                    case.name(),
                    peer.name()
                ));
                let point = measure(ctx, case, peer, threads, ops)?.count("cpus", count(cpus));
                ctx.progress.clear();
                print_line(&point.row())?;
                points.push(point);
            }
        }
    }
    if let Some(path) = &ctx.options.plot {
        plot(path, &points, cpus)?;
    }
    if ctx.options.json {
        for point in &points {
            print_line(&point.json()?)?;
        }
    }
    Ok(summary(&points, &list, cpus))
}

/// 1, 2, 4, … below the cpu count, then the cpu count and twice it.
fn default_threads(cpus: usize) -> Vec<usize> {
    let mut list: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n < cpus)
        .collect();
    list.push(cpus);
    list.push(cpus * 2);
    list
}

/// Runs one point and reports it (without `cpus`).
fn measure(
    ctx: &Context,
    case: Case,
    peer: Peer,
    threads: usize,
    ops: u64,
) -> Result<Report, Failure> {
    let total = ops.saturating_mul(count(threads));
    let (elapsed, cpu) = match (case, peer) {
        (Case::Churn, Peer::Shardwheel) => {
            let engine = ctx.engine()?;
            let mut rings = rpc_churn::rings(threads, WINDOW)?;
            timed_cpu(|| rpc_churn::produce(ctx, &engine, &mut rings, ops))?
        }
        (Case::Churn, _) => timed_cpu(|| tokio_churn(runtime(threads, peer)?, threads, ops))?,
        (Case::Timeout, _) => timed_cpu(|| in_tasks(runtime(threads, peer)?, threads, ops, peer))?,
    };
    Ok(point(case, peer, threads, total, elapsed, cpu))
}

/// Runs `work`, and returns what it returned with the process's CPU time it took.
fn timed_cpu<T>(work: impl FnOnce() -> Result<T, Failure>) -> Result<(T, Duration), Failure> {
    let before = proc::cpu_time()?;
    let result = work()?;
    Ok((result, proc::cpu_time()?.saturating_sub(before)))
}

fn point(
    case: Case,
    peer: Peer,
    threads: usize,
    total: u64,
    elapsed: Duration,
    cpu: Duration,
) -> Report {
    Report::new(Workload::Scaling)
        .label("case", case.name())
        .label("peer", peer.name())
        .count("threads", count(threads))
        .count("ops", total)
        .fixed("secs", elapsed.as_secs_f64(), 3)
        .fixed("mops", mops(total, elapsed), 3)
        .fixed("cpu_ns_per_op", rpc_churn::per_op(cpu, total), 1)
}

/// A multi-thread runtime of `workers` workers with the timer `peer` uses.
fn runtime(workers: usize, peer: Peer) -> Result<Runtime, Failure> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(workers).enable_time();
    #[cfg(tokio_unstable)]
    if peer == Peer::TokioAlt {
        builder.enable_alt_timer();
    }
    let _ = peer;
    builder
        .build()
        .map_err(|error| Failure::new(format!("could not start the tokio runtime: {error}")))
}

/// rpc-churn's loop with `tokio::time::sleep`: one task per worker, each registering a sleep
/// by one poll and dropping the one it replaces (keeping one in a hundred to run out).
/// Returns the time from the first spawn until every task finished.
fn tokio_churn(runtime: Runtime, threads: usize, ops: u64) -> Result<Duration, Failure> {
    let start = Instant::now();
    let ends = runtime.block_on(async {
        let tasks: Vec<_> = (0..threads)
            .map(|index| {
                tokio::spawn(tokio::task::unconstrained(churn_task(
                    ops,
                    Rng::new(STREAM, index),
                )))
            })
            .collect();
        let mut ends = Vec::with_capacity(tasks.len());
        for task in tasks {
            ends.push(task.await);
        }
        ends
    });
    drop(runtime);
    let end = ends
        .into_iter()
        .collect::<Result<Vec<Instant>, _>>()
        .map_err(|error| Failure::new(format!("a churn task failed: {error}")))?
        .into_iter()
        .max()
        .unwrap_or(start);
    Ok(end.saturating_duration_since(start))
}

/// One tokio churn task: returns the instant it finished.
async fn churn_task(ops: u64, mut random: Rng) -> Instant {
    const DELAYS: Delays = Delays::secs(1, 30);
    let mut ring: Vec<Option<Pin<Box<tokio::time::Sleep>>>> = (0..WINDOW).map(|_| None).collect();
    let mut kept = Vec::new();
    std::future::poll_fn(|cx: &mut TaskContext<'_>| {
        for n in 0..ops {
            let slot = &mut ring[(n % WINDOW as u64) as usize];
            if let Some(old) = slot.take() {
                if n % KEEP_EVERY == 0 {
                    kept.push(old);
                }
            }
            let mut sleep = Box::pin(tokio::time::sleep(random.delay(DELAYS)));
            // One poll registers the sleep with the runtime's timer.
            let _ = sleep.as_mut().poll(cx);
            *slot = Some(sleep);
        }
        Poll::Ready(())
    })
    .await;
    Instant::now()
}

/// `threads` workers, 64 tasks each, `ops` iterations per worker in all: each iteration a
/// timeout of `peer` around `yield_now()` (or the yield alone). Returns the time from the
/// first spawn until every task finished.
fn in_tasks(runtime: Runtime, threads: usize, ops: u64, peer: Peer) -> Result<Duration, Failure> {
    let tasks = count(threads) * TASKS_PER_WORKER;
    let per_task = ops.saturating_mul(count(threads)).div_ceil(tasks);
    let start = Instant::now();
    let done = runtime.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|_| tokio::spawn(timeout_task(per_task, peer)))
            .collect();
        let mut ok = true;
        for handle in handles {
            ok &= handle.await.is_ok();
        }
        ok
    });
    let elapsed = start.elapsed();
    drop(runtime);
    if !done {
        return Err(Failure::new("a timeout task failed"));
    }
    Ok(elapsed)
}

async fn timeout_task(iterations: u64, peer: Peer) {
    for _ in 0..iterations {
        match peer {
            Peer::Shardwheel => {
                let _ = shardwheel::timeout(TIMEOUT, tokio::task::yield_now()).await;
            }
            Peer::Tokio | Peer::TokioAlt => {
                let _ = tokio::time::timeout(TIMEOUT, tokio::task::yield_now()).await;
            }
            Peer::None => tokio::task::yield_now().await,
        }
    }
}

/// The summary line: the figures the targets are stated in, at the cpu count.
fn summary(points: &[Report], list: &[usize], cpus: usize) -> Report {
    let find = |case: Case, peer: Peer, threads: usize, key: &str| {
        points
            .iter()
            .find(|p| {
                p.text("case") == Some(case.name())
                    && p.text("peer") == Some(peer.name())
                    && p.number("threads") == Some(threads as f64)
            })
            .and_then(|p| p.number(key))
    };
    let first = list.first().copied().unwrap_or(1);
    let at = if list.contains(&cpus) {
        cpus
    } else {
        list.iter().copied().max().unwrap_or(1)
    };
    let churn = |threads, key| find(Case::Churn, Peer::Shardwheel, threads, key);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => a / b,
        _ => f64::NAN,
    };
    let no_knee = list
        .windows(2)
        .all(|pair| pair[1] > at || ratio(churn(pair[1], "mops"), churn(pair[0], "mops")) >= 1.0);
    let twice = ratio(churn(at * 2, "mops"), churn(at, "mops"));
    let over_floor = match (
        find(Case::Timeout, Peer::Shardwheel, at, "cpu_ns_per_op"),
        find(Case::Timeout, Peer::None, at, "cpu_ns_per_op"),
    ) {
        (Some(timer), Some(floor)) => timer - floor,
        _ => f64::NAN,
    };
    Report::new(Workload::Scaling)
        .label("case", "summary")
        .count("cpus", count(cpus))
        .count("threads", count(at))
        .fixed("churn_mops", churn(at, "mops").unwrap_or(f64::NAN), 3)
        .fixed(
            "churn_speedup",
            ratio(churn(at, "mops"), churn(first, "mops")),
            2,
        )
        .fixed(
            "churn_cpu_ratio",
            ratio(churn(at, "cpu_ns_per_op"), churn(first, "cpu_ns_per_op")),
            2,
        )
        .count("churn_no_knee", u64::from(no_knee))
        .fixed("churn_twice_cpus_ratio", twice, 2)
        .fixed("timeout_cpu_over_floor_ns", over_floor, 1)
        .fixed(
            "timeout_vs_tokio",
            ratio(
                find(Case::Timeout, Peer::Shardwheel, at, "mops"),
                find(Case::Timeout, Peer::Tokio, at, "mops"),
            ),
            2,
        )
        // null without `--cfg tokio_unstable`.
        .fixed(
            "timeout_vs_tokio_alt",
            ratio(
                find(Case::Timeout, Peer::Shardwheel, at, "mops"),
                find(Case::Timeout, Peer::TokioAlt, at, "mops"),
            ),
            2,
        )
}

/// The line of the plot a point belongs to: its case and peer.
fn series_name(point: &Report) -> String {
    format!(
        "{} {}",
        point.text("case").unwrap_or(""),
        point.text("peer").unwrap_or("")
    )
}

/// A point's threads, throughput and CPU per operation.
type Figures = (f64, f64, f64);

/// Writes an SVG of `mops` and `cpu_ns_per_op` against threads, a line per case and peer.
fn plot(path: &Path, points: &[Report], cpus: usize) -> Result<(), Failure> {
    use plotters::prelude::*;

    let fail = |error: &dyn std::fmt::Display| {
        Failure::new(format!("cannot write the plot {}: {error}", path.display()))
    };
    let series: Vec<(String, Vec<Figures>)> = {
        let mut names: Vec<String> = Vec::new();
        for p in points {
            if !names.contains(&series_name(p)) {
                names.push(series_name(p));
            }
        }
        names
            .into_iter()
            .map(|name| {
                let line = points
                    .iter()
                    .filter(|p| series_name(p) == name)
                    .filter_map(|p| {
                        Some((
                            p.number("threads")?,
                            p.number("mops")?,
                            p.number("cpu_ns_per_op")?,
                        ))
                    })
                    .collect();
                (name, line)
            })
            .collect()
    };
    let max_threads = points
        .iter()
        .filter_map(|p| p.number("threads"))
        .fold(1.0, f64::max);
    let max_mops = points
        .iter()
        .filter_map(|p| p.number("mops"))
        .fold(1.0, f64::max);
    let max_cpu = points
        .iter()
        .filter_map(|p| p.number("cpu_ns_per_op"))
        .fold(1.0, f64::max);
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (left, right) = root.split_horizontally(600);
    let panels = [
        (left, "throughput (M ops/s)", max_mops * 1.1, 1usize),
        (right, "CPU per operation (ns)", max_cpu * 1.1, 2usize),
    ];
    for (area, title, top, column) in panels {
        let mut chart = ChartBuilder::on(&area)
            .caption(format!("{title}, {cpus} cpus"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..max_threads * 1.05, 0.0..top)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc("threads")
            .draw()
            .map_err(|e| fail(&e))?;
        for (index, (name, line)) in series.iter().enumerate() {
            let color = Palette99::pick(index).to_rgba();
            let values: Vec<(f64, f64)> = line
                .iter()
                .map(|&(t, m, c)| (t, if column == 1 { m } else { c }))
                .collect();
            chart
                .draw_series(LineSeries::new(values.clone(), color.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            chart
                .draw_series(
                    values
                        .into_iter()
                        .map(|v| Circle::new(v, 3, color.filled())),
                )
                .map_err(|e| fail(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_threads_double_to_the_cpus_then_twice_them() {
        assert_eq!(default_threads(1), vec![1, 2]);
        assert_eq!(default_threads(2), vec![1, 2, 4]);
        assert_eq!(default_threads(12), vec![1, 2, 4, 8, 12, 24]);
        assert_eq!(default_threads(16), vec![1, 2, 4, 8, 16, 32]);
    }
}
