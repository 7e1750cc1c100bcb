//! The survey: a walk of the wheel a piece at a time, between inserts, cancels, resets and
//! advances.

use super::*;
use crate::wheel::Repeats;

impl Harness {
    /// The ids of the live entries by address, for telling what a survey meets.
    fn ids_by_address(&self) -> BTreeMap<usize, u64> {
        (self.live.iter())
            .map(|(id, entry)| (EntryRef::as_ptr(entry) as usize, *id))
            .collect()
    }

    /// Walks `budget` more entries of the survey under way into `met`; `Some` once it ended.
    fn survey_piece(&mut self, budget: usize, met: &mut Vec<u64>) -> Option<Repeats> {
        let ids = self.ids_by_address();
        self.wheel.survey(budget, |entry| {
            assert!(entry.state().linked_at().is_some(), "met an unlinked entry");
            if entry.state().is_pending() {
                met.push(ids[&(entry as *const Entry as usize)]);
            }
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { ProptestConfig::default().cases },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// A survey walked a few entries at a time between inserts, cancels, resets and advances
    /// meets every timer pending and unmoved from its start to its end, meets only timers
    /// pending at some point of it, and meets none twice unless it says it may have.
    #[test]
    fn a_survey_meets_every_timer_pending_throughout(
        before in proptest::collection::vec(op(), 0..80),
        during in proptest::collection::vec(op(), 0..80),
        budget in 1usize..8,
    ) {
        let mut h = Harness::new();
        let mut now = 0;
        let mut moved = std::collections::BTreeSet::new();
        let mut apply = |h: &mut Harness, op: &Op, moved: &mut std::collections::BTreeSet<u64>| match *op {
            Op::Insert(delay) => { h.insert(now + delay); }
            Op::Cancel(pick) if !h.live.is_empty() => {
                let id = *h.live.keys().nth(pick % h.live.len()).unwrap();
                h.cancel(id);
            }
            Op::Cancel(_) => {}
            Op::Reset(pick, by) if !h.live.is_empty() => {
                let id = *h.live.keys().nth(pick % h.live.len()).unwrap();
                h.reset(id, now + by);
                moved.insert(id);
            }
            Op::Reset(..) => {}
            Op::Advance(by) => {
                now += by;
                h.advance_to(now);
            }
        };
        let mut before_moves = std::collections::BTreeSet::new();
        before.iter().for_each(|op| apply(&mut h, op, &mut before_moves));
        let at_start: Vec<u64> = h.live.keys().copied().collect();
        let mut ever: std::collections::BTreeSet<u64> = at_start.iter().copied().collect();
        let mut met = Vec::new();
        // Each timer live during the survey, by the address it had.
        let mut ids_then = h.ids_by_address();
        h.wheel.begin_survey();
        let mut ops = during.iter();
        let repeats = loop {
            if let Some(repeats) = h.survey_piece(budget, &mut met) {
                break repeats;
            }
            if let Some(op) = ops.next() {
                apply(&mut h, op, &mut moved);
                ever.extend(h.live.keys().copied());
                ids_then.extend(h.ids_by_address());
            }
        };
        // A timer moved during the survey is met only if it lands where the walk has yet to go.
        let unmoved = at_start.iter().filter(|id| !moved.contains(id));
        for id in unmoved.filter(|id| h.live.contains_key(id)) {
            prop_assert!(met.contains(id), "timer {} pending throughout was missed", id);
        }
        prop_assert!(met.iter().all(|id| ever.contains(id)));
        let mut twice = met.clone();
        twice.sort_unstable();
        let twice: Vec<u64> = twice.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).collect();
        match &repeats {
            Repeats::Any => {}
            Repeats::None => prop_assert!(twice.is_empty(), "met twice: {:?}", twice),
            Repeats::These(addresses) => {
                let named: Vec<u64> = addresses.iter().map(|address| ids_then[address]).collect();
                for id in &twice {
                    prop_assert!(named.contains(id), "{} met twice, unnamed", id);
                }
            }
        }
        prop_assert_eq!(h.wheel.survey(1, |_| {}), None, "no survey under way");
    }
}

#[test]
fn a_survey_steps_over_entries_unlinked_under_its_cursor() {
    let mut h = Harness::new();
    let ids: Vec<u64> = (0..8).map(|_| h.insert(1000)).collect();
    let mut met = Vec::new();
    h.wheel.begin_survey();
    assert_eq!(h.survey_piece(1, &mut met), None);
    assert_eq!(met.len(), 4, "one round of the slot's four chains");
    let rest: Vec<u64> = ids.iter().filter(|id| !met.contains(id)).copied().collect();
    h.cancel(rest[0]);
    h.cancel(rest[1]);
    // Unlinked as a turn would, their handles kept: memory the cursor must not read on.
    let held: Vec<EntryRef> = std::mem::take(&mut h.requests)
        .into_iter()
        .map(|(handle, request)| {
            drop(h.wheel.unlink_cancelled(request));
            handle
        })
        .collect();
    assert_eq!(h.survey_piece(8, &mut met), Some(Repeats::None));
    met.sort_unstable();
    let mut want: Vec<u64> = ids
        .iter()
        .filter(|id| h.live.contains_key(id))
        .copied()
        .collect();
    want.sort_unstable();
    assert_eq!(met, want);
    drop(held);
}

#[test]
fn a_survey_leaves_a_slot_that_comes_due_under_its_cursor() {
    let mut h = Harness::new();
    let ids: Vec<u64> = (0..8).map(|_| h.insert(1000)).collect();
    let held: Vec<EntryRef> = ids.iter().map(|id| h.live[id].clone()).collect();
    let mut met = Vec::new();
    h.wheel.begin_survey();
    assert_eq!(h.survey_piece(1, &mut met), None);
    h.advance_to(1000);
    assert_eq!(h.fired.len(), 8);
    assert_eq!(
        h.survey_piece(8, &mut met),
        Some(Repeats::Any),
        "a coarse slot came due"
    );
    assert_eq!(met.len(), 4, "only the first round, met before they fired");
    drop(held);
}

#[test]
fn a_survey_that_met_a_timer_before_a_reset_moved_it_says_it_may_meet_it_twice() {
    let mut h = Harness::new();
    let far = h.insert(5_000_000);
    let mut met = Vec::new();
    h.wheel.begin_survey();
    assert_eq!(h.survey_piece(1, &mut met), None);
    assert_eq!(met, [far], "the walk starts at the top level");
    // Moved down to a level the walk has yet to reach: it is met there again.
    h.reset(far, 100);
    let address = EntryRef::as_ptr(&h.live[&far]) as usize;
    assert_eq!(
        h.survey_piece(8, &mut met),
        Some(Repeats::These(vec![address]))
    );
    assert_eq!(met, [far, far]);
}

#[test]
fn a_timer_moved_where_the_walk_has_been_or_from_where_it_has_yet_to_go_is_no_repeat() {
    let mut h = Harness::new();
    let far = h.insert(5_000_000);
    let near = h.insert(100);
    let mut met = Vec::new();
    h.wheel.begin_survey();
    assert_eq!(h.survey_piece(1, &mut met), None);
    assert_eq!(met, [far]);
    h.reset(near, 200); // not met yet, and moved ahead of the walk: met once
    h.reset(far, 3_000_000); // met, and moved to a slot the walk has passed: not met again
    assert_eq!(h.survey_piece(8, &mut met), Some(Repeats::None));
    assert_eq!(met, [far, near]);
}
