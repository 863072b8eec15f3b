//! The REST resources of the service (spec 2.1–2.4), typed.
//!
//! Every decoder is tolerant: unknown fields are ignored, nullable fields are
//! `Option`, timestamps keep their wire string ([`Timestamp`]) and parse any
//! number of fractional-second digits. Use the decoders in [`crate::proto::api`]
//! (`decode_*`) to turn a response body into these values.
//!
//! ```
//! use onair::api::decode_broadcast;
//!
//! let body = br#"{"liveId":7,"title":"Night","startedAt":"2024-11-22T04:33:20.1Z",
//!   "closeAirTime":"2024-11-22T06:33:20Z","listenerCount":3,"totalListenerCount":9,
//!   "welcomeMessage":"","isChatFrozen":false,"categories":["music"],"tags":[],"new":1}"#;
//! let b = decode_broadcast(body).unwrap();
//! assert_eq!(b.live_id, 7);
//! assert_eq!(b.started_at.unix_ms(), Some(1_732_250_000_100));
//! ```

use serde::{Deserialize, Deserializer, Serialize};

use crate::proto::scope::Scope;
use crate::proto::secret::Secret;
use crate::proto::time::Timestamp;
use crate::wire::null_as_default;

/// The wire name of [`Fan::coin_count`]: the spec's neutral stand-in for the
/// product's currency name. Change it here and in `Fan`'s serde `rename`
/// (a test holds the two equal).
#[cfg(test)]
pub(crate) const COIN_COUNT_FIELD: &str = "coinCount";

/// The access token lifetime assumed when a token response has no
/// `expires_in` (spec 2.1, 8: 3600 seconds).
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 3600;

/// The current broadcast (GET /v1/live, spec 2.2).
///
/// `welcome_message`, `categories` and `tags` read `null` or a missing field
/// as empty: they are display data with a natural empty value, and a bot
/// should not lose the whole broadcast over them. The other fields are
/// required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Broadcast {
    /// Identifies this broadcast session: the key for "once per broadcast"
    /// rules and for telling whether a reconnect is the same broadcast.
    pub live_id: u64,
    /// Broadcast title.
    pub title: String,
    /// Start time.
    pub started_at: Timestamp,
    /// Scheduled end time.
    pub close_air_time: Timestamp,
    /// Listeners connected now.
    pub listener_count: u64,
    /// Cumulative number of people who passed through; never decreases.
    pub total_listener_count: u64,
    /// Greeting pinned by the DJ; empty when none.
    #[serde(default, deserialize_with = "null_as_default")]
    pub welcome_message: String,
    /// Whether chat is frozen (posting would get 403 `OAPI_MNGR_0208`).
    pub is_chat_frozen: bool,
    /// Broadcast categories.
    #[serde(default, deserialize_with = "null_as_default")]
    pub categories: Vec<String>,
    /// Hashtags added by the DJ.
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags: Vec<String>,
}

/// A person in the room (spec 2.3). `id` is the stable key (spec 2.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Listener {
    /// Encrypted identifier, scoped to (bot, DJ); the same value as
    /// `user.id` in stream events.
    pub id: String,
    /// Nickname: changes and repeats, never a key.
    pub nickname: String,
}

/// One page of GET /v1/live/listeners (spec 2.3, 4.4).
///
/// ```
/// use onair::api::decode_listeners;
///
/// let page =
///     decode_listeners(br#"{"listeners":[{"id":"a","nickname":"A"}],"nextCursor":""}"#).unwrap();
/// assert_eq!(page.next_cursor, None); // an empty cursor cannot be sent back: read as the end
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListenersPage {
    /// The people on this page.
    pub listeners: Vec<Listener>,
    /// The cursor of the next page; `None` on the last page. An empty string
    /// is read as `None`, because it must never be sent back as `cursor`.
    #[serde(default, deserialize_with = "cursor")]
    pub next_cursor: Option<String>,
}

/// One entry of the donation ranking (spec 2.4).
///
/// The currency field's wire name is `coinCount`; it is read and
/// written under exactly that name.
///
/// ```
/// use onair::api::decode_fans;
///
/// let ranking = decode_fans(
///     br#"{"totalCount":1,"fans":[{"id":"u1","nickname":"N","rank":1,"coinCount":null}]}"#,
/// ).unwrap();
/// assert_eq!(ranking.fans[0].coin_count, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Fan {
    /// Encrypted identifier (spec 2.5).
    pub id: String,
    /// Nickname.
    pub nickname: String,
    /// Rank, starting at 1.
    pub rank: u64,
    /// Units of the paid currency this listener spent in this broadcast;
    /// `None` when absent or `null`.
    #[serde(rename = "coinCount", default)]
    pub coin_count: Option<u64>,
}

