//! The service's endpoints as one table: method, path and the permission
//! each needs (spec 4, "Summary"). The request builders ([`crate::proto::api`]) and
//! the classifier ([`crate::proto::problem`]) both read it, so a path or a
//! permission is written once.
//!
//! ```
//! use onair::{Endpoint, Method, Permission};
//!
//! assert_eq!(Endpoint::Chat.method(), Method::Post);
//! assert_eq!(Endpoint::Chat.path(), "/v1/live/chat");
//! assert_eq!(Endpoint::Chat.permission(), Some(Permission::ChatSend));
//! assert_eq!(Endpoint::from_name("fans"), Some(Endpoint::Fans));
//! ```

use std::fmt;

use crate::proto::scope::Permission;

/// An HTTP method used by the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// `GET`
    Get,
    /// `POST`
    Post,
}

impl Method {
    /// `"GET"` or `"POST"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One endpoint of the service. A response is classified per endpoint: the
/// same status means different things on the token and the bot endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Endpoint {
    /// `POST /v1/oauth/token` (issue and refresh).
    Token,
    /// `POST /v1/oauth/revoke`.
    Revoke,
    /// `GET /v1/live`.
    Live,
    /// `GET /v1/live/listeners`.
    Listeners,
    /// `GET /v1/live/fans`.
    Fans,
    /// `GET /v1/live/events` (the SSE stream).
    Events,
    /// `POST /v1/live/chat`.
    Chat,
}

impl Endpoint {
    /// Every endpoint, in spec order.
    pub const ALL: [Endpoint; 7] = [
        Endpoint::Token,
        Endpoint::Revoke,
        Endpoint::Live,
        Endpoint::Listeners,
        Endpoint::Fans,
        Endpoint::Events,
        Endpoint::Chat,
    ];

    /// The short name used by `onair explain`: `token`, `revoke`, `live`,
    /// `listeners`, `fans`, `events`, `chat`.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Token => "token",
            Endpoint::Revoke => "revoke",
            Endpoint::Live => "live",
            Endpoint::Listeners => "listeners",
            Endpoint::Fans => "fans",
            Endpoint::Events => "events",
            Endpoint::Chat => "chat",
        }
    }

    /// Reads a short name (exact, lower-case); `None` for anything else.
    pub fn from_name(name: &str) -> Option<Endpoint> {
        Endpoint::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// The HTTP method.
    pub fn method(self) -> Method {
        match self {
            Endpoint::Live | Endpoint::Listeners | Endpoint::Fans | Endpoint::Events => Method::Get,
            Endpoint::Token | Endpoint::Revoke | Endpoint::Chat => Method::Post,
        }
    }

    /// The path below `{base_url}`.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Token => "/v1/oauth/token",
            Endpoint::Revoke => "/v1/oauth/revoke",
            Endpoint::Live => "/v1/live",
            Endpoint::Listeners => "/v1/live/listeners",
            Endpoint::Fans => "/v1/live/fans",
            Endpoint::Events => "/v1/live/events",
            Endpoint::Chat => "/v1/live/chat",
        }
    }

    /// The two token endpoints (client authentication, RFC 6749 errors).
    pub fn is_token(self) -> bool {
        matches!(self, Endpoint::Token | Endpoint::Revoke)
    }

    /// The permission a call needs. `None` for the token endpoints and for
    /// the event stream, which opens with any one `events.*` permission.
    pub fn permission(self) -> Option<Permission> {
        match self {
            Endpoint::Live => Some(Permission::LiveRead),
            Endpoint::Listeners => Some(Permission::ListenersRead),
            Endpoint::Fans => Some(Permission::FansRead),
            Endpoint::Chat => Some(Permission::ChatSend),
            Endpoint::Token | Endpoint::Revoke | Endpoint::Events => None,
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
