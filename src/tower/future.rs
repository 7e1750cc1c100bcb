//! [`ResponseFuture`]: the inner response under a [`Timeout`], or a refusal.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use super::error::Overloaded;
use super::BoxError;
use crate::engine::Scoped;
use crate::engine::TimerEngine;
use crate::timer::Timeout;

pin_project_lite::pin_project! {
    /// The response of a [`TimeoutService`](super::TimeoutService): the inner response, the inner
    /// error boxed, [`Elapsed`](crate::Elapsed) boxed if the deadline passed first, or
    /// [`Overloaded`] boxed if the engine refused the deadline (the inner service was then
    /// not called).
    ///
    /// The inner future is polled before the deadline is looked at, so a response that is
    /// ready when the deadline passes still wins. Dropping the future (which `.await` and
    /// executors do as it completes) cancels its deadline's timer, if the timer has not fired.
    ///
    /// The future holds its engine: a service may be dropped while its responses are under
    /// way (`ServiceExt::oneshot` does so), and an engine dropped then would shut down and
    /// end every deadline at once.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ResponseFuture<F> {
        // Declared before the engine, so dropped first: the timer is cancelled while the
        // engine still runs.
        #[pin]
        state: Course<F>,
        engine: TimerEngine,
    }
}

pin_project_lite::pin_project! {
    /// A request under way, or one refused before it started.
    #[project = StateProj]
    enum Course<F> {
        Running { #[pin] deadline: Timeout<Scoped<F>> },
        // `None` once the error has been returned.
        Refused { refusal: Option<Overloaded> },
    }
}

impl<F> ResponseFuture<F> {
    pub(super) fn running(deadline: Timeout<Scoped<F>>, engine: TimerEngine) -> Self {
        ResponseFuture {
            state: Course::Running { deadline },
            engine,
        }
    }

    pub(super) fn refused(refusal: Overloaded, engine: TimerEngine) -> Self {
        ResponseFuture {
            state: Course::Refused {
                refusal: Some(refusal),
            },
            engine,
        }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let deadline = match self.project().state.project() {
            StateProj::Running { deadline } => deadline,
            StateProj::Refused { refusal } => {
                let refusal = refusal
                    .take()
                    .expect("ResponseFuture polled after completion");
                return Poll::Ready(Err(Box::new(refusal)));
            }
        };
        Poll::Ready(match ready!(deadline.poll(cx)) {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(error.into()),
            Err(elapsed) => Err(Box::new(elapsed)),
        })
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let refused = matches!(self.state, Course::Refused { .. });
        f.debug_struct("ResponseFuture")
            .field("refused", &refused)
            .finish_non_exhaustive()
    }
}
