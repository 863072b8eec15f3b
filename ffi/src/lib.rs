//! # libonair — the C API of the onair core
//!
//! A thin layer: every rule of the service lives in the core crate
//! (`onair`, imported here as `onair_core`); this crate only moves values
//! across the C boundary. The conventions are in `ffi/README.md`; the header
//! `include/onair.h` is generated from this crate by cbindgen (a unit test
//! renders it and fails when the committed file differs).
//!
//! Every `extern "C"` function runs its body inside `boundary` (or
//! `boundary_or`): a panic becomes `ONAIR_PANIC` (or the documented
//! fallback value), never an unwind into C. An export on a handle uses
//! `boundary_on(handle, |state| …)` (or `_peek`, `_on_or`), which also
//! holds the handle for the call, so its body is its own logic only. A unit test reads the sources
//! and checks that every exported function starts that way, and another
//! injects a panic into each of them.
//!
//! Every handle is a `handle::Guarded` value: each function taking a handle
//! holds its atomic busy flag for the call (`handle::hold`), so a second
//! thread's concurrent call gets `ONAIR_BUSY` instead of undefined
//! behaviour (see the `handle` module).
#![allow(non_camel_case_types)]
// Every exported function checks its pointers before it dereferences them;
// the safety contract of each is its C documentation.
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod action;
mod bot;
mod decoder;
mod handle;
mod problem;
mod sse;
mod text;
mod view;

#[cfg(test)]
mod tests;

pub use action::*;
pub use bot::*;
pub use decoder::*;
pub use problem::*;
pub use sse::*;
pub use text::*;
pub use view::*;

/// The ABI version of this header and library. It changes only when the C
/// ABI breaks (a function's signature or a struct's layout changes, or a
/// function is removed); adding functions or result codes keeps it.
/// Compare it with `onair_abi_version()` at start-up.
pub const ONAIR_ABI_VERSION: u32 = 4;
/// The library's major version (Cargo.toml).
pub const ONAIR_VERSION_MAJOR: u32 = 0;
/// The library's minor version (Cargo.toml).
pub const ONAIR_VERSION_MINOR: u32 = 1;
/// The library's patch version (Cargo.toml).
pub const ONAIR_VERSION_PATCH: u32 = 0;

