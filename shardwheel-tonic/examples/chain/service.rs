//! The `chain.Chain` service the example, the tests and the failure day run: one unary call,
//! `Call(Work) -> Done`, written without generated code (its `.proto`, for other languages,
//! is `chain.proto` beside this file).
//!
//! A callee works `work_ms` milliseconds, or passes the call on to the next hop while `hops`
//! is above 0; each hop puts the time its deadline left it on arrival first in the answer's
//! `budgets_us`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::uri::PathAndQuery;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::Status;
use tonic_prost::ProstCodec;

/// The path of the call.
pub const CALL: &str = "/chain.Chain/Call";

/// A call's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Work {
    /// How long the last hop works, in milliseconds; `u64::MAX`: until its deadline.
    #[prost(uint64, tag = "1")]
    pub work_ms: u64,
    /// How many hops to pass the call on through before the one that works.
    #[prost(uint32, tag = "2")]
    pub hops: u32,
}

/// A call's answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Done {
    /// The time each hop's deadline left it on arrival, in microseconds, this hop's first
    /// (`u64::MAX`: no deadline).
    #[prost(uint64, repeated, tag = "1")]
    pub budgets_us: Vec<u64>,
}

/// A budget as `Done` carries it.
pub fn budget_us(left: Option<Duration>) -> u64 {
    left.map_or(u64::MAX, |left| {
        u64::try_from(left.as_micros()).unwrap_or(u64::MAX - 1)
    })
}

/// A handler's answer, to come.
pub type Answer = Pin<Box<dyn Future<Output = Result<Done, Status>> + Send>>;

/// What a server does with a call.
pub type Handler = Arc<dyn Fn(Work) -> Answer + Send + Sync>;

/// The `chain.Chain` service over `handler`, for a tonic router.
#[derive(Clone)]
pub struct ChainServer {
    handler: Handler,
}

impl ChainServer {
    pub fn new(handler: Handler) -> Self {
        ChainServer { handler }
    }
}

impl NamedService for ChainServer {
    const NAME: &'static str = "chain.Chain";
}

impl tower::Service<http::Request<Body>> for ChainServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if request.uri().path() != CALL {
            return Box::pin(async { Ok(Status::unimplemented("no such call").into_http()) });
        }
        let handler = self.handler.clone();
        let unary = tower::service_fn(move |request: tonic::Request<Work>| {
            let answer = handler(request.into_inner());
            async move { answer.await.map(tonic::Response::new) }
        });
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(ProstCodec::<Done, Work>::default());
            Ok(grpc.unary(unary, request).await)
        })
    }
}

/// Calls `Call(work)` through `client`, with `timeout` as the request's own deadline if given.
pub async fn call<T>(client: T, work: Work, timeout: Option<Duration>) -> Result<Done, Status>
where
    T: tonic::client::GrpcService<Body>,
    T::Error: Into<shardwheel_tonic::BoxError>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<shardwheel_tonic::BoxError> + Send,
{
    let mut grpc = tonic::client::Grpc::new(client);
    grpc.ready()
        .await
        .map_err(|error| Status::unavailable(error.into().to_string()))?;
    let mut request = tonic::Request::new(work);
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    let path = PathAndQuery::from_static(CALL);
    let codec = ProstCodec::<Work, Done>::default();
    Ok(grpc.unary(request, path, codec).await?.into_inner())
}

/// The backend's handler: works by sleeping on `engine` (not at all for 0), or until its
/// deadline for `u64::MAX`.
pub fn backend(engine: shardwheel::TimerEngine) -> Handler {
    Arc::new(move |work: Work| -> Answer {
        let budget = budget_us(shardwheel::deadline::remaining());
        let engine = engine.clone();
        Box::pin(async move {
            match work.work_ms {
                0 => {}
                u64::MAX => std::future::pending::<()>().await,
                ms => engine.sleep(Duration::from_millis(ms)).await,
            }
            Ok(Done {
                budgets_us: vec![budget],
            })
        })
    })
}

/// The frontend's handler: passes each call with hops left on through `next`, its own budget
/// first; works one with none on `engine`, as the backend does.
pub fn frontend<T>(next: T, engine: shardwheel::TimerEngine) -> Handler
where
    T: tonic::client::GrpcService<tonic::body::Body> + Clone + Send + Sync + 'static,
    T::Future: Send,
    T::Error: Into<shardwheel_tonic::BoxError>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<shardwheel_tonic::BoxError> + Send,
{
    let itself = backend(engine);
    Arc::new(move |work: Work| -> Answer {
        if work.hops == 0 {
            return itself(work);
        }
        let budget = budget_us(shardwheel::deadline::remaining());
        let next = next.clone();
        Box::pin(async move {
            let passed = Work {
                work_ms: work.work_ms,
                hops: work.hops.saturating_sub(1),
            };
            let mut done = call(next, passed, None).await?;
            done.budgets_us.insert(0, budget);
            Ok(done)
        })
    })
}
