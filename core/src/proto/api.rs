//! Requests as values, responses as values (spec 4, 5).
//!
//! Every endpoint has a builder that returns an [`HttpRequest`] — method, full
//! URL under a caller-given [`BaseUrl`] (one per region; no host is known
//! here), headers and body — for the caller's own HTTP client to send. Paths,
//! methods and permissions come from the one table in [`crate::proto::endpoint`].
//! Every success body has a decoder (`decode_*`). Nothing here does I/O.
//!
//! - Token endpoints ([`TokenClient`]): `application/x-www-form-urlencoded`
//!   bodies, client authentication by `Authorization: Basic` (default), form
//!   fields, or RFC 6749 §2.3.1's form-encode-then-base64 variant — chosen
//!   explicitly with [`ClientAuth`], never by retrying (a retried exchange
//!   burns the single-use code, spec 3.1).
//! - Bot endpoints ([`live`], [`listeners`], [`fans`], [`events`], [`chat`]):
//!   `Authorization: Bearer`.
//! - A token, code or header value holding CR, LF or another control
//!   character is refused ([`RequestError::ControlCharacter`]): no header
//!   injection through a driver that concatenates.
//! - [`chat`] refuses what the server would refuse
//!   ([`crate::proto::chat::validate_chat`]), before a quota call is spent.
//! - [`ListenerPager`] follows `nextCursor` safely.
//!
//! `Debug` of a request shows secrets as `<redacted>` (the example is on
//! [`crate::api`]).

use std::collections::HashSet;

use base64::Engine as _;
use zeroize::Zeroize;

use crate::proto::chat::{validate_chat, ChatError};
use crate::proto::endpoint::Endpoint;
use crate::proto::http::{
    check_value, form_body, form_component, query_component, BaseUrl, HttpRequest, InvalidBaseUrl,
    ValueError, FORM, JSON,
};
use crate::proto::model::{
    Broadcast, FanRanking, Listener, ListenersPage, RawTokenPair, TokenPair,
    DEFAULT_EXPIRES_IN_SECS,
};
use crate::proto::secret::{ClientCredentials, CredentialsError, Secret};
use crate::wire::JsonFault;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A request that was refused locally, before anything was sent. Messages
/// never contain secret values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The base URL is unusable (the reason says why).
    #[error(transparent)]
    InvalidBaseUrl(#[from] InvalidBaseUrl),
    /// The client credentials are unusable.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// A value that must not be empty was empty.
    #[error("{field} must not be empty")]
    Empty {
        /// Which value (`access_token`, `code`, …).
        field: &'static str,
    },
    /// A value holds CR, LF or another control character.
    #[error("{field} holds a control character (CR, LF, …); refused to prevent header injection")]
    ControlCharacter {
        /// Which value (`access_token`, `code`, …).
        field: &'static str,
    },
    /// A listeners cursor was empty; only a `nextCursor` of a previous page
    /// may be sent, and never an empty one.
    #[error("an empty or null cursor must never be sent; omit it for the first page")]
    EmptyCursor,
    /// The chat message would be refused by the server.
    #[error(transparent)]
    Chat(#[from] ChatError),
}

impl RequestError {
    /// A stable snake_case code for logs and bindings (`chat_too_long`,
    /// `chat_empty`, `invalid_client_id`, …).
    pub fn code(&self) -> &'static str {
        match self {
            RequestError::InvalidBaseUrl(_) => "invalid_base_url",
            RequestError::Credentials(e) => e.code(),
            RequestError::Empty { .. } => "empty_value",
            RequestError::ControlCharacter { .. } => "control_character",
            RequestError::EmptyCursor => "empty_cursor",
            RequestError::Chat(e) => e.kind.code(),
        }
    }
}

impl From<ValueError> for RequestError {
    fn from(e: ValueError) -> Self {
        match e {
            ValueError::Empty { field } => RequestError::Empty { field },
            ValueError::ControlCharacter { field } => RequestError::ControlCharacter { field },
        }
    }
}

// ---------------------------------------------------------------------------
// Token endpoints
// ---------------------------------------------------------------------------

