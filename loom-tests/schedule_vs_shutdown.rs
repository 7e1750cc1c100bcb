//! Model 3: schedule racing shutdown.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

use crate::ScheduleError;

use super::{driven_engine, driven_engine_with};

/// A producer schedules a capped timer while the shard turns and the engine shuts down. Every
/// timer ends in exactly one place: fired, handed back by `shutdown`, or refused with its
/// callback returned in `ScheduleError::Shutdown`. Running every handed-back and refused
/// callback afterwards makes each timer's callback run exactly once; its permit comes back
/// once, to whichever won it.
///
/// Catches: dropping the producer's second look at `stop` after its push (with its fence). A
/// push that lands after shutdown emptied the queues is then neither fired, nor handed back,
/// nor refused: the timer is lost. So does a shutdown that empties only the lanes the shard
/// knew at its last turn, not every lane made (`Lanes::all` in `Shard::stop`): the producer's
/// schedule is the first through its lane, and may make it after that turn. A producer that
/// releases its permit itself on seeing `stop` (instead of holding it for the hand-back's
/// winner, `Permit::hold` in `Lane::enqueue`) releases it twice.
#[test]
fn schedule_vs_shutdown() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine_with(|builder| builder.max_pending(1));
        let shared = shard.shared_arc();
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
        assert_eq!(stats.fired + stats.handed_back, stats.scheduled);
        assert_eq!(shared.cap_used(), Some(0), "the permit is given back once");
    });
}

/// Two producers race shutdown with no shard turning, so everything they push must be found by
/// shutdown in the inbound queue. Each timer is handed back or refused, exactly once.
///
/// Catches: shutdown giving up on the inbound queue when it finds a producer half-way through
/// its push (`Pop::MidPush`) instead of waiting for the link. A second producer that appended
/// behind the first and did not see the stop flag would then have its timer lost.
#[test]
fn two_producers_vs_shutdown() {
    loom::model(|| {
        let (engine, shard, _clock) = driven_engine();
        let engine = Arc::new(engine);
        let runs = Arc::new(AtomicUsize::new(0));
        let producers: Vec<_> = (0..2)
            .map(|_| {
                let (engine, runs) = (engine.clone(), runs.clone());
                thread::spawn(move || {
                    let r = runs.clone();
                    match engine.schedule(Duration::from_secs(1), move || {
                        r.fetch_add(1, Ordering::SeqCst);
                    }) {
                        Ok(_) => None,
                        Err(ScheduleError::Shutdown(callback)) => Some(callback),
                        Err(other) => panic!("unexpected {other:?}"),
                    }
                })
            })
            .collect();
        let unfired = engine.shutdown_driven(vec![shard]);
        let refused: Vec<_> = producers
            .into_iter()
            .filter_map(|p| p.join().unwrap())
            .collect();
        assert_eq!(unfired.len() + refused.len(), 2);
        for timer in unfired {
            timer.run();
        }
        for callback in refused {
            callback();
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    });
}
