//! Broadcast, listeners and fans bodies, and the listener pager.
//! The body and its invariants: `onair_fuzz_support::rest_bodies` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::rest_bodies(data));
