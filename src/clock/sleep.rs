//! [`ClockSleep`]: a sleep until a deadline on the boot or wall clock. It holds an engine
//! [`Sleep`] at the deadline's estimate; each poll reads its clock, ends if the deadline has
//! passed, and else moves the inner sleep to the new estimate. While it waits, its task's waker
//! is kept, so a round after a step or a resume wakes it to look again.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::timers::{ClockTimers, TaskWaker, Waiting};
use crate::shard::Lane;
use crate::sync::{Arc, StdArc};
use crate::time::{Look, OtherDeadline};
use crate::timer::{Elapsed, Sleep, Timeout};

/// The most times one poll moves its inner sleep before it waits: each move is to a tick
/// ahead of the present, so the second poll of the inner sleep is pending but for a race.
const MOVES: usize = 4;

/// A future that completes at a deadline on the boot clock (counting the time the machine
/// slept) or the wall clock (`SystemTime`), never before on that clock. Made by
/// [`TimerEngine::sleep_boot`] and [`TimerEngine::sleep_until_wall`]; dropping it cancels its
/// timer. A step of the wall clock forward past the deadline, or a resume past it, ends it
/// within two ticks on Linux, within a second plus two ticks elsewhere; a step back delays it.
///
/// [`TimerEngine::sleep_boot`]: crate::TimerEngine::sleep_boot
/// [`TimerEngine::sleep_until_wall`]: crate::TimerEngine::sleep_until_wall
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct ClockSleep {
    sleep: Sleep,
    deadline: OtherDeadline,
    /// A timeout's: the tick of the deadline scope it was made in, on the engine's clock.
    limit: Option<u64>,
    timers: StdArc<ClockTimers>,
    /// Its number and the waker it keeps, once kept.
    kept: Option<(u64, Arc<TaskWaker>)>,
    /// Once ended: whether the scope's deadline ended it.
    ended: Option<bool>,
}

impl ClockSleep {
    /// A sleep on `lane`'s shard until `deadline`, or the tick `limit` if that comes first.
    #[track_caller]
    pub(crate) fn new(
        lane: &Arc<Lane>,
        timers: &StdArc<ClockTimers>,
        deadline: OtherDeadline,
        limit: Option<u64>,
    ) -> Self {
        let tick = timers.clock().estimate(deadline);
        ClockSleep {
            sleep: Sleep::on(lane, Some(limit.map_or(tick, |limit| tick.min(limit)))),
            deadline,
            limit,
            timers: timers.clone(),
            kept: None,
            ended: None,
        }
    }

    /// The inner sleep (for its refusal).
    pub(crate) fn sleep(&self) -> &Sleep {
        &self.sleep
    }

    /// Whether the deadline has passed on its clock (or, a timeout's, its scope's deadline).
    pub fn is_elapsed(&self) -> bool {
        let clock = self.timers.clock();
        self.ended.is_some()
            || clock.look(self.deadline) == Look::Due
            || self
                .limit
                .is_some_and(|limit| limit <= clock.now_tick().get())
    }

    /// Keeps the task's waker where a round finds it.
    fn keep(&mut self, cx: &Context<'_>) {
        match &self.kept {
            Some((_, task)) => task.set(cx.waker()),
            None => {
                let task = Arc::new(TaskWaker::new());
                task.set(cx.waker());
                let number = self.timers.number();
                let waiting = Waiting::Task(task.clone());
                ClockTimers::keep(&self.timers, self.deadline, number, waiting);
                self.kept = Some((number, task));
            }
        }
    }

    fn forget(&mut self) {
        if let Some((number, _)) = self.kept.take() {
            self.timers.forget(self.deadline, number);
        }
    }

    /// Ends the sleep; `by_scope` if its scope's deadline came first.
    fn end(&mut self, by_scope: bool) -> Poll<bool> {
        self.ended = Some(by_scope);
        self.forget();
        Poll::Ready(by_scope)
    }

    /// Polls the sleep: `Ready(true)` if it ended at its scope's deadline.
    fn poll_ended(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        for _ in 0..MOVES {
            if let Some(by_scope) = self.ended {
                return Poll::Ready(by_scope);
            }
            let Look::At(tick) = self.timers.clock().look(self.deadline) else {
                return self.end(false);
            };
            // A tie is the sleep's own deadline, as a timeout's clamp has it.
            let limited = self.limit.filter(|&limit| limit < tick);
            let tick = limited.unwrap_or(tick);
            if self.sleep.tick() != Some(tick) {
                self.sleep.reset_to(Some(tick));
            }
            self.keep(cx);
            if Pin::new(&mut self.sleep).poll(cx).is_pending() {
                return Poll::Pending;
            }
            if limited.is_some() {
                return self.end(true);
            }
        }
        // The clocks kept moving under this poll: look again soon rather than loop here.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Future for ClockSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().poll_ended(cx).map(|_| ())
    }
}

impl<F: Future> Future for Timeout<F, ClockSleep> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(cx, |sleep, _, cx| sleep.poll_ended(cx))
    }
}

impl Drop for ClockSleep {
    fn drop(&mut self) {
        self.forget();
    }
}

impl fmt::Debug for ClockSleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClockSleep")
            .field("deadline", &self.deadline)
            .field("elapsed", &self.is_elapsed())
            .finish()
    }
}