/// GET /v1/live/fans (spec 2.4, 4.5): at most 30 people present now, highest
/// cumulative donation first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FanRanking {
    /// The size of the returned list (at most 30), not the number of fans.
    pub total_count: u64,
    /// The ranking, highest first.
    pub fans: Vec<Fan>,
}

/// A token response of the issue or refresh call (spec 2.1), checked.
///
/// There is no `token_type` field: only `Bearer` (compared
/// case-insensitively) is accepted by [`crate::proto::api::decode_token_pair`].
/// `refresh_token` and `scope` are `Option` because a refresh response may
/// omit them (RFC 6749 §5.1, §6): the previous values then stay in force.
/// `Debug` never shows the tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenPair {
    /// The credential for bot API calls.
    pub access_token: Secret,
    /// Lifetime of the access token in seconds (3600 when the field is missing).
    pub expires_in: u64,
    /// The credential for the next refresh, when one was sent.
    pub refresh_token: Option<Secret>,
    /// The DJ's consent at the moment of issue, when sent.
    pub scope: Option<Scope>,
}

/// The token response as it is on the wire, before checks.
#[derive(Deserialize)]
pub(crate) struct RawTokenPair {
    #[serde(deserialize_with = "secret")]
    pub(crate) access_token: Secret,
    pub(crate) token_type: String,
    #[serde(default, deserialize_with = "lenient_seconds")]
    pub(crate) expires_in: Option<u64>,
    #[serde(default, deserialize_with = "nullable_secret")]
    pub(crate) refresh_token: Option<Secret>,
    #[serde(default)]
    pub(crate) scope: Option<Scope>,
}

/// `nextCursor`: `null`, absent and `""` all mean the last page.
fn cursor<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|c| !c.is_empty()))
}

pub(crate) fn secret<'de, D: Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
    String::deserialize(d).map(Secret::new)
}

pub(crate) fn nullable_secret<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(Secret::new))
}

/// `expires_in` as a number, or a string of digits (some servers quote it).
fn lenient_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seconds {
        Number(u64),
        Text(String),
    }
    match Option::<Seconds>::deserialize(d)? {
        None => Ok(None),
        Some(Seconds::Number(n)) => Ok(Some(n)),
        Some(Seconds::Text(text)) => text
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom("expires_in is not a whole number of seconds")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn fan_reads_and_writes_the_constant_name() {
        let json = format!(r#"{{"id":"u","nickname":"n","rank":2,"{COIN_COUNT_FIELD}":40}}"#);
        let fan: Fan = read(&json).unwrap();
        assert_eq!(fan.coin_count, Some(40));
        assert_eq!(serde_json::to_string(&fan).unwrap(), json);
        // Absent and null both mean None; unknown fields are ignored.
        let fan: Fan = read(r#"{"rank":1,"x":[1,{}],"id":"u","nickname":"n"}"#).unwrap();
        assert_eq!(fan.coin_count, None);
        // A duplicate key is an error, not a silent overwrite.
        assert!(read::<Fan>(r#"{"id":"a","id":"b","nickname":"n","rank":1}"#).is_err());
        assert!(read::<Fan>(r#"{"id":"a","nickname":"n"}"#).is_err());
        assert!(read::<Fan>(r#"[1]"#).is_err());
    }

    #[test]
    fn broadcast_tolerates_null_display_fields() {
        let b: Broadcast = read(
            r#"{"liveId":1,"title":"t","startedAt":"2024-01-01T00:00:00Z",
            "closeAirTime":"2024-01-01T01:00:00Z","listenerCount":0,"totalListenerCount":0,
            "welcomeMessage":null,"isChatFrozen":true,"categories":null}"#,
        )
        .unwrap();
        assert_eq!(b.welcome_message, "");
        assert!(b.categories.is_empty() && b.tags.is_empty());
    }

    #[test]
    fn listeners_page_cursor() {
        let p: ListenersPage = read(r#"{"listeners":[],"nextCursor":null}"#).unwrap();
        assert_eq!(p.next_cursor, None);
        let p: ListenersPage = read(r#"{"listeners":[]}"#).unwrap();
        assert_eq!(p.next_cursor, None);
        let p: ListenersPage = read(r#"{"listeners":[],"nextCursor":""}"#).unwrap();
        assert_eq!(p.next_cursor, None);
        let p: ListenersPage = read(r#"{"listeners":[],"nextCursor":"c2"}"#).unwrap();
        assert_eq!(p.next_cursor.as_deref(), Some("c2"));
    }
}
