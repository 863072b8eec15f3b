//! # onair — bots for the live-broadcast bot API
//!
//! A bot acts for one DJ: it gets tokens by OAuth 2.0, receives chat, join,
//! heart and donation events over Server-Sent Events, reads the broadcast and
//! posts chat. onair keeps every rule of the service in one place and does
//! no I/O itself: your HTTP client (or a ready-made driver such as
//! `onair-tokio`) hands the [`Bot`] bytes, responses and the time, and the bot
//! answers with [`Action`]s: requests to send, events for your code, tokens to
//! save, a time to wake up.
//!
//! ```
//! use onair::{Action, BaseUrl, Bot, BotConfig, ClientCredentials};
//!
//! let credentials = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret")?;
//! let config = BotConfig::new(BaseUrl::new("https://api.example.test")?, credentials);
//! let mut bot = Bot::new(config, None, 7);
//! // No saved tokens: the DJ consents first; the code goes to `authorize`.
//! assert_eq!(bot.poll(0), Action::NeedsAuthorization);
//! bot.authorize("code-from-consent", "https://bot.example/callback");
//! let Action::Send { request, .. } = bot.poll(0) else { panic!() };
//! assert!(request.url.ends_with("/v1/oauth/token"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The front door
//!
//! | for | items |
//! |---|---|
//! | the machine | [`Bot`], [`BotConfig`], [`Action`], [`Notice`], [`CallId`], [`CallResult`], [`CallFailure`], [`Stop`], [`Status`]; the contract a driver follows is on the [`bot`] module |
//! | tokens and the app | [`Tokens`] (read back with [`LoadError`]), [`ClientCredentials`], [`Secret`], [`BaseUrl`], [`Scope`], [`Permission`] |
//! | what the bot hears | the events of [`event`] ([`Event`], [`Chat`], [`Presence`], [`Like`], [`Donation`], [`End`], [`User`]) and the REST resources ([`Broadcast`], [`Listener`], [`FanRanking`]) |
//! | what every bot writes by hand | [`kit`]: safe chat splitting, commands, greetings, milestones, the per-broadcast tally |
//! | a driver's own HTTP | [`HttpRequest`], [`Header`], [`RequestId`], [`Endpoint`], [`Misuse`] |
//! | reading a stream alone | [`Decoder`], [`Item`] |
//!
//! ## The machinery
//!
//! [`proto`] holds the protocol a driver never names: SSE framing, the
//! stream's connect-loop, the token state, quota pacing, error
//! classification, request builders. Its modules form layers, each rule of
//! the service in one home (see [`proto`]). [`json`] writes the machine's
//! items, actions, stops and tallies as JSON lines, for the bindings and
//! `onair decode`.
//!
//! ## The service's rules
//!
//! `docs/service.md` in the repository states the service's rules as onair
//! applies them, each with its home here. "spec N.M" in these docs means
//! section N.M of that page ("spec N.M rule K": its numbered rule K).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Leaves shared by the machinery, private.
mod swar;
mod wire;

// The protocol machinery, crate-private: its modules are the layers of
// `proto.rs`'s table; what others need of it is re-exported below, at the
// root or in `api` and `sse`.
mod proto;

// The bot author's modules.
pub mod bot;
pub mod event;
pub mod kit;

// The machine's wire form, for bindings and `onair decode`.
pub mod json;

pub use bot::{
    Action, Bot, BotConfig, CallFailure, CallId, CallResult, Connection, GiveUpReason, Notice,
    Status, Unreached,
};
pub use event::{
    Chat, DecodeError, Decoder, Donation, End, EndReason, Event, Item, Like, LikeType, Presence,
    PresenceType, User,
};
pub use proto::api::ClientAuth;
pub use proto::chat::{ChatError, ChatErrorKind};
pub use proto::endpoint::{Endpoint, Method};
pub use proto::http::{
    BaseUrl, Body, Header, HeaderValue, HttpRequest, InvalidBaseUrl, RedactedRequest,
};
pub use proto::misuse::{Misuse, RequestId};
pub use proto::model::{Broadcast, Fan, FanRanking, Listener};
pub use proto::oauth::{AuthProblem, LoadError, Tokens};
pub use proto::problem::{Advice, Problem, ProblemKind};
pub use proto::scope::{Permission, Scope};
pub use proto::secret::{ClientCredentials, ClientId, CredentialsError, Secret};
pub use proto::stop::Stop;
pub use proto::time::{FrameId, Timestamp};
pub use proto::timers::{Tag, Timer, TimerError};

pub mod sse {
    //! Server-Sent Events framing on its own.
    #[cfg(feature = "fuzzing")]
    #[doc(hidden)]
    pub use crate::proto::sse::reference;
    pub use crate::proto::sse::{
        Chunk, Frame, FrameError, FrameErrorKind, Item, Parser, DEFAULT_MAX_FRAME_BYTES,
    };
}

pub mod api {
    //! The service's pieces without a Bot.
    pub use crate::proto::api::{
        chat, decode_broadcast, decode_fans, decode_listeners, decode_token_pair, events, fans,
        listeners, live, ListenerPager, PagerError, PagerProgress, RequestError, ResponseError,
        ResponseErrorKind, TokenClient, TokenTypeHint,
    };
    pub use crate::proto::backoff::Backoff;
    pub use crate::proto::chat::{validate_chat, CHAT_MAX_UTF16};
    pub use crate::proto::model::{ListenersPage, TokenPair};
    pub use crate::proto::oauth::{
        OAuthError, OAuthErrorCode, RefreshPolicy, TokenFailure, TokenManager, TokenOutcome,
        TokenStatus, Unauthorized,
    };
    pub use crate::proto::problem::{classify, codes, Explanation};
    pub use crate::proto::ratelimit::{QuotaHeaders, RetryAfter, MAX_RETRY_AFTER_MS};
    pub use crate::proto::stream::{
        ConnectLoop, Phase, Step, StreamConfig, StreamItems, StreamNotice,
    };
}
