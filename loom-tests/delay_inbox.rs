//! Model 12: a task polling a `DelayQueue` while the shard fires the queue's timer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use loom::thread;

use super::{driven_engine, Counting, MS};
use crate::DelayQueue;

/// Poll vs fire, through the queue's one sleep: the poll yields the value, or it returned
/// pending and the sleep's callback wakes the waker it registered. A task is never left
/// pending with no wake-up coming.
///
/// Catches: a queue that finds nothing due and returns pending without polling its sleep
/// (registering the waker): the sleep can fire meanwhile and wake nobody.
#[test]
fn delay_queue_poll_vs_fire() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine();
        let mut queue = DelayQueue::new(&engine);
        let key = queue.insert(7u8, MS);
        shard.turn(engine.now_tick()); // place it
        let firer = thread::spawn(move || {
            clock.advance(MS);
            shard.turn(engine.now_tick());
            (engine, shard)
        });
        let counter = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let first = queue.poll_expired(&mut Context::from_waker(&waker));
        let (engine, shard) = firer.join().unwrap();
        match first {
            Poll::Ready(Some(expired)) => assert_eq!(expired.key(), key),
            Poll::Pending => {
                assert_eq!(
                    counter.0.load(Ordering::SeqCst),
                    1,
                    "the pending task was woken"
                );
                let again = queue.poll_expired(&mut Context::from_waker(&waker));
                assert!(matches!(again, Poll::Ready(Some(_))));
            }
            Poll::Ready(None) => panic!("the queue held a value"),
        }
        drop(queue);
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
