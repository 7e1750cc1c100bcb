//! Model 15: a batch shared out in ranges (see `sync::claims`), its holder taking items from
//! the front while a thief steals the back half and takes from that.

use loom::thread;

use crate::sync::{Arc, AtomicUsize, Claim, Holder, Ordering};

/// Three items put in the holder's claim while a thief, started before, tries once to steal;
/// each takes what its range holds: every item is taken once, by one of them.
///
/// Catches: a holder that takes an item by a load and a store instead of the exchange (the
/// thief's steal lands in between, and the holder takes the stolen items again: counted
/// twice), as checked once by putting that in.
#[test]
fn claims_each_item_is_taken_once_by_holder_or_thief() {
    loom::model(|| {
        let claims: Arc<[Claim<usize>; 2]> = Arc::new([Claim::new(), Claim::new()]);
        let taken = Arc::new([0, 1, 2].map(|_| AtomicUsize::new(0)));
        let thief = {
            let (claims, taken) = (claims.clone(), taken.clone());
            thread::spawn(move || {
                let mut thief = Holder::new(&claims[1]);
                if thief.steal(&claims[0]) {
                    while let Some((item, from)) = thief.take() {
                        assert_eq!(from, 9, "the loot keeps its origin");
                        taken[item].fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        };
        let mut holder = Holder::new(&claims[0]);
        holder.hold(vec![0, 1, 2], 9);
        while let Some((item, _)) = holder.take() {
            taken[item].fetch_add(1, Ordering::SeqCst);
        }
        thief.join().unwrap();
        for count in taken.iter() {
            assert_eq!(count.load(Ordering::SeqCst), 1, "each item taken once");
        }
    });
}
