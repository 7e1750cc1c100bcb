//! The tower middleware (`shardwheel::tower`): responses that beat their deadline cancel its
//! timer, deadlines that pass first yield `shardwheel::Elapsed`, errors of the inner service
//! pass through boxed, and the layer works inside a `ServiceBuilder`. Time is a `ManualClock`
//! throughout, and futures are polled by hand, so each step happens exactly when the test says.

#![cfg(feature = "tower")]
#![cfg(not(loom))]

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::oneshot;
use futures::task::noop_waker_ref;
use shardwheel::tower::{BoxError, Timeout, TimeoutLayer};
use shardwheel::{Elapsed, ManualClock, TimerEngine};
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn manual() -> (ManualClock, Arc<TimerEngine>) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(2)
        .build()
        .unwrap();
    (clock, Arc::new(engine))
}

/// Polls `future` once, with a waker that does nothing.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(noop_waker_ref()))
}

/// Readies `service` and calls it, both of which must succeed at once.
fn call_now<S: Service<R>, R>(service: &mut S, request: R) -> S::Future
where
    S::Error: fmt::Debug,
{
    match service.poll_ready(&mut Context::from_waker(noop_waker_ref())) {
        Poll::Ready(Ok(())) => service.call(request),
        Poll::Ready(Err(e)) => panic!("poll_ready failed: {e:?}"),
        Poll::Pending => panic!("poll_ready was pending"),
    }
}

/// An inner service whose response is whatever the test sends down the request's channel.
fn answered_later(
) -> impl Service<oneshot::Receiver<&'static str>, Response = &'static str, Error = oneshot::Canceled>
{
    service_fn(|answer: oneshot::Receiver<&'static str>| answer)
}

#[test]
fn a_response_before_the_deadline_is_returned_and_cancels_its_timer() {
    let (clock, engine) = manual();
    let mut service = Timeout::new(answered_later(), engine.clone(), SEC);
    let (answer, answered) = oneshot::channel();
    let mut response = Box::pin(call_now(&mut service, answered));
    assert_eq!(engine.stats().scheduled, 1, "call arms the deadline");

    assert!(poll_once(&mut response).is_pending());
    clock.advance(SEC - MS);
    assert!(poll_once(&mut response).is_pending(), "not timed out early");
    answer.send("pong").unwrap();
    match poll_once(&mut response) {
        Poll::Ready(Ok(reply)) => assert_eq!(reply, "pong"),
        other => panic!("expected the response, got {other:?}"),
    }

    drop(response);
    let stats = engine.stats();
    assert_eq!((stats.cancelled, stats.fired, stats.pending), (1, 0, 0));
    // Its deadline passes with nothing left to fire.
    clock.advance(SEC);
    assert_eq!(engine.stats().fired, 0);
}

#[test]
fn a_deadline_that_passes_first_yields_elapsed() {
    let (clock, engine) = manual();
    let mut service = Timeout::new(answered_later(), engine.clone(), SEC);
    let (answer, answered) = oneshot::channel::<&'static str>();
    let mut response = Box::pin(call_now(&mut service, answered));

    assert!(poll_once(&mut response).is_pending());
    clock.advance(SEC - MS);
    assert!(poll_once(&mut response).is_pending(), "not timed out early");
    clock.advance(MS);
    let error = match poll_once(&mut response) {
        Poll::Ready(Err(error)) => error,
        other => panic!("expected a timeout, got {other:?}"),
    };
    assert!(error.downcast_ref::<Elapsed>().is_some());
    assert_eq!(error.to_string(), "deadline has elapsed");
    let stats = engine.stats();
    assert_eq!((stats.fired, stats.cancelled), (1, 0));

    // Giving up drops the request's future: the inner service's answer has no taker.
    drop(response);
    assert!(answer.send("too late").is_err());
}

/// An error of the inner service, to find again through the box.
#[derive(Debug, PartialEq)]
struct Overloaded;

impl fmt::Display for Overloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overloaded")
    }
}

impl std::error::Error for Overloaded {}

/// A service that is never ready: its `poll_ready` fails, or stays pending.
struct NeverReady {
    fail: bool,
}

impl Service<()> for NeverReady {
    type Response = ();
    type Error = Overloaded;
    type Future = std::future::Ready<Result<(), Overloaded>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Overloaded>> {
        if self.fail {
            Poll::Ready(Err(Overloaded))
        } else {
            Poll::Pending
        }
    }

    fn call(&mut self, (): ()) -> Self::Future {
        panic!("called without being ready")
    }
}

