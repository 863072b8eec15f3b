//! Token responses: usable tokens, stored and reloaded unchanged, never quoted.
//! The body and its invariants: `onair_fuzz_support::token_response` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::token_response(data));
