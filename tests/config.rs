//! The builder's settings: the ones it refuses, and pinning the tick threads to cpus.

use std::thread;
use std::time::Duration;

use shardwheel::engine::BuildError;
use shardwheel::TimerEngine;

/// The cpu each of `engine`'s tick threads is pinned to, in shard order.
fn pinned_cpus(engine: &TimerEngine) -> Vec<Option<usize>> {
    engine
        .stats()
        .shards
        .iter()
        .map(|shard| shard.pinned_cpu)
        .collect()
}

#[test]
fn the_builder_refuses_zero_settings() {
    assert!(matches!(
        TimerEngine::builder().shards(0).build(),
        Err(BuildError::ZeroShards)
    ));
    assert!(matches!(
        TimerEngine::builder().tick(Duration::ZERO).build(),
        Err(BuildError::TickTooShort)
    ));
    assert!(matches!(
        TimerEngine::builder().callback_threads(0).build(),
        Err(BuildError::ZeroCallbackThreads)
    ));
    assert!(matches!(
        TimerEngine::builder().max_pending(0).build(),
        Err(BuildError::ZeroMaxPending)
    ));
}

#[test]
fn the_builder_refuses_settings_too_large() {
    assert!(matches!(
        TimerEngine::builder().shards(usize::MAX).build(),
        Err(BuildError::TooManyShards)
    ));
    assert!(matches!(
        TimerEngine::builder().callback_threads(usize::MAX).build(),
        Err(BuildError::TooManyCallbackThreads)
    ));
    assert!(matches!(
        TimerEngine::builder().tick(Duration::MAX).build(),
        Err(BuildError::TickTooLong)
    ));
}

/// Whether this system lets a thread pin itself to a cpu.
fn pinning_works() -> bool {
    thread::spawn(|| {
        core_affinity::get_core_ids()
            .and_then(|ids| ids.first().copied())
            .is_some_and(core_affinity::set_for_current)
    })
    .join()
    .unwrap()
}

#[test]
fn the_stats_say_where_each_tick_thread_is_pinned_as_soon_as_build_returns() {
    if !pinning_works() {
        return; // pinning refused here: the stats say None, which other tests cover
    }
    let cpus = core_affinity::get_core_ids().unwrap();
    for _ in 0..20 {
        let engine = TimerEngine::builder()
            .shards(2)
            .pin_threads(true)
            .build()
            .unwrap();
        let pinned = pinned_cpus(&engine);
        let expected: Vec<_> = (0..2).map(|i| Some(cpus[i % cpus.len()].id)).collect();
        assert_eq!(
            pinned, expected,
            "each tick thread pinned before build returns"
        );
    }
}

#[test]
fn tick_threads_are_not_pinned_unless_asked() {
    let engine = TimerEngine::builder().shards(2).build().unwrap();
    assert_eq!(pinned_cpus(&engine), vec![None, None]);
}