/// What a fallible call returns. Codes are never reused: a code that
/// goes away leaves a hole (13, 14). `onair_result_message()` gives a static text.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_result {
    /// Success; the out-parameters were written.
    ONAIR_OK = 0,
    /// A required pointer was NULL (or a (pointer, length) pair was
    /// (NULL, n) with n > 0).
    ONAIR_NULL_PARAMETER = 1,
    /// A string argument was not valid UTF-8.
    ONAIR_INVALID_UTF8 = 2,
    /// The library panicked inside this call (a bug in libonair). The
    /// handle involved may be in any state: only free it.
    ONAIR_PANIC = 3,
    /// The base URL is not an absolute http(s) URL without query or fragment.
    ONAIR_INVALID_BASE_URL = 4,
    /// No longer returned since ABI 4: `ONAIR_INVALID_CLIENT_ID` and
    /// `ONAIR_INVALID_CLIENT_SECRET` say which credential is wrong.
    ONAIR_INVALID_CREDENTIALS = 5,
    /// The saved token file did not load (not JSON, another format or version).
    ONAIR_INVALID_TOKENS = 6,
    /// A report named a request id the bot never issued.
    ONAIR_UNKNOWN_REQUEST = 7,
    /// A stream report for a plain request, or a plain report for a stream
    /// in a state that does not take it.
    ONAIR_NOT_A_STREAM = 8,
    /// Stream bytes reported before `onair_bot_on_stream_open`.
    ONAIR_STREAM_NOT_STARTED = 9,
    /// Another misuse of the bot's contract (see the handle's last error).
    ONAIR_MISUSE = 10,
    /// The chat message is empty or only white space (nothing was queued).
    ONAIR_CHAT_EMPTY = 11,
    /// The chat message is over 200 UTF-16 units (nothing was queued).
    ONAIR_CHAT_TOO_LONG = 12,
    // 13 and 14 (a full call queue, a stopped bot) are gone since ABI 2:
    // app calls are always taken and answer those by their DONE action.
    /// The bot holds no tokens yet.
    ONAIR_NO_TOKENS = 15,
    /// The endpoint name is not one of the core's (`token`, `chat`, …).
    ONAIR_UNKNOWN_ENDPOINT = 16,
    /// An argument is out of its documented range (an enum value, a step of 0).
    ONAIR_INVALID_ARGUMENT = 17,
    /// A timer tag is empty, too long, or holds a control character.
    ONAIR_BAD_TAG = 18,
    /// Too many timers are set; cancel one first.
    ONAIR_TOO_MANY_TIMERS = 19,
    /// The saved kit state did not load (not JSON, another format).
    ONAIR_INVALID_STATE = 20,
    /// The `onair_event` passed holds no event (`ONAIR_EVENT_NONE`, or a
    /// kind newer than this header).
    ONAIR_NO_EVENT = 21,
    /// An index past the end of a list.
    ONAIR_OUT_OF_RANGE = 22,
    /// There is no current item or action to render (nothing polled yet).
    ONAIR_NO_CURRENT = 23,
    /// The handle is in a call on another thread (a handle is used by one
    /// thread at a time): nothing was done, nothing changed, no view it lent
    /// was invalidated. Serialize the calls (a lock), or retry.
    ONAIR_BUSY = 24,
    /// The kit configuration was refused; `onair_bot_config_last_error`
    /// names the key and says why.
    ONAIR_INVALID_KIT_CONFIG = 25,
    /// The saved kit state was written by a newer onair (its version is
    /// not one this library reads): upgrade, or start without it.
    ONAIR_KIT_STATE_TOO_NEW = 26,
    /// The bot has no kit configured (`onair_bot_config_set_kit_json`).
    ONAIR_NO_KIT = 27,
    /// `onair_bot_config_new`'s `client_id` is not a UUID (8-4-4-4-12
    /// hexadecimal digits; the service answers anything else with
    /// invalid_client).
    ONAIR_INVALID_CLIENT_ID = 28,
    /// `onair_bot_config_new`'s `client_secret` is empty.
    ONAIR_INVALID_CLIENT_SECRET = 29,
    /// The handle is not one this library gave out for this kind of object
    /// (a pointer from elsewhere, another kind of handle): nothing was done.
    ONAIR_INVALID_HANDLE = 30,
    /// The handle was freed (a call on a freed handle, a double free, a stale
    /// free after its memory was reused): nothing was done, no other object
    /// was touched.
    ONAIR_FREED_HANDLE = 31,
    /// Every handle of this kind is in use (about sixteen million live
    /// handles of one kind): free some.
    ONAIR_TOO_MANY_HANDLES = 32,
}

use onair_result::*;

/// The static, NUL-terminated text of a result code (any value: an unknown
/// code gives "unknown result code"). Never NULL; never free it.
#[no_mangle]
pub extern "C" fn onair_result_message(code: u32) -> *const c_char {
    boundary_or(c"panic".as_ptr(), || result_text(code).as_ptr())
}

