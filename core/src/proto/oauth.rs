//! Tokens: credentials, the token state, when to refresh, what to persist
//! (spec 2.1, 3.1, 3.2, 5). The machine is [`TokenManager`] (its docs hold
//! the rules it keeps); the stored form is [`Tokens::to_json`].

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};

use zeroize::Zeroizing;

use crate::proto::api::{self, RequestError, TokenClient, TokenTypeHint};
use crate::proto::endpoint::Endpoint;
use crate::proto::http::{check_value, HttpRequest};
use crate::proto::misuse::Misuse;
use crate::proto::model::TokenPair;
use crate::proto::problem::classify;
use crate::proto::scope::Scope;
use crate::proto::secret::Secret;
use crate::wire::{self, wire_enum, StoredRefusal};

// ---------------------------------------------------------------------------
// Tokens (one pair, with times) and its stored form
// ---------------------------------------------------------------------------

/// Default refresh-token lifetime (spec 2.1, 8): 30 days.
pub const DEFAULT_REFRESH_TOKEN_LIFETIME_MS: u64 = 30 * 24 * 60 * 60 * 1000;

/// Default refresh margin: 10 minutes. See [`RefreshPolicy`].
pub const DEFAULT_REFRESH_MARGIN_MS: u64 = 10 * 60 * 1000;

/// The `format` marker of the stored form.
pub const STORED_FORMAT: &str = "onair.tokens";

/// The version of the stored form this build writes and reads.
pub const STORED_VERSION: u32 = 1;

/// A refresh token and when it stops working.
#[derive(Clone, PartialEq, Eq)]
struct RefreshToken {
    token: Secret,
    expires_at_ms: u64,
}

/// The current token pair with its wall-clock times and generation.
///
/// Times are unix milliseconds. `generation` grows by one with every new pair
/// (exchange or refresh), so two processes sharing a store can tell which pair
/// is newer. `Debug` and `Display` never show the tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct Tokens {
    access_token: Secret,
    refresh: Option<RefreshToken>,
    scope: Scope,
    issued_at_ms: u64,
    access_expires_at_ms: u64,
    generation: u64,
}

impl Tokens {
    /// The access token, for `Authorization: Bearer`.
    pub fn access_token(&self) -> &Secret {
        &self.access_token
    }

    /// The refresh token, if one was issued.
    pub fn refresh_token(&self) -> Option<&Secret> {
        self.refresh.as_ref().map(|r| &r.token)
    }

    /// The DJ's consent as of the last issue or refresh.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// When the pair was requested (unix ms). Expiry is counted from here,
    /// the conservative end: the server issued it after the request left.
    pub fn issued_at_ms(&self) -> u64 {
        self.issued_at_ms
    }

    /// When the access token expires (unix ms).
    pub fn access_expires_at_ms(&self) -> u64 {
        self.access_expires_at_ms
    }

    /// When the refresh token expires (unix ms), if there is one.
    pub fn refresh_expires_at_ms(&self) -> Option<u64> {
        self.refresh.as_ref().map(|r| r.expires_at_ms)
    }

    /// The generation: 1 for the first pair, one more for each new pair.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the access token has expired at `now_ms`.
    pub fn is_access_expired(&self, now_ms: u64) -> bool {
        now_ms >= self.access_expires_at_ms
    }

    /// Whether the refresh token is missing or expired at `now_ms`.
    pub fn is_refresh_expired(&self, now_ms: u64) -> bool {
        self.refresh
            .as_ref()
            .is_none_or(|r| now_ms >= r.expires_at_ms)
    }

    /// Whether this pair is newer than `other` (a higher generation).
    pub fn is_newer_than(&self, other: &Tokens) -> bool {
        self.generation > other.generation
    }

    /// The pair built from a token response received for a request sent at
    /// `sent_at_ms`. Fields the response omits (refresh token, scope) are
    /// kept from `previous` (RFC 6749 §6, §5.1).
    fn from_pair(
        pair: TokenPair,
        sent_at_ms: u64,
        previous: Option<&Tokens>,
        generation: u64,
        policy: &RefreshPolicy,
    ) -> Tokens {
        let refresh = match pair.refresh_token {
            Some(token) => Some(RefreshToken {
                token,
                expires_at_ms: sent_at_ms.saturating_add(policy.refresh_token_lifetime_ms),
            }),
            None => previous.and_then(|p| p.refresh.clone()),
        };
        let scope = pair
            .scope
            .or_else(|| previous.map(|p| p.scope.clone()))
            .unwrap_or_default();
        Tokens {
            access_token: pair.access_token,
            refresh,
            scope,
            issued_at_ms: sent_at_ms,
            access_expires_at_ms: sent_at_ms.saturating_add(pair.expires_in.saturating_mul(1000)),
            generation,
        }
    }

