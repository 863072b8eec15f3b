//! Command parsing: prefixes, registered names, roles, argument splitting.
//! The body and its invariants: `onair_fuzz_support::commands` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::commands(data));
