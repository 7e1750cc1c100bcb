//! The two one-thread roles on a lane, as tokens: its [`Owner`], the one thread that pushes
//! onto its ring and young queue, reuses its spares and carves its chunks; and its shard's
//! [`Taker`], the one thread that takes from its ring, inbound queue and young queue. Each
//! token is made here only, after its check, and is neither `Copy` nor `Send`; the queues'
//! one-thread `unsafe` functions are called only by methods that hold one, which is their
//! proof.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

use super::{held, Lane};
use crate::shard::shared::ShardShared;
use crate::sync::Arc;

/// Proof that the calling thread owns `lane`: an owner owns until it exits, or until its
/// engine is dropped, so the token borrows the lane and stays on the thread.
pub(crate) struct Owner<'a> {
    lane: &'a Arc<Lane>,
    _thread: PhantomData<*const ()>,
}

impl<'a> Owner<'a> {
    /// The calling thread's token for `lane`, claiming the lane if no thread owns it; `None`
    /// if another thread owns it (or the calling thread is exiting).
    #[inline]
    pub(super) fn check(lane: &'a Arc<Lane>) -> Option<Self> {
        lane.counts
            .ownership(|me| held::record(lane, me))
            .then_some(Owner {
                lane,
                _thread: PhantomData,
            })
    }

    /// The token a loom model gives the one thread it says owns `lane` (no thread owns a
    /// lane under loom: see `sync::owner_number`).
    #[cfg(all(test, loom))]
    pub(crate) fn for_model(lane: &'a Arc<Lane>) -> Self {
        Owner {
            lane,
            _thread: PhantomData,
        }
    }

    /// The lane this token owns.
    #[inline]
    pub(crate) fn lane(&self) -> &'a Arc<Lane> {
        self.lane
    }
}

/// Proof that the calling thread is the one taker of a shard's lanes: its shard thread, then
/// the shutdown that stops it. Made once per shard; a lane checks that it leads into the
/// token's shard.
/// It moves with the shard it drives (builder, shard thread, shutdown) but is never shared.
pub(crate) struct Taker {
    shard: Arc<ShardShared>,
    _unshared: PhantomData<Cell<()>>,
}

impl Taker {
    /// The one taker of `shard`'s lanes; `None` if it was made already.
    pub(crate) fn of(shard: &Arc<ShardShared>) -> Option<Self> {
        shard.claim_taker().then(|| Taker {
            shard: shard.clone(),
            _unshared: PhantomData,
        })
    }

    /// Panics unless `lane` leads into this taker's shard (an engine bug): a pointer compare
    /// before each take, once per lane and turn.
    #[inline]
    pub(super) fn check(&self, lane: &Lane) {
        assert!(
            ptr::eq(&*self.shard, &*lane.shard),
            "a taker takes only from its own shard's lanes"
        );
    }
}

/// A lane as the calling thread reaches it: as its owner, or as any other thread.
pub(crate) enum Access<'a> {
    Owner(Owner<'a>),
    Other(&'a Arc<Lane>),
}

impl<'a> Access<'a> {
    /// The calling thread's access to `lane`, claiming it if no thread owns it.
    #[inline]
    pub(crate) fn of(lane: &'a Arc<Lane>) -> Self {
        match Owner::check(lane) {
            Some(owner) => Access::Owner(owner),
            None => Access::Other(lane),
        }
    }

    /// The lane reached.
    #[inline]
    pub(crate) fn lane(&self) -> &'a Arc<Lane> {
        match self {
            Access::Owner(owner) => owner.lane(),
            Access::Other(lane) => lane,
        }
    }

    /// Whether the calling thread owns the lane.
    #[inline]
    pub(crate) fn is_owner(&self) -> bool {
        matches!(self, Access::Owner(_))
    }
}