    /// The versioned JSON form to store. It holds the secrets, so it is
    /// returned in a buffer that is zeroized on drop.
    ///
    /// ```
    /// # use onair::Tokens;
    /// let json = br#"{"format":"onair.tokens","version":1,"generation":4,
    ///   "access_token":"A","access_expires_at_ms":5000,"issued_at_ms":1000,
    ///   "refresh_token":"R","refresh_expires_at_ms":90000,"scope":"live.read"}"#;
    /// let tokens = Tokens::from_json(json).unwrap();
    /// assert_eq!(tokens.generation(), 4);
    /// assert_eq!(Tokens::from_json(tokens.to_json().as_bytes()).unwrap(), tokens);
    /// ```
    pub fn to_json(&self) -> Zeroizing<String> {
        let access = self.access_token.expose();
        let refresh = self.refresh_token().map(Secret::expose);
        // Room for the whole text up front: a growing buffer would leave
        // copies of the tokens behind in freed memory (an escape writes at
        // most six bytes for one: `\u00XX`).
        let scope = self.scope.to_string();
        let room = 512 + 6 * (access.len() + refresh.map_or(0, str::len) + scope.len());
        let stored = StoredOut {
            format: STORED_FORMAT,
            version: STORED_VERSION,
            generation: self.generation,
            access_token: access,
            access_expires_at_ms: self.access_expires_at_ms,
            issued_at_ms: self.issued_at_ms,
            refresh_token: refresh,
            refresh_expires_at_ms: self.refresh_expires_at_ms(),
            scope: &scope,
        };
        let mut out = Vec::with_capacity(room);
        // Writing plain values into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &stored);
        debug_assert!(out.len() <= room, "the token file outgrew its buffer");
        // serde_json writes UTF-8; the check cannot fail and copies nothing.
        Zeroizing::new(String::from_utf8(out).unwrap_or_default())
    }

    /// Reads the stored form written by [`Tokens::to_json`]. Unknown fields
    /// are ignored; another `format` or a `version` this build does not know
    /// is refused. Errors never quote the input.
    pub fn from_json(json: &[u8]) -> Result<Tokens, LoadError> {
        let stored: Stored = wire::read_stored(json, STORED_FORMAT, STORED_VERSION).map_err(
            |refusal| match refusal {
                StoredRefusal::Json { line, column } => LoadError::Json { line, column },
                StoredRefusal::UnknownFormat => LoadError::UnknownFormat,
                StoredRefusal::MissingVersion => LoadError::Invalid("version is missing"),
                StoredRefusal::UnsupportedVersion(v) => LoadError::UnsupportedVersion(v),
            },
        )?;
        let check = |field: &'static str, value: &str| {
            check_value(field, value).map_err(|_| {
                LoadError::Invalid("a stored token is empty or holds a control character")
            })
        };
        check("access_token", stored.access_token.expose())?;
        let refresh = match (stored.refresh_token, stored.refresh_expires_at_ms) {
            (Some(token), Some(expires_at_ms)) => {
                check("refresh_token", token.expose())?;
                Some(RefreshToken {
                    token,
                    expires_at_ms,
                })
            }
            (Some(_), None) => {
                return Err(LoadError::Invalid(
                    "refresh_token without refresh_expires_at_ms",
                ))
            }
            (None, _) => None,
        };
        Ok(Tokens {
            access_token: stored.access_token,
            refresh,
            scope: stored.scope,
            issued_at_ms: stored.issued_at_ms,
            access_expires_at_ms: stored.access_expires_at_ms,
            generation: stored.generation,
        })
    }
}

/// The stored form as written: `format`, `version`, then the pair.
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct StoredOut<'a> {
    /// Always `onair.tokens`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "onair.tokens")))]
    format: &'static str,
    version: u32,
    generation: u64,
    access_token: &'a str,
    access_expires_at_ms: u64,
    issued_at_ms: u64,
    refresh_token: Option<&'a str>,
    refresh_expires_at_ms: Option<u64>,
    scope: &'a str,
}

/// The stored form's fields past `format` and `version`, as read.
#[derive(serde::Deserialize)]
struct Stored {
    generation: u64,
    #[serde(deserialize_with = "crate::proto::model::secret")]
    access_token: Secret,
    access_expires_at_ms: u64,
    issued_at_ms: u64,
    #[serde(default, deserialize_with = "crate::proto::model::nullable_secret")]
    refresh_token: Option<Secret>,
    #[serde(default)]
    refresh_expires_at_ms: Option<u64>,
    #[serde(default, deserialize_with = "crate::wire::null_as_default")]
    scope: Scope,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &self.access_token)
            .field("refresh_token", &self.refresh_token())
            .field("scope", &self.scope.to_string())
            .field("issued_at_ms", &self.issued_at_ms)
            .field("access_expires_at_ms", &self.access_expires_at_ms)
            .field("refresh_expires_at_ms", &self.refresh_expires_at_ms())
            .field("generation", &self.generation)
            .finish()
    }
}

