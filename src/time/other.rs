//! The other clocks a deadline can be on: the boot clock, which counts the time the machine
//! slept (a monotonic clock stops then), and the wall clock (`SystemTime`), which NTP or an
//! operator may step. Each is read in nanoseconds, from the system or a [`ManualClock`]; a
//! deadline on one is timed on the engine's monotonic clock at its estimate (see `clock`).
//!
//! [`ManualClock`]: super::ManualClock

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::TickClock;

/// A clock other than the engine's monotonic one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum OtherClock {
    /// Time since boot, suspends included: `CLOCK_BOOTTIME` (Linux), `CLOCK_MONOTONIC_RAW`
    /// (Apple), `QueryPerformanceCounter` (Windows).
    Boot,
    /// `SystemTime`, in nanoseconds since the Unix epoch (0 before it).
    Wall,
}

impl OtherClock {
    pub(crate) const BOTH: [OtherClock; 2] = [OtherClock::Boot, OtherClock::Wall];
}

/// One `T` for each other clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PerClock<T> {
    pub(crate) boot: T,
    pub(crate) wall: T,
}

impl<T> PerClock<T> {
    pub(crate) fn of(&self, clock: OtherClock) -> &T {
        match clock {
            OtherClock::Boot => &self.boot,
            OtherClock::Wall => &self.wall,
        }
    }

    pub(crate) fn of_mut(&mut self, clock: OtherClock) -> &mut T {
        match clock {
            OtherClock::Boot => &mut self.boot,
            OtherClock::Wall => &mut self.wall,
        }
    }
}

impl PerClock<bool> {
    /// Each clock taken as stepped: every timer on it re-timed.
    pub(crate) const EACH_STEPPED: PerClock<bool> = PerClock {
        boot: true,
        wall: true,
    };
}

/// A deadline on an other clock, in that clock's nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct OtherDeadline {
    pub(crate) clock: OtherClock,
    pub(crate) nanos: u64,
}

/// Where an other-clock deadline stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// Its clock has reached it.
    Due,
    /// Not yet: the tick its estimate falls at on the monotonic clock (a far one's stand-in).
    At(u64),
}

impl TickClock {
    /// Now on `clock`, in its nanoseconds; `None` where the platform has no boot clock.
    pub(crate) fn other_now(&self, clock: OtherClock) -> Option<u64> {
        match (clock, self.manual()) {
            (OtherClock::Boot, Some(manual)) => Some(manual.boot_nanos()),
            (OtherClock::Wall, Some(manual)) => Some(wall_nanos(manual.wall())),
            (OtherClock::Boot, None) => boot_nanos(),
            (OtherClock::Wall, None) => Some(wall_nanos(SystemTime::now())),
        }
    }

    /// The deadline `delay` from now on the boot clock; `None` where there is none.
    pub(crate) fn boot_after(&self, delay: Duration) -> Option<OtherDeadline> {
        let now = self.other_now(OtherClock::Boot)?;
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        Some(OtherDeadline {
            clock: OtherClock::Boot,
            nanos: now.saturating_add(nanos),
        })
    }

    /// `deadline` as a wall-clock deadline.
    pub(crate) fn wall_at(deadline: SystemTime) -> OtherDeadline {
        OtherDeadline {
            clock: OtherClock::Wall,
            nanos: wall_nanos(deadline),
        }
    }

    /// Whether `deadline` has passed on its clock, else the tick of its estimate: now plus what
    /// is left on its clock, or the farthest tick a timer takes if that is beyond.
    pub(crate) fn look(&self, deadline: OtherDeadline) -> Look {
        let now = self.other_now(deadline.clock).unwrap_or(0);
        if now >= deadline.nanos {
            return Look::Due;
        }
        let left = Duration::from_nanos(deadline.nanos - now);
        // At the end of a manual clock's time no tick is left ahead: look again each tick.
        let tick = (self.tick_after(left).or_else(|| self.farthest_tick()))
            .unwrap_or_else(|| self.now_tick().get().saturating_add(1));
        Look::At(tick)
    }

    /// The tick a timer due at `deadline` waits at: its estimate's, or the present's if it
    /// has passed.
    pub(crate) fn estimate(&self, deadline: OtherDeadline) -> u64 {
        match self.look(deadline) {
            Look::Due => self.tick_at(self.now()).unwrap_or(0),
            Look::At(tick) => tick,
        }
    }

    /// Now on `clock`, and it less the monotonic clock in nanoseconds: that moves when the
    /// machine sleeps (boot) or the wall clock is stepped. `None` where the clock is missing.
    pub(crate) fn offset(&self, clock: OtherClock) -> Option<(u64, i128)> {
        let other = self.other_now(clock)?;
        Some((
            other,
            i128::from(other) - i128::from(self.now_nanos().get()),
        ))
    }
}

/// `at` in nanoseconds since the Unix epoch: 0 before it, saturating after the year 2554.
pub(crate) fn wall_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    })
}

/// Nanoseconds since boot, the time the machine slept included.
#[cfg(target_os = "linux")]
fn boot_nanos() -> Option<u64> {
    let mut now = std::mem::MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: `now` is valid for a write of one `timespec`, which a 0 return has made.
    let now = unsafe {
        if libc::clock_gettime(libc::CLOCK_BOOTTIME, now.as_mut_ptr()) != 0 {
            return None;
        }
        now.assume_init()
    };
    let secs = u64::try_from(now.tv_sec).ok()?;
    let nanos = u64::try_from(now.tv_nsec).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// Nanoseconds since boot, the time the machine slept included (as `mach_continuous_time`).
#[cfg(target_vendor = "apple")]
fn boot_nanos() -> Option<u64> {
    /// `CLOCK_MONOTONIC_RAW` of `<time.h>`: counts on while the machine sleeps.
    const CLOCK_MONOTONIC_RAW: u32 = 4;
    extern "C" {
        fn clock_gettime_nsec_np(clock: u32) -> u64;
    }
    // SAFETY: a plain call of libSystem's, which takes a clock id and returns 0 on error.
    let nanos = unsafe { clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW) };
    (nanos != 0).then_some(nanos)
}

/// Nanoseconds since the first read, the time the machine slept included: `Instant` is
/// `QueryPerformanceCounter` here, which Microsoft documents as counting standby and hibernate
/// (as the interrupt time does; `QueryUnbiasedInterruptTime` would leave them out).
#[cfg(windows)]
fn boot_nanos() -> Option<u64> {
    static FIRST: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let since = FIRST.get_or_init(std::time::Instant::now).elapsed();
    Some(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
}

/// No boot clock here: boot-clock timers are refused.
#[cfg(not(any(target_os = "linux", target_vendor = "apple", windows)))]
fn boot_nanos() -> Option<u64> {
    None
}
