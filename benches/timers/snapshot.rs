//! The `snapshot` group: `TimerEngine::pending_timers` on an engine of one shard that holds
//! [`MILLION`] idle timers (due in 1-2 h), with sites off (`1m`: its shard walks its wheel
//! between turns) and on (`1m_sites`: the lanes' origins are read, no shard asked). Beside
//! them a repeating timer fires every tick; after each, the bench prints that timer's lateness
//! while the snapshots were taken, from the engine's own `Stats::lateness`, and over a second
//! without snapshots before: how far the snapshots delayed ticking. Then `churn` and
//! `churn_sites`: the `schedule_cancel` pattern on a default engine without and with
//! `track_sites`, what tracking costs a schedule and a cancel.

use std::thread;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use shardwheel::stats::Lateness;
use shardwheel::TimerEngine;

use crate::patterns::bench_churn;
use crate::peers::Shardwheel;
use crate::{delays, rpc_delays, CHURN_DELAYS};

/// Timers pending while the snapshots are taken.
const MILLION: usize = 1_000_000;

/// How the timer due every tick fared over a window (nothing if it did not fire: the bench was
/// filtered out).
fn report(what: &str, window: &Lateness) {
    if window.count() == 0 {
        return;
    }
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    eprintln!(
        "{what}: the timer due every tick fired {} times, lateness p50 <= {:.3} ms, \
         p99 <= {:.3} ms, max {:.3} ms",
        window.count(),
        ms(window.p50()),
        ms(window.p99()),
        ms(Some(window.max())),
    );
}

pub(crate) fn snapshot(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    group.sampling_mode(SamplingMode::Flat);
    let idle = delays(
        MILLION,
        0x5A,
        Duration::from_secs(3600),
        Duration::from_secs(7200),
    );
    for (name, track) in [("1m", false), ("1m_sites", true)] {
        let engine = TimerEngine::builder()
            .shards(1)
            .track_sites(track)
            .build()
            .expect("build the engine");
        let handles: Vec<_> = (idle.iter())
            .map(|&delay| engine.schedule(delay, || {}).expect("schedule"))
            .collect();
        let give_up = Instant::now() + Duration::from_secs(30);
        while engine.stats().shards[0].in_wheel < MILLION as u64 {
            assert!(Instant::now() < give_up, "the timers were not linked");
            thread::sleep(Duration::from_millis(20));
        }
        let every_tick = (engine.repeating(engine.tick()).schedule(|| {})).expect("schedule");
        let before = engine.stats().lateness;
        thread::sleep(Duration::from_secs(1));
        report(
            &format!("snapshot/{name}, a second without snapshots"),
            &engine.stats().lateness.since(&before),
        );
        let before = engine.stats().lateness;
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let snapshot = engine.pending_timers().expect("a snapshot");
                    total += start.elapsed();
                    assert!(snapshot.timers.len() >= MILLION);
                }
                total
            })
        });
        report(
            &format!("snapshot/{name}, during the snapshots"),
            &engine.stats().lateness.since(&before),
        );
        every_tick.cancel();
        drop(handles);
        engine.shutdown();
    }
    let delays = rpc_delays(CHURN_DELAYS);
    bench_churn(&mut group, "churn", Shardwheel::start(false), &delays);
    bench_churn(&mut group, "churn_sites", Shardwheel::tracked(), &delays);
    group.finish();
}
