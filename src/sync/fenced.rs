//! A SeqCst fence as a value. Each Dekker pair here is a write, a SeqCst fence, then a read of
//! what the other side wrote; the read is Relaxed and correct only after the fence. Functions
//! that make such a read take a [`Fenced`], so the fence they rely on stands in their caller,
//! in sight, and removing it (or returning before it) does not compile.
//!
//! The pairs, each told once where its read is:
//! - the sleep word against a push: `shard::signal`;
//! - the stop flag against a schedule (the shutdown hand-off): `shard::lane`;
//! - the owner's sweep against the shard's take of young timers, and a young push against the
//!   shard's sleep: `queue::young`;
//! - a task leaving its waker for a permit against a release: `sync::cap`.
//!
//! Every SeqCst fence of the engine is a [`Fenced::now`].

use std::marker::PhantomData;

use super::{fence, Ordering};

/// Proof that the calling thread passed a SeqCst fence after its writes so far. Not `Send`: a
/// fence orders its own thread's accesses.
pub(crate) struct Fenced(PhantomData<*const ()>);

impl Fenced {
    /// Passes a SeqCst fence.
    #[inline]
    pub(crate) fn now() -> Self {
        // SeqCst: the fence of the Dekker pairs listed in the module documentation.
        fence(Ordering::SeqCst);
        Fenced(PhantomData)
    }
}
