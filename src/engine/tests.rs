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
