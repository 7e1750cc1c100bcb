//! `build_global` configures the default engine before its first use (one test: its own process).

#![cfg(not(loom))]

use std::time::Duration;

use shardwheel::engine::BuildError;
use shardwheel::{ScheduleError, TimerEngine};

#[test]
fn build_global_configures_the_default_engine_once() {
    TimerEngine::builder()
        .shards(1)
        .max_pending(2)
        .build_global()
        .unwrap();
    assert_eq!(shardwheel::default_engine().stats().shards.len(), 1);
    let _a = shardwheel::schedule(Duration::from_secs(60), || {}).unwrap();
    let _b = shardwheel::schedule(Duration::from_secs(60), || {}).unwrap();
    assert!(matches!(
        shardwheel::schedule(Duration::from_secs(60), || {}),
        Err(ScheduleError::Full(_))
    ));
    assert!(matches!(
        TimerEngine::builder().build_global(),
        Err(BuildError::GlobalAlreadyBuilt)
    ));
}
