//! Timers on the boot clock (which counts the time the machine slept) and on the wall clock
//! (which NTP or an operator may step): the other clocks, beside the engine's monotonic one.
//!
//! Each such timer is an ordinary engine timer at the estimate of its deadline: the monotonic
//! present plus what is left on its own clock. When it fires, its run reads its own clock: if
//! the deadline has passed it retires the timer and runs the callback (so a cancel that wins
//! first still stops it), else it re-arms at the new estimate. So none is early on its own
//! clock, whatever the clocks did. A sleep does the same in its poll.
//!
//! Each engine keeps its other-clock timers and sleeps in a map by deadline per clock
//! ([`ClockTimers`]). A round re-times them: when a clock moved apart from the monotonic one
//! (a step, a resume), every timer moves to its new estimate (a passed one to now) and every
//! sleep is woken; otherwise only the passed ones are. An engine on the system's clocks
//! runs its rounds on its clock thread, started with its first such timer: on Linux it waits on
//! a `timerfd` at the next wall deadline with `TFD_TIMER_CANCEL_ON_SET` (the kernel reports a
//! step, and a resume, at once) and one on `CLOCK_BOOTTIME` at the next boot deadline; elsewhere
//! it looks every [`RECHECK`](thread::RECHECK). An engine on a manual clock runs one when
//! the clock is stepped or suspended.
//!
//! - `timers`: [`ClockTimers`], the maps and the round.
//! - `run`: [`OnClock`], a timer's kind and its run.
//! - `sleep`: [`ClockSleep`], the future.
//! - `thread`: the clock thread, and how it waits (`timerfd` on Linux).

mod run;
mod sleep;
mod thread;
mod timers;

// Not under Miri, which cannot make a `timerfd`: its clock thread takes the portable wait.
#[cfg(all(target_os = "linux", not(miri)))]
mod timerfd;

pub(crate) use run::OnClock;
pub use sleep::ClockSleep;
pub(crate) use timers::{ClockTimers, Waiting};
