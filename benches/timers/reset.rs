//! The `reset` group: pushing a pending timer's deadline later.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use shardwheel::TimerEngine;

use crate::peers::Tokio;
use crate::{rpc_delays, Local, Peer, BATCH};

/// Pushing a pending timer's deadline later, as a connection does on every read: shardwheel's
/// `reset` (one CAS), shardwheel's cancel + schedule of a new timer, and tokio's
/// `Sleep::reset`. Only the moving is timed.
pub(crate) fn reset(c: &mut Criterion) {
    let delays = rpc_delays(BATCH);
    let later: Vec<Duration> = delays
        .iter()
        .map(|d| *d + Duration::from_secs(30))
        .collect();
    let mut group = c.benchmark_group("reset");
    group.throughput(Throughput::Elements(BATCH as u64));

    let engine = TimerEngine::builder().build().expect("build the engine");
    group.bench_function("shardwheel_reset", |b| {
        b.iter_custom(|iters| {
            let handles: Vec<_> = delays
                .iter()
                .map(|&d| engine.schedule(d, || {}).expect("schedule"))
                .collect();
            let start = Instant::now();
            for _ in 0..iters {
                for (handle, &delay) in handles.iter().zip(&later) {
                    black_box(handle.reset(delay));
                }
            }
            let took = start.elapsed();
            for handle in &handles {
                handle.cancel();
            }
            took
        })
    });
    group.bench_function("shardwheel_cancel_schedule", |b| {
        b.iter_custom(|iters| {
            let mut handles: Vec<_> = delays
                .iter()
                .map(|&d| engine.schedule(d, || {}).expect("schedule"))
                .collect();
            let start = Instant::now();
            for _ in 0..iters {
                for (handle, &delay) in handles.iter_mut().zip(&later) {
                    handle.cancel();
                    *handle = engine.schedule(delay, || {}).expect("schedule");
                }
            }
            let took = start.elapsed();
            for handle in &handles {
                handle.cancel();
            }
            took
        })
    });
    drop(engine.shutdown());

    let tokio = Tokio::start();
    group.bench_function("tokio_sleep_reset", |b| {
        b.iter_custom(|iters| {
            tokio.enter(|| {
                let mut local = tokio.local();
                let mut sleeps: Vec<_> = delays.iter().map(|&d| local.schedule(d)).collect();
                let start = Instant::now();
                for _ in 0..iters {
                    for (sleep, &delay) in sleeps.iter_mut().zip(&later) {
                        sleep.as_mut().reset(tokio::time::Instant::now() + delay);
                    }
                }
                start.elapsed()
            })
        })
    });
    tokio.shutdown();
    group.finish();
}
