//! The packed state word of a timer entry: everything more than one thread may read or change
//! in one `u64`, so every transition is a single CAS:
//!
//! ```text
//!  63                                 13 12      7 6   4  3   2   1 0
//! +-------------------------------------+--------+-----+---+---+-----+
//! |           deadline (ticks)          |  slot  |level|REP|LNK| life|
//! +-------------------------------------+--------+-----+---+---+-----+
//! ```
//!
//! - `life`: [`Lifecycle`]; one party moves it out of `Pending` and owns the callback.
//! - `LNK`: linked into the shard's wheel (only the shard sets it), at `level`, `slot`.
//! - `REP`: the timer repeats (cleared when a repeating timer stops for good).
//! - `deadline`: the tick at or after which the timer fires (51 bits); a `u64` here and in the
//!   wheel, which pack it, and a [`Tick`](crate::time::Tick) once it leaves them.
//!
//! A FIRED word is never linked: a repeating timer's sets STOWED, the lowest level bit, once
//! its run is over and it waits for its shard at its next deadline (see `entry::repeat`).

/// Where an entry is in its life. Moving out of `Pending` is final and happens once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    /// Scheduled and not yet resolved.
    Pending = 0,
    /// Stopped by `TimerHandle::cancel`; the callback will never run.
    Cancelled = 1,
    /// Taken by its shard to run.
    Fired = 2,
    /// Handed back to the caller: at shutdown, or to a `schedule` that raced shutdown.
    HandedBack = 3,
}

/// A wheel position: `(level, slot)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotId {
    pub(crate) level: usize,
    pub(crate) slot: usize,
}

/// The packed state word. See the module documentation for the layout.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct StateWord(u64);

impl StateWord {
    const LIFECYCLE_MASK: u64 = 0b11;
    /// Set while the entry is in a wheel slot; an atomic `fetch_and` clears it to unlink.
    pub(super) const LINKED: u64 = 1 << 2;
    const REPEATING: u64 = 1 << 3;
    const LEVEL_SHIFT: u32 = 4;
    const LEVEL_MASK: u64 = 0b111 << Self::LEVEL_SHIFT;
    const SLOT_SHIFT: u32 = 7;
    const SLOT_MASK: u64 = 0b11_1111 << Self::SLOT_SHIFT;
    const DEADLINE_SHIFT: u32 = 13;
    /// In a FIRED word only (see the module documentation).
    const STOWED: u64 = 1 << Self::LEVEL_SHIFT;

    /// The largest deadline, in ticks, the word can hold.
    pub(crate) const MAX_DEADLINE: u64 = (1 << (64 - Self::DEADLINE_SHIFT)) - 1;

    /// A new pending, unlinked entry due at `deadline`.
    pub(crate) fn pending(deadline: u64) -> Self {
        debug_assert!(deadline <= Self::MAX_DEADLINE);
        StateWord(deadline << Self::DEADLINE_SHIFT)
    }

    pub(super) const fn from_bits(bits: u64) -> Self {
        StateWord(bits)
    }

    pub(crate) const fn bits(self) -> u64 {
        self.0
    }

    pub(crate) fn lifecycle(self) -> Lifecycle {
        match self.0 & Self::LIFECYCLE_MASK {
            0 => Lifecycle::Pending,
            1 => Lifecycle::Cancelled,
            2 => Lifecycle::Fired,
            _ => Lifecycle::HandedBack,
        }
    }

    pub(crate) fn is_pending(self) -> bool {
        self.lifecycle() == Lifecycle::Pending
    }

    pub(super) fn with_lifecycle(self, lifecycle: Lifecycle) -> Self {
        StateWord((self.0 & !Self::LIFECYCLE_MASK) | lifecycle as u64)
    }

    pub(crate) fn deadline(self) -> u64 {
        self.0 >> Self::DEADLINE_SHIFT
    }

    pub(super) fn with_deadline(self, deadline: u64) -> Self {
        debug_assert!(deadline <= Self::MAX_DEADLINE);
        StateWord((self.0 & ((1 << Self::DEADLINE_SHIFT) - 1)) | (deadline << Self::DEADLINE_SHIFT))
    }

    /// A word for a repeating timer.
    pub(super) fn repeating(self) -> Self {
        StateWord(self.0 | Self::REPEATING)
    }

    /// The same word without the REPEATING bit: a repeating timer that has stopped for good.
    pub(super) fn retired(self) -> Self {
        StateWord(self.0 & !Self::REPEATING)
    }

    pub(crate) fn is_repeating(self) -> bool {
        self.0 & Self::REPEATING != 0
    }

    /// A repeating timer's word whose run is over, due again at `deadline`.
    pub(super) fn stowed(self, deadline: u64) -> Self {
        StateWord(self.unlinked().with_deadline(deadline).0 | Self::STOWED)
    }

    /// Whether this is a repeating timer's word whose run is over, waiting for its shard.
    pub(crate) fn is_stowed(self) -> bool {
        let fired = Lifecycle::Fired as u64;
        self.0 & (Self::LIFECYCLE_MASK | Self::LINKED | Self::STOWED) == fired | Self::STOWED
    }

    /// Whether a repeating timer's run is under way (FIRED, not stowed nor stopped).
    pub(crate) fn is_running(self) -> bool {
        self.is_repeating() && self.lifecycle() == Lifecycle::Fired && !self.is_stowed()
    }

