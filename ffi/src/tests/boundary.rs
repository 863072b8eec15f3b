//! Every exported function runs inside the panic boundary: a source scan
//! finds each `extern "C" fn` and checks that its body starts with
//! `boundary(` or `boundary_or(`, or their forms on a handle
//! (`boundary_on(`, `boundary_peek(`, `boundary_on_or(`); then each one is called with a panic
//! injected at the boundary's entry, and must return (ONAIR_PANIC where it
//! returns a result) having consumed the injection.

use std::ptr::null_mut;

use crate::onair_result::ONAIR_PANIC;
use crate::*;

/// (name, body starts with the boundary) of every exported function.
fn exported() -> Vec<(String, bool)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    // Every source file of the crate (the tests/ directory holds none).
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("src/ reads")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "the scan sees {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source reads");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("extern \"C\" fn ") {
            rest = &rest[at + "extern \"C\" fn ".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let open = rest.find('{').expect("a body");
            let body = &rest[open + 1..];
            let first = body
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("//"))
                .unwrap_or("");
            found.push((
                name,
                [
                    "boundary(",
                    "boundary_or(",
                    "boundary_on(",
                    "boundary_peek(",
                    "boundary_on_or(",
                ]
                .iter()
                .any(|b| first.starts_with(b)),
            ));
        }
    }
    found
}

#[test]
fn every_export_starts_with_the_boundary() {
    let found = exported();
    assert!(found.len() > 60, "the scan found {} functions", found.len());
    let outside: Vec<&String> = found.iter().filter(|(_, ok)| !ok).map(|(n, _)| n).collect();
    assert!(
        outside.is_empty(),
        "outside the panic boundary: {outside:?}"
    );
}

