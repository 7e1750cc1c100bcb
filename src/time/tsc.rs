//! A cheap upper bound on the monotonic clock, read from the processor's time-stamp counter.
//!
//! A new timer needs the present only to round `now + delay` *up*, so any close value at or
//! after the present will do, and the counter alone is cheaper than `clock_gettime`. Each
//! thread keeps an *anchor* (a counter reading and the clock reading just after it):
//!
//! ```text
//! upper = anchor.nanos + (counter - anchor.counter) * rate_high + PAD
//! ```
//!
//! - The clock reading sits between two counter readings, late by at most [`BRACKET_NANOS`].
//! - `rate_high` is the measured rate raised by 1/512, more than NTP can slew the clock, so
//!   the extrapolation runs at least as fast as the clock.
//! - A thread re-anchors after [`REANCHOR_NANOS`] or if the counter went backwards; the bound
//!   is then under 2 µs after the present. `PAD` (1 µs) covers read reordering and cross-cpu
//!   skew.
//!
//! The rate is measured over windows of [`CALIBRATION_NANOS`] to 4× that, taken once two in a
//! row agree within 1/4096 and are plausible (0.1–10 ns per count); until then every read is a
//! real clock read. Each new anchor checks the old one's extrapolation against the clock; a
//! miss turns the bound off process-wide (a timer scheduled just before may be early by the
//! miss). The counter is used only where the kernel's clocksource is `tsc`; elsewhere, under
//! Miri and loom, and with `--cfg shardwheel_no_tsc`, [`Ceiling::get`] says so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use crate::sync::Mutex;

/// The shortest window over which the counter's rate is measured.
pub(super) const CALIBRATION_NANOS: u64 = 10_000_000;
/// The farthest a thread extrapolates from its anchor.
pub(super) const REANCHOR_NANOS: u64 = 250_000;
/// The longest an anchor's clock reading may take, counted between its two counter readings.
pub(super) const BRACKET_NANOS: u64 = 250;
/// The same before the rate is known, in counts (at least 1 GHz: at most 4 µs).
const BRACKET_COUNTS: u64 = 4096;
/// How many times a thread tries to take an anchor before it reads the clock alone.
const ANCHOR_TRIES: usize = 4;
/// The rate is raised by 1/512 (0.2 %).
const RATE_MARGIN_SHIFT: u32 = 9;
/// Two windows agree if their rates differ by at most 1/4096 of the larger.
const AGREEMENT_SHIFT: u32 = 12;
/// Added to every extrapolated reading.
const PAD: u64 = 1_000;
/// Fixed-point scale of the rate: nanoseconds per count, times 2^32.
const RATE_SHIFT: u32 = 32;
/// The rates a processor's counter can have: 0.1 to 10 ns per count, in fixed point.
const PLAUSIBLE_RATES: std::ops::RangeInclusive<u128> = (1 << RATE_SHIFT) / 10..=10 << RATE_SHIFT;
/// `rate` while it is not known yet.
const UNKNOWN: u64 = 0;
/// `rate` once the check has turned the bound off.
const OFF: u64 = u64::MAX;

/// The process's calibration: where its anchors count from, and the counter's rate.
pub(crate) struct Ceiling {
    /// Readings are nanoseconds since this instant.
    base: Instant,
    /// `rate_high` in fixed point, [`UNKNOWN`] until measured, or [`OFF`].
    rate: AtomicU64,
    /// The rate's measurement (taken only on the cold path).
    measuring: Mutex<Measuring>,
}

/// The rate's measurement in progress.
struct Measuring {
    /// Where the current window began: a counter reading and the clock reading after it.
    start: (u64, u64),
    /// The rate the window before measured (not raised), if it was plausible.
    previous: Option<u128>,
}

