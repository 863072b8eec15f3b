//! Notices: their one-line text and level, and the bookkeeping that keeps
//! the ones about failures bounded (a service that cannot be reached, calls
//! given up on, a daily quota reached) so a storm is a few lines, never
//! silence.

use super::*;

use crate::proto::scope::Permission;
use crate::proto::time::utc;

/// While the service cannot be reached, at most one
/// [`Notice::Unreachable`] this often.
pub const UNREACHABLE_NOTICE_EVERY_MS: u64 = 30_000;

/// Calls given up on for the same endpoint and reason are told at most
/// this often: the first at once, the rest counted into one
/// [`Notice::GaveUp`].
pub const GAVE_UP_NOTICE_EVERY_MS: u64 = 5_000;

/// Why the bot asks for a connection to be closed or a request dropped
/// ([`Action::CloseStream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CloseReason {
    /// The stream ended: an end frame came, or the loop is done with it
    /// (a new token pair is needed first).
    Ended,
    /// The stream's heartbeat watchdog: no byte for `watchdog_ms`.
    Silent,
    /// No answer within the request's `timeout_ms` (or the stream's connect
    /// timeout): the bot counted it as failed, and retries or answers the
    /// call itself.
    TimedOut,
    /// The bot stops (for good, or until a new consent) and no longer wants
    /// the answer.
    Stopping,
}

impl CloseReason {
    /// `ended`, `silent`, `timed_out`, `stopping`.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::Ended => "ended",
            CloseReason::Silent => "silent",
            CloseReason::TimedOut => "timed_out",
            CloseReason::Stopping => "stopping",
        }
    }
}

/// How a request failed to reach the service (see [`Notice::Unreachable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unreached {
    /// The request never left this machine (connection refused, DNS, TLS,
    /// connect timeout): [`Bot::on_not_sent`].
    NotSent,
    /// No answer came (the connection failed after sending, or was reset):
    /// [`Bot::on_transport_error`].
    NoResponse,
    /// No answer came in time (a request past its `timeout_ms`, or the
    /// stream's connect timeout: [`CloseReason::TimedOut`]).
    TimedOut,
}

impl Unreached {
    /// `not_sent`, `no_response`, `timed_out`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unreached::NotSent => "not_sent",
            Unreached::NoResponse => "no_response",
            Unreached::TimedOut => "timed_out",
        }
    }
}

impl fmt::Display for Unreached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unreached::NotSent => "connection failed, not sent",
            Unreached::NoResponse => "no response",
            Unreached::TimedOut => "timed out",
        })
    }
}

/// Why an app call was given up on (see [`Notice::GaveUp`]); the
/// [`CallFailure`] of its `Done`, grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GiveUpReason {
    /// Cancelled: chat still queued when its broadcast ended (`LIVE_ENDED`),
    /// or the bot stopped ([`CallFailure::Cancelled`],
    /// [`CallFailure::Stopped`]).
    Cancelled,
    /// A daily quota holds the call's permission back
    /// ([`CallFailure::QuotaBlocked`]).
    QuotaBlocked,
    /// The service refused it ([`CallFailure::Problem`]).
    Refused,
    /// The call queue was full when it was made ([`CallFailure::QueueFull`]):
    /// replies came faster than the service's limits let them out.
    QueueFull,
    /// No answer from the service ([`CallFailure::Transport`]).
    Transport,
    /// The answer could not be read ([`CallFailure::InvalidBody`],
    /// [`CallFailure::Pager`]).
    InvalidAnswer,
}

impl GiveUpReason {
    /// The reason of a failed call.
    pub fn of(failure: &CallFailure) -> GiveUpReason {
        match failure {
            CallFailure::Cancelled | CallFailure::Stopped(_) => GiveUpReason::Cancelled,
            CallFailure::QuotaBlocked { .. } => GiveUpReason::QuotaBlocked,
            CallFailure::Problem(_) => GiveUpReason::Refused,
            CallFailure::QueueFull { .. } => GiveUpReason::QueueFull,
            CallFailure::Transport => GiveUpReason::Transport,
            CallFailure::InvalidBody(_) | CallFailure::Pager(_) => GiveUpReason::InvalidAnswer,
        }
    }