impl fmt::Display for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tokens generation {} (access expires at {} ms, refresh {}; scope \"{}\")",
            self.generation,
            self.access_expires_at_ms,
            match self.refresh_expires_at_ms() {
                Some(at) => format!("expires at {at} ms"),
                None => "absent".to_owned(),
            },
            self.scope
        )
    }
}

/// Why stored tokens could not be loaded. Never quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Not JSON of the expected shape (position only).
    #[error("stored tokens are not valid (error at line {line} column {column})")]
    Json {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// `format` is not `"onair.tokens"`.
    #[error("stored tokens: format is not \"{STORED_FORMAT}\"")]
    UnknownFormat,
    /// A version this build does not read (written by a newer onair?).
    #[error("stored tokens: version {0} is not supported (this build reads {STORED_VERSION})")]
    UnsupportedVersion(u64),
    /// A field is inconsistent.
    #[error("stored tokens: {0}")]
    Invalid(&'static str),
}

// ---------------------------------------------------------------------------
// Refresh policy
// ---------------------------------------------------------------------------

/// When to refresh, and how long a refresh token lives.
///
/// A refresh is due at `access_expires_at - min(margin, lifetime / 2)`.
///
/// Why 10 minutes by default, and why capped at half the lifetime: the spec
/// suggests refreshing "well before expiry (for example one hour before)", but
/// for the default one-hour token a one-hour margin means refreshing the moment
/// a token arrives, forever. What the margin must buy is time to *retry* a
/// failed refresh (a 5xx or 429 backed off 1 s doubling to 30 s fits about ten
/// attempts in 10 minutes) and tolerance for clock skew between the caller and
/// the server, at the cost of one refresh call per ~50 minutes (~29 a day).
/// Refreshing earlier gains nothing for the event stream: an open stream ends
/// with `TOKEN_EXPIRED` when the token it was opened with expires, whatever
/// was refreshed meanwhile. The cap at half the lifetime keeps short-lived
/// tokens (or a large configured margin) from triggering refresh loops: a token
/// is always used for at least half its life.
///
/// ```
/// use onair::api::RefreshPolicy;
///
/// let p = RefreshPolicy::default();
/// // one-hour token issued at 0: refresh at 50 minutes
/// assert_eq!(p.refresh_at_ms(0, 3_600_000), 3_000_000);
/// // two-minute token: refresh at half-life
/// assert_eq!(p.refresh_at_ms(0, 120_000), 60_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RefreshPolicy {
    /// Refresh this long before the access token expires (capped at half the
    /// token's lifetime).
    pub margin_ms: u64,
    /// The refresh token's lifetime, counted from its issue.
    pub refresh_token_lifetime_ms: u64,
}

impl Default for RefreshPolicy {
    fn default() -> Self {
        RefreshPolicy {
            margin_ms: DEFAULT_REFRESH_MARGIN_MS,
            refresh_token_lifetime_ms: DEFAULT_REFRESH_TOKEN_LIFETIME_MS,
        }
    }
}

impl RefreshPolicy {
    /// When a token issued at `issued_at_ms` and expiring at `expires_at_ms`
    /// should be refreshed.
    pub fn refresh_at_ms(&self, issued_at_ms: u64, expires_at_ms: u64) -> u64 {
        let lifetime = expires_at_ms.saturating_sub(issued_at_ms);
        expires_at_ms.saturating_sub(self.margin_ms.min(lifetime / 2))
    }
}

// ---------------------------------------------------------------------------
// Token endpoint error bodies
// ---------------------------------------------------------------------------

wire_enum! {
    /// `error` of a token endpoint error body (RFC 6749 §5.2, spec 7.4).
    pub enum OAuthErrorCode {
        /// A required form field is missing.
        InvalidRequest = "invalid_request",
        /// Client authentication failed, `client_id` malformed, or the app is suspended.
        InvalidClient = "invalid_client",
        /// Code or refresh token invalid, expired, used, or for another app.
        InvalidGrant = "invalid_grant",
        /// A `grant_type` other than the two supported.
        UnsupportedGrantType = "unsupported_grant_type",
    }
}

/// A failed token call, as far as onair can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFailure {
    /// An HTTP error status, with the body's `error` when it had one.
    Http {
        /// The status code.
        status: u16,
        /// The RFC 6749 `error`, when the body carried one.
        error: Option<OAuthErrorCode>,
    },
    /// 200, but the body was not a usable token pair.
    InvalidBody(api::ResponseError),
    /// No response (connection failed, timed out): the outcome is unknown.
    Transport,
    /// The request never left this machine (connection refused, DNS, TLS):
    /// nothing was spent, but the service could not be reached.
    NotSent,
}

