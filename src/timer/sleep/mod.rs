//! Async sleeps, driven by the engine's shards with no runtime of their own.
//!
//! A [`Sleep`] takes a timer the first time it is polled before its deadline, so a timeout
//! whose future is ready at once costs none. The timer's callback is the polling task's waker
//! ([`Wakes`]), woken when the timer runs or is handed back at shutdown. The sleep reads the
//! timer's state word to learn whether it has ended: nothing is shared but the entry.
//!
//! Moved later, a sleep keeps its timer and notes the new deadline; when that timer fires,
//! the poll finds the deadline ahead and takes a new timer. Moved earlier (or on a capped
//! engine, either way, keeping its permit) the timer moves. Polled with another waker, the
//! sleep swaps its timer for one holding the new waker. Dropping a sleep, or moving it where
//! its timer cannot go, cancels the timer and drops the waker unwoken (a waker may itself
//! drop sleeps).
//!
//! # Refusals
//!
//! A sleep never ends early. At the cap it leaves its waker with the cap, woken by every
//! permit released, and asks again then. After shutdown (which woke its task) no shard times
//! it: it waits for its deadline with the process's fallback (`time::fallback`), and
//! `refusal` tells why. A deadline beyond `max_delay` is no refusal: the sleep holds a
//! stand-in timer at the farthest tick, renewed whenever it comes due.
//!
//! What a sleep keeps beside its timer, its waker's identity and its word of deadline and
//! flags, is in `parts`.

mod parts;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

pub(crate) use self::parts::SleepSite;
use self::parts::{fired_for, reaches, unwake, Registered, Until, WakerId, Wakes};
use super::handle::{Timer, Withdrawn};
use crate::shard::{Lane, Memory, Origin, Refusal};
use crate::sync::Arc;
use crate::time::{wake_at, TickClock};

/// A future that completes at a deadline, never before. Made by [`TimerEngine::sleep`] and
/// [`TimerEngine::sleep_until`], or [`TimerEngine::try_sleep`] and
/// [`TimerEngine::try_sleep_until`] (which return a refusal up front).
///
/// It takes a timer when first polled; dropping it cancels the timer (cancel safe). At the
/// cap it waits for a permit; after shutdown it still ends at its deadline, timed by a
/// fallback thread of the process. [`refused`](Self::refused) says which holds it back.
///
/// ```
/// use std::time::Duration;
/// use futures::FutureExt;
/// let clock = shardwheel::ManualClock::new();
/// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
/// let mut sleep = engine.sleep(Duration::from_secs(60));
/// sleep.reset_at(engine.now() + Duration::from_secs(5));
/// clock.advance(Duration::from_secs(4));
/// assert!((&mut sleep).now_or_never().is_none());
/// clock.advance(Duration::from_secs(1));
/// assert!(sleep.now_or_never().is_some());
/// ```
///
/// [`TimerEngine::sleep`]: crate::TimerEngine::sleep
/// [`TimerEngine::sleep_until`]: crate::TimerEngine::sleep_until
/// [`TimerEngine::try_sleep`]: crate::TimerEngine::try_sleep
/// [`TimerEngine::try_sleep_until`]: crate::TimerEngine::try_sleep_until
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    /// The deadline tick ([`FAR`] beyond the engine's range: the sleep never ends), and
    /// whether it has ended and whether it waits for a permit.
    until: Until,
    /// Where the sleep's timers go.
    lane: Arc<Lane>,
    /// The timer the last poll registered.
    timer: Option<Registered>,
    site: SleepSite,
}

/// The tick of a sleep whose deadline is beyond the engine's range (no tick is this late).
const FAR: u64 = Until::TICK;

impl Sleep {
    /// A sleep on `lane`'s shard until `tick` (`None`: never).
    #[track_caller]
    #[inline]
    pub(crate) fn on(lane: &Arc<Lane>, tick: Option<u64>) -> Sleep {
        Sleep {
            until: Until::new(tick),
            lane: lane.clone(),
            timer: None,
            site: SleepSite::caller(),
        }
    }

    /// The same sleep, made at `site` (a free function's caller).
    #[inline]
    pub(crate) fn sited(mut self, site: SleepSite) -> Sleep {
        self.site = site;
        self
    }

    /// As [`on`](Self::on), but a refusal the engine would give now (shut down, or full) is
    /// returned instead.
    #[track_caller]
    #[inline]
    pub(crate) fn try_on(lane: &Arc<Lane>, tick: Option<u64>) -> Result<Sleep, Refusal> {
        match lane.refusal_now() {
            Some(refusal) => Err(refusal),
            None => Ok(Sleep::on(lane, tick)),
        }
    }

