//! The stored token file: `from_json` then `to_json` round-trips; errors quote nothing.
//! The body and its invariants: `onair::fuzz::token_file`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::token_file(data));