/// How the client authenticates on the token endpoints (spec 5.2).
///
/// Pick one explicitly; onair never switches on its own by retrying, because
/// a retried code exchange revokes every token of the integration (spec 3.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ClientAuth {
    /// `Authorization: Basic base64(client_id:client_secret)`, the spec's
    /// form (5.2 rule 1).
    #[default]
    Basic,
    /// RFC 6749 §2.3.1: `Authorization: Basic` over the form-urlencoded id and
    /// secret (`base64(urlencode(id):urlencode(secret))`). Differs from
    /// [`ClientAuth::Basic`] only when the secret holds characters outside
    /// `A-Z a-z 0-9 *-._`.
    BasicFormEncoded,
    /// `client_id` and `client_secret` as form fields, no `Authorization`
    /// header (5.2 rule 2).
    FormFields,
}

/// `token_type_hint` of the revoke call (accepted and ignored by the
/// service, spec 4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenTypeHint {
    /// `access_token`
    AccessToken,
    /// `refresh_token`
    RefreshToken,
}

impl TokenTypeHint {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenTypeHint::AccessToken => "access_token",
            TokenTypeHint::RefreshToken => "refresh_token",
        }
    }
}

/// Builds the requests of the two token endpoints (spec 4.1, 4.2) for one
/// app's credentials. `Debug` redacts the client secret.
///
/// ```
/// use onair::api::TokenClient;
/// use onair::{BaseUrl, ClientCredentials};
///
/// let creds = ClientCredentials::new("0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f", "s3cret")?;
/// let client = TokenClient::new(BaseUrl::new("https://api.example.test")?, creds);
/// let req = client.issue("one-time-code", "https://bot.example.test/cb")?;
/// assert_eq!(req.url, "https://api.example.test/v1/oauth/token");
/// assert_eq!(
///     String::from_utf8_lossy(&req.body),
///     "grant_type=authorization_code&code=one-time-code&redirect_uri=https%3A%2F%2Fbot.example.test%2Fcb"
/// );
/// assert!(req.header("authorization").unwrap().starts_with("Basic "));
/// # Ok::<(), onair::api::RequestError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenClient {
    base: BaseUrl,
    credentials: ClientCredentials,
    auth: ClientAuth,
}

impl TokenClient {
    /// A client using [`ClientAuth::Basic`].
    pub fn new(base: BaseUrl, credentials: ClientCredentials) -> Self {
        TokenClient {
            base,
            credentials,
            auth: ClientAuth::Basic,
        }
    }

    /// The same client with another authentication method.
    pub fn with_auth(mut self, auth: ClientAuth) -> Self {
        self.auth = auth;
        self
    }

    /// The base URL.
    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// The authentication method.
    pub fn auth(&self) -> ClientAuth {
        self.auth
    }

    /// The credentials.
    pub fn credentials(&self) -> &ClientCredentials {
        &self.credentials
    }

    /// `POST /v1/oauth/token` with `grant_type=authorization_code`. The code
    /// is single-use: send the result once and never retry it.
    pub fn issue(&self, code: &str, redirect_uri: &str) -> Result<HttpRequest, RequestError> {
        check_value("code", code)?;
        check_value("redirect_uri", redirect_uri)?;
        self.token_request(
            Endpoint::Token,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
            ],
        )
    }

    /// `POST /v1/oauth/token` with `grant_type=refresh_token`.
    pub fn refresh(&self, refresh_token: &Secret) -> Result<HttpRequest, RequestError> {
        check_value("refresh_token", refresh_token.expose())?;
        self.token_request(
            Endpoint::Token,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token.expose()),
            ],
        )
    }

    /// `POST /v1/oauth/revoke`. Revoking the refresh token also revokes the
    /// access token of the integration (spec 3.2).
    pub fn revoke(
        &self,
        token: &Secret,
        hint: Option<TokenTypeHint>,
    ) -> Result<HttpRequest, RequestError> {
        check_value("token", token.expose())?;
        match hint {
            Some(h) => self.token_request(
                Endpoint::Revoke,
                &[("token", token.expose()), ("token_type_hint", h.as_str())],
            ),
            None => self.token_request(Endpoint::Revoke, &[("token", token.expose())]),
        }
    }

    fn token_request(
        &self,
        endpoint: Endpoint,
        fields: &[(&str, &str)],
    ) -> Result<HttpRequest, RequestError> {
        let id = self.credentials.client_id().as_str();
        let secret = self.credentials.client_secret().expose();
        let mut request = HttpRequest::to(endpoint, &self.base, "")
            .with_header("Content-Type", FORM)
            .with_header("Accept", JSON);
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        let basic = match self.auth {
            ClientAuth::Basic => Some(format!("{id}:{secret}")),
            ClientAuth::BasicFormEncoded => {
                Some(format!("{}:{}", form_component(id), form_component(secret)))
            }
            ClientAuth::FormFields => {
                all.push(("client_id", id));
                all.push(("client_secret", secret));
                None
            }
        };
        if let Some(mut plain) = basic {
            let encoded = base64::engine::general_purpose::STANDARD.encode(plain.as_bytes());
            plain.zeroize();
            request = request.with_credential(format!("Basic {encoded}"));
        }
        Ok(request.with_body(form_body(&all)))
    }
}

