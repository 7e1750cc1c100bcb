//! Time as the engine sees it: ticks from the engine's start, read from the monotonic clock
//! or a [`ManualClock`]. Deadlines round *up* and the present *down*, so no timer is early.

use std::time::{Duration, Instant};

use super::tsc::Ceiling;
use super::{ManualClock, Nanos, Tick};
use crate::sync::thread;

/// The engine's view of time: an origin, a tick length and a source. The present and a new
/// timer's birth come out as [`Tick`] and [`Nanos`]; a deadline tick that goes into an entry's
/// state word (or comes out of it) stays a `u64`, as the word packs it.
#[derive(Clone)]
pub(crate) struct TickClock {
    origin: Instant,
    tick: Duration,
    tick_nanos: TickDivisor,
    max_delay: Duration,
    last_tick: u64,
    manual: Option<ManualClock>,
    /// The cheap upper bound on the present, if any, and the origin in its nanoseconds.
    ceiling: Option<(&'static Ceiling, u64)>,
}

/// A new timer's deadline tick (`None`: beyond the range) and when it was made, in
/// nanoseconds from the origin (the present read for the deadline, or a little before it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due {
    pub(crate) tick: Option<Tick>,
    pub(crate) born: Nanos,
}

/// Division by the tick length by a multiply. With `m = floor((2^64 - 1) / d)`, the high half
/// of `n * m` is `floor(n / d)` or one less; one remainder comparison corrects it (Granlund and
/// Montgomery, 1994, without their extra bit).
#[derive(Clone, Copy, Debug)]
struct TickDivisor {
    divisor: u64,
    reciprocal: u64,
}

impl TickDivisor {
    /// `divisor` must not be 0.
    fn new(divisor: u64) -> Self {
        TickDivisor {
            divisor,
            reciprocal: u64::MAX / divisor,
        }
    }

    /// `(floor(n / divisor), n % divisor)`.
    #[inline]
    fn div_rem(self, n: u64) -> (u64, u64) {
        let mut quotient = ((u128::from(n) * u128::from(self.reciprocal)) >> 64) as u64;
        // No underflow: `quotient <= n / divisor`.
        let mut remainder = n - quotient * self.divisor;
        if remainder >= self.divisor {
            quotient += 1;
            remainder -= self.divisor;
        }
        (quotient, remainder)
    }

    #[inline]
    fn floor(self, n: u64) -> u64 {
        self.div_rem(n).0
    }

    #[inline]
    fn ceil(self, n: u64) -> u64 {
        let (quotient, remainder) = self.div_rem(n);
        quotient + u64::from(remainder != 0)
    }
}

/// The longest delay at any tick, in nanoseconds (about 292 years): half a `u64`, so origin
/// offset plus delay never overflows. Below ~134 ms ticks the wheel's span is tighter.
pub(crate) const MAX_DELAY_NANOS: u64 = u64::MAX / 2;

/// `duration` in nanoseconds, saturating at `u64::MAX` (584 years).
#[inline]
fn nanos_of(duration: Duration) -> u64 {
    duration
        .as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(duration.subsec_nanos()))
}

impl TickClock {
    /// `tick` must be at least a nanosecond; deadlines up to `span_ticks - 2` ticks away are
    /// accepted, none beyond `last_tick` (the largest an entry holds).
    pub(crate) fn new(
        tick: Duration,
        span_ticks: u64,
        last_tick: u64,
        manual: Option<ManualClock>,
    ) -> Self {
        // Before the origin is read, so that the origin is not before the ceiling's base.
        let ceiling = match &manual {
            Some(_) => None,
            None => Ceiling::get(),
        };
        let origin = match &manual {
            Some(clock) => clock.now(),
            None => Instant::now(),
        };
        let tick_nanos = nanos_of(tick).max(1);
        TickClock {
            origin,
            tick,
            tick_nanos: TickDivisor::new(tick_nanos),
            max_delay: Duration::from_nanos(
                tick_nanos
                    .saturating_mul(span_ticks - 2)
                    .min(MAX_DELAY_NANOS),
            ),
            last_tick,
            manual,
            ceiling: ceiling.map(|ceiling| (ceiling, ceiling.nanos_since_base(origin))),
        }
    }

    pub(crate) fn tick(&self) -> Duration {
        self.tick
    }

    /// The tick's length in nanoseconds.
    pub(crate) fn tick_nanos(&self) -> u64 {
        self.tick_nanos.divisor
    }

    /// The longest delay whose deadline tick is always within the span of the current tick:
    /// `ceil((now + d) / tick) - floor(now / tick) <= ceil(d / tick) + 1`.
    pub(crate) fn max_delay(&self) -> Duration {
        self.max_delay
    }

    pub(crate) fn manual(&self) -> Option<&ManualClock> {
        self.manual.as_ref()
    }

    pub(crate) fn now(&self) -> Instant {
        match &self.manual {
            Some(clock) => clock.now(),
            None => Instant::now(),
        }
    }

