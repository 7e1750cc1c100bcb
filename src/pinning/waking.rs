//! Asking the kernel to wake a tick thread on time.
//!
//! A tick thread sleeps for a tick at a time while timers come due, so two kernel settings
//! bound how late it wakes:
//!
//! - **Timer slack.** Linux lets a sleep's timer fire up to the thread's slack late (50 µs by
//!   default), to batch wake-ups. Against a 100 µs tick that is half a tick; the thread asks
//!   for a slack of a hundredth of its tick, between 1 µs and the default (`PR_SET_TIMERSLACK`).
//! - **Scheduling slice.** Under the EEVDF scheduler (Linux 6.6 and later) a thread that wakes
//!   on a cpu busy with another thread waits until the running thread's slice is used up,
//!   about 3 ms by default: the whole of a 1 ms tick's budget. A thread may ask for a shorter
//!   slice for itself (`sched_setattr` with `sched_runtime`, Linux 6.12 and later, no
//!   privilege needed); a thread with a short slice gets an earlier virtual deadline when it
//!   wakes and is picked sooner. The tick thread asks for its tick, within the kernel's
//!   range of 100 µs to 100 ms. Its share of the cpu does not change, only how soon it is
//!   picked. Older kernels ignore the request.
//!
//! Both are requests the kernel may refuse; a refusal leaves the default and is not an error.

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
    // SAFETY: `PR_SET_TIMERSLACK` takes its value as an unsigned long and changes only the
    // calling thread's timer slack.
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
    // SAFETY: `sched_getattr` for the calling thread (pid 0) writes at most `size` bytes, the
    // struct's true size, into `attr`; flags must be 0.
    let got = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut libc::sched_attr,
            size as libc::c_uint,
            0,
        )
    };
    // Only the fair class takes a slice this way; a real-time or deadline policy the user
    // chose is left alone.
    if got != 0 || attr.sched_policy != libc::SCHED_OTHER as u32 {
        return false;
    }
    attr.size = size as u32;
    attr.sched_flags = 0;
    attr.sched_runtime = u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: `sched_setattr` for the calling thread only reads `attr`, whose `size` is the
    // struct's true size; its policy and nice value are the ones just read.
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
