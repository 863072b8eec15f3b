//! [`Status`]: a snapshot of the bot for dashboards and logs, serializable
//! to JSON (camelCase), from [`Bot::status`](super::Bot::status).

use serde::Serialize;

use super::*;

use crate::proto::scope::{Permission, Scope};

/// Where the event stream stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
#[non_exhaustive]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Connection {
    /// No tokens yet: the DJ must consent.
    NeedsAuthorization,
    /// The stream is switched off in the config (a chat-only bot).
    Off,
    /// Not on air (404, or the broadcast ended): the next attempt is at
    /// `next_attempt_ms`.
    #[serde(rename_all = "camelCase")]
    WaitingForBroadcast {
        /// When the next connect goes (unix ms).
        next_attempt_ms: u64,
    },
    /// A connect is under way.
    #[serde(rename_all = "camelCase")]
    Connecting {
        /// Since when (unix ms), when known.
        since_ms: Option<u64>,
    },
    /// The stream is open.
    #[serde(rename_all = "camelCase")]
    Connected {
        /// Since when (unix ms).
        since_ms: u64,
    },
    /// Backing off after a drop or a server error, until `until_ms`.
    #[serde(rename_all = "camelCase")]
    BackingOff {
        /// When the next connect goes (unix ms).
        until_ms: u64,
    },
    /// Waiting for a token refresh before connecting again.
    Refreshing,
    /// Stopped; a person must act.
    Stopped {
        /// The stop's code (`reauthorize`, `reconsent`, …).
        code: String,
        /// What to tell that person.
        message: String,
    },
}

/// What the bot has seen and done since it was created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Counters {
    /// `chat` events.
    pub chat: u64,
    /// `presence` events.
    pub presence: u64,
    /// `like` events.
    pub like: u64,
    /// `donation` events.
    pub donation: u64,
    /// Events with a name this version does not know.
    pub unknown_events: u64,
    /// Frames that could not be decoded (skipped).
    pub decode_errors: u64,
    /// `:heartbeat` comments.
    pub heartbeats: u64,
    /// When the last heartbeat came (unix ms).
    pub last_heartbeat_ms: Option<u64>,
    /// Stream connections opened (2xx).
    pub connects: u64,
    /// End frames `LIVE_ENDED`.
    pub ends_live_ended: u64,
    /// End frames `TOKEN_EXPIRED`.
    pub ends_token_expired: u64,
    /// End frames `RECONNECT`.
    pub ends_reconnect: u64,
    /// Connections that ended without an end frame (dropped, or closed by
    /// the watchdog).
    pub drops: u64,
    /// Chat messages the service took (replies' messages included).
    pub chats_sent: u64,
    /// Chat messages given up on (each reported with its reason).
    pub chats_failed: u64,
    /// New token pairs (the exchange and every refresh).
    pub token_pairs: u64,
    /// Requests that did not reach the service: not sent, no answer, or
    /// none in time (stream connects included).
    pub unreached: u64,
    /// App calls given up on as cancelled: chat still queued when its
    /// broadcast ended, or the bot stopped.
    pub gave_up_cancelled: u64,
    /// App calls given up on because a daily quota blocks them.
    pub gave_up_quota_blocked: u64,
    /// App calls the service refused.
    pub gave_up_refused: u64,
    /// App calls refused at once because the call queue was full.
    pub gave_up_queue_full: u64,
    /// App calls given up on for want of an answer.
    pub gave_up_transport: u64,
    /// App calls whose answer could not be read.
    pub gave_up_invalid_answer: u64,
    /// Replies (the kit's and [`Bot::reply`]'s) per kind: messages sent,
    /// people named, replies merged, replies dropped (and why).
    pub replies: super::RepliesCounters,
}

/// A daily-quota block in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QuotaBlock {
    /// The blocked permission; `None`: the whole app.
    pub scope: Option<String>,
    /// Until when (unix ms).
    pub until_ms: u64,
}

/// A snapshot of the bot. See [`Bot::status`](super::Bot::status).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Status {
    /// The event stream's state.
    pub connection: Connection,
    /// Counters since the bot was created.
    pub counters: Counters,
    /// The permissions the DJ granted (as of the last token pair).
    pub scope: Vec<String>,
    /// What the bot cannot do with that scope, one line each.
    pub cannot: Vec<String>,
    /// What the bot cannot know from the service, one line each.
    pub notes: Vec<String>,
    /// App calls queued or in flight.
    pub pending_calls: usize,
    /// The token pair's generation, when there is one.
    pub token_generation: Option<u64>,
    /// When the access token expires (unix ms).
    pub access_expires_at_ms: Option<u64>,
    /// When the next refresh is due (unix ms).
    pub refresh_at_ms: Option<u64>,
    /// Daily-quota blocks in force.
    pub quota_blocks: Vec<QuotaBlock>,
}