#[test]
#[allow(clippy::let_unit_value)]
fn an_injected_panic_is_caught_in_every_export() {
    #[allow(clippy::type_complexity)]
    let calls: Vec<(&str, &dyn Fn() -> bool)> = vec![
        ("onair_result_message", &|| { let _ = onair_result_message(0); true }),
        ("onair_abi_version", &|| { let _ = onair_abi_version(); true }),
        ("onair_version", &|| { let _ = onair_version(); true }),
        ("onair_string_free", &|| { let _ = unsafe { onair_string_free(null_mut()) }; true }),
        ("onair_bot_config_new", &|| unsafe { onair_bot_config_new(null_mut(), 0, null_mut(), 0, null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_bot_config_free", &|| unsafe { onair_bot_config_free(null_mut()) } == ONAIR_PANIC),
        ("onair_bot_config_set_events", &|| unsafe { onair_bot_config_set_events(null_mut(), false) } == ONAIR_PANIC),
        ("onair_bot_config_set_check_credentials", &|| unsafe { onair_bot_config_set_check_credentials(null_mut(), false) } == ONAIR_PANIC),
        ("onair_bot_config_set_request_timeout_ms", &|| unsafe { onair_bot_config_set_request_timeout_ms(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_set_shutdown_grace_ms", &|| unsafe { onair_bot_config_set_shutdown_grace_ms(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_set_max_attempts", &|| unsafe { onair_bot_config_set_max_attempts(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_set_max_queued_calls", &|| unsafe { onair_bot_config_set_max_queued_calls(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_set_watchdog_ms", &|| unsafe { onair_bot_config_set_watchdog_ms(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_set_connect_timeout_ms", &|| unsafe { onair_bot_config_set_connect_timeout_ms(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_set_refresh_margin_ms", &|| unsafe { onair_bot_config_set_refresh_margin_ms(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_set_kit_json", &|| unsafe { onair_bot_config_set_kit_json(null_mut(), null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_config_last_error", &|| unsafe { onair_bot_config_last_error(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_new", &|| unsafe { onair_bot_new(null_mut(), null_mut(), 0, null_mut(), 0, 0, null_mut()) } == ONAIR_PANIC),
        ("onair_bot_free", &|| unsafe { onair_bot_free(null_mut()) } == ONAIR_PANIC),
        ("onair_bot_last_error", &|| unsafe { onair_bot_last_error(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_poll", &|| unsafe { onair_bot_poll(null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_bot_action_json", &|| unsafe { onair_bot_action_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_on_response", &|| unsafe { onair_bot_on_response(null_mut(), 0, 0, null_mut(), 0, null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_bot_on_transport_error", &|| unsafe { onair_bot_on_transport_error(null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_bot_on_not_sent", &|| unsafe { onair_bot_on_not_sent(null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_bot_on_stream_open", &|| unsafe { onair_bot_on_stream_open(null_mut(), 0, 0, null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_bot_on_stream_bytes", &|| unsafe { onair_bot_on_stream_bytes(null_mut(), 0, null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_bot_on_stream_closed", &|| unsafe { onair_bot_on_stream_closed(null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_bot_authorize", &|| unsafe { onair_bot_authorize(null_mut(), null_mut(), 0, null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_send_chat", &|| unsafe { onair_bot_send_chat(null_mut(), null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_bot_fetch_broadcast", &|| unsafe { onair_bot_fetch_broadcast(null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_list_listeners", &|| unsafe { onair_bot_list_listeners(null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_fetch_fans", &|| unsafe { onair_bot_fetch_fans(null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_request_reconnect", &|| unsafe { onair_bot_request_reconnect(null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_shutdown", &|| unsafe { onair_bot_shutdown(null_mut(), false) } == ONAIR_PANIC),
        ("onair_bot_tokens_json", &|| unsafe { onair_bot_tokens_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_pending_calls", &|| { let _ = unsafe { onair_bot_pending_calls(null_mut()) }; true }),
        ("onair_bot_say", &|| unsafe { onair_bot_say(null_mut(), null_mut(), 0, null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_bot_reply", &|| unsafe { onair_bot_reply(null_mut(), 0, null_mut(), 0, null_mut(), 0, null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_reply_counters", &|| unsafe { onair_bot_reply_counters(null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_bot_tally_json", &|| unsafe { onair_bot_tally_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_donor", &|| unsafe { onair_bot_donor(null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_decoder_new", &|| unsafe { onair_decoder_new(0, null_mut()) } == ONAIR_PANIC),
        ("onair_decoder_free", &|| unsafe { onair_decoder_free(null_mut()) } == ONAIR_PANIC),
        ("onair_decoder_feed", &|| unsafe { onair_decoder_feed(null_mut(), null_mut(), 0) } == ONAIR_PANIC),
        ("onair_decoder_finish", &|| unsafe { onair_decoder_finish(null_mut()) } == ONAIR_PANIC),
        ("onair_decoder_next", &|| unsafe { onair_decoder_next(null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_decoder_item_json", &|| unsafe { onair_decoder_item_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_decoder_take_json", &|| unsafe { onair_decoder_take_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_decoder_pending", &|| { let _ = unsafe { onair_decoder_pending(null_mut()) }; true }),
        ("onair_text_split", &|| unsafe { onair_text_split(null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_string_list_len", &|| { let _ = unsafe { onair_string_list_len(null_mut()) }; true }),
        ("onair_string_list_get", &|| unsafe { onair_string_list_get(null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_string_list_free", &|| unsafe { onair_string_list_free(null_mut()) } == ONAIR_PANIC),
        ("onair_text_truncate", &|| unsafe { onair_text_truncate(null_mut(), 0, 0, null_mut(), 0, null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_text_utf16_len", &|| unsafe { onair_text_utf16_len(null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_classify", &|| unsafe { onair_classify(null_mut(), 0, 0, null_mut(), 0, null_mut(), 0, 0, null_mut()) } == ONAIR_PANIC),
        ("onair_classify_json", &|| unsafe { onair_classify_json(null_mut(), 0, 0, null_mut(), 0, null_mut(), 0, 0, null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_quota_parse", &|| unsafe { onair_quota_parse(null_mut(), 0, 0, null_mut()) } == ONAIR_PANIC),
        ("onair_retry_after_ms", &|| unsafe { onair_retry_after_ms(null_mut(), 0, 0, null_mut()) } == ONAIR_PANIC),
        ("onair_backoff_new", &|| unsafe { onair_backoff_new(0, 0, 0, null_mut()) } == ONAIR_PANIC),
        ("onair_backoff_free", &|| unsafe { onair_backoff_free(null_mut()) } == ONAIR_PANIC),
        ("onair_backoff_next_delay_ms", &|| unsafe { onair_backoff_next_delay_ms(null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_backoff_reset", &|| { let _ = unsafe { onair_backoff_reset(null_mut()) }; true }),
        ("onair_backoff_attempt", &|| { let _ = unsafe { onair_backoff_attempt(null_mut()) }; true }),
        ("onair_event_json", &|| unsafe { onair_event_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_status_json", &|| unsafe { onair_bot_status_json(null_mut(), 0, null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_daily_quota_json", &|| unsafe { onair_bot_daily_quota_json(null_mut(), 0, null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_share_daily_quota_json", &|| unsafe { onair_bot_share_daily_quota_json(null_mut(), null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_daily_quota_merge", &|| unsafe { onair_daily_quota_merge(null_mut(), 0, null_mut(), 0, 0, null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_consent_stop_json", &|| unsafe { onair_bot_consent_stop_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_bot_schedule", &|| unsafe { onair_bot_schedule(null_mut(), 0, null_mut(), 0) } == ONAIR_PANIC),
        ("onair_bot_every", &|| unsafe { onair_bot_every(null_mut(), 0, null_mut(), 0, 0) } == ONAIR_PANIC),
        ("onair_bot_set_timer", &|| unsafe { onair_bot_set_timer(null_mut(), null_mut(), 0, 0, 0, false) } == ONAIR_PANIC),
        ("onair_bot_cancel_timer", &|| unsafe { onair_bot_cancel_timer(null_mut(), null_mut(), 0, null_mut()) } == ONAIR_PANIC),
        ("onair_sse_parser_new", &|| unsafe { onair_sse_parser_new(0, null_mut()) } == ONAIR_PANIC),
        ("onair_sse_parser_free", &|| unsafe { onair_sse_parser_free(null_mut()) } == ONAIR_PANIC),
        ("onair_sse_parser_feed", &|| unsafe { onair_sse_parser_feed(null_mut(), null_mut(), 0) } == ONAIR_PANIC),
        ("onair_sse_parser_finish", &|| unsafe { onair_sse_parser_finish(null_mut()) } == ONAIR_PANIC),
        ("onair_sse_parser_next", &|| unsafe { onair_sse_parser_next(null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_sse_parser_item_json", &|| unsafe { onair_sse_parser_item_json(null_mut(), null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_sse_parser_last_event_id", &|| unsafe { onair_sse_parser_last_event_id(null_mut(), null_mut()) } == ONAIR_PANIC),
        ("onair_sse_parser_pending", &|| { let _ = unsafe { onair_sse_parser_pending(null_mut()) }; true }),
    ];
    let mut names: Vec<&str> = calls.iter().map(|(n, _)| *n).collect();
    let mut exported: Vec<String> = exported().into_iter().map(|(n, _)| n).collect();
    names.sort_unstable();
    exported.sort_unstable();
    assert_eq!(
        names, exported,
        "this list must name every exported function"
    );
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for (name, call) in &calls {
        INJECT_PANIC.with(|p| p.set(true));
        let answered = call();
        let consumed = !INJECT_PANIC.with(|p| p.replace(false));
        assert!(
            answered && consumed,
            "{name} did not answer an injected panic"
        );
    }
    std::panic::set_hook(hook);
}
