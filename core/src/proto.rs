//! The protocol machinery behind [`Bot`](crate::Bot): what a driver never
//! names, public for bindings and for drivers that build on one piece alone
//! (a stream reader on [`stream::ConnectLoop`], a token service on
//! [`oauth::TokenManager`]).
//!
//! The modules form layers; each imports only from layers below it (a test
//! keeps this true), and each rule of the service has one home:
//!
//! | layer | modules |
//! |---|---|
//! | leaves: values, no rule of the service | [`secret`] (redacted, zeroized secrets and client credentials), [`http`] (the request to send, the base URL, response headers in), [`endpoint`] (the one table of endpoints: method, path, permission), [`scope`] (permissions), [`time`] (timestamps, frame ids), [`backoff`] (1 s doubling to 30 s, full jitter, seeded), [`misuse`] (local errors, request ids) |
//! | protocol: the wire forms | [`sse`] (incremental framing), [`event`](crate::event) (typed stream events), [`model`] (REST resources), [`chat`] (the message rules), [`ratelimit`] (quota headers, `Retry-After`) |
//! | decisions | [`api`] (request builders, response decoders, the listener pager), [`problem`] (a response classified into a problem and advice), [`oauth`] (the token machine, its stored form, **the 401 rule**: one refresh, then re-authorization, [`oauth::TokenManager::on_unauthorized`]), [`quota`] (when the next call may go), [`stop`] (the one stop type a person acts on), [`stream`] (the event stream's connect-loop), [`timers`] (app timers the bot hosts) |
//! | kit | [`kit`](crate::kit) (what every bot author writes by hand: commands, greetings, milestones, the tally) |
//! | machine | [`bot`](crate::bot) (the one machine a driver polls; it hosts the kit), [`json`](crate::json) (the JSON wire form of items and actions, shared by `onair decode` and the bindings) |
//!
//! The last two sit beside `proto` at the crate's top, above the machinery
//! they use.

// Leaves: no rule of the service, only values.
pub mod backoff;
pub mod endpoint;
pub mod http;
pub mod misuse;
pub mod scope;
pub mod secret;
pub mod time;
// Protocol: the wire forms of the service.
pub mod chat;
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
pub mod timers;
