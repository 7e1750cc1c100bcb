//! Interop with a gRPC this project did not write: Python's grpcio (gRPC's C core) as the
//! client and as the backend, around a frontend on `shardwheel_tonic`. A grpcio client's
//! `timeout=` reaches the frontend as its deadline, and goes on to a grpcio backend, whose
//! `context.time_remaining()` shows it shrunk by the frontend's time; when the chain runs out,
//! the grpcio client gets `DEADLINE_EXCEEDED`.
//!
//! Needs `python3` with `grpcio` (`pip install grpcio`): ignored by default, run by `.ci/run`
//! (`cargo test -p shardwheel-tonic --test grpcio -- --ignored`).

// Shared with the example; each user takes a part.
#[allow(dead_code)]
#[path = "../examples/chain/service.rs"]
mod service;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use shardwheel::TimerEngine;
use shardwheel_tonic::{PropagateLayer, Server};
use tokio::net::TcpListener;

use service::{frontend, ChainServer};

/// The folder of the Python side.
fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/grpcio")
}

/// A grpcio backend, killed on drop, and its port.
struct Backend(Child, u16);

impl Backend {
    fn start() -> Backend {
        let mut child = Command::new("python3")
            .arg(scripts().join("backend.py"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| {
                panic!("the backend did not start (is grpcio installed?): {line:?}")
            });
        Backend(child, port)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a grpcio client's call got.
#[derive(Debug)]
struct Got {
    code: String,
    budgets_us: Vec<u64>,
    elapsed_ms: f64,
}

/// One call by the grpcio client to `port`, with `timeout` and `work_ms` through one hop.
fn grpcio_call(port: u16, timeout: Duration, work_ms: u64) -> Got {
    let output = Command::new("python3")
        .arg(scripts().join("client.py"))
        .arg(format!("127.0.0.1:{port}"))
        .arg(timeout.as_secs_f64().to_string())
        .arg(work_ms.to_string())
        .arg("1")
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let line: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|_| panic!("the client said {text:?}, {:?}", output.stderr));
    Got {
        code: line["code"].as_str().unwrap().to_owned(),
        budgets_us: (line["budgets_us"].as_array().unwrap().iter())
            .map(|budget| budget.as_u64().unwrap())
            .collect(),
        elapsed_ms: line["elapsed_ms"].as_f64().unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python3 with grpcio; .ci/run runs it"]
async fn a_grpcio_clients_deadline_passes_through_a_frontend_to_a_grpcio_backend() {
    let backend = Backend::start();
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", backend.1))
            .unwrap()
            .connect_lazy();
    let to_back = tower::ServiceBuilder::new()
        .layer(PropagateLayer::new(engine.clone()))
        .service(channel);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handler = frontend(to_back, engine.clone());
    let routes = tonic::service::Routes::new(ChainServer::new(handler));
    tokio::spawn(Server::new(engine.clone()).serve(listener, routes));

    // The deadline shrinks hop by hop: 500 ms at the client; at the frontend what the client's
    // `grpc-timeout` said (grpcio rounds it up to whole milliseconds: "501m" for the 499.9 ms
    // left as it sends); less at the backend by the frontend's time.
    let got =
        tokio::task::spawn_blocking(move || grpcio_call(port, Duration::from_millis(500), 20))
            .await
            .unwrap();
    eprintln!("a 500 ms call: {got:?}");
    assert_eq!(got.code, "OK", "{got:?}");
    let [at_frontend, at_backend] = got.budgets_us[..] else {
        panic!("two hops' budgets: {got:?}");
    };
    assert!(at_frontend <= 501_000 && at_frontend > 100_000, "{got:?}");
    assert!(at_backend < at_frontend, "{got:?}");

    // The chain runs out at the backend: the grpcio client gets DEADLINE_EXCEEDED.
    let got =
        tokio::task::spawn_blocking(move || grpcio_call(port, Duration::from_millis(200), 5_000))
            .await
            .unwrap();
    eprintln!("a 200 ms call on 5 s of work: {got:?}");
    assert_eq!(got.code, "DEADLINE_EXCEEDED", "{got:?}");
    assert!(
        got.elapsed_ms >= 200.0 && got.elapsed_ms < 2_000.0,
        "{got:?}"
    );
    drop(backend);
}
