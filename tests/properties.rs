//! A property test over the public API under a manual clock: random schedules, cancels,
//! resets and clock advances, applied to a real engine and to a `BTreeMap` model of deadlines.
//! The same timers fire, at the same times; `cancel` and `reset` give the same answers.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use shardwheel::{ManualClock, TimerEngine, TimerHandle};

#[derive(Debug, Clone)]
enum Op {
    /// Schedule a timer this many milliseconds from now.
    Schedule(u64),
    /// Cancel the n-th timer scheduled so far (modulo their number).
    Cancel(usize),
    /// Reset the n-th timer to this many milliseconds from now.
    Reset(usize, u64),
    /// Move the clock forward by this many milliseconds.
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // At least 1 ms: a timer due at the current time may fire on the shard's next turn,
        // before any advance, which the model cannot place in time.
        4 => (1u64..300).prop_map(Op::Schedule),
        1 => (1u64..100_000).prop_map(Op::Schedule),
        2 => any::<usize>().prop_map(Op::Cancel),
        2 => (any::<usize>(), 1u64..300).prop_map(|(i, d)| Op::Reset(i, d)),
        3 => (0u64..150).prop_map(Op::Advance),
        1 => (0u64..120_000).prop_map(Op::Advance),
    ]
}

/// What the model knows of a timer.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Model {
    Pending { due_ms: u64 },
    Fired { at_ms: u64 },
    Cancelled,
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_engine_matches_a_model_of_deadlines(ops in proptest::collection::vec(op(), 1..40)) {
        let clock = ManualClock::new();
        let engine = TimerEngine::builder().manual_clock(&clock).shards(2).build().unwrap();
        let fired: Arc<Mutex<BTreeMap<usize, Vec<u64>>>> = Arc::default();
        let mut handles: Vec<TimerHandle> = Vec::new();
        let mut model: Vec<Model> = Vec::new();
        let mut now_ms = 0u64;
        for op in ops {
            match op {
                Op::Schedule(delay) => {
                    let id = handles.len();
                    let (fired, c) = (fired.clone(), clock.clone());
                    let handle = engine
                        .schedule(Duration::from_millis(delay), move || {
                            let at = c.elapsed().as_millis() as u64;
                            fired.lock().unwrap().entry(id).or_default().push(at);
                        })
                        .unwrap();
                    handles.push(handle);
                    model.push(Model::Pending { due_ms: now_ms + delay });
                }
                Op::Cancel(pick) if !handles.is_empty() => {
                    let i = pick % handles.len();
                    let expected = matches!(model[i], Model::Pending { .. });
                    prop_assert_eq!(handles[i].cancel(), expected, "cancel of timer {}", i);
                    if expected {
                        model[i] = Model::Cancelled;
                    }
                }
                Op::Reset(pick, delay) if !handles.is_empty() => {
                    let i = pick % handles.len();
                    let expected = matches!(model[i], Model::Pending { .. });
                    prop_assert_eq!(
                        handles[i].reset(Duration::from_millis(delay)),
                        expected,
                        "reset of timer {}",
                        i
                    );
                    if expected {
                        model[i] = Model::Pending { due_ms: now_ms + delay };
                    }
                }
                Op::Advance(by) => {
                    now_ms += by;
                    clock.advance(Duration::from_millis(by));
                    for state in model.iter_mut() {
                        if let Model::Pending { due_ms } = *state {
                            if due_ms <= now_ms {
                                *state = Model::Fired { at_ms: now_ms };
                            }
                        }
                    }
                }
                Op::Cancel(_) | Op::Reset(..) => {}
            }
            // Every timer fired exactly when (and as often as) the model says.
            let fired = fired.lock().unwrap();
            for (i, state) in model.iter().enumerate() {
                let runs = fired.get(&i).cloned().unwrap_or_default();
                match *state {
                    Model::Fired { at_ms } => prop_assert_eq!(runs, vec![at_ms], "timer {}", i),
                    _ => prop_assert!(runs.is_empty(), "timer {} ran early or after a cancel", i),
                }
            }
            let pending = model.iter().filter(|m| matches!(m, Model::Pending { .. })).count();
            prop_assert_eq!(engine.pending(), pending as u64);
        }
    }
}
