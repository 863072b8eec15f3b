//! The audience and milestones JSON forms round-trip.
//! The body and its invariants: `onair_fuzz_support::kit_state` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::kit_state(data));
