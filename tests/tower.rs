//! The tower middleware (`shardwheel::tower`): a deadline on each request, on a manual clock.

#![cfg(feature = "tower")]
#![cfg(not(loom))]

use std::convert::Infallible;
use std::error::Error as _;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::oneshot;
use futures::task::noop_waker_ref;
use shardwheel::engine::Builder;
use shardwheel::tower::{BoxError, Overloaded, TimeoutLayer, TimeoutService};
use shardwheel::{Elapsed, ManualClock, ScheduleErrorKind, TimerEngine};
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn manual() -> (ManualClock, TimerEngine) {
    on_manual_clock(TimerEngine::builder().shards(2))
}

/// An engine from `builder`, on a manual clock of its own.
fn on_manual_clock(builder: Builder) -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = builder.manual_clock(&clock).build().unwrap();
    (clock, engine)
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
    let mut service = TimeoutService::new(answered_later(), engine.clone(), SEC);
    let (answer, answered) = oneshot::channel();
    let mut response = Box::pin(call_now(&mut service, answered));
    assert_eq!(
        engine.stats().scheduled,
        0,
        "no timer before the response waits"
    );
    assert!(poll_once(&mut response).is_pending());
    assert_eq!(
        engine.stats().scheduled,
        1,
        "a waiting response arms the deadline"
    );
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
    let mut service = TimeoutService::new(answered_later(), engine.clone(), SEC);
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
struct Unavailable;

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unavailable")
    }
}

impl std::error::Error for Unavailable {}

/// A service that is never ready: its `poll_ready` fails, or stays pending.
struct NeverReady {
    fail: bool,
}

impl Service<()> for NeverReady {
    type Response = ();
    type Error = Unavailable;
    type Future = std::future::Ready<Result<(), Unavailable>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Unavailable>> {
        if self.fail {
            Poll::Ready(Err(Unavailable))
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

    let mut failing = TimeoutService::new(NeverReady { fail: true }, engine.clone(), SEC);
    match failing.poll_ready(&mut cx) {
        Poll::Ready(Err(error)) => {
            assert_eq!(error.downcast_ref::<Unavailable>(), Some(&Unavailable))
        }
        other => panic!("expected the inner error, got {other:?}"),
    }
    let mut waiting = TimeoutService::new(NeverReady { fail: false }, engine.clone(), SEC);
    assert!(waiting.poll_ready(&mut cx).is_pending());
    // Readiness has no deadline: nothing was scheduled.
    assert_eq!(engine.stats().scheduled, 0);
}

#[test]
fn an_error_of_the_response_passes_through_and_cancels_the_timer() {
    let (_clock, engine) = manual();
    let inner = service_fn(|()| async { Err::<(), _>(Unavailable) });
    let mut service = TimeoutService::new(inner, engine.clone(), SEC);
    let mut response = Box::pin(call_now(&mut service, ()));
    let error: BoxError = match poll_once(&mut response) {
        Poll::Ready(Err(error)) => error,
        other => panic!("expected the inner error, got {other:?}"),
    };
    assert_eq!(error.downcast_ref::<Unavailable>(), Some(&Unavailable));
    assert!(error.downcast_ref::<Elapsed>().is_none());
    drop(response);
    assert_eq!(
        engine.stats().scheduled,
        0,
        "an answer at once needs no timer"
    );
}

#[test]
fn the_layer_works_through_service_builder_and_its_clones() {
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
    assert_eq!(engine.stats().scheduled, 0);

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
    assert_eq!((stats.fired, stats.cancelled, stats.pending), (2, 0, 0));
}

/// An inner service answered through the request's channel, that counts its calls.
fn counted(
    calls: &Arc<AtomicUsize>,
) -> impl Service<oneshot::Receiver<&'static str>, Response = &'static str, Error = oneshot::Canceled>
{
    let calls = calls.clone();
    service_fn(move |answer: oneshot::Receiver<&'static str>| {
        calls.fetch_add(1, Ordering::SeqCst);
        answer
    })
}

/// The error of a response that must fail at once.
fn failed_now<F: Future<Output = Result<T, BoxError>> + Unpin, T: fmt::Debug>(
    response: &mut F,
) -> BoxError {
    match poll_once(response) {
        Poll::Ready(Err(error)) => error,
        other => panic!("expected an error at once, got {other:?}"),
    }
}

/// Why the engine refused a response that must fail at once as `Overloaded`.
fn refused_now<F: Future<Output = Result<T, BoxError>> + Unpin, T: fmt::Debug>(
    response: &mut F,
) -> ScheduleErrorKind {
    let error = failed_now(response);
    assert!(!error.is::<Elapsed>(), "a refusal is not a timeout");
    let overloaded = error
        .downcast_ref::<Overloaded>()
        .expect("the refusal is Overloaded");
    let cause = overloaded.source().and_then(|e| e.downcast_ref());
    assert_eq!(cause, Some(&overloaded.kind()), "the source is the kind");
    overloaded.kind()
}

#[test]
fn at_the_cap_a_request_is_refused_as_overloaded_without_calling_the_service() {
    let (clock, engine) = on_manual_clock(TimerEngine::builder().max_pending(1));
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service = TimeoutService::new(counted(&calls), engine.clone(), SEC);

    // The first request takes the engine's only permit, and its service is slow.
    let (_slow, slow_answered) = oneshot::channel();
    let mut slow = Box::pin(call_now(&mut service, slow_answered));
    assert!(poll_once(&mut slow).is_pending());

    // The second cannot be timed: refused, and never started.
    let (_unused, unused_answered) = oneshot::channel();
    let mut refused = Box::pin(call_now(&mut service, unused_answered));
    assert_eq!(refused_now(&mut refused), ScheduleErrorKind::Full);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the refused request did no work"
    );