    /// `cancelled`, `quota_blocked`, `refused`, `queue_full`, `transport`,
    /// `invalid_answer`.
    pub fn as_str(self) -> &'static str {
        match self {
            GiveUpReason::Cancelled => "cancelled",
            GiveUpReason::QuotaBlocked => "quota_blocked",
            GiveUpReason::Refused => "refused",
            GiveUpReason::QueueFull => "queue_full",
            GiveUpReason::Transport => "transport",
            GiveUpReason::InvalidAnswer => "invalid_answer",
        }
    }
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GiveUpReason::Cancelled => "cancelled (its broadcast ended, or the bot stopped)",
            GiveUpReason::QuotaBlocked => "held back by the daily quota",
            GiveUpReason::Refused => "refused by the service",
            GiveUpReason::QueueFull => {
                "the call queue was full (replies came faster than the chat limit lets them out)"
            }
            GiveUpReason::Transport => "no response from the service",
            GiveUpReason::InvalidAnswer => "the service's answer could not be read",
        })
    }
}

impl Notice {
    /// Whether a default log setup should show it (`warn`): something was
    /// lost, refused or cannot be reached. The others (`info`) are the bot
    /// handling things as it should (waiting for a broadcast, refreshing a
    /// token, a command someone may not run).
    ///
    /// ```
    /// use onair::{CallId, Notice};
    /// assert!(!Notice::CallHeld { call: CallId(1) }.is_warning());
    /// assert!(Notice::ReconnectStormBraked { until_ms: 5 }.is_warning());
    /// ```
    pub fn is_warning(&self) -> bool {
        match self {
            Notice::FrameSkipped(_)
            | Notice::ReconnectStormBraked { .. }
            | Notice::Unreachable { .. }
            | Notice::GaveUp { .. }
            | Notice::RepliesDropped { .. }
            | Notice::DailyQuotaReached { .. } => true,
            Notice::Problem { problem, .. } => !matches!(
                problem.kind,
                ProblemKind::Ok
                    | ProblemKind::NotOnAir
                    | ProblemKind::Unauthorized
                    | ProblemKind::ChatRateLimited
                    | ProblemKind::QuotaPerSecond
                    // Told as DailyQuotaReached, once per block.
                    | ProblemKind::QuotaDaily
            ),
            Notice::UnknownEvent { .. }
            | Notice::CallHeld { .. }
            | Notice::CommandRefused(_)
            | Notice::Reachable { .. } => false,
        }
    }

    /// `"warn"` or `"info"` ([`Notice::is_warning`]): the level to log its
    /// [`Display`](fmt::Display) line at.
    pub fn level(&self) -> &'static str {
        if self.is_warning() {
            "warn"
        } else {
            "info"
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::FrameSkipped(e) => write!(f, "stream frame skipped: {e}"),
            Notice::UnknownEvent { event, .. } => {
                write!(f, "unknown stream event {event:?} (skipped)")
            }
            Notice::Problem { endpoint, problem } => write!(f, "{endpoint}: {problem}"),
            Notice::CommandRefused(r) => write!(
                f,
                "{} ({}) may not run {} (allowed: {})",
                r.user.id,
                r.role.as_str(),
                r.name,
                r.needed.as_str()
            ),
            Notice::CallHeld { call } => {
                write!(f, "{call} held until the DJ authorizes the bot")
            }
            Notice::ReconnectStormBraked { until_ms } => write!(
                f,
                "the event stream keeps ending with RECONNECT at once: \
                 the next connect waits until {}",
                utc(*until_ms)
            ),
            Notice::Unreachable {
                endpoint,
                failure,
                failures,
                since_ms,
            } => {
                write!(f, "the service cannot be reached ({endpoint}: {failure})")?;
                if *failures > 1 {
                    write!(f, "; {failures} failed requests since {}", utc(*since_ms))?;
                }
                f.write_str("; retrying")
            }
            Notice::Reachable { failures, since_ms } => write!(
                f,
                "the service is reachable again (after {failures} failed request{} since {})",
                if *failures == 1 { "" } else { "s" },
                utc(*since_ms)
            ),
            Notice::GaveUp {
                endpoint,
                reason,
                count,
            } => {
                let what = match endpoint {
                    Endpoint::Chat => "chat message",
                    _ => "call",
                };
                let plural = if *count == 1 { "" } else { "s" };
                if *endpoint == Endpoint::Chat {
                    write!(f, "gave up {count} {what}{plural}: {reason}")
                } else {
                    write!(f, "gave up {count} {endpoint} {what}{plural}: {reason}")
                }
            }
            Notice::RepliesDropped {
                kind,
                people,
                reason,
            } => {
                let plural = if *people == 1 { "y" } else { "ies" };
                write!(f, "dropped {people} {kind} repl{plural}: {reason}")
            }
            Notice::DailyQuotaReached { scope, until_ms } => match scope {
                Some(permission) => write!(
                    f,
                    "daily quota reached for {permission}: calls needing it are held back \
                     until {}",
                    utc(*until_ms)
                ),
                None => write!(
                    f,
                    "the app's daily call quota is used up: every call is held back until {} \
                     (the event stream goes on)",
                    utc(*until_ms)
                ),
            },
        }
    }
}