impl fmt::Display for TokenFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenFailure::Http {
                status,
                error: Some(e),
            } => write!(f, "HTTP {status} {e}"),
            TokenFailure::Http {
                status,
                error: None,
            } => write!(f, "HTTP {status}"),
            TokenFailure::InvalidBody(e) => write!(f, "unusable token response: {e}"),
            TokenFailure::Transport => f.write_str("no response (outcome unknown)"),
            TokenFailure::NotSent => {
                f.write_str("the service could not be reached; nothing was sent")
            }
        }
    }
}

/// The RFC 6749 `error` of a token endpoint's error body, read by the one
/// error-body parser of the crate ([`crate::proto::problem::classify`]).
fn error_code(status: u16, body: &[u8]) -> Option<OAuthErrorCode> {
    classify(Endpoint::Token, status, &[] as &[(&str, &str)], body)
        .oauth_error
        .as_deref()
        .map(OAuthErrorCode::from_wire)
}

// ---------------------------------------------------------------------------
// The machine
// ---------------------------------------------------------------------------

/// Why the tokens cannot be used or renewed without a person acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthProblem {
    /// No tokens yet: send the DJ through consent, then exchange the code.
    NotAuthorized,
    /// The tokens were revoked from this side.
    Revoked,
    /// The code exchange failed (rejected, or an ambiguous failure). The
    /// code is spent either way: a new consent code is needed.
    ExchangeFailed(TokenFailure),
    /// The refresh was refused with `invalid_grant` (rotated elsewhere,
    /// expired, revoked, or the DJ disconnected): the DJ must authorize again.
    RefreshRejected,
    /// The refresh token's lifetime has passed: the DJ must authorize again.
    RefreshTokenExpired,
    /// The pair came without a refresh token and the access token is due.
    NoRefreshToken,
    /// The token endpoint refused the refresh request itself (a 4xx such as
    /// `invalid_request` or `unsupported_grant_type`): resending it unchanged
    /// gives the same answer (spec 7.3), so it is not retried. The
    /// integration needs fixing; then the DJ authorizes again.
    RequestRejected(TokenFailure),
    /// The service refused a freshly refreshed access token (a second 401
    /// in a row, spec 7.3): the grant is gone, the DJ must authorize again.
    AccessRejected,
    /// The consent code given was already exchanged, or is not a usable
    /// value: it was not sent; a new code is needed.
    CodeUnusable,
    /// The token endpoint refused the client (`invalid_client` or 401):
    /// wrong credentials or a suspended app. Fix the configuration; the DJ
    /// cannot help.
    ClientRejected,
}

impl AuthProblem {
    /// Whether the DJ must go through consent again (everything but
    /// [`AuthProblem::ClientRejected`]).
    pub fn needs_authorization(&self) -> bool {
        !matches!(self, AuthProblem::ClientRejected)
    }
}

impl fmt::Display for AuthProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthProblem::NotAuthorized => f.write_str("not authorized yet: DJ consent is needed"),
            AuthProblem::Revoked => f.write_str("tokens revoked: DJ consent is needed"),
            AuthProblem::ExchangeFailed(why) => {
                write!(
                    f,
                    "code exchange failed ({why}): a new consent code is needed"
                )
            }
            AuthProblem::RefreshRejected => {
                f.write_str("refresh rejected (invalid_grant): the DJ must authorize again")
            }
            AuthProblem::RefreshTokenExpired => {
                f.write_str("refresh token expired: the DJ must authorize again")
            }
            AuthProblem::NoRefreshToken => {
                f.write_str("no refresh token was issued: the DJ must authorize again")
            }
            AuthProblem::RequestRejected(why) => write!(
                f,
                "token request rejected ({why}): fix the integration, then authorize again"
            ),
            AuthProblem::AccessRejected => {
                f.write_str("a fresh access token was refused (401): the DJ must authorize again")
            }
            AuthProblem::CodeUnusable => f.write_str(
                "the consent code was already used or is malformed: a new code is needed",
            ),
            AuthProblem::ClientRejected => f.write_str(
                "client credentials rejected (invalid_client): fix the app configuration",
            ),
        }
    }
}

/// What a token response (or its absence) led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenOutcome {
    /// A new pair is in force: persist it now (a restart without it needs new
    /// DJ consent).
    Persist(Tokens),
    /// The refresh failed in a way that may pass (5xx, 429, network, …):
    /// the old pair stays; try again later with backoff. For a code exchange
    /// only from [`TokenManager::on_not_sent`] (nothing was spent).
    RetryLater(TokenFailure),
    /// A person must act; see the reason.
    Blocked(AuthProblem),
}

/// Where the manager stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenStatus {
    /// The access token is good; refresh at the given time.
    Valid {
        /// When a refresh becomes due (unix ms).
        refresh_at_ms: u64,
    },
    /// Start a refresh now ([`TokenManager::start_refresh`]).
    RefreshDue,
    /// A code exchange is in flight.
    Exchanging,
    /// A refresh is in flight.
    Refreshing,
    /// A person must act.
    Blocked(AuthProblem),
}

