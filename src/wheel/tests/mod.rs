//! Unit tests of linking, and a model-based property test of the wheel against a `BTreeMap`
//! of deadlines under a manual clock; the survey's in `survey`.

use super::*;
use crate::entry::{CallbackBox, UnlinkRef};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;

mod survey;

/// A wheel plus the entries it was given, with callbacks that report their id.
struct Harness {
    wheel: Wheel,
    ran: Arc<Mutex<Vec<u64>>>,
    live: BTreeMap<u64, EntryRef>,
    fired: Vec<(u64, u64)>,
    next_id: u64,
    /// Timers cancelled while linked, with their unlink requests, not taken yet.
    requests: Vec<(EntryRef, UnlinkRef)>,
}

impl Harness {
    fn new() -> Self {
        Harness {
            wheel: Wheel::new(),
            ran: Arc::new(Mutex::new(Vec::new())),
            live: BTreeMap::new(),
            fired: Vec::new(),
            next_id: 0,
            requests: Vec::new(),
        }
    }

    fn record(&mut self, tick: u64, fired: Fired) {
        fired.into_parts().0.call();
        let id = *self.ran.lock().unwrap().last().unwrap();
        self.live.remove(&id);
        self.fired.push((tick, id));
    }

    fn insert(&mut self, when: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let ran = self.ran.clone();
        let entry = EntryRef::new(Entry::new(
            when,
            CallbackBox::new(move || ran.lock().unwrap().push(id)),
        ));
        self.live.insert(id, entry.clone());
        if let Settled::Fired(fired, _) = self.wheel.settle(entry) {
            let tick = self.wheel.elapsed();
            self.record(tick, fired);
        }
        id
    }

    /// Moves a live timer to `when` as a reset does, then as its shard takes the change: the
    /// wheel links it again, or fires it if due.
    fn reset(&mut self, id: u64, when: u64) {
        let entry = self.live[&id].clone();
        entry.reset(when).unwrap();
        if let Settled::Fired(fired, _) = self.wheel.reconsider(entry) {
            let tick = self.wheel.elapsed();
            self.record(tick, fired);
        }
    }

    /// Cancels as a handle does: the wheel's count goes to an unlink request, taken later.
    fn cancel(&mut self, id: u64) {
        let entry = self.live.remove(&id).unwrap();
        let won = Entry::cancel(&entry).unwrap();
        drop(won.callback.unwrap());
        let request = won
            .unlink
            .expect("the harness links every entry it does not fire");
        self.requests.push((entry, request));
    }

    /// Takes the unlink requests, as the shard does at the start of a turn.
    fn take_requests(&mut self) {
        for (_handle, request) in std::mem::take(&mut self.requests) {
            let held = self.wheel.unlink_cancelled(request);
            assert_eq!(
                EntryRef::strong_count(&held),
                2,
                "the request's count and the handle's"
            );
            assert_eq!(held.state().linked_at(), None);
        }
    }

    /// Requests whose entries the wheel still holds linked.
    fn requests_linked(&self) -> usize {
        self.requests
            .iter()
            .filter(|(handle, _)| handle.state().linked_at().is_some())
            .count()
    }

    /// Advances, then takes the unlink requests: a cancelled entry whose slot came due in
    /// between was met by the wheel first, the others are still linked.
    fn advance_to(&mut self, now: u64) {
        let mut fired = Vec::new();
        self.wheel
            .advance(now, |tick, _, callback| fired.push((tick, callback)));
        for (tick, callback) in fired {
            self.record(tick, callback);
        }
        self.take_requests();
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // Requests not yet taken own counts the wheel left them: drop them, as a lane does.
        self.take_requests();
    }
}

#[test]
fn level_for_uses_the_highest_differing_bit() {
    assert_eq!(level_for(0, 1), 0);
    assert_eq!(level_for(0, 63), 0);
    assert_eq!(level_for(0, 64), 1);
    assert_eq!(level_for(63, 64), 1);
    assert_eq!(level_for(64, 127), 0);
    assert_eq!(level_for(0, 64 * 64 - 1), 1);
    assert_eq!(level_for(0, 64 * 64), 2);
    assert_eq!(level_for(0, SPAN - 1), 5);
    assert_eq!(level_for(0, SPAN), 6);
    assert_eq!(level_for(0, u64::MAX), 10);
}

