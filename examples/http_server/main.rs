//! An HTTP/1 server (hyper 1 on tokio) whose every request runs under a deadline, and whose idle
//! keep-alive connections are closed by shardwheel timers; a client in the same process loads
//! it over loopback. Every shardwheel timer here is on the process's default engine
//! (`shardwheel::default_engine()`).
//!
//! ```text
//! cargo run --release --features tower,hyper --example http_server -- --help
//! # The CI size (a few seconds), with shardwheel's timeouts, then with tower's to compare:
//! cargo run --release --features tower,hyper --example http_server -- --secs 2 --connections 8
//! cargo run --release --features tower,hyper --example http_server -- --secs 2 --connections 8 --timeouts tower
//! ```
//!
//! The server binds 127.0.0.1:0. Its handler simulates work: a sleep of a random length up to
//! `--work-ms`, except for a fraction of requests (`--slow-percent`) that sleep four times the
//! deadline. Every request runs under a deadline of `--timeout-ms`: shardwheel's
//! `tower::TimeoutLayer` (the default), or tower's own `tower::timeout::TimeoutLayer`, on
//! tokio's timer (`--timeouts tower`); a request whose deadline passes is answered 504. The
//! two differ only in the timeout layer: the handler's work sleeps on tokio's timer either way.
//!
//! The client sends its own deadline with each request, `--client-timeout-ms` as a
//! `grpc-timeout` header. shardwheel's layer reads it (`TimeoutLayer::incoming`) and runs the
//! request within the earlier of the two, so a slow request is cut off at the client's
//! deadline when that is the earlier; the handler reads the time it has left from
//! `shardwheel::deadline::remaining()`, as it would to pass it on. tower's layer knows only its
//! own timeout.
//!
//! Each connection keeps one shardwheel `Sleep` as its idle timer, reset whenever a request
//! starts or ends; when it elapses with no request under way, the server calls hyper's
//! `graceful_shutdown` on the connection, which closes it (in both modes). hyper's own timer is
//! the default engine too (the `hyper` feature's `impl hyper::rt::Timer for TimerEngine`): a
//! connection whose request head takes longer than `--header-read-ms` is closed by it.
//!
//! The client opens `--connections` keep-alive connections and sends requests on each, one at a
//! time, for `--secs` seconds, recording each one's latency. Then every connection stays idle,
//! and the server must close each one; and one more connection is opened, sends one request and
//! stays idle, and the server must close it too. Last comes one summary line: requests per
//! second, p50 and p99 latency of the requests answered in time, the timeouts (504s) and how
//! long after its start each was answered (the deadline's precision, for either layer's timer),
//! and the idle connections closed; then "all checks passed", or each check that failed.
//!
//! With `--serve ADDR` the server runs alone, for a load generator of its own (see `serve.rs`
//! and `benches/failure-day.sh`).
//!
//! The files: `main.rs` the command line, the client and the run; `server.rs` the server;
//! `serve.rs` the server alone.
//!
//! Checks (exit status 1 if one fails; 2 for a bad command line): every response is a 200 or a
//! 504; no slow handler ran to its end (its deadline cut it off); there are at least as many
//! 504s as slow requests (more only if an ordinary request was held up past its deadline on a
//! busy machine: the summary shows both); every connection was closed by the server once idle;
//! with shardwheel's layer, every handler ran within a deadline no later than the client's.

mod serve;
mod server;
#[path = "../support/mod.rs"]
mod support;

