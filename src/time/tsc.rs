//! A cheap upper bound on the monotonic clock, read from the processor's time-stamp counter.
//!
//! Scheduling a timer needs the present only to round `now + delay` *up* to a tick, so any
//! value at or after the true present will do, as long as it is close. Reading the monotonic
//! clock costs about 23 ns here (the vDSO's `clock_gettime`, which itself reads the counter
//! and scales it); reading the counter alone costs about 9. So each thread keeps an *anchor*,
//! a counter reading and the clock reading taken just after it, and extrapolates from it:
//!
//! ```text
//! upper = anchor.nanos + (counter - anchor.counter) * rate_high + PAD
//! ```
//!
//! - The anchor's clock reading is taken between two counter readings, the first of which it
//!   keeps: so the clock reading is at or after the true time of that counter value, and
//!   late by no more than [`BRACKET_NANOS`] (a thread preempted in between tries again).
//! - `rate_high` is the counter's measured rate (nanoseconds per count, over at least
//!   [`CALIBRATION_NANOS`]) raised by [`RATE_MARGIN`], more than the monotonic clock can be
//!   slewed against the counter (NTP slews it by at most 0.05 %). So the extrapolated time
//!   runs at least as fast as the clock.
//! - A thread takes a new anchor (one real clock read) once its extrapolation would cover more
//!   than [`REANCHOR_NANOS`], or if the counter went backwards. The bound is then at most
//!   `BRACKET_NANOS + REANCHOR_NANOS / 512 + PAD`, under 2 µs, after the present.
//! - `PAD` covers the counter read being reordered a little ahead of the instructions before
//!   it, and the small differences between the counters of two cores a thread may move
//!   between.
//!
//! Until the rate is calibrated (the first [`CALIBRATION_NANOS`] of the process's use of it),
//! every read is a real clock read. The counter is used only where the kernel itself keeps
//! time with it (its clocksource is `tsc`), which it does only when the counter runs at a
//! constant rate, in sleep states too, and in step on every core; elsewhere, and under Miri
//! and loom, [`Ceiling::get`] says so and the engine reads the clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// How long the first anchor and a later one must be apart to measure the counter's rate.
pub(super) const CALIBRATION_NANOS: u64 = 20_000_000;
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
/// Added to every extrapolated reading.
const PAD: u64 = 1_000;
/// Fixed-point scale of the rate: nanoseconds per count, times 2^32.
const RATE_SHIFT: u32 = 32;

/// The process's calibration: where its anchors count from, and the counter's rate.
pub(crate) struct Ceiling {
    /// Readings are nanoseconds since this instant.
    base: Instant,
    /// The counter reading taken just before `base` (within `BRACKET_COUNTS`).
    first_count: u64,
    /// `rate_high` in fixed point, or 0 until calibrated.
    rate: AtomicU64,
}

