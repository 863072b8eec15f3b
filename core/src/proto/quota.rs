//! The call quotas of spec 8: a [`QuotaTracker`] that says when the next call
//! needing a permission may go, from the classified responses (the headers
//! themselves are read by [`crate::proto::ratelimit`]).
//!
//! ```
//! use onair::proto::endpoint::Endpoint;
//! use onair::proto::problem::classify;
//! use onair::proto::quota::QuotaTracker;
//! use onair::proto::scope::Permission;
//!
//! let mut tracker = QuotaTracker::new(42);
//! let now = 1_700_000_000_000;
//! // A daily 429 for fans.read only: that permission waits, others go.
//! let p = classify(Endpoint::Fans, 429,
//!     &[("Retry-After", "3600"), ("x-ratelimit-daily-scope", "fans.read")], b"");
//! tracker.on_response(Endpoint::Fans, &p, now);
//! assert_eq!(tracker.next_call_at(&Permission::FansRead, now), now + 3_600_000);
//! assert_eq!(tracker.next_call_at(&Permission::LiveRead, now), now);
//! ```

use crate::proto::backoff::Backoff;
use crate::proto::endpoint::Endpoint;
use crate::proto::problem::{Problem, ProblemKind};
use crate::proto::ratelimit::{QuotaHeaders, MAX_RETRY_AFTER_MS};
use crate::proto::scope::Permission;

/// A daily-quota block: calls needing `scope` (or every call, when `None`)
/// wait until `until_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The blocked permission; `None` means the whole app.
    pub scope: Option<Permission>,
    /// When the block ends (unix ms).
    pub until_ms: u64,
}

/// Fed every response and the time, answers when the next call needing a
/// permission may go (spec 8).
///
/// - **Per-second pacing**: a response with `x-ratelimit-remaining: 0` holds
///   the next call for one token's refill time (`1000 / replenish-rate` ms,
///   1 s when the rate is unknown).
/// - **Per-second 429**: exponential backoff with full jitter
///   ([`Backoff`]), reset by the next response that is not one.
/// - **Daily 429**: a block until `Retry-After` for the permission named by
///   `x-ratelimit-daily-scope`, or for the whole app without that header.
/// - **Chat's broadcast-wide limit** (429 `OAPI_MNGR_0302`): its own short
///   wait for `chat.send` only, 1 s plus a jitter growing to 5 s.
///
/// The event stream and the token endpoints are never paced by it: the
/// stream path has no call quota (spec 8 rule 4).
#[derive(Debug, Clone)]
pub struct QuotaTracker {
    paced_until_ms: u64,
    per_second: Backoff,
    app_blocked_until_ms: u64,
    blocked: Vec<(Permission, u64)>,
    chat_until_ms: u64,
    chat: Backoff,
    last: QuotaHeaders,
}

impl QuotaTracker {
    /// The wait after a daily 429 that gave no usable time at all.
    pub const DAILY_UNKNOWN_MS: u64 = 60_000;
    /// The least wait after a chat-limit 429.
    pub const CHAT_LIMIT_MIN_MS: u64 = 1_000;
    /// At most this many permission blocks are kept (the earliest to end is
    /// dropped first), so junk scope headers cannot grow memory.
    pub const MAX_BLOCKS: usize = 16;

    /// A tracker with nothing blocked; `seed` fixes its jitter.
    pub fn new(seed: u64) -> Self {
        Self {
            paced_until_ms: 0,
            per_second: Backoff::new(seed),
            app_blocked_until_ms: 0,
            blocked: Vec::new(),
            chat_until_ms: 0,
            chat: Backoff::with_limits(1_000, 4_000, seed ^ 0xC4A7_0000_0000_0302),
            last: QuotaHeaders::default(),
        }
    }

