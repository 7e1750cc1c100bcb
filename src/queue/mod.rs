//! The lock-free queues that carry timers into a shard, and entries back out of it.
//!
//! Each queue into the shard has one consumer, the shard thread (or shutdown once it is gone),
//! whose calls are `unsafe` with that contract (the take-all stacks: safe). The recycler runs
//! the other way, from the shard to the lane's owner. Only `shard::lane` reaches them, but for
//! the re-arm stack, which a shard's runners reach (`callbacks`).
//!
//! - `inbound`: [`Inbound`], new timers from any thread (Vyukov's intrusive MPSC queue).
//! - `ring`: [`Ring`], new timers from a lane's owner thread (a Lamport SPSC ring).
//! - `unlink`: [`Unlinks`], timers cancelled after linking, for the shard to unlink.
//! - `recycle`: [`Recycler`], dead entries handed back to a lane's owner for reuse.
//! - `young`: [`Young`], new timers a lane's owner keeps in the lane until they have lived a while.
//! - `rearm`: [`Rearms`], repeating timers their runners stowed, for their shard to re-arm.

mod inbound;
mod rearm;
mod recycle;
mod ring;
mod unlink;
mod young;

pub(crate) use inbound::{Inbound, Pop};
pub(crate) use rearm::Rearms;
pub(crate) use recycle::{Recycler, RETURN_LIMIT};
pub(crate) use ring::Ring;
#[cfg(all(test, loom))]
pub(crate) use ring::RING_CELLS;
pub(crate) use unlink::{Requests, Unlinks};
pub(crate) use young::{Since, Sweep, Take, Young};

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::entry::{CallbackBox, Entry, EntryRef};

    /// A new entry due at `deadline`, for the queues' tests.
    pub(super) fn entry(deadline: u64) -> EntryRef {
        EntryRef::new(Entry::new(deadline, CallbackBox::new(|| {})))
    }
}
