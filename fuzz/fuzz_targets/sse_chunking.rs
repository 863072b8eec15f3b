//! SSE bytes in arbitrary chunkings: the same items, never over the cap.
//! The body and its invariants: `onair::fuzz::sse_chunking`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair::fuzz::sse_chunking(data));
