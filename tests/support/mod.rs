//! What the integration tests share. Each test file that has `mod support;` compiles this
//! module for itself and uses only some of it.
#![allow(dead_code)]

pub mod delay;

use shardwheel::{ManualClock, TimerEngine};

/// An engine of two shards on a new manual clock.
pub fn manual() -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(2)
        .build()
        .unwrap();
    (clock, engine)
}

/// An engine on a new manual clock that holds at most `max` timers.
pub fn capped(max: usize) -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .max_pending(max)
        .build()
        .unwrap();
    (clock, engine)
}
