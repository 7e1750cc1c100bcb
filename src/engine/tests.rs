//! Tests of the engine's parts that need a whole engine around them.

use crate::shard::Lane;
use crate::sync::owner_slot;
use crate::TimerEngine;

#[test]
fn a_lane_passes_to_the_next_thread_when_its_owner_exits() {
    // Inline callbacks: no rayon pool, whose deques trip Miri's Stacked Borrows (see
    // `.ci/miri`).
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .pin_threads(false)
        .build()
        .unwrap();
    let lane = engine.lane_of_this_thread().clone();
    let first = {
        let lane = lane.clone();
        std::thread::spawn(move || {
            assert!(
                Lane::ownership(&lane).mine(),
                "the first thread claims the lane"
            );
            lane.counts().add_scheduled(true);
            owner_slot().unwrap()
        })
        .join()
        .unwrap()
    };
    assert!(!lane.counts().has_owner(), "released when the owner exited");
    let lane2 = lane.clone();
    std::thread::spawn(move || {
        assert!(Lane::ownership(&lane2).mine(), "the next thread claims it");
        assert_ne!(owner_slot().unwrap(), first);
        lane2.counts().add_scheduled(true);
    })
    .join()
    .unwrap();
    assert_eq!(
        lane.counts().scheduled(),
        2,
        "the new owner went on from the old count"
    );
    drop(engine);
}

/// Runs `work` on a new thread whose slot puts it on lane `lane` of 2 (see `thread_slot`).
fn on_lane_of_two<T: Send + 'static>(
    lane: usize,
    work: impl FnOnce() -> T + Send + Clone + 'static,
) -> T {
    loop {
        let work = work.clone();
        let done = std::thread::spawn(move || (crate::sync::thread_slot() % 2 == lane).then(work))
            .join()
            .unwrap();
        if let Some(done) = done {
            return done;
        }
    }
}

#[test]
// Needs more timers than the buffer keeps (4,096): minutes under Miri, and no unsafe code of
// its own (the unlinks are exercised under Miri by the smaller tests).
#[cfg_attr(miri, ignore)]
fn a_turn_keeps_the_unlink_buffer_its_busiest_lane_needed() {
    use std::time::Duration;
    let clock = crate::ManualClock::new();
    let (engine, mut shards) = TimerEngine::builder()
        .shards(1)
        .lanes_per_shard(2)
        .inline_callbacks()
        .manual_clock(&clock)
        .build_driven()
        .unwrap();
    let engine = std::sync::Arc::new(engine);
    let shard = &mut shards[0];
    let now = engine.now_tick();
    let many = 20_000;
    for round in 0..2 {
        // Lane 0 places many timers, lane 1 one; the shard takes them in.
        let schedule = |engine: std::sync::Arc<TimerEngine>, count: usize| {
            move || {
                (0..count)
                    .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
                    .collect::<Vec<_>>()
            }
        };
        let busy = on_lane_of_two(0, schedule(engine.clone(), many));
        let quiet = on_lane_of_two(1, schedule(engine.clone(), 1));
        for _ in 0..4 {
            shard.turn(now);
        }
        assert_eq!(engine.stats().shards[0].in_wheel, many as u64 + 1);
        // A cancel asks the timer's own lane to unlink it: the next turn takes lane 0's many,
        // then lane 1's one.
        assert!(busy.iter().chain(&quiet).all(|handle| handle.cancel()));
        shard.turn(now);
        assert_eq!(engine.stats().shards[0].in_wheel, 0);
        assert!(
            shard.unlink_capacity() >= many,
            "round {round}: the buffer kept what lane 0 needed ({} < {many})",
            shard.unlink_capacity()
        );
    }
    engine.shutdown_driven(shards);
}

#[test]
fn a_reset_after_shutdown_is_refused_though_the_sleep_kept_its_timer() {
    use futures::FutureExt;
    use std::time::Duration;

    let clock = crate::ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .inline_callbacks()
        .build()
        .unwrap();
    let mut sleep = engine.sleep(Duration::from_millis(2));
    assert!((&mut sleep).now_or_never().is_none());
    let later = engine.now_tick() + 6;
    // Pushed later, the sleep keeps its timer; shutdown then hands that timer back.
    assert!(sleep.try_reset_to(Some(later)).is_ok());
    drop(engine.shutdown());
    assert!(matches!(
        sleep.try_reset_to(Some(later + 2)),
        Err(crate::shard::Refusal::Shutdown)
    ));
    assert!(sleep.is_elapsed());
}
