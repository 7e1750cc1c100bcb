//! `chain serve`: one hop as a process of its own. It prints `listening on <address>` and
//! serves until it is killed; a backend may hang for a while (`--hang-at-ms`), answering no
//! call, as a hung database would.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::ValueEnum;
use shardwheel_tonic::{PropagateLayer, Server};
use tokio::net::TcpListener;

use crate::channel;
use crate::service::{backend, frontend, Answer, ChainServer, Handler, Work};

/// Which hop.
#[derive(Clone, Copy, ValueEnum)]
enum Role {
    Backend,
    Frontend,
}

/// Whose timer a frontend's deadlines are on.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Deadlines {
    /// shardwheel_tonic's server and client layers.
    Shardwheel,
    /// tonic's own server timeout and `grpc-timeout`, and tower's timeout on the client.
    Tokio,
}

#[derive(clap::Args)]
pub struct Args {
    /// Which hop this process is.
    #[arg(long, value_enum)]
    role: Role,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The backend a frontend calls.
    #[arg(long, required_if_eq("role", "frontend"))]
    backend: Option<SocketAddr>,
    /// Whose timer a frontend's deadlines are on.
    #[arg(long, value_enum, default_value = "shardwheel")]
    deadlines: Deadlines,
    /// The server's own timeout on every call, in milliseconds (tokio: also its client's).
    #[arg(long, default_value_t = 1000)]
    own_ms: u64,
    /// A backend hangs (answers no call) from this time, in milliseconds since the Unix
    /// epoch...
    #[arg(long)]
    hang_at_ms: Option<u64>,
    /// ... for this many seconds.
    #[arg(long, default_value_t = 0)]
    hang_for_s: u64,
}

pub async fn run(args: Args) -> Result<(), String> {
    let engine = shardwheel::default_engine().clone();
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", args.listen))?;
    let at = listener.local_addr().map_err(|error| error.to_string())?;
    let own = Duration::from_millis(args.own_ms);
    let handler = match args.role {
        Role::Backend => hanging(backend(engine.clone()), &args),
        Role::Frontend => {
            let next = channel(args.backend.ok_or("a frontend needs --backend")?);
            match args.deadlines {
                Deadlines::Shardwheel => frontend(
                    tower::ServiceBuilder::new()
                        .layer(PropagateLayer::new(engine.clone()))
                        .service(next),
                    engine.clone(),
                ),
                Deadlines::Tokio => frontend(
                    tower::ServiceBuilder::new()
                        .layer(tower::timeout::TimeoutLayer::new(own))
                        .service(next),
                    engine.clone(),
                ),
            }
        }
    };
    let routes = tonic::service::Routes::new(ChainServer::new(handler));
    let tokio_server = matches!(args.role, Role::Frontend) && args.deadlines == Deadlines::Tokio;
    let serving = tokio::spawn(async move {
        if tokio_server {
            let incoming =
                tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
            let router = tonic::transport::Server::builder()
                .timeout(own)
                .add_routes(routes);
            router
                .serve_with_incoming(incoming)
                .await
                .map_err(|error| error.to_string())
        } else {
            let server = Server::new(engine).timeout(own);
            let served = server.serve(listener, routes).await;
            served.map_err(|error| error.to_string())
        }
    });
    println!("listening on {at}");
    serving.await.map_err(|error| error.to_string())?
}

/// `handler`, hanging in the window `args` gives.
fn hanging(handler: Handler, args: &Args) -> Handler {
    let Some(from) = args.hang_at_ms else {
        return handler;
    };
    let from = UNIX_EPOCH + Duration::from_millis(from);
    let window = from..from + Duration::from_secs(args.hang_for_s);
    Arc::new(move |work: Work| -> Answer {
        if window.contains(&SystemTime::now()) {
            return Box::pin(std::future::pending());
        }
        handler(work)
    })
}
