//! # onair — the sans-IO protocol core for live-broadcast bots
//!
//! onair turns what a bot's HTTP client receives from the live-broadcast bot
//! API into typed values and decisions, and never does I/O itself: you bring
//! the bytes, the responses and the time.
//!
//! The modules form layers; each imports only from layers below it (a test
//! keeps this true), and each rule of the service has one home:
//!
//! | layer | modules |
//! |---|---|
//! | leaves: values, no rule of the service | [`secret`] (redacted, zeroized secrets and client credentials), [`http`] (the request to send, the base URL, response headers in, percent-encoding), [`endpoint`] (the one table of endpoints: method, path, permission), [`scope`] (permissions), [`time`] (timestamps, frame ids), [`backoff`] (1 s doubling to 30 s, full jitter, seeded), [`misuse`] (local errors, request ids) |
//! | protocol: the wire forms | [`sse`] (incremental framing), [`event`] (typed stream events), [`model`] (REST resources), [`chat`] (the message rules), [`ratelimit`] (quota headers, `Retry-After`) |
//! | decisions | [`api`] (request builders, response decoders, the listener pager), [`problem`] (a response classified into a problem and advice), [`oauth`] (the token machine, its stored form, the one-refresh rule), [`quota`] (when the next call may go), [`stop`] (the one stop type a person acts on), [`stream`] (the event stream's connect-loop), [`tally`] (per-broadcast totals by person), [`timers`] (app timers the bot hosts) |
//! | machine | [`bot`] (the one machine a driver polls), [`json`] (the JSON wire form of items and actions, shared by `onair decode` and the bindings), [`marshal`] (items as CPython marshal data, for the Python package) |
//! | kit: what every bot author writes by hand | [`kit`] (chat split and truncate, commands, greet-once audience memory, milestones, app timers) |
//!
//! What a driver needs is re-exported here: [`Bot`], [`BotConfig`],
//! [`Action`], [`Stop`], [`BaseUrl`], [`ClientCredentials`], [`Tokens`], …
//!
//! ```
//! use onair::event::{Decoder, EndReason, Event, Item};
//!
//! let mut decoder = Decoder::new();
//! let chunk = b"event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n";
//! let seen: Vec<Item> = decoder.items(chunk).collect();
//! assert!(matches!(
//!     &seen[0],
//!     Item::Event { event: Event::End(end), .. } if end.reason == EndReason::LiveEnded
//! ));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Leaves: no rule of the service, only values.
pub mod backoff;
pub mod endpoint;
pub mod http;
pub mod misuse;
pub mod scope;
pub mod secret;
mod swar;
pub mod time;
mod wire;
// Protocol: the wire forms of the service.
pub mod chat;
pub mod event;
pub mod model;
pub mod ratelimit;
pub mod sse;
// Decisions: what a response or a frame means, and what to do next.
pub mod api;
pub mod oauth;
pub mod problem;
pub mod quota;
pub mod stop;
pub mod stream;
pub mod tally;
pub mod timers;
// The machine a driver polls, and the wire forms of its items and actions.
pub mod bot;
pub mod json;
pub mod marshal;
// The kit: what every bot author writes by hand, on top of the machine.
pub mod kit;

// Interim: the fuzz input cursor of libonair's fuzz body; not API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;

// What a driver needs, at the root.
pub use bot::{Action, Bot, BotConfig, CallFailure, CallId, CallResult, Notice};
pub use event::{Decoder, Event, Item};
pub use http::{BaseUrl, Header, HttpRequest};
pub use misuse::{Misuse, RequestId};
pub use oauth::Tokens;
pub use secret::{ClientCredentials, Secret};
pub use stop::Stop;

/// The README's Rust example runs as a doc test, so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
