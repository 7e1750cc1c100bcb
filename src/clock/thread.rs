//! The clock thread: one per engine on the system's clocks, started with its first
//! other-clock timer, that runs the rounds. It waits on `timerfd`s on Linux (see `timerfd`),
//! and elsewhere, or where they cannot be had, wakes every [`RECHECK`] while it keeps any.

use crate::sync::{Condvar, Mutex};
use crate::time::PerClock;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a clock thread without `timerfd`s looks at the clocks: a step or a resume takes effect
/// within this (plus two ticks).
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// How soon a round looks again when a timer was mid-run and could not move.
const RETRY: Duration = Duration::from_millis(2);

/// What a round leaves the clock thread: the next future deadline per clock, whether it must look
/// again soon (a timer was mid-run and could not move), whether it keeps any, and
/// whether the engine has stopped.
#[derive(Default)]
pub(crate) struct Round {
    pub(super) next: PerClock<Option<u64>>,
    pub(super) retry: bool,
    pub(super) keeping: bool,
    pub(super) stopped: bool,
}

/// The running clock thread, and its alarm.
pub(super) struct ClockThread {
    thread: JoinHandle<()>,
    alarm: std::sync::Arc<Alarm>,
}

impl ClockThread {
    /// Starts a clock thread that runs `round`, told which clocks were reported stepped.
    pub(super) fn start<R>(round: R) -> std::io::Result<ClockThread>
    where
        R: Fn(PerClock<bool>) -> Round + Send + 'static,
    {
        let alarm = std::sync::Arc::new(Alarm::new());
        let waits = alarm.clone();
        let thread = std::thread::Builder::new()
            .name("sw-clocks".into())
            .spawn(move || run_rounds(round, &waits))?;
        Ok(ClockThread { thread, alarm })
    }

    /// Has the thread run a round now.
    pub(super) fn ring(&self) {
        self.alarm.ring();
    }

    /// Waits for the thread to end (once the engine stopped), unless it is this thread (a
    /// waker it woke dropped the engine).
    pub(super) fn join(self) {
        if self.thread.thread().id() != std::thread::current().id() {
            let _ = self.thread.join();
        }
    }
}

/// The thread's loop: a round, then a wait until the next deadline or a change, until the
/// engine stops.
fn run_rounds(round: impl Fn(PerClock<bool>) -> Round, alarm: &Alarm) {
    let mut stepped = PerClock::default();
    loop {
        let done = round(stepped);
        if done.stopped {
            return;
        }
        alarm.arm(done.next);
        stepped = alarm.wait(done.retry.then_some(RETRY), done.keeping);
    }
}

/// How the clock thread waits: `timerfd`s where it can (Linux), else a bell and a timeout.
enum Alarm {
    #[cfg(all(target_os = "linux", not(miri)))]
    Fds(super::timerfd::Fds),
    Bell(Bell),
}

impl Alarm {
    fn new() -> Self {
        #[cfg(all(target_os = "linux", not(miri)))]
        if let Some(fds) = super::timerfd::Fds::new() {
            return Alarm::Fds(fds);
        }
        Alarm::Bell(Bell::default())
    }

    fn ring(&self) {
        match self {
            #[cfg(all(target_os = "linux", not(miri)))]
            Alarm::Fds(fds) => fds.ring(),
            Alarm::Bell(bell) => bell.ring(),
        }
    }

    /// Sets the deadlines to wake at, per clock (a bell wakes every `RECHECK` instead).
    fn arm(&self, next: PerClock<Option<u64>>) {
        match self {
            #[cfg(all(target_os = "linux", not(miri)))]
            Alarm::Fds(fds) => fds.arm(next),
            Alarm::Bell(_) => {
                let _ = next;
            }
        }
    }

    /// Waits for a deadline, a change of a clock, a ring or `soon`; returns which clocks were
    /// reported stepped.
    fn wait(&self, soon: Option<Duration>, keeping: bool) -> PerClock<bool> {
        match self {
            #[cfg(all(target_os = "linux", not(miri)))]
            Alarm::Fds(fds) => fds.wait(soon),
            Alarm::Bell(bell) => {
                let recheck = keeping.then_some(RECHECK);
                bell.wait(soon.into_iter().chain(recheck).min());
                PerClock::default()
            }
        }
    }
}

/// A flag and a condition variable: the portable wait.
struct Bell {
    rung: Mutex<bool>,
    ringing: Condvar,
}

impl Default for Bell {
    fn default() -> Self {
        Bell {
            rung: Mutex::new(false),
            ringing: Condvar::new(),
        }
    }
}

impl Bell {
    fn ring(&self) {
        *self.rung.lock() = true;
        self.ringing.notify_one();
    }

    /// Waits until rung, or for `most` if given.
    fn wait(&self, most: Option<Duration>) {
        let mut rung = self.rung.lock();
        if !*rung {
            rung = match most {
                Some(most) => self.ringing.wait_timeout(rung, most).0,
                None => self.ringing.wait(rung),
            };
        }
        *rung = false;
    }
}
