//! gRPC deadlines over three hops of real HTTP/2 on loopback: a client calls a frontend, which
//! calls a backend, each a tonic client or server; the deadline shrinks hop by hop, and when
//! the client gives up, the backend's work stops with it.
//!
//! ```text
//! cargo run --release -p shardwheel-tonic --example chain            # the checked demo
//! cargo run --release -p shardwheel-tonic --example chain -- serve --help
//! ```
//!
//! `demo` (the default) starts a backend and a frontend, each a `shardwheel_tonic::Server` on
//! an engine of its own. The frontend's handler calls the backend through a tonic `Channel`
//! under `PropagateLayer`; it writes no deadline of its own. The backend works by sleeping on
//! its engine. Then the client:
//!
//! 1. calls with a 500 ms deadline and 20 ms of work: each hop reports the time its deadline
//!    left it on arrival, which must shrink from hop to hop and stay under 500 ms;
//! 2. calls with a 200 ms deadline and 10 s of work: it must get `DEADLINE_EXCEEDED` (within
//!    100 ms of the deadline, a bound for a loaded machine; the failure day measures the
//!    lateness), and the backend's timer must be gone;
//! 3. calls with a 5 s deadline and 10 s of work, and gives up (drops the call) once the
//!    backend works: the backend's sleep must be cancelled, its pending timers back to none.
//!
//! `serve` runs one hop as a process of its own, for the failure day
//! (`benches/failure-day.sh`) and the grpcio interop test: a backend, or a frontend whose
//! deadlines are on shardwheel (the default) or on tokio's timer (`--deadlines tokio`: tonic's
//! own server timeout and `grpc-timeout`, and tower's timeout on its client).

mod serve;
mod service;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use shardwheel::TimerEngine;
use shardwheel_tonic::{PropagateLayer, Server};
use tokio::net::TcpListener;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use service::{backend, call, frontend, ChainServer, Handler, Work};

#[derive(Parser)]
#[command(name = "chain", about = "gRPC deadlines over three hops on loopback")]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Three hops on loopback, checked (the default).
    Demo,
    /// One hop as a process of its own.
    Serve(serve::Args),
}

fn main() -> ExitCode {
    // tonic's client transport reads tokio's timer (a connection's backoff), so it is on.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result = match Args::parse().command.unwrap_or(Command::Demo) {
        Command::Demo => runtime.block_on(demo()),
        Command::Serve(args) => runtime.block_on(serve::run(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("chain: {failure}");
            ExitCode::FAILURE
        }
    }
}

/// Serves `handler` with a `shardwheel_tonic::Server` on `engine` on a loopback port.
pub async fn start(engine: &TimerEngine, handler: Handler) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let at = listener.local_addr()?;
    let routes = tonic::service::Routes::new(ChainServer::new(handler));
    tokio::spawn(Server::new(engine.clone()).serve(listener, routes));
    Ok(at)
}

/// A channel to `at`, connected when first used.
pub fn channel(at: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{at}"))
        .expect("a loopback address")
        .connect_lazy()
}

/// An engine for one hop: one shard, timers listed by line.
fn hop_engine() -> TimerEngine {
    TimerEngine::builder()
        .shards(1)
        .track_sites(true)
        .build()
        .expect("an engine")
}

/// Waits up to a second for `engine` to hold no timer.
async fn drained(engine: &TimerEngine) -> bool {
    let until = Instant::now() + Duration::from_secs(1);
    while engine.pending() > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    engine.pending() == 0
}

async fn demo() -> Result<(), String> {
    let (front_engine, back_engine) = (hop_engine(), hop_engine());
    let back = start(&back_engine, backend(back_engine.clone()))
        .await
        .map_err(|error| format!("backend: {error}"))?;
    let to_back = tower::ServiceBuilder::new()
        .layer(PropagateLayer::new(front_engine.clone()))
        .service(channel(back));
    let front = start(&front_engine, frontend(to_back, front_engine.clone()))
        .await
        .map_err(|error| format!("frontend: {error}"))?;
    // The client is a tonic channel under the layer too: tonic's own would answer a deadline
    // that runs out `CANCELLED` when its timer came first.
    let client_engine = hop_engine();
    let client = tower::ServiceBuilder::new()
        .layer(PropagateLayer::new(client_engine))
        .service(channel(front));
    let mut failed = Vec::new();

    // 1. The deadline shrinks hop by hop.
    let work = Work {
        work_ms: 20,
        hops: 1,
    };
    let done = call(client.clone(), work, Some(Duration::from_millis(500)))
        .await
        .map_err(|status| format!("the first call failed: {status}"))?;
    println!("hop       time left on arrival (the client's deadline: 500 ms)");
    for (hop, us) in ["frontend", "backend"].iter().zip(&done.budgets_us) {
        println!("{hop:9} {:.3} ms", *us as f64 / 1e3);
    }
    let shrinks = done.budgets_us.len() == 2
        && done.budgets_us[0] <= 500_000
        && done.budgets_us[1] < done.budgets_us[0];
    if !shrinks {
        failed.push(format!(
            "the deadline did not shrink hop by hop: {:?}",
            done.budgets_us
        ));
    }

    // 2. The deadline runs out at the backend.
    let start_at = Instant::now();
    let slow = Work {
        work_ms: 10_000,
        hops: 1,
    };
    let answer = call(client.clone(), slow, Some(Duration::from_millis(200))).await;
    let after = start_at.elapsed();
    println!(
        "a 200 ms deadline on 10 s of work: {:?} after {:.1} ms",
        answer.as_ref().map_err(Status::code),
        after.as_secs_f64() * 1e3
    );
    if answer.as_ref().map_err(Status::code).err() != Some(Code::DeadlineExceeded) {
        failed.push(format!("not DEADLINE_EXCEEDED: {answer:?}"));
    }
    if after < Duration::from_millis(200) || after > Duration::from_millis(300) {
        failed.push(format!("answered {after:?} after a 200 ms deadline"));
    }
    if !drained(&back_engine).await {
        failed.push(format!(
            "the backend still holds {} timers",
            back_engine.pending()
        ));
    }

    // 3. The client gives up before the deadline, once the backend works.
    let slow = Work {
        work_ms: 10_000,
        hops: 1,
    };
    let made = tokio::spawn(call(client.clone(), slow, Some(Duration::from_secs(5))));
    let until = Instant::now() + Duration::from_secs(5);
    while back_engine.pending() == 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let held = back_engine.pending();
    made.abort();
    let gone = drained(&back_engine).await;
    println!(
        "the client gave up: the backend held {held} timer(s), then {}",
        back_engine.pending()
    );
    // The handler's sleep, and the backend's deadline for the call.
    if held == 0 || !gone {
        failed.push("the backend's work outlived its caller".to_owned());
    }
    if failed.is_empty() {
        println!("all checks passed");
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}