/// What the bot tells of by itself, each at its bounded rate: whether the
/// service can be reached, the calls given up on, the daily-quota blocks.
/// Keeps: each at its bounded rate; a quota block is told once, and every
/// call given up on is told before the bot stops.
#[derive(Debug, Default)]
pub(super) struct Notices {
    /// Whether the service can be reached (`Notice::Unreachable`).
    pub(super) reach: Reach,
    /// Calls given up on, told at a bounded rate (`Notice::GaveUp`).
    pub(super) give_ups: GiveUps,
    /// Daily-quota blocks told (`Notice::DailyQuotaReached`).
    pub(super) quota: QuotaAnnounced,
}

/// One episode of a service that cannot be reached.
#[derive(Debug, Clone)]
struct Episode {
    since_ms: u64,
    failures: u64,
    /// `failures` when the last notice was given.
    told: u64,
    told_at_ms: u64,
    last: (Endpoint, Unreached),
}

/// Whether the service can be reached: the first failure is told at once,
/// then at most one notice every [`UNREACHABLE_NOTICE_EVERY_MS`] while
/// failures go on; the first answer ends the episode.
#[derive(Debug, Clone, Default)]
pub(super) struct Reach {
    episode: Option<Episode>,
}

impl Reach {
    fn notice(e: &Episode) -> Notice {
        Notice::Unreachable {
            endpoint: e.last.0,
            failure: e.last.1,
            failures: e.failures,
            since_ms: e.since_ms,
        }
    }

    /// A request did not reach the service.
    pub(super) fn failed(
        &mut self,
        endpoint: Endpoint,
        how: Unreached,
        now_ms: u64,
    ) -> Option<Notice> {
        match &mut self.episode {
            None => {
                let e = Episode {
                    since_ms: now_ms,
                    failures: 1,
                    told: 1,
                    told_at_ms: now_ms,
                    last: (endpoint, how),
                };
                let notice = Self::notice(&e);
                self.episode = Some(e);
                Some(notice)
            }
            Some(e) => {
                e.failures += 1;
                e.last = (endpoint, how);
                None
            }
        }
    }

    /// The service answered: the episode, if any, ends.
    pub(super) fn reached(&mut self) -> Option<Notice> {
        self.episode.take().map(|e| Notice::Reachable {
            failures: e.failures,
            since_ms: e.since_ms,
        })
    }

    /// The next notice of an episode, once failures came since the last and
    /// its interval has passed.
    pub(super) fn due(&mut self, now_ms: u64) -> Option<Notice> {
        let e = self.episode.as_mut()?;
        if e.failures > e.told && now_ms >= e.told_at_ms.saturating_add(UNREACHABLE_NOTICE_EVERY_MS)
        {
            e.told = e.failures;
            e.told_at_ms = now_ms;
            return Some(Self::notice(e));
        }
        None
    }

    pub(super) fn deadline(&self) -> Option<u64> {
        let e = self.episode.as_ref()?;
        (e.failures > e.told).then(|| e.told_at_ms.saturating_add(UNREACHABLE_NOTICE_EVERY_MS))
    }
}

#[derive(Debug, Clone)]
struct GaveUpEntry {
    endpoint: Endpoint,
    reason: GiveUpReason,
    told_at_ms: u64,
    pending: u64,
}

/// Calls given up on, told per (endpoint, reason): the first at once, the
/// rest counted and told in one notice at most every
/// [`GAVE_UP_NOTICE_EVERY_MS`].
#[derive(Debug, Clone, Default)]
pub(super) struct GiveUps {
    entries: Vec<GaveUpEntry>,
}

impl GiveUps {
    pub(super) fn record(
        &mut self,
        endpoint: Endpoint,
        reason: GiveUpReason,
        now_ms: u64,
    ) -> Option<Notice> {
        let told = |endpoint, reason, count| Notice::GaveUp {
            endpoint,
            reason,
            count,
        };
        match self
            .entries
            .iter_mut()
            .find(|e| e.endpoint == endpoint && e.reason == reason)
        {
            Some(e)
                if e.pending == 0
                    && now_ms >= e.told_at_ms.saturating_add(GAVE_UP_NOTICE_EVERY_MS) =>
            {
                e.told_at_ms = now_ms;
                Some(told(endpoint, reason, 1))
            }
            Some(e) => {
                e.pending += 1;
                None
            }
            None => {
                self.entries.push(GaveUpEntry {
                    endpoint,
                    reason,
                    told_at_ms: now_ms,
                    pending: 0,
                });
                Some(told(endpoint, reason, 1))
            }
        }
    }

