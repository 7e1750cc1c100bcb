//! An RPC client whose every request runs under a shardwheel timeout.
//!
//! One process holds both ends, over loopback only (the server binds 127.0.0.1:0). The server
//! answers each request after a short service delay (default 1 ms, on the runtime's own
//! timer, so 1-2 ms), except a chosen fraction of
//! requests (default 2%), which it answers only after a multiple (default 4x) of the client's
//! timeout. The client opens N connections (default 16) and sends M requests on each (default
//! 2000), one at a time, each awaited under `TimerEngine::timeout` (default 50 ms).
//!
//! Responses carry their request's id, and a reader task per connection hands each one to the
//! request waiting for it; a response whose request has already timed out is counted and
//! dropped. Because on-time responses are fast and late ones are far past the timeout, the
//! checks are exact:
//!
//! - the requests that timed out are exactly the ones the server chose to answer late;
//! - no timeout fired early (each waited at least the timeout);
//! - every completed response carries the right answer, and every late response still arrived;
//! - the engine fired one timer per timeout, cancelled one per completed request, and holds
//!   nothing afterwards.
//!
//! It prints requests per second, the timeouts, and latency percentiles of the completed
//! requests, and exits with status 1 if a check fails (status 2 for a bad command line).
//!
//! The files: `main.rs` the command line, the client and the run; `server.rs` the server;
//! `wire.rs` the frames both ends read and write.
//!
//! ```text
//! cargo run --release --example rpc_client -- --help
//! cargo run --release --example rpc_client -- --connections 4 --requests 200
//! ```

mod server;
#[path = "../support/mod.rs"]
mod support;
mod wire;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use shardwheel::TimerEngine;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use server::{serve, ServerLog};
use support::{lock, mix, ms, percentile};
use wire::{answer, decode, encode, read_frame};

/// The command line.
#[derive(Parser)]
#[command(
    name = "rpc_client",
    about = "rpc_client: request timeouts on an RPC client, against a server on loopback",
    args_override_self = true
)]
struct Args {
    /// concurrent client connections
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..))]
    connections: u32,
    /// requests per connection, sent one at a time
    #[arg(long, value_name = "M", default_value_t = 2000,
          value_parser = clap::value_parser!(u32).range(1..))]
    requests: u32,
    /// the client's timeout per request
    #[arg(long, value_name = "MS", default_value_t = 50,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    timeout_ms: u64,
    /// fraction of requests the server answers late
    #[arg(long, value_name = "F", default_value_t = 0.02)]
    late_fraction: f64,
    /// how late: K times the timeout (2 to 100)
    // The checks are exact only if late responses are clearly late and the others clearly on
    // time; these bounds keep them apart.
    #[arg(long, value_name = "K", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(2..=100))]
    late_factor: u32,
    /// the server's delay for the other requests, in microseconds
    /// (0 answers at once; at most a quarter of the timeout);
    /// the server's timer has a 1 ms resolution, so 1000 means 1-2 ms
    #[arg(long, value_name = "US", default_value_t = 1000, verbatim_doc_comment)]
    service_us: u64,
    /// seed of the server's choice of late requests
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
}

/// The command line, checked.
#[derive(Clone)]
struct Config {
    connections: u32,
    requests: u32,
    timeout: Duration,
    late_fraction: f64,
    late_factor: u32,
    service: Duration,
    seed: u64,
}

impl Config {
    fn new(args: Args) -> Result<Config, String> {
        let config = Config {
            connections: args.connections,
            requests: args.requests,
            timeout: Duration::from_millis(args.timeout_ms),
            late_fraction: args.late_fraction,
            late_factor: args.late_factor,
            service: Duration::from_micros(args.service_us),
            seed: args.seed,
        };
        if !(0.0..=1.0).contains(&config.late_fraction) {
            return Err("--late-fraction must be between 0 and 1".into());
        }
        if config.service > config.timeout / 4 {
            return Err("--service-us must be at most a quarter of the timeout".into());
        }
        Ok(config)
    }

    fn late_delay(&self) -> Duration {
        self.timeout * self.late_factor
    }
}

// The client.

/// Requests waiting for their responses, by id.
type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<u64>>>>;

/// What one connection saw.
#[derive(Default)]
struct ClientReport {
    /// Latencies of the completed requests, from sending to receiving the response.
    latencies: Vec<Duration>,
    /// Requests that timed out: id, and how long the timeout took to fire once armed.
    timeouts: Vec<(u64, Duration)>,
    /// Completed requests whose answer was wrong.
    wrong_answers: u64,
    /// When this connection's last request ended.
    done: Option<Instant>,
    /// Responses read, in all, and those whose request had already timed out.
    responses: u64,
    unclaimed: u64,
}

