//! `DelayQueue`: the order values come out in, removes and resets, waking, storage, streams.
//! Its limits and levels are in `delay_queue_limits.rs`.

mod support;
use support::delay::{drain, poll, secs, values};
use support::{counting, manual};

use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use futures::StreamExt;
use shardwheel::delay_queue::{DelayQueue, Expired};
use shardwheel::TimerEngine;

#[test]
fn a_batch_comes_out_soonest_deadline_first() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    for (value, delay) in [("c", 3), ("a", 1), ("d", 4), ("b", 2)] {
        queue.insert(value, secs(delay));
    }
    assert!(drain(&mut queue).is_empty());
    clock.advance(secs(4));
    assert_eq!(values(drain(&mut queue)), ["a", "b", "c", "d"]);
    assert!(queue.is_empty());
}

#[test]
fn deadlines_within_one_tick_come_out_in_deadline_order() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let start = clock.now();
    for micros in [300, 100, 200, 900, 500] {
        queue.insert_at(micros, start + Duration::from_micros(micros));
    }
    // All five are due within the engine's first 1 ms tick, so they fire together.
    clock.advance(Duration::from_millis(1));
    let expired = drain(&mut queue);
    let deadlines: Vec<Duration> = expired.iter().map(|e| e.deadline() - start).collect();
    assert_eq!(values(expired), [100, 200, 300, 500, 900]);
    assert_eq!(
        deadlines,
        [100, 200, 300, 500, 900].map(Duration::from_micros)
    );
}

#[test]
fn equal_deadlines_come_out_in_insertion_order() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let at = clock.now() + secs(1);
    for i in 0..200 {
        queue.insert_at(i, at);
    }
    clock.advance(secs(1));
    assert_eq!(values(drain(&mut queue)), (0..200).collect::<Vec<_>>());
}

#[test]
fn peek_names_the_value_that_comes_out_next() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    assert_eq!(queue.peek(), None);
    let keys = [3, 1, 2, 1].map(|delay| queue.insert(delay, secs(delay)));
    // The earliest deadline, the first inserted of the two at 1 s.
    assert_eq!(queue.peek(), Some(keys[1]));
    queue.reset(&keys[1], secs(5)).unwrap();
    assert_eq!(queue.peek(), Some(keys[3]));
    clock.advance(secs(3));
    // Three are due: taken out one at a time, each is named before it comes out, whether it
    // waits in the wheel or among the values already taken out of it.
    let waker = futures::task::noop_waker();
    for _ in 0..3 {
        let next = queue.peek();
        let Poll::Ready(Some(expired)) = poll(&mut queue, &waker) else {
            panic!("a value is due");
        };
        assert_eq!(Some(expired.key()), next);
    }
    assert_eq!(queue.peek(), Some(keys[1]), "the one reset to 5 s is left");
    queue.remove(&keys[1]).unwrap();
    assert_eq!(queue.peek(), None);
}

#[test]
fn nothing_comes_out_before_its_deadline() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let key = queue.insert("x", secs(1));
    clock.advance(Duration::from_millis(999));
    let waker = futures::task::noop_waker();
    assert!(poll(&mut queue, &waker).is_pending());
    clock.advance(Duration::from_millis(1));
    let expired = drain(&mut queue);
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].key(), key);
    assert_eq!(expired[0].deadline(), clock.now());
    assert!(matches!(poll(&mut queue, &waker), Poll::Ready(None)));
}

#[test]
fn an_expiry_wakes_the_waiting_task() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    queue.insert(1, secs(1));
    queue.insert(2, secs(1));
    let (count, waker) = counting();
    assert!(poll(&mut queue, &waker).is_pending());
    assert_eq!(count.count(), 0);
    clock.advance(secs(1));
    // Both timers fired; the first record took the waker.
    assert_eq!(count.count(), 1);
    assert_eq!(values(drain(&mut queue)), [1, 2]);
}