thread_local! {
    /// This thread's anchor: a counter reading and the nanoseconds since `base` read just
    /// after it. `(0, 0)` until the first read, which re-anchors.
    static ANCHOR: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

impl Ceiling {
    /// The process's calibration, if the counter can be used here.
    pub(crate) fn get() -> Option<&'static Ceiling> {
        static CEILING: OnceLock<Option<Ceiling>> = OnceLock::new();
        CEILING
            .get_or_init(|| {
                if !counter_keeps_time() {
                    return None;
                }
                let (first_count, base) = (0..ANCHOR_TRIES).find_map(|_| {
                    let (before, base, after) = (counter(), Instant::now(), counter());
                    (after.wrapping_sub(before) <= BRACKET_COUNTS).then_some((before, base))
                })?;
                Some(Ceiling {
                    base,
                    first_count,
                    rate: AtomicU64::new(0),
                })
            })
            .as_ref()
    }

    /// Nanoseconds from `base` to `at` (0 before it).
    pub(crate) fn nanos_since_base(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Nanoseconds since `base`, at or after the present and at most 2 µs after it.
    #[inline]
    pub(crate) fn upper_nanos(&self) -> u64 {
        // Relaxed: the rate is a value on its own, written once; a thread that does not see it
        // yet reads the real clock instead.
        let rate = self.rate.load(Ordering::Relaxed);
        let now = counter();
        let (anchor_count, anchor_nanos) = ANCHOR.with(|anchor| anchor.get());
        // A counter that went backwards wraps to a huge span, and re-anchors.
        let span = u128::from(now.wrapping_sub(anchor_count));
        let ahead = (span * u128::from(rate)) >> RATE_SHIFT;
        if rate != 0 && anchor_count != 0 && ahead <= u128::from(REANCHOR_NANOS) {
            return anchor_nanos + ahead as u64 + PAD;
        }
        self.reanchor(rate)
    }

    /// Reads the clock; takes a new anchor for this thread if the rate is known (measuring it
    /// first if it is time to), and returns the clock reading.
    #[cold]
    fn reanchor(&self, mut rate: u64) -> u64 {
        let mut nanos = 0;
        for _ in 0..ANCHOR_TRIES {
            let before = counter();
            nanos = self.nanos_since_base(Instant::now());
            let after = counter();
            if rate == 0 && nanos >= CALIBRATION_NANOS {
                if let Some(measured) = rate_high(nanos, before.wrapping_sub(self.first_count)) {
                    // Relaxed: as in `upper_nanos`; racing calibrations each store a sound
                    // rate.
                    self.rate.store(measured, Ordering::Relaxed);
                    rate = measured;
                }
            }
            let bracket = (u128::from(after.wrapping_sub(before)) * u128::from(rate)) >> RATE_SHIFT;
            if rate != 0 && bracket <= u128::from(BRACKET_NANOS) {
                ANCHOR.with(|anchor| anchor.set((before, nanos)));
                return nanos;
            }
            if rate == 0 {
                break;
            }
        }
        // No anchor (the rate is not known yet, or the thread kept being preempted): the next
        // read tries again.
        ANCHOR.with(|anchor| anchor.set((0, 0)));
        nanos
    }
}

/// The counter's rate, in fixed point and raised by the margin: `nanos` passed while it
/// counted `counts`. The clock reading at `base` is late by at most `BRACKET_COUNTS` (4 µs)
/// against `first_count`, which over `CALIBRATION_NANOS` lowers the rate by at most 0.02 %;
/// the later reading is late too, which raises it. The margin, 0.2 %, covers that and the
/// clock's slewing.
fn rate_high(nanos: u64, counts: u64) -> Option<u64> {
    if counts == 0 {
        return None;
    }
    let rate = (u128::from(nanos) << RATE_SHIFT) / u128::from(counts) + 1;
    let raised = rate + (rate >> RATE_MARGIN_SHIFT) + 1;
    u64::try_from(raised).ok()
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
fn counter() -> u64 {
    // SAFETY: `rdtsc` has no preconditions; every x86-64 processor has it.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom))))]
fn counter() -> u64 {
    unreachable!("the counter is read only where `counter_keeps_time` said yes")
}

/// Whether the kernel keeps its monotonic clock with the time-stamp counter, which it does
/// only when the counter is invariant and synchronised across cores.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
fn counter_keeps_time() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|source| source.trim() == "tsc")
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom))))]
fn counter_keeps_time() -> bool {
    false
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn the_rate_is_raised_and_rounded_up() {
        // 1 ns per count, exactly: raised by 1/512 and rounded up.
        let rate = rate_high(1_000_000, 1_000_000).unwrap();
        assert!(rate > 1 << RATE_SHIFT);
        assert!(rate <= (1 << RATE_SHIFT) + (1 << (RATE_SHIFT - RATE_MARGIN_SHIFT)) + 2);
        assert_eq!(rate_high(5, 0), None);
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
                    thread::sleep(Duration::from_nanos(CALIBRATION_NANOS));
                    check_bracketed(ceiling, 200_000);
                });
            }
        });
        // Relaxed: read after the threads were joined.
        assert_ne!(ceiling.rate.load(Ordering::Relaxed), 0, "calibrated");
    }
}
