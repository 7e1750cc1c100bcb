//! The groups `schedule`, `cancel`, `schedule_cancel`, `fire` and `fire_burst`, every peer in each.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};

use crate::patterns::{bench_cancel, bench_churn, bench_fire, bench_fire_burst, bench_schedule};
use crate::peers::{FuturesTimer, HashWheel, MutexHeapTimer, Shardwheel, Tokio};
use crate::{delays, rpc_delays, BATCH, BURST, CHURN_DELAYS, FIRE_BATCH};

pub(crate) fn schedule(c: &mut Criterion) {
    let delays = rpc_delays(BATCH);
    let mut group = c.benchmark_group("schedule");
    group.throughput(Throughput::Elements(BATCH as u64));
    bench_schedule(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_schedule(&mut group, "tokio", Tokio::start(), &delays);
    bench_schedule(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_schedule(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_schedule(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

pub(crate) fn cancel(c: &mut Criterion) {
    let delays = rpc_delays(BATCH);
    let mut group = c.benchmark_group("cancel");
    group.throughput(Throughput::Elements(BATCH as u64));
    bench_cancel(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_cancel(&mut group, "tokio", Tokio::start(), &delays);
    bench_cancel(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_cancel(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_cancel(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

pub(crate) fn schedule_cancel(c: &mut Criterion) {
    let delays = rpc_delays(CHURN_DELAYS);
    let mut group = c.benchmark_group("schedule_cancel");
    bench_churn(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_churn(&mut group, "tokio", Tokio::start(), &delays);
    bench_churn(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_churn(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_churn(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

pub(crate) fn fire(c: &mut Criterion) {
    let delays = delays(
        FIRE_BATCH,
        0xF12E,
        Duration::from_millis(1),
        Duration::from_millis(3),
    );
    let mut group = c.benchmark_group("fire");
    group.throughput(Throughput::Elements(FIRE_BATCH as u64));
    bench_fire(&mut group, "shardwheel", Shardwheel::start(false), &delays);
    bench_fire(
        &mut group,
        "shardwheel_inline",
        Shardwheel::start(true),
        &delays,
    );
    bench_fire(&mut group, "tokio", Tokio::start(), &delays);
    bench_fire(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
        &delays,
    );
    bench_fire(&mut group, "futures_timer", FuturesTimer, &delays);
    bench_fire(&mut group, "mutex_heap", MutexHeapTimer::start(), &delays);
    group.finish();
}

/// A burst: every timer due at one instant, timed from it to the last callback.
pub(crate) fn fire_burst(c: &mut Criterion) {
    let mut group = c.benchmark_group("fire_burst");
    group.throughput(Throughput::Elements(BURST as u64));
    group.sampling_mode(SamplingMode::Flat);
    bench_fire_burst(&mut group, "shardwheel", Shardwheel::start(false));
    bench_fire_burst(&mut group, "shardwheel_inline", Shardwheel::start(true));
    bench_fire_burst(&mut group, "tokio", Tokio::start());
    bench_fire_burst(
        &mut group,
        "hierarchical_hash_wheel_timer",
        HashWheel::start(),
    );
    bench_fire_burst(&mut group, "futures_timer", FuturesTimer);
    bench_fire_burst(&mut group, "mutex_heap", MutexHeapTimer::start());
    group.finish();
}
