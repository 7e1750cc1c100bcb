//! What a sleep keeps: the kind of its timer ([`Wakes`]), the timer and its waker's identity
//! ([`Registered`], [`WakerId`]), its site ([`SleepSite`]), and its deadline and flags in one
//! word ([`Until`]).

use std::panic::Location;
use std::task::{RawWakerVTable, Waker};

use crate::entry::{CallbackBox, Entry, EntryRef, Lifecycle, StateWord};
use crate::shard::{Lane, TimerKind};
use crate::sync::Arc;

/// What a sleep's timer runs: its task's waker, woken when the timer runs or is dropped (see
/// `CallbackBox::waker`).
pub(super) struct Wakes(pub(super) Waker);

impl TimerKind for Wakes {
    type Value = Waker;
    #[inline]
    fn entry(self, _: &Arc<Lane>, tick: u64) -> Entry {
        Entry::new(tick, CallbackBox::waker(self.0))
    }
    fn refused(self) -> Waker {
        self.0
    }
    fn taken_back(callback: CallbackBox) -> Waker {
        unwake(callback)
    }
}

/// The waker a sleep's timer held, taken back unwoken.
#[inline]
pub(super) fn unwake(callback: CallbackBox) -> Waker {
    match callback.into_waker() {
        Ok(waker) => waker,
        Err(_) => unreachable!("a sleep's timer holds a waker"),
    }
}

/// A sleep's timer: its entry (queued on the sleep's lane) and the waker it holds.
pub(super) struct Registered {
    pub(super) entry: EntryRef,
    pub(super) waker: WakerId,
}

impl Registered {
    /// The timer's state word: whether it is pending, and the tick it is due at (at or before
    /// the sleep's deadline, which a push later leaves it behind).
    pub(super) fn state(&self) -> StateWord {
        self.entry.state()
    }
}

/// Whether a timer in state `state` is due no earlier than `tick`: its firing ends a sleep
/// whose deadline is `tick` (it has not been moved past it).
pub(super) fn reaches(state: StateWord, tick: u64) -> bool {
    state.deadline() >= tick
}

/// Whether a timer in state `state` fired (rather than was handed back) for deadline `tick`.
pub(super) fn fired_for(state: StateWord, tick: u64) -> bool {
    state.lifecycle() == Lifecycle::Fired && reaches(state, tick)
}

/// Which waker a timer holds, told apart without holding a clone (as `Waker::will_wake`).
#[derive(Clone, Copy)]
pub(super) struct WakerId(usize, &'static RawWakerVTable);

impl WakerId {
    pub(super) fn of(waker: &Waker) -> Self {
        WakerId(waker.data() as usize, waker.vtable())
    }
}

impl PartialEq for WakerId {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 && std::ptr::eq(self.1, other.1)
    }
}

/// Where a sleep was made, for its timers' origins (a sleep's makers pass theirs on).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SleepSite(pub(super) &'static Location<'static>);

impl SleepSite {
    /// The caller's site.
    #[track_caller]
    #[inline]
    pub(crate) fn caller() -> Self {
        SleepSite(Location::caller())
    }
}

/// A sleep's deadline tick and its two flags in one word, so that its site costs no word.
#[derive(Clone, Copy)]
pub(super) struct Until(u64);

impl Until {
    /// The sleep has ended: its timer fired, or the shard turned its deadline.
    const ENDED: u64 = 1 << 63;
    /// The last poll found the engine at its cap: the sleep waits for a permit.
    const FULL: u64 = 1 << 62;
    /// The tick's bits; all set is `FAR` (no tick is this late: a state word holds 51 bits).
    pub(super) const TICK: u64 = Self::FULL - 1;

    /// Until `tick` (`None`: beyond the engine's range, never), neither ended nor full.
    #[inline]
    pub(super) fn new(tick: Option<u64>) -> Self {
        // A tick in range fits a state word's 51 bits, far below the flags.
        debug_assert!(tick.is_none_or(|tick| tick < Self::TICK));
        Until(tick.unwrap_or(Self::TICK))
    }

    #[inline]
    pub(super) fn tick(self) -> u64 {
        self.0 & Self::TICK
    }

    #[inline]
    pub(super) fn ended(self) -> bool {
        self.0 & Self::ENDED != 0
    }

    #[inline]
    pub(super) fn full(self) -> bool {
        self.0 & Self::FULL != 0
    }

    /// The sleep has ended.
    #[inline]
    pub(super) fn end(&mut self) {
        self.0 |= Self::ENDED;
    }

    /// Whether the last poll found the engine at its cap.
    #[inline]
    pub(super) fn set_full(&mut self, full: bool) {
        self.0 = (self.0 & !Self::FULL) | (u64::from(full) << Self::FULL.trailing_zeros());
    }
}
