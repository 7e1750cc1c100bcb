//! A sleep waiting for a permit against a timer releasing one (`sync::cap`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Waker;

use loom::sync::Arc;
use loom::thread;

use super::Counting;
use crate::sync::Cap;

/// Another thread's timer takes the cap's one permit and releases it while a task leaves its
/// waker. Either the task sees the room, or the release wakes it.
///
/// Catches: a release without its fence, or one that reads `waiting` before it subtracts
/// from `used` (each checked once): the task sleeps though a permit is free.
#[test]
fn a_release_wakes_the_waiter_or_the_waiter_sees_the_room() {
    loom::model(|| {
        let cap = Arc::new(Cap::new(1));
        let counter = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let releaser = {
            let cap = cap.clone();
            thread::spawn(move || drop(cap.take().expect("room for one")))
        };
        let room = cap.wait_for_room(&waker);
        releaser.join().unwrap();
        assert!(
            room || counter.0.load(Ordering::SeqCst) == 1,
            "the task waits for a permit that is free, and no one wakes it"
        );
    });
}
