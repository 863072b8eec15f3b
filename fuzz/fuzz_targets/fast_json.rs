//! Event JSON: the payload reader (template and field by field) against
//! serde_json as the oracle.
//! The body and its invariants: `onair::fuzz::event_json`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::event_json(data));
