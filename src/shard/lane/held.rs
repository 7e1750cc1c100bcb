//! The lanes the current thread owns, left when it exits (see `Lane::leave`). (Under loom no thread owns a
//! lane: see `sync::owner_number`.)

#[cfg(not(loom))]
pub(super) use self::threads::record;

#[cfg(not(loom))]
mod threads {
    use std::cell::RefCell;

    use super::super::Lane;
    use crate::sync::{Arc, Weak};

    /// A thread's owned lanes; dropped (and so given up) when the thread exits.
    struct Held {
        number: usize,
        lanes: Vec<Weak<Lane>>,
    }

    impl Drop for Held {
        fn drop(&mut self) {
            for lane in self.lanes.drain(..) {
                if let Some(lane) = lane.upgrade() {
                    // SAFETY: a thread's `Held` is dropped on that thread, as it exits.
                    unsafe { lane.leave(self.number) };
                }
            }
        }
    }

    thread_local! {
        static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
    }

    /// Records that the thread numbered `number` (the calling thread) owns `lane`; false if the
    /// thread is exiting and its record is gone.
    pub(in crate::shard::lane) fn record(lane: &Arc<Lane>, number: usize) -> bool {
        HELD.try_with(|held| {
            let mut held = held.borrow_mut();
            let held = held.get_or_insert_with(|| Held {
                number,
                lanes: Vec::new(),
            });
            if held.lanes.len() == held.lanes.capacity() {
                // Forget lanes whose engines are gone before the list grows.
                held.lanes.retain(|lane| lane.strong_count() > 0);
            }
            held.lanes.push(Arc::downgrade(lane));
        })
        .is_ok()
    }
}

#[cfg(loom)]
pub(super) fn record(_: &crate::sync::Arc<super::Lane>, _: usize) -> bool {
    false
}
