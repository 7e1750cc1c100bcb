//! A lock lease kept alive by a watchdog, as a distributed lock's client keeps its lock.
//!
//! A client holds a lease of length L (default 30 s). A repeating timer renews it every L/3:
//! each renewal moves the lease's expiry instant (kept behind a mutex) to L from now and
//! `reset`s the lease's own expiry timer to L from now. If the renewals stop, that expiry timer
//! fires and the lease is lost. Releasing the lease cancels both timers.
//!
//! Time comes from a `ManualClock`, so minutes of simulated time pass in milliseconds, and the
//! example checks, step by step:
//!
//! - (a) while the renewer runs, the lease never lapses, and it is renewed exactly once per
//!   L/3;
//! - (b) once the client stalls (the renewer is cancelled), the lease is lost exactly L after
//!   the last renewal, and not a step earlier;
//! - (c) after a lease is released, nothing fires any more: no renewal, no loss.
//!
//! It prints the events and the renewal counts, and exits with status 1 if a check fails
//! (status 2 for a bad command line).
//!
//! ```text
//! cargo run --release --example lease_renewal -- --help
//! cargo run --release --example lease_renewal -- --lease 30 --hold 305 --step-ms 1000
//! ```

mod support;

use std::fmt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clap::Parser;
use shardwheel::{ManualClock, TimerEngine, TimerHandle, TimerState};

use support::lock;

/// The command line.
#[derive(Parser)]
#[command(
    name = "lease_renewal",
    about = "lease_renewal: a lock lease renewed by a repeating timer, lost when renewals stop",
    args_override_self = true
)]
struct Args {
    /// length of the lease, L, in whole seconds (at most a day);
    /// the renewer runs every L/3
    #[arg(long = "lease", value_name = "SECS", default_value_t = 30, verbatim_doc_comment,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    lease_secs: u64,
    /// simulated time the first lease is held before the client stalls
    /// (at least --lease, at most ten days)
    #[arg(long = "hold", value_name = "SECS", default_value_t = 305, verbatim_doc_comment,
          value_parser = clap::value_parser!(u64).range(..=864_000))]
    hold_secs: u64,
    /// how far the manual clock moves per step, in milliseconds;
    /// L/3 must be a whole number of steps
    #[arg(long = "step-ms", value_name = "MS", default_value_t = 1000, verbatim_doc_comment,
          value_parser = clap::value_parser!(u64).range(1..))]
    step_ms: u64,
}

/// The command line, checked.
struct Config {
    lease: Duration,
    hold: Duration,
    step: Duration,
}

impl Config {
    fn new(args: Args) -> Result<Config, String> {
        let Args {
            lease_secs,
            hold_secs,
            step_ms,
        } = args;
        let lease_ms = lease_secs * 1000;
        // Every renewal, and so the loss L after the last one, must fall on a step boundary
        // for the "exactly L after" check to be exact.
        if lease_ms % (3 * step_ms) != 0 {
            return Err(format!(
                "the renewal period L/3 = {lease_ms}/3 ms must be a whole number of \
                 {step_ms} ms steps"
            ));
        }
        if hold_secs < lease_secs {
            return Err("--hold must be at least --lease, to see the lease renewed".into());
        }
        Ok(Config {
            lease: Duration::from_secs(lease_secs),
            hold: Duration::from_secs(hold_secs),
            step: Duration::from_millis(step_ms),
        })
    }
}

/// What happened to a lease, in simulated time (time since the clock was made).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Acquired(Duration),
    Renewed(Duration),
    /// A renewal ran after the expiry timer had fired: the lease was already gone.
    RenewedTooLate(Duration),
    Lost(Duration),
    Stalled(Duration),
    Released(Duration),
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, at) = match self {
            Event::Acquired(at) => ("acquired", at),
            Event::Renewed(at) => ("renewed", at),
            Event::RenewedTooLate(at) => ("renewal came after the lease was lost", at),
            Event::Lost(at) => ("LEASE LOST", at),
            Event::Stalled(at) => ("client stalled: renewer cancelled", at),
            Event::Released(at) => ("released: renewer and expiry timer cancelled", at),
        };
        write!(f, "{:>9.3} s  {what}", at.as_secs_f64())
    }
}

/// What a lease's timers and its holder share.
struct LeaseState {
    /// The simulated instant the lease runs out, as the holder believes it.
    expires_at: Mutex<Duration>,
    renewals: AtomicU64,
    events: Mutex<Vec<Event>>,
}

