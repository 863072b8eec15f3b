//! Quota headers and `Retry-After`: capped, never in the past, first of a name wins.
//! The body and its invariants: `onair_fuzz_support::quota_headers` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::quota_headers(data));