/// Why the token machine refused a call (a local error: nothing was sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The call does not fit the machine's state (a request already in
    /// flight, a response with none in flight).
    #[error(transparent)]
    Misuse(#[from] Misuse),
    /// This code was already exchanged; exchanging it again would revoke
    /// every token of the integration (spec 3.1).
    #[error(
        "this authorization code was already exchanged; a second exchange revokes every token"
    )]
    CodeAlreadyUsed,
    /// There are no tokens to refresh or revoke.
    #[error("there are no tokens")]
    NoTokens,
    /// Refresh is impossible until a person acts.
    #[error("{0}")]
    Blocked(AuthProblem),
    /// The request could not be built.
    #[error(transparent)]
    Request(#[from] RequestError),
}

/// What to do about a 401 (spec 7.3), as [`TokenManager::on_unauthorized`]
/// decides it for every requester alike (calls and the stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unauthorized {
    /// The request went out with a pair that has been replaced since: send
    /// it again with the new one (no refresh is spent).
    RetryWithNewer,
    /// Refresh the access token (it is due now), then try once more.
    Refresh,
    /// The pair a refresh brought for an earlier 401 was refused too: the DJ
    /// must authorize again. Nothing goes out with this pair any more.
    Reauthorize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InFlight {
    Exchange { sent_at_ms: u64 },
    Refresh { sent_at_ms: u64 },
}

/// How many recent code fingerprints are kept to refuse a second exchange.
const REMEMBERED_CODES: usize = 8;

/// The token machine: the token state, when to refresh, what to persist
/// (spec 2.1, 3.1, 3.2, 5).
///
/// It is sans-IO: it builds the token requests (via
/// [`TokenClient`]), takes their responses with the time (`now_ms`, unix
/// milliseconds), and says what happened as a [`TokenOutcome`]. It keeps the
/// rules of the service:
///
/// - exactly one exchange or refresh in flight (rotation makes a second
///   concurrent refresh fail with `invalid_grant`);
/// - the code exchange is single-use and never retried once it may have
///   been sent: any failure, even an ambiguous one, needs a new consent code
///   (a second exchange of a code revokes every token, spec 3.1); only an
///   exchange that surely never left ([`TokenManager::on_not_sent`]) may go
///   again with the same code;
/// - a rotated refresh token replaces the old one; a response without one
///   keeps the old one (RFC 6749 §6);
/// - `invalid_grant` on refresh means the DJ must authorize again;
/// - every new pair is returned as [`TokenOutcome::Persist`] with a higher
///   generation, and [`Tokens::to_json`] / [`Tokens::from_json`] give a
///   versioned stored form with wall-clock expiry.
///
/// Secrets ([`Secret`]) are never shown by `Debug`/`Display`/errors and are
/// zeroized on drop.
///
/// ```
/// use onair::api::{RefreshPolicy, TokenClient, TokenManager, TokenOutcome, TokenStatus};
/// use onair::{BaseUrl, ClientCredentials};
///
/// let creds = ClientCredentials::new("0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f", "s3cret")?;
/// let client = TokenClient::new(BaseUrl::new("https://api.example.test")?, creds);
/// let mut tokens = TokenManager::new(client, RefreshPolicy::default());
///
/// let now = 1_700_000_000_000;
/// let request = tokens.start_exchange("code-from-consent", "https://bot.test/cb", now)?;
/// // ... send `request`, then feed the answer:
/// let body = br#"{"access_token":"AT1","token_type":"Bearer","expires_in":3600,
///                 "refresh_token":"RT1","scope":"events.chat chat.send"}"#;
/// let TokenOutcome::Persist(pair) = tokens.on_response(200, body, now + 80)? else { panic!() };
/// let stored = pair.to_json(); // save this; it holds the secrets
/// assert_eq!(pair.generation(), 1);
/// assert!(!tokens.refresh_due(now + 49 * 60_000));
/// assert!(tokens.refresh_due(now + 50 * 60_000)); // 10 minutes before expiry
/// # let _ = stored;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct TokenManager {
    client: TokenClient,
    policy: RefreshPolicy,
    tokens: Option<Tokens>,
    problem: Option<AuthProblem>,
    in_flight: Option<InFlight>,
    /// A 401 made a refresh due now.
    refresh_now: bool,
    /// The generation of a pair that a refresh for a 401 brought, until a
    /// request sent with it is accepted: a 401 for it means the grant is gone.
    on_probation: Option<u64>,
    generation: u64,
    used_codes: Vec<u64>,
}

impl TokenManager {
    /// A manager with no tokens yet ([`AuthProblem::NotAuthorized`]).
    pub fn new(client: TokenClient, policy: RefreshPolicy) -> Self {
        TokenManager {
            client,
            policy,
            tokens: None,
            problem: Some(AuthProblem::NotAuthorized),
            in_flight: None,
            refresh_now: false,
            on_probation: None,
            generation: 0,
            used_codes: Vec::new(),
        }
    }

