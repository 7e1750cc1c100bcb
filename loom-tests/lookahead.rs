//! Model 16: two askers of one manual clock's look-ahead (the earliest deadline pending)
//! while the shard answers the questions open after its turns (see `shard::ask`).

use std::time::Duration;

use super::{ask_while_stepping, driven_engine, timer_deadline, MS};
use crate::shard::{ask_each, Patience, Reply, ShardShared};
use crate::time::Tick;

/// A timer linked at 5 ms; one asker holds a ticket while another asks through the asking
/// loop and the shard answers after each of its turns. The loop's asker gets the deadline the
/// shard holds; once it has, the first ticket is answered too: its asker finds the answer, or
/// finds it taken (and would ask again), never still open.
///
/// Catches: a take that says `Open`, not `Taken`, when another asker took the answer that
/// covered its ticket (dropping the comparison with `through` in `Question::take`): the shard
/// has begun on the newest ticket and never answers again, and the first asker waits forever.
#[test]
fn lookahead_answer_vs_question() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let timer = engine.schedule(MS * 5, || {}).unwrap();
        shard.turn(engine.now_tick());
        let first = shard.shared().lookahead().ask();
        let shared = shard.shared_arc();
        let patience = Patience {
            pause: Duration::ZERO,
            most: None,
        };
        let answer = ask_while_stepping(
            move || ask_each(std::iter::once(&*shared), ShardShared::lookahead, patience),
            || shard.answer_lookahead(),
        );
        let truth = Some(Tick::new(timer_deadline(&timer)));
        assert_eq!(answer, Ok(vec![truth]), "the answer is the shard's");
        match shard.shared().lookahead().take(first) {
            Reply::Given(earliest) => assert_eq!(earliest, truth),
            Reply::Taken => {}
            Reply::Open => panic!("a ticket before an answered one is answered too"),
        }
        assert!(timer.cancel());
        shard.turn(engine.now_tick());
        drop(engine.shutdown_driven(vec![shard]));
    });
}
