//! App timers hosted by the bot, folded into its `Wait`.

use super::*;

impl Bot {
    /// Fires [`Action::Timer`] with `tag` once at `at_ms` (unix ms). The
    /// deadline is folded into [`Action::Wait`]: no timer of your own is
    /// needed. Setting a tag again replaces its timer.
    pub fn schedule(&mut self, at_ms: u64, tag: &str) -> Result<(), TimerError> {
        self.timers.schedule(at_ms, tag)
    }

    /// Fires [`Action::Timer`] with `tag` every `period_ms`, first at
    /// `first_at_ms` (see [`Timer`] for the catch-up rule).
    pub fn every(&mut self, period_ms: u64, tag: &str, first_at_ms: u64) -> Result<(), TimerError> {
        self.timers.every(period_ms, tag, first_at_ms)
    }

    /// Sets a timer built with [`Timer`], e.g. one that fires only while the
    /// stream is connected (`Timer::every(…).while_connected()`).
    pub fn set_timer(&mut self, tag: &str, timer: Timer) -> Result<(), TimerError> {
        self.timers.set(tag, timer)
    }

    /// Cancels the timer `tag`; `false` when there was none.
    pub fn cancel_timer(&mut self, tag: &str) -> bool {
        self.timers.cancel(tag)
    }
}
