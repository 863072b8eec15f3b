//! The REST resources of the service (spec 2.1–2.4), typed.
//!
//! Every decoder is tolerant: unknown fields are ignored, nullable fields are
//! `Option`, timestamps keep their wire string ([`Timestamp`]) and parse any
//! number of fractional-second digits. Use the decoders in [`crate::api`]
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

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::scope::Scope;
use crate::secret::Secret;
use crate::time::Timestamp;
use crate::wire::json::{field, need, Json, What};
use crate::wire::write::{JsonOut, WriteJson};

/// The wire name of [`Fan::coin_count`]. The spec's neutral stand-in for the
/// product's currency name; change it here and only here.
pub const COIN_COUNT_FIELD: &str = "coinCount";

/// The access token lifetime assumed when a token response has no
/// `expires_in` (spec 2.1, 8: 3600 seconds).
pub const DEFAULT_EXPIRES_IN_SECS: u64 = 3600;

/// The current broadcast (GET /v1/live, spec 2.2).
///
/// `welcome_message`, `categories` and `tags` read `null` or a missing field
/// as empty: they are display data with a natural empty value, and a bot
/// should not lose the whole broadcast over them. The other fields are
/// required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
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
    pub welcome_message: String,
    /// Whether chat is frozen (posting would get 403 `OAPI_MNGR_0208`).
    pub is_chat_frozen: bool,
    /// Broadcast categories.
    pub categories: Vec<String>,
    /// Hashtags added by the DJ.
    pub tags: Vec<String>,
}

/// A person in the room (spec 2.3). `id` is the stable key (spec 2.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenersPage {
    /// The people on this page.
    pub listeners: Vec<Listener>,
    /// The cursor of the next page; `None` on the last page. An empty string
    /// is read as `None`, because it must never be sent back as `cursor`.
    pub next_cursor: Option<String>,
}

/// One entry of the donation ranking (spec 2.4).
///
/// The currency field's wire name is [`COIN_COUNT_FIELD`]; it is read and
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fan {
    /// Encrypted identifier (spec 2.5).
    pub id: String,
    /// Nickname.
    pub nickname: String,
    /// Rank, starting at 1.
    pub rank: u64,
    /// Units of the paid currency this listener spent in this broadcast;
    /// `None` when absent or `null`.
    pub coin_count: Option<u64>,
}

/// GET /v1/live/fans (spec 2.4, 4.5): at most 30 people present now, highest
/// cumulative donation first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FanRanking {
    /// The size of the returned list (at most 30), not the number of fans.
    pub total_count: u64,
    /// The ranking, highest first.
    pub fans: Vec<Fan>,
}

/// A token response of the issue or refresh call (spec 2.1), checked.
///
/// There is no `token_type` field: only `Bearer` (compared
/// case-insensitively) is accepted by [`crate::api::decode_token_pair`].
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
pub(crate) struct RawTokenPair {
    pub(crate) access_token: Secret,
    pub(crate) token_type: String,
    pub(crate) expires_in: Option<u64>,
    pub(crate) refresh_token: Option<Secret>,
    pub(crate) scope: Option<Scope>,
}

impl Broadcast {
    pub(crate) fn read(json: &mut Json<'_>) -> Option<Broadcast> {
        let (mut live_id, mut title, mut started_at, mut close_air_time) = (None, None, None, None);
        let (mut listener_count, mut total_listener_count, mut welcome_message) =
            (None, None, None);
        let (mut is_chat_frozen, mut categories, mut tags) = (None, None, None);
        json.object(&mut |json, key| match key {
            b"liveId" => field(json, &mut live_id, "liveId", Json::u64),
            b"title" => field(json, &mut title, "title", Json::owned_string),
            b"startedAt" => field(json, &mut started_at, "startedAt", Timestamp::read),
            b"closeAirTime" => field(json, &mut close_air_time, "closeAirTime", Timestamp::read),
            b"listenerCount" => field(json, &mut listener_count, "listenerCount", Json::u64),
            b"totalListenerCount" => field(
                json,
                &mut total_listener_count,
                "totalListenerCount",
                Json::u64,
            ),
            b"welcomeMessage" => field(
                json,
                &mut welcome_message,
                "welcomeMessage",
                Json::nullable_string,
            ),
            b"isChatFrozen" => field(json, &mut is_chat_frozen, "isChatFrozen", Json::bool),
            b"categories" => field(json, &mut categories, "categories", strings),
            b"tags" => field(json, &mut tags, "tags", strings),
            _ => json.skip(),
        })?;
        Some(Broadcast {
            live_id: need(json, live_id, "liveId")?,
            title: need(json, title, "title")?,
            started_at: need(json, started_at, "startedAt")?,
            close_air_time: need(json, close_air_time, "closeAirTime")?,
            listener_count: need(json, listener_count, "listenerCount")?,
            total_listener_count: need(json, total_listener_count, "totalListenerCount")?,
            welcome_message: welcome_message.flatten().unwrap_or_default(),
            is_chat_frozen: need(json, is_chat_frozen, "isChatFrozen")?,
            categories: categories.flatten().unwrap_or_default(),
            tags: tags.flatten().unwrap_or_default(),
        })
    }
}

