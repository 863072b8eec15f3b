//! Classifying an HTTP response of the service into a [`Problem`] and the
//! [`Advice`] a bot should follow (spec 5, 7, 8).
//!
//! [`classify`] branches on the HTTP status first, on `detailCode` only when
//! the body has one, on the OAuth `error` for the token endpoints, and never on
//! message text. It reads the three error body shapes of the service:
//!
//! - the RFC 7807-style JSON of bot endpoints (unknown fields, the always-null
//!   `userId`/`extra` and a missing `detailCode` are all fine);
//! - the event stream's SSE-style body that starts with `data:` (spec 7.2);
//! - the RFC 6749 `{error, error_description}` of the token endpoints.
//!
//! An empty body, HTML from a proxy, invalid UTF-8 or truncated JSON still
//! classify by status. No input panics.
//!
//! ```
//! use onair::{Advice, Endpoint, ProblemKind};
//! use onair::api::classify;
//!
//! let body = br#"{"status":404,"detailCode":"OAPI_MNGR_0301","message":"not live","userId":null}"#;
//! let problem = classify(Endpoint::Live, 404, &[("Content-Type", "application/json")], body);
//! assert_eq!(problem.kind, ProblemKind::NotOnAir);
//! assert_eq!(problem.advice, Advice::WaitNotOnAir);
//! assert_eq!(problem.detail_code.as_deref(), Some("OAPI_MNGR_0301"));
//!
//! let daily = classify(Endpoint::Fans, 429, &[("retry-after", "120"),
//!     ("x-ratelimit-daily-scope", "fans.read")], b"");
//! assert_eq!(daily.kind, ProblemKind::QuotaDaily);
//! assert_eq!(daily.explain(None).retry_after_ms, Some(120_000));
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

use crate::proto::endpoint::Endpoint;
use crate::proto::http::Header;
use crate::proto::ratelimit::{QuotaHeaders, RetryAfter};
use crate::proto::scope::Permission;
use crate::wire::name_enum;

name_enum! {
    /// What went wrong (or `Ok`), as decided from status, code and headers.
    pub enum ProblemKind {
        /// A 2xx: nothing went wrong.
        Ok = "ok",
        /// 400/405/415 `OAPI_MNGR_0103`: the request itself is broken.
        MalformedRequest = "malformed_request",
        /// 400 `OAPI_MNGR_0108`: the chat message is empty or whitespace-only.
        ChatEmpty = "chat_empty",
        /// 400 `OAPI_MNGR_0109`: the chat message is over 200 UTF-16 units.
        ChatTooLong = "chat_too_long",
        /// 401 on a bot endpoint: the access token is not accepted.
        Unauthorized = "unauthorized",
        /// 403 without a code: the DJ did not grant the permission.
        PermissionMissing = "permission_missing",
        /// 403 `OAPI_MNGR_0208`: chat frozen or the bot chat-banned.
        ChatBlocked = "chat_blocked",
        /// 403 `OAPI_MNGR_0209`: the bot cannot join; the DJ may have blocked it.
        JoinForbidden = "join_forbidden",
        /// 404 `OAPI_MNGR_0301`: the DJ is not on air (a state, not a fault).
        NotOnAir = "not_on_air",
        /// 429 `OAPI_MNGR_0302`: the broadcast-wide chat limit.
        ChatRateLimited = "chat_rate_limited",
        /// 429 with no body and no Retry-After: the per-second call quota.
        QuotaPerSecond = "quota_per_second",
        /// 429 with Retry-After: the daily call quota, for one permission or the app.
        QuotaDaily = "quota_daily",
        /// 500, or 502/503/504 without a code: a server error.
        ServerError = "server_error",
        /// 502 `OAPI_MNGR_2302`: the broadcast server failed.
        BroadcastServerError = "broadcast_server_error",
        /// 502 `OAPI_MNGR_2303`: the chat server failed.
        ChatServerError = "chat_server_error",
        /// Token endpoints, 400 `invalid_request`: a form field is missing.
        InvalidRequest = "invalid_request",
        /// Token endpoints, 400 `unsupported_grant_type`.
        UnsupportedGrantType = "unsupported_grant_type",
        /// Token endpoints, 400 `invalid_grant`: code or refresh token no longer valid.
        InvalidGrant = "invalid_grant",
        /// Token endpoints, 401 `invalid_client`: client authentication failed.
        InvalidClient = "invalid_client",
        /// Anything the spec does not describe.
        Unexpected = "unexpected",
    }
}