    // The slow request still times out as before.
    clock.advance(SEC);
    assert!(failed_now(&mut slow).is::<Elapsed>());
}

#[test]
fn after_shutdown_a_request_is_refused_as_overloaded_without_calling_the_service() {
    let (_clock, engine) = manual();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service = TimeoutService::new(counted(&calls), engine.clone(), SEC);
    assert!(engine.shutdown().is_empty());

    let (answer, answered) = oneshot::channel();
    answer.send("ready").unwrap();
    let mut response = Box::pin(call_now(&mut service, answered));
    assert_eq!(refused_now(&mut response), ScheduleErrorKind::Shutdown);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the request did no work");
    assert_eq!(engine.stats().rejected, 1);
}

#[test]
fn on_the_default_engine_a_quick_request_is_answered() {
    let service = TimeoutService::on_default_engine(
        service_fn(|()| async { Ok::<_, Infallible>("pong") }),
        SEC,
    );
    let reply = futures::executor::block_on(service.oneshot(()));
    assert_eq!(reply.unwrap(), "pong");
    let layer = TimeoutLayer::on_default_engine(SEC);
    assert!(!layer.engine().is_shutdown());
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_pending_response_keeps_the_engine_running_after_its_service_is_gone() {
    let (clock, engine) = manual();
    // A timer that never fires: the engine's shutdown drops its callback, setting the flag.
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(stopped.clone());
    engine.schedule(SEC * 3600, move || drop(flag)).unwrap();
    let mut service = TimeoutService::new(answered_later(), engine, SEC);
    let (_answer, answered) = oneshot::channel();
    let mut response = Box::pin(call_now(&mut service, answered));
    drop(service);
    assert!(!stopped.load(Ordering::SeqCst));
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
        stopped.load(Ordering::SeqCst),
        "the last holder shut the engine down"
    );
}

#[test]
fn a_service_may_report_its_own_elapsed_as_tower_code_does() {
    // tower's `Elapsed::new()`, for a service that times out by itself.
    let gives_up = service_fn(|()| async { Err::<(), BoxError>(Box::new(Elapsed::new())) });
    let service = ServiceBuilder::new()
        .layer(TimeoutLayer::on_default_engine(SEC))
        .service(gives_up);
    let error = futures::executor::block_on(service.oneshot(())).unwrap_err();
    assert!(error.is::<Elapsed>());
    assert_eq!(Elapsed::default(), Elapsed::new());
}

/// A request that says how long its caller waits, if it does, and waits for its answer.
type Timed = (Option<Duration>, oneshot::Receiver<&'static str>);

/// A service that gives each request `own`, reads its incoming deadline, and records the
/// current deadline its inner service sees when called and when its response is polled.
fn timing_service(
    engine: &TimerEngine,
    own: Duration,
    seen: Arc<std::sync::Mutex<Vec<Option<std::time::Instant>>>>,
) -> impl Service<Timed, Response = &'static str, Error = BoxError> {
    let inner = service_fn(move |(_, mut answer): Timed| {
        seen.lock().unwrap().push(shardwheel::deadline::current());
        let seen = seen.clone();
        std::future::poll_fn(move |cx| {
            seen.lock().unwrap().push(shardwheel::deadline::current());
            Pin::new(&mut answer).poll(cx)
        })
    });
    ServiceBuilder::new()
        .layer(TimeoutLayer::new(engine.clone(), own).incoming(|request: &Timed| request.0))
        .service(inner)
}

