//! Command parsing: prefixes, registered names, roles, argument splitting.
//! The body and its invariants: `onair::fuzz::commands`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::commands(data));
