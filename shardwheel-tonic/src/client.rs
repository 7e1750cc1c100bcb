//! The client side: [`PropagateLayer`], around a tonic `Channel` (or any gRPC client
//! service), which sends the caller's deadline on.
//!
//! On each call it takes the earlier of the current deadline scope's time left
//! (`shardwheel::deadline::remaining()`, which a handler under [`DeadlineLayer`] has) and the
//! request's own `grpc-timeout` (tonic's `Request::set_timeout`), writes it as the call's
//! `grpc-timeout`, and waits for the answer no longer: past it the call fails with
//! `DEADLINE_EXCEEDED`, and its stream is reset, which cancels the callee's work. A call whose
//! deadline has passed already fails so at once, before it opens a stream. A call with
//! neither goes as it came.
//!
//! A tonic `Channel` also times every call's `grpc-timeout` itself, on tokio's timer, and fails
//! it `CANCELLED` ("Timeout expired") when that timer comes first: the layer answers such a
//! failure `DEADLINE_EXCEEDED` too, as the deadline it set has passed.
//!
//! [`DeadlineLayer`]: crate::DeadlineLayer

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use http::{Request, Response};
use shardwheel::{Timeout, TimerEngine};
use tonic::Status;
use tower_layer::Layer;
use tower_service::Service;

use crate::header;
use crate::BoxError;

/// Sends the caller's deadline on with each call of the client it wraps: see the module above.
#[derive(Clone)]
pub struct PropagateLayer {
    engine: TimerEngine,
}

impl PropagateLayer {
    /// A layer whose calls wait on `engine`'s timers.
    pub fn new(engine: TimerEngine) -> Self {
        PropagateLayer { engine }
    }
}

impl fmt::Debug for PropagateLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PropagateLayer").finish_non_exhaustive()
    }
}

impl<S> Layer<S> for PropagateLayer {
    type Service = Propagate<S>;

    fn layer(&self, inner: S) -> Propagate<S> {
        Propagate {
            inner,
            engine: self.engine.clone(),
        }
    }
}

/// A gRPC client that sends the caller's deadline on: made by [`PropagateLayer`].
#[derive(Clone, Debug)]
pub struct Propagate<S> {
    inner: S,
    engine: TimerEngine,
}

impl<S, B, R> Service<Request<B>> for Propagate<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<R>;
    type Error = BoxError;
    type Future = CallFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // A request's own value that cannot be read is the caller's to send as it is.
        let own = header::incoming(request.headers()).unwrap_or(None);
        let left = match (shardwheel::deadline::remaining(), own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(left) = left else {
            let free = self.inner.call(request);
            return State::Free { free }.into();
        };
        if left.is_zero() {
            return State::Passed { passed: true }.into();
        }
        header::set(request.headers_mut(), left);
        let timed = self.engine.timeout(left, self.inner.call(request));
        State::Timed { timed }.into()
    }
}

/// The error of a call whose deadline passed.
fn deadline_exceeded(before: bool) -> BoxError {
    let message = match before {
        true => "deadline exceeded before the call",
        false => "deadline exceeded",
    };
    Box::new(Status::deadline_exceeded(message))
}

/// Whether `error` is, or comes from, a tonic channel's own timeout of the call.
fn timed_out(mut error: &(dyn std::error::Error + 'static)) -> bool {
    loop {
        if error.is::<tonic::TimeoutExpired>() {
            return true;
        }
        match error.source() {
            Some(source) => error = source,
            None => return false,
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of a [`Propagate`] call.
    pub struct CallFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = Proj]
    enum State<F> {
        // A call with a deadline.
        Timed { #[pin] timed: Timeout<F> },
        // A call with none.
        Free { #[pin] free: F },
        // A call whose deadline had passed; `false` once its error is returned.
        Passed { passed: bool },
    }
}

impl<F> From<State<F>> for CallFuture<F> {
    fn from(state: State<F>) -> Self {
        CallFuture { state }
    }
}

impl<F> fmt::Debug for CallFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallFuture").finish_non_exhaustive()
    }
}

impl<F, R, E> Future for CallFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<R>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            Proj::Timed { timed } => match ready!(timed.poll(cx)) {
                Ok(Ok(answer)) => Poll::Ready(Ok(answer)),
                Ok(Err(error)) => {
                    let error = error.into();
                    match timed_out(&*error) {
                        true => Poll::Ready(Err(deadline_exceeded(false))),
                        false => Poll::Ready(Err(error)),
                    }
                }
                Err(_) => Poll::Ready(Err(deadline_exceeded(false))),
            },
            Proj::Free { free } => free.poll(cx).map_err(Into::into),
            Proj::Passed { passed } => match std::mem::replace(passed, false) {
                true => Poll::Ready(Err(deadline_exceeded(true))),
                false => Poll::Pending,
            },
        }
    }
}
