//! Asking the kernel to wake a tick thread on time, with two requests it may refuse (a refusal
//! leaves the default and is no error):
//!
//! - **Timer slack** (`PR_SET_TIMERSLACK`): a sleep may fire up to the slack late; the thread
//!   asks for a hundredth of its tick, between 1 µs and the default.
//! - **Scheduling slice** (`sched_setattr` with `sched_runtime`, Linux 6.12+): under EEVDF a
//!   waking thread waits out the running thread's slice; a shorter slice of its own gets it
//!   picked sooner, without changing its share. It asks for its tick, within the kernel's range.

use std::time::Duration;

/// The kernel's default timer slack, the most a tick thread asks for.
#[cfg_attr(any(not(target_os = "linux"), miri), allow(dead_code))] // asked for on Linux only
const DEFAULT_SLACK: Duration = Duration::from_micros(50);
/// The shortest scheduling slice the kernel accepts.
#[cfg_attr(any(not(target_os = "linux"), miri), allow(dead_code))] // asked for on Linux only
const MIN_SLICE: Duration = Duration::from_micros(100);
/// The longest scheduling slice the kernel accepts.
#[cfg_attr(any(not(target_os = "linux"), miri), allow(dead_code))] // asked for on Linux only
const MAX_SLICE: Duration = Duration::from_millis(100);

/// The timer slack a thread with a tick of `tick` asks for.
#[cfg_attr(any(not(target_os = "linux"), miri), allow(dead_code))] // asked for on Linux only
fn slack_for(tick: Duration) -> Duration {
    (tick / 100).clamp(Duration::from_micros(1), DEFAULT_SLACK)
}

/// The scheduling slice a thread with a tick of `tick` asks for.
#[cfg_attr(any(not(target_os = "linux"), miri), allow(dead_code))] // asked for on Linux only
fn slice_for(tick: Duration) -> Duration {
    tick.clamp(MIN_SLICE, MAX_SLICE)
}

/// What the kernel granted the calling tick thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Granted {
    pub(super) slack: bool,
    pub(super) slice: bool,
}

/// Asks for the calling thread's timer slack and scheduling slice to suit a tick of `tick`.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn tune_current_thread(tick: Duration) -> Granted {
    let slack = u64::try_from(slack_for(tick).as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: `PR_SET_TIMERSLACK` takes an unsigned long and changes only this thread's slack.
    let slack = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack as libc::c_ulong) } == 0;
    Granted {
        slack,
        slice: set_slice(slice_for(tick)),
    }
}

/// Elsewhere (and under Miri, which cannot make these calls) the kernel's defaults stay.
#[cfg(any(not(target_os = "linux"), miri))]
pub(crate) fn tune_current_thread(_: Duration) -> Granted {
    Granted {
        slack: false,
        slice: false,
    }
}

/// Sets the calling thread's scheduling slice, keeping its policy and nice value.
#[cfg(all(target_os = "linux", not(miri)))]
fn set_slice(slice: Duration) -> bool {
    let size = std::mem::size_of::<libc::sched_attr>();
    // SAFETY: an all-zero `sched_attr` is a valid value of the plain C struct.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    // SAFETY: `sched_getattr` for this thread (pid 0) writes at most `size` bytes, the
    // struct's true size; flags must be 0.
    let got = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut libc::sched_attr,
            size as libc::c_uint,
            0,
        )
    };
    // Only the fair class takes a slice this way; a user's real-time policy is left alone.
    if got != 0 || attr.sched_policy != libc::SCHED_OTHER as u32 {
        return false;
    }
    attr.size = size as u32;
    attr.sched_flags = 0;
    attr.sched_runtime = u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: `sched_setattr` for this thread only reads `attr` (true `size`), with the policy
    // and nice value just read.
    let set = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0,
            &attr as *const libc::sched_attr,
            0,
        )
    };
    set == 0
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slack_is_a_hundredth_of_the_tick_within_the_default() {
        assert_eq!(
            slack_for(Duration::from_micros(100)),
            Duration::from_micros(1)
        );
        assert_eq!(
            slack_for(Duration::from_millis(1)),
            Duration::from_micros(10)
        );
        assert_eq!(slack_for(Duration::from_secs(1)), DEFAULT_SLACK);
        assert_eq!(slack_for(Duration::from_nanos(1)), Duration::from_micros(1));
    }

    #[test]
    fn slice_is_the_tick_within_the_kernel_range() {
        assert_eq!(slice_for(Duration::from_micros(10)), MIN_SLICE);
        assert_eq!(
            slice_for(Duration::from_millis(1)),
            Duration::from_millis(1)
        );
        assert_eq!(slice_for(Duration::from_secs(1)), MAX_SLICE);
    }

    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn a_tuned_thread_has_the_slack_it_asked_for() {
        let granted = std::thread::spawn(|| {
            let granted = tune_current_thread(Duration::from_micros(100));
            // SAFETY: `PR_GET_TIMERSLACK` reads the calling thread's slack.
            let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
            (granted, slack)
        })
        .join()
        .unwrap();
        if granted.0.slack {
            assert_eq!(granted.1, 1_000, "1 µs, in nanoseconds");
        }
    }
}
