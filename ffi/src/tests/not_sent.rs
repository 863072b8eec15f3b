//! `onair_bot_on_not_sent` and the notices it leads to, as C sees them.

use std::ptr::{null, null_mut};

use crate::onair_action_kind::*;
use crate::onair_notice_kind::*;
use crate::onair_result::*;
use crate::*;

const URL: &str = "http://127.0.0.1:9";
const CLIENT_ID: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

fn text(s: onair_str) -> String {
    if s.ptr.is_null() {
        return String::new();
    }
    // SAFETY: a view into the action last polled, `len` bytes long.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) };
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_code_exchange_that_was_not_sent_is_told_and_goes_again() {
    let mut cfg = null_mut();
    let mut bot = null_mut();
    // SAFETY: live strings with their lengths, live out-parameters; the
    // handles are freed at the end.
    unsafe {
        let r = onair_bot_config_new(
            URL.as_ptr().cast(),
            URL.len(),
            CLIENT_ID.as_ptr().cast(),
            CLIENT_ID.len(),
            "s".as_ptr().cast(),
            1,
            &mut cfg,
        );
        assert_eq!(r, ONAIR_OK);
        assert_eq!(
            onair_bot_new(cfg, null(), 0, null(), 0, 1, &mut bot),
            ONAIR_OK
        );
        let (code, uri) = ("code-1", "https://bot.test/cb");
        let r = onair_bot_authorize(
            bot,
            code.as_ptr().cast(),
            code.len(),
            uri.as_ptr().cast(),
            uri.len(),
        );
        assert_eq!(r, ONAIR_OK);
        let mut action = std::mem::zeroed::<onair_action>();
        assert_eq!(onair_bot_poll(bot, 1000, &mut action), ONAIR_OK);
        assert_eq!(action.kind, ONAIR_ACTION_SEND);
        let id = action.request_id;

        assert_eq!(onair_bot_on_not_sent(bot, id, 1010), ONAIR_OK);
        assert_eq!(onair_bot_on_not_sent(bot, 999, 1010), ONAIR_UNKNOWN_REQUEST);
        assert_eq!(onair_bot_poll(bot, 1010, &mut action), ONAIR_OK);
        assert_eq!(action.kind, ONAIR_ACTION_NOTICE);
        assert_eq!(action.notice, ONAIR_NOTICE_UNREACHABLE);
        assert!(action.is_warning);
        assert_eq!(action.count, 1);
        assert_eq!(action.since_ms, 1010);
        assert_eq!(text(action.name), "token");
        assert_eq!(text(action.code), "not_sent");
        assert_eq!(
            text(action.message),
            "the service cannot be reached (token: connection failed, not sent); retrying"
        );
        // Not spent: after a backoff the same exchange goes again.
        assert_eq!(onair_bot_poll(bot, 1010, &mut action), ONAIR_OK);
        assert_eq!(action.kind, ONAIR_ACTION_WAIT);
        assert!(action.has_until_ms);
        let at = action.until_ms;
        assert!(at > 1010 && at <= 1010 + 5_000, "{at}");
        assert_eq!(onair_bot_poll(bot, at, &mut action), ONAIR_OK);
        assert_eq!(action.kind, ONAIR_ACTION_SEND);
        let body = std::slice::from_raw_parts(action.request.body, action.request.body_len);
        assert!(String::from_utf8_lossy(body).contains("code=code-1"));
        assert_eq!(onair_bot_free(bot), ONAIR_OK);
        assert_eq!(onair_bot_config_free(cfg), ONAIR_OK);
    }
}
