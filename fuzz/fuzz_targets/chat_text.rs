//! Chat text: `split` parts fit, validate and rejoin; `truncate` fits.
//! The body and its invariants: `onair_fuzz_support::chat_text` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::chat_text(data));
