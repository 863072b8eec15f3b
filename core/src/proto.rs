//! The protocol machinery behind [`Bot`](crate::Bot), crate-private. What
//! other crates need of it is re-exported at the crate's front door: the
//! values a bot author meets at the root, the framing as [`crate::sse`], the
//! pieces a driver may run alone (calls, tokens, problems, pacing, the
//! stream's connect-loop) as [`crate::api`]. The rest (the quota tracker,
//! the timer table, the stored token form, the percent-encodings) stays
//! here.
//!
//! The modules form layers; each imports only from layers below it
//! (core/tests/layers.rs keeps this true and holds `src/proto/` to the
//! first three layers), and each rule of the service has one home:
//!
//! | layer | modules |
//! |---|---|
//! | leaves: values, no rule of the service | [`secret`] (redacted, zeroized secrets and client credentials), [`http`] (the request to send, the base URL, response headers in), [`endpoint`] (the one table of endpoints: method, path, permission), [`scope`] (permissions), [`time`] (timestamps, frame ids), [`backoff`] (1 s doubling to 30 s, full jitter, seeded), [`misuse`] (local errors, request ids) |
//! | protocol: the wire forms | [`sse`] (incremental framing), [`event`](crate::event) (typed stream events), [`model`] (REST resources), [`chat`] (the message rules), [`ratelimit`] (quota headers, `Retry-After`) |
//! | decisions | [`api`] (request builders, response decoders, the listener pager), [`problem`] (a response classified into a problem and advice), [`oauth`] (the token machine, its stored form, **the 401 rule**: one refresh, then re-authorization, [`oauth::TokenManager::on_unauthorized`]), [`quota`] (when the next call may go), [`stop`] (the one stop type a person acts on), [`stream`] (the event stream's connect-loop), [`timers`] (app timers the bot hosts) |
//! | kit | [`kit`](crate::kit) (what every bot author writes by hand: commands, greetings, milestones, the tally) |
//! | machine | [`bot`](crate::bot) (the one machine a driver polls; it hosts the kit), [`json`](crate::json) (the JSON wire form of items and actions, shared by `onair decode` and the bindings) |
//!
//! `event`, `kit`, `bot` and `json` sit beside `proto` at the crate's top:
//! they are public modules of their own (the last three above the
//! machinery they use). The facades `crate::sse` and `crate::api` are
//! re-exports in lib.rs, not layers.

// Leaves: no rule of the service, only values.
pub(crate) mod backoff;
pub(crate) mod endpoint;
pub(crate) mod http;
pub(crate) mod misuse;
pub(crate) mod scope;
pub(crate) mod secret;
pub(crate) mod time;
// Protocol: the wire forms of the service.
pub(crate) mod chat;
pub(crate) mod model;
pub(crate) mod ratelimit;
pub(crate) mod sse;
// Decisions: what a response or a frame means, and what to do next.
pub(crate) mod api;
pub(crate) mod oauth;
pub(crate) mod problem;
pub(crate) mod quota;
pub(crate) mod stop;
pub(crate) mod stream;
pub(crate) mod timers;
