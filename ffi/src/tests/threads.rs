//! One handle, one thread at a time, checked (`handle.rs`): while a
//! handle's busy flag is held — as it is while another thread is in a call
//! on it — every function taking that handle answers `ONAIR_BUSY` (the
//! infallible getters their 0 / false, `_free` and `onair_backoff_reset`
//! nothing), writes no out-parameter and changes nothing. A source scan
//! checks that the lists below name every exported function taking a
//! handle. (`onair_event_json` takes a view, not a handle: it reads the
//! view's fields only, so a held handle does not refuse it.) Then real
//! threads: two hammering one decoder get only `ONAIR_OK` or `ONAIR_BUSY`;
//! threads with handles of their own never see `ONAIR_BUSY`.

use std::collections::BTreeSet;
use std::ffi::c_char;
use std::ptr::{null, null_mut, NonNull};

use crate::handle::hold;
use crate::onair_result::{self, *};
use crate::*;

const URL: &str = "http://127.0.0.1:9";
const CLIENT_ID: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const TOKEN_BODY: &str = "{\"access_token\":\"AT-xyz\",\"token_type\":\"bearer\",\
\"refresh_token\":\"RT-xyz\",\"expires_in\":3600,\"scope\":\"chat.send live.read events.chat \
events.presence events.like events.donation listeners.read fans.read\"}";
/// A manager's join, hearts, a donation, then a command.
const STREAM: &str = "id:1-0\nevent:presence\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\
\"type\":\"JOIN\",\"fanRank\":null,\"isManager\":true,\"favoriteTemperature\":null,\"time\":\"t\"}\n\n\
id:1-1\nevent:like\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"type\":\"FREE\",\
\"totalAmount\":5,\"amount\":5,\"extraAmount\":0,\"combo\":null,\"time\":\"t\"}\n\n\
id:1-2\nevent:donation\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"amount\":700,\
\"message\":null,\"time\":\"t\"}\n\n\
id:1-3\nevent:chat\ndata:{\"user\":{\"id\":\"u-1\",\"nickname\":\"sky\"},\"isDj\":false,\
\"message\":\"!hi there\",\"sentTime\":\"t\"}\n\n";

/// The kit of the bots below: `!hi`, greetings, milestones, the tally.
const KIT: &str = r#"{"commands":[{"name":"hi"}],"greetings":{},"milestones":{"hearts_every":5,"donations_every":500},"tally":true}"#;

/// Handle types: a parameter of one of these (not `**`) takes a handle.
const HANDLES: [&str; 6] = [
    "onair_bot_config",
    "onair_bot",
    "onair_decoder",
    "onair_sse_parser",
    "onair_string_list",
    "onair_backoff",
];

fn p(s: &str) -> *const c_char {
    s.as_ptr().cast()
}

fn b(s: &str) -> *const u8 {
    s.as_ptr()
}

/// A pointer no call may write (out-parameters are untouched on BUSY).
fn poison<T>() -> *mut T {
    NonNull::dangling().as_ptr()
}

/// The exported functions that take a handle.
fn scanned() -> BTreeSet<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("src/ reads") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source reads");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("extern \"C\" fn ") {
            rest = &rest[at + "extern \"C\" fn ".len()..];
            let open = rest.find('(').expect("parameters");
            let close = rest.find(')').expect("parameters end");
            let name = &rest[..open];
            let takes = rest[open + 1..close].split(',').any(|param| {
                let ty = param.split(':').nth(1).unwrap_or("").trim();
                let ty = ty
                    .strip_prefix("*mut ")
                    .or_else(|| ty.strip_prefix("*const "))
                    .unwrap_or("");
                HANDLES.contains(&ty)
            });
            if takes {
                found.insert(name.to_owned());
            }
        }
    }
    found
}

/// Runs `calls` with their handle held; each must say it was answered busy.
fn all_busy(covered: &mut BTreeSet<String>, calls: &[(&str, &dyn Fn() -> bool)]) {
    for (name, call) in calls {
        assert!(
            call(),
            "{name} did not answer ONAIR_BUSY while its handle was held"
        );
        covered.insert((*name).to_owned());
    }
}