fn result_text(code: u32) -> &'static std::ffi::CStr {
    match code {
        0 => c"success",
        1 => c"a required pointer argument was NULL",
        2 => c"a string argument was not valid UTF-8",
        3 => c"libonair panicked (a bug); free the handle",
        4 => c"base_url must be an absolute http(s) URL without query or fragment",
        5 => c"the client credentials are unusable (no longer returned: see 28, 29)",
        6 => c"the saved tokens did not load",
        7 => c"a report named a request id that was never issued",
        8 => c"that request is not the stream connection in this state",
        9 => c"stream bytes were reported before the stream opened",
        10 => c"misuse of the bot's contract",
        11 => c"the chat message is empty",
        12 => c"the chat message is over 200 UTF-16 units",
        15 => c"the bot holds no tokens",
        16 => c"unknown endpoint name",
        17 => c"an argument is out of range",
        18 => c"the timer tag is unusable",
        19 => c"too many timers are set",
        20 => c"the saved kit state did not load",
        21 => c"the onair_event holds no event",
        22 => c"index out of range",
        23 => c"nothing current to render",
        24 => c"the handle is in a call on another thread (nothing was done)",
        25 => c"the kit configuration was refused (see the config's last error)",
        26 => c"the saved kit state is from a newer onair",
        27 => c"the bot has no kit configured",
        28 => c"client_id must be a UUID (8-4-4-4-12 hexadecimal digits)",
        29 => c"client_secret must not be empty",
        30 => c"not a handle of this kind from libonair (nothing was done)",
        31 => c"the handle was freed already (nothing was done)",
        32 => c"too many live handles of this kind",
        _ => c"unknown result code",
    }
}

/// The ABI version the library was built with (`ONAIR_ABI_VERSION` of its
/// header). A program built against another header must not use it.
#[no_mangle]
pub extern "C" fn onair_abi_version() -> u32 {
    boundary_or(0, || ONAIR_ABI_VERSION)
}

/// The library's version, e.g. "0.1.0": static, NUL-terminated; never free it.
#[no_mangle]
pub extern "C" fn onair_version() -> *const c_char {
    boundary_or(c"".as_ptr(), || {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    })
}

/// Frees a string the library gave the caller to own (`char **out`
/// parameters, documented as "free with onair_string_free"). NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn onair_string_free(s: *mut c_char) {
    boundary_or((), || {
        if !s.is_null() {
            // SAFETY: the caller passes a pointer this library returned from
            // CString::into_raw, once.
            drop(unsafe { std::ffi::CString::from_raw(s) });
        }
    })
}

// ---- the panic boundary ------------------------------------------------------

#[cfg(test)]
thread_local! {
    /// Tests set this to make the next boundary panic inside its closure.
    pub(crate) static INJECT_PANIC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[inline]
fn injected() {
    #[cfg(test)]
    if INJECT_PANIC.with(|p| p.replace(false)) {
        panic!("injected panic");
    }
}

/// Runs a fallible body: `Ok` → `ONAIR_OK`, `Err(code)` → `code`, a panic
/// → `ONAIR_PANIC`.
pub(crate) fn boundary(f: impl FnOnce() -> Result<(), onair_result>) -> onair_result {
    match catch_unwind(AssertUnwindSafe(|| {
        injected();
        f()
    })) {
        Ok(Ok(())) => ONAIR_OK,
        Ok(Err(code)) => code,
        Err(_) => ONAIR_PANIC,
    }
}

/// Runs an infallible body; a panic gives `fallback`.
pub(crate) fn boundary_or<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(|| {
        injected();
        f()
    }))
    .unwrap_or(fallback)
}

/// The body of an export on handle `handle` (rustls-ffi's
/// `ffi_panic_boundary!` with `try_mut_from_ptr!`): inside [`boundary`],
/// the handle is held for the call ([`handle::hold`]: NULL →
/// `ONAIR_NULL_PARAMETER`, not one of this kind → `ONAIR_INVALID_HANDLE`,
/// freed → `ONAIR_FREED_HANDLE`, in a call on another thread →
/// `ONAIR_BUSY`; these come before any other check), its previous call's
/// detail cleared, and `body` runs on its state.
pub(crate) fn boundary_on<H: handle::Handle>(
    handle: *const H,
    body: impl FnOnce(&mut H::State) -> Result<(), onair_result>,
) -> onair_result {
    boundary(|| {
        // SAFETY: any pointer value is looked up in the handle table, never read.
        let mut held = unsafe { handle::hold(handle) }?;
        body(&mut held)
    })
}

