//! Model 16: a manual clock asking a shard for the earliest deadline pending while the shard
//! answers the questions open after its turn.

use loom::thread;

use super::{driven_engine, MS};

/// A timer placed at 5 ms; the asker takes a ticket while the shard answers. Whenever the
/// asker finds its ticket answered, the answer is the deadline the shard holds, the one it
/// gives when asked again once both are done.
///
/// Catches: publishing the answer with a Relaxed store of `answered` (or reading it with a
/// Relaxed load): the asker can find its ticket answered and still read the answer's initial
/// value, a deadline at tick 0.
#[test]
fn lookahead_answer_vs_question() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let timer = engine.schedule(MS * 5, || {}).unwrap();
        shard.turn(engine.now_tick());
        let core = shard.core_arc();
        let asker = thread::spawn(move || {
            let ticket = core.ask_earliest();
            core.earliest_answer(ticket)
        });
        shard.answer_lookahead();
        let seen = asker.join().unwrap();
        let again = shard.core().ask_earliest();
        shard.answer_lookahead();
        let truth = shard
            .core()
            .earliest_answer(again)
            .expect("answered after the turn");
        assert!(truth.is_some_and(|tick| tick > 0), "the timer is pending");
        if let Some(answer) = seen {
            assert_eq!(answer, truth, "an answer seen is the shard's");
        }
        assert!(timer.cancel());
        shard.turn(engine.now_tick());
        drop(engine.shutdown_driven(vec![shard]));
    });
}
