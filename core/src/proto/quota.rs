//! The call quotas of spec 8: a [`QuotaTracker`] that says when the next call
//! needing a permission may go, from the classified responses (the headers
//! themselves are read by [`crate::proto::ratelimit`]).

use serde::{Deserialize, Serialize};

use crate::proto::backoff::Backoff;
use crate::proto::endpoint::Endpoint;
use crate::proto::problem::{Problem, ProblemKind};
use crate::proto::ratelimit::{QuotaHeaders, MAX_RETRY_AFTER_MS};
use crate::proto::scope::Permission;

/// A daily-quota block: calls needing `scope` (or every call, when `None`)
/// wait until `until_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    /// The blocked permission; `None` means the whole app.
    pub scope: Option<Permission>,
    /// When the block ends (unix ms).
    pub until_ms: u64,
}

/// The app's daily quota as one bot knows it. The spec counts it for the
/// whole app across all its integrations (spec 8 rule 3), so what one bot
/// learns holds for every bot of the app: read it with
/// [`Bot::daily_quota`](crate::Bot::daily_quota) and give it to the others
/// with [`Bot::share_daily_quota`](crate::Bot::share_daily_quota). Its JSON
/// form is what a shared store keeps.
///
/// ```
/// use onair::bot::{Block, DailyQuota};
/// use onair::Permission;
/// let learned = DailyQuota {
///     remaining: Some(0),
///     reset_ms: Some(1_700_003_600_000),
///     blocks: vec![Block { scope: Some(Permission::ListenersRead), until_ms: 1_700_003_600_000 }],
/// };
/// let json = serde_json::to_string(&learned)?;
/// assert_eq!(json, r#"{"remaining":0,"resetMs":1700003600000,"blocks":[{"scope":"listeners.read","untilMs":1700003600000}]}"#);
/// assert_eq!(serde_json::from_str::<DailyQuota>(&json)?, learned);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DailyQuota {
    /// Calls the app has left today (`x-ratelimit-daily-remaining`). At 0
    /// every call waits for the reset.
    #[serde(default)]
    pub remaining: Option<u64>,
    /// The next reset, unix ms (`x-ratelimit-daily-reset`).
    #[serde(default)]
    pub reset_ms: Option<u64>,
    /// Daily blocks in force (after a daily 429): the whole app, or one
    /// permission.
    #[serde(default)]
    pub blocks: Vec<Block>,
}