name_enum! {
    /// What the bot should do about a [`Problem`].
    pub enum Advice {
        /// Nothing: it worked.
        None = "none",
        /// Change the request; an identical resend gives the same answer.
        FixRequest = "fix_request",
        /// Refresh the access token once and retry; a second 401 means reauthorize.
        RefreshToken = "refresh_token",
        /// Ask the DJ to consent again with the missing permission.
        Reconsent = "reconsent",
        /// Wait a moment and retry; tell the DJ if it persists.
        RetrySoon = "retry_soon",
        /// Stop; retrying does not help until a person acts.
        Stop = "stop",
        /// The DJ is not on air: back off a few seconds and try again.
        WaitNotOnAir = "wait_not_on_air",
        /// Retry with exponential backoff (see [`Backoff`](crate::api::Backoff)).
        RetryBackoff = "retry_backoff",
        /// Retry once the `Retry-After` time has passed.
        RetryAfter = "retry_after",
        /// The grant is gone: the DJ must authorize the bot again.
        Reauthorize = "reauthorize",
    }
}

/// The detail codes of spec 7.3.
pub mod codes {
    /// Malformed request (also with 405, 415).
    pub const MALFORMED_REQUEST: &str = "OAPI_MNGR_0103";
    /// Chat message empty.
    pub const CHAT_EMPTY: &str = "OAPI_MNGR_0108";
    /// Chat message too long.
    pub const CHAT_TOO_LONG: &str = "OAPI_MNGR_0109";
    /// 401 within a minute after revocation.
    pub const RECENTLY_REVOKED: &str = "OAPI_MNGR_0203";
    /// Chat frozen or bot chat-banned.
    pub const CHAT_BLOCKED: &str = "OAPI_MNGR_0208";
    /// Bot cannot join the broadcast.
    pub const JOIN_FORBIDDEN: &str = "OAPI_MNGR_0209";
    /// DJ not on air.
    pub const NOT_ON_AIR: &str = "OAPI_MNGR_0301";
    /// Broadcast-wide chat send limit.
    pub const CHAT_RATE_LIMITED: &str = "OAPI_MNGR_0302";
    /// Server error.
    pub const SERVER_ERROR: &str = "OAPI_MNGR_1002";
    /// Broadcast server error.
    pub const BROADCAST_SERVER_ERROR: &str = "OAPI_MNGR_2302";
    /// Chat server error.
    pub const CHAT_SERVER_ERROR: &str = "OAPI_MNGR_2303";
}

/// A classified response: what happened, what to do, and the facts behind it.
///
/// Holds no secret: error bodies of the service carry none, and the request
/// is not part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What happened.
    pub kind: ProblemKind,
    /// What to do about it.
    pub advice: Advice,
    /// The HTTP status.
    pub status: u16,
    /// The body's `detailCode`, when it had a non-empty string one.
    pub detail_code: Option<String>,
    /// The OAuth `error` of a token endpoint body.
    pub oauth_error: Option<String>,
    /// `true` for a 401 carrying `OAPI_MNGR_0203` (revoked within the minute).
    pub recently_revoked: bool,
    /// The body's `message` or `error_description`, for logs only: its wording
    /// may change, so never branch on it or show it to people.
    pub message: Option<String>,
    /// Everything the quota headers said (also `Retry-After` and the scope).
    pub quota: QuotaHeaders,
}

impl Problem {
    /// The longest [`message`](Problem::message) kept from a body, in bytes
    /// (for logs only; cut between characters).
    pub const MAX_MESSAGE_BYTES: usize = 512;
    /// The longest [`detail_code`](Problem::detail_code) or
    /// [`oauth_error`](Problem::oauth_error) kept, in bytes.
    pub const MAX_CODE_BYTES: usize = 64;

