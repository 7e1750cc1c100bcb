//! When a young timer leaves its owner's lane (see `queue::young`): the owner sends a live one
//! once it is [`SEND_AFTER`] old, the shard takes one its owner left once it is
//! [`TAKE_AFTER`] old, and only a timer due well after that is kept young at all, so each one
//! is in the wheel before its deadline.

use crate::time::{Nanos, Tick};

/// How old a young timer is when the shard takes it, at least (and at least two ticks).
const TAKE_AFTER: u64 = 2_000_000;

/// How far a young timer's deadline is past the time the shard takes it, at least, in ticks.
const MARGIN_TICKS: u64 = 2;

/// A shard's horizons, spans in nanoseconds of its clock: the owner sends a live young timer
/// `send_after` old, the shard takes one `take_after` old, and a timer due sooner than
/// `shortest` after it was made is not kept young.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Horizon {
    tick_nanos: u64,
    send_after: u64,
    take_after: u64,
    shortest: u64,
}

impl Horizon {
    pub(crate) fn new(tick_nanos: u64) -> Self {
        let take_after = TAKE_AFTER.max(tick_nanos.saturating_mul(2));
        Horizon {
            tick_nanos,
            send_after: take_after / 2,
            take_after,
            shortest: take_after.saturating_add(tick_nanos.saturating_mul(MARGIN_TICKS)),
        }
    }

    /// Whether a timer due at `tick`, made at `born`, may be kept young.
    #[inline]
    pub(super) fn keeps(&self, tick: Tick, born: Nanos) -> bool {
        tick.start(self.tick_nanos) >= born.saturating_add(self.shortest)
    }

    /// Whether the owner sends a live young timer made at `born`, `now`.
    #[inline]
    pub(super) fn sends(&self, born: Nanos, now: Nanos) -> bool {
        born.saturating_add(self.send_after) <= now
    }

    /// The latest birth of a young timer the shard takes at tick `now`.
    #[inline]
    pub(super) fn taken_by(&self, now: Tick) -> Nanos {
        now.start(self.tick_nanos).saturating_sub(self.take_after)
    }

    /// The tick by which the shard takes a young timer made at `born`.
    #[inline]
    pub(super) fn take_tick(&self, born: Nanos) -> Tick {
        born.saturating_add(self.take_after)
            .ceil_tick(self.tick_nanos)
    }

    /// Whether a shard asleep until tick `until` sleeps past [`take_tick`](Self::take_tick)
    /// of a young timer made at `born` (without its division).
    #[inline]
    pub(super) fn outsleeps(&self, until: Tick, born: Nanos) -> bool {
        until.saturating_sub(1).start(self.tick_nanos) >= born.saturating_add(self.take_after)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_kept_timer_is_taken_before_its_deadline() {
        for tick_nanos in [100_000, 1_000_000, 3_000_000, 1_000_000_000] {
            let horizon = Horizon::new(tick_nanos);
            for born in [0, 1, 999_999, 1_000_000, 12_345_678_901].map(Nanos::new) {
                let first_kept = (0..)
                    .map(Tick::new)
                    .find(|&tick| horizon.keeps(tick, born))
                    .expect("a far enough tick");
                assert!(
                    horizon.take_tick(born).saturating_add(MARGIN_TICKS) <= first_kept,
                    "tick {tick_nanos} ns, born {born:?}"
                );
                assert!(horizon.taken_by(horizon.take_tick(born)) >= born);
                let take = horizon.take_tick(born).get();
                for until in take.saturating_sub(2)..take + 3 {
                    let outsleeps = horizon.outsleeps(Tick::new(until), born);
                    assert_eq!(outsleeps, until > take);
                }
                let send = born.saturating_add(horizon.take_after / 2);
                assert!(horizon.sends(born, send));
                assert!(!horizon.sends(born, send.saturating_sub(1)));
            }
        }
    }
}
