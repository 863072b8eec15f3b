//! Event JSON: the fast payload reader agrees with serde whenever it answers.
//! The body and its invariants: `onair::fuzz::event_json`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::event_json(data));
