//! The C API called with arbitrary arguments (NULL handles and out-parameters, (NULL, n) pairs,
//! invalid UTF-8, ids never issued, kit configurations and saved state of any shape), each answer
//! checked against the core's. The body and its invariants: `onair_fuzz_support::c_api`
//! (fuzz-support/src/c_api.rs, over libonair's sources as the rlib of ffi/rlib/).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| onair_fuzz_support::c_api(data));
