//! [`IncomingDeadline`]: how a service reads the deadline a request came with.

use std::time::Duration;

/// Reads the time a request's caller gives it, from now (a `grpc-timeout` header, say): any
/// `Fn(&Request) -> Option<Duration>`; [`NoIncoming`], the default, reads none.
pub trait IncomingDeadline<Request> {
    /// The time the caller gives `request`, from now; `None` if it gives none.
    fn incoming(&self, request: &Request) -> Option<Duration>;
}

/// Reads no deadline from a request: the default of a [`TimeoutLayer`](super::TimeoutLayer).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoIncoming;

impl<Request> IncomingDeadline<Request> for NoIncoming {
    #[inline]
    fn incoming(&self, _: &Request) -> Option<Duration> {
        None
    }
}

impl<Request, F> IncomingDeadline<Request> for F
where
    F: Fn(&Request) -> Option<Duration>,
{
    #[inline]
    fn incoming(&self, request: &Request) -> Option<Duration> {
        self(request)
    }
}
