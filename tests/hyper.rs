//! hyper's `Timer` on the engine (`hyper` feature): header-read timeouts, answers, `reset`.

#![cfg(feature = "hyper")]
#![cfg(not(loom))]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::noop_waker_ref;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::rt::{Sleep as HyperSleep, Timer};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use shardwheel::{ManualClock, TimerEngine};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const HEADER_READ_TIMEOUT: Duration = Duration::from_millis(200);
/// The longest any step may take before the test fails rather than hangs.
const BOUND: Duration = Duration::from_secs(10);

async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"hello"))))
}

/// Serves HTTP/1 on 127.0.0.1 with `engine` as hyper's timer, until the runtime ends.
async fn server(engine: &TimerEngine) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let engine = engine.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let engine = engine.clone();
            tokio::spawn(async move {
                // A stalled head ends the connection with an error: expected here.
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(engine)
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello))
                    .await;
            });
        }
    });
    addr
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_stalled_request_head_is_cut_off_by_the_engines_timer() {
    let engine = TimerEngine::builder().build().unwrap();
    runtime().block_on(async {
        let addr = server(&engine).await;
        let start = Instant::now();
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: loc")
            .await
            .unwrap();

        // The server must close the connection (it may answer first); then reads see the end.
        let mut seen = Vec::new();
        tokio::time::timeout(BOUND, stream.read_to_end(&mut seen))
            .await
            .expect("the server closed the stalled connection within the bound")
            .ok();
        let waited = start.elapsed();
        assert!(
            waited >= HEADER_READ_TIMEOUT,
            "closed after {waited:?}, before the header-read timeout"
        );
    });
    assert!(
        engine.stats().scheduled > 0,
        "hyper's timeout ran on the engine"
    );
}

#[test]
fn a_whole_request_gets_its_answer() {
    let engine = TimerEngine::builder().build().unwrap();
    runtime().block_on(async {
        let addr = server(&engine).await;
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        let request = Request::get("/")
            .header(hyper::header::HOST, addr.to_string())
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = tokio::time::timeout(BOUND, sender.send_request(request))
            .await
            .expect("answered within the bound")
            .unwrap();
        assert_eq!(response.status(), hyper::StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"hello");
    });
    assert!(
        engine.stats().scheduled > 0,
        "the head was timed on the engine"
    );
}

/// Polls `sleep` once, with a waker that does nothing.
fn poll_once(sleep: &mut Pin<Box<dyn HyperSleep>>) -> Poll<()> {
    sleep
        .as_mut()
        .poll(&mut Context::from_waker(noop_waker_ref()))
}

/// A sleep that is not the engine's.
struct Foreign;

impl Future for Foreign {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

impl HyperSleep for Foreign {}

#[test]
fn reset_moves_the_engines_own_sleep_and_replaces_any_other() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let second = Duration::from_secs(1);

    // The engine's own sleep is moved in place: no second timer.
    let mut sleep = Timer::sleep(&engine, second * 60);
    assert!(poll_once(&mut sleep).is_pending());
    Timer::reset(&engine, &mut sleep, Timer::now(&engine) + second);
    assert!(poll_once(&mut sleep).is_pending());
    assert_eq!(engine.stats().scheduled, 1);
    clock.advance(second);
    assert!(poll_once(&mut sleep).is_ready());

    // Any other sleep, including one of another engine, is replaced by one of this engine.
    let other = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let mut theirs = Timer::sleep(&other, second * 60);
    let mut foreign: Pin<Box<dyn HyperSleep>> = Box::pin(Foreign);
    for sleep in [&mut theirs, &mut foreign] {
        Timer::reset(&engine, sleep, Timer::now(&engine) + second);
        assert!(sleep.is::<shardwheel::Sleep>());
        assert!(poll_once(sleep).is_pending());
    }
    assert_eq!(engine.stats().scheduled, 3);
    assert_eq!(
        other.stats().pending,
        0,
        "the other engine's sleep was dropped"
    );
    clock.advance(second);
    assert!(poll_once(&mut theirs).is_ready());
    assert!(poll_once(&mut foreign).is_ready());
}
