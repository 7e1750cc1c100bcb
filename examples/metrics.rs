//! The engine's statistics as Prometheus text: a `metrics-exporter-prometheus` recorder, an
//! engine that schedules, cancels, fires and refuses timers, a `Publisher` that publishes its
//! stats, and the text a scrape would get.
//!
//! `cargo run --example metrics --features metrics`

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use shardwheel::metrics::Publisher;
use shardwheel::{ScheduleError, TimerEngine};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    let engine = TimerEngine::builder()
        .shards(2)
        .max_pending(1_000)
        .build()?;
    let publisher = Publisher::new().label("engine", "example");

    // 600 short timers, a third of them cancelled.
    let handles: Vec<_> = (0..600u64)
        .map(|i| engine.schedule(Duration::from_millis(1 + i % 30), || {}))
        .collect::<Result<_, _>>()?;
    for handle in handles.iter().step_by(3) {
        handle.cancel();
    }
    // Long timers up to the cap (refused with `Full`), and one beyond the engine's range.
    let mut long = 0;
    while engine.schedule(Duration::from_secs(60), || {}).is_ok() {
        long += 1;
    }
    let too_long = engine.schedule(engine.max_delay() + Duration::from_secs(1), || {});
    assert!(matches!(too_long, Err(ScheduleError::DelayTooLong(_))));
    std::thread::sleep(Duration::from_millis(100));

    // Shutdown hands the long timers back; a schedule after it is refused.
    let handed_back = engine.shutdown().len();
    let refused = engine.schedule(Duration::from_millis(1), || {});
    assert!(matches!(refused, Err(ScheduleError::Shutdown(_))));
    // A server calls this before each scrape (or every few seconds).
    publisher.publish(&engine);

    eprintln!("{long} long timers scheduled, {handed_back} handed back by shutdown");
    print!("{}", prometheus.render());
    Ok(())
}
