//! The server: the handler and its simulated work, the timeout layer's errors made responses,
//! and each connection served with its idle timer.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use shardwheel::tower::BoxError;
use shardwheel::TimerEngine;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tower::{Service, ServiceBuilder, ServiceExt};

use super::support::mix;
use super::{Config, Timeouts};

pub(super) type Body = Full<Bytes>;

/// What the server counts, for the checks at the end.
#[derive(Default)]
pub(super) struct ServerCounters {
    /// Requests handled so far: the next request's number, from which its work is drawn.
    pub(super) requests: AtomicU64,
    /// Slow requests started, and those whose work ran to its end (none should).
    pub(super) slow_started: AtomicU64,
    pub(super) slow_finished: AtomicU64,
    /// Connections the server closed because their idle timer elapsed.
    pub(super) idle_closed: AtomicU64,
    /// Requests whose handler ran outside a deadline scope, or with more time left than the
    /// client gave (none should, with shardwheel's layer).
    pub(super) unscoped: AtomicU64,
    pub(super) beyond_incoming: AtomicU64,
}

/// The header the client's deadline comes in, as gRPC's.
pub(super) const GRPC_TIMEOUT: &str = "grpc-timeout";

/// The deadline a request came with, for shardwheel's layer: its `grpc-timeout` header (one
/// that does not parse is ignored here; a server could answer it 400 instead).
pub(super) fn incoming(request: &Request<Incoming>) -> Option<Duration> {
    let header = request.headers().get(GRPC_TIMEOUT)?.to_str().ok()?;
    shardwheel::deadline::parse_grpc_timeout(header).ok()
}

// Relaxed throughout: each counter is only a count (or, for `requests`, a source of distinct
// numbers), and publishes nothing else. They are read once the clients are done, after the
// work they count has been seen through the sockets.

/// The handler: simulated work, then a 200.
pub(super) async fn handle(
    config: Config,
    counters: Arc<ServerCounters>,
) -> Result<Response<Body>, Infallible> {
    let n = counters.requests.fetch_add(1, Ordering::Relaxed);
    // The request's deadline, the earlier of the layer's and the client's (shardwheel's layer).
    match shardwheel::deadline::remaining() {
        None => counters.unscoped.fetch_add(1, Ordering::Relaxed),
        // The deadline is taken on a reading of the clock that may run 2 µs ahead.
        Some(left) if left > config.client_timeout + Duration::from_micros(50) => {
            counters.beyond_incoming.fetch_add(1, Ordering::Relaxed)
        }
        Some(_) => 0,
    };
    let draw = mix(n ^ mix(config.seed));
    if config.slow_threshold > 0 && draw < config.slow_threshold {
        counters.slow_started.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(config.slow_work()).await;
        counters.slow_finished.fetch_add(1, Ordering::Relaxed);
    } else {
        let work_us = config.work.as_micros() as u64;
        let work = Duration::from_micros(mix(draw) % (work_us + 1));
        if !work.is_zero() {
            tokio::time::sleep(work).await;
        }
    }
    Ok(Response::new(Full::new(Bytes::from_static(b"done\n"))))
}

/// A bare response with `status`.
fn status(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::default());
    *response.status_mut() = status;
    response
}

/// Turns the timeout layer's result into a response: 504 for a deadline that passed (either
/// layer's `Elapsed`), 503 for a request shardwheel's layer shed because its engine would not
/// time it (`Overloaded`), 500 for any other error. (Its own error type stays tower's `BoxError`,
/// which readiness errors, of which there are none, would be converted into.)
pub(super) fn respond(
    result: Result<Response<Body>, BoxError>,
) -> Result<Response<Body>, BoxError> {
    Ok(match result {
        Ok(response) => response,
        Err(e) if e.is::<shardwheel::Elapsed>() || e.is::<tower::timeout::error::Elapsed>() => {
            status(StatusCode::GATEWAY_TIMEOUT)
        }
        Err(e) if e.is::<shardwheel::tower::Overloaded>() => {
            status(StatusCode::SERVICE_UNAVAILABLE)
        }
        Err(_) => status(StatusCode::INTERNAL_SERVER_ERROR),
    })
}

