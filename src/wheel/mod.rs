//! A shard's hierarchical timing wheel: plain single-threaded `&mut self` code.
//!
//! Six levels of 64 slots (Varghese & Lauck's scheme 7, as tokio's `runtime/time/wheel`);
//! level `n`'s slots are `64^n` ticks wide, spanning `2^36` ticks. An entry due at `when` goes
//! to the level of the highest bit where `when` differs from `elapsed`, in the slot of that
//! level's six bits. A due slot of level `n > 0` moves its entries down; deadlines beyond the
//! span are clamped into the top level, which acts as a ring. The shard re-reads an entry's
//! deadline whenever it handles it, so an entry found early is linked again, never fired.
//!
//! - `hierarchy`: [`Wheel`], linking, unlinking, advancing and draining entries.
//! - `level`: one level's slot lists and its occupancy bitmap.
//! - `survey`: the cursor of a walk over the linked entries a piece at a time.

mod hierarchy;
mod level;
mod survey;

pub(crate) use hierarchy::{Settled, Wheel, SPAN};
pub(crate) use level::{level_for, slot_of, SLOTS, SLOT_BITS};
pub(crate) use survey::Repeats;
