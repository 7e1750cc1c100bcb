//! The server side: [`DeadlineLayer`], which runs each call within its deadline, and
//! [`Server`], which serves gRPC over HTTP/2 with it and no other timer.
//!
//! A call's deadline is the earlier of its `grpc-timeout` (see `header`) and the server's own
//! timeout. The handler runs in a deadline scope of it (`shardwheel::deadline`): every
//! timeout it makes ends by it, and a client it calls through [`PropagateLayer`] sends what
//! is left of it on. When it passes first, the call is answered `DEADLINE_EXCEEDED` (code 4)
//! and the handler's future is dropped, which cancels what it was waiting on. A call whose
//! deadline has passed as it arrives (`0n`) is answered at once, its handler never run.
//!
//! The deadline bounds the handler until it answers: a unary call's whole life, a streaming
//! call's up to its response's head (the stream that follows is the handler's to bound).
//!
//! [`PropagateLayer`]: crate::PropagateLayer

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use shardwheel::engine::Scoped;
use shardwheel::{Elapsed, Timeout, TimerEngine};
use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::Status;
use tower_layer::Layer;
use tower_service::Service;

use crate::header;
use crate::BoxError;

/// Runs each gRPC call of the services it wraps within its deadline on the engine's timers:
/// see the module above. Use it with [`Server`]; tonic's own server also times every
/// `grpc-timeout` on tokio's timer and answers `CANCELLED` when that timer comes first.
///
/// A `grpc-timeout` gets grpc-go's answer: one that breaks the spec's grammar (1 to 8 ASCII
/// digits, then `H`, `M`, `S`, `m`, `u` or `n`) is answered `INTERNAL` under HTTP status 400,
/// its handler never run; of several, the last counts, unless any is malformed; `0n` is
/// answered `DEADLINE_EXCEEDED` at once; the largest, 99,999,999 hours, is kept (the engine
/// times a deadline beyond its range with a stand-in timer, renewed as it comes due).
#[derive(Clone)]
pub struct DeadlineLayer {
    engine: TimerEngine,
    own: Option<Duration>,
}

impl DeadlineLayer {
    /// A layer on `engine`'s timers, with no timeout of the server's own: a call without a
    /// `grpc-timeout` runs with no deadline and no timer.
    pub fn new(engine: TimerEngine) -> Self {
        DeadlineLayer { engine, own: None }
    }

    /// The server's own timeout: a call's deadline is the earlier of it and the caller's.
    pub fn timeout(mut self, own: Duration) -> Self {
        self.own = Some(own);
        self
    }

    /// The deadline of a call that came with `incoming`.
    fn limit(&self, incoming: Option<Duration>) -> Option<Duration> {
        match (incoming, self.own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl fmt::Debug for DeadlineLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineLayer")
            .field("own", &self.own)
            .finish_non_exhaustive()
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = DeadlineService<S>;

    fn layer(&self, inner: S) -> DeadlineService<S> {
        DeadlineService {
            inner,
            layer: self.clone(),
        }
    }
}

/// A gRPC service whose calls run within their deadlines: made by [`DeadlineLayer`].
#[derive(Clone, Debug)]
pub struct DeadlineService<S> {
    inner: S,
    layer: DeadlineLayer,
}

impl<S, B> Service<Request<B>> for DeadlineService<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let incoming = match header::incoming(request.headers()) {
            Ok(incoming) => incoming,
            Err(malformed) => {
                let status = Status::internal(malformed.to_string());
                return ResponseFuture::answered(answer(status, StatusCode::BAD_REQUEST));
            }
        };
        let Some(limit) = self.layer.limit(incoming) else {
            return ResponseFuture::free(self.inner.call(request));
        };
        if limit.is_zero() {
            return ResponseFuture::answered(deadline_exceeded());
        }
        let engine = &self.layer.engine;
        // The timer first: a call the engine cannot time is not made.
        if let Err(refused) = engine.try_sleep(Duration::ZERO) {
            let status = Status::unavailable(format!("the deadline was refused: {refused}"));
            return ResponseFuture::answered(answer(status, StatusCode::OK));
        }
        let scoped = engine.within(limit, self.inner.call(request));
        // Past the end of the engine's time: as good as no deadline.
        let Some(at) = scoped.deadline() else {
            return ResponseFuture::free(scoped.into_inner());
        };
        match engine.try_timeout_at(at, scoped) {
            Ok(timed) => ResponseFuture::timed(timed),
            Err(refused) => {
                let status = Status::unavailable(format!("the deadline was refused: {refused}"));
                ResponseFuture::answered(answer(status, StatusCode::OK))
            }
        }
    }
}

/// `status` as a gRPC answer with no message: trailers only, under HTTP status `http`.
fn answer(status: Status, http: StatusCode) -> Response<Body> {
    let mut response = status.into_http();
    *response.status_mut() = http;
    response
}