thread_local! {
    /// This thread's anchor: a counter reading and the nanoseconds since `base` read just
    /// after it. `(0, 0)` when it has none, which makes the next read re-anchor.
    static ANCHOR: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

impl Ceiling {
    /// The process's calibration, if the counter can be used here.
    pub(crate) fn get() -> Option<&'static Ceiling> {
        static CEILING: OnceLock<Option<Ceiling>> = OnceLock::new();
        CEILING.get_or_init(Ceiling::start).as_ref()
    }

    /// A new calibration, with no rate yet; `None` if the counter cannot be used here.
    fn start() -> Option<Ceiling> {
        if !counter_keeps_time() {
            return None;
        }
        let (first_count, base) = (0..ANCHOR_TRIES).find_map(|_| {
            let (before, base, after) = bracketed();
            (after.wrapping_sub(before) <= BRACKET_COUNTS).then_some((before, base))
        })?;
        Some(Ceiling {
            base,
            rate: AtomicU64::new(UNKNOWN),
            measuring: Mutex::new(Measuring {
                start: (first_count, 0),
                previous: None,
            }),
        })
    }

    /// Nanoseconds from `base` to `at` (0 before it).
    pub(crate) fn nanos_since_base(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Nanoseconds since `base`, at or after the present and at most 2 µs after it.
    #[inline]
    pub(crate) fn upper_nanos(&self) -> u64 {
        // Relaxed: the rate stands alone; a thread not seeing it yet reads the real clock, one
        // not seeing OFF yet extrapolates at most once more.
        let rate = self.rate.load(Ordering::Relaxed);
        let (anchor_count, anchor_nanos) = ANCHOR.with(|anchor| anchor.get());
        if let Some(ahead) = extrapolate(anchor_count, counter(), rate) {
            if anchor_count != 0 && ahead <= REANCHOR_NANOS {
                return anchor_nanos.saturating_add(ahead + PAD);
            }
        }
        self.reanchor(rate)
    }

    /// Nanoseconds since `base` at this thread's anchor: at or before the present, by at most
    /// [`REANCHOR_NANOS`] on a thread that reads the bound often; a new reading if it has none.
    pub(crate) fn recent_nanos(&self) -> u64 {
        match ANCHOR.with(|anchor| anchor.get()) {
            (0, _) => self.upper_nanos(),
            (_, nanos) => nanos,
        }
    }

    /// Reads the clock, takes a new anchor for this thread if it can, and returns the reading.
    #[cold]
    fn reanchor(&self, mut rate: u64) -> u64 {
        let old = ANCHOR.with(|anchor| anchor.replace((0, 0)));
        let mut nanos = 0;
        for _ in 0..ANCHOR_TRIES {
            if rate == OFF {
                break;
            }
            let (before, at, after) = bracketed();
            nanos = self.nanos_since_base(at);
            if after.wrapping_sub(before) > BRACKET_COUNTS {
                continue;
            }
            if rate == UNKNOWN {
                match self.measure(before, nanos) {
                    Some(measured) => rate = measured,
                    None => return nanos,
                }
            }
            if extrapolate(before, after, rate).is_none_or(|bracket| bracket > BRACKET_NANOS) {
                continue;
            }
            // The check: would the old anchor have given at least this clock reading?
            let (old_count, old_nanos) = old;
            if let Some(ahead) = extrapolate(old_count, before, rate) {
                let predicted = old_nanos.saturating_add(ahead).saturating_add(PAD);
                if old_count != 0 && predicted < nanos {
                    // Relaxed: as in `upper_nanos`.
                    self.rate.store(OFF, Ordering::Relaxed);
                    crate::trace::counter_off(nanos - predicted);
                    break;
                }
            }
            ANCHOR.with(|anchor| anchor.set((before, nanos)));
            return nanos;
        }
        // No anchor: the bound is off, or the thread kept being preempted.
        self.nanos_since_base(Instant::now()).max(nanos)
    }

    /// Ends a measuring window at `(count, nanos)` (a bracketed reading) and starts the next;
    /// returns the rate once two windows agree.
    #[cold]
    fn measure(&self, count: u64, nanos: u64) -> Option<u64> {
        let mut measuring = self.measuring.lock();
        // Relaxed: as in `upper_nanos`; another thread may have measured it meanwhile.
        match self.rate.load(Ordering::Relaxed) {
            UNKNOWN => {}
            OFF => return None,
            known => return Some(known),
        }
        let (start_count, start_nanos) = measuring.start;
        let window = nanos.saturating_sub(start_nanos);
        if window < CALIBRATION_NANOS {
            return None;
        }
        measuring.start = (count, nanos);
        let counts = count.wrapping_sub(start_count);
        let rate = (window <= 4 * CALIBRATION_NANOS && counts > 0 && counts < 1 << 63)
            .then(|| (u128::from(window) << RATE_SHIFT) / u128::from(counts))
            .filter(|rate| PLAUSIBLE_RATES.contains(rate));
        let previous = std::mem::replace(&mut measuring.previous, rate);
        let (rate, previous) = (rate?, previous?);
        let larger = rate.max(previous);
        if larger - rate.min(previous) > larger >> AGREEMENT_SHIFT {
            return None;
        }
        let raised = u64::try_from(larger + (larger >> RATE_MARGIN_SHIFT) + 1).ok()?;
        // Relaxed: as in `upper_nanos`.
        self.rate.store(raised, Ordering::Relaxed);
        Some(raised)
    }
}

/// A clock reading between two counter readings.
fn bracketed() -> (u64, Instant, u64) {
    let before = counter();
    let at = Instant::now();
    (before, at, counter())
}

/// Nanoseconds the counter took from `from` to `to` at `rate`; `None` if it went backwards
/// (or wrapped), or the rate is not usable.
fn extrapolate(from: u64, to: u64, rate: u64) -> Option<u64> {
    let span = to.wrapping_sub(from);
    if rate == UNKNOWN || rate == OFF || span >= 1 << 63 {
        return None;
    }
    u64::try_from((u128::from(span) * u128::from(rate)) >> RATE_SHIFT).ok()
}

use source::{counter, counter_keeps_time};

/// The counter, where the kernel keeps time with it.
#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(miri),
    not(loom),
    not(shardwheel_no_tsc)
))]
mod source {
    #[inline]
    pub(super) fn counter() -> u64 {
        // SAFETY: `rdtsc` has no preconditions; every x86-64 processor has it.
        unsafe { std::arch::x86_64::_rdtsc() }
    }