/// As [`boundary_on`] without clearing the previous call's detail: for the
/// `_last_error` getters, which read it.
pub(crate) fn boundary_peek<H: handle::Handle>(
    handle: *const H,
    body: impl FnOnce(&mut H::State) -> Result<(), onair_result>,
) -> onair_result {
    boundary(|| {
        // SAFETY: as in `boundary_on`.
        let mut held = unsafe { handle::peek(handle) }?;
        body(&mut held)
    })
}

/// The body of an export on handle `handle` that returns a value, not a
/// result (a count): `fallback` when the handle cannot be held or the body
/// panics.
pub(crate) fn boundary_on_or<H: handle::Handle, T: Copy>(
    fallback: T,
    handle: *const H,
    body: impl FnOnce(&mut H::State) -> T,
) -> T {
    boundary_or(fallback, || {
        // SAFETY: as in `boundary_on`.
        unsafe { handle::hold(handle) }.map_or(fallback, |mut held| body(&mut held))
    })
}

// ---- arguments -----------------------------------------------------------------

/// An out-parameter, checked before any work is done.
pub(crate) fn out<'a, T>(p: *mut T) -> Result<&'a mut T, onair_result> {
    // SAFETY: the caller passes NULL or a writable pointer to a T.
    unsafe { p.as_mut() }.ok_or(ONAIR_NULL_PARAMETER)
}

/// An optional out-parameter: `value` is written when `p` is not NULL.
pub(crate) fn out_opt<T>(p: *mut T, value: T) {
    if let Ok(slot) = out(p) {
        *slot = value;
    }
}

/// The out-parameters of a borrowed text (`out_ptr`, `out_len`), both
/// checked non-NULL when taken (so before the export's other checks).
pub(crate) struct TextOut<'a> {
    ptr: &'a mut *const c_char,
    len: &'a mut usize,
}

impl<'a> TextOut<'a> {
    pub(crate) fn new(ptr: *mut *const c_char, len: *mut usize) -> Result<Self, onair_result> {
        Ok(TextOut {
            ptr: out(ptr)?,
            len: out(len)?,
        })
    }

    /// Lends `buf` (NUL-terminated, owned by the handle): its text without
    /// the NUL.
    pub(crate) fn lend(self, buf: &[u8]) -> Result<(), onair_result> {
        *self.ptr = buf.as_ptr().cast();
        *self.len = buf.len().saturating_sub(1);
        Ok(())
    }
}

/// Bytes from (pointer, length): (NULL, 0) is empty; (NULL, n > 0) is
/// `ONAIR_NULL_PARAMETER`.
pub(crate) unsafe fn bytes_in<'a>(p: *const u8, len: usize) -> Result<&'a [u8], onair_result> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(ONAIR_NULL_PARAMETER);
    }
    // SAFETY: the caller promises `len` readable bytes at `p`.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// UTF-8 text from (pointer, length); no trailing NUL needed.
pub(crate) unsafe fn str_in<'a>(p: *const c_char, len: usize) -> Result<&'a str, onair_result> {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { bytes_in(p.cast(), len) }?;
    std::str::from_utf8(bytes).map_err(|_| ONAIR_INVALID_UTF8)
}

/// A string the caller will own: written to `out`, freed with
/// `onair_string_free`. `len` (optional) gets its length without the NUL.
pub(crate) fn string_out(
    text: impl Into<Vec<u8>>,
    out_ptr: &mut *mut c_char,
    out_len: Option<&mut usize>,
) {
    let mut bytes: Vec<u8> = text.into();
    // Text from the core holds no NUL; if one slipped in, cut there.
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    let len = bytes.len();
    let owned = std::ffi::CString::new(bytes).unwrap_or_default();
    *out_ptr = owned.into_raw();
    if let Some(l) = out_len {
        *l = len;
    }
}