/// Calls a [`timing_service`] giving `own`, with `incoming`, inside a scope ending at
/// `enclosing` from now if given. Returns when it ended, whether `Elapsed` was inherited, and
/// the deadlines its inner service saw, from the start.
fn deadline_of(
    own: Duration,
    incoming: Option<Duration>,
    enclosing: Option<Duration>,
) -> (Duration, bool, Vec<Option<Duration>>) {
    let (clock, engine) = manual();
    let start = clock.now();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut service = timing_service(&engine, own, seen.clone());
    let (_answer, answered) = oneshot::channel();
    let call = async move {
        let response = call_now(&mut service, (incoming, answered));
        response.await
    };
    let mut call: Pin<Box<dyn Future<Output = _>>> = match enclosing {
        Some(enclosing) => Box::pin(shardwheel::deadline::within_at(start + enclosing, call)),
        None => Box::pin(call),
    };
    loop {
        if let Poll::Ready(result) = poll_once(&mut call) {
            let error = result.unwrap_err();
            let elapsed = *error.downcast_ref::<Elapsed>().expect("a deadline passed");
            let seen = seen.lock().unwrap();
            let seen = seen.iter().map(|at| at.map(|at| at - start)).collect();
            return (clock.now() - start, elapsed.is_inherited(), seen);
        }
        clock.advance(MS);
    }
}

#[test]
fn the_layer_applies_the_earlier_of_its_own_and_the_incoming_deadline() {
    let (ended, inherited, seen) = deadline_of(SEC * 10, Some(SEC * 2), None);
    assert_eq!(
        (ended, inherited),
        (SEC * 2, true),
        "the incoming deadline came first"
    );
    // Current in the call and in each of the response's polls, one a millisecond.
    assert_eq!(seen.len(), 2 + 2000);
    assert!(seen.iter().all(|at| *at == Some(SEC * 2)), "{seen:?}");

    let (ended, inherited, seen) = deadline_of(SEC * 2, Some(SEC * 10), None);
    assert_eq!((ended, inherited), (SEC * 2, false), "its own came first");
    assert!(seen.iter().all(|at| *at == Some(SEC * 2)), "{seen:?}");

    let (ended, inherited, seen) = deadline_of(SEC * 2, None, None);
    assert_eq!((ended, inherited), (SEC * 2, false), "no incoming deadline");
    assert!(seen.iter().all(|at| *at == Some(SEC * 2)), "{seen:?}");
}

#[test]
fn the_layer_inside_a_scope_applies_the_scopes_deadline_where_earlier() {
    let (ended, inherited, seen) = deadline_of(SEC * 10, Some(SEC * 5), Some(SEC * 3));
    assert_eq!(
        (ended, inherited),
        (SEC * 3, true),
        "the enclosing deadline came first"
    );
    assert!(seen.iter().all(|at| *at == Some(SEC * 3)), "{seen:?}");
    let (ended, inherited, seen) = deadline_of(SEC * 2, Some(SEC * 5), Some(SEC * 3));
    assert_eq!((ended, inherited), (SEC * 2, false), "its own came first");
    assert!(seen.iter().all(|at| *at == Some(SEC * 2)), "{seen:?}");
}

#[test]
fn boot_and_wall_timeouts_inside_a_request_end_by_its_incoming_deadline() {
    let (clock, engine) = manual();
    let hour = SEC * 3600;
    let wall = clock.wall() + hour;
    let inner_engine = engine.clone();
    let inner = service_fn(move |_: Option<Duration>| {
        let engine = inner_engine.clone();
        async move {
            let on_wall = engine.timeout_at_wall(wall, std::future::pending::<()>());
            let on_boot = engine
                .timeout_boot(hour, std::future::pending::<()>())
                .unwrap();
            let (on_wall, on_boot) = futures::join!(on_wall, on_boot);
            assert!(on_wall.unwrap_err().is_inherited() && on_boot.unwrap_err().is_inherited());
            Ok::<_, BoxError>("answered at the incoming deadline")
        }
    });
    let mut service = ServiceBuilder::new()
        .layer(
            TimeoutLayer::new(engine.clone(), SEC * 10)
                .incoming(|incoming: &Option<Duration>| *incoming),
        )
        .service(inner);
    let mut response = Box::pin(call_now(&mut service, Some(SEC)));
    assert!(poll_once(&mut response).is_pending());
    clock.advance(SEC - MS);
    assert!(poll_once(&mut response).is_pending(), "never early");
    clock.advance(MS);
    // The inner timeouts end with the layer's deadline, and the response is polled first.
    match poll_once(&mut response) {
        Poll::Ready(Ok(answer)) => assert_eq!(answer, "answered at the incoming deadline"),
        Poll::Ready(Err(error)) => panic!("the inner timeouts did not end: {error}"),
        Poll::Pending => panic!("still pending at the incoming deadline"),
    }
}