    /// Nanoseconds from the origin to now.
    pub(crate) fn now_nanos(&self) -> Nanos {
        Nanos::new(self.nanos_since_origin(self.now()))
    }

    /// When tick `tick` begins.
    #[inline]
    pub(crate) fn nanos_of_tick(&self, tick: Tick) -> Nanos {
        tick.start(self.tick_nanos.divisor)
    }

    /// The last tick that has fully begun: `floor((now - origin) / tick)`.
    pub(crate) fn now_tick(&self) -> Tick {
        self.floor_tick(self.now())
    }

    /// The last tick that has fully begun at `at`.
    pub(crate) fn floor_tick(&self, at: Instant) -> Tick {
        Tick::new(self.tick_nanos.floor(self.nanos_since_origin(at)))
    }

    /// The first tick at or after `deadline`: `ceil((deadline - origin) / tick)`.
    pub(super) fn ceil_tick(&self, deadline: Instant) -> u64 {
        self.tick_nanos.ceil(self.nanos_since_origin(deadline))
    }

    /// Nanoseconds from the origin to `at` (0 before it, saturating after 584 years).
    fn nanos_since_origin(&self, at: Instant) -> u64 {
        nanos_of(at.saturating_duration_since(self.origin))
    }

    /// The tick a timer `delay` from now is due at; `None` beyond the wheel's range. One read
    /// of the present (or the cheap bound, see `tsc`); a zero delay is due at the present's
    /// tick (or the next), so the shard fires it on its next turn.
    #[inline]
    pub(crate) fn tick_after(&self, delay: Duration) -> Option<u64> {
        self.tick_after_from(self.upper_nanos(), delay)
    }

    /// As [`tick_after`](Self::tick_after), with the present it read.
    #[inline]
    pub(crate) fn due_after(&self, delay: Duration) -> Due {
        let now = self.upper_nanos();
        Due {
            tick: self.tick_after_from(now, delay).map(Tick::new),
            born: Nanos::new(now),
        }
    }

    /// As [`tick_at`](Self::tick_at), with the present it read.
    pub(crate) fn due_at(&self, deadline: Instant) -> Due {
        let now = self.now();
        Due {
            tick: self.tick_at_from(deadline, now).map(Tick::new),
            born: Nanos::new(self.nanos_since_origin(now)),
        }
    }

    /// A timer due at `tick`, made about now: the calling thread's last reading of the
    /// present where that costs no clock read (see `tsc`), else a new one.
    pub(crate) fn due_now_at(&self, tick: Option<u64>) -> Due {
        let born = match self.ceiling {
            Some((ceiling, origin)) => ceiling.recent_nanos().saturating_sub(origin),
            None => self.nanos_since_origin(self.now()),
        };
        Due {
            tick: tick.map(Tick::new),
            born: Nanos::new(born),
        }
    }

    /// The instant `delay` from now and its tick, the present read as `tick_after` does (so up
    /// to 2 µs late, never early). `None`s: beyond `Instant` (both), beyond the range (tick).
    pub(crate) fn deadline_after(&self, delay: Duration) -> (Option<Instant>, Option<u64>) {
        let now = self.upper_nanos();
        // One addition to the origin where the sum fits in nanoseconds, as it nearly always does.
        let deadline = match now.checked_add(nanos_of(delay)) {
            Some(at) if at < u64::MAX => self.origin.checked_add(Duration::from_nanos(at)),
            _ => self
                .origin
                .checked_add(Duration::from_nanos(now))
                .and_then(|present| present.checked_add(delay)),
        };
        (deadline, deadline.and(self.tick_after_from(now, delay)))
    }

    /// Nanoseconds from the origin to the present, or the cheap bound above it (a deadline
    /// rounds up, so any later time will do).
    #[inline]
    fn upper_nanos(&self) -> u64 {
        match self.ceiling {
            Some((ceiling, origin)) => ceiling.upper_nanos().saturating_sub(origin),
            None => self.nanos_since_origin(self.now()),
        }
    }

    /// As `tick_after`, with the present read as `now` nanoseconds from the origin.
    #[inline]
    fn tick_after_from(&self, now: u64, delay: Duration) -> Option<u64> {
        if delay > self.max_delay {
            return None;
        }
        if delay.is_zero() {
            return Some(self.due_now(now));
        }
        // `max_delay` and the time since the origin are each at most `MAX_DELAY_NANOS`: no
        // overflow within 292 years of the start (a manual clock stops there).
        let deadline = now.checked_add(nanos_of(delay))?;
        self.holdable(self.tick_nanos.ceil(deadline))
    }

    /// The first tick at or after `limit` (`None`: beyond the range), for a deadline scope's
    /// clamp. Reads no clock; a past `limit` gives a tick already begun, which ends a sleep at
    /// once.
    #[inline]
    pub(crate) fn limit_tick(&self, limit: Instant) -> Option<u64> {
        self.holdable(self.ceil_tick(limit))
    }

    /// The farthest tick a timer scheduled now can be due at; `None` at the end of manual time.
    pub(crate) fn farthest_tick(&self) -> Option<u64> {
        self.tick_after(self.max_delay)
    }

