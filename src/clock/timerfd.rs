//! The Linux clock thread's wait: a `timerfd` on `CLOCK_REALTIME` armed at the next wall deadline
//! with `TFD_TIMER_CANCEL_ON_SET`, whose read fails with `ECANCELED` once the clock is stepped
//! (or the machine resumes); one on `CLOCK_BOOTTIME` at the next boot deadline, which expires
//! at once on a resume past it; and an `eventfd` that rings it.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::time::PerClock;

/// The three descriptors the clock thread polls.
pub(super) struct Fds {
    wall: OwnedFd,
    boot: OwnedFd,
    bell: OwnedFd,
}

impl Fds {
    /// The descriptors, or `None` if the system refuses one (the thread then rechecks).
    pub(super) fn new() -> Option<Fds> {
        let flags = libc::TFD_NONBLOCK | libc::TFD_CLOEXEC;
        // SAFETY: plain calls that make new descriptors, taken over at once by `owned`.
        let (wall, boot, bell) = unsafe {
            (
                libc::timerfd_create(libc::CLOCK_REALTIME, flags),
                libc::timerfd_create(libc::CLOCK_BOOTTIME, flags),
                libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC),
            )
        };
        let (wall, boot, bell) = (owned(wall), owned(boot), owned(bell));
        Some(Fds {
            wall: wall?,
            boot: boot?,
            bell: bell?,
        })
    }

    pub(super) fn ring(&self) {
        let one = 1u64;
        // SAFETY: writes the 8 bytes of `one` to a descriptor this owns. A full count (it
        // never is: each wait drains it) fails, and the thread is awake then anyway.
        let _ = unsafe { libc::write(self.bell.as_raw_fd(), (&raw const one).cast(), 8) };
    }

    /// Arms each clock's descriptor at its next deadline, or disarms it.
    pub(super) fn arm(&self, next: PerClock<Option<u64>>) {
        let absolute = libc::TFD_TIMER_ABSTIME;
        set(&self.boot, next.boot, absolute);
        let cancel = absolute | libc::TFD_TIMER_CANCEL_ON_SET;
        set(&self.wall, next.wall, cancel);
    }

    /// Waits for a deadline, a step, a ring or `soon`; returns which clocks were reported
    /// stepped (the wall clock's `ECANCELED`).
    pub(super) fn wait(&self, soon: Option<Duration>) -> PerClock<bool> {
        let mut polled = [&self.wall, &self.boot, &self.bell].map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        let timeout = soon.map_or(-1, |soon| {
            i32::try_from(soon.as_millis().max(1)).unwrap_or(i32::MAX)
        });
        // SAFETY: `polled` is three `pollfd`s, valid for the call. An error (EINTR) is a
        // wake like any other: the round looks at the clocks itself.
        let _ = unsafe { libc::poll(polled.as_mut_ptr(), 3, timeout) };
        let stepped = polled[0].revents != 0 && drain(&self.wall) == Some(libc::ECANCELED);
        for (fd, polled) in [&self.boot, &self.bell].into_iter().zip(&polled[1..]) {
            if polled.revents != 0 {
                drain(fd);
            }
        }
        PerClock {
            boot: false,
            wall: stepped,
        }
    }
}

/// Takes over `fd`, if the call that made it succeeded.
fn owned(fd: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: a new descriptor, owned by no one else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Arms timer `fd` at `at` nanoseconds on its clock, absolute (`None`: disarms it).
fn set(fd: &OwnedFd, at: Option<u64>, flags: libc::c_int) {
    // SAFETY: all-zero is a valid `itimerspec` (and disarms).
    let mut spec: libc::itimerspec = unsafe { std::mem::zeroed() };
    if let Some(at) = at {
        spec.it_value.tv_sec =
            libc::time_t::try_from(at / 1_000_000_000).unwrap_or(libc::time_t::MAX);
        // Below a billion: it fits.
        spec.it_value.tv_nsec = (at % 1_000_000_000) as libc::c_long;
    }
    // SAFETY: `spec` is valid for the call; no old value is asked for. A refusal leaves the
    // timer as it was, and the next round sets it again.
    let _ = unsafe { libc::timerfd_settime(fd.as_raw_fd(), flags, &spec, std::ptr::null_mut()) };
}

/// Reads `fd`'s count; the error number if the read failed.
fn drain(fd: &OwnedFd) -> Option<i32> {
    let mut count = 0u64;
    // SAFETY: reads at most 8 bytes into `count`.
    let read = unsafe { libc::read(fd.as_raw_fd(), (&raw mut count).cast(), 8) };
    (read < 0).then(|| std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::time::OtherClock;
    use std::time::{Instant, SystemTime, UNIX_EPOCH};

    /// Now on `clock`, in nanoseconds.
    fn now(clock: OtherClock) -> u64 {
        match clock {
            OtherClock::Wall => {
                let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
                u64::try_from(since.as_nanos()).unwrap()
            }
            OtherClock::Boot => {
                // SAFETY: all-zero is a valid `timespec`.
                let mut at: libc::timespec = unsafe { std::mem::zeroed() };
                // SAFETY: `at` is valid for the write.
                assert_eq!(
                    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut at) },
                    0
                );
                at.tv_sec as u64 * 1_000_000_000 + at.tv_nsec as u64
            }
        }
    }

    #[test]
    fn each_descriptor_wakes_its_wait_at_its_deadline_and_a_ring_at_once() {
        let fds = Fds::new().expect("timerfds on Linux");
        for clock in OtherClock::BOTH {
            let mut next = PerClock::default();
            let deadline = now(clock) + 5_000_000;
            *next.of_mut(clock) = Some(deadline);
            fds.arm(next);
            let start = Instant::now();
            let stepped = fds.wait(Some(Duration::from_secs(10)));
            assert_eq!(stepped, PerClock::default());
            let woke = now(clock);
            assert!(woke >= deadline, "{clock:?} woke early");
            assert!(start.elapsed() < Duration::from_secs(5), "{clock:?} woke");
            eprintln!(
                "{clock:?}: woke {} µs after its deadline",
                (woke - deadline) / 1000
            );
        }
        fds.arm(PerClock::default());
        fds.ring();
        let start = Instant::now();
        fds.wait(Some(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(5), "a ring wakes it");
    }
}