    /// Whether the kernel keeps its monotonic clock with the counter (invariant and synced).
    pub(super) fn counter_keeps_time() -> bool {
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|source| source.trim() == "tsc")
    }
}

/// No counter: elsewhere, under Miri and loom, and with `--cfg shardwheel_no_tsc`.
#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(miri),
    not(loom),
    not(shardwheel_no_tsc)
)))]
mod source {
    pub(super) fn counter() -> u64 {
        unreachable!("the counter is read only where `counter_keeps_time` said yes")
    }

    pub(super) fn counter_keeps_time() -> bool {
        false
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;
    use std::thread;
    use std::time::Duration;

    const ONE_NS: u128 = 1 << RATE_SHIFT;

    /// A calibration whose windows are fed by hand, at 1 ns per count.
    fn fed() -> Ceiling {
        Ceiling {
            base: Instant::now(),
            rate: AtomicU64::new(UNKNOWN),
            measuring: Mutex::new(Measuring {
                start: (1_000, 0),
                previous: None,
            }),
        }
    }

    /// The build CI runs the fallback clock in: the counter is never read.
    #[cfg(shardwheel_no_tsc)]
    #[test]
    fn the_counter_is_off_in_a_build_without_it() {
        assert!(!counter_keeps_time());
    }

    #[test]
    fn the_rate_is_taken_when_two_windows_agree_and_raised() {
        let ceiling = fed();
        let window = CALIBRATION_NANOS;
        assert_eq!(
            ceiling.measure(1_000 + window / 2, window / 2),
            None,
            "too short"
        );
        assert_eq!(ceiling.measure(1_000 + window, window), None, "one window");
        let rate = ceiling
            .measure(1_000 + 2 * window, 2 * window)
            .expect("two agree");
        assert!(u128::from(rate) > ONE_NS + (ONE_NS >> RATE_MARGIN_SHIFT));
        assert!(u128::from(rate) <= ONE_NS + (ONE_NS >> RATE_MARGIN_SHIFT) + 2);
        assert_eq!(ceiling.rate.load(Ordering::Relaxed), rate);
    }

    #[test]
    fn a_window_with_a_suspend_or_a_reset_counter_is_not_taken() {
        let ceiling = fed();
        let window = CALIBRATION_NANOS;
        // The counter ran on for 9 windows while the clock stood still.
        let mut count = 1_000 + 10 * window;
        assert_eq!(ceiling.measure(count, window), None);
        count += window;
        assert_eq!(
            ceiling.measure(count, 2 * window),
            None,
            "disagrees with the one before"
        );
        // The counter started again from zero.
        assert_eq!(ceiling.measure(5, 3 * window), None);
        // Too long a window, and a rate no processor has.
        assert_eq!(ceiling.measure(5 + window, 8 * window), None);
        assert_eq!(ceiling.measure(5 + window + 10, 9 * window), None);
        assert_eq!(ceiling.rate.load(Ordering::Relaxed), UNKNOWN);
        // Two good windows in a row again.
        let start = 5 + window + 10;
        assert_eq!(ceiling.measure(start + window, 10 * window), None);
        assert!(ceiling.measure(start + 2 * window, 11 * window).is_some());
    }

    /// Reads bracketed by two clock reads: never below the first, and no more than 2 µs
    /// above the second.
    fn check_bracketed(ceiling: &Ceiling, rounds: usize) {
        for round in 0..rounds {
            let before = ceiling.nanos_since_base(Instant::now());
            let upper = ceiling.upper_nanos();
            let after = ceiling.nanos_since_base(Instant::now());
            assert!(upper >= before, "round {round}: {upper} < {before}");
            assert!(
                upper <= after + 2_000,
                "round {round}: {upper} more than 2 µs past {after}"
            );
            if round % 1000 == 999 {
                // Let anchors go stale, so that reads both extrapolate and re-anchor.
                thread::sleep(Duration::from_micros(300));
            }
        }
    }

    #[test]
    fn never_below_the_clock_and_close_above_it() {
        let Some(ceiling) = Ceiling::get() else {
            // The kernel does not keep time with the counter here: nothing to check.
            return;
        };
        // Before and after calibration, on several threads at once.
        thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    check_bracketed(ceiling, 2_000);
                    thread::sleep(Duration::from_nanos(3 * CALIBRATION_NANOS));
                    check_bracketed(ceiling, 200_000);
                });
            }
        });
        // Relaxed: read after the threads were joined.
        let rate = ceiling.rate.load(Ordering::Relaxed);
        assert!(rate != UNKNOWN && rate != OFF, "calibrated and on");
    }

    #[test]
    fn a_counter_that_falls_behind_the_clock_turns_the_bound_off() {
        let Some(ceiling) = Ceiling::start() else {
            return;
        };
        // The counter's true rate, then a rate half of it: as if the counter had slowed down.
        let (count, nanos) = (counter(), ceiling.nanos_since_base(Instant::now()));
        thread::sleep(Duration::from_millis(20));
        let (count_later, nanos_later) = (counter(), ceiling.nanos_since_base(Instant::now()));
        let rate =
            (u128::from(nanos_later - nanos) << RATE_SHIFT) / u128::from(count_later - count);
        ceiling
            .rate
            .store(u64::try_from(rate / 2).unwrap(), Ordering::Relaxed);
        // On a thread of its own, so that its anchor is this calibration's.
        thread::spawn(move || {
            ceiling.upper_nanos();
            thread::sleep(Duration::from_millis(1));
            // The new anchor's check finds the old one 500 µs short.
            let read = ceiling.upper_nanos();
            assert_eq!(ceiling.rate.load(Ordering::Relaxed), OFF);
            assert!(read >= ceiling.nanos_since_base(Instant::now()) - 1_000_000);
            // From now on, clock readings.
            for _ in 0..1_000 {
                let before = ceiling.nanos_since_base(Instant::now());
                assert!(ceiling.upper_nanos() >= before);
            }
        })
        .join()
        .unwrap();
    }
}