    /// A manager resuming from stored tokens (see [`Tokens::from_json`]).
    pub fn with_tokens(client: TokenClient, policy: RefreshPolicy, tokens: Tokens) -> Self {
        let mut manager = Self::new(client, policy);
        manager.generation = tokens.generation;
        manager.tokens = Some(tokens);
        manager.problem = None;
        manager
    }

    /// The current pair, if any.
    pub fn tokens(&self) -> Option<&Tokens> {
        self.tokens.as_ref()
    }

    /// The access token to use now: `None` when there is none, it has
    /// expired, or a person must act first.
    pub fn access_token(&self, now_ms: u64) -> Option<&Secret> {
        if self.problem.is_some() {
            return None;
        }
        self.tokens
            .as_ref()
            .filter(|t| !t.is_access_expired(now_ms))
            .map(Tokens::access_token)
    }

    /// The policy in use.
    pub fn policy(&self) -> &RefreshPolicy {
        &self.policy
    }

    /// The problem that blocks progress, if any.
    pub fn problem(&self) -> Option<&AuthProblem> {
        self.problem.as_ref()
    }

    /// When a refresh becomes due (unix ms); `None` without usable tokens.
    /// A caller waiting for something else should wake by then.
    pub fn refresh_at_ms(&self) -> Option<u64> {
        if self.problem.is_some() {
            return None;
        }
        let t = self.tokens.as_ref()?;
        if self.refresh_now {
            return Some(0);
        }
        Some(
            self.policy
                .refresh_at_ms(t.issued_at_ms, t.access_expires_at_ms),
        )
    }

    /// Whether a refresh should start now: tokens are usable, nothing is in
    /// flight, and the refresh time has come (or a 401 asked for one, see
    /// [`TokenManager::on_unauthorized`]).
    pub fn refresh_due(&self, now_ms: u64) -> bool {
        self.in_flight.is_none() && self.refresh_at_ms().is_some_and(|at| now_ms >= at)
    }

    /// Where the manager stands at `now_ms`.
    pub fn status(&self, now_ms: u64) -> TokenStatus {
        match (self.in_flight, &self.problem) {
            (Some(InFlight::Exchange { .. }), _) => TokenStatus::Exchanging,
            (Some(InFlight::Refresh { .. }), _) => TokenStatus::Refreshing,
            (None, Some(p)) => TokenStatus::Blocked(p.clone()),
            (None, None) => match self.refresh_at_ms() {
                Some(at) if now_ms < at => TokenStatus::Valid { refresh_at_ms: at },
                Some(_) => TokenStatus::RefreshDue,
                None => TokenStatus::Blocked(AuthProblem::NotAuthorized),
            },
        }
    }