#[test]
fn beyond_the_span_an_entry_goes_to_the_top_level() {
    let wheel = Wheel::new();
    for when in [SPAN, SPAN + 65, u64::MAX >> 12] {
        let at = wheel.slot_for(when).expect("not due");
        assert_eq!((at.level, at.slot), (5, slot_of(when, 5)));
    }
}

#[test]
fn linking_at_level_boundaries() {
    let mut h = Harness::new();
    h.advance_to(100);
    for (when, level, slot) in [
        (101, 0, 101 % 64),
        (127, 0, 63),
        (128, 1, 2),
        (4095, 1, 63),
        (4096, 2, 1),
    ] {
        assert_eq!(
            h.wheel.slot_for(when),
            Some(SlotId { level, slot }),
            "when {when}"
        );
    }
    assert_eq!(h.wheel.slot_for(100), None);
    assert_eq!(h.wheel.slot_for(3), None);
}

#[test]
fn next_expiration_follows_the_earliest_entry_across_levels() {
    let mut h = Harness::new();
    h.insert(5000); // level 2
    assert_eq!(h.wheel.next_expiration().unwrap().deadline, 4096);
    h.insert(70); // level 1
    assert_eq!(h.wheel.next_expiration().unwrap().deadline, 64);
    h.insert(3); // level 0
    assert_eq!(h.wheel.next_expiration().unwrap().deadline, 3);
    h.advance_to(3);
    assert_eq!(h.fired, vec![(3, 2)]);
    h.advance_to(64);
    // The level-1 slot cascaded: the entry now waits in level 0 for its own tick.
    assert_eq!(h.wheel.next_expiration().unwrap().deadline, 70);
    h.advance_to(10_000);
    assert_eq!(h.fired, vec![(3, 2), (70, 1), (5000, 0)]);
    assert_eq!(h.wheel.len(), 0);
    assert_eq!(h.wheel.next_expiration(), None);
}

#[test]
fn a_due_entry_fires_on_insert_and_a_cancelled_one_is_unlinked_at_once() {
    let mut h = Harness::new();
    h.advance_to(50);
    h.insert(10);
    assert_eq!(h.fired, vec![(50, 0)]);
    let id = h.insert(1_000_000);
    assert_eq!(h.wheel.len(), 1);
    h.cancel(id);
    assert_eq!(h.wheel.len(), 1, "linked until its unlink request is taken");
    h.take_requests();
    assert_eq!(h.wheel.len(), 0);
    assert_eq!(h.wheel.next_expiration(), None);
}

#[test]
fn an_advance_frees_the_fired_one_shots_no_one_holds_for_the_next_timers() {
    let slab = crate::slab::Allocator::with_blocks(4);
    let mut wheel = Wheel::new();
    let ran = Arc::new(Mutex::new(0));
    let mut addresses = Vec::new();
    let mut kept = None;
    for i in 0..4 {
        let ran = ran.clone();
        let callback = CallbackBox::new(move || *ran.lock().unwrap() += 1);
        // SAFETY: the test thread is the allocator's only user.
        let entry = unsafe { slab.alloc(Entry::new(3, callback)) };
        addresses.push(EntryRef::as_ptr(&entry));
        if i == 0 {
            kept = Some(entry.clone());
        }
        assert!(matches!(wheel.settle(entry), Settled::Linked));
    }
    let mut fired = Vec::new();
    wheel.advance(3, |_, _, callback| fired.push(callback));
    assert_eq!(fired.len(), 4);
    fired
        .into_iter()
        .for_each(|fired| fired.into_parts().0.call());
    assert_eq!(*ran.lock().unwrap(), 4);
    // The chunk is full: the next timers take the three slots the advance freed, and not the
    // one a handle still holds.
    let next: Vec<_> = (0..3)
        // SAFETY: as above.
        .map(|_| unsafe { slab.alloc(Entry::new(9, CallbackBox::new(|| {}))) })
        .collect();
    let mut reused: Vec<_> = next.iter().map(EntryRef::as_ptr).collect();
    reused.sort();
    let mut freed = addresses[1..].to_vec();
    freed.sort();
    assert_eq!(reused, freed);
    let kept = kept.unwrap();
    assert_eq!(kept.state().lifecycle(), Lifecycle::Fired);
    assert_eq!(EntryRef::strong_count(&kept), 1);
}

