//! The paths the emulator answers, written once: the service's endpoints
//! ([`Endpoint`], spec 4), the consent page ([`AUTHORIZE`]) and the control
//! API's prefix ([`CONTROL`]). The router ([`crate::routes`]) and every
//! handler read them here.
//!
//! ```
//! use onair_emulator::paths::Endpoint;
//! assert_eq!(Endpoint::of_path("/v1/live/chat"), Some(Endpoint::Chat));
//! assert_eq!(Endpoint::Chat.method(), "POST");
//! assert_eq!(Endpoint::of_path("/v1/live/"), None);
//! ```

use crate::scope::Perm;

/// The control API's prefix.
pub const CONTROL: &str = "/_emulator";

/// The emulator's consent page (the spec names none).
pub const AUTHORIZE: &str = "/oauth/authorize";

/// One endpoint of the service (spec 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/oauth/token` (4.1, 4.2).
    Token,
    /// `POST /v1/oauth/revoke` (4.8).
    Revoke,
    /// `GET /v1/live` (4.3).
    Live,
    /// `GET /v1/live/listeners` (4.4).
    Listeners,
    /// `GET /v1/live/fans` (4.5).
    Fans,
    /// `POST /v1/live/chat` (4.7).
    Chat,
    /// `GET /v1/live/events` (4.6).
    Events,
}

impl Endpoint {
    /// Every endpoint.
    pub const ALL: [Endpoint; 7] = [
        Endpoint::Token,
        Endpoint::Revoke,
        Endpoint::Live,
        Endpoint::Listeners,
        Endpoint::Fans,
        Endpoint::Chat,
        Endpoint::Events,
    ];

    /// Its path: the one place the spec's paths are written.
    pub const fn path(self) -> &'static str {
        match self {
            Endpoint::Token => "/v1/oauth/token",
            Endpoint::Revoke => "/v1/oauth/revoke",
            Endpoint::Live => "/v1/live",
            Endpoint::Listeners => "/v1/live/listeners",
            Endpoint::Fans => "/v1/live/fans",
            Endpoint::Chat => "/v1/live/chat",
            Endpoint::Events => "/v1/live/events",
        }
    }

    /// Its method, `GET` or `POST`.
    pub const fn method(self) -> &'static str {
        match self {
            Endpoint::Token | Endpoint::Revoke | Endpoint::Chat => "POST",
            _ => "GET",
        }
    }

    /// The endpoint at exactly `path`.
    pub fn of_path(path: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.path() == path)
    }

    /// A token endpoint (`/v1/oauth/…`): OAuth error bodies, no Bearer.
    pub const fn is_oauth(self) -> bool {
        matches!(self, Endpoint::Token | Endpoint::Revoke)
    }

    /// The permission it needs; `None` for the token endpoints and the
    /// stream (which needs any `events.*`).
    pub const fn permission(self) -> Option<Perm> {
        match self {
            Endpoint::Live => Some(Perm::LiveRead),
            Endpoint::Listeners => Some(Perm::ListenersRead),
            Endpoint::Fans => Some(Perm::FansRead),
            Endpoint::Chat => Some(Perm::ChatSend),
            _ => None,
        }
    }

    /// Counted by the call quota (the four REST bot endpoints).
    pub const fn counted(self) -> bool {
        self.permission().is_some()
    }
}

/// Whether `path` is the control API's.
pub fn is_control(path: &str) -> bool {
    path.strip_prefix(CONTROL)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}
