//! Asking a shard thread what only it can read, its wheel: a manual clock's look-ahead (the
//! earliest deadline pending) and a snapshot's survey (the timers linked). One protocol for
//! both, by ticket:
//!
//! - the asker takes a ticket ([`Question::ask`]) and wakes the shard until it has an answer
//!   ([`ask_each`], the one asking loop);
//! - the shard thread, after a turn, begins on the newest ticket if it has not yet
//!   ([`Question::begin`]), and gives its answer with that ticket ([`Question::give`]): an answer
//!   to a ticket answers every earlier one too;
//! - the answer waits for an asker to take it ([`Question::take`]). One for an earlier ticket is
//!   never taken for a later one; an asker whose ticket was answered but whose answer another
//!   asker took ([`Reply::Taken`]) asks again.
//!
//! The answer and the last ticket answered are behind a mutex, which publishes them; the
//! tickets themselves are only compared. Loom models `lookahead_answer_vs_question` and
//! `survey_answer_vs_question` check it.

use std::time::{Duration, Instant};

use crate::sync::{thread, AtomicU64, Mutex, Ordering};

/// A question to a shard thread, and its answer of type `A`.
pub(crate) struct Question<A> {
    /// The last ticket handed out.
    asked: AtomicU64,
    /// The last ticket the shard thread began on; its alone.
    begun: AtomicU64,
    answer: Mutex<Answered<A>>,
}

/// The last ticket answered, and its answer until an asker takes it.
struct Answered<A> {
    through: u64,
    waiting: Option<(u64, A)>,
}

/// What an asker finds for its ticket.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reply<A> {
    /// Not answered yet: the shard answers after a turn.
    Open,
    Given(A),
    /// Answered, but another asker took the answer: ask again.
    Taken,
}

impl<A> Default for Question<A> {
    fn default() -> Self {
        Question {
            asked: AtomicU64::new(0),
            begun: AtomicU64::new(0),
            answer: Mutex::new(Answered {
                through: 0,
                waiting: None,
            }),
        }
    }
}

impl<A> Question<A> {
    /// Asks; returns the ticket. The caller wakes the shard.
    pub(crate) fn ask(&self) -> u64 {
        // Relaxed: a ticket is only compared; the answer is published by the lock.
        self.asked.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The answer to `ticket` or a later one, taken, once the shard has given it.
    pub(crate) fn take(&self, ticket: u64) -> Reply<A> {
        let mut answer = self.answer.lock();
        match answer.waiting.take() {
            Some((answered, found)) if answered >= ticket => Reply::Given(found),
            earlier => {
                answer.waiting = earlier;
                if answer.through >= ticket {
                    Reply::Taken
                } else {
                    Reply::Open
                }
            }
        }
    }

    /// Shard thread: the newest ticket, if it has not begun on it; from now on it has.
    pub(super) fn begin(&self) -> Option<u64> {
        // Relaxed: a ticket seen late is served after the next turn (the asker keeps waking
        // the shard); `begun` is this thread's alone.
        let asked = self.asked.load(Ordering::Relaxed);
        if asked == self.begun.load(Ordering::Relaxed) {
            return None;
        }
        self.begun.store(asked, Ordering::Relaxed);
        Some(asked)
    }

    /// Shard thread: the answer to `ticket`, begun on before.
    pub(super) fn give(&self, ticket: u64, found: A) {
        let mut answer = self.answer.lock();
        answer.through = ticket;
        answer.waiting = Some((ticket, found));
    }
}

/// How an asker waits: what it does between looks, and for how long at most.
#[derive(Clone, Copy)]
pub(crate) struct Patience {
    /// Between looks: a yield of the thread if zero, else a sleep this long.
    pub(crate) pause: Duration,
    /// The longest the asker waits, if it gives up.
    pub(crate) most: Option<Duration>,
}

/// Why an asker has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// A shard stopped.
    Stopped,
    /// Past the patience's `most`.
    TimedOut,
}

/// What the asking loop needs of a shard besides its question (`ShardShared`'s).
pub(crate) trait Answerer {
    fn is_stopped(&self) -> bool;
    /// Wakes the shard thread, asleep or not.
    fn wake(&self);
}

/// Asks each of `shards` the question `of` picks and waits for every answer, in order, waking
/// the shards that have not answered: the asking loop of both questions.
pub(crate) fn ask_each<'a, S: Answerer + 'a, A: 'a>(
    shards: impl Iterator<Item = &'a S> + Clone,
    of: impl Fn(&'a S) -> &'a Question<A>,
    patience: Patience,
) -> Result<Vec<A>, Unanswered> {
    let until = patience.most.map(|most| Instant::now() + most);
    let mut tickets: Vec<u64> = shards.clone().map(|shard| of(shard).ask()).collect();
    let mut answers: Vec<Option<A>> = tickets.iter().map(|_| None).collect();
    loop {
        let asking = shards.clone().zip(&mut tickets).zip(&mut answers);
        for ((shard, ticket), answer) in asking.filter(|(_, answer)| answer.is_none()) {
            match of(shard).take(*ticket) {
                Reply::Given(found) => *answer = Some(found),
                Reply::Taken => *ticket = of(shard).ask(),
                Reply::Open => {}
            }
        }
        if answers.iter().all(Option::is_some) {
            return Ok(answers.into_iter().flatten().collect());
        }
        if shards.clone().any(S::is_stopped) {
            return Err(Unanswered::Stopped);
        }
        if until.is_some_and(|until| Instant::now() >= until) {
            return Err(Unanswered::TimedOut);
        }
        // An idle shard sleeps until woken; a busy one answers after its next turn; one that
        // saw a ticket late is woken again.
        let unanswered = shards.clone().zip(&answers);
        for (shard, _) in unanswered.filter(|(_, answer)| answer.is_none()) {
            shard.wake();
        }
        if patience.pause.is_zero() {
            thread::yield_now();
        } else {
            std::thread::sleep(patience.pause);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_answer_serves_its_ticket_and_earlier_ones_once() {
        let question = Question::<&str>::default();
        let (first, second) = (question.ask(), question.ask());
        assert_eq!(question.take(first), Reply::Open);
        assert_eq!(question.begin(), Some(second));
        assert_eq!(question.begin(), None, "begun once");
        question.give(second, "found");
        assert_eq!(question.take(first), Reply::Given("found"));
        assert_eq!(
            question.take(second),
            Reply::Taken,
            "the other asker took it"
        );
        let third = question.ask();
        question.give(question.begin().unwrap(), "again");
        assert_eq!(question.take(third), Reply::Given("again"));
    }

    #[test]
    fn an_earlier_answer_is_never_taken_for_a_later_ticket() {
        let question = Question::<u32>::default();
        let first = question.ask();
        question.give(question.begin().unwrap(), 1);
        let second = question.ask();
        assert_eq!(question.take(second), Reply::Open);
        assert_eq!(
            question.take(first),
            Reply::Given(1),
            "it waits for its own asker"
        );
    }
}
