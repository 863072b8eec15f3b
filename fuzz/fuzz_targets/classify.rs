//! The three error body shapes with headers through `problem::classify`: status first.
//! The body and its invariants: `onair::fuzz::classify_response`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::classify_response(data));
