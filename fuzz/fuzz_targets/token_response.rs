//! Token responses: usable tokens, stored and reloaded unchanged, never quoted.
//! The body and its invariants: `onair::fuzz::token_response`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::token_response(data));
