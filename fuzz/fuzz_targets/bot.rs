//! The `Bot` machine driven by an operation list: one token request, no past waits, chat ≤ 200 units.
//! The body and its invariants: `onair::fuzz::bot`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::bot(data));
