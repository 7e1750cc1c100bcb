//! The lock-free queues that carry timers into a shard, and entries back out of it.
//!
//! Every queue into the shard here has many producers or one, and a single consumer: the shard
//! thread (or shutdown, once that thread is gone). The consumer's calls are `unsafe` with that
//! contract, or, for the take-all unlink stack, safe (any thread may take a whole chain), and
//! only the shard layer reaches them (through `shard::lane`). The recycler runs the other way:
//! the shard gives dead entries back and the lane's owner, a producer thread, takes them (its
//! calls too are reached only through `shard::lane`).
//!
//! - `inbound`: [`Inbound`], new timers from any thread (Vyukov's intrusive MPSC queue).
//! - `ring`: [`Ring`], new timers from a lane's owner thread (a Lamport SPSC ring).
//! - `unlink`: [`Unlinks`], timers cancelled after linking, for the shard to unlink.
//! - `recycle`: [`Recycler`], dead entries handed back to a lane's owner for reuse.

mod inbound;
mod recycle;
mod ring;
mod unlink;

pub(crate) use inbound::{Inbound, Pop};
pub(crate) use recycle::{Recycler, RETURN_LIMIT};
pub(crate) use ring::Ring;
#[cfg(all(test, loom))]
pub(crate) use ring::RING_CELLS;
pub(crate) use unlink::{Requests, Unlinks};