impl LeaseState {
    fn expires_at(&self) -> MutexGuard<'_, Duration> {
        // A poisoned lock only means a callback panicked; the value is still the latest one.
        lock(&self.expires_at)
    }

    fn record(&self, event: Event) {
        lock(&self.events).push(event);
    }

    fn events(&self) -> Vec<Event> {
        lock(&self.events).clone()
    }

    fn lost_at(&self) -> Option<Duration> {
        self.events().into_iter().find_map(|e| match e {
            Event::Lost(at) => Some(at),
            _ => None,
        })
    }

    fn last_renewal(&self) -> Option<Duration> {
        self.events().into_iter().rev().find_map(|e| match e {
            Event::Renewed(at) => Some(at),
            _ => None,
        })
    }
}

/// A held lease: its expiry timer and its renewer.
struct Lease {
    state: Arc<LeaseState>,
    expiry: Arc<TimerHandle>,
    renewer: TimerHandle,
}

impl Lease {
    /// Takes a lease of length `lease` now and starts renewing it every `lease / 3`.
    fn acquire(
        engine: &TimerEngine,
        clock: &ManualClock,
        lease: Duration,
    ) -> Result<Lease, String> {
        let now = clock.elapsed();
        let state = Arc::new(LeaseState {
            expires_at: Mutex::new(now + lease),
            renewals: AtomicU64::new(0),
            events: Mutex::new(vec![Event::Acquired(now)]),
        });

        let (s, c) = (state.clone(), clock.clone());
        let expiry = engine
            .schedule(lease, move || s.record(Event::Lost(c.elapsed())))
            .map_err(|e| format!("cannot schedule the lease's expiry: {e}"))?;
        let expiry = Arc::new(expiry);

        let (s, c, timer) = (state.clone(), clock.clone(), expiry.clone());
        let renew = move || {
            let now = c.elapsed();
            // Move the expiry timer first: if it has fired already, the lease is gone and
            // extending the instant would only hide that.
            if timer.reset(lease) {
                *s.expires_at() = now + lease;
                s.renewals.fetch_add(1, Ordering::SeqCst);
                s.record(Event::Renewed(now));
            } else {
                s.record(Event::RenewedTooLate(now));
            }
        };
        let renewer = match engine.repeating(lease / 3).schedule(renew) {
            Ok(renewer) => renewer,
            Err(e) => {
                expiry.cancel();
                return Err(format!("cannot schedule the renewer: {e}"));
            }
        };
        Ok(Lease {
            state,
            expiry,
            renewer,
        })
    }

    fn renewals(&self) -> u64 {
        self.state.renewals.load(Ordering::SeqCst)
    }
}

/// Collects failed checks instead of stopping at the first.
#[derive(Default)]
struct Checks {
    failures: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }
}

fn main() -> ExitCode {
    let config = support::config(Config::new);
    support::verdict("lease_renewal", run(&config).map(|checks| checks.failures))
}