impl DailyQuota {
    /// Reads a daily quota's JSON form (what a shared store keeps): one
    /// object, every key optional; blank text is nothing known yet. Why it
    /// was refused otherwise (never a value of the input).
    ///
    /// ```
    /// use onair::bot::DailyQuota;
    /// let q = DailyQuota::from_json(r#"{"remaining":12,"resetMs":2000}"#)?;
    /// assert_eq!(q.remaining, Some(12));
    /// assert_eq!(DailyQuota::from_json(" ")?, DailyQuota::default());
    /// assert!(DailyQuota::from_json("[12,2000,[]]").is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn from_json(text: &str) -> Result<DailyQuota, String> {
        if text.trim_ascii().is_empty() {
            return Ok(DailyQuota::default());
        }
        let fault = |e: serde_json::Error| crate::wire::JsonFault::of(text.as_bytes(), &e).message;
        match serde_json::from_str::<serde_json::Value>(text).map_err(fault)? {
            v @ serde_json::Value::Object(_) => serde_json::from_value(v).map_err(|e| {
                // The value is JSON already: serde's words, without values.
                crate::wire::without_values(&e.to_string())
            }),
            _ => Err("a daily quota is a JSON object".to_owned()),
        }
    }

    /// Folds what another bot of the app `learned` into this view of the
    /// app's daily quota (spec 8 rule 3: the quota is the app's): the later
    /// reset wins with its count, the same reset keeps the lower count,
    /// blocks are merged by scope (the later end wins), and a reset or block
    /// that has passed by `now_ms` is dropped. `true` when this view
    /// changed. A store shared by many bots keeps the merge of what each
    /// learned, and gives it back to each
    /// ([`Bot::share_daily_quota`](crate::Bot::share_daily_quota)).
    ///
    /// ```
    /// use onair::bot::DailyQuota;
    /// let mut app = DailyQuota { remaining: Some(40), reset_ms: Some(2_000), blocks: vec![] };
    /// let learned = DailyQuota { remaining: Some(12), reset_ms: Some(2_000), blocks: vec![] };
    /// assert!(app.merge(&learned, 1_000));
    /// assert_eq!(app.remaining, Some(12)); // the same day: the lower count
    /// assert!(!app.merge(&learned, 1_000));
    /// assert!(app.merge(&DailyQuota::default(), 2_000)); // the reset has come
    /// assert_eq!(app, DailyQuota::default());
    /// ```
    pub fn merge(&mut self, learned: &DailyQuota, now_ms: u64) -> bool {
        let before = self.clone();
        match (learned.reset_ms, self.reset_ms) {
            (Some(new), Some(old)) if new > old => {
                self.reset_ms = Some(new);
                self.remaining = learned.remaining;
            }
            (Some(new), Some(old)) if new == old => {
                self.remaining = match (self.remaining, learned.remaining) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            (Some(new), None) => {
                self.reset_ms = Some(new);
                self.remaining = learned.remaining;
            }
            _ => {}
        }
        if self.reset_ms.is_some_and(|r| r <= now_ms) {
            self.reset_ms = None;
            self.remaining = None;
        }
        for block in &learned.blocks {
            match self.blocks.iter_mut().find(|b| b.scope == block.scope) {
                Some(b) => b.until_ms = b.until_ms.max(block.until_ms),
                None => self.blocks.push(block.clone()),
            }
        }
        self.blocks.retain(|b| b.until_ms > now_ms);
        *self != before
    }
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
/// - **Daily calls used up** (`x-ratelimit-daily-remaining: 0` with a
///   reset time): every call waits for the reset instead of earning a 429.
/// - **Shared**: the same two rules applied to what the app's other bots
///   learned ([`QuotaTracker::share`]).
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
        if let (Some(0), Some(reset_s)) = (quota.daily_remaining, quota.daily_reset_s) {
            self.used_up_until(reset_s.saturating_mul(1000), now_ms);
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

    /// The app's daily calls are used up until `reset_ms`.
    fn used_up_until(&mut self, reset_ms: u64, now_ms: u64) {
        if reset_ms > now_ms {
            self.block(
                None,
                reset_ms.min(now_ms.saturating_add(MAX_RETRY_AFTER_MS)),
            );
        }
    }

    /// Takes what another bot of the app learned of the daily quota: its
    /// blocks, and the reset when it found the day's calls used up. A block
    /// ends no later than a day from `now_ms` (a bad store cannot hold the
    /// bot forever); ended blocks change nothing.
    pub fn share(&mut self, shared: &DailyQuota, now_ms: u64) {
        self.blocked.retain(|(_, until)| *until > now_ms);
        for block in shared.blocks.iter().take(Self::MAX_BLOCKS) {
            if block.until_ms > now_ms {
                let until = block
                    .until_ms
                    .min(now_ms.saturating_add(MAX_RETRY_AFTER_MS));
                self.block(block.scope.clone(), until);
            }
        }
        if let (Some(0), Some(reset_ms)) = (shared.remaining, shared.reset_ms) {
            self.used_up_until(reset_ms, now_ms);
        }
    }

    /// What this tracker knows of the app's daily quota at `now_ms`, to
    /// share with the app's other bots: the last daily counters seen (only
    /// while their reset is ahead) and the blocks in force.
    pub fn daily(&self, now_ms: u64) -> DailyQuota {
        let reset_ms = self
            .last
            .daily_reset_s
            .map(|s| s.saturating_mul(1000))
            .filter(|&at| at > now_ms);
        DailyQuota {
            remaining: reset_ms.and(self.last.daily_remaining),
            reset_ms,
            blocks: self.blocks(now_ms),
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
    #[cfg(test)]
    pub(crate) fn snapshot(&self) -> &QuotaHeaders {
        &self.last
    }
}

#[cfg(test)]
mod tests;

/// The examples once in the docs of this crate-private module, kept as tests.
#[cfg(test)]
mod examples {
    #[test]
    fn module() {
        use super::QuotaTracker;
        use crate::api::classify;
        use crate::{Endpoint, Permission};

        let mut tracker = QuotaTracker::new(42);
        let now = 1_700_000_000_000;
        // A daily 429 for fans.read only: that permission waits, others go.
        let p = classify(
            Endpoint::Fans,
            429,
            [
                ("Retry-After", "3600"),
                ("x-ratelimit-daily-scope", "fans.read"),
            ],
            b"",
        );
        tracker.on_response(Endpoint::Fans, &p, now);
        assert_eq!(
            tracker.next_call_at(&Permission::FansRead, now),
            now + 3_600_000
        );
        assert_eq!(tracker.next_call_at(&Permission::LiveRead, now), now);
    }

    #[test]
    fn share() {
        use super::{Block, DailyQuota, QuotaTracker};
        use crate::Permission;

        let now = 1_700_000_000_000;
        let mut tracker = QuotaTracker::new(1);
        tracker.share(
            &DailyQuota {
                blocks: vec![Block {
                    scope: Some(Permission::ListenersRead),
                    until_ms: now + 60_000,
                }],
                ..DailyQuota::default()
            },
            now,
        );
        assert_eq!(
            tracker.next_call_at(&Permission::ListenersRead, now),
            now + 60_000
        );
        assert_eq!(tracker.next_call_at(&Permission::ChatSend, now), now);
    }
}