async fn client(
    connection: u32,
    addr: SocketAddr,
    engine: Arc<TimerEngine>,
    config: Config,
) -> Result<ClientReport, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("cannot set TCP_NODELAY: {e}"))?;
    let (reader, mut writer) = stream.into_split();
    let waiting: Waiting = Arc::new(Mutex::new(HashMap::new()));
    let read_all = tokio::spawn(read_responses(reader, waiting.clone()));

    let mut report = ClientReport::default();
    for n in 0..config.requests {
        let id = (u64::from(connection) << 32) | u64::from(n);
        let value = mix(id);
        let (tx, rx) = oneshot::channel();
        lock(&waiting).insert(id, tx);
        let sent = Instant::now();
        // The write stays outside the timeout: cancelling a write half-way would leave a torn
        // frame on the stream. A 16-byte write to loopback does not block.
        writer
            .write_all(&encode(id, value))
            .await
            .map_err(|e| format!("connection {connection}: write failed: {e}"))?;
        let armed = Instant::now();
        match engine.timeout(config.timeout, rx).await {
            Ok(Ok(got)) => {
                report.latencies.push(sent.elapsed());
                report.wrong_answers += u64::from(got != answer(value));
            }
            Ok(Err(_)) => {
                return Err(format!(
                    "connection {connection}: the connection closed while request {n} waited"
                ))
            }
            Err(_elapsed) => {
                let waited = armed.elapsed();
                // Forget the request; its response is dropped when it comes.
                lock(&waiting).remove(&id);
                report.timeouts.push((id, waited));
            }
        }
    }
    report.done = Some(Instant::now());
    // Done sending: the server answers what is outstanding (the late responses), then closes,
    // which ends the reader.
    writer
        .shutdown()
        .await
        .map_err(|e| format!("connection {connection}: shutdown failed: {e}"))?;
    let (responses, unclaimed) = read_all
        .await
        .map_err(|e| format!("connection {connection}: reader task failed: {e}"))?
        .map_err(|e| format!("connection {connection}: read failed: {e}"))?;
    report.responses = responses;
    report.unclaimed = unclaimed;
    Ok(report)
}

/// Hands each response to the request waiting for it. Returns the responses read and those
/// no request was waiting for any more.
async fn read_responses(
    mut reader: OwnedReadHalf,
    waiting: Waiting,
) -> Result<(u64, u64), std::io::Error> {
    let (mut responses, mut unclaimed) = (0, 0);
    while let Some(frame) = read_frame(&mut reader).await? {
        let (id, value) = decode(&frame);
        responses += 1;
        let waiter = lock(&waiting).remove(&id);
        match waiter {
            Some(tx) => {
                // Fails only if the request gave up in the meantime.
                if tx.send(value).is_err() {
                    unclaimed += 1;
                }
            }
            None => unclaimed += 1,
        }
    }
    Ok((responses, unclaimed))
}

// The run and its checks.

