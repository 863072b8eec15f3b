//! The `Bot` machine driven by an operation list: one token request, no past waits, chat ≤ 200 units.
//! The body and its invariants: `onair_fuzz_support::bot` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::bot(data));
