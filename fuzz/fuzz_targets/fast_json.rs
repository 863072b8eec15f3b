//! Event JSON: the payload reader (its fast path and serde_json) against
//! serde_json as the oracle.
//! The body and its invariants: `onair_fuzz_support::event_json` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::event_json(data));
