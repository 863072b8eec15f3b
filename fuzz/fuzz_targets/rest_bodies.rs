//! Broadcast, listeners and fans bodies, and the listener pager.
//! The body and its invariants: `onair::fuzz::rest_bodies`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::rest_bodies(data));
