//! hyper's timer on the engine (the `hyper` feature): [`TimerEngine`] implements
//! [`hyper::rt::Timer`]; its docs are on the impl, on `TimerEngine`'s page.

use std::pin::Pin;
use std::time::{Duration, Instant};

use hyper::rt::{Sleep as HyperSleep, Timer};

use crate::engine::TimerEngine;
use crate::timer::Sleep;

impl HyperSleep for Sleep {}

/// hyper's timer on the engine (the `hyper` feature): hyper's timeouts (an HTTP/1 server's
/// header-read timeout, and whatever else a builder given a timer runs on it) are shardwheel
/// timers:
///
/// ```no_run
/// use std::time::Duration;
/// # fn serve(io: impl hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static) {
/// let engine = shardwheel::default_engine();
/// let service = hyper::service::service_fn(|_request| async {
///     Ok::<_, std::convert::Infallible>(hyper::Response::new(String::from("hello")))
/// });
/// let connection = hyper::server::conn::http1::Builder::new()
///     .timer(engine.clone())
///     .header_read_timeout(Duration::from_secs(5))
///     .serve_connection(io, service);
/// # drop(connection);
/// # }
/// ```
///
/// (The example needs hyper's `server` and `http1` features; this one needs none of hyper's.)
///
/// Each sleep hyper asks for is a [`Sleep`] of the engine, boxed as it is: hyper's
/// [`Sleep`](hyper::rt::Sleep) trait asks for `Send + Sync`, which shardwheel's `Sleep` is (it
/// holds its waker behind a mutex, and otherwise only atomics, its timer's handle and counted
/// references to the engine's parts), so no wrapper is needed. Dropping it cancels its timer,
/// as always. [`Timer::reset`] on a sleep of this engine moves it in place, as
/// [`Sleep::reset_at`] does (pushing a pending timer later is one compare-and-swap); any other
/// sleep is replaced by a new one. [`Timer::now`] is the engine's clock, so an engine on a
/// [`ManualClock`](crate::ManualClock) also moves hyper's deadlines.
///
/// hyper keeps the timer (a clone of the engine: one reference count) for as long as its
/// builder and connections live, and so keeps the engine running. A sleep never fires early,
/// as [`TimerEngine::sleep`] says: at the engine's `max_pending` cap it waits for a permit, and
/// after shutdown it is timed by the process's fallback thread.
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
impl Timer for TimerEngine {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn HyperSleep>> {
        Box::pin(TimerEngine::sleep(self, duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn HyperSleep>> {
        Box::pin(TimerEngine::sleep_until(self, deadline))
    }

    fn now(&self) -> Instant {
        TimerEngine::now(self)
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn HyperSleep>>, new_deadline: Instant) {
        if let Some(ours) = sleep.as_mut().downcast_mut_pin::<Sleep>() {
            if self.made(&ours) {
                // `Sleep` is `Unpin`: moving its deadline needs no pinning.
                ours.get_mut().reset_at(new_deadline);
                return;
            }
        }
        *sleep = Timer::sleep_until(self, new_deadline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_is_what_hypers_timer_needs() {
        fn hyper_sleep<S: HyperSleep + Unpin + 'static>() {}
        hyper_sleep::<Sleep>();
    }
}
