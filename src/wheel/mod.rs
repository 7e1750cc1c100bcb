//! A shard's hierarchical timing wheel: plain single-threaded `&mut self` code.
//!
//! Six levels of 64 slots (Varghese & Lauck's scheme 7, laid out as in tokio's
//! `runtime/time/wheel`): level `n` has slots `64^n` ticks wide, so the wheel spans `64^6 = 2^36`
//! ticks (about 2.2 years at a 1 ms tick). An entry due at `when` goes to the level of the
//! highest bit in which `when` differs from the wheel's `elapsed` tick, into the slot given by
//! that level's six bits of `when`. When a slot of level `n > 0` comes due (at its start), its
//! entries move down to finer levels; a level-0 slot comes due exactly at its entries' deadline.
//! Deadlines beyond the span are clamped into the top level, which then acts as a ring: when
//! such a slot comes due early, the entry is simply linked again.
//!
//! Insert and unlink are O(1) (intrusive doubly-linked slot lists); the next deadline is found
//! from the per-level occupancy bitmaps without visiting an empty slot. The shard re-reads an
//! entry's deadline from its state word whenever it handles the entry, so an entry found in a
//! slot before its deadline is linked again, never fired early.

//! - `hierarchy`: [`Wheel`], linking, unlinking, advancing and draining entries.
//! - `level`: one level's 64 slot lists and its occupancy bitmap.

mod hierarchy;
mod level;

pub(crate) use hierarchy::{Settled, Wheel, SPAN};