    /// When to retry, from `Retry-After` (a delay, or an HTTP-date).
    pub fn retry_after(&self) -> Option<RetryAfter> {
        self.quota.retry_after
    }

    /// The permission whose daily quota ran out (`x-ratelimit-daily-scope`);
    /// `None` on a daily 429 means the whole app is blocked.
    pub fn quota_scope(&self) -> Option<&Permission> {
        self.quota.daily_scope.as_ref()
    }

    /// Whether the response was a success.
    pub fn is_ok(&self) -> bool {
        self.kind == ProblemKind::Ok
    }

    /// The one-object summary `onair explain` prints. `now_ms` turns an
    /// HTTP-date `Retry-After` into a delay; without it such a delay is `None`.
    pub fn explain(&self, now_ms: Option<u64>) -> Explanation {
        let retry_after_ms = match (self.quota.retry_after, now_ms) {
            (Some(RetryAfter::Delay { ms, .. }), _) => Some(ms),
            (Some(date @ RetryAfter::Date { .. }), Some(now)) => Some(date.delay_ms(now)),
            _ => None,
        };
        Explanation {
            kind: self.kind,
            advice: self.advice,
            status: self.status,
            detail_code: self.detail_code.clone(),
            oauth_error: self.oauth_error.clone(),
            retry_after_ms,
            quota_scope: self
                .quota
                .daily_scope
                .as_ref()
                .map(|p| p.as_str().to_owned()),
            recently_revoked: self.recently_revoked,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (HTTP {}", self.kind, self.status)?;
        if let Some(code) = self.detail_code.as_deref().or(self.oauth_error.as_deref()) {
            write!(f, ", {code}")?;
        }
        write!(f, "): {}", self.advice)
    }
}

/// The JSON object `onair explain` prints for a [`Problem`]; field names and
/// order are a contract (`kind`, `advice`, `status`, `detailCode`,
/// `oauthError`, `retryAfterMs`, `quotaScope`, `recentlyRevoked`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Explanation {
    /// See [`Problem::kind`].
    pub kind: ProblemKind,
    /// See [`Problem::advice`].
    pub advice: Advice,
    /// The HTTP status.
    pub status: u16,
    /// See [`Problem::detail_code`].
    pub detail_code: Option<String>,
    /// See [`Problem::oauth_error`].
    pub oauth_error: Option<String>,
    /// The Retry-After delay in milliseconds, when known.
    pub retry_after_ms: Option<u64>,
    /// The permission named by `x-ratelimit-daily-scope`.
    pub quota_scope: Option<String>,
    /// See [`Problem::recently_revoked`].
    pub recently_revoked: bool,
}

impl Explanation {
    /// The object as one line of JSON, the line `onair explain` prints.
    ///
    /// ```
    /// use onair::Endpoint;
    /// use onair::api::classify;
    ///
    /// let p = classify(Endpoint::Chat, 403, &[] as &[(&str, &str)], b"");
    /// assert!(p.explain(None).to_json().starts_with(r#"{"kind":"#));
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Classifies one response of `endpoint`: `status`, its headers (names any
/// case) and its body bytes (any bytes; only error bodies are read).
///
/// ```
/// use onair::{Advice, Endpoint, ProblemKind};
/// use onair::api::classify;
///
/// let p = classify(Endpoint::Token, 400, &[] as &[(&str, &str)],
///     br#"{"error":"invalid_grant","error_description":"expired"}"#);
/// assert_eq!((p.kind, p.advice), (ProblemKind::InvalidGrant, Advice::Reauthorize));
///
/// let stream = classify(Endpoint::Events, 403, &[] as &[(&str, &str)],
///     b"data:{\"status\":403,\"detailCode\":\"OAPI_MNGR_0209\",\"message\":\"blocked\"}\n\n");
/// assert_eq!((stream.kind, stream.advice), (ProblemKind::JoinForbidden, Advice::Stop));
///
/// let proxy = classify(Endpoint::Chat, 502, &[] as &[(&str, &str)], b"<html>Bad Gateway</html>");
/// assert_eq!(proxy.kind, ProblemKind::ServerError);
/// ```
pub fn classify<H: Header>(
    endpoint: Endpoint,
    status: u16,
    headers: impl IntoIterator<Item = H>,
    body: &[u8],
) -> Problem {
    let quota = QuotaHeaders::parse(headers);
    let parsed = if (200..300).contains(&status) {
        ErrorBody::default()
    } else {
        ErrorBody::parse(body)
    };
    let detail_code = parsed.detail_code.as_deref().filter(|c| !c.is_empty());
    let oauth_error = if endpoint.is_token() {
        parsed.error.as_deref().filter(|c| !c.is_empty())
    } else {
        None
    };
    let (kind, advice) = decide(endpoint, status, detail_code, oauth_error, &quota);
    let message = parsed
        .message
        .as_deref()
        .or(parsed.error_description.as_deref())
        .map(|m| truncated(m, Problem::MAX_MESSAGE_BYTES));
    Problem {
        kind,
        advice,
        status,
        recently_revoked: kind == ProblemKind::Unauthorized
            && detail_code == Some(codes::RECENTLY_REVOKED),
        detail_code: detail_code.map(|c| truncated(c, Problem::MAX_CODE_BYTES)),
        oauth_error: oauth_error.map(|c| truncated(c, Problem::MAX_CODE_BYTES)),
        message,
        quota,
    }
}

/// The decision table: status first, then `detailCode` when
/// present, then the OAuth `error` on token endpoints.
fn decide(
    endpoint: Endpoint,
    status: u16,
    code: Option<&str>,
    oauth_error: Option<&str>,
    quota: &QuotaHeaders,
) -> (ProblemKind, Advice) {
    use codes::*;
    use Advice as A;
    use ProblemKind as K;

    if (200..300).contains(&status) {
        return (K::Ok, A::None);
    }
    let token = endpoint.is_token();
    if token {
        match (status, oauth_error) {
            (400, Some("invalid_request")) => return (K::InvalidRequest, A::FixRequest),
            (400, Some("unsupported_grant_type")) => {
                return (K::UnsupportedGrantType, A::FixRequest)
            }
            (400, Some("invalid_grant")) => return (K::InvalidGrant, A::Reauthorize),
            // Every 401 of the token endpoints is `invalid_client` (spec 5.2),
            // so an unreadable body still classifies by status.
            (401, Some("invalid_client") | None) => return (K::InvalidClient, A::Stop),
            _ => {}
        }
    }
    match (status, code) {
        (400 | 405 | 415, Some(MALFORMED_REQUEST)) | (405 | 415, None) => {
            (K::MalformedRequest, A::FixRequest)
        }
        (400, Some(CHAT_EMPTY)) => (K::ChatEmpty, A::FixRequest),
        (400, Some(CHAT_TOO_LONG)) => (K::ChatTooLong, A::FixRequest),
        (401, _) if !token => (K::Unauthorized, A::RefreshToken),
        (403, None) if !token => (K::PermissionMissing, A::Reconsent),
        (403, Some(CHAT_BLOCKED)) => (K::ChatBlocked, A::RetrySoon),
        (403, Some(JOIN_FORBIDDEN)) => (K::JoinForbidden, A::Stop),
        (404, Some(NOT_ON_AIR)) => (K::NotOnAir, A::WaitNotOnAir),
        (404, None) if !token => (K::NotOnAir, A::WaitNotOnAir),
        (429, Some(CHAT_RATE_LIMITED)) => (K::ChatRateLimited, A::RetrySoon),
        (429, None) if quota.retry_after_present || quota.daily_scope.is_some() => {
            (K::QuotaDaily, A::RetryAfter)
        }
        (429, None) => (K::QuotaPerSecond, A::RetryBackoff),
        (500, None | Some(SERVER_ERROR)) | (502..=504, None) => (K::ServerError, A::RetryBackoff),
        (502, Some(BROADCAST_SERVER_ERROR)) => (K::BroadcastServerError, A::RetryBackoff),
        (502, Some(CHAT_SERVER_ERROR)) => (K::ChatServerError, A::RetryBackoff),
        // A 429 always means "slow down" in HTTP; stopping on an unknown code
        // would turn a passing limit into an outage, so back off instead.
        (429, Some(_)) | (500..=599, _) => (K::Unexpected, A::RetryBackoff),
        _ => (K::Unexpected, A::Stop),
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn truncated(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default().to_owned()
}

/// The fields of all three error body shapes that matter, read leniently:
/// a field of the wrong type is as good as absent.
#[derive(Debug, Default)]
struct ErrorBody<'a> {
    detail_code: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    error: Option<Cow<'a, str>>,
    error_description: Option<Cow<'a, str>>,
}

impl<'a> ErrorBody<'a> {
    /// Reads a JSON object body, or an SSE-style `data:` body; anything else
    /// (empty, HTML, invalid UTF-8, truncated JSON, a duplicate field) is an
    /// empty result.
    fn parse(body: &'a [u8]) -> ErrorBody<'a> {
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        let start = body
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(body.len());
        let body = body.get(start..).unwrap_or_default();
        if body.first() == Some(&b'{') {
            return ErrorBody::read(body);
        }
        if body.starts_with(b"data:") {
            return match sse_data(body) {
                Cow::Borrowed(data) => ErrorBody::read(data),
                // Joined lines are owned here: keep only owned strings.
                Cow::Owned(data) => ErrorBody::read(&data).into_owned(),
            };
        }
        ErrorBody::default()
    }

    fn read(body: &'a [u8]) -> ErrorBody<'a> {
        /// The body's fields, any type: only strings are kept.
        #[derive(serde::Deserialize)]
        struct Fields<'a> {
            #[serde(borrow, default, rename = "detailCode")]
            detail_code: Option<Lenient<'a>>,
            #[serde(borrow, default)]
            message: Option<Lenient<'a>>,
            #[serde(borrow, default)]
            error: Option<Lenient<'a>>,
            #[serde(borrow, default)]
            error_description: Option<Lenient<'a>>,
        }
        let text = |field: Option<Lenient<'a>>| field.and_then(|f| f.0);
        match serde_json::from_slice::<Fields<'a>>(body) {
            Ok(fields) => ErrorBody {
                detail_code: text(fields.detail_code),
                message: text(fields.message),
                error: text(fields.error),
                error_description: text(fields.error_description),
            },
            Err(_) => ErrorBody::default(),
        }
    }

    fn into_owned(self) -> ErrorBody<'static> {
        fn own(s: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
            s.map(|s| Cow::Owned(s.into_owned()))
        }
        ErrorBody {
            detail_code: own(self.detail_code),
            message: own(self.message),
            error: own(self.error),
            error_description: own(self.error_description),
        }
    }
}

/// The data of an SSE-style body: its `data:` lines (one optional space after
/// the colon dropped) joined by `\n`, borrowed when there is only one.
fn sse_data(body: &[u8]) -> Cow<'_, [u8]> {
    let mut lines = body
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter_map(|line| line.strip_prefix(b"data:"))
        .map(|data| data.strip_prefix(b" ").unwrap_or(data));
    let Some(first) = lines.next() else {
        return Cow::Borrowed(&[]);
    };
    let Some(second) = lines.next() else {
        return Cow::Borrowed(first);
    };
    let mut joined = first.to_vec();
    for line in std::iter::once(second).chain(lines) {
        joined.push(b'\n');
        joined.extend_from_slice(line);
    }
    Cow::Owned(joined)
}

/// A field read leniently: its text when it is a string, `None` for any
/// other value (a number, an object, `null`).
struct Lenient<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Lenient<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Any<'a> {
            Text(#[serde(borrow)] Cow<'a, str>),
            Other(serde::de::IgnoredAny),
        }
        Ok(Lenient(match Any::deserialize(d)? {
            Any::Text(text) => Some(text),
            Any::Other(_) => None,
        }))
    }
}

#[cfg(test)]
mod tests;
