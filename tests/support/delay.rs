//! Helpers for the delay queue's tests: polling and draining a queue, and a model to check it
//! against.

use std::collections::BTreeMap;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use proptest::prelude::*;
use shardwheel::delay_queue::{DelayQueue, Expired};

/// Polls once with `waker`.
pub fn poll<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> Poll<Option<Expired<T>>> {
    queue.poll_expired(&mut Context::from_waker(waker))
}

/// Every value `poll_expired` yields now, until it returns `Pending` or `Ready(None)`.
pub fn drain<T>(queue: &mut DelayQueue<T>) -> Vec<Expired<T>> {
    let waker = futures::task::noop_waker();
    let mut out = Vec::new();
    while let Poll::Ready(Some(expired)) = poll(queue, &waker) {
        out.push(expired);
    }
    out
}

pub fn values<T>(expired: Vec<Expired<T>>) -> Vec<T> {
    expired.into_iter().map(Expired::into_inner).collect()
}

pub const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// One step of a model test of the queue.
#[derive(Debug, Clone)]
pub enum Op {
    /// Insert a value due this many milliseconds from now.
    Insert(u64),
    /// Remove the n-th key handed out so far (modulo their number; it may be stale).
    Remove(usize),
    /// Reset the n-th key to this many milliseconds from now.
    Reset(usize, u64),
    /// Move the clock forward this many milliseconds.
    Advance(u64),
    /// Take out what expired.
    Poll,
}

/// Steps of a model test: inserts and resets with delays from `delay`, removes, clock steps
/// from `step`, and polls.
pub fn op(
    delay: impl Strategy<Value = u64> + Clone,
    step: impl Strategy<Value = u64>,
) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => delay.clone().prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), delay).prop_map(|(i, d)| Op::Reset(i, d)),
        3 => step.prop_map(Op::Advance),
        3 => Just(Op::Poll),
    ]
}

/// Runs `ops` on a queue and on a model, key number (the insertion order) → deadline in ms.
/// A poll takes out exactly the values due, soonest first, equal deadlines in insertion order,
/// whatever was removed or reset since; removes and resets of stale keys fail, of live ones
/// succeed; dropping the queue leaves the engine nothing pending.
pub fn check_against_model(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let (clock, engine) = super::manual();
    let mut queue = DelayQueue::new(&engine);
    let mut keys = Vec::new();
    let mut model: BTreeMap<usize, u64> = BTreeMap::new();
    let mut now_ms = 0u64;
    for op in ops {
        match op {
            Op::Insert(delay) => {
                let n = keys.len();
                keys.push(queue.insert(n, Duration::from_millis(delay)));
                model.insert(n, now_ms + delay);
            }
            Op::Remove(i) if !keys.is_empty() => {
                let n = i % keys.len();
                let got = queue.remove(&keys[n]).ok();
                prop_assert_eq!(got, model.remove(&n).map(|_| n));
            }
            Op::Reset(i, delay) if !keys.is_empty() => {
                let n = i % keys.len();
                let live = queue.reset(&keys[n], Duration::from_millis(delay)).is_ok();
                prop_assert_eq!(live, model.contains_key(&n));
                if let Some(due) = model.get_mut(&n) {
                    *due = now_ms + delay;
                }
            }
            Op::Advance(ms) => {
                clock.advance(Duration::from_millis(ms));
                now_ms += ms;
            }
            Op::Poll => {
                let mut expected: Vec<(u64, usize)> = model
                    .iter()
                    .filter(|(_, due)| **due <= now_ms)
                    .map(|(&n, &due)| (due, n))
                    .collect();
                expected.sort_unstable();
                let got: Vec<usize> = values(drain(&mut queue));
                let expected: Vec<usize> = expected.into_iter().map(|(_, n)| n).collect();
                prop_assert_eq!(&got, &expected);
                for n in got {
                    model.remove(&n);
                }
            }
            _ => {}
        }
        prop_assert_eq!(queue.len(), model.len());
        // The value due first, ties in insertion order, is the one `peek` names.
        let first = model.iter().map(|(&n, &due)| (due, n)).min();
        prop_assert_eq!(queue.peek(), first.map(|(_, n)| keys[n]));
    }
    drop(queue);
    prop_assert_eq!(engine.pending(), 0);
    Ok(())
}
