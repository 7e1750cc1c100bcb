//! Between turns: the tick thread's loop, which polls once a tick while there is work, sleeps
//! when there is none (announcing the sleep first, see `signal`), and answers the questions
//! asked of the wheel (see `ask`).

use std::time::Duration;

use super::{Shard, Stopped, Turn};
use crate::queue::Since;
use crate::shard::signal::Announced;
use crate::sync::thread;
use crate::time::{Tick, TickClock};

/// How soon, at most, a shard looks again at handed callbacks that have not begun (a tick if
/// shorter): its looks start the runners that free callbacks stuck behind slow ones.
const LOOK_AGAIN: Duration = Duration::from_micros(250);

/// Aborts the process if the shard thread unwinds out of its loop: that is an engine bug
/// (callbacks run under `catch_unwind`), and unwinding mid-turn could drop a count owned by
/// an unlink request. A loud stop beats a double free.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("shardwheel: a shard thread panicked, a bug in the engine; aborting");
            std::process::abort();
        }
    }
}

impl Shard {
    /// Whether the wheel has a slot due by tick `now + 1`.
    fn due_by_next_tick(&self, now: Tick) -> bool {
        self.wheel
            .next_deadline()
            .is_some_and(|next| Tick::new(next) <= now.saturating_add(1))
    }

    /// The longest a poll may nap: `LOOK_AGAIN` while handed callbacks have not all begun,
    /// else a tick.
    fn poll_at_most(&self) -> Duration {
        if self.executor.has_queued() {
            LOOK_AGAIN
        } else {
            Duration::MAX
        }
    }

    /// Announces a sleep until the wheel's next deadline or the first young timer's horizon
    /// and returns it, or returns [`Announced::Awake`] without sleeping if work arrived, a
    /// young timer is due to be taken, or the shard was stopped.
    pub(crate) fn prepare_sleep(&mut self, now: Tick) -> Announced {
        let mut until = self.wheel.next_deadline().map(Tick::new);
        let fenced = self.shared.signal().announce_sleep(until);
        // After the announcement's fence: a lane made by a producer that missed the
        // announcement is found here (see `shard::lanes`), and so is a young timer.
        self.find_new_lanes();
        let signal = self.shared.signal();
        if self.shared.is_stopped()
            || self.lanes.iter().any(|lane| lane.has_queued(&fenced))
            || !self.shared.callbacks().rearms().is_empty()
        {
            signal.awake();
            return Announced::Awake;
        }
        let oldest = (self.lanes.iter())
            .filter_map(|lane| lane.young_since(&fenced))
            .min();
        let take = match oldest {
            None => None,
            // A lane asked to be taken at once (see `Lane::young_since`).
            Some(Since::Hurry) => Some(now),
            Some(Since::Born(born)) => Some(self.shared.horizon().take_tick(born)),
        };
        if let Some(take) = take {
            if self.take_all_young || take <= now {
                signal.awake();
                return Announced::Awake;
            }
            if until.is_none_or(|until| take < until) {
                signal.shorten_sleep(take);
                until = Some(take);
            }
        }
        until.map_or(Announced::UntilWoken, Announced::Until)
    }

    /// Sleeps as announced: until tick `until` begins (`None`: until woken), or until
    /// unparked; then back to polling. Returns `until`, the tick the next turn means to begin.
    fn sleep(&self, clock: &TickClock, until: Option<Tick>) -> Option<Tick> {
        clock.sleep_until(until);
        self.shared.signal().awake();
        until
    }

    /// The tick thread: turns, polls and sleeps until stopped; returns the wheel for shutdown.
    pub(crate) fn run(mut self) -> Stopped {
        let _abort = AbortOnUnwind;
        let _discard_later = self.taker.discard_later();
        self.shared.signal().set_thread(thread::current());
        (self.shared.callbacks().rearms()).set_thread(thread::current());
        let clock = self.shared.clock().clone();
        #[cfg(not(loom))]
        crate::pinning::tune_current_thread(clock.tick());
        // Manual time jumps, so its lateness means nothing; it may ask for the earliest
        // deadline (see `ask`).
        let watch_lag = clock.manual().is_none();
        let lookahead = !watch_lag;
        // The tick the next turn means to begin at, if any (see `pinning::watch`).
        let mut meant = None;
        while !self.shared.is_stopped() {
            let now = clock.now_tick();
            if watch_lag {
                self.lag.observe(meant, now, self.shared.pinning());
            }
            let mut turn = self.turn(now);
            if lookahead && turn != Turn::Backlog {
                self.answer_lookahead();
            }
            if self.survey_step() {
                turn = Turn::Backlog;
            }
            meant = match turn {
                Turn::Backlog => {
                    thread::yield_now();
                    Some(now)
                }
                Turn::Worked => {
                    clock.sleep_one_tick(now, self.poll_at_most());
                    Some(now.saturating_add(1))
                }
                // Due by the next tick, or handed callbacks not yet begun: poll, as when
                // busy, with no need to announce the sleep (and pay the fence of `signal`);
                // see `poll_at_most` and `relay`.
                Turn::Idle if self.due_by_next_tick(now) || self.executor.has_queued() => {
                    clock.sleep_one_tick(now, self.poll_at_most());
                    Some(now.saturating_add(1))
                }
                Turn::Idle => match self.prepare_sleep(now) {
                    Announced::Awake => Some(now),
                    Announced::Until(tick) => self.sleep(&clock, Some(tick)),
                    Announced::UntilWoken => self.sleep(&clock, None),
                },
            };
        }
        self.stop()
    }

    /// Answers a manual clock's question for the earliest deadline in the wheel, if one is
    /// open (see `ask`).
    pub(crate) fn answer_lookahead(&self) {
        let lookahead = self.shared.lookahead();
        if let Some(ticket) = lookahead.begin() {
            lookahead.give(ticket, self.wheel.earliest_pending().map(Tick::new));
        }
    }

    /// Walks a piece of the survey a snapshot asked for (see `survey`); whether one is left.
    pub(crate) fn survey_step(&mut self) -> bool {
        let tick = self.shared.clock().tick();
        (self.surveying).step(&mut self.wheel, self.shared.survey(), tick)
    }
}
