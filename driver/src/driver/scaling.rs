//! scaling: how throughput and CPU per operation grow with threads, beside `tokio::time` on
//! the same threads. Not one of the five: it runs only when named.
//!
//! Each point is one (case, peer, thread count): `churn` is rpc-churn's loop, `timeout` a
//! timeout around a yield in tasks of a multi-thread tokio runtime, where pingora-timeout's
//! timer runs too. Every point's CPU is the whole process's, over the timed part, per
//! operation.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use super::plot::plot;
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
    /// pingora-timeout's `fast_timeout`: lazy timers shared per 10 ms bucket of each thread,
    /// fired by a thread of its own (the timeout case only).
    Pingora,
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
            peers.extend([Peer::Pingora, Peer::None]);
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
            Peer::Pingora => "pingora-timeout",
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
            Peer::Pingora => {
                let _ =
                    pingora_timeout::fast_timeout::fast_timeout(TIMEOUT, tokio::task::yield_now())
                        .await;
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
    // shardwheel's timeout throughput over `peer`'s.
    let timeout_vs = |peer: Peer| {
        ratio(
            find(Case::Timeout, Peer::Shardwheel, at, "mops"),
            find(Case::Timeout, peer, at, "mops"),
        )
    };
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
        .fixed("timeout_vs_tokio", timeout_vs(Peer::Tokio), 2)
        // null without `--cfg tokio_unstable`.
        .fixed("timeout_vs_tokio_alt", timeout_vs(Peer::TokioAlt), 2)
        .fixed("timeout_vs_pingora", timeout_vs(Peer::Pingora), 2)
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

    #[test]
    fn pingora_timeout_is_a_peer_of_the_timeout_case_only() {
        let names: Vec<_> = Case::Timeout.peers().into_iter().map(Peer::name).collect();
        assert!(names.ends_with(&["pingora-timeout", "none"]), "{names:?}");
        assert!(!Case::Churn.peers().contains(&Peer::Pingora));
    }

    #[test]
    fn the_summary_sets_shardwheel_s_timeout_against_each_peer_s() {
        let timed = |peer, secs| {
            let elapsed = Duration::from_secs_f64(secs);
            point(Case::Timeout, peer, 2, 1_000_000, elapsed, Duration::ZERO)
        };
        let points = [timed(Peer::Shardwheel, 0.5), timed(Peer::Pingora, 1.5)];
        let summary = summary(&points, &[2], 2);
        assert_eq!(summary.number("timeout_vs_pingora"), Some(3.0));
        assert_eq!(summary.number("timeout_vs_tokio"), None, "no tokio point");
    }
}