use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::{header, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tower::service_fn;

use server::{handle, serve_under, ServerCounters, GRPC_TIMEOUT};
use support::{ms, percentile, threshold};

/// The command line.
#[derive(Parser)]
#[command(
    name = "http_server",
    about = "http_server: request deadlines and idle-connection timeouts in an HTTP server, \
             loaded by a client on loopback",
    args_override_self = true
)]
struct Args {
    /// whose timeout layer puts the deadline on each request
    #[arg(long, value_enum, default_value_t = Timeouts::Shardwheel)]
    timeouts: Timeouts,
    /// client keep-alive connections, each sending one request at a time
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    connections: u32,
    /// how long the client sends requests
    #[arg(long, value_name = "S", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    secs: u64,
    /// each request's deadline
    #[arg(long, value_name = "MS", default_value_t = 50,
          value_parser = clap::value_parser!(u64).range(4..=60_000))]
    timeout_ms: u64,
    /// the deadline the client sends with each request (grpc-timeout), which shardwheel's
    /// layer applies where it is the earlier
    #[arg(long, value_name = "MS", default_value_t = 40,
          value_parser = clap::value_parser!(u64).range(4..=60_000))]
    client_timeout_ms: u64,
    /// the longest simulated work of an ordinary request (a random sleep from 0 up to this;
    /// at most a quarter of the deadline)
    #[arg(long, value_name = "MS", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(0..=15_000))]
    work_ms: u64,
    /// percentage of requests whose work takes four times the deadline
    #[arg(long, value_name = "P", default_value_t = 1.0)]
    slow_percent: f64,
    /// how long a connection may stay idle before the server closes it
    #[arg(long, value_name = "MS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    idle_ms: u64,
    /// how long hyper waits for a request's head, also while a connection is idle (hyper's
    /// header-read timeout, on the engine; longer than --idle-ms)
    #[arg(long, value_name = "MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    header_read_ms: u64,
    /// seed of the handler's random work
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// serve on this address, with no client of its own, for a load generator
    /// (`benches/failure-day.sh`): `/deep` requests hang while --hang-at-ms says
    #[arg(long, value_name = "ADDR")]
    serve: Option<SocketAddr>,
    /// with --serve: `/deep` requests hang from this time (milliseconds since the Unix epoch)
    #[arg(long, value_name = "MS", requires = "serve")]
    hang_at_ms: Option<u64>,
    /// ... for this many seconds
    #[arg(long, value_name = "S", default_value_t = 0)]
    hang_for_s: u64,
}

/// The timeout layer under test.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Timeouts {
    /// `shardwheel::tower::TimeoutLayer`, on a shardwheel engine
    Shardwheel,
    /// `tower::timeout::TimeoutLayer`, on tokio's timer
    Tower,
}

impl Timeouts {
    fn name(self) -> &'static str {
        match self {
            Timeouts::Shardwheel => "shardwheel",
            Timeouts::Tower => "tower",
        }
    }
}

/// The command line, checked.
#[derive(Clone, Copy)]
struct Config {
    timeouts: Timeouts,
    connections: u32,
    load: Duration,
    timeout: Duration,
    client_timeout: Duration,
    work: Duration,
    /// Requests whose hash falls below this are slow.
    slow_threshold: u64,
    slow_percent: f64,
    idle: Duration,
    header_read: Duration,
    seed: u64,
    /// Serve here alone (see `serve`), `/deep` requests hanging from, until.
    serve: Option<(SocketAddr, Option<(SystemTime, SystemTime)>)>,
}

impl Config {
    fn new(args: Args) -> Result<Config, String> {
        if !(0.0..=100.0).contains(&args.slow_percent) {
            return Err("--slow-percent must be between 0 and 100".into());
        }
        if args.work_ms * 4 > args.timeout_ms.min(args.client_timeout_ms) {
            return Err(
                "--work-ms must be at most a quarter of --timeout-ms and --client-timeout-ms"
                    .into(),
            );
        }
        // hyper's header-read timer also runs while a keep-alive connection waits for its next
        // request: a shorter one would close idle connections before the idle timer does.
        if args.header_read_ms <= args.idle_ms {
            return Err("--header-read-ms must be longer than --idle-ms".into());
        }
        let slow_threshold = threshold(args.slow_percent / 100.0);
        Ok(Config {
            timeouts: args.timeouts,
            connections: args.connections,
            load: Duration::from_secs(args.secs),
            timeout: Duration::from_millis(args.timeout_ms),
            client_timeout: Duration::from_millis(args.client_timeout_ms),
            work: Duration::from_millis(args.work_ms),
            slow_threshold,
            slow_percent: args.slow_percent,
            idle: Duration::from_millis(args.idle_ms),
            header_read: Duration::from_millis(args.header_read_ms),
            seed: args.seed,
            serve: args.serve.map(|at| {
                let from = args
                    .hang_at_ms
                    .map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
                (
                    at,
                    from.map(|from| (from, from + Duration::from_secs(args.hang_for_s))),
                )
            }),
        })
    }

