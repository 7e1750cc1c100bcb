//! Time as the engine sees it: ticks counted from the engine's start, read from the monotonic
//! clock or from a [`ManualClock`] that moves only when a test moves it.
//!
//! A deadline becomes a tick by rounding *up* and the current time becomes a tick by rounding
//! *down*, so a timer whose tick has been reached is never early.

use std::time::{Duration, Instant};

use super::tsc::Ceiling;
use super::ManualClock;
use crate::sync::thread;

/// The engine's view of time: an origin, a tick length and a source.
#[derive(Clone)]
pub(crate) struct TickClock {
    origin: Instant,
    tick: Duration,
    tick_nanos: TickDivisor,
    max_delay: Duration,
    last_tick: u64,
    manual: Option<ManualClock>,
    /// The cheap upper bound on the present, where there is one, and the origin in its
    /// terms (nanoseconds since its base).
    ceiling: Option<(&'static Ceiling, u64)>,
}

/// Division by the tick length in nanoseconds, by a multiply instead of a divide instruction
/// (which costs tens of cycles on the scheduling path).
///
/// With `m = floor((2^64 - 1) / d)`, the high half of `n * m` is `floor(n / d)` or one less: `m`
/// falls short of `2^64 / d` by at most 1, so `n * m / 2^64` falls short of `n / d` by less than
/// `n / 2^64 < 1`. One comparison of the remainder corrects it (the method of Granlund and
/// Montgomery, "Division by invariant integers using multiplication", 1994, without their
/// extra bit of precision).
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

/// The longest delay at any tick, in nanoseconds (about 292 years): half of what a `u64` of
/// nanoseconds holds, so that a deadline (the time since the origin, which a manual clock also
/// keeps within this bound, plus a delay) never overflows. At ticks of up to about 134 ms the
/// wheel's span is the tighter bound.
pub(crate) const MAX_DELAY_NANOS: u64 = u64::MAX / 2;

/// `duration` in nanoseconds, saturating at `u64::MAX` (584 years).
fn nanos_of(duration: Duration) -> u64 {
    duration
        .as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(duration.subsec_nanos()))
}

impl TickClock {
    /// `tick` must be at least a nanosecond; deadlines up to `span_ticks - 2` ticks away are
    /// accepted (see `max_delay`), and none beyond tick `last_tick` (the largest deadline a
    /// timer entry can hold).
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

    /// The longest delay whose deadline tick is always less than the span from the current
    /// tick: `ceil((now + d) / tick) - floor(now / tick) <= ceil(d / tick) + 1`.
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
    pub(crate) fn now_nanos(&self) -> u64 {
        self.nanos_since_origin(self.now())
    }

    /// Nanoseconds from the origin to the start of tick `tick`.
    pub(crate) fn nanos_of_tick(&self, tick: u64) -> u64 {
        self.tick_nanos.divisor.saturating_mul(tick)
    }

    /// The last tick that has fully begun: `floor((now - origin) / tick)`.
    pub(crate) fn now_tick(&self) -> u64 {
        self.floor_tick(self.now())
    }

    /// The last tick that has fully begun at `at`.
    pub(crate) fn floor_tick(&self, at: Instant) -> u64 {
        self.tick_nanos.floor(self.nanos_since_origin(at))
    }

    /// The first tick at or after `deadline`: `ceil((deadline - origin) / tick)`.
    pub(super) fn ceil_tick(&self, deadline: Instant) -> u64 {
        self.tick_nanos.ceil(self.nanos_since_origin(deadline))
    }

    /// Nanoseconds from the origin to `at` (0 before it; they cover 584 years, and saturate
    /// beyond).
    fn nanos_since_origin(&self, at: Instant) -> u64 {
        nanos_of(at.saturating_duration_since(self.origin))
    }

