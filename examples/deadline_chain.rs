//! A deadline passed down a call chain: a client, a frontend and a backend in one process,
//! each hop's budget the time its caller had left.
//!
//! The two servers are tokio tasks reached over channels (no network), so nothing but the
//! request travels between them: the deadline goes as a `grpc-timeout` header, as in gRPC.
//! Each server is a tower stack with shardwheel's `TimeoutLayer` (the frontend's own timeout
//! 1 s, the backend's 10 s) that reads the header with `TimeoutLayer::incoming` and runs the
//! request within the earlier deadline.
//!
//! - The client runs each call `deadline::within` its budget (`--budget-ms`), and sends
//!   `deadline::remaining()` as the header. Its call is under a client library's own 30 s
//!   timeout, which the budget shortens.
//! - The frontend works `--work-ms` (a sleep, which no deadline shortens), then calls the
//!   backend with what is left of its deadline.
//! - The backend answers with the time it had left, after a query under its own 5 s timeout;
//!   every `--slow-every`-th query takes four budgets, so the budget cuts it off.
//!
//! Checks (exit status 1 if one fails; 2 for a bad command line): each answered request's
//! budget shrank hop by hop, by at least the frontend's work; each slow request failed with
//! an `Elapsed` whose deadline was inherited from the client, no earlier than the budget and
//! long before any hop's own timeout.
//!
//! ```text
//! cargo run --release --features tower --example deadline_chain -- --help
//! cargo run --release --features tower --example deadline_chain -- --requests 12
//! ```

mod support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use hyper::header::HeaderValue;
use hyper::Request;
use shardwheel::deadline::{self, format_grpc_timeout, parse_grpc_timeout};
use shardwheel::tower::{BoxError, TimeoutLayer};
use shardwheel::Elapsed;
use tokio::sync::{mpsc, oneshot};
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

use support::ms;

/// The header the deadline travels in.
const GRPC_TIMEOUT: &str = "grpc-timeout";
/// Each hop's own timeouts, far longer than any budget here.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
const FRONTEND_TIMEOUT: Duration = Duration::from_secs(1);
const BACKEND_TIMEOUT: Duration = Duration::from_secs(10);
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// What the clock readings and the header's rounding may add to a budget.
const SLACK: Duration = Duration::from_micros(50);

/// The command line.
#[derive(Parser)]
#[command(
    name = "deadline_chain",
    about = "deadline_chain: a client's deadline passed down two servers as a grpc-timeout \
             header, shrinking hop by hop",
    args_override_self = true
)]
struct Args {
    /// requests the client sends, one at a time
    #[arg(long, value_name = "N", default_value_t = 12,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    requests: u64,
    /// each request's budget, from the client
    #[arg(long, value_name = "MS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(10..=1_000))]
    budget_ms: u64,
    /// the frontend's work before it calls the backend (at most a quarter of the budget)
    #[arg(long, value_name = "MS", default_value_t = 10)]
    work_ms: u64,
    /// every this many requests, the backend's query is slow (0: none)
    #[arg(long, value_name = "N", default_value_t = 4)]
    slow_every: u64,
}

/// The command line, checked.
#[derive(Clone, Copy)]
struct Config {
    requests: u64,
    budget: Duration,
    work: Duration,
    slow_every: u64,
}

impl Config {
    fn new(args: Args) -> Result<Config, String> {
        if args.work_ms * 4 > args.budget_ms {
            return Err("--work-ms must be at most a quarter of --budget-ms".into());
        }
        Ok(Config {
            requests: args.requests,
            budget: Duration::from_millis(args.budget_ms),
            work: Duration::from_millis(args.work_ms),
            slow_every: args.slow_every,
        })
    }
}

/// A request's body: whether the backend's query is slow.
#[derive(Clone, Copy)]
struct Call {
    slow: bool,
}

/// The time left at each hop of one request.
#[derive(Debug, Clone, Copy)]
struct Trace {
    /// Sent by the client, when the frontend began, sent on by it, when the backend began.
    client: Duration,
    frontend: Duration,
    forwarded: Duration,
    backend: Duration,
}

/// A server's address: a channel to its task.
type Hop<T> = mpsc::Sender<(Request<Call>, oneshot::Sender<Result<T, BoxError>>)>;

/// Serves `service` on a task of its own, each request on a task of its own.
fn serve<S, T>(service: S) -> Hop<T>
where
    S: Service<Request<Call>, Response = T, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send,
    T: Send + 'static,
{
    let (hop, mut requests) = mpsc::channel::<(Request<Call>, oneshot::Sender<_>)>(64);
    tokio::spawn(async move {
        while let Some((request, reply)) = requests.recv().await {
            let service = service.clone();
            tokio::spawn(async move { reply.send(service.oneshot(request).await) });
        }
    });
    hop
}

/// Sends `body` to `hop` with the current deadline's time left as its `grpc-timeout`.
async fn call<T>(hop: &Hop<T>, body: Call) -> Result<T, BoxError> {
    let left = deadline::remaining().ok_or("a call made outside every deadline scope")?;
    let mut request = Request::new(body);
    let header = HeaderValue::from_str(&format_grpc_timeout(left))?;
    request.headers_mut().insert(GRPC_TIMEOUT, header);
    let (reply, replied) = oneshot::channel();
    hop.send((request, reply))
        .await
        .map_err(|_| "the server stopped")?;
    replied
        .await
        .map_err(|_| "the server dropped the request")?
}

