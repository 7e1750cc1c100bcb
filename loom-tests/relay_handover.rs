//! Model 13: a shard handing callbacks to the pool's relay while a runner runs dry and parks.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::entry::{CallbackBox, Entry, EntryRef, Fired};
use crate::shard::{Inflight, Job, Relay, ShardCore, Spawn};
use crate::sync::{Arc, Mutex, StdArc};
use crate::time::TickClock;

/// A fired one-shot callback that counts its run in `ran`.
fn fired(ran: &StdArc<AtomicUsize>) -> Fired {
    let ran = ran.clone();
    let entry = EntryRef::new(Entry::new(1, CallbackBox::new(|| {})));
    Fired::new(
        CallbackBox::new(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        }),
        entry,
        false,
    )
}

/// Two batches handed over one after the other, the first starting a runner that then runs
/// dry and parks while the second arrives: every callback runs, `Inflight::wait_idle` returns,
/// and `close` ends the runner.
///
/// Catches: a runner that looks at the queues for the last time before it takes the lock
/// (instead of under it) and then parks: the second batch lands in between, finds no idle
/// runner to notify and a runner alive, and waits for ever (loom reports the deadlock of
/// `wait_idle`). Also a shard that starts no runner when none is alive, or does not notify an
/// idle one.
#[test]
fn relay_hand_over_vs_runner_parking() {
    loom::model(|| {
        let tick = std::time::Duration::from_millis(1);
        let shard = Arc::new(ShardCore::new(
            1,
            TickClock::new(tick, 1 << 36, u64::MAX, None),
            None,
        ));
        let runners = StdArc::new(Mutex::new(Vec::new()));
        let started = runners.clone();
        let spawn: Spawn = StdArc::new(move |job: Job| {
            started.lock().push(loom::thread::spawn(job));
        });
        let inflight = Arc::new(Inflight::new());
        let relay = Relay::new(vec![shard], spawn, 2, inflight.clone());
        let ran = StdArc::new(AtomicUsize::new(0));
        relay.hand_over(0, vec![fired(&ran)]);
        relay.hand_over(0, vec![fired(&ran)]);
        inflight.wait_idle();
        assert_eq!(ran.load(Ordering::SeqCst), 2, "both callbacks ran");
        relay.close();
        let runners = std::mem::take(&mut *runners.lock());
        assert_eq!(runners.len(), 1, "one runner was enough");
        for runner in runners {
            runner.join().unwrap();
        }
    });
}
