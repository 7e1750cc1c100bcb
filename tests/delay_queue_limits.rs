//! `DelayQueue` at the engine's limits and across its wheel's levels: a deadline beyond the
//! engine's range, shutdown, a full engine, every level of the wheel, and the queue against a
//! model of deadlines.

mod support;
use support::delay::{check_against_model, drain, op, poll, secs, values};
use support::{counting, manual};

use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use shardwheel::delay_queue::DelayQueue;
use shardwheel::{ManualClock, ScheduleError, TimerEngine};

#[test]
fn a_deadline_beyond_the_engine_s_range_expires_only_at_shutdown() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let max = engine.max_delay();

    queue.insert("edge", max);
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    assert_eq!(engine.pending(), 1);
    let far = queue.insert("far", max * 2);
    let forever = queue.insert("forever", Duration::MAX);
    assert_eq!(engine.pending(), 1, "the queue holds one timer");
    assert_eq!(queue.deadline(&far), Some(clock.now() + max * 2));
    assert_eq!(queue.deadline(&forever), None);
    assert!(queue.contains(&forever));
    assert_eq!(queue.len(), 3);

    assert!(matches!(
        queue.try_insert("far", max * 2),
        Err(ScheduleError::DelayTooLong("far"))
    ));
    assert!(matches!(
        queue.try_insert("forever", Duration::MAX),
        Err(ScheduleError::DelayTooLong("forever"))
    ));
    assert_eq!(queue.len(), 3);

    // Past the farthest deadline the engine takes: the edge value expires; the far ones stay,
    // behind a stand-in timer (renewed as it comes due).
    clock.advance(max + secs(1));
    assert_eq!(values(drain(&mut queue)), ["edge"]);
    assert_eq!(queue.len(), 2);
    assert_eq!(engine.pending(), 1);
    assert!(drain(&mut queue).is_empty());

    // Reset into range, a value expires; reset out of range, it gets a stand-in again.
    queue.reset(&far, secs(1)).unwrap();
    let edge = queue.insert("edge", secs(1));
    queue.reset(&edge, Duration::MAX).unwrap();
    assert_eq!(engine.pending(), 1);
    clock.advance(secs(1));
    assert_eq!(values(drain(&mut queue)), ["far"]);

    // A task waiting on the queue is woken by the shutdown, and the rest come out.
    let (count, waker) = counting();
    assert!(poll(&mut queue, &waker).is_pending());
    drop(engine.shutdown());
    assert!(count.count() >= 1, "the shutdown woke the waiting task");
    let mut rest = values(drain(&mut queue));
    rest.sort_unstable();
    assert_eq!(rest, ["edge", "forever"]);
    assert!(queue.is_empty());
    // After the shutdown, a far value is due at once, as any other.
    queue.insert("late", Duration::MAX);
    assert_eq!(values(drain(&mut queue)), ["late"]);
}

#[test]
fn inserts_after_shutdown_are_handed_back_or_due_at_once() {
    let (_clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let pending = queue.insert(String::from("pending"), secs(60));
    let (count, waker) = counting();
    assert!(poll(&mut queue, &waker).is_pending());
    // The timers handed back are kept, not run or dropped, so they record nothing yet.
    let unfired = engine.shutdown();
    assert_eq!(unfired.len(), 1);
    assert_eq!(count.count(), 0);

    match queue.try_insert(String::from("kept"), secs(1)) {
        Err(ScheduleError::Shutdown(value)) => assert_eq!(value, "kept"),
        other => panic!("expected Shutdown, got {other:?}"),
    }
    assert!(matches!(
        queue.try_insert_at(1.to_string(), Instant::now()),
        Err(ScheduleError::Shutdown(_))
    ));
    assert_eq!(queue.len(), 1);

    // `insert` keeps the value as due at once, and wakes the waiting task.
    let soon = queue.insert(String::from("soon"), secs(30));
    assert_eq!(count.count(), 1);
    // A reset the engine refuses: due at once as well.
    queue.reset(&pending, secs(90)).unwrap();
    let out = drain(&mut queue);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].key(), soon);
    assert_eq!(out[1].key(), pending);
    assert!(queue.is_empty());

    // The old timer's record, once its callback is dropped, names a stale arm.
    drop(unfired);
    assert!(drain(&mut queue).is_empty());
}