#[test]
fn the_inner_services_readiness_passes_through() {
    let (_clock, engine) = manual();
    let mut cx = Context::from_waker(noop_waker_ref());

    let mut failing = Timeout::new(NeverReady { fail: true }, engine.clone(), SEC);
    match failing.poll_ready(&mut cx) {
        Poll::Ready(Err(error)) => {
            assert_eq!(error.downcast_ref::<Overloaded>(), Some(&Overloaded))
        }
        other => panic!("expected the inner error, got {other:?}"),
    }
    let mut waiting = Timeout::new(NeverReady { fail: false }, engine.clone(), SEC);
    assert!(waiting.poll_ready(&mut cx).is_pending());
    // Readiness has no deadline: nothing was scheduled.
    assert_eq!(engine.stats().scheduled, 0);
}

#[test]
fn an_error_of_the_response_passes_through_and_cancels_the_timer() {
    let (_clock, engine) = manual();
    let inner = service_fn(|()| async { Err::<(), _>(Overloaded) });
    let mut service = Timeout::new(inner, engine.clone(), SEC);
    let mut response = Box::pin(call_now(&mut service, ()));
    let error: BoxError = match poll_once(&mut response) {
        Poll::Ready(Err(error)) => error,
        other => panic!("expected the inner error, got {other:?}"),
    };
    assert_eq!(error.downcast_ref::<Overloaded>(), Some(&Overloaded));
    assert!(error.downcast_ref::<Elapsed>().is_none());
    drop(response);
    assert_eq!(engine.stats().cancelled, 1);
}

#[test]
fn works_through_service_builder_and_clones() {
    let (clock, engine) = manual();
    let service = ServiceBuilder::new()
        .layer(TimeoutLayer::new(engine.clone(), 100 * MS))
        .service_fn(|answer: Option<oneshot::Receiver<u32>>| async move {
            match answer {
                Some(answer) => answer.await.map_err(BoxError::from),
                None => Ok(0),
            }
        });

    // A quick request, through `oneshot`, on a clone.
    let reply = futures::executor::block_on(service.clone().oneshot(None));
    assert_eq!(reply.unwrap(), 0);
    assert_eq!(engine.stats().cancelled, 1);

    // Two slow ones on two clones, both started before the clock moves: one answered in
    // time, one not.
    let (on_time, on_time_answered) = oneshot::channel();
    let (_late, late_answered) = oneshot::channel::<u32>();
    let mut first = Box::pin(call_now(&mut service.clone(), Some(on_time_answered)));
    let mut second = Box::pin(call_now(&mut service.clone(), Some(late_answered)));
    assert!(poll_once(&mut first).is_pending());
    assert!(poll_once(&mut second).is_pending());
    clock.advance(50 * MS);
    on_time.send(7).unwrap();
    clock.advance(50 * MS);
    assert_eq!(
        futures::executor::block_on(first).unwrap(),
        7,
        "a ready response wins even once its deadline has passed"
    );
    let error = futures::executor::block_on(second).unwrap_err();
    assert!(error.is::<Elapsed>());
    let stats = engine.stats();
    assert_eq!((stats.fired, stats.cancelled, stats.pending), (2, 1, 0));
}

#[test]
fn on_a_shut_down_engine_a_request_that_is_not_ready_elapses_at_once() {
    let (_clock, engine) = manual();
    assert!(engine.shutdown().is_empty());
    let ready = Timeout::new(
        service_fn(|()| async { Ok::<_, Infallible>("ready") }),
        engine.clone(),
        SEC,
    );
    assert_eq!(
        futures::executor::block_on(ready.oneshot(())).unwrap(),
        "ready"
    );
    let (_answer, answered) = oneshot::channel();
    let waiting = Timeout::new(answered_later(), engine.clone(), SEC);
    let error = futures::executor::block_on(waiting.oneshot(answered)).unwrap_err();
    assert!(error.is::<Elapsed>());
    assert_eq!(engine.stats().rejected, 2);
}

#[test]
fn a_pending_response_keeps_the_engine_running_after_its_service_is_gone() {
    let (clock, engine) = manual();
    let alive = Arc::downgrade(&engine);
    let mut service = Timeout::new(answered_later(), engine, SEC);
    let (_answer, answered) = oneshot::channel();
    let mut response = Box::pin(call_now(&mut service, answered));
    drop(service);
    assert!(alive.upgrade().is_some());
    // Were the engine shut down, the deadline would have passed at once.
    assert!(poll_once(&mut response).is_pending());
    clock.advance(SEC - MS);
    assert!(poll_once(&mut response).is_pending(), "not timed out early");
    clock.advance(MS);
    match poll_once(&mut response) {
        Poll::Ready(Err(error)) => assert!(error.is::<Elapsed>()),
        other => panic!("expected a timeout, got {other:?}"),
    }
    drop(response);
    assert!(
        alive.upgrade().is_none(),
        "the last holder let the engine go"
    );
}