/// The deadline a request came with (a header that does not parse is ignored here; a server
/// could answer it 400 instead).
fn incoming(request: &Request<Call>) -> Option<Duration> {
    let header = request.headers().get(GRPC_TIMEOUT)?.to_str().ok()?;
    parse_grpc_timeout(header).ok()
}

/// The backend: a query under its own timeout, which the request's deadline shortens.
async fn backend(request: Request<Call>, budget: Duration) -> Result<Duration, BoxError> {
    let left = deadline::remaining().ok_or("the backend runs outside a deadline scope")?;
    let query = if request.body().slow {
        budget * 4
    } else {
        Duration::from_millis(1)
    };
    shardwheel::timeout(QUERY_TIMEOUT, shardwheel::sleep(query)).await?;
    Ok(left)
}

/// The frontend: its own work, then the backend with what is left.
async fn frontend(
    request: Request<Call>,
    work: Duration,
    backend: Hop<Duration>,
) -> Result<Trace, BoxError> {
    let client = incoming(&request).ok_or("no grpc-timeout header")?;
    let frontend = deadline::remaining().ok_or("the frontend runs outside a deadline scope")?;
    shardwheel::sleep(work).await;
    let forwarded = deadline::remaining().unwrap_or_default();
    let backend = call(&backend, *request.body()).await?;
    Ok(Trace {
        client,
        frontend,
        forwarded,
        backend,
    })
}

/// Whether `error` is an `Elapsed` whose deadline was inherited.
fn inherited(error: &BoxError) -> bool {
    error
        .downcast_ref::<Elapsed>()
        .is_some_and(Elapsed::is_inherited)
}

async fn run(config: Config) -> Result<Vec<String>, String> {
    let engine = shardwheel::default_engine();
    let backend = serve(
        ServiceBuilder::new()
            .layer(TimeoutLayer::new(engine.clone(), BACKEND_TIMEOUT).incoming(incoming))
            .service(service_fn(move |request| backend(request, config.budget))),
    );
    let frontend = serve(
        ServiceBuilder::new()
            .layer(TimeoutLayer::new(engine.clone(), FRONTEND_TIMEOUT).incoming(incoming))
            .service(service_fn(move |request| {
                frontend(request, config.work, backend.clone())
            })),
    );
    println!(
        "{} requests, a budget of {} ms each; the frontend works {} ms, then calls the backend",
        config.requests,
        config.budget.as_millis(),
        config.work.as_millis()
    );

    let mut failures = Vec::new();
    let (mut answered, mut cut_off) = (Vec::new(), Vec::new());
    for n in 1..=config.requests {
        let slow = config.slow_every > 0 && n % config.slow_every == 0;
        let start = Instant::now();
        // The client's call, within its budget, under its library's own (longer) timeout.
        let reply = deadline::within(config.budget, async {
            shardwheel::timeout(CLIENT_TIMEOUT, call(&frontend, Call { slow })).await
        })
        .await;
        let took = start.elapsed();
        match (slow, reply) {
            (false, Ok(Ok(trace))) => {
                if answered.is_empty() {
                    println!(
                        "request {n}: the client sent {:.3} ms; the frontend began with {:.3} \
                         ms and sent {:.3} ms on; the backend began with {:.3} ms",
                        ms(trace.client),
                        ms(trace.frontend),
                        ms(trace.forwarded),
                        ms(trace.backend)
                    );
                }
                let shrinks = trace.client <= config.budget + SLACK
                    && trace.frontend <= trace.client + SLACK
                    && trace.forwarded + config.work <= trace.frontend + SLACK
                    && trace.backend <= trace.forwarded + SLACK;
                if !shrinks {
                    failures.push(format!("request {n}'s budget did not shrink: {trace:?}"));
                }
                answered.push(trace.backend);
            }
            (true, Ok(Err(error))) if inherited(&error) => cut_off.push(took),
            (true, Err(elapsed)) if elapsed.is_inherited() => cut_off.push(took),
            (slow, Ok(Err(error))) => failures.push(format!("request {n} (slow {slow}): {error}")),
            (slow, Err(error)) => failures.push(format!("request {n} (slow {slow}): {error}")),
            (true, Ok(Ok(trace))) => failures.push(format!("slow request {n} ran: {trace:?}")),
        }
        if slow && (took < config.budget || took > config.budget + Duration::from_millis(500)) {
            failures.push(format!(
                "slow request {n} ended after {:.3} ms, not at its budget",
                ms(took)
            ));
        }
    }
    answered.sort_unstable();
    cut_off.sort_unstable();
    println!(
        "{} answered (the backend began with {:.1}-{:.1} ms of {} ms); {} slow ones cut off at \
         the client's deadline after {:.1}-{:.1} ms (no hop's own timeout: 1 s, 5 s, 10 s, 30 s)",
        answered.len(),
        answered.first().map_or(0.0, |d| ms(*d)),
        answered.last().map_or(0.0, |d| ms(*d)),
        config.budget.as_millis(),
        cut_off.len(),
        cut_off.first().map_or(0.0, |d| ms(*d)),
        cut_off.last().map_or(0.0, |d| ms(*d)),
    );
    Ok(failures)
}

fn main() -> ExitCode {
    let config = support::config(Config::new);
    support::verdict("deadline_chain", support::on_tokio(run(config)))
}
