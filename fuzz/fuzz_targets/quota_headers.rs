//! Quota headers and `Retry-After`: capped, never in the past, first of a name wins.
//! The body and its invariants: `onair::fuzz::quota_headers`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::quota_headers(data));
