//! The request log (`GET /_emulator/requests`): one record per request to a
//! bot or token endpoint, with what a test needs to judge a bot's manners —
//! which grant it used and with which credential (a fingerprint, never the
//! value), which app and integration called, under which permission, and
//! what the answer meant (an OAuth error, a quota refusal with its scope and
//! `Retry-After`). No header or body is kept, so no secret is recorded.
//!
//! ```
//! use onair_emulator::requests::fingerprint;
//! // The first 12 hex digits of SHA-256: any language can compute it.
//! assert_eq!(fingerprint("abc"), "ba7816bf8f01");
//! ```

use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

/// A short stable fingerprint of a secret: the first 12 hex digits of its
/// SHA-256. Equal values give equal fingerprints, so a log can show that a
/// refresh token was presented twice without showing the token.
pub fn fingerprint(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// What the emulator learned about one request while answering it; every
/// field is left out of the JSON when unknown or not applicable.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RequestFacts {
    /// Token endpoints: `authorization_code`, `refresh_token` (the
    /// `grant_type` given, at most 40 characters) or `revoke`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// The calling app: the client id presented on a token endpoint (when it
    /// names a registered app), the access token's app on a bot endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The integration (app × DJ) of the credential or access token, when
    /// known (on a token endpoint: only when it belongs to that app).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration: Option<String>,
    /// Bot endpoints: the permission the call needs (none for the stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission: Option<&'static str>,
    /// Token endpoints: [`fingerprint`] of the code, refresh token or
    /// revoked token presented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// Token endpoints: the `error` of an OAuth error answer (`invalid_grant`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth_error: Option<String>,
    /// A call-quota 429: `perSecond` or `daily`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<&'static str>,
    /// A daily-quota 429's `x-ratelimit-daily-scope` (the permission blocked
    /// until the next midnight UTC of emulator time); absent when the whole
    /// app was blocked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_scope: Option<&'static str>,
    /// A daily-quota 429's `Retry-After`, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<i64>,
}

/// One request received.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// Emulator time.
    pub at_ms: i64,
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Query string with secret-looking values redacted (`null` when none).
    pub query: Option<String>,
    /// Status answered.
    pub status: u16,
    /// Its number in arrival order, from 1 (`?since=<seq>` pages on it).
    pub seq: u64,
    /// What was learned while answering.
    #[serde(flatten)]
    pub facts: RequestFacts,
}

/// A filter of `GET /_emulator/requests`: `since` (records after that
/// `seq`), `path` (exact), `clientId`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFilter {
    /// Only records with a larger `seq`.
    pub since: u64,
    /// Only this path.
    pub path: Option<String>,
    /// Only this app.
    pub client_id: Option<String>,
}

impl RequestFilter {
    /// Parses `since`, `path` and `clientId` from a query string.
    ///
    /// # Errors
    /// When `since` is not a whole number.
    pub fn parse(query: Option<&str>) -> Result<Self, String> {
        let mut f = RequestFilter::default();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match &*k {
                "since" => {
                    f.since = v
                        .parse()
                        .map_err(|_| format!("since must be a whole number, not {v:?}"))?;
                }
                "path" => f.path = Some(v.into_owned()),
                "clientId" => f.client_id = Some(v.into_owned()),
                _ => {}
            }
        }
        Ok(f)
    }

    /// Whether `r` passes.
    pub fn accepts(&self, r: &RequestRecord) -> bool {
        r.seq > self.since
            && self.path.as_ref().is_none_or(|p| *p == r.path)
            && self
                .client_id
                .as_ref()
                .is_none_or(|c| r.facts.client_id.as_ref() == Some(c))
    }
}

/// Query parameters that could carry a secret keep their name only.
///
/// ```
/// use onair_emulator::requests::redact_query;
/// assert_eq!(redact_query("cursor=abc&access_token=xyz"), "cursor=abc&access_token=[redacted]");
/// ```
pub fn redact_query(query: &str) -> String {
    const SECRET: [&str; 6] = [
        "access_token",
        "refresh_token",
        "token",
        "code",
        "client_secret",
        "password",
    ];
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if SECRET.contains(&k.to_ascii_lowercase().as_str()) => {
                format!("{k}=[redacted]")
            }
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// What the server read before routing: the whole body, the emulator time
/// it arrived at, and the switch that aborts its connection.
#[derive(Debug, Clone)]
pub struct Arrived {
    /// The body (capped by the server).
    pub body: Bytes,
    /// Emulator time when it was read.
    pub now: i64,
    /// Aborts the connection (a stream whose reader is stuck).
    pub kill: Option<Arc<Notify>>,
}