// ---------------------------------------------------------------------------
// Bot endpoints
// ---------------------------------------------------------------------------

/// A bot endpoint's request (`suffix`: its query, if any) with the access
/// token as `Authorization: Bearer` (spec 5.1).
fn bearer(
    endpoint: Endpoint,
    base: &BaseUrl,
    suffix: &str,
    access_token: &Secret,
) -> Result<HttpRequest, RequestError> {
    check_value("access_token", access_token.expose())?;
    Ok(HttpRequest::to(endpoint, base, suffix)
        .with_credential(format!("Bearer {}", access_token.expose())))
}

/// `GET /v1/live`: the current broadcast (needs `live.read`).
///
/// ```
/// # use onair::{api, BaseUrl, Secret};
/// let req = api::live(&BaseUrl::new("https://a.test")?, &Secret::new("t"))?;
/// assert_eq!((req.method.as_str(), req.url.as_str()), ("GET", "https://a.test/v1/live"));
/// # Ok::<(), onair::api::RequestError>(())
/// ```
pub fn live(base: &BaseUrl, access_token: &Secret) -> Result<HttpRequest, RequestError> {
    Ok(bearer(Endpoint::Live, base, "", access_token)?.with_header("Accept", JSON))
}

/// `GET /v1/live/listeners[?cursor=…]` (needs `listeners.read`). Pass `None`
/// for the first page and a previous `nextCursor` after that; an empty cursor
/// is refused. Prefer [`ListenerPager`], which does this for you.
///
/// ```
/// # use onair::{api, BaseUrl, Secret};
/// let base = BaseUrl::new("https://a.test")?;
/// let req = api::listeners(&base, &Secret::new("t"), Some("c/1 +"))?;
/// assert_eq!(req.url, "https://a.test/v1/live/listeners?cursor=c%2F1%20%2B");
/// assert!(api::listeners(&base, &Secret::new("t"), Some("")).is_err());
/// # Ok::<(), onair::api::RequestError>(())
/// ```
pub fn listeners(
    base: &BaseUrl,
    access_token: &Secret,
    cursor: Option<&str>,
) -> Result<HttpRequest, RequestError> {
    let query = match cursor {
        None => String::new(),
        Some("") => return Err(RequestError::EmptyCursor),
        Some(c) => format!("?cursor={}", query_component(c)),
    };
    Ok(bearer(Endpoint::Listeners, base, &query, access_token)?.with_header("Accept", JSON))
}

/// `GET /v1/live/fans`: the top-30 donor ranking (needs `fans.read`).
pub fn fans(base: &BaseUrl, access_token: &Secret) -> Result<HttpRequest, RequestError> {
    Ok(bearer(Endpoint::Fans, base, "", access_token)?.with_header("Accept", JSON))
}

/// `GET /v1/live/events` with `Accept: text/event-stream` (needs any
/// `events.*` permission). Open it as a streaming GET.
pub fn events(base: &BaseUrl, access_token: &Secret) -> Result<HttpRequest, RequestError> {
    Ok(
        bearer(Endpoint::Events, base, "", access_token)?
            .with_header("Accept", "text/event-stream"),
    )
}