impl Status {
    /// The status as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Bot {
    /// A snapshot for dashboards and logs (see [`Status`]).
    ///
    /// ```
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// use onair::bot::Connection;
    ///
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// let status = bot.status(0);
    /// assert_eq!(status.connection, Connection::NeedsAuthorization);
    /// assert!(status.to_json().starts_with(r#"{"connection":{"state":"needsAuthorization"}"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self, now_ms: u64) -> Status {
        let connection = if let Some(stop) = &self.stopped {
            Connection::Stopped {
                code: stop.code().to_owned(),
                message: stop.to_string(),
            }
        } else if self.tokens.problem() == Some(&AuthProblem::NotAuthorized) {
            Connection::NeedsAuthorization
        } else if !self.stream.enabled {
            Connection::Off
        } else {
            match self.stream.connect.phase() {
                Phase::Open => Connection::Connected {
                    since_ms: self.stream.connect.open_since_ms().unwrap_or(now_ms),
                },
                Phase::Connecting => Connection::Connecting { since_ms: None },
                Phase::Refreshing => Connection::Refreshing,
                Phase::Stopped => Connection::Stopped {
                    code: self
                        .stream
                        .connect
                        .stop()
                        .map_or("stopped", Stop::code)
                        .to_owned(),
                    message: self
                        .stream
                        .connect
                        .stop()
                        .map(Stop::to_string)
                        .unwrap_or_default(),
                },
                _ => {
                    let at = self.stream.connect.next_connect_at_ms().unwrap_or(now_ms);
                    if self.stream.connect.waiting_for_broadcast() {
                        Connection::WaitingForBroadcast {
                            next_attempt_ms: at,
                        }
                    } else if self.tokens.access_token(now_ms).is_none() {
                        Connection::Refreshing
                    } else {
                        Connection::BackingOff { until_ms: at }
                    }
                }
            }
        };
        let scope = self
            .tokens
            .tokens()
            .map(|t| t.scope().clone())
            .unwrap_or_default();
        let (cannot, notes) = status::limits(&scope);
        Status {
            connection,
            counters: self.counters.clone(),
            scope: scope.iter().map(|p| p.as_str().to_owned()).collect(),
            cannot,
            notes,
            pending_calls: self.pending_calls(),
            token_generation: self.tokens.tokens().map(Tokens::generation),
            access_expires_at_ms: self.tokens.tokens().map(Tokens::access_expires_at_ms),
            refresh_at_ms: self.tokens.refresh_at_ms(),
            quota_blocks: self
                .quota
                .blocks(now_ms)
                .into_iter()
                .map(|b| QuotaBlock {
                    scope: b.scope.map(|p| p.as_str().to_owned()),
                    until_ms: b.until_ms,
                })
                .collect(),
        }
    }
}

/// What a scope cannot do, one line per missing capability, and what no
/// scope tells (presence needs manager level, which the bot cannot see).
pub(super) fn limits(scope: &Scope) -> (Vec<String>, Vec<String>) {
    let mut cannot = Vec::new();
    let needs = [
        (Permission::LiveRead, "read the broadcast (fetch_broadcast)"),
        (Permission::ListenersRead, "list listeners (list_listeners)"),
        (Permission::FansRead, "read the fan ranking (fetch_fans)"),
        (Permission::ChatSend, "send chat (send_chat)"),
        (Permission::EventsChat, "receive chat events"),
        (Permission::EventsPresence, "receive presence (join) events"),
        (Permission::EventsLike, "receive like (heart) events"),
        (Permission::EventsDonation, "receive donation events"),
    ];
    for (permission, what) in needs {
        if !scope.contains(&permission) {
            cannot.push(format!("{what}: needs {permission}"));
        }
    }
    if !scope.has_any_event_permission() {
        cannot.push("open the event stream: needs one of the events.* permissions".to_owned());
    }
    let mut notes = Vec::new();
    if scope.contains(&Permission::EventsPresence) {
        notes.push(
            "presence events also need the bot to be a manager when it connects; \
             the service does not tell, so none arriving may mean it is not one"
                .to_owned(),
        );
    }
    (cannot, notes)
}
