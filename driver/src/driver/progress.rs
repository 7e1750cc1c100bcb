//! A self-redrawing progress line on stderr, drawn only when stderr is a terminal.

use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// Moves to the start of the line and erases it.
const ERASE_LINE: &str = "\r\x1b[2K";

/// The progress line, and a counter worker threads add their done work to.
pub(crate) struct Progress {
    enabled: bool,
    done: AtomicU64,
}

impl Progress {
    /// A progress line that draws only if stderr is a terminal.
    pub(crate) fn new() -> Self {
        Progress {
            enabled: io::stderr().is_terminal(),
            done: AtomicU64::new(0),
        }
    }

    /// Whether anything is drawn.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Sets the work counter back to zero.
    pub(crate) fn restart(&self) {
        self.done.store(0, Ordering::Relaxed);
    }

    /// Adds `n` units of done work (a no-op when nothing is drawn).
    pub(crate) fn add(&self, n: u64) {
        if self.enabled {
            // Relaxed: only a display figure.
            self.done.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Draws `label: done/total (p%)` from the work counter.
    pub(crate) fn show_count(&self, label: &str, total: u64) {
        if self.enabled {
            let done = self.done.load(Ordering::Relaxed).min(total);
            let percent = done as f64 * 100.0 / total.max(1) as f64;
            self.show(format_args!("{label}: {done}/{total} ({percent:.0}%)"));
        }
    }

    /// Replaces the line with `line`.
    pub(crate) fn show(&self, line: fmt::Arguments<'_>) {
        if self.enabled {
            // A progress line that cannot be drawn is not worth failing a run for.
            let mut stderr = io::stderr().lock();
            let _ = write!(stderr, "{ERASE_LINE}{line}");
            let _ = stderr.flush();
        }
    }

    /// Erases the line.
    pub(crate) fn clear(&self) {
        if self.enabled {
            let mut stderr = io::stderr().lock();
            let _ = write!(stderr, "{ERASE_LINE}");
            let _ = stderr.flush();
        }
    }
}
