//! Asymmetric fences: a free one for the hot side of a Dekker pair, an expensive one for the
//! rare side.
//!
//! The engine has two Dekker pairs (see `shard::signal` and `shard::lane`): a producer
//! pushes to a queue and then reads the shard's sleep word (or the `stop` flag), and the shard
//! (or shutdown) writes that word and then looks at the queues. Each side needs a store→load
//! barrier between its write and its read, or both may read the old values and a timer waits
//! for a shard that went to sleep past it. With plain fences the producer pays a full fence
//! on every schedule and every cancel, although the shard goes to sleep at most once a tick.
//!
//! On Linux the barrier is made asymmetric with `membarrier(2)`
//! (`MEMBARRIER_CMD_PRIVATE_EXPEDITED`): the rare side calls it, which makes every running
//! thread of the process execute a full memory barrier before the call returns (threads not
//! running passed one when they were switched out); the hot side needs only a compiler fence.
//! The argument, for a producer P (push; [`light`]; read the word) and a shard S (write the
//! word; [`heavy`]; read the queues): the barrier forced on P lands at an instruction boundary.
//! If P's push is before that boundary, the push is visible before `heavy` returns and S finds
//! it. If it is after, P's read of the word comes later still, after S's write was made
//! visible by the fence `heavy` starts with, and P sees the announcement. Either way the work
//! is found. (This is the scheme of folly's `asymmetricLightBarrier`/`asymmetricHeavyBarrier`
//! and of liburcu's membarrier flavour.)
//!
//! The kind of barrier is chosen once per process, by the first engine built: every later
//! [`light`] and [`heavy`] happens after that choice, because they run on an engine built after
//! it. Where `membarrier` is missing (other systems, old kernels, sandboxes that forbid it,
//! Miri) both sides use a SeqCst fence. Under loom both sides are loom's SeqCst fence, so the
//! models check the protocols with the symmetric form.
//!
//! The kernel does not refuse the barrier to a registered process, but a seccomp filter
//! installed later could. Then the process falls back for good: producers fence again, and
//! the heavy side, after its fence, waits a millisecond before it reads. A producer that still
//! took the light path has already executed its push before the read that missed the
//! announcement, and a store leaves the store buffer (or is flushed by a context switch) long
//! within that millisecond. This last resort rests on timing rather than on the memory model;
//! it costs a millisecond per sleep and per shutdown, and only once the kernel has refused.

#[cfg(loom)]
mod imp {
    use loom::sync::atomic::{fence, Ordering};

    pub(crate) fn enable() {}

    pub(crate) fn light() {
        fence(Ordering::SeqCst);
    }

    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
    }

    pub(crate) fn is_asymmetric() -> bool {
        false
    }
}

#[cfg(not(loom))]
mod imp {
    use std::sync::atomic::{compiler_fence, fence, AtomicU8, Ordering};

    const UNDECIDED: u8 = 0;
    const SYMMETRIC: u8 = 1;
    const ASYMMETRIC: u8 = 2;
    /// Was ASYMMETRIC until the kernel refused a barrier (see the module docs).
    const REFUSED: u8 = 3;

    static MODE: AtomicU8 = AtomicU8::new(UNDECIDED);

    /// Chooses the kind of barrier, once per process. Called by every builder before it starts
    /// an engine's threads.
    pub(crate) fn enable() {
        // Acquire/Release: the registration with the kernel happens before any thread that
        // reads ASYMMETRIC relies on it.
        if MODE.load(Ordering::Acquire) != UNDECIDED {
            return;
        }
        let mode = if super::os::register() {
            ASYMMETRIC
        } else {
            SYMMETRIC
        };
        // Two builders racing here both registered (registering twice is harmless); the first
        // decision stands.
        let decided = MODE.compare_exchange(UNDECIDED, mode, Ordering::AcqRel, Ordering::Acquire);
        if decided.is_ok() && mode == SYMMETRIC {
            crate::trace::barrier_fell_back(false);
        }
    }

