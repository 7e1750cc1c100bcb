//! The naive baseline: a mutex around a binary heap, one thread on a condvar.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{wait_fired, Local, Peer, FIRED};

pub(crate) type Callback = Box<dyn FnOnce() + Send>;

/// A naive timer: one mutex around a binary heap of `(deadline, id)` and a map from id to the
/// callbacks still pending, and one thread that sleeps on a condvar until the earliest deadline
/// (woken when a timer with an earlier one arrives) and runs what is due. Cancelling removes
/// the callback; its heap entry stays behind as a tombstone, swept once tombstones outnumber
/// the live timers.
pub(crate) struct MutexHeapTimer {
    shared: Arc<HeapShared>,
    thread: JoinHandle<()>,
}

pub(crate) struct HeapShared {
    state: Mutex<HeapState>,
    wake: Condvar,
}

pub(crate) struct HeapState {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    callbacks: HashMap<u64, Callback>,
    next_id: u64,
    stop: bool,
}

impl MutexHeapTimer {
    pub(crate) fn start() -> Self {
        let shared = Arc::new(HeapShared {
            state: Mutex::new(HeapState {
                heap: BinaryHeap::new(),
                callbacks: HashMap::new(),
                next_id: 0,
                stop: false,
            }),
            wake: Condvar::new(),
        });
        let runner = shared.clone();
        let thread = thread::Builder::new()
            .name("mutex-heap-timer".into())
            .spawn(move || runner.run())
            .expect("start the timer thread");
        MutexHeapTimer { shared, thread }
    }
}

impl HeapShared {
    fn schedule(&self, delay: Duration, callback: Callback) -> u64 {
        let at = Instant::now() + delay;
        let mut state = self.state.lock().unwrap();
        let id = state.next_id;
        state.next_id += 1;
        let earliest = state
            .heap
            .peek()
            .is_none_or(|Reverse((first, _))| at < *first);
        state.heap.push(Reverse((at, id)));
        state.callbacks.insert(id, callback);
        drop(state);
        if earliest {
            self.wake.notify_one();
        }
        id
    }

    fn cancel(&self, id: u64) -> bool {
        let mut state = self.state.lock().unwrap();
        let cancelled = state.callbacks.remove(&id).is_some();
        let HeapState {
            heap, callbacks, ..
        } = &mut *state;
        if heap.len() > 2 * callbacks.len() + 1024 {
            heap.retain(|Reverse((_, id))| callbacks.contains_key(id));
        }
        cancelled
    }

    fn run(&self) {
        let mut due = Vec::new();
        let mut state = self.state.lock().unwrap();
        while !state.stop {
            let now = Instant::now();
            match state.heap.peek() {
                Some(&Reverse((at, _))) if at > now => {
                    state = self.wake.wait_timeout(state, at - now).unwrap().0;
                }
                Some(_) => {
                    while let Some(&Reverse((at, id))) = state.heap.peek() {
                        if at > now {
                            break;
                        }
                        state.heap.pop();
                        due.extend(state.callbacks.remove(&id));
                    }
                    drop(state);
                    due.drain(..).for_each(|callback| callback());
                    state = self.state.lock().unwrap();
                }
                None => state = self.wake.wait(state).unwrap(),
            }
        }
    }
}

pub(crate) struct MutexHeapLocal(Arc<HeapShared>);

impl Local for MutexHeapLocal {
    type Handle = u64;

    fn schedule(&mut self, delay: Duration) -> u64 {
        self.0.schedule(delay, Box::new(|| {}))
    }

    fn cancel(&mut self, id: u64) {
        black_box(self.0.cancel(id));
    }
}

impl Peer for MutexHeapTimer {
    type Local = MutexHeapLocal;

    fn local(&self) -> MutexHeapLocal {
        MutexHeapLocal(self.shared.clone())
    }

    fn fire(&self, delays: &[Duration]) {
        for &delay in delays {
            let callback = Box::new(|| {
                FIRED.fetch_add(1, Ordering::Release);
            });
            self.shared.schedule(delay, callback);
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        for _ in 0..n {
            let callback = Box::new(|| {
                FIRED.fetch_add(1, Ordering::Release);
            });
            self.shared
                .schedule(due.saturating_duration_since(Instant::now()), callback);
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        self.shared.state.lock().unwrap().stop = true;
        self.shared.wake.notify_one();
        self.thread.join().expect("join the timer thread");
    }
}
