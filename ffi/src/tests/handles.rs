//! Handles a stale pointer cannot alias (`handle.rs`): a double free, a call
//! on a freed handle and a stale free after the slot was reused are each
//! answered `ONAIR_FREED_HANDLE`, and touch no live object; a pointer that
//! is no handle of the kind asked for is `ONAIR_INVALID_HANDLE`.

use std::ptr::{null, null_mut};

use crate::onair_result::*;
use crate::*;

const URL: &str = "http://127.0.0.1:9";
const CLIENT_ID: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

fn config() -> *mut onair_bot_config {
    let mut cfg = null_mut();
    // SAFETY: (pointer, length) pairs of live strings, a live out-parameter.
    let r = unsafe {
        onair_bot_config_new(
            URL.as_ptr().cast(),
            URL.len(),
            CLIENT_ID.as_ptr().cast(),
            CLIENT_ID.len(),
            "s".as_ptr().cast(),
            1,
            &mut cfg,
        )
    };
    assert_eq!(r, ONAIR_OK);
    cfg
}

fn bot(cfg: *mut onair_bot_config) -> *mut onair_bot {
    let mut bot = null_mut();
    // SAFETY: a live config, a live out-parameter.
    let r = unsafe { onair_bot_new(cfg, null(), 0, null(), 0, 1, &mut bot) };
    assert_eq!(r, ONAIR_OK);
    bot
}

#[test]
fn a_double_free_a_call_after_free_and_a_stale_free_after_reuse_are_answered() {
    let cfg = config();
    let first = bot(cfg);
    let mut id = 0u64;
    // SAFETY: every handle value is looked up, never read as memory.
    unsafe {
        assert_eq!(onair_bot_free(first), ONAIR_OK);
        assert_eq!(onair_bot_free(first), ONAIR_FREED_HANDLE, "a double free");
        assert_eq!(
            onair_bot_fetch_fans(first, &mut id),
            ONAIR_FREED_HANDLE,
            "a call on a freed bot"
        );
        assert_eq!(onair_bot_pending_calls(first), 0);
        // The next bot takes the freed slot (the free list is LIFO): same
        // index, newer generation, another handle value.
        let second = bot(cfg);
        assert_ne!(second, first, "a reused slot gives a new handle value");
        assert_eq!(onair_bot_fetch_fans(second, &mut id), ONAIR_OK);
        assert_eq!(
            onair_bot_free(first),
            ONAIR_FREED_HANDLE,
            "a stale free after reuse"
        );
        // The live bot is untouched: its queued call is still there.
        assert_eq!(onair_bot_pending_calls(second), 1);
        assert_eq!(onair_bot_free(second), ONAIR_OK);
        assert_eq!(onair_bot_config_free(cfg), ONAIR_OK);
        assert_eq!(onair_bot_config_free(cfg), ONAIR_FREED_HANDLE);
    }
}

#[test]
fn a_pointer_that_is_no_handle_of_the_kind_is_invalid() {
    let cfg = config();
    let mut d = null_mut();
    let mut heap = Box::new(0u64);
    let mut id = 0u64;
    // SAFETY: as above; the pointers below are never dereferenced by the library.
    unsafe {
        assert_eq!(onair_decoder_new(0, &mut d), ONAIR_OK);
        let foreign: *mut onair_bot = (&mut *heap as *mut u64).cast();
        assert_eq!(onair_bot_fetch_fans(foreign, &mut id), ONAIR_INVALID_HANDLE);
        assert_eq!(onair_bot_free(foreign), ONAIR_INVALID_HANDLE);
        assert_eq!(
            onair_bot_fetch_fans(d.cast(), &mut id),
            ONAIR_INVALID_HANDLE,
            "a decoder passed as a bot"
        );
        assert_eq!(
            onair_bot_new(d.cast(), null(), 0, null(), 0, 1, null_mut()),
            ONAIR_INVALID_HANDLE
        );
        assert_eq!(onair_decoder_pending(d), 0);
        assert_eq!(onair_decoder_free(d), ONAIR_OK);
        assert_eq!(onair_bot_config_free(cfg), ONAIR_OK);
        assert_eq!(onair_bot_free(null_mut()), ONAIR_OK, "NULL is fine");
    }
    *heap += 1;
    assert_eq!(*heap, 1, "the foreign memory was not written");
}

#[test]
fn the_last_error_describes_the_last_call_only() {
    let cfg = config();
    let b = bot(cfg);
    let (mut p, mut n) = (null(), 0usize);
    // SAFETY: live handles and out-parameters.
    unsafe {
        assert_eq!(
            onair_bot_on_transport_error(b, 99, 1),
            ONAIR_UNKNOWN_REQUEST
        );
        assert_eq!(onair_bot_last_error(b, &mut p, &mut n), ONAIR_OK);
        assert!(n > 0, "the refusal has its detail");
        // Reading it twice keeps it; any other call replaces it.
        assert_eq!(onair_bot_last_error(b, &mut p, &mut n), ONAIR_OK);
        assert!(n > 0);
        assert_eq!(onair_bot_pending_calls(b), 0);
        assert_eq!(onair_bot_last_error(b, &mut p, &mut n), ONAIR_OK);
        assert_eq!(n, 0, "a call that succeeded clears it");
        assert_eq!(
            onair_bot_send_chat(b, null(), 1, null_mut()),
            ONAIR_NULL_PARAMETER
        );
        assert_eq!(onair_bot_last_error(b, &mut p, &mut n), ONAIR_OK);
        assert_eq!(n, 0, "no stale text after a code without detail");
        assert_eq!(onair_bot_free(b), ONAIR_OK);
        assert_eq!(onair_bot_config_free(cfg), ONAIR_OK);
    }
}
