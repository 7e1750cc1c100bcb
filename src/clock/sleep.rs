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
use crate::sync::Arc;
use crate::time::{Look, OtherDeadline};
use crate::timer::Sleep;

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
    timers: Arc<ClockTimers>,
    /// Its number and the waker it keeps, once kept.
    kept: Option<(u64, Arc<TaskWaker>)>,
    ended: bool,
}

impl ClockSleep {
    /// A sleep on `lane`'s shard until `deadline`.
    pub(crate) fn new(
        lane: &Arc<Lane>,
        timers: &Arc<ClockTimers>,
        deadline: OtherDeadline,
    ) -> Self {
        ClockSleep {
            sleep: Sleep::on(lane, Some(estimate(timers, deadline))),
            deadline,
            timers: timers.clone(),
            kept: None,
            ended: false,
        }
    }

    /// The inner sleep (for its refusal).
    pub(crate) fn sleep(&self) -> &Sleep {
        &self.sleep
    }

    /// Whether the deadline has passed on its clock.
    pub fn is_elapsed(&self) -> bool {
        self.ended || self.timers.clock().look(self.deadline) == Look::Due
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
}

/// The tick `deadline`'s estimate falls at: the present's if it has passed.
fn estimate(timers: &ClockTimers, deadline: OtherDeadline) -> u64 {
    match timers.clock().look(deadline) {
        Look::Due => timers.clock().tick_now(),
        Look::At(tick) => tick,
    }
}

impl Future for ClockSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        for _ in 0..MOVES {
            if this.ended {
                return Poll::Ready(());
            }
            let Look::At(tick) = this.timers.clock().look(this.deadline) else {
                this.ended = true;
                this.forget();
                return Poll::Ready(());
            };
            if this.sleep.tick() != Some(tick) {
                this.sleep.reset_to(Some(tick));
            }
            this.keep(cx);
            if Pin::new(&mut this.sleep).poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        // The clocks kept moving under this poll: look again soon rather than loop here.
        cx.waker().wake_by_ref();
        Poll::Pending
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