/// `POST /v1/live/chat` with body `{"message":…}` (needs `chat.send`). The
/// message is checked with [`crate::proto::chat::validate_chat`] first.
///
/// ```
/// # use onair::{api, BaseUrl, Secret};
/// let base = BaseUrl::new("https://a.test")?;
/// let req = api::chat(&base, &Secret::new("t"), "hi \"all\"")?;
/// assert_eq!(&*req.body, br#"{"message":"hi \"all\""}"#);
/// let err = api::chat(&base, &Secret::new("t"), " \u{3000}").unwrap_err();
/// assert_eq!(err.code(), "chat_empty");
/// # Ok::<(), onair::api::RequestError>(())
/// ```
pub fn chat(
    base: &BaseUrl,
    access_token: &Secret,
    message: &str,
) -> Result<HttpRequest, RequestError> {
    validate_chat(message)?;
    #[derive(serde::Serialize)]
    struct Body<'a> {
        message: &'a str,
    }
    let body = serde_json::to_vec(&Body { message }).unwrap_or_default();
    Ok(bearer(Endpoint::Chat, base, "", access_token)?
        .with_header("Content-Type", JSON)
        .with_body(body))
}

// ---------------------------------------------------------------------------
// Response decoders
// ---------------------------------------------------------------------------

/// Why a success body did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponseErrorKind {
    /// Not JSON (or truncated).
    InvalidJson,
    /// JSON, but a required field is missing or has the wrong type, or a
    /// value is unusable (e.g. a token with a control character).
    InvalidBody,
    /// A token response whose `token_type` is not `Bearer`.
    UnsupportedTokenType,
}

impl ResponseErrorKind {
    /// `invalid_json`, `invalid_body` or `unsupported_token_type`.
    pub fn code(self) -> &'static str {
        match self {
            ResponseErrorKind::InvalidJson => "invalid_json",
            ResponseErrorKind::InvalidBody => "invalid_body",
            ResponseErrorKind::UnsupportedTokenType => "unsupported_token_type",
        }
    }
}

/// A success body that did not decode. The message names what was wanted
/// and where (`missing field \`access_token\` at byte 2`), never a value: in
/// a token response it could be a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", kind.code())]
pub struct ResponseError {
    /// What went wrong.
    pub kind: ResponseErrorKind,
    /// A description for logs.
    pub message: String,
}

/// Reads a whole body. A fault is sorted into not JSON (`invalid_json`) or
/// JSON of another shape (`invalid_body`); its message names what was wanted
/// and where, never a value (a token response's could be a secret).
fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ResponseError> {
    serde_json::from_slice(body).map_err(|e| {
        let fault = JsonFault::of(body, &e);
        ResponseError {
            kind: if fault.syntax {
                ResponseErrorKind::InvalidJson
            } else {
                ResponseErrorKind::InvalidBody
            },
            message: fault.message,
        }
    })
}

/// Decodes a token response (spec 2.1) of the issue or refresh call.
///
/// `token_type` must be `Bearer`, compared case-insensitively; a missing
/// `expires_in` means 3600; `scope` becomes a [`Scope`](crate::proto::scope::Scope).
/// Tokens must be non-empty and free of control characters.
///
/// ```
/// use onair::api::decode_token_pair;
/// use onair::Permission;
///
/// let pair = decode_token_pair(br#"{"access_token":"AT-xyz","token_type":"bearer",
///     "refresh_token":"RT-xyz","scope":"chat.send live.read"}"#).unwrap();
/// assert_eq!(pair.expires_in, 3600);
/// assert!(pair.scope.as_ref().unwrap().contains(&Permission::ChatSend));
/// assert!(!format!("{pair:?}").contains("xyz"));
/// assert_eq!(pair.access_token.expose(), "AT-xyz");
/// ```
pub fn decode_token_pair(body: &[u8]) -> Result<TokenPair, ResponseError> {
    let raw: RawTokenPair = decode(body)?;
    if !raw.token_type.eq_ignore_ascii_case("bearer") {
        // At most 32 characters, control characters shown as `?` (a log
        // line stays one line).
        let shown: String = raw
            .token_type
            .chars()
            .take(32)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        return Err(ResponseError {
            kind: ResponseErrorKind::UnsupportedTokenType,
            message: format!("token_type \"{shown}\" is not Bearer"),
        });
    }
    let unusable = |field: &'static str, value: &str| {
        check_value(field, value).map_err(|e| ResponseError {
            kind: ResponseErrorKind::InvalidBody,
            message: e.to_string(),
        })
    };
    unusable("access_token", raw.access_token.expose())?;
    if let Some(refresh) = &raw.refresh_token {
        unusable("refresh_token", refresh.expose())?;
    }
    Ok(TokenPair {
        expires_in: raw.expires_in.unwrap_or(DEFAULT_EXPIRES_IN_SECS),
        access_token: raw.access_token,
        refresh_token: raw.refresh_token,
        scope: raw.scope,
    })
}