/// A bot with the kit configured that holds tokens and has its stream
/// open; the request id of the stream.
unsafe fn streaming_bot() -> (*mut onair_bot, u64) {
    // SAFETY: pointers from this test.
    unsafe {
        let mut cfg = null_mut();
        assert_eq!(
            onair_bot_config_new(
                p(URL),
                URL.len(),
                p(CLIENT_ID),
                CLIENT_ID.len(),
                p("s"),
                1,
                &mut cfg
            ),
            ONAIR_OK
        );
        assert_eq!(
            onair_bot_config_set_kit_json(cfg, p(KIT), KIT.len()),
            ONAIR_OK
        );
        let mut bot = null_mut();
        assert_eq!(
            onair_bot_new(cfg, null(), 0, null(), 0, 7, &mut bot),
            ONAIR_OK
        );
        onair_bot_config_free(cfg);
        let mut a = std::mem::zeroed::<onair_action>();
        assert_eq!(onair_bot_poll(bot, 1000, &mut a), ONAIR_OK);
        assert_eq!(
            onair_bot_authorize(bot, p("code"), 4, p("https://x/cb"), 11),
            ONAIR_OK
        );
        assert_eq!(onair_bot_poll(bot, 1000, &mut a), ONAIR_OK);
        assert_eq!(a.kind, onair_action_kind::ONAIR_ACTION_SEND);
        let ct = onair_header {
            name: p("Content-Type"),
            name_len: 12,
            value: p("application/json"),
            value_len: 16,
        };
        let r = onair_bot_on_response(
            bot,
            a.request_id,
            200,
            &ct,
            1,
            b(TOKEN_BODY),
            TOKEN_BODY.len(),
            1000,
        );
        assert_eq!(r, ONAIR_OK);
        let mut now = 1000;
        for _ in 0..50 {
            assert_eq!(onair_bot_poll(bot, now, &mut a), ONAIR_OK);
            match a.kind {
                onair_action_kind::ONAIR_ACTION_OPEN_STREAM => {
                    let id = a.request_id;
                    assert_eq!(
                        onair_bot_on_stream_open(bot, id, 200, null(), 0, now),
                        ONAIR_OK
                    );
                    return (bot, id);
                }
                onair_action_kind::ONAIR_ACTION_WAIT if a.has_until_ms => now = a.until_ms,
                _ => {}
            }
        }
        panic!("the bot never opened its stream");
    }
}