/// The answer to a call whose deadline passed.
fn deadline_exceeded() -> Response<Body> {
    answer(
        Status::deadline_exceeded("deadline exceeded"),
        StatusCode::OK,
    )
}

pin_project_lite::pin_project! {
    /// The answer of a [`DeadlineService`]: the handler's, or `DEADLINE_EXCEEDED`, or an
    /// answer given at once.
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = Proj]
    enum State<F> {
        // A call with a deadline.
        Timed { #[pin] timed: Timeout<Scoped<F>> },
        // A call with none.
        Free { #[pin] free: F },
        // An answer given without calling the handler; `None` once returned.
        Answered { answer: Option<Response<Body>> },
    }
}

impl<F> ResponseFuture<F> {
    fn timed(timed: Timeout<Scoped<F>>) -> Self {
        let state = State::Timed { timed };
        ResponseFuture { state }
    }

    fn free(free: F) -> Self {
        let state = State::Free { free };
        ResponseFuture { state }
    }

    fn answered(answer: Response<Body>) -> Self {
        let answer = Some(answer);
        let state = State::Answered { answer };
        ResponseFuture { state }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<Body>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            Proj::Timed { timed } => match ready!(timed.poll(cx)) {
                Ok(answer) => Poll::Ready(answer.map_err(Into::into)),
                Err(Elapsed { .. }) => Poll::Ready(Ok(deadline_exceeded())),
            },
            Proj::Free { free } => free.poll(cx).map_err(Into::into),
            Proj::Answered { answer } => match answer.take() {
                Some(answer) => Poll::Ready(Ok(answer)),
                None => Poll::Pending,
            },
        }
    }
}

/// Serves gRPC over HTTP/2 (cleartext) with each call run within its deadline on the engine's
/// timers, and no other timer: its connections' timers are the engine's too.
///
/// ```no_run
/// # async fn run(routes: tonic::service::Routes) -> std::io::Result<()> {
/// let engine = shardwheel::default_engine().clone();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
/// shardwheel_tonic::Server::new(engine)
///     .timeout(std::time::Duration::from_secs(5))
///     .serve(listener, routes)
///     .await
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Server {
    layer: DeadlineLayer,
}

impl Server {
    /// A server on `engine`'s timers, with no timeout of its own.
    pub fn new(engine: TimerEngine) -> Self {
        Server {
            layer: DeadlineLayer::new(engine),
        }
    }

    /// The server's own timeout on every call, as [`DeadlineLayer::timeout`].
    pub fn timeout(mut self, own: Duration) -> Self {
        self.layer = self.layer.timeout(own);
        self
    }

    /// Serves `service` (a tonic `Routes`, or any gRPC service) on `listener` until an accept
    /// fails for good.
    ///
    /// # Errors
    /// The listener's error that ended it.
    pub async fn serve<S>(self, listener: TcpListener, service: S) -> io::Result<()>
    where
        S: Service<Request<hyper::body::Incoming>, Response = Response<Body>>,
        S: Clone + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
    {
        self.serve_until(listener, service, std::future::pending())
            .await
    }

    /// As [`serve`](Self::serve), until `stop` completes: then it stops accepting and returns;
    /// the connections open then go on serving until their clients close them.
    ///
    /// # Errors
    /// As [`serve`](Self::serve).
    pub async fn serve_until<S, F>(
        self,
        listener: TcpListener,
        service: S,
        stop: F,
    ) -> io::Result<()>
    where
        S: Service<Request<hyper::body::Incoming>, Response = Response<Body>>,
        S: Clone + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        F: Future<Output = ()>,
    {
        let service = self.layer.layer(service);
        let mut stop = std::pin::pin!(stop);
        loop {
            let accepted = std::future::poll_fn(|cx| match stop.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(None),
                Poll::Pending => listener.poll_accept(cx).map(Some),
            });
            let Some(accepted) = accepted.await else {
                return Ok(());
            };
            let (stream, _) = match accepted {
                Ok(accepted) => accepted,
                // A connection that failed before it was accepted: the next one may not.
                Err(error) if is_transient(&error) => continue,
                // Out of descriptors: connections that close give some back.
                Err(error) if is_exhausted(&error) => {
                    self.layer.engine.sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Err(error) => return Err(error),
            };
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(service.clone());
            let timer = self.layer.engine.clone();
            tokio::spawn(async move {
                let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                http2.timer(timer);
                // A connection's error (a client gone) is that connection's alone.
                let _ = http2.serve_connection(TokioIo::new(stream), service).await;
            });
        }
    }
}

/// Whether an accept's error concerns one connection only.
fn is_transient(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// Whether an accept failed for want of file descriptors (the process's or the system's).
fn is_exhausted(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(24 | 23)) // EMFILE, ENFILE
}