    /// How long a slow request's work takes: well past its deadline.
    fn slow_work(&self) -> Duration {
        self.timeout.max(self.client_timeout) * 4
    }
}

// The client.

/// What one client connection saw.
#[derive(Default)]
struct ClientReport {
    /// Latencies of the requests answered 200, and of those answered 504.
    ok: Vec<Duration>,
    timeouts: Vec<Duration>,
    /// When its last request ended.
    done: Option<Instant>,
    /// How long the connection stayed open once idle, if the server closed it.
    closed_after_idle: Option<Duration>,
}

/// Sends requests on one keep-alive connection until `until` (at least one), then stays idle
/// until the server closes the connection, or gives up on that after `wait_for_close`.
async fn client(
    addr: SocketAddr,
    until: Instant,
    wait_for_close: Duration,
    deadline: Duration,
) -> Result<ClientReport, String> {
    let grpc_timeout = shardwheel::deadline::format_grpc_timeout(deadline);
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("cannot set TCP_NODELAY: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    let mut driver = tokio::spawn(connection);

    let mut report = ClientReport::default();
    loop {
        sender
            .ready()
            .await
            .map_err(|e| format!("the connection closed under load: {e}"))?;
        let request = Request::get("/work")
            .header(header::HOST, addr.to_string())
            .header(GRPC_TIMEOUT, &grpc_timeout)
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("cannot build a request: {e}"))?;
        let start = Instant::now();
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading a response failed: {e}"))?;
        let latency = start.elapsed();
        match status {
            StatusCode::OK => report.ok.push(latency),
            StatusCode::GATEWAY_TIMEOUT => report.timeouts.push(latency),
            other => return Err(format!("unexpected response status {other}")),
        }
        if Instant::now() >= until {
            break;
        }
    }
    let idle_since = Instant::now();
    report.done = Some(idle_since);

    // Idle now, with the connection held open (`sender` lives on): the server's idle timer
    // must close it, which ends the connection's driver.
    match tokio::time::timeout(wait_for_close, &mut driver).await {
        Ok(Ok(Ok(()))) => report.closed_after_idle = Some(idle_since.elapsed()),
        Ok(Ok(Err(e))) => return Err(format!("the idle connection failed: {e}")),
        Ok(Err(e)) => return Err(format!("the connection task failed: {e}")),
        Err(_) => driver.abort(),
    }
    drop(sender);
    Ok(report)
}

// The run and its checks.

/// Runs `work`, unless the server stops first (it stops only if it fails): then its clients
/// would wait for ever, so the run ends with the server's error.
async fn unless_server_fails<T>(
    server: &mut JoinHandle<String>,
    work: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::select! {
        result = work => result,
        stopped = server => Err(stopped.unwrap_or_else(|e| format!("the server task failed: {e}"))),
    }
}

