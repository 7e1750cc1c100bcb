//! The current deadline of a deadline scope (the scope itself, `Scoped`, is the engine's, in
//! `engine::scope`). It is a thread-local `Cell` with a constant initializer and no
//! destructor: one load, what a timeout outside every scope pays. A scope makes the earlier
//! of its own deadline and the one it found current around each poll ([`enter`]), and a guard
//! puts that one back as the poll returns or unwinds. The deadline lives in the scope, the
//! thread-local is only lent: a future moved between threads keeps it. Nothing is shared: no
//! loom model.
//!
//! A deadline is an instant on a clock ([`Deadline`]): the system's monotonic clock, a
//! [`ManualClock`], or any (an instant given with no engine, read on the reader's clock). Read
//! on another clock than its own (a timeout on one engine inside a scope of another), it is
//! what is left of it on its own clock, from now on the reader's.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::time::{ManualClock, TickClock};

thread_local! {
    /// The current deadline of the poll running on this thread, if it runs in a scope.
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
}

/// A deadline and the clock it is on, as a scope holds it.
#[derive(Clone)]
pub(crate) struct Deadline {
    at: Instant,
    clock: Clock,
}

/// The clock a deadline is on.
#[derive(Clone)]
enum Clock {
    /// The reader's: an instant given with no engine.
    Any,
    /// The system's monotonic clock.
    System,
    Manual(ManualClock),
}

/// The current deadline as the thread-local holds it: a manual clock is lent by the scope
/// that holds it, which is polling (see [`enter`]).
#[derive(Clone, Copy)]
struct Current {
    at: Instant,
    clock: Lent,
}

#[derive(Clone, Copy)]
enum Lent {
    Any,
    System,
    Manual(NonNull<ManualClock>),
}

impl Deadline {
    /// `at` on `clock`'s time source.
    pub(crate) fn on(at: Instant, clock: &TickClock) -> Self {
        let clock = match clock.manual() {
            Some(manual) => Clock::Manual(manual.clone()),
            None => Clock::System,
        };
        Deadline { at, clock }
    }

    /// `at` on the clock of whoever reads it.
    pub(crate) fn any(at: Instant) -> Self {
        Deadline {
            at,
            clock: Clock::Any,
        }
    }

    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// This deadline, lent to the thread-local while `self` stays where it is.
    fn lend(&self) -> Current {
        let clock = match &self.clock {
            Clock::Any => Lent::Any,
            Clock::System => Lent::System,
            Clock::Manual(manual) => Lent::Manual(NonNull::from(manual)),
        };
        Current { at: self.at, clock }
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clock = match self.clock {
            Clock::Any => "any",
            Clock::System => "system",
            Clock::Manual(_) => "manual",
        };
        f.debug_struct("Deadline")
            .field("at", &self.at)
            .field("clock", &clock)
            .finish()
    }
}

impl Current {
    /// Now on this deadline's clock; `reader`'s for one on any.
    fn now(self, reader: impl FnOnce() -> Instant) -> Instant {
        match self.clock {
            Lent::Any => reader(),
            Lent::System => Instant::now(),
            // SAFETY: a lent clock is in the thread-local only while the scope holding it
            // polls (`enter`'s guard takes it out as the poll returns or unwinds); a pinned
            // scope's fields do not move, and `Current` is never sent to another thread.
            Lent::Manual(manual) => unsafe { manual.as_ref() }.now(),
        }
    }

    /// Whether this deadline reads the same on `clock` as on its own.
    fn is_on(self, clock: &TickClock) -> bool {
        match (self.clock, clock.manual()) {
            (Lent::Any, _) | (Lent::System, None) => true,
            // SAFETY: as in `Current::now`.
            (Lent::Manual(manual), Some(reader)) => unsafe { manual.as_ref() }.same(reader),
            _ => false,
        }
    }

    /// What is left of it on its own clock (`reader`'s, for one on any).
    fn left(self, reader: impl FnOnce() -> Instant) -> Duration {
        self.at.saturating_duration_since(self.now(reader))
    }

    /// The earlier of two deadlines: by instant on one clock, else by what is left of each.
    fn earlier(self, other: Current) -> Current {
        let same = match (self.clock, other.clock) {
            (Lent::Manual(a), Lent::Manual(b)) => a == b || lent_same(a, b),
            (Lent::System, Lent::System) | (Lent::Any, _) | (_, Lent::Any) => true,
            _ => false,
        };
        let first = if same {
            self.at <= other.at
        } else {
            self.left(Instant::now) <= other.left(Instant::now)
        };
        if first {
            self
        } else {
            other
        }
    }
}

/// Whether two lent manual clocks are one clock (two clones of it).
fn lent_same(a: NonNull<ManualClock>, b: NonNull<ManualClock>) -> bool {
    // SAFETY: both are lent by scopes polling now (see `Current::now`).
    unsafe { a.as_ref().same(b.as_ref()) }
}

