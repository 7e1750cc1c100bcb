//! Model 16: a manual clock asking a shard for the earliest deadline pending while the shard
//! answers the questions open after its turns.

use loom::thread;

use super::{ask_while_stepping, driven_engine, MS};
use crate::shard::Answer;

/// A timer linked at 5 ms; the asker takes a ticket and waits for its answer while the shard
/// answers after each of its turns. The answer the asker gets is the deadline the shard holds.
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
        let shared = shard.shared_arc();
        let answer = ask_while_stepping(
            move || {
                let ticket = shared.ask_earliest();
                loop {
                    match shared.earliest_answer(ticket) {
                        Answer::Open => thread::yield_now(),
                        answer => break answer,
                    }
                }
            },
            || shard.answer_lookahead(),
        );
        let again = shard.shared().ask_earliest();
        shard.answer_lookahead();
        let truth = shard.shared().earliest_answer(again);
        assert!(
            matches!(truth, Answer::Earliest(tick) if tick.get() > 0),
            "answered after the turn, with the timer pending"
        );
        assert_eq!(answer, truth, "the answer is the shard's");
        assert!(timer.cancel());
        shard.turn(engine.now_tick());
        drop(engine.shutdown_driven(vec![shard]));
    });
}
