//! Taking a snapshot of the pending timers ([`TimerEngine::pending_timers`]).
//!
//! On an engine that tracks sites, the lanes' origins list every timer not ended (see
//! `shard::lane::origins`), read a piece at a time under each lane's lock: no shard is asked.
//! Otherwise only a shard's thread may read its wheel: each shard is asked (see
//! `shard::survey`) and woken, walks its wheel between turns, and leaves what it found; the
//! asker waits for every answer, up to [`WAIT`], and gives up at once if the engine shuts
//! down. One snapshot is taken at a time.
//!
//! [`TimerEngine::pending_timers`]: crate::TimerEngine::pending_timers

use std::time::Duration;

use super::pending::{PendingAges, PendingTimer, PendingTimers, SnapshotError, Stage};
use super::shared::EngineShared;
use super::stats::Tally;
use crate::entry::StateWord;
use crate::shard::{ask_each, Found, Lane, Patience, ShardShared, Unanswered};
use crate::sync::Arc;
use crate::time::Nanos;

/// The longest a snapshot waits for the shards' answers.
pub(super) const WAIT: Duration = Duration::from_secs(10);

/// How often a waiting asker looks for the answers, waking the shards again.
const LOOK: Duration = Duration::from_micros(200);

/// Where a timer in state `word` is.
fn stage_of(word: StateWord) -> Stage {
    if word.is_running() {
        Stage::Running
    } else if word.is_stowed() {
        Stage::Stowed
    } else if word.linked_at().is_some() {
        Stage::Linked
    } else {
        Stage::Queued
    }
}

impl EngineShared {
    /// The pending timers: see [`TimerEngine::pending_timers`](crate::TimerEngine::pending_timers).
    pub(super) fn pending_timers(&self) -> Result<PendingTimers, SnapshotError> {
        let _alone = self.snapshots.lock();
        if self.is_shutdown() {
            return Err(SnapshotError::Shutdown);
        }
        let taken_at = self.clock.now();
        let on_clocks = self.clocks.deadlines();
        // Most engines have no boot or wall timer: no lookup then.
        let on_clock = |address| match on_clocks.is_empty() {
            true => None,
            false => on_clocks.get(&address).map(|&at| at.into()),
        };
        let mut timers = Vec::new();
        if self.tracks() {
            let pending = self
                .shards_with_lanes()
                .map(|(shard, lanes)| Tally::of(shard, &lanes));
            timers.reserve(pending.map(|tally| tally.pending() as usize).sum());
            let now = self.clock.now_nanos();
            for (shard, (_, lanes)) in self.shards_with_lanes().enumerate() {
                for lane in &lanes {
                    lane.each_origin(|origin, word, address| {
                        timers.push(PendingTimer {
                            deadline: self.clock.instant_of(word.deadline()),
                            on_clock: on_clock(address),
                            stage: stage_of(word),
                            shard,
                            age: Some(age(now, origin.born)),
                            key: origin.key,
                            site: origin.site,
                        });
                    });
                }
            }
        } else {
            let answers = self.survey()?;
            timers.reserve(answers.iter().map(|found| found.seen.len()).sum());
            for (shard, found) in answers.into_iter().enumerate() {
                timers.extend(found.seen.into_iter().map(|seen| PendingTimer {
                    deadline: self.clock.instant_of(seen.word.deadline()),
                    on_clock: on_clock(seen.address),
                    stage: Stage::Linked,
                    shard,
                    age: None,
                    key: None,
                    site: None,
                }));
            }
        }
        let mut listed = vec![0; self.shards.len()];
        timers.iter().for_each(|timer| listed[timer.shard] += 1);
        let unlisted = (self.shards_with_lanes().zip(listed))
            .map(|((shard, lanes), listed)| {
                Tally::of(shard, &lanes).pending().saturating_sub(listed)
            })
            .sum();
        Ok(PendingTimers {
            timers,
            unlisted,
            taken_at,
        })
    }

    /// Whether the engine keeps its timers' origins.
    pub(super) fn tracks(&self) -> bool {
        self.shards[0].tracks()
    }

    /// Asks every shard for the timers in its wheel and waits for the answers.
    fn survey(&self) -> Result<Vec<Found>, SnapshotError> {
        let patience = Patience {
            pause: LOOK,
            most: Some(WAIT),
        };
        let shards = self.shards.iter().map(|shard| &**shard);
        ask_each(shards, ShardShared::survey, patience).map_err(|why| match why {
            Unanswered::Stopped => SnapshotError::Shutdown,
            Unanswered::TimedOut => SnapshotError::TimedOut(WAIT),
        })
    }

    /// How many pending timers were scheduled how long ago, from the lanes' origins; `None`
    /// on an engine that keeps none.
    pub(super) fn pending_ages(&self, lanes: &[Arc<Lane>]) -> Option<PendingAges> {
        if !self.tracks() {
            return None;
        }
        let now = self.clock.now_nanos();
        let mut ages = PendingAges::default();
        for lane in lanes {
            lane.each_origin(|origin, _, _| ages.add(age(now, origin.born)));
        }
        Some(ages)
    }
}

/// How long before `now` a timer born at `born` was made.
fn age(now: Nanos, born: Nanos) -> Duration {
    Duration::from_nanos(now.saturating_since(born))
}
