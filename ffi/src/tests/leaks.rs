//! A call refused for a NULL out-parameter allocates nothing: the `c_api`
//! fuzz target found four constructors (of kit handles since gone) that
//! built their handle before checking the out-parameter
//! (`*out(p)? = Box::into_raw(…)` evaluates the right side first) and
//! leaked it (input kept as `fuzz/corpus/c_api/crash-new-with-a-null-out-leaks`).

use std::ptr::{null, null_mut};

use super::held;
use crate::onair_result::ONAIR_NULL_PARAMETER;
use crate::*;

/// Every constructor with a NULL out-parameter.
fn constructors_with_null_out() {
    let text = "hi";
    // SAFETY: only NULL out-parameters and (pointer, length) pairs of `text`.
    let codes = unsafe {
        [
            onair_decoder_new(0, null_mut()),
            onair_sse_parser_new(0, null_mut()),
            onair_backoff_new(0, 0, 1, null_mut()),
            onair_text_split(text.as_ptr().cast(), text.len(), null_mut()),
            onair_bot_new(null(), null(), 0, null(), 0, 1, null_mut()),
        ]
    };
    for (i, code) in codes.into_iter().enumerate() {
        assert_eq!(code, ONAIR_NULL_PARAMETER, "constructor {i}");
    }
}

#[test]
fn a_constructor_refused_for_a_null_out_parameter_keeps_no_memory() {
    constructors_with_null_out();
    let before = held();
    for _ in 0..3 {
        constructors_with_null_out();
    }
    assert_eq!(held() - before, 0, "bytes kept by refused constructors");
}