    /// Records the classified response of one call to `endpoint` at `now_ms`.
    pub fn on_response(&mut self, endpoint: Endpoint, problem: &Problem, now_ms: u64) {
        if endpoint == Endpoint::Events || endpoint.is_token() {
            return;
        }
        self.blocked.retain(|(_, until)| *until > now_ms);
        let quota = &problem.quota;
        if quota.has_counters() {
            self.last = quota.clone();
        }
        match problem.kind {
            ProblemKind::QuotaPerSecond => {
                let wait = self.per_second.next_delay_ms();
                self.paced_until_ms = self.paced_until_ms.max(now_ms.saturating_add(wait));
                return;
            }
            ProblemKind::QuotaDaily => {
                let until = match (quota.retry_after, quota.daily_reset_s) {
                    (Some(retry), _) => retry.until_ms(now_ms),
                    (None, Some(reset)) if reset.saturating_mul(1000) > now_ms => {
                        reset.saturating_mul(1000).min(now_ms + MAX_RETRY_AFTER_MS)
                    }
                    _ => now_ms.saturating_add(Self::DAILY_UNKNOWN_MS),
                };
                self.block(quota.daily_scope.clone(), until);
            }
            ProblemKind::ChatRateLimited => {
                let wait = Self::CHAT_LIMIT_MIN_MS + self.chat.next_delay_ms();
                self.chat_until_ms = self.chat_until_ms.max(now_ms.saturating_add(wait));
            }
            _ => {
                if endpoint == Endpoint::Chat {
                    self.chat.reset();
                }
            }
        }
        self.per_second.reset();
        if quota.remaining == Some(0) {
            let wait = match quota.replenish_rate {
                Some(rate) if rate > 0 => 1000u64.div_ceil(rate),
                _ => 1000,
            };
            self.paced_until_ms = self.paced_until_ms.max(now_ms.saturating_add(wait));
        }
    }

    fn block(&mut self, scope: Option<Permission>, until_ms: u64) {
        let Some(permission) = scope else {
            self.app_blocked_until_ms = self.app_blocked_until_ms.max(until_ms);
            return;
        };
        if let Some(entry) = self.blocked.iter_mut().find(|(p, _)| *p == permission) {
            entry.1 = entry.1.max(until_ms);
            return;
        }
        if self.blocked.len() >= Self::MAX_BLOCKS {
            let earliest = self
                .blocked
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, until))| *until)
                .map(|(i, _)| i);
            if let Some(i) = earliest {
                self.blocked.swap_remove(i);
            }
        }
        self.blocked.push((permission, until_ms));
    }

    /// When the next call needing `permission` may go: `now_ms` when it may go
    /// now, otherwise the end of the longest wait that applies.
    pub fn next_call_at(&self, permission: &Permission, now_ms: u64) -> u64 {
        let own = self
            .blocked
            .iter()
            .filter(|(p, _)| p == permission)
            .map(|(_, until)| *until)
            .max()
            .unwrap_or(0);
        now_ms
            .max(self.paced_until_ms)
            .max(self.app_blocked_until_ms)
            .max(own)
    }

    /// When the next call to `endpoint` may go. The event stream and the
    /// token endpoints always may; chat also waits out its own limit.
    pub fn next_call_at_endpoint(&self, endpoint: Endpoint, now_ms: u64) -> u64 {
        let Some(permission) = endpoint.permission() else {
            return now_ms;
        };
        let at = self.next_call_at(&permission, now_ms);
        if endpoint == Endpoint::Chat {
            at.max(self.chat_until_ms)
        } else {
            at
        }
    }

    /// The daily blocks still in force at `now_ms` (the whole app first).
    pub fn blocks(&self, now_ms: u64) -> Vec<Block> {
        let app = (self.app_blocked_until_ms > now_ms).then_some(Block {
            scope: None,
            until_ms: self.app_blocked_until_ms,
        });
        app.into_iter()
            .chain(
                self.blocked
                    .iter()
                    .filter(|(_, until)| *until > now_ms)
                    .map(|(p, until)| Block {
                        scope: Some(p.clone()),
                        until_ms: *until,
                    }),
            )
            .collect()
    }

    /// The quota headers of the last response that had any counters.
    pub fn snapshot(&self) -> &QuotaHeaders {
        &self.last
    }
}

#[cfg(test)]
mod tests;
