//! # onair — the sans-IO protocol core for live-broadcast bots
//!
//! onair turns what a bot's HTTP client receives from the live-broadcast bot
//! API into typed values and decisions, and never does I/O itself: you bring
//! the bytes, the responses and the time.
//!
//! - [`sse`]: incremental Server-Sent Events framing, fed chunks split anywhere.
//! - [`event`]: the service's typed stream events (chat, presence, like,
//!   donation, end) decoded from frames.
//! - [`time`]: the service's ISO-8601 timestamps and frame ids.
//! - [`tally`]: per-broadcast totals by person (hearts, donations, attendance).
//! - [`scope`]: permissions and the granted scope.
//! - [`model`]: the REST resources (broadcast, listeners, fan ranking, token pair).
//! - [`api`]: every endpoint's request as a value, response decoders, chat
//!   validation and the listener pager.
//! - [`oauth`]: client credentials, secrets, the token state machine and its
//!   stored form.
//! - [`header`]: response headers as (name, value) pairs, names any case.
//! - [`problem`]: classify an HTTP response into a problem and the advice to follow.
//! - [`quota`]: quota headers, `Retry-After`, and when the next call may go.
//! - [`backoff`]: 1 s doubling to 30 s with full jitter, deterministic for a seed.
//! - [`stream`]: the connect-loop state machine of the event stream.
//! - [`bot`]: the one machine a driver loop polls, combining all of the above.
//!
//! ```
//! use onair::event::{Decoder, EndReason, Event, Item};
//!
//! let mut decoder = Decoder::new();
//! let stream = b"event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n";
//! let mut rest = &stream[..];
//! let mut seen = Vec::new();
//! while let Some(item) = decoder.next_item(&mut rest) {
//!     seen.push(item);
//! }
//! assert!(matches!(
//!     &seen[0],
//!     Item::Event { event: Event::End(end), .. } if end.reason == EndReason::LiveEnded
//! ));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod backoff;
pub mod bot;
pub mod event;
pub mod header;
pub mod model;
pub mod oauth;
pub mod problem;
pub mod quota;
pub mod scope;
pub mod sse;
pub mod stream;
pub mod tally;
pub mod time;
mod wire;

/// The README's Rust example runs as a doc test, so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