    /// The hot side: after a push, before reading the sleep word or the stop flag.
    #[inline]
    pub(crate) fn light() {
        // Relaxed: MODE was decided before the engine this call works on was built, and that
        // build happens before this call; it never changes afterwards.
        if MODE.load(Ordering::Relaxed) == ASYMMETRIC {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    /// The rare side: after announcing a sleep or setting the stop flag, before reading the
    /// queues.
    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
        // Relaxed: as in `light`.
        match MODE.load(Ordering::Relaxed) {
            ASYMMETRIC if super::os::barrier() => {}
            mode @ (ASYMMETRIC | REFUSED) => {
                // Relaxed: producers that miss this store take the light path once more, which
                // the wait below covers.
                MODE.store(REFUSED, Ordering::Relaxed);
                if mode == ASYMMETRIC {
                    crate::trace::barrier_fell_back(true);
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
                fence(Ordering::SeqCst);
            }
            _ => {}
        }
    }

    /// Whether `light` is a compiler fence only (for the stats).
    pub(crate) fn is_asymmetric() -> bool {
        // Relaxed: as in `light`.
        MODE.load(Ordering::Relaxed) == ASYMMETRIC
    }
}

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod os {
    // From linux/membarrier.h.
    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn membarrier(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes two integer arguments (command, flags) and a CPU id that
        // these commands ignore; it reads and writes no user memory.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    /// Registers the process for private expedited barriers; false if the kernel cannot.
    pub(super) fn register() -> bool {
        let supported = membarrier(CMD_QUERY);
        supported >= 0
            && supported & CMD_PRIVATE_EXPEDITED != 0
            && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// A full barrier on every running thread of the process; false if the kernel refused
    /// (it does so only for an unregistered process, or under a seccomp filter installed
    /// since).
    pub(super) fn barrier() -> bool {
        membarrier(CMD_PRIVATE_EXPEDITED) == 0
    }
}

#[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
#[allow(dead_code)]
mod os {
    pub(super) fn register() -> bool {
        false
    }

    pub(super) fn barrier() -> bool {
        false
    }
}

pub(crate) use imp::{enable, heavy, is_asymmetric, light};

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    const ROUNDS: usize = 50_000;

    /// Waits until both sides have arrived at `round` (a spinning rendezvous: the two sides
    /// must start each round at nearly the same instant for the race to be likely).
    fn meet(arrived: &AtomicUsize, round: usize) {
        // SeqCst: a plain rendezvous; the ordering under test is the one between the flags.
        arrived.fetch_add(1, Ordering::SeqCst);
        while arrived.load(Ordering::SeqCst) < 2 * (round + 1) {
            std::hint::spin_loop();
        }
    }

    /// One side of the store-buffering litmus test: per round, write its own flag, pass
    /// `barrier`, read the other side's flag.
    fn side(
        arrived: &AtomicUsize,
        mine: &[AtomicUsize],
        theirs: &[AtomicUsize],
        barrier: fn(),
    ) -> Vec<usize> {
        let mut saw = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            meet(arrived, round);
            // Relaxed: the barrier under test supplies the ordering.
            mine[round].store(1, Ordering::Relaxed);
            barrier();
            saw.push(theirs[round].load(Ordering::Relaxed));
        }
        saw
    }

    /// The store-buffering litmus test: each side writes its flag, passes its barrier, and
    /// reads the other's. Without a store→load barrier on both sides, x86 and Arm let both
    /// reads see 0 (each store still sitting in its cpu's store buffer); with `light` on one
    /// side and `heavy` on the other, at least one side must see the other's write. (With
    /// `heavy` reduced to a plain fence while `light` is a compiler fence, this test fails.)
    #[test]
    fn light_and_heavy_forbid_store_buffering() {
        super::enable();
        let light_flags: Vec<AtomicUsize> = (0..ROUNDS).map(|_| AtomicUsize::new(0)).collect();
        let heavy_flags: Vec<AtomicUsize> = (0..ROUNDS).map(|_| AtomicUsize::new(0)).collect();
        let arrived = AtomicUsize::new(0);
        let (light_saw, heavy_saw) = std::thread::scope(|scope| {
            let light = scope.spawn(|| side(&arrived, &light_flags, &heavy_flags, super::light));
            let heavy = scope.spawn(|| side(&arrived, &heavy_flags, &light_flags, super::heavy));
            (light.join().unwrap(), heavy.join().unwrap())
        });
        let both_missed = light_saw
            .iter()
            .zip(&heavy_saw)
            .filter(|(&l, &h)| l == 0 && h == 0)
            .count();
        assert_eq!(
            both_missed,
            0,
            "rounds in which neither side saw the other's write (asymmetric: {})",
            super::is_asymmetric()
        );
    }
}
