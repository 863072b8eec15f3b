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
//! | the machine | [`Bot`], [`BotConfig`] (with [`ClientAuth`]), [`Action`], [`Notice`], [`CallId`], [`CallResult`], [`CallFailure`], [`Stop`], [`Status`], [`Connection`], [`GiveUpReason`], [`Unreached`]; the contract a driver follows, and the types that tune the bot, are on the [`bot`] module |
//! | tokens and the app | [`Tokens`] (read back with [`LoadError`]), [`ClientCredentials`] ([`ClientId`], [`CredentialsError`]), [`Secret`], [`BaseUrl`] ([`InvalidBaseUrl`]), [`Scope`], [`Permission`] |
//! | what the bot hears | the events of [`event`] ([`Event`], [`Chat`], [`Presence`], [`Like`], [`Donation`], [`End`], [`User`], …, with their [`FrameId`] and [`Timestamp`]) and the REST resources ([`Broadcast`], [`Listener`], [`FanRanking`], [`Fan`]) |
//! | what went wrong | [`Problem`] ([`ProblemKind`], [`Advice`]), [`AuthProblem`], [`ChatError`] ([`ChatErrorKind`]), [`TimerError`], [`Misuse`] |
//! | what every bot writes by hand | [`kit`]: safe chat splitting, commands, greetings, milestones, the per-broadcast tally; app timers ([`Timer`], [`Tag`]) on the [`Bot`] |
//! | a driver's own HTTP | [`HttpRequest`] (its [`Method`], [`HeaderValue`]s and [`Body`]; [`RedactedRequest`] to log it), [`Header`] for the response's, [`RequestId`], [`Endpoint`] |
//! | reading a stream alone | [`Decoder`] ([`Item`], [`DecodeError`]); its framing half is [`sse`] |
//!
//! ## One piece alone
//!
//! [`api`] holds the pieces of the service the bot drives, for a driver
//! that does one alone (a token service on [`api::TokenManager`], a stream
//! reader on [`api::ConnectLoop`]) and for the bindings: request builders
//! and response decoders, classification, the rate-limit headers, backoff.
//! [`sse`] is the SSE framing on its own. [`json`] writes the machine's
//! items, actions, stops and tallies as JSON lines, for the bindings and
//! `onair decode`. The machinery behind them is crate-private; its layers,
//! each rule of the service in one home, are described in
//! `core/src/proto.rs`.
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
    //! Server-Sent Events framing on its own: a [`Parser`] fed byte chunks
    //! split anywhere, yielding [`Item`]s (frames, comments, `retry`, and
    //! frames too large to keep) that borrow from it. This is the first half
    //! of [`Decoder`](crate::Decoder), for a reader of any event stream; the
    //! bindings publish it as their SSE parser.
    //!
    //! It follows the WHATWG "event stream interpretation" rules: LF, CR and
    //! CRLF line ends (a CRLF split across chunks is one line end), a leading
    //! BOM, comments, `retry`, dispatch on a blank line. A frame goes out as
    //! soon as the line end that completes it is fed; a frame never holds
    //! more than [`Parser::max_frame_bytes`] (a larger one is one
    //! [`FrameErrorKind::TooLarge`], skipped to its blank line); invalid
    //! UTF-8 becomes U+FFFD; nothing is allocated per frame once warm.
    //!
    //! ```
    //! use onair::sse::{Chunk, Item, Parser};
    //!
    //! let mut parser = Parser::new();
    //! let mut names = Vec::new();
    //! for bytes in [&b":heartbeat\n\nevent: chat\nda"[..], &b"ta: {}\n\n"[..]] {
    //!     let mut chunk = Chunk::new(bytes);
    //!     while let Some(item) = parser.next_item_in(&mut chunk) {
    //!         match item {
    //!             Item::Event(frame) => names.push(frame.event.to_owned()),
    //!             Item::Comment(text) => assert_eq!(text, "heartbeat"),
    //!             _ => {}
    //!         }
    //!     }
    //! }
    //! assert_eq!(names, ["chat"]);
    //! assert!(parser.finish().is_none());
    //! ```
    pub use crate::proto::sse::{
        Chunk, Frame, FrameError, FrameErrorKind, Item, Parser, DEFAULT_MAX_FRAME_BYTES,
    };

    // The naive reference parser the fuzz targets hold `Parser` to.
    #[cfg(feature = "fuzzing")]
    #[doc(hidden)]
    pub use crate::proto::sse::reference;
}

pub mod api {
    //! The service's pieces without a [`Bot`](crate::Bot), for a driver that
    //! does one piece alone and for the bindings. Each is sans-IO like the
    //! bot: it builds requests, reads answers, and takes the time as an
    //! argument. The bot drives all of them; a bot author never needs this
    //! module.
    //!
    //! | piece | items |
    //! |---|---|
    //! | the calls | builders [`live`], [`listeners`], [`fans`], [`events`], [`chat`] (an [`HttpRequest`](crate::HttpRequest) under a [`BaseUrl`](crate::BaseUrl), or a [`RequestError`]); decoders [`decode_broadcast`], [`decode_listeners`] ([`ListenersPage`]), [`decode_fans`], [`decode_token_pair`] ([`TokenPair`]), or a [`ResponseError`]; [`ListenerPager`] follows the listener pages; [`validate_chat`] and [`CHAT_MAX_UTF16`], the message rules |
    //! | tokens | [`TokenClient`] builds the token calls; [`TokenManager`] is the token machine (exchange, refresh by a [`RefreshPolicy`], the one-refresh rule on a 401 [`TokenManager::on_unauthorized`], revocation), for a service that keeps tokens apart from its bots |
    //! | answers | [`classify`] reads any response into a [`Problem`](crate::Problem), [`Problem::explain`](crate::Problem::explain) into an [`Explanation`]; [`QuotaHeaders`] and [`RetryAfter`] are the rate-limit headers; [`codes`] names the service's detail codes; [`Backoff`] is the retry schedule (1 s doubling to 30 s, full jitter) |
    //! | the stream | [`ConnectLoop`] follows the event stream's reconnection table ([`Step`]s to take, tuned by [`StreamConfig`]), for a driver around the stream alone |
    //!
    //! `Debug` of a request shows its secrets as `<redacted>`:
    //!
    //! ```
    //! use onair::{api, BaseUrl, Secret};
    //!
    //! let base = BaseUrl::new("https://api.example.test/")?;
    //! let req = api::live(&base, &Secret::new("at-123"))?;
    //! assert_eq!(req.url, "https://api.example.test/v1/live");
    //! assert_eq!(req.header("authorization"), Some("Bearer at-123"));
    //! assert!(!format!("{req:?}").contains("at-123"));
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
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
        ConnectLoop, Phase, Step, StreamConfig, StreamItems, StreamNotice, NOT_ON_AIR_FLOOR_MS,
    };
}
