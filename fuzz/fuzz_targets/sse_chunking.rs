//! SSE bytes in arbitrary chunkings: the same items, never over the cap.
//! The body and its invariants: `onair_fuzz_support::sse_chunking` (fuzz-support/src/bodies.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::sse_chunking(data));
