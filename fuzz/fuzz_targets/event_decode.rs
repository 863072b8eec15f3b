//! Framing plus typed decoding: every item one JSON line; chunking changes nothing.
//! The body and its invariants: `onair_fuzz_support::event_stream` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::event_stream(data));
