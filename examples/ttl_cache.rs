//! A cache whose entries expire a fixed time after they were last written, kept by a
//! `DelayQueue`.
//!
//! One task owns the cache: a `HashMap` from key to value and to the entry's `Key` in a
//! `DelayQueue` of keys. Client tasks send it `get`s and `put`s over a channel. A `put` of a new
//! key inserts it into the queue with the TTL; a `put` of a key already cached resets its
//! deadline to a TTL from now; a `get` reads. The owner waits on the channel and on the queue at
//! once (`tokio::select!`), and removes each key the queue yields. The queue's timers run on
//! a shardwheel engine, so the task needs nothing of tokio's timer.
//!
//! When the clients are done, the owner keeps draining the queue until every entry has
//! expired, and checks that every key inserted came out exactly once and none came out before
//! its deadline. It prints one line:
//!
//! ```text
//! ttl_cache: requests=200000 gets=100211 hits=17259 (17.2%) puts=99789 inserted=82652 refreshed=17137 expired=82652 max_live=9331 early=0 live_at_end=0 elapsed=1.12s
//! ```
//!
//! and exits with status 1 if a check fails (status 2 for a bad command line).
//!
//! ```text
//! cargo run --release --example ttl_cache -- --help
//! cargo run --release --example ttl_cache -- --keys 100000 --requests 1000000 --ttl-ms 50
//! ```

mod support;

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use shardwheel::delay_queue::{DelayQueue, Key};
use shardwheel::TimerEngine;
use tokio::sync::{mpsc, oneshot};

use support::SplitMix;

/// The command line.
#[derive(Parser)]
#[command(
    name = "ttl_cache",
    about = "ttl_cache: a cache whose entries expire through a DelayQueue on a shardwheel engine",
    args_override_self = true
)]
struct Args {
    /// distinct keys the clients pick from
    #[arg(long, value_name = "N", default_value_t = 50_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    keys: u64,
    /// requests in all, shared among the clients
    #[arg(long, value_name = "N", default_value_t = 200_000,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    requests: u64,
    /// client tasks
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    clients: u64,
    /// how long an entry lives after its last put, in milliseconds
    #[arg(long = "ttl-ms", value_name = "MS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    ttl_ms: u64,
    /// requests a client sends between pauses of 1 ms (paces the run over about a second)
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..))]
    burst: u64,
    /// share of requests that are puts, in percent
    #[arg(long = "put-percent", value_name = "PCT", default_value_t = 50,
          value_parser = clap::value_parser!(u64).range(0..=100))]
    put_percent: u64,
}

/// A request to the cache's owner.
enum Request {
    Get(u64, oneshot::Sender<Option<u64>>),
    Put(u64, u64),
}

/// What the owner counted.
#[derive(Default)]
struct Tally {
    gets: u64,
    hits: u64,
    puts: u64,
    inserted: u64,
    refreshed: u64,
    expired: u64,
    /// Entries yielded before their deadline (must stay 0).
    early: u64,
    /// Keys yielded that were not in the map (must stay 0).
    unknown: u64,
    max_live: usize,
}

/// The cache: values by key, and each key's place in the expiry queue.
struct Cache {
    entries: HashMap<u64, (u64, Key)>,
    expiry: DelayQueue<u64>,
    ttl: Duration,
    tally: Tally,
}

impl Cache {
    fn handle(&mut self, request: Request) {
        match request {
            Request::Get(key, reply) => {
                self.tally.gets += 1;
                let value = self.entries.get(&key).map(|&(value, _)| value);
                self.tally.hits += u64::from(value.is_some());
                // The client may have gone; the answer is then not needed.
                let _ = reply.send(value);
            }
            Request::Put(key, value) => {
                self.tally.puts += 1;
                if let Some((held, expiry_key)) = self.entries.get_mut(&key) {
                    *held = value;
                    if self.expiry.reset(expiry_key, self.ttl).is_ok() {
                        self.tally.refreshed += 1;
                        return;
                    }
                }
                let expiry_key = self.expiry.insert(key, self.ttl);
                self.entries.insert(key, (value, expiry_key));
                self.tally.inserted += 1;
                self.tally.max_live = self.tally.max_live.max(self.entries.len());
            }
        }
    }

    fn expire(&mut self, key: u64, deadline: Instant) {
        self.tally.expired += 1;
        self.tally.early += u64::from(Instant::now() < deadline);
        if self.entries.remove(&key).is_none() {
            self.tally.unknown += 1;
        }
    }
}

