//! # onair-wasm — the WebAssembly layer of onair, for Node
//!
//! A thin wasm-bindgen layer over the `onair` core: every rule of the
//! service lives in the core; this crate only moves values across the
//! boundary. It is built with `wasm-pack build --target nodejs` and wrapped
//! by the JavaScript of `wasm/npm/` (`bot.js`: the API in JS idiom, plain
//! objects, `Error` subclasses; `driver.js`: the ready-made driver over
//! `fetch`; `index.js` re-exports both). The TypeScript types of everything that crosses as JSON are
//! generated from the core's types (`types.rs`, `wasm/npm/types.d.ts`).
//!
//! ## Two modules
//!
//! The package ships two `.wasm` modules built from this crate, each with
//! the cargo feature of its half and its own profile (`scripts/test-node`):
//!
//! - feature `decoder` → `onair_decoder_bg.wasm`, profile `wasm-release`
//!   (opt-level 3): the [`decoder::Decoder`] alone, bytes in, items out on a
//!   tape of numbers (`tape.rs`). Small, and as fast as the core decodes.
//! - feature `bot` → `onair_bot_bg.wasm`, profile `wasm-size` (opt-level
//!   "z"): everything else — the `Bot` with its configured kit,
//!   classification, request builders, response decoders, backoff, quota
//!   headers and the kit's pure helpers. Nothing in it is on a hot path (a
//!   broadcast's stream is kilobytes per second), so it is built for size.
//!
//! `bot.js` loads each module the first time something of it is used: a
//! program that only decodes never loads the bot module, a bot that never
//! makes a `Decoder` never loads the decoder module. The default features
//! hold both halves (one module with everything: `cargo test`, clippy).
//!
//! Values of the bot module cross as JSON text in the core's one wire form
//! ([`onair::json`]): an action is an [`onair::json::ActionJson`], a stop a
//! [`onair::json::StopJson`], a tally a [`onair::json::TallyJson`]. Errors
//! cross as a JSON string `["name","kind","message"]` (a kit configuration
//! error adds its key) that the JS layer turns into the matching `Error`
//! subclass. Lists of call ids cross as JS arrays (`js-sys`).
//!
//! Times are unix milliseconds as JS numbers (`Date.now()`), converted to
//! `u64` here (negative and NaN become 0).

#[cfg(feature = "decoder")]
pub mod decoder;
#[cfg(feature = "decoder")]
mod tape;

#[cfg(feature = "bot")]
pub mod bot;
#[cfg(feature = "bot")]
pub mod http;
#[cfg(feature = "bot")]
pub mod kit;

#[cfg(test)]
mod types;
