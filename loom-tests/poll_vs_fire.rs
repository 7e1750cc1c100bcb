//! Model 8: a task polling a `Sleep` while the shard fires its timer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use loom::thread;

use super::{driven_engine, Counting, MS};

/// Poll vs fire: the poll returns ready, or it returned pending and the engine wakes the
/// waker it stored. A task is never left pending with no wake-up coming.
///
/// Catches: a poll that stores its waker without looking at the fired flag again afterwards
/// (the timer can fire between the first look and the store, find no waker, and wake
/// nobody).
#[test]
fn poll_vs_fire() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine();
        let mut sleep = engine.sleep(MS);
        shard.turn(engine.now_tick()); // place it
        clock.advance(MS);
        let firer = thread::spawn(move || {
            shard.turn(engine.now_tick());
            (engine, shard)
        });
        let counter = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let first = Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker));
        let (engine, shard) = firer.join().unwrap();
        if first == Poll::Pending {
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
