//! Model 3: schedule racing shutdown.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

use crate::ScheduleError;

use super::driven_engine;

/// A producer schedules while the shard turns and the engine shuts down. Every timer ends in
/// exactly one place: fired, handed back by `shutdown`, or refused with its callback returned
/// in `ScheduleError::Shutdown`. Running every handed-back and refused callback afterwards
/// makes each timer's callback run exactly once.
///
/// Catches: dropping the producer's second look at `stop` after its push (with its fence). A
/// push that lands after shutdown emptied the queues is then neither fired, nor handed back,
/// nor refused: the timer is lost.
#[test]
fn schedule_vs_shutdown() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let engine = Arc::new(engine);
        let runs = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (engine, runs) = (engine.clone(), runs.clone());
            thread::spawn(move || {
                let r = runs.clone();
                match engine.schedule(Duration::ZERO, move || {
                    r.fetch_add(1, Ordering::SeqCst);
                }) {
                    Ok(_) => None,
                    Err(ScheduleError::Shutdown(callback)) => Some(callback),
                    Err(other) => panic!("unexpected {other:?}"),
                }
            })
        };
        shard.turn(engine.now_tick());
        let unfired = engine.shutdown_driven(vec![shard]);
        let refused = producer.join().unwrap();
        let fired = runs.load(Ordering::SeqCst);
        let returned = unfired.len();
        assert_eq!(fired + returned + usize::from(refused.is_some()), 1);
        for timer in unfired {
            timer.run();
        }
        if let Some(callback) = refused {
            callback();
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let stats = engine.stats();
        assert_eq!(stats.pending, 0);
        assert_eq!(stats.fired + stats.returned, stats.scheduled);
    });
}