    /// The count not yet told of one endpoint and reason whose interval has
    /// passed.
    pub(super) fn due(&mut self, now_ms: u64) -> Option<Notice> {
        self.tell(now_ms, |e| {
            now_ms >= e.told_at_ms.saturating_add(GAVE_UP_NOTICE_EVERY_MS)
        })
    }

    /// The count not yet told of one endpoint and reason, at once: the bot
    /// has stopped, and no later notice would come.
    pub(super) fn flush(&mut self, now_ms: u64) -> Option<Notice> {
        self.tell(now_ms, |_| true)
    }

    fn tell(&mut self, now_ms: u64, ready: impl Fn(&GaveUpEntry) -> bool) -> Option<Notice> {
        let e = self
            .entries
            .iter_mut()
            .find(|e| e.pending > 0 && ready(e))?;
        let count = std::mem::take(&mut e.pending);
        e.told_at_ms = now_ms;
        Some(Notice::GaveUp {
            endpoint: e.endpoint,
            reason: e.reason,
            count,
        })
    }

    pub(super) fn deadline(&self) -> Option<u64> {
        self.entries
            .iter()
            .filter(|e| e.pending > 0)
            .map(|e| e.told_at_ms.saturating_add(GAVE_UP_NOTICE_EVERY_MS))
            .min()
    }
}

/// The daily-quota blocks already announced (one notice per block).
#[derive(Debug, Clone, Default)]
pub(super) struct QuotaAnnounced {
    told: Vec<(Option<Permission>, u64)>,
}

impl QuotaAnnounced {
    /// Notices for the blocks in force at `now_ms` not yet told.
    pub(super) fn news(&mut self, quota: &QuotaTracker, now_ms: u64) -> Vec<Notice> {
        self.told.retain(|(_, until)| *until > now_ms);
        let mut news = Vec::new();
        for block in quota.blocks(now_ms) {
            match self
                .told
                .iter_mut()
                .find(|(scope, _)| *scope == block.scope)
            {
                Some((_, until)) => *until = (*until).max(block.until_ms),
                None => {
                    self.told.push((block.scope.clone(), block.until_ms));
                    news.push(Notice::DailyQuotaReached {
                        scope: block.scope,
                        until_ms: block.until_ms,
                    });
                }
            }
        }
        news
    }
}

impl Bot {
    /// A failed app call's `Done` was polled: counted by reason, and told
    /// ([`Notice::GaveUp`], at a bounded rate).
    pub(super) fn gave_up(&mut self, call: CallId, failure: &CallFailure, now_ms: u64) {
        let Some(endpoint) = self.calls.take_failed(call) else {
            return;
        };
        let reason = GiveUpReason::of(failure);
        let counters = &mut self.counters;
        match reason {
            GiveUpReason::Cancelled => counters.gave_up_cancelled += 1,
            GiveUpReason::QuotaBlocked => counters.gave_up_quota_blocked += 1,
            GiveUpReason::Refused => counters.gave_up_refused += 1,
            GiveUpReason::QueueFull => counters.gave_up_queue_full += 1,
            GiveUpReason::Transport => counters.gave_up_transport += 1,
            GiveUpReason::InvalidAnswer => counters.gave_up_invalid_answer += 1,
        }
        if let Some(notice) = self.notices.give_ups.record(endpoint, reason, now_ms) {
            self.out.push_front(Action::Notice(notice));
        }
    }

    /// Notices for daily-quota blocks not yet told.
    pub(super) fn announce_quota(&mut self, now_ms: u64) {
        for notice in self.notices.quota.news(&self.quota, now_ms) {
            self.out.push_back(Action::Notice(notice));
        }
    }

    /// A request did not reach the service.
    pub(super) fn unreached(&mut self, endpoint: Endpoint, how: Unreached, now_ms: u64) {
        self.counters.unreached += 1;
        if let Some(notice) = self.notices.reach.failed(endpoint, how, now_ms) {
            self.out.push_back(Action::Notice(notice));
        }
    }

    /// The service answered (any status).
    pub(super) fn reached(&mut self) {
        if let Some(notice) = self.notices.reach.reached() {
            self.out.push_back(Action::Notice(notice));
        }
    }
}