impl Listener {
    fn read(json: &mut Json<'_>) -> Option<Listener> {
        let (mut id, mut nickname) = (None, None);
        json.object(&mut |json, key| match key {
            b"id" => field(json, &mut id, "id", Json::owned_string),
            b"nickname" => field(json, &mut nickname, "nickname", Json::owned_string),
            _ => json.skip(),
        })?;
        Some(Listener {
            id: need(json, id, "id")?,
            nickname: need(json, nickname, "nickname")?,
        })
    }
}

impl ListenersPage {
    pub(crate) fn read(json: &mut Json<'_>) -> Option<ListenersPage> {
        let (mut listeners, mut next_cursor) = (None, None);
        json.object(&mut |json, key| match key {
            b"listeners" => field(json, &mut listeners, "listeners", |json| {
                json.list(Listener::read)
            }),
            b"nextCursor" => field(json, &mut next_cursor, "nextCursor", Json::nullable_string),
            _ => json.skip(),
        })?;
        Some(ListenersPage {
            listeners: need(json, listeners, "listeners")?,
            next_cursor: next_cursor.flatten().filter(|cursor| !cursor.is_empty()),
        })
    }
}

impl Fan {
    fn read(json: &mut Json<'_>) -> Option<Fan> {
        let (mut id, mut nickname, mut rank, mut coin_count) = (None, None, None, None);
        json.object(&mut |json, key| match key {
            b"id" => field(json, &mut id, "id", Json::owned_string),
            b"nickname" => field(json, &mut nickname, "nickname", Json::owned_string),
            b"rank" => field(json, &mut rank, "rank", Json::u64),
            k if k == COIN_COUNT_FIELD.as_bytes() => {
                field(json, &mut coin_count, COIN_COUNT_FIELD, |json| {
                    json.nullable(Json::u64)
                })
            }
            _ => json.skip(),
        })?;
        Some(Fan {
            id: need(json, id, "id")?,
            nickname: need(json, nickname, "nickname")?,
            rank: need(json, rank, "rank")?,
            coin_count: coin_count.flatten(),
        })
    }
}

impl FanRanking {
    pub(crate) fn read(json: &mut Json<'_>) -> Option<FanRanking> {
        let (mut total_count, mut fans) = (None, None);
        json.object(&mut |json, key| match key {
            b"totalCount" => field(json, &mut total_count, "totalCount", Json::u64),
            b"fans" => field(json, &mut fans, "fans", |json| json.list(Fan::read)),
            _ => json.skip(),
        })?;
        Some(FanRanking {
            total_count: need(json, total_count, "totalCount")?,
            fans: need(json, fans, "fans")?,
        })
    }
}

impl RawTokenPair {
    pub(crate) fn read(json: &mut Json<'_>) -> Option<RawTokenPair> {
        let (mut access_token, mut token_type, mut expires_in) = (None, None, None);
        let (mut refresh_token, mut scope) = (None, None);
        let secret = |json: &mut Json<'_>| Some(Secret::new(json.owned_string()?));
        json.object(&mut |json, key| match key {
            b"access_token" => field(json, &mut access_token, "access_token", secret),
            b"token_type" => field(json, &mut token_type, "token_type", Json::owned_string),
            b"expires_in" => field(json, &mut expires_in, "expires_in", lenient_seconds),
            b"refresh_token" => field(json, &mut refresh_token, "refresh_token", |json| {
                json.nullable(secret)
            }),
            b"scope" => field(json, &mut scope, "scope", |json| {
                json.nullable(|json| Some(Scope::parse(&json.string()?)))
            }),
            _ => json.skip(),
        })?;
        Some(RawTokenPair {
            access_token: need(json, access_token, "access_token")?,
            token_type: need(json, token_type, "token_type")?,
            expires_in: expires_in.flatten(),
            refresh_token: refresh_token.flatten(),
            scope: scope.flatten(),
        })
    }
}

