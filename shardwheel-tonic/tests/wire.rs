//! The server and client layers over real HTTP/2 on loopback: the status each `grpc-timeout`
//! gets, a client that goes away mid-call, a flood of calls with 1 µs deadlines, and a call
//! whose deadline passed before it was made. Raw requests go through hyper's own HTTP/2
//! client, so that any header can be sent.

// Shared with the example; each user takes a part.
#[allow(dead_code)]
#[path = "../examples/chain/service.rs"]
mod service;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use shardwheel::TimerEngine;
use shardwheel_tonic::{PropagateLayer, Server};
use tokio::net::{TcpListener, TcpStream};
use tonic::Code;

use service::{call, ChainServer, Done, Handler, Work};

/// An engine of one shard for a test's server.
fn engine() -> TimerEngine {
    TimerEngine::builder().shards(1).build().unwrap()
}

/// A server on `engine` whose handler (the example's backend: it works by sleeping) counts
/// its calls in `calls`.
async fn server(engine: &TimerEngine, calls: &Arc<AtomicUsize>) -> SocketAddr {
    let (backend, calls) = (service::backend(engine.clone()), calls.clone());
    let handler: Handler = Arc::new(move |work: Work| {
        calls.fetch_add(1, Ordering::SeqCst);
        backend(work)
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    let routes = tonic::service::Routes::new(ChainServer::new(handler));
    tokio::spawn(Server::new(engine.clone()).serve(listener, routes));
    at
}

/// What a raw call got: its HTTP status, its `grpc-status` and its message's budget.
#[derive(Debug)]
struct Got {
    http: u16,
    code: Option<i32>,
    budget_us: Option<u64>,
}

/// Sends `Call(work)` to `at` with these `grpc-timeout` values, through hyper.
async fn raw_call(at: SocketAddr, work: Work, timeouts: &[&str]) -> Got {
    let stream = TcpStream::connect(at).await.unwrap();
    let (mut send, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut framed = BytesMut::new();
    framed.put_u8(0);
    framed.put_u32(work.encoded_len() as u32);
    work.encode(&mut framed).unwrap();
    let mut request = http::Request::post(format!("http://{at}{}", service::CALL))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for timeout in timeouts {
        request = request.header("grpc-timeout", *timeout);
    }
    let request = request.body(Full::new(framed.freeze())).unwrap();
    let response = send.send_request(request).await.unwrap();
    let http = response.status().as_u16();
    let mut code = grpc_status(response.headers());
    let collected = response.into_body().collect().await.unwrap();
    if let Some(trailers) = collected.trailers() {
        code = code.or(grpc_status(trailers));
    }
    let body: Bytes = collected.to_bytes();
    let budget_us = (body.len() > 5)
        .then(|| Done::decode(&body[5..]).ok())
        .flatten()
        .and_then(|done| done.budgets_us.first().copied());
    Got {
        http,
        code,
        budget_us,
    }
}

fn grpc_status(headers: &http::HeaderMap) -> Option<i32> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

const OK: Option<i32> = Some(0);
const INTERNAL: Option<i32> = Some(13);
const DEADLINE_EXCEEDED: Option<i32> = Some(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_grpc_timeout_gets_the_answer_grpc_go_gives_it() {
    let (engine, calls) = (engine(), Arc::new(AtomicUsize::new(0)));
    let at = server(&engine, &calls).await;
    let quick = || Work {
        work_ms: 1,
        hops: 0,
    };
    // Malformed, alone or beside a good one: INTERNAL under HTTP 400, the handler never run.
    for bad in [
        &["5"][..],
        &["5s"],
        &["123456789S"],
        &["-1S"],
        &["1.5S"],
        &["5S", "x"],
        &["x", "5S"],
    ] {
        let got = raw_call(at, quick(), bad).await;
        assert_eq!((got.http, got.code), (400, INTERNAL), "{bad:?}: {got:?}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // 0n: DEADLINE_EXCEEDED at once, the handler never run.
    let got = raw_call(at, quick(), &["0n"]).await;
    assert_eq!((got.http, got.code), (200, DEADLINE_EXCEEDED), "{got:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // The largest value: 11,000 years, kept.
    let got = raw_call(at, quick(), &["99999999H"]).await;
    assert_eq!(got.code, OK, "{got:?}");
    assert!(
        got.budget_us.unwrap() > 99_999_990 * 3_600_000_000,
        "{got:?}"
    );
    // Repeated: the last counts.
    let got = raw_call(at, quick(), &["1H", "2S"]).await;
    assert_eq!(got.code, OK, "{got:?}");
    let budget = got.budget_us.unwrap();
    assert!(
        budget <= 2_000_000 && budget > 1_000_000,
        "{budget} µs of 2 s"
    );
    // None: no deadline at all.
    let got = raw_call(at, quick(), &[]).await;
    assert_eq!((got.code, got.budget_us), (OK, Some(u64::MAX)), "{got:?}");
    // A deadline that runs out: DEADLINE_EXCEEDED, never early.
    let start = Instant::now();
    let got = raw_call(
        at,
        Work {
            work_ms: 10_000,
            hops: 0,
        },
        &["50m"],
    )
    .await;
    assert_eq!(got.code, DEADLINE_EXCEEDED, "{got:?}");
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert_eq!(
        engine.pending(),
        0,
        "the handler's sleep and the deadline are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_mid_call_cancels_the_handlers_timers() {
    let (engine, calls) = (engine(), Arc::new(AtomicUsize::new(0)));
    let at = server(&engine, &calls).await;
    let baseline = engine.pending();
    let slow = Work {
        work_ms: 60_000,
        hops: 0,
    };
    let call = tokio::spawn(raw_call(at, slow, &["30S"]));
    let until = Instant::now() + Duration::from_secs(10);
    while engine.pending() <= baseline {
        assert!(Instant::now() < until, "the call never reached its handler");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The client goes away: its connection closes with the task.
    call.abort();
    let until = Instant::now() + Duration::from_secs(10);
    while engine.pending() > baseline {
        assert!(Instant::now() < until, "{} timers left", engine.pending());
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_one_microsecond_deadlines_is_answered_deadline_exceeded() {
    let (engine, calls) = (engine(), Arc::new(AtomicUsize::new(0)));
    let at = server(&engine, &calls).await;
    let slow = || Work {
        work_ms: 1_000,
        hops: 0,
    };
    let flood: Vec<_> = (0..200)
        .map(|_| tokio::spawn(raw_call(at, slow(), &["1u"])))
        .collect();
    for call in flood {
        let got = call.await.unwrap();
        assert_eq!((got.http, got.code), (200, DEADLINE_EXCEEDED), "{got:?}");
    }
    let until = Instant::now() + Duration::from_secs(10);
    while engine.pending() > 0 {
        assert!(Instant::now() < until, "{} timers left", engine.pending());
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sends_what_is_left_and_fails_a_call_past_its_deadline_before_sending() {
    let (engine, calls) = (engine(), Arc::new(AtomicUsize::new(0)));
    let at = server(&engine, &calls).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{at}"))
        .unwrap()
        .connect_lazy();
    let client = tower::ServiceBuilder::new()
        .layer(PropagateLayer::new(engine.clone()))
        .service(channel);
    let quick = Work {
        work_ms: 1,
        hops: 0,
    };
    let inside = engine.within(
        Duration::from_millis(300),
        call(client.clone(), quick, None),
    );
    let done = inside.await.unwrap();
    let budget = done.budgets_us[0];
    assert!(
        budget < 300_000 && budget > 100_000,
        "{budget} µs of 300 ms"
    );
    // The scope's deadline has passed: no stream is opened.
    let late = engine.within(Duration::from_millis(20), async {
        engine.sleep(Duration::from_millis(30)).await;
        call(
            client.clone(),
            Work {
                work_ms: 1,
                hops: 0,
            },
            None,
        )
        .await
    });
    let status = late.await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the late call never reached the server"
    );
    // Outside every scope, a call goes with no deadline.
    let free = call(
        client,
        Work {
            work_ms: 1,
            hops: 0,
        },
        None,
    )
    .await
    .unwrap();
    assert_eq!(free.budgets_us, [u64::MAX]);
}
