//! Model 12: a task polling a `DelayQueue` while the shard fires the queue's timer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use loom::thread;

use super::{driven_engine, Counting, MS};
use crate::delay_queue::DelayQueue;

/// Poll vs fire, through the queue's one sleep: the task's first poll finds nothing due and
/// leaves the sleep holding its waker; the shard links the sleep's timer and then fires it
/// while the task polls again with another waker. That poll yields the value, or it returned
/// pending and the task is woken through the waker it polled with last. A task is never left
/// pending with no wake-up coming.
///
/// The second poll's new waker is what gives loom something to interleave: the poll hands it
/// to the timer's entry while the shard fires it (about 170 executions). Polled again with the
/// same waker, the poll touches nothing the firing writes, and loom ran one execution.
///
/// Catches: a queue that finds nothing due and returns pending without polling its sleep
/// (which takes its timer only when polled): no timer, and so no wake-up, ever comes.
#[test]
fn delay_queue_poll_vs_fire() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine();
        let mut queue = DelayQueue::new(&engine);
        let key = queue.insert(7u8, MS);
        let counter = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let first = queue.poll_expired(&mut Context::from_waker(&waker));
        assert!(first.is_pending(), "nothing is due yet");
        shard.turn(engine.now_tick()); // link the queue's timer
        let firer = thread::spawn(move || {
            clock.advance(MS);
            shard.turn(engine.now_tick());
            (engine, shard)
        });
        // The task polls again from elsewhere (a new waker, as after moving to another worker),
        // so the poll hands its waker over while the shard may be firing.
        let moved = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let moved_waker = Waker::from(moved.clone());
        let second = queue.poll_expired(&mut Context::from_waker(&moved_waker));
        let (engine, mut shard) = firer.join().unwrap();
        shard.turn(engine.now_tick());
        match second {
            Poll::Ready(Some(expired)) => assert_eq!(expired.key(), key),
            Poll::Pending => {
                assert_eq!(
                    moved.0.load(Ordering::SeqCst),
                    1,
                    "the pending task was woken through the waker it polled with last"
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