    /// Whether a cancel or a hand-back may still win: pending, or stowed.
    pub(crate) fn is_armed(self) -> bool {
        self.is_pending() || self.is_stowed()
    }

    /// Where the entry is linked, if it is.
    pub(crate) fn linked_at(self) -> Option<SlotId> {
        (self.0 & Self::LINKED != 0).then_some(SlotId {
            level: ((self.0 & Self::LEVEL_MASK) >> Self::LEVEL_SHIFT) as usize,
            slot: ((self.0 & Self::SLOT_MASK) >> Self::SLOT_SHIFT) as usize,
        })
    }

    pub(super) fn with_link(self, at: SlotId) -> Self {
        debug_assert!(at.level < 8 && at.slot < 64);
        let cleared = self.0 & !(Self::LEVEL_MASK | Self::SLOT_MASK);
        StateWord(
            cleared
                | Self::LINKED
                | ((at.level as u64) << Self::LEVEL_SHIFT)
                | ((at.slot as u64) << Self::SLOT_SHIFT),
        )
    }

    pub(crate) fn unlinked(self) -> Self {
        StateWord(self.0 & !(Self::LINKED | Self::LEVEL_MASK | Self::SLOT_MASK))
    }
}

impl std::fmt::Debug for StateWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateWord")
            .field("lifecycle", &self.lifecycle())
            .field("linked_at", &self.linked_at())
            .field("deadline", &self.deadline())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIFECYCLES: [Lifecycle; 4] = [
        Lifecycle::Pending,
        Lifecycle::Cancelled,
        Lifecycle::Fired,
        Lifecycle::HandedBack,
    ];

    #[test]
    fn new_word_is_pending_and_unlinked() {
        let w = StateWord::pending(12345);
        assert_eq!(w.lifecycle(), Lifecycle::Pending);
        assert_eq!(w.linked_at(), None);
        assert_eq!(w.deadline(), 12345);
    }

    #[test]
    fn fields_round_trip_independently() {
        let deadlines = [0, 1, 63, 64, 4095, 1 << 36, StateWord::MAX_DEADLINE];
        for &deadline in &deadlines {
            for &life in &LIFECYCLES {
                for level in 0..6 {
                    for slot in [0, 1, 31, 63] {
                        let at = SlotId { level, slot };
                        let w = StateWord::pending(deadline)
                            .with_link(at)
                            .with_lifecycle(life);
                        assert_eq!(w.deadline(), deadline);
                        assert_eq!(w.lifecycle(), life);
                        assert_eq!(w.linked_at(), Some(at));
                        let u = w.unlinked();
                        assert_eq!(u.linked_at(), None);
                        assert_eq!((u.deadline(), u.lifecycle()), (deadline, life));
                        assert_eq!(StateWord::from_bits(w.bits()), w);
                    }
                }
            }
        }
    }

    #[test]
    fn changing_the_deadline_keeps_everything_else() {
        let at = SlotId { level: 3, slot: 17 };
        let w = StateWord::pending(10)
            .repeating()
            .with_link(at)
            .with_lifecycle(Lifecycle::Cancelled);
        let moved = w.with_deadline(StateWord::MAX_DEADLINE);
        assert_eq!(moved.deadline(), StateWord::MAX_DEADLINE);
        assert_eq!(moved.lifecycle(), Lifecycle::Cancelled);
        assert_eq!(moved.linked_at(), Some(at));
        assert!(moved.is_repeating());
        assert!(!StateWord::pending(10).is_repeating());
    }

    #[test]
    fn relinking_clears_the_old_slot() {
        let w = StateWord::pending(7)
            .with_link(SlotId { level: 5, slot: 63 })
            .with_link(SlotId { level: 0, slot: 1 });
        assert_eq!(w.linked_at(), Some(SlotId { level: 0, slot: 1 }));
    }

    #[test]
    fn a_stowed_word_is_fired_unlinked_and_armed() {
        let running = StateWord::pending(10)
            .repeating()
            .with_link(SlotId { level: 4, slot: 3 })
            .with_lifecycle(Lifecycle::Fired)
            .unlinked();
        assert!(running.is_running() && !running.is_stowed() && !running.is_armed());
        let stowed = running.stowed(25);
        assert!(stowed.is_stowed() && stowed.is_armed() && !stowed.is_running());
        assert_eq!(stowed.lifecycle(), Lifecycle::Fired);
        assert_eq!((stowed.deadline(), stowed.linked_at()), (25, None));
        let rearmed = stowed.with_lifecycle(Lifecycle::Pending).unlinked();
        assert!(rearmed.is_pending() && !rearmed.is_stowed() && rearmed.is_repeating());
        // The bit means nothing in a word that is not FIRED, nor in a linked one.
        assert!(!StateWord::pending(3)
            .with_link(SlotId { level: 1, slot: 0 })
            .is_stowed());
        assert!(!stowed.with_lifecycle(Lifecycle::Cancelled).is_stowed());
    }

    #[test]
    fn clearing_the_linked_bit_unlinks() {
        let w = StateWord::pending(7).with_link(SlotId { level: 2, slot: 9 });
        let cleared = StateWord::from_bits(w.bits() & !StateWord::LINKED);
        assert_eq!(cleared.linked_at(), None);
        assert_eq!(cleared.deadline(), 7);
    }
}