/// A list of strings; `null` reads as absent (empty).
fn strings(json: &mut Json<'_>) -> Option<Option<Vec<String>>> {
    json.nullable(|json| json.list(Json::owned_string))
}

/// `expires_in`: a non-negative integer, or the same as a string of digits
/// (some servers quote it); `null` reads as absent.
fn lenient_seconds(json: &mut Json<'_>) -> Option<Option<u64>> {
    json.nullable(|json| {
        if json.peek() != Some(b'"') {
            return json.u64();
        }
        match json.string()?.parse::<u64>() {
            Ok(seconds) => Some(seconds),
            Err(_) => json.fail(What::Invalid("expires_in is not a whole number of seconds")),
        }
    })
}

impl WriteJson for Broadcast {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        out.key("liveId").u64(self.live_id);
        out.key("title").str(&self.title);
        out.key("startedAt").put(&self.started_at);
        out.key("closeAirTime").put(&self.close_air_time);
        out.key("listenerCount").u64(self.listener_count);
        out.key("totalListenerCount").u64(self.total_listener_count);
        out.key("welcomeMessage").str(&self.welcome_message);
        out.key("isChatFrozen").bool(self.is_chat_frozen);
        out.key("categories").list(&self.categories);
        out.key("tags").list(&self.tags);
        out.end_object();
    }
}

impl WriteJson for Listener {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        out.key("id").str(&self.id);
        out.key("nickname").str(&self.nickname);
        out.end_object();
    }
}

impl WriteJson for ListenersPage {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        out.key("listeners").list(&self.listeners);
        out.key("nextCursor").put(&self.next_cursor);
        out.end_object();
    }
}

impl WriteJson for Fan {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        out.key("id").str(&self.id);
        out.key("nickname").str(&self.nickname);
        out.key("rank").u64(self.rank);
        out.key(COIN_COUNT_FIELD).put(&self.coin_count);
        out.end_object();
    }
}

impl WriteJson for FanRanking {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        out.key("totalCount").u64(self.total_count);
        out.key("fans").list(&self.fans);
        out.end_object();
    }
}

impl Serialize for Fan {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Fan", 4)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("nickname", &self.nickname)?;
        s.serialize_field("rank", &self.rank)?;
        s.serialize_field(COIN_COUNT_FIELD, &self.coin_count)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::json::read;

    #[test]
    fn fan_reads_and_writes_the_constant_name() {
        let json = format!(r#"{{"id":"u","nickname":"n","rank":2,"{COIN_COUNT_FIELD}":40}}"#);
        let fan = read(&json, Fan::read).unwrap();
        assert_eq!(fan.coin_count, Some(40));
        assert_eq!(serde_json::to_string(&fan).unwrap(), json);
        // Absent and null both mean None; unknown fields are ignored.
        let fan = read(
            r#"{"rank":1,"x":[1,{}],"id":"u","nickname":"n"}"#,
            Fan::read,
        )
        .unwrap();
        assert_eq!(fan.coin_count, None);
        // A duplicate key is an error, not a silent overwrite.
        assert!(read(r#"{"id":"a","id":"b","nickname":"n","rank":1}"#, Fan::read).is_err());
        assert!(read(r#"{"id":"a","nickname":"n"}"#, Fan::read).is_err());
        assert!(read(r#"[1]"#, Fan::read).is_err());
    }

    #[test]
    fn broadcast_tolerates_null_display_fields() {
        let b = read(
            r#"{"liveId":1,"title":"t","startedAt":"2024-01-01T00:00:00Z",
            "closeAirTime":"2024-01-01T01:00:00Z","listenerCount":0,"totalListenerCount":0,
            "welcomeMessage":null,"isChatFrozen":true,"categories":null}"#,
            Broadcast::read,
        )
        .unwrap();
        assert_eq!(b.welcome_message, "");
        assert!(b.categories.is_empty() && b.tags.is_empty());
    }

    #[test]
    fn listeners_page_cursor() {
        let p = read(r#"{"listeners":[],"nextCursor":null}"#, ListenersPage::read).unwrap();
        assert_eq!(p.next_cursor, None);
        let p = read(r#"{"listeners":[]}"#, ListenersPage::read).unwrap();
        assert_eq!(p.next_cursor, None);
        let p = read(r#"{"listeners":[],"nextCursor":"c2"}"#, ListenersPage::read).unwrap();
        assert_eq!(p.next_cursor.as_deref(), Some("c2"));
    }
}