#[test]
fn values_pending_at_shutdown_come_out() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    queue.insert("a", secs(10));
    queue.insert("b", secs(5));
    let (count, waker) = counting();
    assert!(poll(&mut queue, &waker).is_pending());
    let deadline_b = clock.now() + secs(5);
    // Dropping the engine drops the timers it handed back.
    drop(engine);
    assert_eq!(count.count(), 1);
    let out = drain(&mut queue);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].deadline(), deadline_b);
    assert_eq!(out[0].get_ref(), &"b");
    // The queue still works without its engine: an insert is due at once.
    queue.insert("c", secs(1));
    assert_eq!(values(drain(&mut queue)), ["c"]);
}

/// An engine of one shard on a new manual clock that holds at most one timer.
fn one_shard_one_permit() -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(1)
        .max_pending(1)
        .build()
        .unwrap();
    (clock, engine)
}

#[test]
fn a_full_engine_refuses_and_insert_makes_the_value_due_at_once() {
    let (clock, engine) = one_shard_one_permit();
    // One queue takes the engine's one permit, and holds any number of values on it.
    let mut queue = DelayQueue::new(&engine);
    let held = queue.try_insert("held", secs(10)).unwrap();
    queue.try_insert("later", secs(20)).unwrap();
    queue.try_insert("sooner", secs(5)).unwrap();
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    assert_eq!(engine.pending(), 1);
    // Another queue cannot arm a timer.
    let mut other = DelayQueue::new(&engine);
    assert!(matches!(
        other.try_insert("refused", secs(10)),
        Err(ScheduleError::Full("refused"))
    ));
    assert!(other.is_empty());
    other.insert("due at once", secs(10));
    assert_eq!(values(drain(&mut other)), ["due at once"]);
    assert!(queue.contains(&held));
    clock.advance(secs(20));
    assert_eq!(values(drain(&mut queue)), ["sooner", "held", "later"]);
}

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
        Err(ScheduleError::DelayTooLong("refused"))
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
    let (clock, engine) = one_shard_one_permit();
    let mut queue = DelayQueue::new(&engine);
    queue.insert("first", secs(1));
    queue.insert("second", secs(2));
    // The queue's timer fires; another timer takes the engine's one permit before the queue
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
    assert!(blocker.is_some(), "the fired timer's permit came back");
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

    /// The queue against the model of `check_against_model`, with delays and steps of the
    /// clock up to 200 ms (delays of at least 1 ms).
    #[test]
    fn the_queue_matches_a_model_of_deadlines(ops in proptest::collection::vec(op(1u64..200, 0u64..150), 1..60)) {
        check_against_model(ops)?;
    }

    /// The queue against the model of `check_against_model`, with deadlines and steps of the
    /// clock spread over every level of the wheel.
    #[test]
    fn the_queue_matches_a_model_of_deadlines_across_its_levels(ops in proptest::collection::vec(op(wide_delay(), wide_delay()), 1..80)) {
        check_against_model(ops)?;
    }
}

#[test]
fn a_stale_key_s_error_says_so_and_a_refused_insert_hands_its_value_back() {
    let (_clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let key = queue.insert(1, secs(60));
    queue.clear();
    let err = queue.reset(&key, secs(1)).unwrap_err();
    assert_eq!(err.to_string(), "no value in the delay queue has this key");
    let refused = queue.try_insert(7, Duration::MAX).unwrap_err();
    assert_eq!(refused.kind(), shardwheel::ScheduleErrorKind::DelayTooLong);
    assert_eq!(refused.into_inner(), 7);
}