async fn run(config: Config) -> Result<Vec<String>, String> {
    // The default engine, started here (its first use) so that a failure is reported, not a
    // panic: the tower layer, hyper's timer and the idle timers all run on it.
    shardwheel::TimerEngine::builder()
        .build_global()
        .map_err(|e| format!("cannot start the timer engine: {e}"))?;
    let engine = shardwheel::default_engine();
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot bind 127.0.0.1:0: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let counters = Arc::new(ServerCounters::default());

    // The server's stack: the handler, under a deadline, its errors made responses.
    let handler = {
        let counters = counters.clone();
        service_fn(move |_: Request<Incoming>| handle(config, counters.clone()))
    };
    let mut server = tokio::spawn(serve_under(listener, handler, config, counters.clone()));

    println!(
        "server on {addr}, {} timeouts of {} ms (clients send {} ms); {} connections for {} \
         s; work up to {} ms, {}% of requests {} ms; idle connections closed after {} ms",
        config.timeouts.name(),
        config.timeout.as_millis(),
        config.client_timeout.as_millis(),
        config.connections,
        config.load.as_secs(),
        config.work.as_millis(),
        config.slow_percent,
        config.slow_work().as_millis(),
        config.idle.as_millis()
    );

    // A connection left idle must be closed within its idle time, plus the time to notice.
    let wait_for_close = config.idle * 2 + Duration::from_secs(2);
    let start = Instant::now();
    let until = start + config.load;
    let clients: Vec<_> = (0..config.connections)
        .map(|_| tokio::spawn(client(addr, until, wait_for_close, config.client_timeout)))
        .collect();
    let gather = async {
        let mut reports = Vec::with_capacity(clients.len() + 1);
        for client in clients {
            reports.push(
                client
                    .await
                    .map_err(|e| format!("a client task failed: {e}"))??,
            );
        }
        Ok(reports)
    };
    let mut reports = unless_server_fails(&mut server, gather).await?;
    let load_time = reports
        .iter()
        .filter_map(|r| r.done)
        .max()
        .map_or(start.elapsed(), |done| done - start);
    let mut latencies: Vec<Duration> = reports.iter().flat_map(|r| r.ok.clone()).collect();
    latencies.sort_unstable();
    let mut timed_out: Vec<Duration> = reports.iter().flat_map(|r| r.timeouts.clone()).collect();
    timed_out.sort_unstable();
    let timeouts = timed_out.len() as u64;
    let requests = latencies.len() as u64 + timeouts;

    // The idle check on its own: one connection, one request, then idle.
    let one = client(addr, Instant::now(), wait_for_close, config.client_timeout);
    let single = unless_server_fails(&mut server, one).await?;
    reports.push(single);
    server.abort();

    let slow_started = counters.slow_started.load(Ordering::Relaxed);
    let slow_finished = counters.slow_finished.load(Ordering::Relaxed);
    let idle_closed = counters.idle_closed.load(Ordering::Relaxed);
    let unscoped = counters.unscoped.load(Ordering::Relaxed);
    let beyond_incoming = counters.beyond_incoming.load(Ordering::Relaxed);
    let connections = reports.len() as u64;
    let seen_closed: Vec<Duration> = reports.iter().filter_map(|r| r.closed_after_idle).collect();

    // Check.
    let mut failures = Vec::new();
    if slow_finished > 0 {
        failures.push(format!(
            "{slow_finished} slow handlers ran to their end: their deadline did not stop them"
        ));
    }
    // Every request's 504s, the idle check's included: its one request may be a slow one.
    let all_timeouts: u64 = reports.iter().map(|r| r.timeouts.len() as u64).sum();
    if all_timeouts < slow_started {
        failures.push(format!(
            "{all_timeouts} responses were 504s, but {slow_started} requests were slow"
        ));
    }
    if config.timeouts == Timeouts::Shardwheel && unscoped + beyond_incoming > 0 {
        failures.push(format!(
            "{unscoped} handlers ran outside a deadline scope and {beyond_incoming} with more \
             time than the client gave"
        ));
    }
    if idle_closed != connections || seen_closed.len() as u64 != connections {
        failures.push(format!(
            "of {connections} idle connections, the server closed {idle_closed} and the \
             client saw {} closed",
            seen_closed.len()
        ));
    }

    let stats = engine.stats();
    println!(
        "engine: {} timers scheduled, {} fired, {} cancelled, {} pending; idle connections \
         closed after {:.0}-{:.0} ms idle",
        stats.scheduled,
        stats.fired,
        stats.cancelled,
        stats.pending,
        seen_closed.iter().min().map_or(0.0, |d| ms(*d)),
        seen_closed.iter().max().map_or(0.0, |d| ms(*d)),
    );
    println!(
        "timeouts={}: {requests} requests in {:.2} s, {:.0} requests/s; 200s p50 {:.3} ms, \
         p99 {:.3} ms; timeouts {timeouts} (504s after p50 {:.1} ms, max {:.1} ms; \
         {slow_started} slow requests); idle connections closed {idle_closed} of {connections}",
        config.timeouts.name(),
        load_time.as_secs_f64(),
        requests as f64 / load_time.as_secs_f64().max(1e-9),
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(percentile(&timed_out, 0.50)),
        ms(timed_out.last().copied().unwrap_or_default()),
    );
    Ok(failures)
}

fn main() -> ExitCode {
    let config = support::config(Config::new);
    let run = async move {
        match config.serve {
            Some((at, hang)) => serve::alone(config, at, hang).await,
            None => run(config).await,
        }
    };
    support::verdict("http_server", support::on_tokio(run))
}