#[test]
fn a_removed_value_never_comes_out() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let a = queue.insert("a", secs(1));
    let b = queue.insert("b", secs(2));
    queue.insert("c", secs(3));
    assert_eq!(engine.pending(), 0, "no timer until the queue is polled");
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    // Then the queue holds one engine timer, however many values it holds.
    assert_eq!(engine.pending(), 1);
    assert_eq!(queue.remove(&b), Ok("b"));
    assert_eq!(engine.pending(), 1);
    clock.advance(secs(1));
    // Removed after its timer fired, before it was yielded.
    assert_eq!(queue.remove(&a), Ok("a"));
    clock.advance(secs(2));
    assert_eq!(values(drain(&mut queue)), ["c"]);
}

#[test]
fn a_reset_moves_the_deadline_earlier_or_later() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let earlier = queue.insert("earlier", secs(10));
    let later = queue.insert("later", secs(2));
    queue.reset(&earlier, secs(1)).unwrap();
    queue.reset(&later, secs(20)).unwrap();
    assert_eq!(queue.deadline(&earlier), Some(clock.now() + secs(1)));
    assert_eq!(queue.deadline(&later), Some(clock.now() + secs(20)));
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    // The queue's one timer, at its earliest deadline.
    assert_eq!(engine.pending(), 1);
    clock.advance(secs(1));
    assert_eq!(values(drain(&mut queue)), ["earlier"]);
    clock.advance(secs(9));
    assert!(drain(&mut queue).is_empty());
    clock.advance(secs(10));
    assert_eq!(values(drain(&mut queue)), ["later"]);
}

#[test]
fn a_reset_after_expiry_before_the_poll_holds_the_value_again() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    // Fired, not yet taken in: reset to t = 6 s.
    let x = queue.insert("x", secs(1));
    clock.advance(secs(1));
    queue.reset(&x, secs(5)).unwrap();
    assert!(drain(&mut queue).is_empty());

    // Fired and taken in by a poll, not yet yielded: reset to t = 4 s.
    queue.insert("y", secs(1));
    let z = queue.insert("z", secs(1));
    clock.advance(secs(1));
    let waker = futures::task::noop_waker();
    assert!(matches!(poll(&mut queue, &waker), Poll::Ready(Some(e)) if *e.get_ref() == "y"));
    queue.reset(&z, secs(2)).unwrap();
    assert!(drain(&mut queue).is_empty());

    clock.advance(secs(2));
    let out = drain(&mut queue);
    assert_eq!(out.len(), 1, "z comes out once, at its new deadline");
    assert_eq!((out[0].key(), out[0].deadline()), (z, clock.now()));
    clock.advance(secs(2));
    let out = drain(&mut queue);
    assert_eq!(out.len(), 1, "x comes out once, at its new deadline");
    assert_eq!((out[0].key(), out[0].deadline()), (x, clock.now()));
    assert!(queue.is_empty());
}

#[test]
fn a_reset_to_now_or_past_expires_on_the_next_turn() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let key = queue.insert("x", secs(60));
    queue
        .reset_at(&key, clock.now() - Duration::from_millis(5))
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(values(drain(&mut queue)), ["x"]);
}

#[test]
fn a_stale_key_reaches_nothing() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);

    // After a remove.
    let removed = queue.insert(1, secs(5));
    queue.remove(&removed).unwrap();
    assert!(queue.remove(&removed).is_err());
    assert!(queue.reset(&removed, secs(1)).is_err());
    assert!(queue.reset_at(&removed, clock.now()).is_err());
    assert_eq!(queue.deadline(&removed), None);
    assert!(!queue.contains(&removed));

    // After its slot was reused.
    let reused = queue.insert(2, secs(5));
    assert_eq!(
        format!("{removed:?}").split('#').next(),
        format!("{reused:?}").split('#').next()
    );
    assert_ne!(removed, reused);
    assert!(queue.remove(&removed).is_err());
    assert!(queue.reset(&removed, secs(1)).is_err());
    assert_eq!(queue.deadline(&reused), Some(clock.now() + secs(5)));

    // After it expired and was yielded.
    clock.advance(secs(5));
    let expired = drain(&mut queue);
    assert_eq!(expired[0].key(), reused);
    assert!(queue.remove(&reused).is_err());

    // After a clear, and after the storage was released and grown again.
    let cleared: Vec<_> = (0..10).map(|i| queue.insert(i, secs(5))).collect();
    queue.clear();
    let fresh: Vec<_> = (10..20).map(|i| queue.insert(i, secs(5))).collect();
    for key in &cleared {
        assert!(queue.remove(key).is_err());
        assert!(queue.reset(key, secs(1)).is_err());
    }
    assert_eq!(queue.len(), 10);

    // Another queue's keys.
    let mut other = DelayQueue::new(&engine);
    let theirs = other.insert(99, secs(5));
    assert!(queue.remove(&theirs).is_err());
    assert!(!queue.contains(&theirs));
    assert_eq!(other.remove(&theirs), Ok(99));
    for key in &fresh {
        assert!(other.remove(key).is_err());
    }

    // None of the above touched the live values.
    clock.advance(secs(5));
    assert_eq!(values(drain(&mut queue)), (10..20).collect::<Vec<_>>());
}

