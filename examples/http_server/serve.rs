//! `--serve`: the server alone, for a load generator (`benches/failure-day.sh`). Requests for
//! `/deep` stand for calls to a backend, which hangs for a while (`--hang-at-ms`): in that
//! window they wait until their deadline cuts them off (504), as any request to a hung
//! dependency would. Every other request works as the handler always does.

use std::future::pending;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use hyper::body::Incoming;
use hyper::Request;
use tokio::net::TcpListener;
use tower::service_fn;

use super::server::{handle, serve_under, ServerCounters};
use super::Config;

/// Serves on `at` until the server fails; `/deep` requests hang from `hang.0` to `hang.1`.
pub(super) async fn alone(
    config: Config,
    at: SocketAddr,
    hang: Option<(SystemTime, SystemTime)>,
) -> Result<Vec<String>, String> {
    shardwheel::TimerEngine::builder()
        .build_global()
        .map_err(|e| format!("cannot start the timer engine: {e}"))?;
    let listener = TcpListener::bind(at)
        .await
        .map_err(|e| format!("cannot bind {at}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let counters = Arc::new(ServerCounters::default());
    let handled = counters.clone();
    let handler = service_fn(move |request: Request<Incoming>| {
        let hung = hang.is_some_and(|(from, until)| (from..until).contains(&SystemTime::now()));
        let deep = request.uri().path() == "/deep";
        let answer = handle(config, handled.clone());
        async move {
            if deep && hung {
                pending::<()>().await;
            }
            answer.await
        }
    });
    println!("listening on {addr}");
    Err(serve_under(listener, handler, config, counters).await)
}
