//! The stored token file: `from_json` then `to_json` round-trips; errors quote nothing.
//! The body and its invariants: `onair_fuzz_support::token_file` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::token_file(data));