#[test]
#[allow(clippy::too_many_lines)]
fn a_held_handle_answers_busy_and_changes_nothing() {
    let mut covered = BTreeSet::new();
    let mut u = 0u64;
    let mut n = 0usize;
    let (mut s, mut found) = (null::<c_char>(), false);
    // SAFETY: every pointer is from this test and alive; views are read
    // while current; the flag is held only through `hold`, like a call.
    unsafe {
        // ---- configuration
        let mut cfg = null_mut();
        let r = onair_bot_config_new(
            p(URL),
            URL.len(),
            p(CLIENT_ID),
            CLIENT_ID.len(),
            p("s"),
            1,
            &mut cfg,
        );
        assert_eq!(r, ONAIR_OK);
        let held = hold(cfg).expect("the flag is free");
        assert_eq!(
            hold(cfg).err(),
            Some(ONAIR_BUSY),
            "a second holder is refused"
        );
        all_busy(
            &mut covered,
            &[
                ("onair_bot_config_set_events", &|| {
                    onair_bot_config_set_events(cfg, false) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_check_credentials", &|| {
                    onair_bot_config_set_check_credentials(cfg, false) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_request_timeout_ms", &|| {
                    onair_bot_config_set_request_timeout_ms(cfg, 5) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_shutdown_grace_ms", &|| {
                    onair_bot_config_set_shutdown_grace_ms(cfg, 5) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_max_attempts", &|| {
                    onair_bot_config_set_max_attempts(cfg, 2) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_max_queued_calls", &|| {
                    onair_bot_config_set_max_queued_calls(cfg, 1) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_watchdog_ms", &|| {
                    onair_bot_config_set_watchdog_ms(cfg, 5) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_connect_timeout_ms", &|| {
                    onair_bot_config_set_connect_timeout_ms(cfg, 5) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_refresh_margin_ms", &|| {
                    onair_bot_config_set_refresh_margin_ms(cfg, 5) == ONAIR_BUSY
                }),
                ("onair_bot_config_set_kit_json", &|| {
                    onair_bot_config_set_kit_json(cfg, p("{"), 1) == ONAIR_BUSY
                }),
                ("onair_bot_config_last_error", &|| {
                    onair_bot_config_last_error(cfg, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_new", &|| {
                    let mut out = poison::<onair_bot>();
                    onair_bot_new(cfg, null(), 0, null(), 0, 1, &mut out) == ONAIR_BUSY
                        && out == poison()
                }),
                ("onair_bot_config_free", &|| {
                    onair_bot_config_free(cfg) == ONAIR_BUSY
                }),
            ],
        );
        drop(held);
        // Nothing changed (max_queued_calls is still 100, no error recorded)
        // and the free was refused.
        assert_eq!(onair_bot_config_last_error(cfg, &mut s, &mut n), ONAIR_OK);
        assert_eq!(n, 0);
        let mut bot = null_mut();
        assert_eq!(
            onair_bot_new(cfg, null(), 0, null(), 0, 1, &mut bot),
            ONAIR_OK
        );
        assert_eq!(onair_bot_fetch_fans(bot, &mut u), ONAIR_OK);
        assert_eq!(onair_bot_fetch_fans(bot, &mut u), ONAIR_OK);
        onair_bot_config_free(cfg);

        // ---- bot
        let held = hold(bot).expect("the flag is free");
        let hdr = onair_header {
            name: p("a"),
            name_len: 1,
            value: p("b"),
            value_len: 1,
        };
        all_busy(
            &mut covered,
            &[
                ("onair_bot_last_error", &|| {
                    onair_bot_last_error(bot, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_poll", &|| {
                    let mut a = std::mem::zeroed::<onair_action>();
                    a.request_id = 77;
                    onair_bot_poll(bot, 5, &mut a) == ONAIR_BUSY && a.request_id == 77
                }),
                ("onair_bot_action_json", &|| {
                    onair_bot_action_json(bot, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_on_response", &|| {
                    onair_bot_on_response(bot, 1, 200, &hdr, 1, b("x"), 1, 5) == ONAIR_BUSY
                }),
                ("onair_bot_on_transport_error", &|| {
                    onair_bot_on_transport_error(bot, 1, 5) == ONAIR_BUSY
                }),
                ("onair_bot_on_not_sent", &|| {
                    onair_bot_on_not_sent(bot, 1, 5) == ONAIR_BUSY
                }),
                ("onair_bot_on_stream_open", &|| {
                    onair_bot_on_stream_open(bot, 1, 200, null(), 0, 5) == ONAIR_BUSY
                }),
                ("onair_bot_on_stream_bytes", &|| {
                    onair_bot_on_stream_bytes(bot, 1, b("x"), 1, 5) == ONAIR_BUSY
                }),
                ("onair_bot_on_stream_closed", &|| {
                    onair_bot_on_stream_closed(bot, 1, 5) == ONAIR_BUSY
                }),
                ("onair_bot_authorize", &|| {
                    onair_bot_authorize(bot, p("c"), 1, p("u"), 1) == ONAIR_BUSY
                }),
                ("onair_bot_send_chat", &|| {
                    onair_bot_send_chat(bot, p("hi"), 2, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_fetch_broadcast", &|| {
                    onair_bot_fetch_broadcast(bot, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_list_listeners", &|| {
                    onair_bot_list_listeners(bot, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_fetch_fans", &|| {
                    onair_bot_fetch_fans(bot, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_request_reconnect", &|| {
                    onair_bot_request_reconnect(bot, 5) == ONAIR_BUSY
                }),
                ("onair_bot_shutdown", &|| {
                    onair_bot_shutdown(bot, true) == ONAIR_BUSY
                }),
                ("onair_bot_tokens_json", &|| {
                    onair_bot_tokens_json(bot, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_pending_calls", &|| {
                    onair_bot_pending_calls(bot) == 0
                }),
                ("onair_bot_say", &|| {
                    onair_bot_say(bot, p("hi"), 2, poison(), 1, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_reply", &|| {
                    onair_bot_reply(bot, 1, p("u"), 1, null(), 0, p("hi"), 2) == ONAIR_BUSY
                }),
                ("onair_bot_reply_counters", &|| {
                    onair_bot_reply_counters(bot, 1, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_tally_json", &|| {
                    onair_bot_tally_json(bot, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_donor", &|| {
                    onair_bot_donor(bot, 0, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_status_json", &|| {
                    onair_bot_status_json(bot, 5, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_daily_quota_json", &|| {
                    onair_bot_daily_quota_json(bot, 5, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_share_daily_quota_json", &|| {
                    onair_bot_share_daily_quota_json(bot, b("{}").cast(), 2, 5) == ONAIR_BUSY
                }),
                ("onair_bot_consent_stop_json", &|| {
                    onair_bot_consent_stop_json(bot, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_bot_schedule", &|| {
                    onair_bot_schedule(bot, 5, p("t"), 1) == ONAIR_BUSY
                }),
                ("onair_bot_every", &|| {
                    onair_bot_every(bot, 5, p("t"), 1, 5) == ONAIR_BUSY
                }),
                ("onair_bot_set_timer", &|| {
                    onair_bot_set_timer(bot, p("t"), 1, 5, 0, false) == ONAIR_BUSY
                }),
                ("onair_bot_cancel_timer", &|| {
                    onair_bot_cancel_timer(bot, p("t"), 1, poison()) == ONAIR_BUSY
                }),
                ("onair_bot_free", &|| onair_bot_free(bot) == ONAIR_BUSY),
            ],
        );
        drop(held);
        // Still two calls queued, no error recorded, not shut down, no timer.
        assert_eq!(onair_bot_pending_calls(bot), 2);
        assert_eq!(onair_bot_last_error(bot, &mut s, &mut n), ONAIR_OK);
        assert_eq!(n, 0);
        assert_eq!(onair_bot_cancel_timer(bot, p("t"), 1, &mut found), ONAIR_OK);
        assert!(!found);
        let mut a = std::mem::zeroed::<onair_action>();
        // The two calls are held for consent (two notices), then the ask.
        for _ in 0..2 {
            assert_eq!(onair_bot_poll(bot, 5, &mut a), ONAIR_OK);
            assert_eq!(a.notice, onair_notice_kind::ONAIR_NOTICE_CALL_HELD);
        }
        assert_eq!(onair_bot_poll(bot, 5, &mut a), ONAIR_OK);
        assert_eq!(a.kind, onair_action_kind::ONAIR_ACTION_NEEDS_AUTHORIZATION);
        onair_bot_free(bot);

        // ---- decoder
        let mut d = null_mut();
        assert_eq!(onair_decoder_new(0, &mut d), ONAIR_OK);
        assert_eq!(onair_decoder_feed(d, b(STREAM), STREAM.len()), ONAIR_OK);
        let mut item = std::mem::zeroed::<onair_item>();
        assert_eq!(onair_decoder_next(d, &mut item), ONAIR_OK);
        let ev = item.event; // the current presence, lent by the decoder
        assert_eq!(onair_decoder_pending(d), 3);

        let held = hold(d).expect("the flag is free");
        all_busy(
            &mut covered,
            &[
                ("onair_decoder_feed", &|| {
                    onair_decoder_feed(d, b(STREAM), STREAM.len()) == ONAIR_BUSY
                }),
                ("onair_decoder_finish", &|| {
                    onair_decoder_finish(d) == ONAIR_BUSY
                }),
                ("onair_decoder_next", &|| {
                    let mut v = std::mem::zeroed::<onair_item>();
                    v.retry_ms = 77;
                    onair_decoder_next(d, &mut v) == ONAIR_BUSY && v.retry_ms == 77
                }),
                ("onair_decoder_item_json", &|| {
                    onair_decoder_item_json(d, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_decoder_take_json", &|| {
                    onair_decoder_take_json(d, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_decoder_pending", &|| onair_decoder_pending(d) == 0),
                ("onair_decoder_free", &|| {
                    onair_decoder_free(d) == ONAIR_BUSY
                }),
            ],
        );
        // The view is plain fields: reading it back takes no handle.
        let mut owned = null_mut();
        assert_eq!(onair_event_json(&ev, &mut owned, null_mut()), ONAIR_OK);
        let line = std::ffi::CStr::from_ptr(owned).to_str().expect("UTF-8");
        assert!(
            line.contains("\"id\":\"1-0\"") && line.contains("presence"),
            "{line}"
        );
        onair_string_free(owned);
        drop(held);
        assert_eq!(onair_decoder_pending(d), 3);
        onair_decoder_free(d);

        // ---- backoff, string list, SSE parser
        let mut backoff = null_mut();
        assert_eq!(onair_backoff_new(0, 0, 1, &mut backoff), ONAIR_OK);
        assert_eq!(onair_backoff_next_delay_ms(backoff, &mut u), ONAIR_OK);
        let held = hold(backoff).expect("the flag is free");
        all_busy(
            &mut covered,
            &[
                ("onair_backoff_next_delay_ms", &|| {
                    onair_backoff_next_delay_ms(backoff, poison()) == ONAIR_BUSY
                }),
                ("onair_backoff_reset", &|| {
                    onair_backoff_reset(backoff);
                    true
                }),
                ("onair_backoff_attempt", &|| {
                    onair_backoff_attempt(backoff) == 0
                }),
                ("onair_backoff_free", &|| {
                    onair_backoff_free(backoff) == ONAIR_BUSY
                }),
            ],
        );
        drop(held);
        assert_eq!(onair_backoff_attempt(backoff), 1, "the reset was refused");
        onair_backoff_free(backoff);

        let mut list = null_mut();
        assert_eq!(onair_text_split(p("a b"), 3, &mut list), ONAIR_OK);
        let held = hold(list).expect("the flag is free");
        all_busy(
            &mut covered,
            &[
                ("onair_string_list_len", &|| {
                    onair_string_list_len(list) == 0
                }),
                ("onair_string_list_get", &|| {
                    onair_string_list_get(list, 0, poison()) == ONAIR_BUSY
                }),
                ("onair_string_list_free", &|| {
                    onair_string_list_free(list) == ONAIR_BUSY
                }),
            ],
        );
        drop(held);
        assert_eq!(onair_string_list_len(list), 1);
        onair_string_list_free(list);

        let mut parser = null_mut();
        assert_eq!(onair_sse_parser_new(0, &mut parser), ONAIR_OK);
        assert_eq!(
            onair_sse_parser_feed(parser, b(STREAM), STREAM.len()),
            ONAIR_OK
        );
        let held = hold(parser).expect("the flag is free");
        all_busy(
            &mut covered,
            &[
                ("onair_sse_parser_feed", &|| {
                    onair_sse_parser_feed(parser, b(STREAM), STREAM.len()) == ONAIR_BUSY
                }),
                ("onair_sse_parser_finish", &|| {
                    onair_sse_parser_finish(parser) == ONAIR_BUSY
                }),
                ("onair_sse_parser_next", &|| {
                    onair_sse_parser_next(parser, poison()) == ONAIR_BUSY
                }),
                ("onair_sse_parser_item_json", &|| {
                    onair_sse_parser_item_json(parser, poison(), poison()) == ONAIR_BUSY
                }),
                ("onair_sse_parser_last_event_id", &|| {
                    onair_sse_parser_last_event_id(parser, poison()) == ONAIR_BUSY
                }),
                ("onair_sse_parser_pending", &|| {
                    onair_sse_parser_pending(parser) == 0
                }),
                ("onair_sse_parser_free", &|| {
                    onair_sse_parser_free(parser) == ONAIR_BUSY
                }),
            ],
        );
        drop(held);
        assert_eq!(onair_sse_parser_pending(parser), 4);
        onair_sse_parser_free(parser);

        // ---- a kit bot: its getters, and the views of its actions
        let (bot, stream) = streaming_bot();
        assert_eq!(
            onair_bot_on_stream_bytes(bot, stream, b(STREAM), STREAM.len(), 2000),
            ONAIR_OK
        );
        let a = poll_for(bot, onair_action_kind::ONAIR_ACTION_EVENT);
        let bot_ev = a.event;
        let held = hold(bot).expect("the flag is free");
        assert_eq!(onair_bot_tally_json(bot, poison(), poison()), ONAIR_BUSY);
        assert_eq!(onair_event_json(&bot_ev, &mut owned, null_mut()), ONAIR_OK);
        onair_string_free(owned);
        drop(held);
        let mut donor = std::mem::zeroed::<onair_donor>();
        assert_eq!(onair_bot_donor(bot, 0, &mut donor), ONAIR_OK);
        assert_eq!((donor.donated, donor.donations), (700, 1));
        assert_eq!(onair_bot_donor(bot, 1, &mut donor), ONAIR_OUT_OF_RANGE);
        onair_bot_free(bot);
    }
    let missing: Vec<String> = scanned().difference(&covered).cloned().collect();
    assert!(
        missing.is_empty(),
        "functions taking a handle not checked for ONAIR_BUSY: {missing:?}"
    );
    assert!(covered.len() > 50, "only {} covered", covered.len());
}

/// A decoder's address, for threads.
#[derive(Clone, Copy)]
struct Shared(usize);

impl Shared {
    fn decoder(self) -> *mut onair_decoder {
        self.0 as *mut onair_decoder
    }
}

const FRAMES: &str = ":heartbeat\n\nevent:chat\ndata:{\"user\":{\"id\":\"u\",\"nickname\":null},\
\"isDj\":false,\"message\":\"hi\",\"sentTime\":\"t\"}\n\n";

/// Every call of one thread on `d`, `rounds` times: the results seen.
fn hammer(d: *mut onair_decoder, rounds: usize) -> Vec<onair_result> {
    let mut seen = Vec::new();
    for _ in 0..rounds {
        // SAFETY: a live decoder; views are not read (another thread may
        // invalidate them at any time): only result codes are.
        unsafe {
            let mut item = std::mem::zeroed::<onair_item>();
            let (mut ptr, mut len) = (std::ptr::null::<std::ffi::c_char>(), 0);
            seen.push(onair_decoder_feed(d, b(FRAMES), FRAMES.len()));
            seen.push(onair_decoder_next(d, &mut item));
            seen.push(onair_decoder_item_json(d, &mut ptr, &mut len));
            seen.push(onair_decoder_take_json(d, &mut ptr, &mut len));
            let _ = onair_decoder_pending(d);
        }
    }
    seen
}

#[test]
fn threads_sharing_a_decoder_get_ok_or_busy_and_threads_with_their_own_never_busy() {
    let rounds = if cfg!(miri) { 20 } else { 20_000 };
    let mut d = null_mut();
    // SAFETY: an out-parameter.
    assert_eq!(unsafe { onair_decoder_new(0, &mut d) }, ONAIR_OK);
    let shared = Shared(d as usize);
    let seen: Vec<onair_result> = std::thread::scope(|s| {
        let a = s.spawn(move || hammer(shared.decoder(), rounds));
        let b = s.spawn(move || hammer(shared.decoder(), rounds));
        let mut all = a.join().expect("thread a");
        all.extend(b.join().expect("thread b"));
        all
    });
    let odd: Vec<&onair_result> = seen
        .iter()
        .filter(|r| !matches!(r, ONAIR_OK | ONAIR_BUSY | ONAIR_NO_CURRENT))
        .collect();
    assert!(odd.is_empty(), "unexpected results: {odd:?}");
    // SAFETY: both threads are done.
    unsafe { onair_decoder_free(d) };

    // One decoder each: never busy, every item read.
    let seen: Vec<onair_result> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(move || {
                    let mut own = null_mut();
                    // SAFETY: an out-parameter; the decoder is this thread's.
                    unsafe {
                        assert_eq!(onair_decoder_new(0, &mut own), ONAIR_OK);
                        let seen = hammer(own, rounds);
                        onair_decoder_free(own);
                        seen
                    }
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("a thread"))
            .collect()
    });
    assert!(seen
        .iter()
        .all(|r| matches!(r, ONAIR_OK | ONAIR_NO_CURRENT)));
    assert!(seen.contains(&ONAIR_OK));
}

/// The bytes of a borrowed string.
unsafe fn text_of(s: onair_str) -> Vec<u8> {
    // SAFETY: a live view's (pointer, length).
    unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) }.to_vec()
}

/// What the Python package (and a C loop sharing its bot with an app
/// thread) relies on: a bot's action outlives every call on the bot but
/// the next poll; a decoder's item every call but the next that takes
/// items. (Under Miri, `scripts/miri`, a view into freed memory is an error.)
#[test]
fn an_action_outlives_every_call_but_poll_and_an_item_every_call_but_a_take() {
    // SAFETY: pointers from this test; the views are read while valid by
    // the contract under test.
    unsafe {
        let (bot, stream) = streaming_bot();
        assert_eq!(
            onair_bot_on_stream_bytes(bot, stream, b(STREAM), STREAM.len(), 2000),
            ONAIR_OK
        );
        // The command `!hi there`: its views and its chat.
        let mut a = poll_for(bot, onair_action_kind::ONAIR_ACTION_COMMAND);
        assert_eq!(a.args_len, 1);
        let seen = |a: &onair_action| {
            (
                text_of(a.name),
                text_of(*a.args),
                text_of(a.user_id),
                text_of(a.event.message),
                text_of(a.event.nickname),
            )
        };
        let before = seen(&a);
        assert_eq!(before.0, b"hi");
        assert_eq!(before.1, b"there");
        let (mut json, mut json_len) = (null(), 0);
        assert_eq!(
            onair_bot_action_json(bot, &mut json, &mut json_len),
            ONAIR_OK
        );
        let json_text = text_of(onair_str {
            ptr: json,
            len: json_len,
        });
        let (mut s, mut n, mut u, mut found) = (null(), 0, 0u64, false);
        let hdr = onair_header {
            name: p("a"),
            name_len: 1,
            value: p("b"),
            value_len: 1,
        };
        let codes = [
            onair_bot_send_chat(bot, p("hi"), 2, &mut u),
            onair_bot_fetch_broadcast(bot, &mut u),
            onair_bot_list_listeners(bot, &mut u),
            onair_bot_fetch_fans(bot, &mut u),
            onair_bot_status_json(bot, 2000, &mut s, &mut n),
            onair_bot_tokens_json(bot, &mut s, &mut n),
            onair_bot_schedule(bot, 3000, p("t"), 1),
            onair_bot_every(bot, 10, p("u"), 1, 3000),
            onair_bot_set_timer(bot, p("v"), 1, 3000, 0, true),
            onair_bot_cancel_timer(bot, p("t"), 1, &mut found),
            onair_bot_on_stream_bytes(bot, stream, b(STREAM), STREAM.len(), 2000),
            onair_bot_request_reconnect(bot, 2000),
            onair_bot_shutdown(bot, true),
        ];
        assert!(codes.iter().all(|&c| c == ONAIR_OK), "{codes:?}");
        let refused = [
            onair_bot_on_response(bot, 999, 200, &hdr, 1, b("x"), 1, 2000),
            onair_bot_on_transport_error(bot, 999, 2000),
            onair_bot_on_stream_closed(bot, 999, 2000),
            onair_bot_send_chat(bot, p(" "), 1, &mut u),
        ];
        assert!(refused.iter().all(|&c| c != ONAIR_OK));
        assert_eq!(onair_bot_last_error(bot, &mut s, &mut n), ONAIR_OK);
        let (mut again, mut again_len) = (null(), 0);
        assert_eq!(
            onair_bot_action_json(bot, &mut again, &mut again_len),
            ONAIR_OK
        );
        assert_eq!((again, again_len), (json, json_len));
        assert_eq!(
            text_of(onair_str {
                ptr: json,
                len: json_len
            }),
            json_text
        );
        assert_eq!(seen(&a), before);
        let mut owned = null_mut();
        assert_eq!(onair_event_json(&a.event, &mut owned, null_mut()), ONAIR_OK);
        let line = std::ffi::CStr::from_ptr(owned).to_bytes().to_vec();
        onair_string_free(owned);
        assert!(String::from_utf8_lossy(&line).contains("!hi there"));
        // The next poll moves on.
        assert_eq!(onair_bot_poll(bot, 2000, &mut a), ONAIR_OK);
        onair_bot_free(bot);

        let mut d = null_mut();
        assert_eq!(onair_decoder_new(0, &mut d), ONAIR_OK);
        assert_eq!(onair_decoder_feed(d, b(STREAM), STREAM.len()), ONAIR_OK);
        let mut item = std::mem::zeroed::<onair_item>();
        assert_eq!(onair_decoder_next(d, &mut item), ONAIR_OK);
        assert_eq!(item.kind, onair_item_kind::ONAIR_ITEM_EVENT);
        let user = text_of(item.event.user_id);
        assert_eq!(
            onair_decoder_item_json(d, &mut json, &mut json_len),
            ONAIR_OK
        );
        let json_text = text_of(onair_str {
            ptr: json,
            len: json_len,
        });
        assert_eq!(onair_decoder_feed(d, b(STREAM), STREAM.len()), ONAIR_OK);
        assert_eq!(onair_decoder_feed(d, b("event:chat\ndata:{"), 17), ONAIR_OK);
        assert_eq!(onair_decoder_finish(d), ONAIR_OK);
        assert_eq!(onair_decoder_pending(d), 8);
        assert_eq!(
            onair_decoder_item_json(d, &mut again, &mut again_len),
            ONAIR_OK
        );
        assert_eq!((again, again_len), (json, json_len));
        assert_eq!(
            text_of(onair_str {
                ptr: json,
                len: json_len
            }),
            json_text
        );
        assert_eq!(text_of(item.event.user_id), user);
        let mut owned = null_mut();
        assert_eq!(
            onair_event_json(&item.event, &mut owned, null_mut()),
            ONAIR_OK
        );
        assert_eq!(std::ffi::CStr::from_ptr(owned).to_bytes(), json_text);
        onair_string_free(owned);
        // A take moves on (the old view is not to be read any more).
        let (mut batch, mut batch_len) = (null(), 0);
        assert_eq!(
            onair_decoder_take_json(d, &mut batch, &mut batch_len),
            ONAIR_OK
        );
        onair_decoder_free(d);
    }
}

/// Polls a bot at 2000 until an action of `kind` (at most 50 polls).
unsafe fn poll_for(bot: *mut onair_bot, kind: onair_action_kind) -> onair_action {
    // SAFETY: a live bot; the action is returned while valid.
    unsafe {
        let mut a = std::mem::zeroed::<onair_action>();
        for _ in 0..50 {
            assert_eq!(onair_bot_poll(bot, 2000, &mut a), ONAIR_OK);
            if a.kind == kind {
                return a;
            }
        }
        panic!("no {kind:?} action");
    }
}
