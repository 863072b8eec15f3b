//! # onair-wasm — the WebAssembly layer of onair, for Node
//!
//! A thin wasm-bindgen layer over the `onair` core: every rule of the
//! service lives in the core; this crate only moves values across the
//! boundary. It is built with `wasm-pack build --target nodejs` and wrapped
//! by the hand-written JavaScript of `wasm/npm/` (`index.js`, `index.d.ts`),
//! which is the package's API: JS idiom, plain objects, `Error` subclasses.
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
//!   "z"): everything else — the `Bot`, classification, request builders,
//!   response decoders, backoff, quota headers, the tally and the kit.
//!   Nothing in it is on a hot path (a broadcast's stream is kilobytes per
//!   second), so it is built for size. Its three parts are features of
//!   their own, `machine` (the `Bot`), `helpers` and `kit`, so that each
//!   part's size can be measured (`ONAIR_WASM_FLOOR=1 scripts/test-node
//!   --build-only`); the package always ships all three.
//!
//! `index.js` loads each module the first time something of it is used: a
//! program that only decodes never loads the bot module, a bot that never
//! makes a `Decoder` never loads the decoder module. The default features
//! hold both halves (one module with everything: `cargo test`, clippy).
//!
//! Values of the bot module cross as JSON text in the core's one wire form
//! ([`onair::proto::json`]): an action is an [`onair::proto::json::ActionJson`], a stop a
//! [`onair::proto::json::StopJson`], a tally a [`onair::proto::json::TallyJson`]. Errors
//! cross as a JSON string `["name","kind","message"]` that the JS layer turns
//! into the matching `Error` subclass.
//!
//! Times are unix milliseconds as JS numbers (`Date.now()`), converted to
//! `u64` here (negative and NaN become 0).

#[cfg(feature = "decoder")]
pub mod decoder;
#[cfg(feature = "decoder")]
mod tape;

#[cfg(feature = "machine")]
pub mod bot;
#[cfg(feature = "helpers")]
pub mod http;
#[cfg(feature = "kit")]
pub mod kit;