#[test]
fn a_deadline_beyond_the_span_fires_exactly_on_time() {
    let mut h = Harness::new();
    let when = SPAN * 3 + 12345;
    h.insert(when);
    let mut steps = 0;
    while let Some(exp) = h.wheel.next_expiration() {
        h.advance_to(exp.deadline);
        steps += 1;
        assert!(steps < 100, "the ring must converge");
    }
    assert_eq!(h.fired, vec![(when, 0)]);
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u64),
    Cancel(usize),
    Advance(u64),
    /// Moves a live timer (picked as a cancel picks) to this far from now.
    Reset(usize, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..200).prop_map(Op::Insert),
        3 => (0u64..300_000).prop_map(Op::Insert),
        1 => (0u64..SPAN * 2).prop_map(Op::Insert),
        3 => any::<usize>().prop_map(Op::Cancel),
        2 => (any::<usize>(), 0u64..300_000).prop_map(|(pick, by)| Op::Reset(pick, by)),
        3 => (0u64..100).prop_map(Op::Advance),
        1 => (0u64..500_000).prop_map(Op::Advance),
        1 => (0u64..SPAN).prop_map(Op::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { ProptestConfig::default().cases },
        // Under Miri there is no file system to keep regressions in.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    /// The same timers fire at the same ticks as in a `BTreeMap` of deadlines: an entry due
    /// after the current tick fires exactly at its deadline, a due one at once, a cancelled one
    /// never, and the wheel holds exactly the live entries.
    #[test]
    fn wheel_matches_a_btreemap_of_deadlines(ops in proptest::collection::vec(op(), 1..120)) {
        let mut h = Harness::new();
        let mut model: BTreeMap<(u64, u64), ()> = BTreeMap::new();
        let mut expected: Vec<(u64, u64)> = Vec::new();
        let mut now = 0u64;
        for op in ops {
            match op {
                Op::Insert(delay) => {
                    let when = now + delay;
                    let id = h.insert(when);
                    if when <= now {
                        expected.push((now, id));
                    } else {
                        model.insert((when, id), ());
                    }
                }
                Op::Cancel(pick) => {
                    if model.is_empty() {
                        continue;
                    }
                    let key = *model.keys().nth(pick % model.len()).unwrap();
                    model.remove(&key);
                    h.cancel(key.1);
                }
                Op::Reset(pick, by) => {
                    if model.is_empty() {
                        continue;
                    }
                    let key = *model.keys().nth(pick % model.len()).unwrap();
                    model.remove(&key);
                    let when = now + by;
                    h.reset(key.1, when);
                    if when <= now {
                        expected.push((now, key.1));
                    } else {
                        model.insert((when, key.1), ());
                    }
                }
                Op::Advance(by) => {
                    now += by;
                    h.advance_to(now);
                    let still = model.split_off(&(now + 1, 0));
                    expected.extend(model.keys().copied());
                    model = still;
                }
            }
            prop_assert_eq!(h.wheel.len(), model.len() + h.requests_linked());
            let mut got = h.fired.clone();
            got.sort_unstable();
            let mut want = expected.clone();
            want.sort_unstable();
            prop_assert_eq!(got, want);
            // Nothing that is due is left in the wheel.
            if let Some(exp) = h.wheel.next_expiration() {
                prop_assert!(exp.deadline > now);
            }
        }
    }
}

#[test]
fn draining_leaves_a_cancelled_entry_to_its_unlink_request() {
    let mut h = Harness::new();
    let kept = h.insert(500);
    let cancelled = h.insert(700);
    h.cancel(cancelled);
    let mut out = Vec::new();
    h.wheel.drain(&mut out);
    assert_eq!(out.len(), 1, "only the pending entry is handed out");
    assert!(out[0].state().is_pending());
    assert_eq!(out[0].state().linked_at(), None);
    drop(out);
    let (handle, request) = h.requests.pop().unwrap();
    assert_eq!(handle.state().linked_at(), None, "unmarked by the drain");
    assert_eq!(
        EntryRef::strong_count(&handle),
        2,
        "the request still owns the wheel's count"
    );
    drop(request);
    assert_eq!(EntryRef::strong_count(&handle), 1);
    assert!(h.live.contains_key(&kept));
}