    /// The tick a timer due at `deadline` is due at (`None`: beyond the range); a past one is
    /// due at the current tick.
    pub(crate) fn tick_at(&self, deadline: Instant) -> Option<u64> {
        self.tick_at_from(deadline, self.now())
    }

    /// As [`tick_at`](Self::tick_at), with the present already read as `now`.
    pub(crate) fn tick_at_from(&self, deadline: Instant, now: Instant) -> Option<u64> {
        if deadline <= now {
            Some(self.due_now(self.nanos_since_origin(now)))
        } else if deadline - now > self.max_delay {
            None
        } else {
            self.holdable(self.ceil_tick(deadline))
        }
    }

    /// The deadline tick of a timer due `now` from the origin: `now`'s tick, or the last tick
    /// an entry holds if earlier (a manual clock outlives 2^51 ticks under 4.096 µs).
    #[inline]
    fn due_now(&self, now: u64) -> u64 {
        self.tick_nanos.floor(now).min(self.last_tick)
    }

    /// `tick`, if a timer entry can hold it as a deadline.
    #[inline]
    fn holdable(&self, tick: u64) -> Option<u64> {
        (tick <= self.last_tick).then_some(tick)
    }

    /// The instant tick `tick` begins.
    pub(crate) fn instant_of(&self, tick: u64) -> Instant {
        let nanos = self.nanos_of_tick(Tick::new(tick));
        self.origin
            .checked_add(Duration::from_nanos(nanos.get()))
            .unwrap_or(self.origin)
    }

    /// Sleeps the calling shard thread until tick `until` begins (or forever, for `None`), or
    /// until it is unparked. May return early.
    pub(crate) fn sleep_until(&self, until: Option<Tick>) {
        match (until, &self.manual) {
            // Manual time moves only through `advance`, which unparks the shards.
            (_, Some(_)) | (None, None) => thread::park(),
            (Some(tick), None) => {
                let wake = self.instant_of(tick.get());
                let now = Instant::now();
                if wake > now {
                    thread::park_timeout(wake - now);
                }
            }
        }
    }

    /// Sleeps until the next tick begins, or for `most` if sooner, or until unparked.
    pub(crate) fn sleep_one_tick(&self, now_tick: Tick, most: Duration) {
        let nap = match &self.manual {
            Some(_) => self.tick,
            None => self
                .instant_of(now_tick.saturating_add(1).get())
                .saturating_duration_since(Instant::now()),
        };
        let nap = nap.min(most);
        if !nap.is_zero() {
            thread::park_timeout(nap);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A 1 ms tick clock on `clock`.
    fn millisecond_ticks(clock: &ManualClock) -> TickClock {
        TickClock::new(
            Duration::from_millis(1),
            1 << 36,
            u64::MAX,
            Some(clock.clone()),
        )
    }

    #[test]
    fn deadlines_round_up_and_now_rounds_down() {
        let clock = ManualClock::new();
        let ticks = millisecond_ticks(&clock);
        let origin = clock.now();
        assert_eq!(ticks.ceil_tick(origin), 0);
        assert_eq!(ticks.ceil_tick(origin + Duration::from_micros(1)), 1);
        assert_eq!(ticks.ceil_tick(origin + Duration::from_millis(1)), 1);
        assert_eq!(ticks.ceil_tick(origin + Duration::from_micros(1001)), 2);
        clock.advance(Duration::from_micros(1999));
        assert_eq!(ticks.now_tick(), Tick::new(1));
        clock.advance(Duration::from_micros(1));
        assert_eq!(ticks.now_tick(), Tick::new(2));
        assert_eq!(ticks.instant_of(2), origin + Duration::from_millis(2));
    }

    #[test]
    fn the_reciprocal_divides_exactly() {
        let divisors = [
            1,
            2,
            3,
            7,
            1_000,
            999_983,
            1_000_000,
            1 << 32,
            (1 << 32) + 1,
            u64::MAX / 3,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut numerators = vec![0, 1, 2, 999, 1_000, 1_001, u64::MAX - 1, u64::MAX];
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..2_000 {
            // xorshift: spread over the whole range and every magnitude.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            numerators.push(x);
            numerators.push(x >> (x % 64));
        }
        for &d in &divisors {
            let divisor = TickDivisor::new(d);
            for &n in numerators
                .iter()
                .chain(&[d - 1, d, d.saturating_add(1), d.saturating_mul(2)])
            {
                assert_eq!(divisor.div_rem(n), (n / d, n % d), "{n} / {d}");
                assert_eq!(divisor.ceil(n), n.div_ceil(d), "ceil {n} / {d}");
            }
        }
    }

    #[test]
    fn a_deadline_before_the_origin_is_tick_zero() {
        let clock = ManualClock::new();
        let ticks = millisecond_ticks(&clock);
        clock.advance(Duration::from_secs(1));
        assert_eq!(ticks.ceil_tick(ticks.origin - Duration::from_millis(5)), 0);
    }
}
