//! Model 21: a snapshot asking a shard for the timers in its wheel while the shard walks its
//! survey a piece at a time between its turns (see `shard::survey`).

use loom::thread;

use super::{ask_while_stepping, driven_engine, timer_deadline, MS};
use crate::shard::Reply;

/// An answer nobody took waits from an earlier question (its asker gave up before the timer
/// was scheduled); then the timer is linked, and the asker takes a ticket and waits for its
/// answer while the shard steps its survey. The asker gets an answer that lists the timer.
///
/// Catches: taking whatever answer waits (dropping the ticket's comparison in
/// `Question::take`): the asker can take the earlier answer, which lists no timer.
#[test]
fn survey_answer_vs_question() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        shard.shared().survey().ask();
        while shard.survey_step() {}
        let timer = engine.schedule(MS * 5, || {}).unwrap();
        shard.turn(engine.now_tick());
        let shared = shard.shared_arc();
        let found = ask_while_stepping(
            move || {
                let ticket = shared.survey().ask();
                loop {
                    match shared.survey().take(ticket) {
                        Reply::Given(found) => break found,
                        Reply::Open | Reply::Taken => thread::yield_now(),
                    }
                }
            },
            || {
                shard.survey_step();
            },
        );
        assert_eq!(
            found.seen.len(),
            1,
            "the answer lists the timer linked before"
        );
        assert_eq!(found.seen[0].word.deadline(), timer_deadline(&timer));
        assert!(timer.cancel());
        shard.turn(engine.now_tick());
        drop(engine.shutdown_driven(vec![shard]));
    });
}