    /// The deadline tick, `None` beyond the engine's range.
    pub(crate) fn tick(&self) -> Option<u64> {
        (self.until.tick() != FAR).then_some(self.until.tick())
    }

    /// The registered timer, if any.
    fn timer(&self) -> Option<Timer<'_>> {
        let registered = self.timer.as_ref()?;
        Some(Timer::new(&registered.entry, &self.lane))
    }

    /// The clock of the engine the sleep belongs to.
    pub(super) fn clock(&self) -> &TickClock {
        self.lane.shard().clock()
    }

    /// The shard the sleep's timers go to, which tells the engine it belongs to.
    #[cfg(feature = "hyper")]
    pub(crate) fn shard(&self) -> &crate::shard::ShardShared {
        self.lane.shard()
    }

    /// Whether the engine the sleep belongs to has shut down.
    pub(crate) fn engine_stopped(&self) -> bool {
        self.lane.shard().is_stopped()
    }

    /// Why the sleep has no timer and will not end on time, if so: the engine has shut down,
    /// or its last poll found the engine at its cap.
    pub(crate) fn refusal(&self) -> Option<Refusal> {
        if self.is_elapsed() {
            None
        } else if self.engine_stopped() {
            Some(Refusal::Shutdown)
        } else {
            self.until.full().then_some(Refusal::Full)
        }
    }

    /// Whether the sleep has ended, or ends at its next poll. Follows the shard's turns,
    /// which trail the clock by about a tick.
    pub fn is_elapsed(&self) -> bool {
        if self.until.ended() {
            return true;
        }
        // As `poll` decides for the waker it holds, without registering.
        if let Some(registered) = &self.timer {
            let state = registered.state();
            if state.is_pending() {
                return false;
            }
            if fired_for(state, self.until.tick()) {
                return true;
            }
        }
        self.shard_turned_deadline()
            || (self.engine_stopped()) && self.deadline().is_some_and(|at| self.clock().now() >= at)
    }

    /// Whether the shard has turned the deadline's tick, so the sleep needs no timer. `FAR`
    /// is never at or below a tick the shard turned.
    fn shard_turned_deadline(&self) -> bool {
        self.until.tick() <= self.lane.shard().counts().processed().get()
    }

    /// Whether the registered timer is pending and due at the deadline: the sleep needs no
    /// other.
    fn timer_holds_deadline(&self) -> bool {
        self.timer.as_ref().is_some_and(|timer| {
            let state = timer.state();
            state.is_pending() && reaches(state, self.until.tick())
        })
    }

    /// When the sleep ends, if ever: the deadline rounded up to the engine's tick.
    pub fn deadline(&self) -> Option<Instant> {
        self.tick().map(|tick| self.clock().instant_of(tick))
    }

    /// Moves the deadline to `delay` from now; an elapsed sleep starts over. A deadline
    /// beyond [`max_delay`](crate::TimerEngine::max_delay) does not end.
    pub fn reset(&mut self, delay: Duration) {
        let tick = self.clock().tick_after(delay);
        self.reset_to(tick);
    }

    /// As [`reset`](Self::reset), to an absolute deadline; a past one ends the sleep on the
    /// shard's next turn.
    pub fn reset_at(&mut self, deadline: Instant) {
        let tick = self.clock().tick_at(deadline);
        self.reset_to(tick);
    }

    /// Moves the sleep to `tick` (`None`: never). The timer stays if the sleep moves later
    /// (uncapped); otherwise it moves, keeping its waker, or is cancelled if it cannot.
    pub(crate) fn reset_to(&mut self, tick: Option<u64>) {
        self.until = Until::new(tick);
        // A timer due later must move. Under a cap it moves all the same: the new timer its
        // firing would call for could be refused.
        if self.timer.as_ref().is_some_and(|timer| {
            timer.state().deadline() > self.until.tick() || self.lane.is_capped()
        }) {
            self.move_timer(tick);
        }
    }

    /// Moves the registered timer, if any, to `tick`, or cancels it if it cannot move there.
    fn move_timer(&mut self, tick: Option<u64>) {
        let Some(timer) = self.timer() else {
            return;
        };
        // `move_to` takes only a tick in range; a far sleep needs a stand-in.
        if !timer.move_to(tick) {
            self.unregister();
        }
    }

    /// As [`reset_to`](Self::reset_to), but if the sleep needs a new timer and the engine
    /// would refuse one now, the sleep ends and the refusal is returned.
    pub(crate) fn try_reset_to(&mut self, tick: Option<u64>) -> Result<(), Refusal> {
        self.reset_to(tick);
        if self.timer_holds_deadline() {
            return Ok(());
        }
        match self.lane.refusal_now() {
            Some(refusal) => {
                self.until.end();
                Err(refusal)
            }
            None => Ok(()),
        }
    }

    /// Cancels the registered timer, if any, dropping its waker unwoken. Returns `false` if
    /// the timer had already fired or been handed back.
    fn unregister(&mut self) -> bool {
        let Some(timer) = self.timer() else {
            return true;
        };
        let won = match timer.withdraw() {
            Withdrawn::Callback(callback) => {
                drop(unwake(callback));
                true
            }
            Withdrawn::Lost | Withdrawn::Running => false,
        };
        self.timer = None;
        won
    }

    /// Takes a timer that wakes `waker` at the deadline (a stand-in at the farthest tick for
    /// a far sleep), or returns why the engine refused it.
    fn register(&mut self, waker: &Waker) -> Result<(), Refusal> {
        let Some(tick) = self.tick().or_else(|| self.clock().farthest_tick()) else {
            // The end of a manual clock's time: no tick is left to hold a stand-in at, and
            // nothing will ever come due.
            return Ok(());
        };
        let lane = &self.lane;
        let due = self.clock().due_now_at(Some(tick));
        let memory = Memory::Lane { born: due.born };
        match Lane::schedule(lane, due.tick, Wakes(waker.clone()), memory) {
            Ok(entry) => {
                lane.note(&entry, || Origin {
                    site: Some(self.site.0),
                    born: due.born,
                    key: None,
                });
                self.timer = Some(Registered {
                    entry,
                    waker: WakerId::of(waker),
                });
                self.until.set_full(false);
                Ok(())
            }
            Err((refusal, waker)) => {
                drop(waker);
                self.until.set_full(refusal == Refusal::Full);
                Err(refusal)
            }
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut asked_again = false;
        loop {
            if this.until.ended() {
                return Poll::Ready(());
            }
            let Some(registered) = &this.timer else {
                if this.shard_turned_deadline() {
                    // The shard has turned past the deadline: no timer is needed.
                    this.until.end();
                    return Poll::Ready(());
                }
                match this.register(cx.waker()) {
                    Err(Refusal::Full) if this.lane.shard().wait_for_room(cx.waker()) => {
                        // A permit was released meanwhile: ask once more, then come back later.
                        if asked_again {
                            cx.waker().wake_by_ref();
                            return Poll::Pending;
                        }
                        asked_again = true;
                        continue;
                    }
                    Err(Refusal::Shutdown) => return this.after_shutdown(cx),
                    // Held, waiting for a permit.
                    _ => return Poll::Pending,
                }
            };
            let state = registered.state();
            if state.is_pending() {
                if registered.waker == WakerId::of(cx.waker()) {
                    return Poll::Pending;
                }
                // Another task (or waker) waits now: give it a timer of its own. If the old
                // one fired meanwhile, the look below finds it.
                if this.unregister() {
                    continue;
                }
            }
            // The timer fired or was handed back.
            this.timer = None;
            if fired_for(state, this.until.tick()) {
                this.until.end();
                return Poll::Ready(());
            }
            if this.engine_stopped() {
                // Handed back at shutdown: no shard times the sleep now.
                return this.after_shutdown(cx);
            }
            // The sleep was moved past its timer, or a far sleep's stand-in came due while the
            // engine runs: take a new timer, unless the deadline has passed.
        }
    }
}

impl Sleep {
    /// A poll once the engine has shut down: ends the sleep if its deadline has passed on the
    /// engine's clock, else leaves the waker to be woken then (see `time::fallback`).
    #[cold]
    fn after_shutdown(&mut self, cx: &Context<'_>) -> Poll<()> {
        let Some(at) = self.deadline() else {
            // Beyond the engine's range: it never ends.
            return Poll::Pending;
        };
        if self.clock().now() >= at {
            self.until.end();
            return Poll::Ready(());
        }
        wake_at(self.clock(), at, cx.waker());
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("elapsed", &self.is_elapsed())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_is_six_words() {
        // It lives in every task that waits on one: a deadline and its flags, the lane, the
        // timer's entry and its waker's identity, and its site.
        assert_eq!(
            std::mem::size_of::<Sleep>(),
            6 * std::mem::size_of::<usize>()
        );
    }
}
