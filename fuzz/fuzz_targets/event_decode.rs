//! Framing plus typed decoding: every item one JSON line; chunking changes nothing.
//! The body and its invariants: `onair::fuzz::event_stream`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::event_stream(data));