/// Whether a connection has a request under way, and a signal whenever that changes.
#[derive(Default)]
struct Activity {
    in_flight: AtomicUsize,
    changed: Notify,
}

/// Marks a request under way on its connection for as long as it lives.
struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: &Arc<Activity>) -> Busy {
        // Read by the connection's task when its idle timer elapses.
        activity.in_flight.fetch_add(1, Ordering::SeqCst);
        activity.changed.notify_one();
        Busy(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_one();
    }
}

/// The tower service stack of one connection, as hyper calls it (by shared reference, so each
/// request runs on a clone), with the connection's activity tracked.
struct Tracked<S> {
    service: S,
    activity: Arc<Activity>,
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, BoxError>> + Send>>;

impl<S> hyper::service::Service<Request<Incoming>> for Tracked<S>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn call(&self, request: Request<Incoming>) -> ResponseFuture {
        let busy = Busy::start(&self.activity);
        let response = self.service.clone().oneshot(request);
        Box::pin(async move {
            let response = response.await;
            drop(busy);
            response
        })
    }
}

/// Serves `handler` as `serve` does, under the deadline of the layer `config` names, its
/// errors made responses (see `respond`).
pub(super) async fn serve_under<H>(
    listener: TcpListener,
    handler: H,
    config: Config,
    counters: Arc<ServerCounters>,
) -> String
where
    H: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    H::Future: Send,
{
    let engine = shardwheel::default_engine();
    match config.timeouts {
        Timeouts::Shardwheel => {
            let stack = ServiceBuilder::new()
                .map_result(respond)
                .layer(
                    shardwheel::tower::TimeoutLayer::on_default_engine(config.timeout)
                        .incoming(incoming),
                )
                .service(handler);
            serve(listener, stack, engine, config, counters).await
        }
        Timeouts::Tower => {
            let stack = ServiceBuilder::new()
                .map_result(respond)
                .layer(tower::timeout::TimeoutLayer::new(config.timeout))
                .service(handler);
            serve(listener, stack, engine, config, counters).await
        }
    }
}

/// Accepts connections, serving each with `service` and closing it once idle, until accepting
/// fails (out of file descriptors, say): returns why.
pub(super) async fn serve<S>(
    listener: TcpListener,
    service: S,
    engine: &'static TimerEngine,
    config: Config,
    counters: Arc<ServerCounters>,
) -> String
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let service = service.clone();
                let counters = counters.clone();
                tokio::spawn(async move {
                    if let Err(e) =
                        serve_connection(stream, service, engine, config, &counters).await
                    {
                        eprintln!("http_server: server connection failed: {e}");
                    }
                });
            }
            Err(e) => return format!("the server cannot accept a connection: {e}"),
        }
    }
}

/// Serves one connection until it closes. Its idle timer is a shardwheel `Sleep`, reset each
/// time a request starts or ends; if it elapses with no request under way, the connection is
/// shut down gracefully (hyper closes an idle connection at once). hyper times each request's
/// head on the same engine.
async fn serve_connection<S>(
    stream: TcpStream,
    service: S,
    engine: &TimerEngine,
    config: Config,
    counters: &ServerCounters,
) -> Result<(), hyper::Error>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let _ = stream.set_nodelay(true);
    let activity = Arc::new(Activity::default());
    let tracked = Tracked {
        service,
        activity: activity.clone(),
    };
    let idle = config.idle;
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .timer(engine.clone())
        .header_read_timeout(config.header_read)
        .serve_connection(TokioIo::new(stream), tracked);
    let mut connection = std::pin::pin!(connection);
    let mut idle_timer = engine.sleep(idle);
    let mut closing = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => return result,
            () = activity.changed.notified() => idle_timer.reset(idle),
            () = &mut idle_timer, if !closing => {
                if activity.in_flight.load(Ordering::SeqCst) == 0 {
                    connection.as_mut().graceful_shutdown();
                    closing = true;
                    counters.idle_closed.fetch_add(1, Ordering::Relaxed);
                } else {
                    idle_timer.reset(idle);
                }
            }
        }
    }
}
