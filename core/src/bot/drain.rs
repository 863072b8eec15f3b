//! The shutdown drain: what a bot stopped for good still does before it
//! says [`Action::Stopped`].
//!
//! The stop itself ([`Bot::halt`]) closes the stream, cancels every queued
//! call, hands out the kit's last state and drops every request in flight
//! whose answer no longer matters ([`Bot::drop_unwanted_requests`]): each
//! is an [`Action::CloseStream`] (drop it; a late report is ignored), a
//! call among them answered [`CallFailure::Cancelled`]. Only a token request
//! (its new pair must be saved) and the revocation asked for are kept. The
//! bot then waits for them, at most [`BotConfig::shutdown_grace_ms`] from
//! the first poll after the stop ([`Action::Wait`] names the deadline), and
//! drops whatever is still in flight when it passes. `Stopped` comes last,
//! once nothing is in flight: a driver's shutdown is its ordinary poll loop.

use super::*;

/// How long a bot stopped for good waits, by default, for a token request
/// or the revocation in flight ([`BotConfig::shutdown_grace_ms`]).
pub const SHUTDOWN_GRACE_MS: u64 = 30_000;

/// The drain of a stop for good: the revocation asked for, how long the
/// drain waits for it or a token request, and when it gives up on them.
/// Keeps: the deadline is fixed at the drain's first poll and moves only
/// for a revocation asked once it has passed (which gets a grace of its
/// own).
#[derive(Debug)]
pub(super) struct Drain {
    /// [`BotConfig::shutdown_grace_ms`].
    grace_ms: u64,
    /// Whether the deadline is set (at the drain's first poll): kept apart
    /// from `until_ms` rather than as an `Option`, it packs with `revoke`.
    started: bool,
    /// When the drain gives up, once `started`.
    until_ms: u64,
    /// [`Bot::shutdown`] asked to revoke; sent once no token request is in
    /// flight.
    pub(super) revoke: bool,
}

impl Drain {
    pub(super) fn new(grace_ms: u64) -> Self {
        Self {
            grace_ms,
            started: false,
            until_ms: 0,
            revoke: false,
        }
    }

    /// When the drain gives up: `now_ms` plus the grace at its first poll,
    /// the same ever after.
    fn until(&mut self, now_ms: u64) -> u64 {
        if !self.started {
            self.started = true;
            self.until_ms = now_ms.saturating_add(self.grace_ms);
        }
        self.until_ms
    }

    /// [`Bot::shutdown`] asked at `now_ms` to revoke: when the grace is
    /// over by then, the revocation gets a grace of its own (from the next
    /// poll).
    pub(super) fn ask_revoke(&mut self, now_ms: u64) {
        self.revoke = true;
        if self.started && self.until_ms <= now_ms {
            self.started = false;
        }
    }
}

impl Bot {
    /// Whether the bot has stopped for good (not waiting for consent).
    pub(super) fn stopped_for_good(&self) -> bool {
        self.stopped
            .as_ref()
            .is_some_and(|s| !s.resumes_with_new_consent())
    }

    /// As the bot stops for good: every request in flight but a token
    /// request and the revocation is dropped (`CloseStream`), a call among
    /// them answered `Cancelled` (its outcome is not known: a chat message
    /// may have been posted).
    pub(super) fn drop_unwanted_requests(&mut self) {
        for request in self.requests.take_unwanted() {
            self.out.push_back(Action::CloseStream {
                id: request.id,
                reason: CloseReason::Stopping,
            });
            if let Purpose::Call(call, _) = request.purpose {
                self.answer(*call, CallResult::Failed(CallFailure::Cancelled));
            }
        }
    }

    /// The drain's next action while the bot is stopped for good and a kept
    /// request is in flight: a request past its own deadline timed out, all
    /// of them dropped once the grace is over, else `Wait` until the
    /// earliest of those. `None` once nothing is in flight (or the stop
    /// resumes with consent): the stop is next.
    pub(super) fn poll_drain(&mut self, now_ms: u64) -> Option<Action> {
        if !self.stopped_for_good() || self.requests.is_empty() {
            return None;
        }
        let until = self.drain.until(now_ms);
        if now_ms >= until {
            for request in self.requests.take_all() {
                self.out.push_back(Action::CloseStream {
                    id: request.id,
                    reason: CloseReason::Stopping,
                });
            }
            return self.out.pop_front();
        }
        self.expire_requests(now_ms);
        if let Some(action) = self.out.pop_front() {
            return Some(action);
        }
        let earliest = self.requests.deadlines().fold(until, u64::min);
        (!self.requests.is_empty()).then_some(Action::Wait {
            until_ms: Some(earliest),
        })
    }
}