/// The owner's loop: requests and expiries until the clients are gone, then expiries until
/// the cache is empty.
async fn own(mut cache: Cache, mut requests: mpsc::Receiver<Request>) -> Cache {
    loop {
        tokio::select! {
            request = requests.recv() => match request {
                Some(request) => cache.handle(request),
                None => break,
            },
            // An empty queue is `Ready(None)`: it is only polled while it holds entries.
            Some(expired) = futures::future::poll_fn(|cx| cache.expiry.poll_expired(cx)),
                if !cache.expiry.is_empty() =>
            {
                cache.expire(*expired.get_ref(), expired.deadline());
            }
        }
    }
    while let Some(expired) = futures::StreamExt::next(&mut cache.expiry).await {
        cache.expire(*expired.get_ref(), expired.deadline());
    }
    cache
}

/// A client: `count` requests for keys below `workload.keys`, pausing 1 ms after each
/// `workload.burst`. Returns how many were answered (a put counts once it is sent).
async fn client(seed: u64, count: u64, workload: Workload, requests: mpsc::Sender<Request>) -> u64 {
    let mut rng = SplitMix(seed);
    let mut answered = 0;
    for n in 0..count {
        let key = rng.next_u64() % workload.keys;
        let done = if rng.next_u64() % 100 < workload.put_percent {
            requests
                .send(Request::Put(key, rng.next_u64()))
                .await
                .is_ok()
        } else {
            let (tx, rx) = oneshot::channel();
            requests.send(Request::Get(key, tx)).await.is_ok() && rx.await.is_ok()
        };
        if !done {
            break;
        }
        answered += 1;
        if (n + 1) % workload.burst == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    answered
}

/// What a client needs of the command line.
#[derive(Clone, Copy)]
struct Workload {
    keys: u64,
    put_percent: u64,
    burst: u64,
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let engine = match TimerEngine::builder().build() {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("ttl_cache: could not start the timer engine: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("ttl_cache: could not start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cache = Cache {
        entries: HashMap::new(),
        expiry: DelayQueue::new(&engine),
        ttl: Duration::from_millis(args.ttl_ms),
        tally: Tally::default(),
    };
    let workload = Workload {
        keys: args.keys,
        put_percent: args.put_percent,
        burst: args.burst,
    };

    let start = Instant::now();
    let (cache, answered) = runtime.block_on(async {
        let (tx, rx) = mpsc::channel(1024);
        let owner = tokio::spawn(own(cache, rx));
        let mut clients = Vec::new();
        for c in 0..args.clients {
            let count = args.requests / args.clients + u64::from(c < args.requests % args.clients);
            clients.push(tokio::spawn(client(
                0x5EED + c,
                count,
                workload,
                tx.clone(),
            )));
        }
        drop(tx);
        let mut answered = 0;
        for client in clients {
            answered += client.await.unwrap_or(0);
        }
        (owner.await, answered)
    });
    let elapsed = start.elapsed();
    let Ok(cache) = cache else {
        eprintln!("ttl_cache: the cache's task failed");
        return ExitCode::FAILURE;
    };

    let t = &cache.tally;
    let hit_rate = if t.gets == 0 {
        0.0
    } else {
        100.0 * t.hits as f64 / t.gets as f64
    };
    println!(
        "ttl_cache: requests={} gets={} hits={} ({hit_rate:.1}%) puts={} inserted={} \
         refreshed={} expired={} max_live={} early={} live_at_end={} elapsed={:.2}s",
        t.gets + t.puts,
        t.gets,
        t.hits,
        t.puts,
        t.inserted,
        t.refreshed,
        t.expired,
        t.max_live,
        t.early,
        cache.entries.len(),
        elapsed.as_secs_f64(),
    );

    let mut failed = Vec::new();
    if answered != args.requests || t.gets + t.puts != args.requests {
        failed.push(format!(
            "{} requests sent, {answered} answered, {} handled",
            args.requests,
            t.gets + t.puts
        ));
    }
    if t.expired != t.inserted {
        failed.push(format!(
            "{} entries inserted but {} expired",
            t.inserted, t.expired
        ));
    }
    if t.early != 0 {
        failed.push(format!("{} entries expired before their deadline", t.early));
    }
    if t.unknown != 0 {
        failed.push(format!("{} expired keys were not cached", t.unknown));
    }
    if !cache.entries.is_empty() || !cache.expiry.is_empty() {
        failed.push("entries left after every deadline passed".into());
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        for failure in failed {
            eprintln!("ttl_cache: FAILED: {failure}");
        }
        ExitCode::FAILURE
    }
}