async fn run(config: Config) -> Result<Vec<String>, String> {
    let engine = Arc::new(
        TimerEngine::builder()
            .build()
            .map_err(|e| format!("cannot start the timer engine: {e}"))?,
    );
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot bind 127.0.0.1:0: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let log = Arc::new(ServerLog {
        late: Mutex::new(Vec::new()),
    });
    let server = tokio::spawn(serve(listener, config.clone(), log.clone()));

    println!(
        "server on {addr}; {} connections x {} requests, timeout {} ms; {:.1}% of requests \
         answered after {} ms, the rest after {} us",
        config.connections,
        config.requests,
        config.timeout.as_millis(),
        config.late_fraction * 100.0,
        config.late_delay().as_millis(),
        config.service.as_micros()
    );

    let start = Instant::now();
    let clients: Vec<_> = (0..config.connections)
        .map(|c| tokio::spawn(client(c, addr, engine.clone(), config.clone())))
        .collect();
    let mut reports = Vec::with_capacity(clients.len());
    for client in clients {
        let report = client
            .await
            .map_err(|e| format!("a client task failed: {e}"))??;
        reports.push(report);
    }
    let total_time = start.elapsed();
    server.abort();
    let requests_time = reports
        .iter()
        .filter_map(|r| r.done)
        .max()
        .map_or(total_time, |done| done - start);

    // Gather.
    let total = u64::from(config.connections) * u64::from(config.requests);
    let mut latencies: Vec<Duration> = reports.iter().flat_map(|r| r.latencies.clone()).collect();
    latencies.sort_unstable();
    let mut timed_out: Vec<u64> = reports
        .iter()
        .flat_map(|r| r.timeouts.iter().map(|&(id, _)| id))
        .collect();
    timed_out.sort_unstable();
    let mut waits: Vec<Duration> = reports
        .iter()
        .flat_map(|r| r.timeouts.iter().map(|&(_, waited)| waited))
        .collect();
    waits.sort_unstable();
    let mut late = lock(&log.late).clone();
    late.sort_unstable();
    let wrong: u64 = reports.iter().map(|r| r.wrong_answers).sum();
    let responses: u64 = reports.iter().map(|r| r.responses).sum();
    let unclaimed: u64 = reports.iter().map(|r| r.unclaimed).sum();
    let completed = latencies.len() as u64;
    let timeouts = timed_out.len() as u64;

    // Check.
    let mut failures = Vec::new();
    if timed_out != late {
        let unexpected: Vec<u64> = timed_out
            .iter()
            .filter(|id| late.binary_search(id).is_err())
            .copied()
            .collect();
        let missed: Vec<u64> = late
            .iter()
            .filter(|id| timed_out.binary_search(id).is_err())
            .copied()
            .collect();
        failures.push(format!(
            "{timeouts} timeouts fired for {} late responses: {} on-time requests timed out \
             (first ids {:x?}), {} late requests did not time out (first ids {:x?})",
            late.len(),
            unexpected.len(),
            &unexpected[..unexpected.len().min(5)],
            missed.len(),
            &missed[..missed.len().min(5)]
        ));
    }
    let early = waits.iter().filter(|&&w| w < config.timeout).count();
    if early > 0 {
        failures.push(format!(
            "{early} timeouts fired early (shortest wait {:.3} ms, timeout {} ms)",
            ms(waits[0]),
            config.timeout.as_millis()
        ));
    }
    if wrong > 0 {
        failures.push(format!("{wrong} responses carried a wrong answer"));
    }
    if completed + timeouts != total {
        failures.push(format!(
            "{completed} completed + {timeouts} timed out, expected {total} requests"
        ));
    }
    if responses != total || unclaimed != timeouts {
        failures.push(format!(
            "{responses} responses arrived ({unclaimed} after their timeout), expected {total} \
             ({timeouts} after their timeout)"
        ));
    }
    let stats = engine.stats();
    if stats.fired != timeouts || stats.cancelled != completed || stats.pending != 0 {
        failures.push(format!(
            "engine: {} timers fired, {} cancelled, {} pending; expected {timeouts}, \
             {completed}, 0",
            stats.fired, stats.cancelled, stats.pending
        ));
    }
    let unfired = engine.shutdown().len();
    if unfired != 0 {
        failures.push(format!("shutdown handed back {unfired} timers"));
    }

    // Report.
    println!(
        "requests:   {total} in {:.3} s: {:.0} requests/s",
        requests_time.as_secs_f64(),
        total as f64 / requests_time.as_secs_f64().max(1e-9)
    );
    println!(
        "timeouts:   {timeouts} fired for {} late responses ({}); every late response arrived \
         later and was dropped: {}",
        late.len(),
        if timed_out == late {
            "the same requests"
        } else {
            "NOT the same requests"
        },
        if unclaimed == timeouts { "yes" } else { "NO" }
    );
    if !waits.is_empty() {
        println!(
            "            time to fire after arming: min {:.3} ms, p50 {:.3} ms, p99 {:.3} ms, \
             max {:.3} ms (timeout {} ms, none early: {})",
            ms(waits[0]),
            ms(percentile(&waits, 0.50)),
            ms(percentile(&waits, 0.99)),
            ms(waits[waits.len() - 1]),
            config.timeout.as_millis(),
            if early == 0 { "yes" } else { "NO" }
        );
    }
    println!(
        "latency:    {completed} completed: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default())
    );
    println!(
        "engine:     {} fired, {} cancelled, {} pending",
        stats.fired, stats.cancelled, stats.pending
    );
    println!(
        "wall time:  {:.3} s, including waiting for the last late responses",
        total_time.as_secs_f64()
    );
    Ok(failures)
}

fn main() -> ExitCode {
    let config = support::config(Config::new);
    support::verdict("rpc_client", support::on_tokio(run(config)))
}
