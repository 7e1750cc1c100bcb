//! Model 21: a snapshot asking a shard for the timers in its wheel while the shard walks its
//! survey a piece at a time between its turns (see `shard::survey`).

use loom::thread;

use super::{ask_while_stepping, driven_engine, MS};

/// An answer nobody took waits from an earlier question (its asker gave up before the timer
/// was scheduled); then the timer is linked, and the asker takes a ticket and waits for its
/// answer while the shard steps its survey. The asker gets an answer that lists the timer.
///
/// Catches: taking whatever answer waits (dropping the ticket's comparison in
/// `Question::take_answer`): the asker can take the earlier answer, which lists no timer.
#[test]
fn survey_answer_vs_question() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        shard.shared().question().ask();
        while shard.survey_step() {}
        let timer = engine.schedule(MS * 5, || {}).unwrap();
        shard.turn(engine.now_tick());
        let shared = shard.shared_arc();
        let found = ask_while_stepping(
            move || {
                let ticket = shared.question().ask();
                loop {
                    match shared.question().take_answer(ticket) {
                        Some(found) => break found,
                        None => thread::yield_now(),
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

/// The deadline tick of `timer`'s entry.
fn timer_deadline(timer: &crate::TimerHandle) -> u64 {
    timer.entry().state().deadline()
}
