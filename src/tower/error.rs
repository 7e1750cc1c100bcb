//! [`Overloaded`]: a request refused because the engine could not time it.

use std::error::Error;
use std::fmt;

use crate::engine::{ScheduleError, ScheduleErrorKind};

/// The error of a request that a [`TimeoutService`](super::TimeoutService) service refused without calling
/// the inner service, because the engine would not hold its deadline: it was at its
/// `max_pending` cap, or shut down. Load shedding, not a deadline that passed.
///
/// Its [`kind`](Self::kind), also its [`source`](Error::source), says which: `Full` or
/// `Shutdown`.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::tower::{Overloaded, TimeoutService};
/// use shardwheel::{ScheduleErrorKind, TimerEngine};
/// use tower::{service_fn, ServiceExt};
///
/// let engine = TimerEngine::builder().build()?;
/// let echo = service_fn(|x: u32| async move { Ok::<_, std::convert::Infallible>(x) });
/// let service = TimeoutService::new(echo, engine.clone(), Duration::from_secs(1));
/// engine.shutdown();
/// let error = futures::executor::block_on(service.oneshot(7)).unwrap_err();
/// let overloaded = error.downcast_ref::<Overloaded>().unwrap();
/// assert_eq!(overloaded.kind(), ScheduleErrorKind::Shutdown);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded {
    refusal: ScheduleErrorKind,
}

impl Overloaded {
    pub(super) fn new(refusal: ScheduleError<()>) -> Self {
        Overloaded {
            refusal: refusal.kind(),
        }
    }

    /// Why the engine refused the deadline: [`ScheduleErrorKind::Full`] (at its cap) or
    /// [`ScheduleErrorKind::Shutdown`].
    pub fn kind(&self) -> ScheduleErrorKind {
        self.refusal
    }
}

impl fmt::Display for Overloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request refused: the timer engine would not hold its deadline")
    }
}

impl Error for Overloaded {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.refusal)
    }
}