fn run(config: &Config) -> Result<Checks, String> {
    let wall = Instant::now();
    let lease = config.lease;
    let period = lease / 3;
    let step = config.step;
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .build()
        .map_err(|e| format!("cannot start the timer engine: {e}"))?;
    let mut checks = Checks::default();

    println!(
        "lease {} s, renewed every {:.3} s, clock step {} ms",
        lease.as_secs(),
        period.as_secs_f64(),
        step.as_millis()
    );

    // (a) Hold the lease: at every step it must be live, with a renewal due before it runs out.
    let acquired_a = clock.elapsed();
    let first = Lease::acquire(&engine, &clock, lease)?;
    let hold_until = acquired_a + config.hold;
    let mut least_left = lease;
    while clock.elapsed() < hold_until {
        clock.advance(step);
        let now = clock.elapsed();
        let expires_at = *first.state.expires_at();
        least_left = least_left.min(expires_at.saturating_sub(now));
        checks.check(first.state.lost_at().is_none(), || {
            format!("(a) the lease was lost at {now:?} while renewals were running")
        });
        checks.check(expires_at > now, || {
            format!("(a) at {now:?} the lease had lapsed (it ran out at {expires_at:?})")
        });
        checks.check(first.expiry.state() == TimerState::Pending, || {
            format!("(a) at {now:?} the expiry timer is no longer pending")
        });
    }
    let held = clock.elapsed() - acquired_a;
    let expected_renewals = (held.as_nanos() / period.as_nanos()) as u64;
    let renewals_a = first.renewals();
    checks.check(renewals_a == expected_renewals, || {
        format!("(a) {renewals_a} renewals in {held:?}, expected {expected_renewals}")
    });
    println!(
        "(a) held for {:.3} s: {renewals_a} renewals (expected {expected_renewals}); never \
         lapsed, at least {:.3} s left at every step",
        held.as_secs_f64(),
        least_left.as_secs_f64()
    );

    // (b) The client stalls: its renewer stops. The lease must be lost exactly L after the
    // last renewal, not a step before.
    let stalled_at = clock.elapsed();
    checks.check(first.renewer.cancel(), || {
        "(b) cancelling the running renewer returned false".into()
    });
    first.state.record(Event::Stalled(stalled_at));
    let last_renewal = first
        .state
        .last_renewal()
        .ok_or("(b) the lease was never renewed, so there is no last renewal")?;
    let due = last_renewal + lease;
    // Stop at the first step that sees the loss, or at the step it is due by.
    while clock.elapsed() < due && first.state.lost_at().is_none() {
        clock.advance(step);
    }
    let lost = first.state.lost_at();
    checks.check(lost == Some(due), || {
        format!("(b) lease lost at {lost:?}, expected exactly at {due:?}")
    });
    let renewals_b = first.renewals();
    checks.check(renewals_b == renewals_a, || {
        format!(
            "(b) {} renewals after the renewer was cancelled",
            renewals_b - renewals_a
        )
    });
    checks.check(first.expiry.state() == TimerState::Fired, || {
        "(b) the expiry timer did not fire".into()
    });
    if let Some(lost) = lost {
        println!(
            "(b) stalled at {:.3} s, last renewal at {:.3} s, lost at {:.3} s \
             ({:.3} s after the last renewal)",
            stalled_at.as_secs_f64(),
            last_renewal.as_secs_f64(),
            lost.as_secs_f64(),
            (lost - last_renewal).as_secs_f64()
        );
    }

    // (c) A second lease, held for a little over one renewal period, then released: after
    // that nothing may fire.
    let acquired_c = clock.elapsed();
    let second = Lease::acquire(&engine, &clock, lease)?;
    let release_at = acquired_c + period + period / 2;
    while clock.elapsed() < release_at {
        clock.advance(step);
    }
    let released_at = clock.elapsed();
    checks.check(second.renewer.cancel(), || {
        "(c) cancelling the renewer on release returned false".into()
    });
    checks.check(second.expiry.cancel(), || {
        "(c) cancelling the expiry timer on release returned false".into()
    });
    second.state.record(Event::Released(released_at));
    let fired_at_release = engine.stats().fired;
    let renewals_at_release = second.renewals();
    let expected_at_release = ((released_at - acquired_c).as_nanos() / period.as_nanos()) as u64;
    let events_at_release = second.state.events().len();
    let quiet_until = released_at + 3 * lease;
    while clock.elapsed() < quiet_until {
        clock.advance(step);
    }
    let fired_after = engine.stats().fired - fired_at_release;
    let renewals_after = second.renewals() - renewals_at_release;
    let events_after = second.state.events().len() - events_at_release;
    checks.check(renewals_at_release == expected_at_release, || {
        let (got, expected) = (renewals_at_release, expected_at_release);
        format!("(c) {got} renewals before release, expected {expected}")
    });
    checks.check(renewals_after == 0 && events_after == 0, || {
        format!("(c) {events_after} events ({renewals_after} renewals) after release")
    });
    checks.check(fired_after == 0, || {
        format!("(c) the engine fired {fired_after} timers after the release")
    });
    checks.check(second.state.lost_at().is_none(), || {
        "(c) the released lease fired \"lease lost\"".into()
    });
    println!(
        "(c) second lease released at {:.3} s after {renewals_at_release} renewal(s); \
         {:.0} s later: {events_after} events, {fired_after} timers fired",
        released_at.as_secs_f64(),
        (quiet_until - released_at).as_secs_f64()
    );

    // Nothing may be left behind.
    let pending = engine.pending();
    checks.check(pending == 0, || {
        format!("{pending} timers still pending at the end")
    });
    let unfired = engine.shutdown();
    checks.check(unfired.is_empty(), || {
        format!("shutdown handed back {} timers", unfired.len())
    });
    let too_late: Vec<Event> = [&first, &second]
        .iter()
        .flat_map(|l| l.state.events())
        .filter(|e| matches!(e, Event::RenewedTooLate(_)))
        .collect();
    checks.check(too_late.is_empty(), || {
        format!("renewals ran after their lease was lost: {too_late:?}")
    });

    println!("\nevents of the first lease (renewals between the first and last elided):");
    print_events(&first.state.events());
    println!("events of the second lease:");
    print_events(&second.state.events());
    println!(
        "renewals: {renewals_b} (first lease) + {renewals_at_release} (second lease); \
         simulated {:.0} s in {:.0} ms of wall time",
        clock.elapsed().as_secs_f64(),
        wall.elapsed().as_secs_f64() * 1000.0
    );
    Ok(checks)
}

/// Prints events, showing only the first and last of a run of renewals.
fn print_events(events: &[Event]) {
    let mut i = 0;
    while i < events.len() {
        let run = events[i..]
            .iter()
            .take_while(|e| matches!(e, Event::Renewed(_)))
            .count();
        if run > 2 {
            println!("  {}", events[i]);
            println!("  ... {} more renewals ...", run - 2);
            println!("  {}", events[i + run - 1]);
            i += run;
        } else {
            println!("  {}", events[i]);
            i += 1;
        }
    }
}
