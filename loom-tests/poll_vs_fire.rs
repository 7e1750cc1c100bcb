//! Model 8: a task polling a `Sleep` while the shard fires its timer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use loom::thread;

use super::{driven_engine, Counting, MS};

/// Poll vs fire: a task's first poll takes the sleep's timer with its waker, the shard links
/// it, and then the shard fires it while the task polls again with another waker (the task
/// moved). That poll returns ready, or it returned pending and its waker is woken (by the
/// timer that fired, or by the one the poll swapped in, which the shard's next turn fires):
/// a task is never left pending with no wake-up coming.
///
/// Catches: a poll that finds its timer pending and returns without looking at which waker the
/// timer holds (the fire then wakes only the first waker).
#[test]
fn poll_vs_fire() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine();
        let mut sleep = engine.sleep(MS);
        let first = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let polled = Pin::new(&mut sleep).poll(&mut Context::from_waker(&Waker::from(first)));
        assert_eq!(polled, Poll::Pending, "the first poll takes the timer");
        shard.turn(engine.now_tick()); // link it
        clock.advance(MS);
        let firer = thread::spawn(move || {
            shard.turn(engine.now_tick());
            (engine, shard)
        });
        let counter = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let second = Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker));
        let (engine, mut shard) = firer.join().unwrap();
        shard.turn(engine.now_tick());
        if second == Poll::Pending {
            assert_eq!(
                counter.0.load(Ordering::SeqCst),
                1,
                "the pending task was woken"
            );
        }
        let again = Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker));
        assert_eq!(again, Poll::Ready(()));
        drop(sleep);
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