    /// The tick a timer `delay` from now is due at; `None` if that is beyond the wheel's range.
    /// Works in nanoseconds from the origin: one read of the present (or of the cheap bound
    /// above it, see `tsc`), one subtraction, one add. A zero delay is due at the tick the
    /// present is in (with the bound, possibly the next one, beginning within 2 µs), so the
    /// shard fires it on its next turn, even at the end of a manual clock's time.
    pub(crate) fn tick_after(&self, delay: Duration) -> Option<u64> {
        self.tick_after_from(self.upper_nanos(), delay)
    }

    /// The instant `delay` from now and its tick, with the present read as `tick_after` reads
    /// it: the instant may be up to 2 µs later than `now() + delay`, never earlier. `None`s:
    /// beyond what `Instant` represents (both), beyond the wheel's range (the tick).
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

    /// Nanoseconds from the origin to the present, or to the cheap bound above it where there
    /// is one (any time at or after the present will do for a deadline, which rounds up).
    fn upper_nanos(&self) -> u64 {
        match self.ceiling {
            Some((ceiling, origin)) => ceiling.upper_nanos().saturating_sub(origin),
            None => self.nanos_since_origin(self.now()),
        }
    }

    /// As `tick_after`, with the present read as `now` nanoseconds from the origin.
    fn tick_after_from(&self, now: u64, delay: Duration) -> Option<u64> {
        if delay > self.max_delay {
            return None;
        }
        if delay.is_zero() {
            return Some(self.due_now(now));
        }
        // `max_delay` and the time since the origin are each at most `MAX_DELAY_NANOS`, so
        // the sum does not overflow while the monotonic clock stays within 292 years of the
        // engine's start (a manual clock stops there).
        let deadline = now.checked_add(nanos_of(delay))?;
        self.holdable(self.tick_nanos.ceil(deadline))
    }

    /// The farthest tick a timer scheduled now can be due at (`max_delay` from now); `None`
    /// at the end of a manual clock's time, where no tick is left for one.
    pub(crate) fn farthest_tick(&self) -> Option<u64> {
        self.tick_after(self.max_delay)
    }

    /// The tick a timer due at `deadline` is due at; `None` if that is beyond the wheel's
    /// range. A deadline already past is due at the current tick, as a zero delay is.
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

    /// The deadline tick of a timer due `now` nanoseconds from the origin: the tick `now` is
    /// in, or the last tick an entry can hold if that is earlier (a manual clock, which stops
    /// at 2^63 ns, outlives the 2^51 ticks of a tick shorter than 4.096 µs); either is due at
    /// once.
    fn due_now(&self, now: u64) -> u64 {
        self.tick_nanos.floor(now).min(self.last_tick)
    }

    /// `tick`, if a timer entry can hold it as a deadline.
    fn holdable(&self, tick: u64) -> Option<u64> {
        (tick <= self.last_tick).then_some(tick)
    }

    /// The instant tick `tick` begins.
    pub(crate) fn instant_of(&self, tick: u64) -> Instant {
        let nanos = self.nanos_of_tick(tick);
        self.origin
            .checked_add(Duration::from_nanos(nanos))
            .unwrap_or(self.origin)
    }

    /// Sleeps the calling shard thread until tick `until` begins (or forever, for `None`), or
    /// until it is unparked. May return early.
    pub(crate) fn sleep_until(&self, until: Option<u64>) {
        match (until, &self.manual) {
            // Manual time moves only through `advance`, which unparks the shards.
            (_, Some(_)) | (None, None) => thread::park(),
            (Some(tick), None) => {
                let wake = self.instant_of(tick);
                let now = Instant::now();
                if wake > now {
                    thread::park_timeout(wake - now);
                }
            }
        }
    }

    /// Sleeps until the next tick begins (the polling step while work is flowing in), or for
    /// `most` if that is sooner, or until unparked.
    pub(crate) fn sleep_one_tick(&self, now_tick: u64, most: Duration) {
        let nap = match &self.manual {
            Some(_) => self.tick,
            None => self
                .instant_of(now_tick.saturating_add(1))
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
        assert_eq!(ticks.now_tick(), 1);
        clock.advance(Duration::from_micros(1));
        assert_eq!(ticks.now_tick(), 2);
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
