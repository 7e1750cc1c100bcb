//! `DelayQueue`'s own timing wheel under a manual clock: values on every level, cascading
//! order, removes and resets in every level, far values, a refused re-arm, and a property test
//! against a model of (deadline, insertion) pairs with deadlines from milliseconds to weeks.

mod support;

use std::task::Poll;
use std::time::Duration;

use proptest::prelude::*;
use shardwheel::{DelayQueue, InsertError, ManualClock, TimerEngine};
use support::delay::{check_against_model, counting, drain, op, poll, secs, values};
use support::manual;

const fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// Delays from a millisecond to a month: one or more per level of the queue's wheel.
const SPREAD_MS: [u64; 10] = [
    1,
    40,
    3_000,
    70_000,
    3_600_000,
    5 * 3_600_000,
    2 * 86_400_000,
    30 * 86_400_000,
    63,
    4_097,
];

#[test]
fn values_across_the_wheel_s_levels_come_out_at_their_deadlines() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    for delay in SPREAD_MS {
        queue.insert(delay, ms(delay));
    }
    let mut sorted = SPREAD_MS;
    sorted.sort_unstable();
    let mut now = 0;
    for delay in sorted {
        clock.advance(ms(delay - 1 - now));
        assert!(drain(&mut queue).is_empty(), "{delay} ms came out early");
        clock.advance(ms(1));
        now = delay;
        let out = drain(&mut queue);
        assert_eq!(values(out), [delay]);
    }
    assert!(queue.is_empty());
    assert_eq!(engine.pending(), 0);
}

#[test]
fn a_cascaded_slot_comes_out_in_deadline_then_insertion_order() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    // Deadlines a few hours away, close together: they share a slot of a high level and move
    // down as it is reached. Equal deadlines keep their insertion order.
    let base = 3 * 3_600_000;
    let offsets = [500, 3, 500, 70_000, 0, 3, 64, 4_096, 0];
    for (i, offset) in offsets.iter().enumerate() {
        queue.insert((*offset, i), ms(base + offset));
    }
    clock.advance(ms(base + 70_000));
    let mut expected: Vec<(u64, usize)> = offsets.iter().copied().zip(0..).collect();
    expected.sort_unstable();
    assert_eq!(values(drain(&mut queue)), expected);
}

#[test]
fn removes_and_resets_reach_every_level() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let keys: Vec<_> = SPREAD_MS
        .iter()
        .map(|&delay| queue.insert(delay, ms(delay)))
        .collect();
    // Remove a third of the values, move a third a minute later and the rest nearer.
    let mut expected = Vec::new();
    for (n, (key, delay)) in keys.iter().zip(SPREAD_MS).enumerate() {
        match n % 3 {
            0 => assert_eq!(queue.remove(key), Ok(delay)),
            1 => {
                queue.reset(key, ms(delay + 60_000)).unwrap();
                expected.push((delay + 60_000, delay));
            }
            _ => {
                queue.reset(key, ms(delay / 2 + 1)).unwrap();
                expected.push((delay / 2 + 1, delay));
            }
        }
    }
    expected.sort_unstable();
    let mut now = 0;
    for (due, value) in expected {
        clock.advance(ms(due - 1 - now));
        assert!(drain(&mut queue).is_empty(), "{value} came out early");
        clock.advance(ms(1));
        now = due;
        assert_eq!(values(drain(&mut queue)), [value]);
    }
    assert!(queue.is_empty());
}

#[test]
fn a_far_value_comes_out_only_at_shutdown() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let max = engine.max_delay();
    queue.insert("far", max + secs(1));
    queue.insert("near", secs(1));
    assert!(matches!(
        queue.try_insert("refused", max + secs(1)),
        Err(InsertError::DelayTooLong("refused"))
    ));
    clock.advance(secs(1));
    assert_eq!(values(drain(&mut queue)), ["near"]);
    clock.advance(max + secs(10));
    assert!(
        drain(&mut queue).is_empty(),
        "the far value waits for the shutdown"
    );
    assert_eq!(engine.pending(), 1, "behind one stand-in timer");
    let (count, waker) = counting();
    assert!(poll(&mut queue, &waker).is_pending());
    drop(engine.shutdown());
    assert_eq!(count.count(), 1);
    assert_eq!(values(drain(&mut queue)), ["far"]);
}

#[test]
fn a_refused_rearm_brings_the_earliest_values_out() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(1)
        .max_pending(1)
        .build()
        .unwrap();
    let mut queue = DelayQueue::new(&engine);
    queue.insert("first", secs(1));
    queue.insert("second", secs(2));
    // The queue's timer fires; another timer takes the engine's one place before the queue
    // re-arms, so the poll that would re-arm brings the next value out instead of hanging.
    clock.advance(secs(1));
    let waker = futures::task::noop_waker();
    assert!(matches!(poll(&mut queue, &waker), Poll::Ready(Some(e)) if *e.get_ref() == "first"));
    let mut blocker = None;
    for _ in 0..1000 {
        match engine.schedule(secs(100), || {}) {
            Ok(timer) => {
                blocker = Some(timer);
                break;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    assert!(blocker.is_some(), "the fired timer's place came back");
    assert_eq!(values(drain(&mut queue)), ["second"]);
    assert!(queue.is_empty());
}

/// A delay spread over the wheel's levels: 1 ms to about 50 days, log-uniform.
fn wide_delay() -> impl Strategy<Value = u64> + Clone {
    (0u32..32, any::<u64>()).prop_map(|(bits, x)| 1 + x % (1u64 << bits))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 64 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The queue against the model of `check_against_model`, with deadlines and steps of the
    /// clock spread over every level of the wheel.
    #[test]
    fn the_queue_matches_a_model_across_levels(ops in proptest::collection::vec(op(wide_delay(), wide_delay()), 1..80)) {
        check_against_model(ops)?;
    }
}
