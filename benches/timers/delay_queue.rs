//! The `delay_queue` group: shardwheel's `DelayQueue` beside tokio-util's.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use futures::stream::StreamExt;
use shardwheel::{delay_queue::DelayQueue, TimerEngine};

use crate::rpc_delays;

/// Values per `delay_queue` batch.
pub(crate) const DQ_BATCH: usize = 10_000;

/// `delay_queue/<case>/<peer>`, [`DQ_BATCH`] elements per iteration:
///
/// - `insert_remove/shardwheel`, `insert_remove/tokio_util`: insert [`DQ_BATCH`] values with
///   delays uniform in [1 s, 30 s], then remove every one by its key. Only that is timed. One
///   queue per peer, made once. Both hold their entries in a wheel of their own behind one
///   timer (shardwheel's: one engine `Sleep`, moved only when the earliest deadline moves
///   earlier, dropped when the queue empties; tokio-util's: one runtime sleep); a value costs
///   a read of the clock, a slab slot and a list link. Both keep their slab's storage from
///   one batch to the next (shardwheel's, since each batch fills it; tokio-util's never
///   gives it back).
/// - `insert_expire/shardwheel`, `insert_expire/tokio_util`: insert [`DQ_BATCH`] values due
///   1–2 ms ahead (spread evenly over that millisecond), then take values out of the queue as a
///   stream until all have come out. Timed from the first insert to the last value out, so the
///   ~2 ms wait is part of it; what differs between the peers is the inserts and how quickly
///   expired values reach the task (shardwheel: the queue's one engine timer wakes the task,
///   which takes the due slots out of its wheel and yields them sorted by deadline;
///   tokio-util: the runtime's timer wakes the task, which then walks its own wheel).
pub(crate) fn delay_queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("delay_queue");
    group.throughput(Throughput::Elements(DQ_BATCH as u64));
    group.sample_size(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .expect("build the runtime");
    let engine = TimerEngine::builder().build().expect("build the engine");
    let delays = rpc_delays(DQ_BATCH);
    let soon: Vec<Duration> = (0..DQ_BATCH)
        .map(|i| Duration::from_micros(1_000 + (i * 1_000 / DQ_BATCH) as u64))
        .collect();

    let mut queue = DelayQueue::new(&engine);
    let mut keys = Vec::with_capacity(DQ_BATCH);
    group.bench_function(BenchmarkId::new("insert_remove", "shardwheel"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                keys.extend(delays.iter().enumerate().map(|(i, &d)| queue.insert(i, d)));
                for key in keys.drain(..) {
                    black_box(queue.remove(&key).ok());
                }
            }
            start.elapsed()
        })
    });
    group.bench_function(BenchmarkId::new("insert_expire", "shardwheel"), |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    for (i, &d) in soon.iter().enumerate() {
                        queue.insert(i, d);
                    }
                    let mut out = 0;
                    while let Some(expired) = queue.next().await {
                        black_box(expired);
                        out += 1;
                    }
                    assert_eq!(out, DQ_BATCH, "every value comes out");
                }
                start.elapsed()
            })
        })
    });
    drop(queue);
    drop(engine.shutdown());

    let mut queue = runtime.block_on(async { tokio_util::time::DelayQueue::new() });
    let mut keys = Vec::with_capacity(DQ_BATCH);
    group.bench_function(BenchmarkId::new("insert_remove", "tokio_util"), |b| {
        b.iter_custom(|iters| {
            let _context = runtime.enter();
            let start = Instant::now();
            for _ in 0..iters {
                keys.extend(delays.iter().enumerate().map(|(i, &d)| queue.insert(i, d)));
                for key in keys.drain(..) {
                    black_box(queue.remove(&key));
                }
            }
            start.elapsed()
        })
    });
    group.bench_function(BenchmarkId::new("insert_expire", "tokio_util"), |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    for (i, &d) in soon.iter().enumerate() {
                        queue.insert(i, d);
                    }
                    let mut out = 0;
                    while let Some(expired) = queue.next().await {
                        black_box(expired);
                        out += 1;
                    }
                    assert_eq!(out, DQ_BATCH, "every value comes out");
                }
                start.elapsed()
            })
        })
    });
    drop(queue);
    runtime.shutdown_timeout(Duration::from_secs(5));
    group.finish();
}