#[test]
fn an_empty_queue_is_ready_with_none() {
    let (_clock, engine) = manual();
    let mut queue = DelayQueue::<u8>::new(&engine);
    let (count, waker) = counting();
    assert!(matches!(poll(&mut queue, &waker), Poll::Ready(None)));
    let key = queue.insert(1, secs(1));
    assert!(poll(&mut queue, &waker).is_pending());
    queue.remove(&key).unwrap();
    assert!(matches!(poll(&mut queue, &waker), Poll::Ready(None)));
    assert_eq!(count.count(), 1);
}

#[test]
fn removing_the_last_value_wakes_the_waiting_task() {
    let (_clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    let a = queue.insert("a", secs(10));
    let b = queue.insert("b", secs(20));
    let (count, waker) = counting();
    assert!(poll(&mut queue, &waker).is_pending());
    queue.remove(&a).unwrap();
    assert_eq!(count.count(), 0, "a value is left: nothing to wake for");
    queue.remove(&b).unwrap();
    assert_eq!(count.count(), 1);
    assert!(matches!(poll(&mut queue, &waker), Poll::Ready(None)));

    // `clear` too.
    queue.insert("c", secs(10));
    assert!(poll(&mut queue, &waker).is_pending());
    queue.clear();
    assert_eq!(count.count(), 2);
    assert!(matches!(poll(&mut queue, &waker), Poll::Ready(None)));
}

#[test]
fn reserved_room_takes_the_inserts_and_outlasts_an_emptying() {
    let (_clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    queue.reserve(1000);
    let room = queue.capacity();
    assert!(room >= 1000);
    // The room counts as a fill: the queue emptied after one value keeps it.
    let one = queue.insert(0, secs(60));
    queue.remove(&one).unwrap();
    assert_eq!(queue.capacity(), room);
    let keys: Vec<_> = (0..1000).map(|i| queue.insert(i, secs(60))).collect();
    assert_eq!(queue.capacity(), room, "the inserts grew nothing");
    for key in &keys {
        queue.remove(key).unwrap();
    }
    assert_eq!(queue.capacity(), room);
    queue.reserve(10);
    assert_eq!(queue.capacity(), room, "room it has already is enough");
    // Like storage a fill grew, a later fill that uses little of it gives it back.
    let one = queue.insert(0, secs(60));
    queue.remove(&one).unwrap();
    assert!(queue.capacity() < room);
}

#[test]
fn the_storage_shrinks_as_the_queue_empties() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);

    // Emptied by removes: the free end goes as the length falls, and a small fill gives the
    // rest back when it empties.
    let keys: Vec<_> = (0..10_000).map(|i| queue.insert(i, secs(60))).collect();
    assert!(queue.capacity() >= 10_000);
    for key in keys.iter().skip(100).rev() {
        queue.remove(key).unwrap();
    }
    assert!(queue.capacity() <= 256, "capacity {}", queue.capacity());
    for key in keys.iter().take(100) {
        queue.remove(key).unwrap();
    }
    let kept = queue.capacity();
    assert!(
        (100..=256).contains(&kept),
        "kept what the drain left: {kept}"
    );
    let key = queue.insert(0, secs(60));
    queue.remove(&key).unwrap();
    assert_eq!(queue.capacity(), 0);

    // Emptied by expiry: a fill that used its storage keeps it for the next one.
    let mut grown = 0;
    for _ in 0..2 {
        for i in 0..10_000 {
            queue.insert(i, secs(1));
        }
        assert!(queue.capacity() >= 10_000);
        assert!(grown == 0 || queue.capacity() == grown, "refilled in place");
        grown = queue.capacity();
        clock.advance(secs(1));
        assert_eq!(drain(&mut queue).len(), 10_000);
        assert_eq!(queue.capacity(), grown, "kept for the next fill");
    }
    queue.insert(0, secs(1));
    clock.advance(secs(1));
    assert_eq!(drain(&mut queue).len(), 1);
    assert_eq!(queue.capacity(), 0);

    // Down to what `with_capacity` asked for.
    let mut sized = DelayQueue::with_capacity(&engine, 64);
    for count in [1000, 10] {
        let keys: Vec<_> = (0..count).map(|i| sized.insert(i, secs(60))).collect();
        for key in &keys {
            sized.remove(key).unwrap();
        }
    }
    assert!(
        (64..1000).contains(&sized.capacity()),
        "capacity {}",
        sized.capacity()
    );
    assert_eq!(engine.pending(), 0);
}