/// The current deadline: the earliest deadline of the scopes the running poll is inside, on
/// the clock of the scope it came from, or `None` outside every scope.
///
/// ```
/// use std::time::{Duration, Instant};
/// use shardwheel::deadline::{current, within_at};
/// let (soon, later) = (Instant::now(), Instant::now() + Duration::from_secs(1));
/// let inner = within_at(later, async { current() }); // the earlier of its own and the outer
/// assert_eq!(futures::executor::block_on(within_at(soon, inner)), Some(soon));
/// assert_eq!(current(), None);
/// ```
#[inline]
pub fn current() -> Option<Instant> {
    Some(get()?.at)
}

#[inline]
fn get() -> Option<Current> {
    CURRENT.try_with(Cell::get).ok().flatten()
}

/// The current deadline as an instant on `clock`, if any: for a timeout made on it.
#[inline]
pub(crate) fn limit(clock: &TickClock) -> Option<Instant> {
    let current = get()?;
    Some(convert(current, clock))
}

/// `current` on `clock`: itself, or what is left of it from now on `clock`.
#[cold]
#[inline(never)]
fn convert(current: Current, clock: &TickClock) -> Instant {
    if current.is_on(clock) {
        return current.at;
    }
    let now = clock.now();
    now.checked_add(current.left(|| now)).unwrap_or(current.at)
}

/// The time left to the current deadline on its own clock (`reader`'s, for a deadline on any
/// clock): zero once past, `None` outside every scope.
pub(crate) fn remaining(reader: impl FnOnce() -> Instant) -> Option<Duration> {
    Some(get()?.left(reader))
}

/// The current deadline, held apart from the scope it came from (to carry it elsewhere).
pub(crate) fn carried() -> Option<Deadline> {
    let current = get()?;
    let clock = match current.clock {
        Lent::Any => Clock::Any,
        Lent::System => Clock::System,
        // SAFETY: as in `Current::now`.
        Lent::Manual(manual) => Clock::Manual(unsafe { manual.as_ref() }.clone()),
    };
    Some(Deadline {
        at: current.at,
        clock,
    })
}

/// Makes the earlier of `deadline` and the current deadline current until the guard drops,
/// which borrows `deadline` so that it stays where it is meanwhile (see `Current::now`).
#[inline]
pub(crate) fn enter(deadline: Option<&Deadline>) -> Restore<'_> {
    let lent = deadline.map(Deadline::lend);
    let found = CURRENT
        .try_with(|current| {
            let found = current.get();
            let now = match (lent, found) {
                (Some(a), Some(b)) => Some(a.earlier(b)),
                (a, b) => a.or(b),
            };
            current.replace(now)
        })
        .ok()
        .flatten();
    Restore(found, PhantomData)
}

/// Runs `f` within `deadline` (where earlier), putting the current one back after or unwinding.
#[cfg(any(all(test, not(loom)), feature = "tower"))]
#[inline]
pub(crate) fn run_within<R>(deadline: Option<&Deadline>, f: impl FnOnce() -> R) -> R {
    let _restore = enter(deadline);
    f()
}

/// The current deadline a scope found, put back as its poll ends or unwinds; it borrows the
/// deadline it lent.
#[must_use]
pub(crate) struct Restore<'a>(Option<Current>, PhantomData<&'a Deadline>);

impl Drop for Restore<'_> {
    #[inline]
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|current| current.set(self.0));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    fn any(at: Instant) -> Option<Deadline> {
        Some(Deadline::any(at))
    }

    #[test]
    fn run_within_sets_the_earlier_and_restores_the_found_one() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(current(), None);
        run_within(any(later).as_ref(), || {
            assert_eq!(current(), Some(later));
            run_within(any(now).as_ref(), || assert_eq!(current(), Some(now)));
            run_within(any(later + Duration::from_secs(1)).as_ref(), || {
                assert_eq!(current(), Some(later));
            });
            run_within(None, || assert_eq!(current(), Some(later)));
            assert_eq!(current(), Some(later));
        });
        assert_eq!(current(), None);
    }

    #[test]
    fn a_deadline_on_a_manual_clock_is_read_on_it_and_converted_for_another() {
        let manual = ManualClock::new();
        manual.advance(Duration::from_secs(3600));
        let tick = Duration::from_millis(1);
        let on_manual = TickClock::new(tick, 1 << 20, u64::MAX >> 13, Some(manual.clone()));
        let on_system = TickClock::new(tick, 1 << 20, u64::MAX >> 13, None);
        let at = manual.now() + Duration::from_millis(200);
        let scope = Deadline::on(at, &on_manual);
        run_within(Some(&scope), || {
            assert_eq!(remaining(Instant::now), Some(Duration::from_millis(200)));
            assert_eq!(limit(&on_manual), Some(at));
            let there = limit(&on_system).unwrap();
            let left = there.saturating_duration_since(Instant::now());
            assert!(left <= Duration::from_millis(200), "{left:?} left");
            assert!(left > Duration::from_millis(100), "{left:?} left");
        });
    }
}
