//! [`ResponseFuture`]: the inner response under the engine's [`Timeout`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use super::BoxError;
use crate::engine::TimerEngine;
use crate::timer::Timeout;

pin_project_lite::pin_project! {
    /// The response of a [`Timeout`](super::Timeout) service: the inner response, the inner
    /// error boxed, or [`Elapsed`](crate::Elapsed) boxed if the deadline passed first.
    ///
    /// The inner future is polled before the deadline is looked at, so a response that is
    /// ready when the deadline passes still wins. Dropping the future (which `.await` and
    /// executors do as it completes) cancels its deadline's timer, if the timer has not fired.
    ///
    /// The future holds its engine: a service may be dropped while its responses are under
    /// way (`ServiceExt::oneshot` does so), and an engine dropped then would shut down and
    /// end every deadline at once.
    pub struct ResponseFuture<F> {
        // Declared before the engine, so dropped first: the timer is cancelled while the
        // engine still runs.
        #[pin]
        inner: Timeout<F>,
        engine: Arc<TimerEngine>,
    }
}

impl<F> ResponseFuture<F> {
    pub(super) fn new(inner: Timeout<F>, engine: Arc<TimerEngine>) -> Self {
        ResponseFuture { inner, engine }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match ready!(self.project().inner.poll(cx)) {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(error.into()),
            Err(elapsed) => Err(Box::new(elapsed)),
        })
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
