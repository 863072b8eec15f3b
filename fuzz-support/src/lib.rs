//! The fuzz bodies of onair: one function per input surface, each taking
//! raw bytes and asserting the surface's invariants (not only "no panic").
//!
//! The targets in `fuzz/fuzz_targets/` are thin `fuzz_target!` wrappers over
//! these functions, and this crate's test `tests/fuzz_corpus.rs` replays
//! every committed seed in `fuzz/corpus/<target>/` through them on stable,
//! so normal CI compiles the bodies and replays the corpora. Not published:
//! the library crates carry no fuzz code, only the few hooks behind their
//! `fuzzing` features. The C API body ([`c_api()`]) calls libonair's exported
//! functions through `ffi/rlib` (libonair's sources as the rlib `onair_ffi`).

mod bodies;
mod c_api;

pub use bodies::*;
pub use c_api::c_api;