#[test]
fn shrink_to_fit_releases_storage_and_clear_releases_the_engine_timer() {
    let (_clock, engine) = manual();
    let mut queue = DelayQueue::with_capacity(&engine, 1000);
    assert!(queue.capacity() >= 1000);
    let key = queue.insert(1, secs(30));
    queue.shrink_to_fit();
    assert!(queue.capacity() < 1000);
    assert!(queue.contains(&key));
    let (_count, waker) = counting();
    assert!(poll(&mut queue, &waker).is_pending());
    assert_eq!(engine.pending(), 1);
    queue.clear();
    assert!(queue.is_empty());
    assert_eq!(engine.pending(), 0);
}

#[test]
fn the_queue_as_a_stream_yields_the_values_in_order_and_ends_when_empty() {
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    for i in (0..5).rev() {
        queue.insert(i, secs(1 + i));
    }
    clock.advance(secs(5));
    let got: Vec<u64> =
        futures::executor::block_on(queue.by_ref().map(Expired::into_inner).collect());
    assert_eq!(got, [0, 1, 2, 3, 4]);
    // The stream ended because the queue is empty.
    assert!(queue.is_empty());
}

#[test]
fn the_queue_never_yields_early_under_a_real_clock_and_an_executor() {
    let engine = TimerEngine::builder().build().unwrap();
    let mut queue = DelayQueue::new(&engine);
    for i in 0..100u64 {
        queue.insert(i, Duration::from_millis(1 + i % 20));
    }
    let out: Vec<(Instant, Expired<u64>)> =
        futures::executor::block_on(queue.by_ref().map(|e| (Instant::now(), e)).collect());
    assert_eq!(out.len(), 100);
    for (yielded_at, expired) in &out {
        assert!(*yielded_at >= expired.deadline(), "yielded early");
    }
    let mut got: Vec<u64> = out.iter().map(|(_, e)| *e.get_ref()).collect();
    got.sort_unstable();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn dropping_the_queue_cancels_its_timer() {
    let (_clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    for i in 0..100 {
        queue.insert(i, secs(60));
    }
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    assert_eq!(engine.pending(), 1);
    drop(queue);
    assert_eq!(engine.pending(), 0);
}

#[test]
fn the_queue_is_send_when_its_values_are() {
    fn is_send<T: Send>() {}
    fn is_sync<T: Sync>() {}
    is_send::<DelayQueue<String>>();
    is_sync::<DelayQueue<String>>();
    is_send::<Expired<String>>();

    // And it works from another thread.
    let (clock, engine) = manual();
    let mut queue = DelayQueue::new(&engine);
    queue.insert("moved", secs(1));
    let queue = std::thread::spawn(move || {
        queue.insert("there", secs(1));
        queue
    })
    .join()
    .unwrap();
    let mut queue = queue;
    clock.advance(secs(1));
    assert_eq!(values(drain(&mut queue)), ["moved", "there"]);
}
