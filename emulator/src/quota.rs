//! Call quotas (spec 8): a per-second token bucket per integration and a
//! daily count per app and per permission, reset at midnight UTC of emulator
//! time. The event stream is not counted.

use std::collections::HashMap;

use serde::Deserialize;

use crate::clock::next_midnight_ms;
use crate::scope::Perm;

/// The quota settings (control `POST /_emulator/quota`).
#[derive(Debug, Clone)]
pub struct QuotaConfig {
    /// Per-second tokens refilled per second.
    pub replenish_rate: u64,
    /// Per-second bucket size.
    pub burst_capacity: u64,
    /// Daily calls per app.
    pub daily_limit: u64,
    /// Daily calls per app and permission, where limited.
    pub per_permission: HashMap<Perm, u64>,
    /// Chat messages per second per broadcast (429 `OAPI_MNGR_0302`).
    pub chat_per_second: u64,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        Self {
            replenish_rate: 10,
            burst_capacity: 20,
            daily_limit: 100_000,
            per_permission: HashMap::new(),
            chat_per_second: 5,
        }
    }
}

/// The control API's quota update; every part optional.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuotaUpdate {
    /// Per-second bucket.
    pub per_second: Option<PerSecondUpdate>,
    /// Daily limits.
    pub daily: Option<DailyUpdate>,
    /// Chat messages per second per broadcast.
    pub chat_per_second: Option<u64>,
    /// Forget the counts so far (buckets full, daily counts zero).
    #[serde(default)]
    pub reset: bool,
    /// Ignored here (quotas are app-wide); accepted like on every control call.
    #[serde(default)]
    pub dj: Option<String>,
}

/// Per-second settings.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PerSecondUpdate {
    /// Tokens per second.
    pub replenish_rate: Option<u64>,
    /// Bucket size.
    pub burst_capacity: Option<u64>,
}

/// Daily settings.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DailyUpdate {
    /// Calls per app per day.
    pub limit: Option<u64>,
    /// Calls per permission per day (replaces the previous map).
    pub per_permission: Option<HashMap<String, u64>>,
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The per-second bucket is empty (no Retry-After).
    PerSecond,
    /// The daily quota: `scope` names the permission, `None` the whole app.
    Daily {
        /// The permission hit.
        scope: Option<Perm>,
        /// Seconds until midnight.
        retry_after: i64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_ms: i64,
}

/// Quota state.
#[derive(Debug, Default)]
pub struct Quotas {
    /// Settings.
    pub config: QuotaConfig,
    buckets: HashMap<usize, Bucket>,
    day: i64,
    app_calls: HashMap<usize, u64>,
    perm_calls: HashMap<(usize, Perm), u64>,
}

impl Quotas {
    /// Applies a control update.
    pub fn update(&mut self, u: QuotaUpdate) -> Result<(), String> {
        if let Some(ps) = u.per_second {
            if let Some(r) = ps.replenish_rate {
                self.config.replenish_rate = r;
            }
            if let Some(b) = ps.burst_capacity {
                self.config.burst_capacity = b;
            }
            self.buckets.clear();
        }
        if let Some(d) = u.daily {
            if let Some(l) = d.limit {
                self.config.daily_limit = l;
            }
            if let Some(map) = d.per_permission {
                let mut out = HashMap::new();
                for (name, n) in map {
                    let perm = Perm::from_name(&name)
                        .ok_or_else(|| format!("unknown permission {name:?}"))?;
                    out.insert(perm, n);
                }
                self.config.per_permission = out;
            }
        }
        if let Some(c) = u.chat_per_second {
            self.config.chat_per_second = c;
        }
        if u.reset {
            self.buckets.clear();
            self.app_calls.clear();
            self.perm_calls.clear();
        }
        Ok(())
    }

    fn roll_day(&mut self, now_ms: i64) {
        let day = now_ms.div_euclid(crate::clock::DAY_MS);
        if day != self.day {
            self.day = day;
            self.app_calls.clear();
            self.perm_calls.clear();
        }
    }

    /// Counts one call of `app`'s `integration` needing `perm`; on success the
    /// `x-ratelimit-*` headers to send.
    pub fn take(
        &mut self,
        now_ms: i64,
        app: usize,
        integration: usize,
        perm: Perm,
    ) -> Result<Vec<(&'static str, String)>, Refusal> {
        self.roll_day(now_ms);
        let cfg = &self.config;
        let bucket = self.buckets.entry(integration).or_insert(Bucket {
            tokens: cfg.burst_capacity as f64,
            at_ms: now_ms,
        });
        let elapsed = (now_ms - bucket.at_ms).max(0) as f64 / 1000.0;
        bucket.tokens =
            (bucket.tokens + elapsed * cfg.replenish_rate as f64).min(cfg.burst_capacity as f64);
        bucket.at_ms = now_ms;
        if bucket.tokens < 1.0 {
            return Err(Refusal::PerSecond);
        }
        let retry_after = ((next_midnight_ms(now_ms) - now_ms) + 999) / 1000;
        let app_calls = self.app_calls.get(&app).copied().unwrap_or(0);
        if app_calls >= cfg.daily_limit {
            return Err(Refusal::Daily {
                scope: None,
                retry_after,
            });
        }
        let perm_calls = self.perm_calls.get(&(app, perm)).copied().unwrap_or(0);
        if let Some(limit) = cfg.per_permission.get(&perm) {
            if perm_calls >= *limit {
                return Err(Refusal::Daily {
                    scope: Some(perm),
                    retry_after,
                });
            }
        }
        bucket.tokens -= 1.0;
        let remaining = bucket.tokens.floor() as u64;
        self.app_calls.insert(app, app_calls + 1);
        self.perm_calls.insert((app, perm), perm_calls + 1);
        Ok(vec![
            ("x-ratelimit-remaining", remaining.to_string()),
            ("x-ratelimit-replenish-rate", cfg.replenish_rate.to_string()),
            ("x-ratelimit-burst-capacity", cfg.burst_capacity.to_string()),
            ("x-ratelimit-daily-limit", cfg.daily_limit.to_string()),
            (
                "x-ratelimit-daily-remaining",
                cfg.daily_limit.saturating_sub(app_calls + 1).to_string(),
            ),
            (
                "x-ratelimit-daily-reset",
                (next_midnight_ms(now_ms) / 1000).to_string(),
            ),
        ])
    }
}
