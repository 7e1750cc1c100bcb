//! The two units the engine counts time in, kept apart by type: [`Tick`], a tick's number
//! from the engine's start, and [`Nanos`], nanoseconds from the clock's origin. A span of
//! either (how many ticks or nanoseconds) stays a `u64`; the tick length, in nanoseconds,
//! converts one into the other. Each is a `u64` at run time.

/// A tick's number, counted from the engine's start (tick 0 begins at the clock's origin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(transparent)]
pub(crate) struct Tick(u64);

/// An instant as nanoseconds from the clock's origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(transparent)]
pub(crate) struct Nanos(u64);

/// The methods both units share: made from and read as a `u64`, moved by a span, saturating.
macro_rules! unit_methods {
    ($unit:ident, $new:literal) => {
        impl $unit {
            #[doc = $new]
            #[inline]
            pub(crate) const fn new(value: u64) -> Self {
                $unit(value)
            }

            /// The `u64` it is, for an atomic, an entry or the wheel that keeps it.
            #[inline]
            pub(crate) const fn get(self) -> u64 {
                self.0
            }

            /// `span` later, saturating.
            #[inline]
            pub(crate) const fn saturating_add(self, span: u64) -> Self {
                $unit(self.0.saturating_add(span))
            }

            /// `span` earlier, saturating at 0.
            #[inline]
            pub(crate) const fn saturating_sub(self, span: u64) -> Self {
                $unit(self.0.saturating_sub(span))
            }
        }
    };
}

unit_methods!(Tick, "Tick number `value`.");
unit_methods!(
    Nanos,
    "The instant `value` nanoseconds after the clock's origin."
);

impl Tick {
    /// When the tick begins, for ticks `tick_nanos` long (saturating).
    #[inline]
    pub(crate) const fn start(self, tick_nanos: u64) -> Nanos {
        Nanos(self.0.saturating_mul(tick_nanos))
    }
}

impl Nanos {
    /// The clock's origin.
    pub(crate) const ORIGIN: Nanos = Nanos(0);

    /// Nanoseconds from `earlier` to this instant, 0 if `earlier` is later.
    #[inline]
    pub(crate) const fn saturating_since(self, earlier: Nanos) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The first tick that begins at or after this instant, for ticks `tick_nanos` (not 0)
    /// long.
    #[inline]
    pub(crate) const fn ceil_tick(self, tick_nanos: u64) -> Tick {
        Tick(self.0.div_ceil(tick_nanos))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_tick_and_its_start_convert_through_the_tick_length() {
        assert_eq!(Tick::new(3).start(1_000), Nanos::new(3_000));
        assert_eq!(Tick::new(u64::MAX).start(2), Nanos::new(u64::MAX));
        assert_eq!(Nanos::new(3_000).ceil_tick(1_000), Tick::new(3));
        assert_eq!(Nanos::new(3_001).ceil_tick(1_000), Tick::new(4));
        assert_eq!(Nanos::ORIGIN.ceil_tick(1_000), Tick::new(0));
        assert_eq!(Tick::new(0).saturating_sub(1), Tick::new(0));
        assert_eq!(Nanos::new(5).saturating_since(Nanos::new(7)), 0);
        assert_eq!(Nanos::new(7).saturating_since(Nanos::new(5)), 2);
    }
}
