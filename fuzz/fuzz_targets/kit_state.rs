//! The audience and milestones JSON forms round-trip.
//! The body and its invariants: `onair::fuzz::kit_state`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::kit_state(data));
