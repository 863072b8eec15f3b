//! The three error body shapes with headers through `problem::classify`: status first.
//! The body and its invariants: `onair_fuzz_support::classify_response` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::classify_response(data));
