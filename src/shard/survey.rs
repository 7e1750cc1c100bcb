//! A snapshot's question to a shard: the pending timers linked in its wheel, which only its
//! thread may read, asked by ticket (see `ask`).
//!
//! After each turn the shard thread looks at the last ticket ([`Surveying::step`]): a new one
//! begins a survey of its wheel (see `wheel::survey`), starting over if it came during one;
//! then it walks the survey for at most [`PIECE_TIME`] (and half a tick), and answers once it
//! has walked every level. While a survey is under way the thread polls instead of sleeping,
//! so a survey of a million timers takes a few dozen turns, none delayed by more than a piece.

use std::time::{Duration, Instant};

use super::ask::Question;
use crate::entry::{Entry, StateWord};
use crate::wheel::{Repeats, Wheel};

/// The longest a shard walks its survey after a turn (less if half its tick is shorter).
const PIECE_TIME: Duration = Duration::from_micros(200);

/// Entries walked between two looks at the time (one under loom, whose steps are the model's).
const STRIDE: usize = if cfg!(loom) { 1 } else { 1024 };

/// A pending timer a survey met: where its entry is, and its state word then.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen {
    pub(crate) address: usize,
    pub(crate) word: StateWord,
}

/// A shard's answer: the pending timers its wheel held, each once.
#[derive(Debug)]
pub(crate) struct Found {
    pub(crate) seen: Vec<Seen>,
}

impl Found {
    /// The answer: what the walk met, each timer once (see `wheel::survey`). Of
    /// two sightings of a timer (its address) a reset moved, the later stays, where it went;
    /// of one a cascade moved, either (a cascade keeps its deadline).
    fn of(mut seen: Vec<Seen>, repeats: Repeats) -> Found {
        match repeats {
            Repeats::None => {}
            Repeats::Any => {
                seen.sort_unstable_by_key(|seen| seen.address);
                seen.dedup_by_key(|seen| seen.address);
            }
            Repeats::These(mut moved) => {
                moved.sort_unstable();
                moved.dedup();
                // From the end: the first sighting of each moved timer met stays.
                let mut met = vec![false; moved.len()];
                let mut earlier = Vec::new();
                for (i, seen) in seen.iter().enumerate().rev() {
                    if let Ok(k) = moved.binary_search(&seen.address) {
                        if std::mem::replace(&mut met[k], true) {
                            earlier.push(i);
                        }
                    }
                }
                let mut i = 0;
                seen.retain(|_| {
                    let keep = earlier.last() != Some(&i);
                    if !keep {
                        earlier.pop();
                    }
                    i += 1;
                    keep
                });
            }
        }
        Found { seen }
    }
}

/// The shard thread's side: the survey under way, if any.
#[derive(Default)]
pub(super) struct Surveying {
    /// The ticket the survey under way (or the last one) answers.
    serving: u64,
    walking: bool,
    seen: Vec<Seen>,
}

impl Surveying {
    /// After a turn: begins a survey of `wheel` for a new ticket of `question`, walks a piece
    /// of the one under way, and answers when it ends. Returns whether one is still under way.
    pub(super) fn step(
        &mut self,
        wheel: &mut Wheel,
        question: &Question<Found>,
        tick: Duration,
    ) -> bool {
        if let Some(ticket) = question.begin() {
            self.serving = ticket;
            self.walking = true;
            // Room for the timers that come in while it walks: no copy of a long list in a piece.
            let room = wheel.len() + wheel.len() / 8 + STRIDE;
            self.seen = Vec::with_capacity(room);
            wheel.begin_survey();
        } else if !self.walking {
            return false;
        }
        let stop = Instant::now() + PIECE_TIME.min(tick / 2);
        let seen = &mut self.seen;
        let mut visit = |entry: &Entry| {
            let word = entry.state();
            // A cancelled entry waits linked for its unlink request: not pending.
            if word.is_pending() {
                let address = entry as *const Entry as usize;
                seen.push(Seen { address, word });
            }
        };
        loop {
            if let Some(repeats) = wheel.survey(STRIDE, &mut visit) {
                self.walking = false;
                let seen = std::mem::take(&mut self.seen);
                question.give(self.serving, Found::of(seen, repeats));
                return false;
            }
            if cfg!(loom) || Instant::now() >= stop {
                return true;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::entry::StateWord;

    fn seen(address: usize, deadline: u64) -> Seen {
        let word = StateWord::pending(deadline);
        Seen { address, word }
    }

    #[test]
    fn a_moved_timer_met_twice_is_listed_once_where_it_went() {
        let walk = vec![
            seen(8, 900),
            seen(16, 50),
            seen(24, 60),
            seen(8, 100),
            seen(16, 50),
        ];
        let found = Found::of(walk.clone(), Repeats::These(vec![8]));
        let listed: Vec<(usize, u64)> = (found.seen.iter())
            .map(|seen| (seen.address, seen.word.deadline()))
            .collect();
        assert_eq!(
            listed,
            [(16, 50), (24, 60), (8, 100), (16, 50)],
            "only 8 was moved"
        );
        let all = Found::of(walk, Repeats::Any);
        let mut addresses: Vec<usize> = all.seen.iter().map(|seen| seen.address).collect();
        addresses.sort_unstable();
        assert_eq!(addresses, [8, 16, 24]);
    }
}
