//! Timer entries: what one scheduled timer is, and the state word that decides its fate.
//!
//! `impl Entry` is split over four files. Only `node` sees the entry's fields, so what touches
//! them is there; each other part is one protocol over its CAS loop (`transition`), kept with
//! that protocol's types and docs.
//!
//! - `node`: [`Entry`], one allocation per timer, and its ground rules: who may touch which
//!   field, and the single compare-and-swap loop through which every transition goes. Its
//!   `impl Entry`: making an entry, `state`, `transition`, `fire`, `hand_back`, `reset`,
//!   `cancel_word`, the link marks and the links, which touch the fields.
//! - `unlink_ref`: [`UnlinkRef`], the count an unlink request owns, which a won cancel of a
//!   linked entry hands over. Its `impl Entry`: `cancel`, which makes that `UnlinkRef`.
//! - `repeat`: a repeating timer's transitions after each fire. Its `impl Entry`: `stow`,
//!   `rearm`, `unstow`, `retire`.
//! - `permit`: how a timer's hold on its permit ends. Its `impl Entry`: `stop`,
//!   `end_cancelled_hold`.
//! - `state`: [`StateWord`], the packed word (lifecycle, link, deadline).
//! - `callback`: the type-erased callback in a one-word box (a task's waker in the word
//!   itself).
//! - `fired`: [`Fired`], a callback the shard fired.
//! - `cell`: the cell that holds the box in the entry, or an unlink-stack link.

mod callback;
mod cell;
mod fired;
mod node;
mod permit;
mod repeat;
mod state;
mod unlink_ref;

pub(crate) use callback::{unbox, Boxed, Callback, CallbackBox};
pub(crate) use fired::Fired;
pub(crate) use node::{Entry, EntryRef};
pub(crate) use permit::Begun;
pub(crate) use state::{Lifecycle, SlotId, StateWord};
pub(crate) use unlink_ref::UnlinkRef;