/// Decodes GET /v1/live (spec 2.2).
///
/// ```
/// let body = br#"{"liveId":1,"title":"t","startedAt":"2024-01-01T00:00:00Z",
///   "closeAirTime":"2024-01-01T01:00:00Z","listenerCount":2,"totalListenerCount":5,
///   "welcomeMessage":"hi","isChatFrozen":false,"categories":[],"tags":["x"]}"#;
/// assert_eq!(onair::api::decode_broadcast(body).unwrap().tags, ["x"]);
/// ```
pub fn decode_broadcast(body: &[u8]) -> Result<Broadcast, ResponseError> {
    decode(body)
}

/// Decodes one page of GET /v1/live/listeners (spec 2.3).
pub fn decode_listeners(body: &[u8]) -> Result<ListenersPage, ResponseError> {
    decode(body)
}

/// Decodes GET /v1/live/fans (spec 2.4).
pub fn decode_fans(body: &[u8]) -> Result<FanRanking, ResponseError> {
    decode(body)
}

// ---------------------------------------------------------------------------
// Listener pager
// ---------------------------------------------------------------------------

/// Why the pager stopped or refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PagerError {
    /// The server sent a `nextCursor` that was already followed: paging
    /// would never end, so it stops here.
    #[error("the server repeated a nextCursor; paging stopped")]
    RepeatedCursor,
    /// More pages than the pager's limit; it stops here.
    #[error("more than {limit} listener pages; paging stopped")]
    TooManyPages {
        /// The limit.
        limit: usize,
    },
    /// A page was given while no request was outstanding (caller misuse).
    #[error("no listeners page was requested")]
    NotAwaiting,
    /// The page body did not decode; the same page may be requested again.
    #[error("listeners page: {0}")]
    Decode(ResponseError),
}

/// What the pager says after a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PagerProgress {
    /// Another page follows: call [`ListenerPager::next_request`].
    More,
    /// That was the last page: [`ListenerPager::listeners`] is the list.
    Complete,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PagerState {
    /// The next request may go, with this cursor (`None`: first page).
    Ready(Option<String>),
    /// A request with this cursor is outstanding.
    Awaiting(Option<String>),
    Complete,
    Failed(PagerError),
}

/// Lists everyone in the room across pages (spec 4.4), one request at a time.
///
/// It follows `nextCursor` until it is null, never sends a null or empty
/// cursor, keeps the first occurrence of each person `id` (the list is a
/// snapshot; people come and go between pages, so one may appear twice), and
/// stops with [`PagerError::RepeatedCursor`] when the server sends a cursor it
/// already followed, so paging always ends.
///
/// ```
/// use onair::api::{ListenerPager, PagerProgress};
/// use onair::{BaseUrl, Secret};
///
/// let (base, token) = (BaseUrl::new("https://a.test")?, Secret::new("t"));
/// let mut pager = ListenerPager::new();
/// let first = pager.next_request(&base, &token)?.unwrap();
/// assert_eq!(first.url, "https://a.test/v1/live/listeners");
/// let page = br#"{"listeners":[{"id":"1","nickname":"a"}],"nextCursor":"c2"}"#;
/// assert_eq!(pager.on_body(page), Ok(PagerProgress::More));
/// let second = pager.next_request(&base, &token)?.unwrap();
/// assert_eq!(second.url, "https://a.test/v1/live/listeners?cursor=c2");
/// let last = br#"{"listeners":[{"id":"1","nickname":"a"},{"id":"2","nickname":"b"}],"nextCursor":null}"#;
/// assert_eq!(pager.on_body(last), Ok(PagerProgress::Complete));
/// assert_eq!(pager.listeners().len(), 2);
/// assert!(pager.next_request(&base, &token)?.is_none());
/// # Ok::<(), onair::api::RequestError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ListenerPager {
    state: PagerState,
    listeners: Vec<Listener>,
    seen_ids: HashSet<String>,
    followed: HashSet<String>,
    pages: usize,
    max_pages: usize,
}