    /// The spec's 401 rule (7.3), the one home of it for every requester (a
    /// call, the stream): a request sent with the pair of `sent_generation`
    /// was answered 401.
    ///
    /// - A newer pair is in force: retry with it.
    /// - Otherwise refresh once (the refresh is due now), then retry.
    /// - A 401 for the pair that refresh brought, before anything was
    ///   accepted with it: the grant is gone; a person must authorize again
    ///   ([`AuthProblem::AccessRejected`]: nothing goes out with it).
    ///
    /// Any other answer to a request resets the rule
    /// ([`on_accepted`](Self::on_accepted)).
    ///
    /// ```
    /// use onair::api::{RefreshPolicy, TokenManager, Unauthorized};
    /// use onair::Tokens;
    /// # let client = onair::api::TokenClient::new(
    /// #     onair::BaseUrl::new("https://a.test")?,
    /// #     onair::ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?,
    /// # );
    /// # let saved = Tokens::from_json(br#"{"format":"onair.tokens","version":1,"generation":1,
    /// #   "access_token":"A","access_expires_at_ms":3600000,"issued_at_ms":0,"refresh_token":"R",
    /// #   "refresh_expires_at_ms":90000000,"scope":"live.read"}"#)?;
    /// let mut tokens = TokenManager::with_tokens(client, RefreshPolicy::default(), saved);
    /// assert_eq!(tokens.on_unauthorized(1), Unauthorized::Refresh);
    /// assert!(tokens.refresh_due(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_unauthorized(&mut self, sent_generation: u64) -> Unauthorized {
        if self.tokens.is_none() || self.problem.is_some() {
            return Unauthorized::Reauthorize;
        }
        if sent_generation < self.generation {
            return Unauthorized::RetryWithNewer;
        }
        if self.on_probation == Some(sent_generation) {
            self.problem = Some(AuthProblem::AccessRejected);
            self.refresh_now = false;
            self.on_probation = None;
            return Unauthorized::Reauthorize;
        }
        self.refresh_now = true;
        Unauthorized::Refresh
    }

    /// A request sent with the pair of `generation` got an answer other than
    /// 401: that pair works, and a later 401 gets its one refresh again.
    pub fn on_accepted(&mut self, generation: u64) {
        if self.on_probation == Some(generation) {
            self.on_probation = None;
        }
    }

    /// Builds the code exchange. The code is single-use: the request must be
    /// sent at most once, and whatever happens (even no response) the
    /// outcome is final; the same code is refused if given again.
    pub fn start_exchange(
        &mut self,
        code: &str,
        redirect_uri: &str,
        now_ms: u64,
    ) -> Result<HttpRequest, OAuthError> {
        if self.in_flight.is_some() {
            return Err(Misuse::TokenRequestInFlight.into());
        }
        let fingerprint = fingerprint(code);
        if self.used_codes.contains(&fingerprint) {
            return Err(OAuthError::CodeAlreadyUsed);
        }
        let request = self.client.issue(code, redirect_uri)?;
        if self.used_codes.len() >= REMEMBERED_CODES {
            self.used_codes.remove(0);
        }
        self.used_codes.push(fingerprint);
        self.in_flight = Some(InFlight::Exchange { sent_at_ms: now_ms });
        Ok(request)
    }

    /// Builds a refresh request (whether or not it is due). Only one token
    /// request may be in flight; a refresh token that is missing or past its
    /// lifetime blocks with the matching [`AuthProblem`].
    pub fn start_refresh(&mut self, now_ms: u64) -> Result<HttpRequest, OAuthError> {
        if self.in_flight.is_some() {
            return Err(Misuse::TokenRequestInFlight.into());
        }
        if let Some(p) = &self.problem {
            return Err(OAuthError::Blocked(p.clone()));
        }
        let tokens = self.tokens.as_ref().ok_or(OAuthError::NoTokens)?;
        let refresh = match &tokens.refresh {
            None => return Err(self.block(AuthProblem::NoRefreshToken)),
            Some(r) if now_ms >= r.expires_at_ms => {
                return Err(self.block(AuthProblem::RefreshTokenExpired))
            }
            Some(r) => r,
        };
        let request = self.client.refresh(&refresh.token)?;
        self.in_flight = Some(InFlight::Refresh { sent_at_ms: now_ms });
        Ok(request)
    }

    fn block(&mut self, problem: AuthProblem) -> OAuthError {
        self.problem = Some(problem.clone());
        OAuthError::Blocked(problem)
    }

    /// Takes the HTTP response of the request in flight, received at
    /// `now_ms`. A new pair's expiry is counted from when the request was
    /// sent (the server issued it after that), so it is never overestimated.
    pub fn on_response(
        &mut self,
        status: u16,
        body: &[u8],
        now_ms: u64,
    ) -> Result<TokenOutcome, OAuthError> {
        let in_flight = self
            .in_flight
            .take()
            .ok_or(OAuthError::Misuse(Misuse::NoTokenRequestInFlight))?;
        let failure = if status == 200 {
            match api::decode_token_pair(body) {
                Ok(pair) => {
                    let sent_at_ms = match in_flight {
                        InFlight::Exchange { sent_at_ms } | InFlight::Refresh { sent_at_ms } => {
                            // Expiry counts from the send time; a clock that
                            // went backwards since cannot make it later.
                            sent_at_ms.min(now_ms)
                        }
                    };
                    let previous = match in_flight {
                        InFlight::Refresh { .. } => self.tokens.as_ref(),
                        InFlight::Exchange { .. } => None,
                    };
                    self.generation = self.generation.saturating_add(1);
                    let tokens = Tokens::from_pair(
                        pair,
                        sent_at_ms,
                        previous,
                        self.generation,
                        &self.policy,
                    );
                    self.tokens = Some(tokens.clone());
                    self.problem = None;
                    // A pair that a 401 asked for must prove itself; a new
                    // consent starts with a clean slate.
                    self.on_probation = match in_flight {
                        InFlight::Refresh { .. } if self.refresh_now => Some(self.generation),
                        _ => None,
                    };
                    self.refresh_now = false;
                    return Ok(TokenOutcome::Persist(tokens));
                }
                Err(e) => TokenFailure::InvalidBody(e),
            }
        } else {
            TokenFailure::Http {
                status,
                error: error_code(status, body),
            }
        };
        Ok(self.failed(in_flight, failure))
    }

    /// The request in flight got no response (connection failed or timed
    /// out). A refresh may be tried again later; a code exchange may not:
    /// the code may have been spent, and a second exchange would revoke
    /// everything.
    pub fn on_transport_failure(&mut self, now_ms: u64) -> Result<TokenOutcome, OAuthError> {
        let _ = now_ms;
        let in_flight = self
            .in_flight
            .take()
            .ok_or(OAuthError::Misuse(Misuse::NoTokenRequestInFlight))?;
        Ok(self.failed(in_flight, TokenFailure::Transport))
    }

    /// The request in flight never left this machine (connection refused,
    /// DNS, TLS, connect timeout): nothing was spent. A refresh may be tried
    /// again later; so may a code exchange, with the same code while it is
    /// fresh (it is no longer counted as used). Both answer
    /// [`TokenOutcome::RetryLater`] with [`TokenFailure::NotSent`].
    ///
    /// ```
    /// use onair::api::{RefreshPolicy, TokenFailure, TokenManager, TokenOutcome};
    /// # let client = onair::api::TokenClient::new(
    /// #     onair::BaseUrl::new("https://a.test")?,
    /// #     onair::ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?,
    /// # );
    /// let mut tokens = TokenManager::new(client, RefreshPolicy::default());
    /// tokens.start_exchange("code-1", "https://bot.test/cb", 0)?;
    /// assert_eq!(tokens.on_not_sent(5)?, TokenOutcome::RetryLater(TokenFailure::NotSent));
    /// // Not spent: the same code may go out again.
    /// assert!(tokens.start_exchange("code-1", "https://bot.test/cb", 1000).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_not_sent(&mut self, now_ms: u64) -> Result<TokenOutcome, OAuthError> {
        let _ = now_ms;
        let in_flight = self
            .in_flight
            .take()
            .ok_or(OAuthError::Misuse(Misuse::NoTokenRequestInFlight))?;
        if let InFlight::Exchange { .. } = in_flight {
            // Its fingerprint is the last one remembered (one exchange at a time).
            self.used_codes.pop();
        }
        Ok(TokenOutcome::RetryLater(TokenFailure::NotSent))
    }

    fn failed(&mut self, in_flight: InFlight, failure: TokenFailure) -> TokenOutcome {
        let client_rejected = matches!(
            &failure,
            TokenFailure::Http { status: 401, .. }
                | TokenFailure::Http {
                    error: Some(OAuthErrorCode::InvalidClient),
                    ..
                }
        );
        let problem = match in_flight {
            _ if client_rejected => AuthProblem::ClientRejected,
            InFlight::Exchange { .. } => AuthProblem::ExchangeFailed(failure),
            InFlight::Refresh { .. } => match &failure {
                TokenFailure::Http {
                    error: Some(OAuthErrorCode::InvalidGrant),
                    ..
                } => AuthProblem::RefreshRejected,
                // Other 4xx (but timeouts and quota) will not pass by waiting.
                TokenFailure::Http { status, .. }
                    if (400..500).contains(status) && !matches!(status, 408 | 429) =>
                {
                    AuthProblem::RequestRejected(failure)
                }
                _ => return TokenOutcome::RetryLater(failure),
            },
        };
        // A failed exchange leaves any earlier pair as it was, but blocked:
        // the caller started a new authorization for a reason.
        self.problem = Some(problem.clone());
        TokenOutcome::Blocked(problem)
    }

    /// Adopts a pair from a shared store when it is newer (a higher
    /// generation) than the current one, e.g. after another process
    /// refreshed. A refresh in flight is dropped (the store's pair makes it
    /// needless; its answer would be refused for the rotated token anyway);
    /// refused (false) while a code exchange is in flight. It lifts a
    /// refresh that was refused (the other process had rotated the token).
    pub fn adopt(&mut self, tokens: Tokens) -> bool {
        if matches!(self.in_flight, Some(InFlight::Exchange { .. })) {
            return false;
        }
        if self
            .tokens
            .as_ref()
            .is_some_and(|t| !tokens.is_newer_than(t))
        {
            return false;
        }
        self.in_flight = None;
        self.generation = self.generation.max(tokens.generation);
        self.tokens = Some(tokens);
        self.problem = None;
        self.refresh_now = false;
        self.on_probation = None;
        true
    }

    /// Builds the revoke request for the refresh token (which revokes the
    /// access token too, spec 3.2), or the access token when there is no
    /// refresh token, and forgets the tokens (they are zeroized). Delete the
    /// stored copy as well. Refused while a token request is in flight (its
    /// answer could bring a new pair that would escape the revocation).
    pub fn revoke(&mut self) -> Result<HttpRequest, OAuthError> {
        if self.in_flight.is_some() {
            return Err(Misuse::TokenRequestInFlight.into());
        }
        let tokens = self.tokens.as_ref().ok_or(OAuthError::NoTokens)?;
        let request = match tokens.refresh_token() {
            Some(r) => self.client.revoke(r, Some(TokenTypeHint::RefreshToken))?,
            None => self
                .client
                .revoke(tokens.access_token(), Some(TokenTypeHint::AccessToken))?,
        };
        self.tokens = None;
        self.problem = Some(AuthProblem::Revoked);
        self.refresh_now = false;
        self.on_probation = None;
        Ok(request)
    }
}

/// A fingerprint of an authorization code, to refuse a second exchange
/// without keeping the code itself.
fn fingerprint(code: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    code.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests;
