//! The protocol by which callers of `shutdown` (and `drop`) meet: the first finishes the
//! shutdown, every other caller from outside the engine's callbacks waits until it is done, and
//! a shutdown begun inside one of the engine's own callbacks is finished on a thread of its own
//! that the next outside caller joins, receiving what it handed back.
//!
//! One mutex guards the [`Phase`], and one condition variable wakes the waiters when it moves
//! on. It knows nothing of the engine: `R` is what the first caller finishes with (the threads
//! to join), `T` what finishing yields (the timers handed back), and the engine's part comes
//! in as a closure (`begin`'s `stop`).

use crate::sync::thread::JoinHandle;
use crate::sync::{Condvar, Mutex, MutexGuard};

/// Where a shutdown is.
pub(super) enum Phase<R, T> {
    /// Not begun; what the first caller will finish with.
    Running(R),
    /// A caller is finishing the shutdown, or joining the thread that does.
    Stopping,
    /// A shutdown begun inside a callback is finishing on this thread; the next caller from
    /// outside joins it and takes what it yields.
    Finishing(JoinHandle<T>),
    /// Done: every thread the engine started has been joined (or, after a shutdown begun
    /// inside a callback that no outside caller followed, left to finish on its own).
    Stopped,
}

/// What `Closing::begin` leaves to its caller.
pub(crate) enum Duty<R, T> {
    /// Finish the shutdown with `R` here, then call [`Closing::complete`].
    Finish(R),
    /// Finish it with `R` on a thread of its own (the caller is inside a callback, which
    /// finishing waits for), and record that thread with [`Closing::finishing`].
    FinishElsewhere(R),
    /// Join this thread, which finishes a shutdown begun inside a callback, take what it
    /// yields, then call [`Closing::complete`].
    Join(JoinHandle<T>),
    /// Nothing: done already, not this engine's to stop, or called from inside a callback
    /// while another caller finishes (which waits for that callback: it cannot wait too).
    Nothing,
}

/// The phase, and the condition its waiters wait on.
pub(crate) struct Closing<R, T> {
    phase: Mutex<Phase<R, T>>,
    moved: Condvar,
}

impl<R, T> Closing<R, T> {
    pub(crate) fn new(running: R) -> Self {
        Closing {
            phase: Mutex::new(Phase::Running(running)),
            moved: Condvar::new(),
        }
    }

    /// The phase, locked.
    pub(super) fn lock(&self) -> MutexGuard<'_, Phase<R, T>> {
        self.phase.lock()
    }

    /// A caller arrives; `inside` tells whether it is one of the engine's callbacks. The first
    /// caller runs `stop` under the lock (so a caller that finds the shutdown begun also finds
    /// it stopped), which answers false if the shutdown is not the engine's to do (then
    /// nothing changes). A caller from outside that finds another finishing waits for it.
    pub(crate) fn begin(&self, inside: bool, stop: impl FnOnce(&R) -> bool) -> Duty<R, T> {
        let mut phase = self.phase.lock();
        loop {
            match std::mem::replace(&mut *phase, Phase::Stopping) {
                Phase::Running(running) => {
                    if !stop(&running) {
                        *phase = Phase::Running(running);
                        return Duty::Nothing;
                    }
                    return if inside {
                        Duty::FinishElsewhere(running)
                    } else {
                        Duty::Finish(running)
                    };
                }
                Phase::Finishing(finisher) if !inside => return Duty::Join(finisher),
                Phase::Stopping if !inside => phase = self.moved.wait(phase),
                other => {
                    *phase = other;
                    return Duty::Nothing;
                }
            }
        }
    }

    /// After `FinishElsewhere`: the thread finishing the shutdown, for the next caller from
    /// outside to join (`None`: no thread could be had, and the shutdown ends unfinished).
    pub(crate) fn finishing(&self, finisher: Option<JoinHandle<T>>) {
        *self.phase.lock() = match finisher {
            Some(finisher) => Phase::Finishing(finisher),
            None => Phase::Stopped,
        };
        // A caller that arrived meanwhile waits in `begin`: it may join now.
        self.moved.notify_all();
    }

    /// The shutdown is finished: wakes the callers waiting for it.
    pub(crate) fn complete(&self) {
        *self.phase.lock() = Phase::Stopped;
        self.moved.notify_all();
    }
}

/// Completes the shutdown when dropped, also if finishing it unwinds (a bug in the engine):
/// the callers waiting for it must not wait forever.
pub(super) struct CompleteOnDrop<'a, R, T>(pub(super) &'a Closing<R, T>);

impl<R, T> Drop for CompleteOnDrop<'_, R, T> {
    fn drop(&mut self) {
        self.0.complete();
    }
}