impl Default for ListenerPager {
    fn default() -> Self {
        Self::new()
    }
}

impl ListenerPager {
    /// The default page limit: far above any real room, low enough to bound
    /// memory against a server that never stops.
    pub const DEFAULT_MAX_PAGES: usize = 10_000;

    /// A pager at the first page.
    pub fn new() -> Self {
        Self::with_max_pages(Self::DEFAULT_MAX_PAGES)
    }

    /// A pager that stops with [`PagerError::TooManyPages`] after `max_pages`
    /// pages (at least 1).
    pub fn with_max_pages(max_pages: usize) -> Self {
        ListenerPager {
            state: PagerState::Ready(None),
            listeners: Vec::new(),
            seen_ids: HashSet::new(),
            followed: HashSet::new(),
            pages: 0,
            max_pages: max_pages.max(1),
        }
    }

    /// The request for the next page, or `None` while a page is outstanding,
    /// after the last page, or after an error.
    pub fn next_request(
        &mut self,
        base: &BaseUrl,
        access_token: &Secret,
    ) -> Result<Option<HttpRequest>, RequestError> {
        let PagerState::Ready(cursor) = &self.state else {
            return Ok(None);
        };
        let request = listeners(base, access_token, cursor.as_deref())?;
        self.state = PagerState::Awaiting(cursor.clone());
        Ok(Some(request))
    }

    /// Takes the decoded page answering the outstanding request.
    pub fn on_page(&mut self, page: ListenersPage) -> Result<PagerProgress, PagerError> {
        if !matches!(self.state, PagerState::Awaiting(_)) {
            return Err(PagerError::NotAwaiting);
        }
        self.pages += 1;
        for listener in page.listeners {
            if !self.seen_ids.contains(&listener.id) {
                self.seen_ids.insert(listener.id.clone());
                self.listeners.push(listener);
            }
        }
        match page.next_cursor.filter(|c| !c.is_empty()) {
            None => {
                self.state = PagerState::Complete;
                Ok(PagerProgress::Complete)
            }
            Some(cursor) => {
                let error = if self.followed.contains(&cursor) {
                    Some(PagerError::RepeatedCursor)
                } else if self.pages >= self.max_pages {
                    Some(PagerError::TooManyPages {
                        limit: self.max_pages,
                    })
                } else {
                    None
                };
                if let Some(error) = error {
                    self.state = PagerState::Failed(error.clone());
                    return Err(error);
                }
                self.followed.insert(cursor.clone());
                self.state = PagerState::Ready(Some(cursor));
                Ok(PagerProgress::More)
            }
        }
    }

    /// Decodes a 200 body and takes it as the page. On a decode error the same
    /// page can be requested again.
    pub fn on_body(&mut self, body: &[u8]) -> Result<PagerProgress, PagerError> {
        if !matches!(self.state, PagerState::Awaiting(_)) {
            return Err(PagerError::NotAwaiting);
        }
        match decode_listeners(body) {
            Ok(page) => self.on_page(page),
            Err(e) => {
                self.retry_page();
                Err(PagerError::Decode(e))
            }
        }
    }

    /// The outstanding request failed (transport error or an HTTP error the
    /// caller handles): the same page may be requested again.
    pub fn retry_page(&mut self) {
        if let PagerState::Awaiting(cursor) = &mut self.state {
            self.state = PagerState::Ready(cursor.take());
        }
    }

    /// Whether the last page was taken.
    pub fn is_complete(&self) -> bool {
        self.state == PagerState::Complete
    }

    /// The error that stopped paging, if any.
    pub fn error(&self) -> Option<&PagerError> {
        match &self.state {
            PagerState::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Pages taken so far.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Everyone seen so far, deduplicated by `id`, in order of first sight.
    pub fn listeners(&self) -> &[Listener] {
        &self.listeners
    }

    /// The list, consuming the pager.
    pub fn into_listeners(self) -> Vec<Listener> {
        self.listeners
    }
}

#[cfg(test)]
mod tests;
