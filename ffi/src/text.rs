//! Chat text helpers: split into messages the service takes, truncate,
//! measure in UTF-16 units (pure functions; the list handle of `split`).

use std::ffi::c_char;

use onair_core::kit::text;

use crate::handle::{free, handles, new_handle, Guarded};
use crate::onair_result::{self, *};
use crate::view::onair_str;
use crate::{boundary, boundary_on, boundary_on_or, out, str_in, string_out};

/// A required text argument: NULL is refused whatever its length.
pub(crate) fn text_arg<'a>(p: *const c_char, len: usize) -> Result<&'a str, onair_result> {
    if p.is_null() {
        return Err(ONAIR_NULL_PARAMETER);
    }
    // SAFETY: (pointer, length) from the caller.
    unsafe { str_in(p, len) }
}

/// A list of strings the caller owns (`onair_text_split`); free with
/// `onair_string_list_free`.
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY
/// (`_len`: 0) and changes nothing. Its strings stay valid until it is
/// freed.
#[derive(Debug)]
pub struct onair_string_list(Guarded<Vec<String>>);

handles! { onair_string_list => Vec<String>, tag 5 }

/// Splits chat text into messages the service accepts (at most 200 UTF-16
/// units each, cut only between grapheme clusters, at spaces when it can;
/// blank parts dropped) into a new list.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_text_split(
    text: *const c_char,
    len: usize,
    out_list: *mut *mut onair_string_list,
) -> onair_result {
    boundary(|| {
        let slot = out(out_list)?;
        let t = text_arg(text, len)?;
        *slot = new_handle::<onair_string_list>(text::split(t))?;
        Ok(())
    })
}

/// The number of strings in a list; NULL, or a call on it in flight on
/// another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_string_list_len(list: *const onair_string_list) -> usize {
    boundary_on_or(0, list, |l| l.len())
}

/// String `index` of a list, borrowed (not NUL-terminated), valid until
/// the list is freed.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; `index` ≥ length →
/// ONAIR_OUT_OF_RANGE.
#[no_mangle]
pub unsafe extern "C" fn onair_string_list_get(
    list: *const onair_string_list,
    index: usize,
    out_str: *mut onair_str,
) -> onair_result {
    boundary_on(list, |l| {
        let slot = out(out_str)?;
        let s = l.get(index).ok_or(ONAIR_OUT_OF_RANGE)?;
        *slot = onair_str::of(s);
        Ok(())
    })
}

/// Frees a list.
///
/// Returns ONAIR_OK (NULL included); ONAIR_FREED_HANDLE when it was freed
/// already (a double free, or a stale handle whose slot now holds another
/// object, which is left alone); ONAIR_INVALID_HANDLE for a pointer that is
/// no handle of this kind; ONAIR_BUSY when another thread is in a call on
/// it (nothing is freed: free it once that call is over).
#[no_mangle]
pub unsafe extern "C" fn onair_string_list_free(list: *mut onair_string_list) -> onair_result {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary(|| unsafe { free(list) })
}

/// Cuts `text` to at most `limit_utf16` UTF-16 units, ending with
/// `ellipsis` when cut (never inside a grapheme cluster), into a string the
/// caller owns (free with `onair_string_free`); `out_len` may be NULL.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_text_truncate(
    text: *const c_char,
    len: usize,
    limit_utf16: usize,
    ellipsis: *const c_char,
    ellipsis_len: usize,
    out_text: *mut *mut c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        let slot = out(out_text)?;
        let (t, e) = (text_arg(text, len)?, text_arg(ellipsis, ellipsis_len)?);
        string_out(text::truncate(t, limit_utf16, e), slot, out(out_len).ok());
        Ok(())
    })
}

/// The length of `text` in UTF-16 units (the unit of the 200 chat limit).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_text_utf16_len(
    text: *const c_char,
    len: usize,
    out_units: *mut usize,
) -> onair_result {
    boundary(|| {
        let slot = out(out_units)?;
        *slot = text::utf16_len(text_arg(text, len)?);
        Ok(())
    })
}
