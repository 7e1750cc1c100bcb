//! The `tracing` feature's events (one test: its subscriber is the whole process's).
#![cfg(feature = "tracing")]

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shardwheel::TimerEngine;

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl io::Write for Log {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[test]
fn panics_and_shutdown_are_traced() {
    let log = Log::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    let engine = TimerEngine::builder().pin_threads(false).build().unwrap();
    engine
        .schedule(Duration::from_millis(1), || panic!("on purpose"))
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(60);
    while engine.stats().panicked == 0 {
        assert!(Instant::now() < give_up, "the callback never ran");
        std::thread::sleep(Duration::from_millis(1));
    }
    engine.schedule(Duration::from_secs(60), || {}).unwrap();
    assert_eq!(engine.shutdown().len(), 1);

    let text = log.text();
    for line in [
        "a timer callback panicked",
        "panic=\"on purpose\"",
        "shutdown began",
        "shutdown ended",
        "unfired=1",
    ] {
        assert!(
            text.contains(line),
            "{line:?} missing from the log:\n{text}"
        );
    }
    assert!(text.contains("shardwheel"), "the events' target:\n{text}");
}
