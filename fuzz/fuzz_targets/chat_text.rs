//! Chat text: `split` parts fit, validate and rejoin; `truncate` fits.
//! The body and its invariants: `onair::fuzz::chat_text`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::chat_text(data));
