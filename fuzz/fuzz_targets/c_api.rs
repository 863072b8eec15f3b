//! The C API called with arbitrary arguments (NULL handles and out-parameters, (NULL, n) pairs,
//! invalid UTF-8, ids never issued), each answer checked against the core's.
//! The body and its invariants: `onair_ffi::fuzz::c_api` (ffi/src/fuzz.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_ffi::fuzz::c_api(data));
