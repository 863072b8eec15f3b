//! The Bot driven by canned responses only: a scripted session,
//! one test per rule, and properties over arbitrary response sequences.

use super::*;
use crate::event::EndReason;
use crate::proto::endpoint::Method;
use crate::proto::oauth::AuthProblem;
use crate::proto::problem::ProblemKind;
use crate::proto::scope::Permission;
use crate::proto::secret::ClientCredentials;
use crate::proto::stream::ConnectLoop;
use crate::proto::timers::Tag;
use proptest::prelude::*;

const T0: u64 = 1_732_250_000_000;
const MIN: u64 = 60_000;
const NO_HEADERS: &[(&str, &str)] = &[];

/// The spec's defaults, but no credentials check at start: the tests of
/// other rules follow a precise first-action sequence (the check's own
/// tests turn it on).
fn config() -> BotConfig {
    let mut config = checked_config();
    config.check_credentials = false;
    config
}

fn checked_config() -> BotConfig {
    let base = BaseUrl::new("http://127.0.0.1:9").unwrap();
    let credentials =
        ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s3cret-client").unwrap();
    BotConfig::new(base, credentials)
}

fn pair(access: &str, refresh: &str, scope: &str) -> Vec<u8> {
    format!(
        r#"{{"access_token":"{access}","token_type":"Bearer","expires_in":3600,"refresh_token":"{refresh}","scope":"{scope}"}}"#
    )
    .into_bytes()
}

const ALL_SCOPES: &str = "live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send";

/// Polls until `Wait` (or `Stopped`); returns everything, the last included.
fn drain(bot: &mut Bot, now: u64) -> Vec<Action> {
    let mut out = Vec::new();
    for _ in 0..1000 {
        let action = bot.poll(now);
        if let Action::Wait { until_ms: Some(at) } = &action {
            assert!(*at > now, "asked to wait until {at} at {now}");
        }
        let last = matches!(
            action,
            Action::Wait { .. } | Action::Stopped(_) | Action::NeedsAuthorization
        );
        out.push(action);
        if last {
            return out;
        }
    }
    panic!("poll never settled: {out:?}");
}

fn sends(actions: &[Action]) -> Vec<(RequestId, &HttpRequest)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { id, request, .. } => Some((*id, request)),
            _ => None,
        })
        .collect()
}

fn only_send(actions: &[Action]) -> (RequestId, HttpRequest) {
    let sent = sends(actions);
    assert_eq!(sent.len(), 1, "{actions:?}");
    (sent[0].0, sent[0].1.clone())
}

fn stream_open(actions: &[Action]) -> Option<(RequestId, HttpRequest)> {
    actions.iter().find_map(|a| match a {
        Action::OpenStream { id, request } => Some((*id, request.clone())),
        _ => None,
    })
}

fn body_text(request: &HttpRequest) -> String {
    String::from_utf8_lossy(&request.body).into_owned()
}

fn wait_until(actions: &[Action]) -> Option<u64> {
    match actions.last() {
        Some(Action::Wait { until_ms }) => *until_ms,
        other => panic!("expected Wait, got {other:?}"),
    }
}

fn chat_frame(id: &str, message: &str) -> String {
    format!(
        "id:{id}\nevent:chat\ndata:{{\"user\":{{\"id\":\"u1\",\"nickname\":\"Mina\"}},\"isDj\":false,\"message\":\"{message}\",\"sentTime\":\"2024-11-22T04:33:20Z\"}}\n\n"
    )
}

fn end_frame(reason: &str) -> String {
    format!("event:end\ndata:{{\"reason\":\"{reason}\"}}\n\n")
}

fn problem_body(status: u16, code: &str) -> Vec<u8> {
    format!(r#"{{"instance":"/v1/live","status":{status},"title":"x","detailCode":"{code}","message":"m","userId":null,"extra":null,"timestamp":1}}"#).into_bytes()
}

/// A bot that has exchanged a code and holds `scope`; returns it with the
/// actions that followed the exchange.
fn authorized(scope: &str, events: bool) -> (Bot, Vec<Action>) {
    let mut config = config();
    config.events = events;
    let mut bot = Bot::new(config, None, 42);
    assert_eq!(drain(&mut bot, T0), [Action::NeedsAuthorization]);
    bot.authorize("consent-code", "https://bot.test/cb");
    let (id, request) = only_send(&drain(&mut bot, T0));
    assert!(request.url.ends_with("/v1/oauth/token"));
    assert!(body_text(&request).contains("grant_type=authorization_code"));
    bot.on_response(id, 200, NO_HEADERS, &pair("at1", "rt1", scope), T0)
        .unwrap();
    let after = drain(&mut bot, T0);
    assert!(matches!(after[0], Action::PersistTokens(_)), "{after:?}");
    (bot, after)
}

/// An authorized bot with its stream open at `T0`.
fn streaming() -> (Bot, RequestId) {
    let (mut bot, after) = authorized(ALL_SCOPES, true);
    let (id, request) = stream_open(&after).unwrap_or_else(|| panic!("stream opens: {after:?}"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    bot.on_stream_open(id, 200, [("content-type", "text/event-stream")], T0)
        .unwrap();
    (bot, id)
}

fn chat_error(e: crate::proto::chat::ChatError) -> crate::proto::chat::ChatError {
    e
}

fn events_of(actions: &[Action]) -> Vec<&Event> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Event { event, .. } => Some(event),
            _ => None,
        })
        .collect()
}

// ---- the scripted session ------------------------------------------------------

#[test]
fn a_full_session_with_canned_responses() {
    let mut refreshes = 0;
    // Code exchange → persist → open stream.
    let (mut bot, stream) = streaming();
    let mut now = T0 + 1_000;

    // Events.
    let bytes = format!(":heartbeat\n\n{}", chat_frame("1732250001000-1", "hi"));
    bot.on_stream_bytes(stream, bytes.as_bytes(), now).unwrap();
    let actions = drain(&mut bot, now);
    let events = events_of(&actions);
    assert!(matches!(events[..], [Event::Chat(ref c)] if c.message == "hi"));

    // Chat send with a 429 OAPI_MNGR_0302 retry.
    let call = bot.send_chat("hello 👋").unwrap();
    let (id, request) = only_send(&drain(&mut bot, now));
    assert_eq!(
        (request.method, request.url.ends_with("/v1/live/chat")),
        (Method::Post, true)
    );
    assert_eq!(body_text(&request), r#"{"message":"hello 👋"}"#);
    bot.on_response(
        id,
        429,
        NO_HEADERS,
        &problem_body(429, "OAPI_MNGR_0302"),
        now,
    )
    .unwrap();
    let actions = drain(&mut bot, now);
    assert!(
        sends(&actions).is_empty(),
        "no resend before the chat limit wait"
    );
    let retry_at = wait_until(&actions).unwrap();
    assert!(
        retry_at >= now + 1_000 && retry_at <= now + 6_000,
        "{retry_at}"
    );
    now = retry_at;
    let (id, _) = only_send(&drain(&mut bot, now));
    bot.on_response(id, 204, NO_HEADERS, b"", now).unwrap();
    assert!(drain(&mut bot, now).contains(&Action::Done {
        call,
        result: CallResult::ChatSent
    }));

    // Refresh before expiry, with rotation.
    let refresh_at = bot.tokens.refresh_at_ms().unwrap();
    assert_eq!(refresh_at, T0 + 50 * MIN);
    now = refresh_at - 1;
    bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
    assert!(sends(&drain(&mut bot, now)).is_empty());
    now = refresh_at;
    bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
    let (id, request) = only_send(&drain(&mut bot, now));
    refreshes += 1;
    assert!(body_text(&request).contains("grant_type=refresh_token&refresh_token=rt1"));
    bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", ALL_SCOPES), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    let Some(Action::PersistTokens(tokens)) = actions.first() else {
        panic!("{actions:?}")
    };
    assert_eq!(
        (
            tokens.refresh_token().map(Secret::expose),
            tokens.generation()
        ),
        (Some("rt2"), 2)
    );

    // TOKEN_EXPIRED end: the bot refreshed since this connection opened, so
    // the new pair is the refresh: reconnect with it at once (one refresh
    // per expiry).
    now += 5 * MIN;
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    assert!(
        actions.contains(&Action::CloseStream {
            id: stream,
            reason: CloseReason::Ended
        }),
        "{actions:?}"
    );
    assert!(
        matches!(events_of(&actions)[..], [Event::End(ref e)] if e.reason == EndReason::TokenExpired)
    );
    assert!(sends(&actions).is_empty(), "no second refresh: {actions:?}");
    let (stream, request) = stream_open(&actions).expect("reconnects at once");
    assert_eq!(request.header("authorization"), Some("Bearer at2"));
    bot.on_stream_open(stream, 200, NO_HEADERS, now).unwrap();

    // TOKEN_EXPIRED on a connection opened with the current pair: refresh,
    // then reconnect with the new one.
    now += 5 * MIN;
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    let (id, request) = only_send(&actions);
    refreshes += 1;
    assert!(body_text(&request).contains("refresh_token=rt2"));
    bot.on_response(id, 200, NO_HEADERS, &pair("at3", "rt3", ALL_SCOPES), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    let (stream, request) = stream_open(&actions).expect("reconnects at once");
    assert_eq!(request.header("authorization"), Some("Bearer at3"));
    bot.on_stream_open(stream, 200, NO_HEADERS, now).unwrap();

    // The DJ revokes: 401 → exactly one refresh → refused → stopped(reauthorize).
    now += 10_000;
    bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
    let call = bot.fetch_broadcast();
    let (id, request) = only_send(&drain(&mut bot, now));
    assert!(request.url.ends_with("/v1/live"));
    bot.on_response(id, 401, NO_HEADERS, b"", now).unwrap();
    let actions = drain(&mut bot, now);
    let (id, request) = only_send(&actions);
    refreshes += 1;
    assert!(body_text(&request).contains("refresh_token=rt3"));
    bot.on_response(
        id,
        400,
        NO_HEADERS,
        br#"{"error":"invalid_grant","error_description":"revoked"}"#,
        now,
    )
    .unwrap();
    let actions = drain(&mut bot, now);
    assert!(
        actions.contains(&Action::CloseStream {
            id: stream,
            reason: CloseReason::Stopping
        }),
        "{actions:?}"
    );
    // The call is not lost: it waits for the DJ to authorize again.
    assert!(!actions.iter().any(|a| matches!(a, Action::Done { .. })));
    assert_eq!(
        actions.last(),
        Some(&Action::Stopped(Stop::Reauthorize(
            AuthProblem::RefreshRejected
        )))
    );
    assert_eq!(refreshes, 3);
    // Stopped stays stopped, and sends nothing more.
    assert_eq!(drain(&mut bot, now + 3_600_000).len(), 1);
    // A new consent code brings it back: the call completes.
    bot.authorize("second-consent", "https://bot.test/cb");
    let (id, request) = only_send(&drain(&mut bot, now));
    assert!(body_text(&request).contains("code=second-consent"));
    bot.on_response(id, 200, NO_HEADERS, &pair("at9", "rt9", ALL_SCOPES), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    assert!(
        matches!(actions[0], Action::PersistTokens(_)),
        "{actions:?}"
    );
    assert!(
        stream_open(&actions).is_some(),
        "the stream reopens: {actions:?}"
    );
    let (id, request) = only_send(&actions);
    assert!(request.url.ends_with("/v1/live"));
    assert_eq!(request.header("authorization"), Some("Bearer at9"));
    bot.on_response(
        id,
        404,
        NO_HEADERS,
        &problem_body(404, "OAPI_MNGR_0301"),
        now,
    )
    .unwrap();
    assert!(drain(&mut bot, now).iter().any(
        |a| matches!(a, Action::Done { call: c, result: CallResult::Failed(CallFailure::Problem(p)) } if *c == call && p.kind == ProblemKind::NotOnAir)
    ));
}

#[test]
fn a_second_401_after_a_good_refresh_stops_without_another_refresh() {
    let (mut bot, _) = authorized("live.read", false);
    let now = T0 + MIN;
    let call = bot.fetch_broadcast();
    let (id, _) = only_send(&drain(&mut bot, now));
    bot.on_response(id, 401, NO_HEADERS, b"", now).unwrap();
    let (id, request) = only_send(&drain(&mut bot, now));
    assert!(request.url.ends_with("/v1/oauth/token"));
    bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", "live.read"), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    assert!(matches!(actions[0], Action::PersistTokens(_)));
    let (id, request) = only_send(&actions);
    assert_eq!(request.header("authorization"), Some("Bearer at2"));
    bot.on_response(
        id,
        401,
        NO_HEADERS,
        &problem_body(401, "OAPI_MNGR_0203"),
        now,
    )
    .unwrap();
    let actions = drain(&mut bot, now);
    assert!(sends(&actions).is_empty(), "no second refresh: {actions:?}");
    assert_eq!(
        actions.last(),
        Some(&Action::Stopped(Stop::Reauthorize(
            AuthProblem::AccessRejected
        )))
    );
    // Nothing goes out with the refused pair, even much later.
    assert_eq!(drain(&mut bot, now + 3_600_000).len(), 1);
    // A new consent code: exchanged first, then the call once more, with the
    // new token only.
    bot.authorize("code-2", "https://bot.test/cb");
    let (id, request) = only_send(&drain(&mut bot, now));
    assert!(request.url.ends_with("/v1/oauth/token"));
    bot.on_response(id, 200, NO_HEADERS, &pair("at3", "rt3", "live.read"), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    let (id, request) = only_send(&actions);
    assert_eq!(request.header("authorization"), Some("Bearer at3"));
    let body = br#"{"liveId":1,"title":"t","startedAt":"2024-01-01T00:00:00Z","closeAirTime":"2024-01-01T01:00:00Z","listenerCount":2,"totalListenerCount":5,"welcomeMessage":"","isChatFrozen":false,"categories":[],"tags":[]}"#;
    bot.on_response(id, 200, NO_HEADERS, body, now).unwrap();
    assert!(drain(&mut bot, now).iter().any(
        |a| matches!(a, Action::Done { call: c, result: CallResult::Broadcast(_) } if *c == call)
    ));
}

// ---- one rule per test -----------------------------------------------------------

#[test]
fn chat_is_validated_before_anything_is_sent() {
    let (mut bot, _) = authorized("chat.send", false);
    assert_eq!(
        chat_error(bot.send_chat("   ").unwrap_err()).kind.code(),
        "chat_empty"
    );
    assert_eq!(
        chat_error(bot.send_chat(&"😀".repeat(101)).unwrap_err())
            .kind
            .code(),
        "chat_too_long"
    );
    assert!(bot.send_chat(&"😀".repeat(100)).is_ok());
}

#[test]
fn chat_blocked_is_retried_a_bounded_number_of_times() {
    let (mut bot, _) = authorized("chat.send", false);
    let mut now = T0;
    let call = bot.send_chat("hi").unwrap();
    for attempt in 1..=3 {
        let actions = drain(&mut bot, now);
        let (id, _) = only_send(&actions);
        bot.on_response(
            id,
            403,
            NO_HEADERS,
            &problem_body(403, "OAPI_MNGR_0208"),
            now,
        )
        .unwrap();
        let actions = drain(&mut bot, now);
        if attempt < 3 {
            now = wait_until(&actions).expect("retry later");
        } else {
            let failed = actions.iter().any(|a| {
                matches!(a, Action::Done { call: c, result: CallResult::Failed(CallFailure::Problem(p)) }
                    if *c == call && p.kind == ProblemKind::ChatBlocked)
            });
            assert!(failed, "{actions:?}");
        }
    }
}

#[test]
fn a_chat_is_not_resent_after_a_lost_response() {
    let (mut bot, _) = authorized("chat.send", false);
    let call = bot.send_chat("once").unwrap();
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_transport_error(id, T0).unwrap();
    let actions = drain(&mut bot, T0);
    assert!(sends(&actions).is_empty());
    assert!(actions.contains(&Action::Done {
        call,
        result: CallResult::Failed(CallFailure::Transport)
    }));
}

#[test]
fn a_chat_only_bot_never_opens_the_stream_nor_polls_live() {
    let (mut bot, after) = authorized("chat.send", false);
    assert!(stream_open(&after).is_none());
    for minute in 0..120 {
        let now = T0 + minute * MIN;
        for action in drain(&mut bot, now) {
            match action {
                Action::Send { id, request, .. } => {
                    assert!(request.url.ends_with("/v1/oauth/token"), "{request:?}");
                    let n = minute.to_string();
                    bot.on_response(id, 200, NO_HEADERS, &pair(&n, &n, "chat.send"), now)
                        .unwrap();
                }
                Action::OpenStream { .. } => panic!("opened a stream"),
                _ => {}
            }
        }
    }
}

#[test]
fn a_bot_with_only_events_chat_streams_and_never_polls_live() {
    let (mut bot, after) = authorized("events.chat", true);
    let (stream, _) = stream_open(&after).unwrap();
    bot.on_stream_open(stream, 200, NO_HEADERS, T0).unwrap();
    for second in (0..600).step_by(15) {
        let now = T0 + second * 1000;
        bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
        let actions = drain(&mut bot, now);
        assert!(
            sends(&actions).is_empty() && stream_open(&actions).is_none(),
            "{actions:?}"
        );
    }
}

#[test]
fn listeners_are_paged_and_deduplicated() {
    let (mut bot, _) = authorized("listeners.read", false);
    let call = bot.list_listeners();
    let (id, request) = only_send(&drain(&mut bot, T0));
    assert!(request.url.ends_with("/v1/live/listeners"));
    bot.on_response(
        id,
        200,
        NO_HEADERS,
        br#"{"listeners":[{"id":"a","nickname":"A"},{"id":"b","nickname":"B"}],"nextCursor":"c/2"}"#,
        T0,
    )
    .unwrap();
    let (id, request) = only_send(&drain(&mut bot, T0));
    assert!(
        request.url.ends_with("/v1/live/listeners?cursor=c%2F2"),
        "{}",
        request.url
    );
    bot.on_response(
        id,
        200,
        NO_HEADERS,
        br#"{"listeners":[{"id":"b","nickname":"B"},{"id":"c","nickname":"C"}],"nextCursor":null}"#,
        T0,
    )
    .unwrap();
    let actions = drain(&mut bot, T0);
    let Some(Action::Done {
        call: c,
        result: CallResult::Listeners(people),
    }) = actions.first()
    else {
        panic!("{actions:?}")
    };
    assert_eq!(*c, call);
    let ids: Vec<&str> = people.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

#[test]
fn a_daily_quota_block_fails_calls_fast_for_that_permission_only() {
    let (mut bot, _) = authorized("live.read fans.read", false);
    let call = bot.fetch_fans();
    let (id, _) = only_send(&drain(&mut bot, T0));
    let headers = [
        ("Retry-After", "3600"),
        ("x-ratelimit-daily-scope", "fans.read"),
    ];
    bot.on_response(id, 429, headers, b"", T0).unwrap();
    let blocked = |a: &Action, c: CallId| {
        matches!(a, Action::Done { call, result: CallResult::Failed(CallFailure::QuotaBlocked { until_ms }) }
            if *call == c && *until_ms == T0 + 3_600_000)
    };
    assert!(drain(&mut bot, T0).iter().any(|a| blocked(a, call)));
    let again = bot.fetch_fans();
    let actions = drain(&mut bot, T0 + 1);
    assert!(actions.iter().any(|a| blocked(a, again)), "{actions:?}");
    assert!(sends(&actions).is_empty());
    bot.fetch_broadcast();
    let (_, request) = only_send(&drain(&mut bot, T0 + 2));
    assert!(request.url.ends_with("/v1/live"));
}

#[test]
fn calls_wait_out_per_second_pacing() {
    let (mut bot, _) = authorized("live.read", false);
    bot.fetch_broadcast();
    let (id, _) = only_send(&drain(&mut bot, T0));
    let headers = [
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-replenish-rate", "4"),
    ];
    let body = br#"{"liveId":1,"title":"t","startedAt":"2024-11-22T04:00:00Z","closeAirTime":"2024-11-22T06:00:00Z","listenerCount":1,"totalListenerCount":2,"welcomeMessage":"","isChatFrozen":false,"categories":[],"tags":[]}"#;
    bot.on_response(id, 200, headers, body, T0).unwrap();
    let actions = drain(&mut bot, T0);
    assert!(
        matches!(actions[0], Action::Done { result: CallResult::Broadcast(ref b), .. } if b.live_id == 1)
    );
    bot.fetch_broadcast();
    let actions = drain(&mut bot, T0);
    assert!(sends(&actions).is_empty());
    assert_eq!(wait_until(&actions), Some(T0 + 250));
    assert_eq!(sends(&drain(&mut bot, T0 + 250)).len(), 1);
}

#[test]
fn not_on_air_fails_a_call_but_keeps_the_bot() {
    let (mut bot, _) = authorized("live.read", false);
    let call = bot.fetch_broadcast();
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(
        id,
        404,
        NO_HEADERS,
        &problem_body(404, "OAPI_MNGR_0301"),
        T0,
    )
    .unwrap();
    let actions = drain(&mut bot, T0);
    assert!(
        matches!(&actions[0], Action::Done { call: c, result: CallResult::Failed(CallFailure::Problem(p)) }
        if *c == call && p.kind == ProblemKind::NotOnAir)
    );
    assert!(matches!(actions.last(), Some(Action::Wait { .. })));
}

#[test]
fn stream_failures_stop_with_the_reason_a_person_acts_on() {
    for (status, body, stop) in [
        (
            403,
            problem_body(403, "OAPI_MNGR_0209"),
            Stop::JoinForbidden,
        ),
        (
            403,
            Vec::new(),
            Stop::Reconsent {
                missing: vec![
                    Permission::EventsChat,
                    Permission::EventsPresence,
                    Permission::EventsLike,
                    Permission::EventsDonation,
                ],
            },
        ),
    ] {
        let (mut bot, after) = authorized(ALL_SCOPES, true);
        let (id, _) = stream_open(&after).unwrap();
        // The error body arrives SSE-style, through the stream methods.
        bot.on_stream_open(
            id,
            status,
            [("content-type", "text/event-stream;charset=UTF-8")],
            T0,
        )
        .unwrap();
        let mut sse_body = b"data:".to_vec();
        sse_body.extend_from_slice(&body);
        bot.on_stream_bytes(id, &sse_body, T0).unwrap();
        bot.on_stream_closed(id, T0).unwrap();
        let actions = drain(&mut bot, T0);
        assert_eq!(actions.last(), Some(&Action::Stopped(stop)), "{actions:?}");
    }
}

#[test]
fn not_on_air_stream_retries_every_few_seconds() {
    let (mut bot, after) = authorized("events.chat", true);
    let (id, _) = stream_open(&after).unwrap();
    bot.on_response(
        id,
        404,
        NO_HEADERS,
        b"data:{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\"}",
        T0,
    )
    .unwrap();
    let actions = drain(&mut bot, T0);
    let at = wait_until(&actions).unwrap();
    assert!((T0 + 3_000..=T0 + 6_000).contains(&at), "{at}");
    assert!(stream_open(&drain(&mut bot, at)).is_some());
}

#[test]
fn the_watchdog_closes_a_silent_stream_and_reconnects_with_backoff() {
    let (mut bot, stream) = streaming();
    let actions = drain(&mut bot, T0 + 44_999);
    assert!(!actions.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Silent
    }));
    let actions = drain(&mut bot, T0 + 45_000);
    assert!(
        actions.contains(&Action::CloseStream {
            id: stream,
            reason: CloseReason::Silent
        }),
        "{actions:?}"
    );
    let at = wait_until(&actions).unwrap();
    assert!(at <= T0 + 46_000);
    assert!(stream_open(&drain(&mut bot, at)).is_some());
}

#[test]
fn request_reconnect_reopens_at_once() {
    let (mut bot, stream) = streaming();
    bot.request_reconnect(T0 + 5_000);
    let actions = drain(&mut bot, T0 + 5_000);
    assert!(actions.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Ended
    }));
    assert!(stream_open(&actions).is_some(), "{actions:?}");
}

#[test]
fn decode_problems_become_notices_and_the_stream_goes_on() {
    let (mut bot, stream) = streaming();
    let bytes = format!(
        "event:chat\ndata:{{bad\n\nevent:poll\ndata:x\n\n{}",
        chat_frame("1-1", "ok")
    );
    bot.on_stream_bytes(stream, bytes.as_bytes(), T0).unwrap();
    let actions = drain(&mut bot, T0);
    assert!(matches!(
        actions[0],
        Action::Notice(Notice::FrameSkipped(_))
    ));
    assert!(matches!(
        actions[1],
        Action::Notice(Notice::UnknownEvent { .. })
    ));
    assert!(matches!(actions[2], Action::Event { .. }));
}

#[test]
fn driver_mistakes_are_local_errors() {
    let (mut bot, stream) = streaming();
    assert_eq!(
        bot.on_response(RequestId(999), 200, NO_HEADERS, b"", T0),
        Err(Misuse::UnknownRequest(RequestId(999)))
    );
    assert_eq!(
        bot.on_stream_bytes(RequestId(999), b"x", T0),
        Err(Misuse::UnknownRequest(RequestId(999)))
    );
    bot.request_reconnect(T0);
    let actions = drain(&mut bot, T0);
    assert!(actions.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Ended
    }));
    // Late bytes, errors or a close of a connection the bot closed: harmless.
    assert_eq!(bot.on_stream_bytes(stream, b":heartbeat\n\n", T0), Ok(()));
    assert_eq!(bot.on_transport_error(stream, T0), Ok(()));
    assert_eq!(bot.on_stream_closed(stream, T0), Ok(()));
}

#[test]
fn shutdown_revokes_closes_and_stops() {
    let (mut bot, stream) = streaming();
    let call = bot.fetch_fans();
    bot.shutdown(true);
    let actions = drain(&mut bot, T0);
    let (id, request) = only_send(&actions);
    assert!(request.url.ends_with("/v1/oauth/revoke"));
    assert!(body_text(&request).contains("token=rt1"));
    assert!(actions.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Stopping
    }));
    assert!(actions.contains(&Action::Done {
        call,
        result: CallResult::Failed(CallFailure::Cancelled)
    }));
    // The revocation is awaited, within the grace.
    assert_eq!(wait_until(&actions), Some(T0 + SHUTDOWN_GRACE_MS));
    bot.on_response(id, 200, NO_HEADERS, b"", T0).unwrap();
    assert_eq!(drain(&mut bot, T0), [Action::Stopped(Stop::ShutDown)]);
}

#[test]
fn authorize_after_a_stop_brings_the_bot_back() {
    let (mut bot, after) = authorized(ALL_SCOPES, true);
    let (id, _) = stream_open(&after).unwrap();
    bot.on_response(id, 401, NO_HEADERS, b"", T0).unwrap();
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(id, 400, NO_HEADERS, br#"{"error":"invalid_grant"}"#, T0)
        .unwrap();
    assert!(matches!(
        drain(&mut bot, T0).last(),
        Some(Action::Stopped(Stop::Reauthorize(_)))
    ));
    bot.authorize("new-code", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, T0 + 1));
    bot.on_response(id, 200, NO_HEADERS, &pair("at9", "rt9", ALL_SCOPES), T0 + 1)
        .unwrap();
    let actions = drain(&mut bot, T0 + 1);
    let (_, request) = stream_open(&actions).expect("streams again");
    assert_eq!(request.header("authorization"), Some("Bearer at9"));
}

#[test]
fn secrets_never_show_in_debug() {
    let (mut bot, stream) = streaming();
    bot.send_chat("x").unwrap();
    let _ = drain(&mut bot, T0);
    bot.authorize("the-consent-code", "https://bot.test/cb");
    let text = format!("{bot:?} {:?}", drain(&mut bot, T0));
    for secret in ["at1", "rt1", "s3cret-client", "the-consent-code"] {
        assert!(!text.contains(secret), "{secret} leaked");
    }
    let _ = stream;
}

// ---- properties ------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Step {
    Advance(u64),
    Respond { status: u16, body: u8, headers: u8 },
    TransportError,
    Bytes(u8),
    Closed,
    Chat,
    Fetch(u8),
    Reconnect,
    Authorize,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u64..120_000).prop_map(Step::Advance),
        (
            prop::sample::select(vec![200u16, 204, 400, 401, 403, 404, 429, 500, 502, 503]),
            0u8..8,
            0u8..4
        )
            .prop_map(|(status, body, headers)| Step::Respond {
                status,
                body,
                headers
            }),
        Just(Step::TransportError),
        (0u8..6).prop_map(Step::Bytes),
        Just(Step::Closed),
        Just(Step::Chat),
        (0u8..3).prop_map(Step::Fetch),
        Just(Step::Reconnect),
        Just(Step::Authorize),
    ]
}

fn canned_body(kind: u8) -> Vec<u8> {
    match kind {
        0 => Vec::new(),
        1 => pair("atX", "rtX", ALL_SCOPES),
        2 => br#"{"error":"invalid_grant"}"#.to_vec(),
        3 => problem_body(403, "OAPI_MNGR_0208"),
        4 => problem_body(429, "OAPI_MNGR_0302"),
        5 => br#"{"listeners":[{"id":"a","nickname":"A"}],"nextCursor":"n"}"#.to_vec(),
        6 => b"<html>bad gateway</html>".to_vec(),
        _ => b"data:{\"status\":403,\"detailCode\":\"OAPI_MNGR_0209\"}".to_vec(),
    }
}

fn canned_bytes(kind: u8) -> Vec<u8> {
    match kind {
        0 => b":heartbeat\n\n".to_vec(),
        1 => chat_frame("1-1", "hey").into_bytes(),
        2 => end_frame("RECONNECT").into_bytes(),
        3 => end_frame("TOKEN_EXPIRED").into_bytes(),
        4 => end_frame("LIVE_ENDED").into_bytes(),
        _ => b"event:chat\ndata:{nope\n\n\xff\xfe".to_vec(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No sequence of responses, stream bytes and commands panics the bot,
    /// makes it wait until a time that is not later than now, or puts two
    /// token requests in flight.
    #[test]
    fn the_bot_never_panics_never_busy_loops_never_refreshes_twice(
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        let (mut bot, _) = authorized(ALL_SCOPES, true);
        let mut now = T0;
        let mut pending: Vec<(RequestId, bool)> = Vec::new();
        let mut stream: Option<RequestId> = None;
        for step in steps {
            match step {
                Step::Advance(ms) => now += ms,
                Step::Respond { status, body, headers } => {
                    if let Some((id, _)) = pending.pop() {
                        let header_sets: [&[(&str, &str)]; 4] = [
                            &[],
                            &[("Retry-After", "30")],
                            &[("x-ratelimit-remaining", "0")],
                            &[("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"), ("x-ratelimit-daily-scope", "chat.send")],
                        ];
                        let _ = bot.on_response(id, status, header_sets[usize::from(headers)], &canned_body(body), now);
                    }
                }
                Step::TransportError => {
                    if let Some((id, _)) = pending.pop() {
                        let _ = bot.on_transport_error(id, now);
                    }
                }
                Step::Bytes(kind) => {
                    if let Some(id) = stream {
                        let _ = bot.on_stream_open(id, 200, NO_HEADERS, now);
                        let _ = bot.on_stream_bytes(id, &canned_bytes(kind), now);
                    }
                }
                Step::Closed => {
                    if let Some(id) = stream.take() {
                        let _ = bot.on_stream_closed(id, now);
                    }
                }
                Step::Chat => { let _ = bot.send_chat("hi"); }
                Step::Fetch(0) => { let _ = bot.fetch_broadcast(); }
                Step::Fetch(1) => { let _ = bot.list_listeners(); }
                Step::Fetch(_) => { let _ = bot.fetch_fans(); }
                Step::Reconnect => bot.request_reconnect(now),
                Step::Authorize => bot.authorize("code", "https://bot.test/cb"),
            }
            for action in drain(&mut bot, now) {
                match action {
                    Action::Send { id, request, .. } => {
                        let token = request.url.contains("/v1/oauth/token");
                        if token {
                            prop_assert!(!pending.iter().any(|(_, t)| *t), "two token requests in flight");
                        }
                        pending.push((id, token));
                    }
                    Action::OpenStream { id, .. } => stream = Some(id),
                    Action::CloseStream { id, .. } if stream == Some(id) => stream = None,
                    Action::CloseStream { id, reason: CloseReason::TimedOut } => {
                        pending.retain(|(p, _)| *p != id);
                    }
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn a_refresh_that_fails_for_now_is_retried_with_backoff_not_hammered() {
    let (mut bot, _) = authorized("chat.send", false);
    let mut now = T0 + 50 * MIN;
    let mut sent = 0;
    for _ in 0..3 {
        let (id, request) = only_send(&drain(&mut bot, now));
        assert!(request.url.ends_with("/v1/oauth/token"));
        sent += 1;
        bot.on_response(id, 503, NO_HEADERS, b"<html>unavailable</html>", now)
            .unwrap();
        let actions = drain(&mut bot, now);
        assert!(
            sends(&actions).is_empty(),
            "no immediate retry: {actions:?}"
        );
        let at = wait_until(&actions).unwrap();
        assert!(at > now && at <= now + 30_000, "{at}");
        now = at;
    }
    let (id, _) = only_send(&drain(&mut bot, now));
    bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", "chat.send"), now)
        .unwrap();
    assert!(matches!(drain(&mut bot, now)[0], Action::PersistTokens(_)));
    assert_eq!(sent, 3);
}

#[test]
fn live_ended_waits_then_connects_for_the_next_broadcast() {
    let (mut bot, stream) = streaming();
    bot.on_stream_bytes(stream, end_frame("LIVE_ENDED").as_bytes(), T0 + 1_000)
        .unwrap();
    let actions = drain(&mut bot, T0 + 1_000);
    assert!(actions.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Ended
    }));
    assert!(stream_open(&actions).is_none(), "not at once: {actions:?}");
    let at = wait_until(&actions).unwrap();
    assert!((T0 + 4_000..=T0 + 7_000).contains(&at), "{at}");
    assert!(stream_open(&drain(&mut bot, at)).is_some());
}

#[test]
fn shutdown_during_a_refresh_persists_the_new_pair_then_revokes_it() {
    let (mut bot, _) = authorized("chat.send", false);
    let now = T0 + 50 * MIN;
    let (id, _) = only_send(&drain(&mut bot, now));
    bot.shutdown(true);
    let actions = drain(&mut bot, now);
    assert!(
        sends(&actions).is_empty(),
        "revoke waits for the refresh: {actions:?}"
    );
    bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", "chat.send"), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    assert!(
        matches!(actions[0], Action::PersistTokens(_)),
        "{actions:?}"
    );
    let (_, request) = only_send(&actions);
    assert!(request.url.ends_with("/v1/oauth/revoke"));
    assert!(body_text(&request).contains("token=rt2"));
    assert!(wait_until(&actions).is_some(), "{actions:?}");
    assert!(!actions.iter().any(|a| matches!(a, Action::Stopped(_))));
}

// ---- the contract, one test per rule (module docs, "The contract") ----------------

#[test]
fn contract_not_yet_authorized_is_its_own_action_and_calls_wait_for_it() {
    let mut bot = Bot::new(config(), None, 1);
    let call = bot.fetch_broadcast();
    // The call is held, and the app is told so.
    assert_eq!(
        drain(&mut bot, T0),
        [
            Action::Notice(Notice::CallHeld { call }),
            Action::NeedsAuthorization
        ]
    );
    // Sticky until a code comes, whatever the time.
    assert_eq!(
        drain(&mut bot, T0 + 86_400_000),
        [Action::NeedsAuthorization]
    );
    bot.authorize("code", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(id, 200, NO_HEADERS, &pair("at", "rt", ALL_SCOPES), T0)
        .unwrap();
    let actions = drain(&mut bot, T0);
    let (_, request) = only_send(&actions);
    assert!(
        request.url.ends_with("/v1/live"),
        "the queued call goes: {actions:?}"
    );
    assert!(bot.pending_calls() == 1 && call == CallId(1));
}

#[test]
fn contract_wait_is_never_at_or_before_now_and_none_only_when_nothing_is_scheduled() {
    let (mut bot, stream) = streaming();
    // A stream open and tokens in force: the watchdog and the refresh are
    // scheduled, so the wait has a time.
    let actions = drain(&mut bot, T0);
    assert_eq!(wait_until(&actions), Some(T0 + 45_000));
    // Polling early changes nothing; polling at the deadline acts.
    assert_eq!(wait_until(&drain(&mut bot, T0 + 44_999)), Some(T0 + 45_000));
    let at_deadline = drain(&mut bot, T0 + 45_000);
    assert!(at_deadline.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Silent
    }));
}

#[test]
fn contract_a_due_deadline_makes_poll_act_now_even_when_polled_late() {
    let (mut bot, _) = authorized("chat.send", false);
    let call = bot.send_chat("hi").unwrap();
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(
        id,
        502,
        NO_HEADERS,
        &problem_body(502, "OAPI_MNGR_2303"),
        T0,
    )
    .unwrap();
    let retry_at = wait_until(&drain(&mut bot, T0)).unwrap();
    assert!(retry_at > T0 && retry_at <= T0 + 30_000);
    // Polled ten minutes late: the retry goes at once, nothing is lost.
    let late = T0 + 10 * MIN;
    let (id, request) = only_send(&drain(&mut bot, late));
    assert!(request.url.ends_with("/v1/live/chat"));
    bot.on_response(id, 204, NO_HEADERS, b"", late).unwrap();
    assert!(drain(&mut bot, late).contains(&Action::Done {
        call,
        result: CallResult::ChatSent
    }));
}

#[test]
fn contract_a_send_carries_its_timeout_and_the_bot_keeps_the_deadline() {
    let (mut bot, _) = authorized("live.read chat.send", false);
    let fetch = bot.fetch_broadcast();
    let actions = drain(&mut bot, T0);
    let Some(Action::Send { id, timeout_ms, .. }) = actions.first().cloned() else {
        panic!("{actions:?}")
    };
    assert_eq!(timeout_ms, 30_000);
    assert_eq!(wait_until(&actions), Some(T0 + 30_000), "folded into Wait");
    // No report in time: the bot fails the request itself and, a GET being
    // safe to repeat, sends it again after a backoff delay.
    let actions = drain(&mut bot, T0 + 30_000);
    assert!(actions.contains(&Action::CloseStream {
        id,
        reason: CloseReason::TimedOut
    }));
    let retry_at = wait_until(&actions).unwrap();
    assert!(retry_at <= T0 + 30_000 + 1_000, "first backoff step");
    let (again, _) = only_send(&drain(&mut bot, retry_at));
    assert_ne!(again, id);
    // The late answer to the first is harmless and changes nothing.
    assert_eq!(
        bot.on_response(id, 200, NO_HEADERS, b"{}", T0 + 31_000),
        Ok(())
    );
    assert!(drain(&mut bot, T0 + 31_000)
        .iter()
        .all(|a| !matches!(a, Action::Done { call, .. } if *call == fetch)));
    // A chat that timed out is never resent: it may have been posted.
    bot.on_transport_error(again, T0 + 31_000).unwrap();
    let chat = bot.send_chat("once").unwrap();
    let mut now = T0 + 31_000;
    let mut chat_sends = 0;
    for _ in 0..10 {
        let actions = drain(&mut bot, now);
        for (id, request) in sends(&actions) {
            if request.url.ends_with("/v1/live/chat") {
                chat_sends += 1;
            } else {
                bot.on_response(
                    id,
                    404,
                    NO_HEADERS,
                    &problem_body(404, "OAPI_MNGR_0301"),
                    now,
                )
                .unwrap();
            }
        }
        if actions.contains(&Action::Done {
            call: chat,
            result: CallResult::Failed(CallFailure::Transport),
        }) {
            break;
        }
        now = wait_until(&actions).unwrap_or(now + 1);
    }
    assert_eq!(chat_sends, 1);
}

#[test]
fn contract_the_stream_has_no_whole_body_timeout_only_the_watchdog() {
    let (mut bot, stream) = streaming();
    // Bytes keep coming for hours: never closed by a timeout.
    let mut now = T0;
    for _ in 0..(4 * 60 * 4) {
        now += 15_000;
        bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
        let actions = drain(&mut bot, now);
        assert!(!actions.contains(&Action::CloseStream {
            id: stream,
            reason: CloseReason::Silent
        }));
        for (id, request) in sends(&actions) {
            assert!(request.url.ends_with("/v1/oauth/token"));
            let n = now / 1000;
            bot.on_response(
                id,
                200,
                NO_HEADERS,
                &pair(&format!("a{n}"), &format!("r{n}"), ALL_SCOPES),
                now,
            )
            .unwrap();
        }
    }
}

#[test]
fn contract_late_reports_are_harmless_and_unissued_ids_are_misuse() {
    let (mut bot, stream) = streaming();
    bot.request_reconnect(T0);
    let actions = drain(&mut bot, T0);
    assert!(actions.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Ended
    }));
    let (next, _) = stream_open(&actions).unwrap();
    for late in [
        bot.on_stream_bytes(stream, b"event:chat\ndata:{}\n\n", T0),
        bot.on_stream_open(stream, 200, NO_HEADERS, T0),
        bot.on_transport_error(stream, T0),
        bot.on_stream_closed(stream, T0),
        bot.on_response(stream, 200, NO_HEADERS, b"", T0),
    ] {
        assert_eq!(late, Ok(()));
    }
    assert!(events_of(&drain(&mut bot, T0)).is_empty());
    let never = RequestId(next.0 + 100);
    assert_eq!(
        bot.on_stream_closed(never, T0),
        Err(Misuse::UnknownRequest(never))
    );
    assert_eq!(
        bot.on_stream_bytes(next, b":heartbeat\n\n", T0),
        Err(Misuse::StreamNotStarted(next))
    );
}

#[test]
fn contract_misuse_is_the_same_local_error_in_every_machine() {
    let (mut bot, _) = authorized("live.read", false);
    assert_eq!(
        bot.on_response(RequestId(77), 200, NO_HEADERS, b"", T0),
        Err(Misuse::UnknownRequest(RequestId(77)))
    );
    let mut lp = ConnectLoop::new(StreamConfig::default(), 1);
    assert_eq!(
        lp.on_response(200, NO_HEADERS, b"", T0),
        Err(Misuse::NotConnecting)
    );
    let client = TokenClient::new(
        BaseUrl::new("http://127.0.0.1:9").unwrap(),
        ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s").unwrap(),
    );
    let mut tokens = TokenManager::new(client, RefreshPolicy::default());
    assert_eq!(
        tokens.on_response(200, b"{}", T0),
        Err(OAuthError::Misuse(Misuse::NoTokenRequestInFlight))
    );
}

#[test]
fn contract_reconnect_is_followed_at_once_every_time() {
    let (mut bot, mut stream) = streaming();
    let mut now = T0;
    for _ in 0..10 {
        now += 2_000;
        bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
        bot.on_stream_bytes(stream, end_frame("RECONNECT").as_bytes(), now)
            .unwrap();
        let actions = drain(&mut bot, now);
        assert!(actions.contains(&Action::CloseStream {
            id: stream,
            reason: CloseReason::Ended
        }));
        let (next, _) = stream_open(&actions).expect("at once, same time");
        bot.on_stream_open(next, 200, NO_HEADERS, now).unwrap();
        stream = next;
    }
}

#[test]
fn contract_only_instant_reconnect_storms_are_braked_with_a_notice() {
    let (mut bot, mut stream) = streaming();
    let mut now = T0;
    let mut braked = None;
    for _ in 0..3 {
        now += 10;
        bot.on_stream_bytes(stream, end_frame("RECONNECT").as_bytes(), now)
            .unwrap();
        let actions = drain(&mut bot, now);
        if let Some(Action::Notice(Notice::ReconnectStormBraked { until_ms })) = actions
            .iter()
            .find(|a| matches!(a, Action::Notice(Notice::ReconnectStormBraked { .. })))
        {
            braked = Some(*until_ms);
            assert!(stream_open(&actions).is_none(), "braked: not at once");
            now = *until_ms;
            let actions = drain(&mut bot, now);
            stream = stream_open(&actions).unwrap().0;
        } else {
            stream = stream_open(&actions).unwrap().0;
        }
        bot.on_stream_open(stream, 200, NO_HEADERS, now).unwrap();
    }
    assert!(braked.is_some());
}

#[test]
fn contract_a_401_in_the_middle_of_paging_refreshes_once_and_completes_the_paging() {
    let (mut bot, _) = authorized("listeners.read", false);
    let call = bot.list_listeners();
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(
        id,
        200,
        NO_HEADERS,
        br#"{"listeners":[{"id":"a","nickname":"A"}],"nextCursor":"p2"}"#,
        T0,
    )
    .unwrap();
    let (id, request) = only_send(&drain(&mut bot, T0));
    assert!(request.url.ends_with("?cursor=p2"));
    bot.on_response(id, 401, NO_HEADERS, b"", T0).unwrap();
    let (id, request) = only_send(&drain(&mut bot, T0));
    assert!(request.url.ends_with("/v1/oauth/token"));
    bot.on_response(
        id,
        200,
        NO_HEADERS,
        &pair("at2", "rt2", "listeners.read"),
        T0,
    )
    .unwrap();
    let (id, request) = only_send(&drain(&mut bot, T0));
    assert!(request.url.ends_with("?cursor=p2"), "the same page again");
    assert_eq!(request.header("authorization"), Some("Bearer at2"));
    bot.on_response(
        id,
        200,
        NO_HEADERS,
        br#"{"listeners":[{"id":"b","nickname":"B"}],"nextCursor":null}"#,
        T0,
    )
    .unwrap();
    let actions = drain(&mut bot, T0);
    let Some(Action::Done {
        call: c,
        result: CallResult::Listeners(people),
    }) = actions.first()
    else {
        panic!("{actions:?}")
    };
    assert_eq!(*c, call);
    assert_eq!(people.len(), 2);
}

#[test]
fn contract_a_full_queue_is_a_clear_answer_never_a_silent_drop() {
    let mut config = config();
    config.max_queued_calls = 2;
    let mut bot = Bot::new(config, None, 1);
    let one = bot.send_chat("one").unwrap();
    bot.send_chat("two").unwrap();
    let three = bot.send_chat("three").unwrap();
    let actions = drain(&mut bot, T0);
    assert!(actions.contains(&Action::Done {
        call: three,
        result: CallResult::Failed(CallFailure::QueueFull { limit: 2 })
    }));
    // Not yet authorized: the queued ones are held, and said so.
    assert!(actions.contains(&Action::Notice(Notice::CallHeld { call: one })));
    // Told as a full queue, not as something the service refused.
    let told = Notice::GaveUp {
        endpoint: Endpoint::Chat,
        reason: GiveUpReason::QueueFull,
        count: 1,
    };
    assert!(told.to_string().contains("call queue was full"), "{told}");
    assert!(actions.contains(&Action::Notice(told)));
    assert_eq!(bot.status(T0).counters.gave_up_queue_full, 1);
    bot.shutdown(false);
    let fans = bot.fetch_fans();
    let actions = drain(&mut bot, T0);
    assert!(actions.contains(&Action::Done {
        call: fans,
        result: CallResult::Failed(CallFailure::Stopped(Stop::ShutDown))
    }));
    assert_eq!(bot.status(T0).counters.chats_failed, 3);
}

// ---- a whole session, as a transcript ---------------------------------------------

/// One line per action, secrets redacted, times relative to `T0`.
fn transcript_line(now: u64, action: &Action) -> String {
    let t = format!("t+{:>9}ms", now - T0);
    let what = match action {
        Action::Send {
            id,
            request,
            timeout_ms,
        } => {
            let r = request.redacted();
            let body = if r.body.is_empty() {
                String::new()
            } else {
                format!(" {}", r.body)
            };
            format!(
                "{id} send {} {} (timeout {timeout_ms} ms){body}",
                r.method, r.url
            )
        }
        Action::OpenStream { id, request } => format!("{id} open stream {}", request.url),
        Action::CloseStream { id, reason } => format!("{id} close stream ({})", reason.as_str()),
        Action::Event { id, event } => format!(
            "event {} {}",
            event.name(),
            id.as_ref().map_or("-", |i| i.as_str())
        ),
        Action::Notice(Notice::Problem { endpoint, problem }) => {
            format!("notice {endpoint}: {problem}")
        }
        Action::Notice(notice) => format!("notice {notice:?}"),
        Action::Done { call, result } => format!("{call} done: {result:?}"),
        Action::PersistTokens(tokens) => format!("persist {tokens}"),
        Action::Timer { tag } => format!("timer {tag}"),
        Action::NeedsAuthorization => "needs authorization".to_owned(),
        Action::Wait { until_ms } => match until_ms {
            Some(at) => format!("wait until t+{}ms", at - T0),
            None => "wait for a report".to_owned(),
        },
        Action::Stopped(stop) => format!("stopped: {stop}"),
        other => format!("kit {other:?}"),
    };
    format!("{t}  {what}")
}

#[test]
fn a_day_in_the_bots_life() {
    let mut log = Vec::new();
    let mut bot = Bot::new(config(), None, 2024);
    let mut now = T0;
    let step = |bot: &mut Bot, now: u64, log: &mut Vec<String>| {
        let actions = drain(bot, now);
        log.extend(actions.iter().map(|a| transcript_line(now, a)));
        actions
    };
    let report = |log: &mut Vec<String>, now: u64, what: &str| {
        log.push(format!("t+{:>9}ms  <- {what}", now - T0));
    };

    // Morning: consent, exchange, the stream opens and the broadcast is off.
    step(&mut bot, now, &mut log);
    bot.authorize("consent-code", "https://bot.test/cb");
    let (id, _) = only_send(&step(&mut bot, now, &mut log));
    report(&mut log, now, "200 token pair");
    bot.on_response(id, 200, NO_HEADERS, &pair("at1", "rt1", ALL_SCOPES), now)
        .unwrap();
    let (stream, _) = stream_open(&step(&mut bot, now, &mut log)).unwrap();
    report(&mut log, now, "404 not on air");
    bot.on_response(
        stream,
        404,
        [("content-type", "text/event-stream;charset=UTF-8")],
        b"data:{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\",\"message\":\"off\"}\n\n",
        now,
    )
    .unwrap();
    let next = wait_until(&step(&mut bot, now, &mut log)).unwrap();
    now = next;

    // The DJ goes on air: chat, a join, hearts, a donation.
    let (stream, _) = stream_open(&step(&mut bot, now, &mut log)).unwrap();
    report(&mut log, now, "200 event stream");
    bot.on_stream_open(stream, 200, [("content-type", "text/event-stream")], now)
        .unwrap();
    let frames = concat!(
        ":heartbeat\n\n",
        "id:1732250000000-1\nevent:chat\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mina\"},\"isDj\":false,\"message\":\"!hello\",\"sentTime\":\"2024-11-22T04:33:20Z\"}\n\n",
        "id:1732250000000-2\nevent:presence\ndata:{\"user\":{\"id\":\"u2\",\"nickname\":null},\"type\":\"JOIN\",\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":36.5,\"time\":\"2024-11-22T04:33:21Z\"}\n\n",
        "id:1732250000000-3\nevent:like\ndata:{\"user\":{\"id\":\"u2\",\"nickname\":null},\"type\":\"PAID\",\"totalAmount\":30,\"amount\":10,\"extraAmount\":5,\"combo\":2,\"time\":\"2024-11-22T04:33:22Z\"}\n\n",
        "id:1732250000000-4\nevent:donation\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mina\"},\"amount\":500,\"message\":null,\"time\":\"2024-11-22T04:33:23Z\"}\n\n",
        "id:1732250000000-5\nevent:poll\ndata:{}\n\n",
    );
    now += 1_000;
    report(&mut log, now, "frames");
    bot.on_stream_bytes(stream, frames.as_bytes(), now).unwrap();
    step(&mut bot, now, &mut log);

    // The bot answers; the broadcast-wide chat limit trips once.
    let call = bot.send_chat("hello Mina 👋").unwrap();
    let (id, _) = only_send(&step(&mut bot, now, &mut log));
    report(&mut log, now, "429 OAPI_MNGR_0302");
    bot.on_response(
        id,
        429,
        NO_HEADERS,
        &problem_body(429, "OAPI_MNGR_0302"),
        now,
    )
    .unwrap();
    now = wait_until(&step(&mut bot, now, &mut log)).unwrap();
    let (id, _) = only_send(&step(&mut bot, now, &mut log));
    report(&mut log, now, "204");
    bot.on_response(id, 204, NO_HEADERS, b"", now).unwrap();
    step(&mut bot, now, &mut log);
    assert!(log
        .iter()
        .any(|l| l.contains(&format!("{call} done: ChatSent"))));

    // The server closes this connection: reconnect at once.
    now += 60_000;
    report(&mut log, now, "end RECONNECT");
    bot.on_stream_bytes(stream, end_frame("RECONNECT").as_bytes(), now)
        .unwrap();
    let (stream, _) = stream_open(&step(&mut bot, now, &mut log)).unwrap();
    bot.on_stream_open(stream, 200, NO_HEADERS, now).unwrap();

    // Fifty minutes in, the refresh is due; heartbeats keep coming.
    while now < T0 + 50 * MIN {
        now += 15_000;
        bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
        let actions = drain(&mut bot, now);
        if let Some((id, _)) = sends(&actions).first().copied() {
            log.extend(actions.iter().map(|a| transcript_line(now, a)));
            report(&mut log, now, "200 rotated pair");
            bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", ALL_SCOPES), now)
                .unwrap();
            step(&mut bot, now, &mut log);
            break;
        }
    }

    // The old token expires under the open stream: TOKEN_EXPIRED; the pair
    // refreshed at 50 minutes is the refresh, so reconnect with it at once.
    now = T0 + 61 * MIN;
    report(&mut log, now, "end TOKEN_EXPIRED");
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), now)
        .unwrap();
    let actions = step(&mut bot, now, &mut log);
    assert!(sends(&actions).is_empty());
    let (stream, _) = stream_open(&actions).unwrap();
    bot.on_stream_open(stream, 200, NO_HEADERS, now).unwrap();

    // A silent network: the watchdog closes it; a drop backs off.
    now += 45_000;
    let next = wait_until(&step(&mut bot, now, &mut log));
    now = next.unwrap();
    let (stream, _) = stream_open(&step(&mut bot, now, &mut log)).unwrap();
    bot.on_stream_open(stream, 200, NO_HEADERS, now).unwrap();

    // The broadcast ends; evening: shut down and revoke.
    now += 1_000;
    report(&mut log, now, "end LIVE_ENDED");
    bot.on_stream_bytes(stream, end_frame("LIVE_ENDED").as_bytes(), now)
        .unwrap();
    step(&mut bot, now, &mut log);
    bot.shutdown(true);
    let (revoke, _) = only_send(&step(&mut bot, now, &mut log));
    now += 80;
    report(&mut log, now, "200 revoked");
    bot.on_response(revoke, 200, NO_HEADERS, b"", now).unwrap();
    step(&mut bot, now, &mut log);

    let text = log.join("\n");
    assert!(!text.contains("at1") && !text.contains("rt2") && !text.contains("consent-code"));
    insta::assert_snapshot!(text);
}

// ---- app timers and the status snapshot -----------------------------------------

#[test]
fn timers_fire_in_the_same_loop_and_fold_into_wait() {
    let (mut bot, _) = authorized("chat.send", false);
    bot.schedule(T0 + 5_000, "once").unwrap();
    bot.every(60_000, "announce", T0 + 10_000).unwrap();
    assert_eq!(wait_until(&drain(&mut bot, T0)), Some(T0 + 5_000));
    let actions = drain(&mut bot, T0 + 5_000);
    assert_eq!(
        actions[0],
        Action::Timer {
            tag: Tag::new("once").unwrap()
        }
    );
    assert_eq!(wait_until(&actions), Some(T0 + 10_000));
    // Polled late: each repeating timer fires once, no burst.
    let actions = drain(&mut bot, T0 + 200_000);
    let fired: Vec<_> = actions
        .iter()
        .filter(|a| matches!(a, Action::Timer { .. }))
        .collect();
    assert_eq!(fired.len(), 1, "{actions:?}");
    assert!(bot.cancel_timer("announce"));
    assert!(!bot.cancel_timer("announce"));
    assert!(bot.schedule(T0, "").is_err(), "tags are checked");
}

#[test]
fn a_while_connected_timer_waits_for_the_stream() {
    let (mut bot, stream) = streaming();
    bot.set_timer("ad", Timer::every(30_000, T0 + 1_000).while_connected())
        .unwrap();
    bot.on_stream_bytes(stream, b":heartbeat\n\n", T0 + 1_000)
        .unwrap();
    assert!(drain(&mut bot, T0 + 1_000)
        .iter()
        .any(|a| matches!(a, Action::Timer { tag } if tag == "ad")));
    // The stream drops: the timer does not fire while disconnected.
    bot.on_stream_closed(stream, T0 + 2_000).unwrap();
    let actions = drain(&mut bot, T0 + 31_000);
    assert!(
        !actions.iter().any(|a| matches!(a, Action::Timer { .. })),
        "{actions:?}"
    );
}

#[test]
fn status_says_where_the_bot_stands_and_counts_what_it_saw() {
    let (mut bot, stream) = streaming();
    let frames = format!(
        ":heartbeat\n\n{}{}event:chat\ndata:{{broken\n\n",
        chat_frame("1-1", "a"),
        chat_frame("1-2", "b")
    );
    bot.on_stream_bytes(stream, frames.as_bytes(), T0 + 1_000)
        .unwrap();
    drain(&mut bot, T0 + 1_000);
    let call = bot.send_chat("hi").unwrap();
    let (id, _) = only_send(&drain(&mut bot, T0 + 1_000));
    bot.on_response(id, 204, NO_HEADERS, b"", T0 + 1_000)
        .unwrap();
    assert!(drain(&mut bot, T0 + 1_000).contains(&Action::Done {
        call,
        result: CallResult::ChatSent
    }));
    let status = bot.status(T0 + 1_000);
    assert_eq!(status.connection, Connection::Connected { since_ms: T0 });
    let c = &status.counters;
    assert_eq!(
        (
            c.chat,
            c.decode_errors,
            c.heartbeats,
            c.last_heartbeat_ms,
            c.connects,
            c.chats_sent
        ),
        (2, 1, 1, Some(T0 + 1_000), 1, 1)
    );
    assert!(status.cannot.is_empty(), "{:?}", status.cannot);
    assert_eq!(status.notes.len(), 1, "presence needs manager level");
    // A drop, then not on air.
    bot.on_stream_closed(stream, T0 + 2_000).unwrap();
    assert!(matches!(
        bot.status(T0 + 2_000).connection,
        Connection::BackingOff { .. }
    ));
    assert_eq!(bot.status(T0 + 2_000).counters.drops, 1);
    let json = bot.status(T0 + 2_000).to_json();
    assert!(
        json.contains(r#""state":"backingOff""#) && json.contains(r#""drops":1"#),
        "{json}"
    );

    let (bot, _) = authorized("events.chat", true);
    let status = bot.status(T0);
    assert!(status.cannot.iter().any(|l| l.contains("chat.send")));
    assert!(status.notes.is_empty());
}

#[test]
fn token_expired_after_a_refresh_reconnects_with_the_new_pair_without_a_second_refresh() {
    let (mut bot, stream) = streaming();
    // The scheduled refresh (50 minutes in) happens while the stream is open.
    let now = T0 + 50 * MIN;
    bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
    let (id, request) = only_send(&drain(&mut bot, now));
    assert!(request.url.ends_with("/v1/oauth/token"));
    bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", ALL_SCOPES), now)
        .unwrap();
    drain(&mut bot, now);
    // The old token expires under the open stream: reconnect with the new
    // pair at once, no second refresh.
    let now = T0 + 60 * MIN;
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    assert!(sends(&actions).is_empty(), "{actions:?}");
    let (_, request) = stream_open(&actions).expect("reconnects at once");
    assert_eq!(request.header("authorization"), Some("Bearer at2"));
}

// ---- the chat queue -------------------------------------------------------------

#[test]
fn a_burst_of_twenty_replies_ends_with_each_accounted_for_in_order() {
    let (mut bot, _) = authorized("chat.send", false);
    let calls: Vec<CallId> = (0..20)
        .map(|i| bot.send_chat(&format!("reply {i}")).unwrap())
        .collect();
    let mut now = T0;
    let mut sent_order = Vec::new();
    let mut done = std::collections::BTreeMap::new();
    for round in 0..400 {
        let actions = drain(&mut bot, now);
        for action in &actions {
            if let Action::Done { call, result } = action {
                assert!(
                    done.insert(*call, result.clone()).is_none(),
                    "reported twice"
                );
            }
        }
        for (id, request) in sends(&actions) {
            sent_order.push(body_text(request));
            // Every third try meets the broadcast-wide limit, every seventh a
            // frozen chat: retried a bounded number of times.
            let (status, body) = match round % 7 {
                0 => (403, problem_body(403, "OAPI_MNGR_0208")),
                _ if round % 3 == 0 => (429, problem_body(429, "OAPI_MNGR_0302")),
                _ => (204, Vec::new()),
            };
            bot.on_response(id, status, NO_HEADERS, &body, now).unwrap();
        }
        if done.len() == calls.len() {
            break;
        }
        now = wait_until(&actions).unwrap_or(now + 1_000);
    }
    assert_eq!(done.len(), 20, "every message's fate is reported");
    let sent = done
        .values()
        .filter(|r| **r == CallResult::ChatSent)
        .count();
    assert!(sent >= 15, "most go through: {sent}");
    // In order: a message is only sent once every earlier one is settled.
    let first_tries: Vec<&String> = sent_order.iter().fold(Vec::new(), |mut seen, m| {
        if !seen.contains(&m) {
            seen.push(m);
        }
        seen
    });
    let expected: Vec<String> = (0..20)
        .map(|i| format!("{{\"message\":\"reply {i}\"}}"))
        .collect();
    assert_eq!(first_tries, expected.iter().collect::<Vec<_>>());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the service answers, every queued chat gets exactly one
    /// `Done`, and no chat goes out over 200 UTF-16 units.
    #[test]
    fn the_chat_queue_never_loses_a_message_without_reporting_it(
        answers in proptest::collection::vec(0u8..8, 1..200),
        messages in 1usize..30,
    ) {
        let (mut bot, _) = authorized("chat.send", false);
        let mut calls = Vec::new();
        for i in 0..messages {
            calls.push(bot.send_chat(&format!("m{i} {}", "é".repeat(i * 7))).unwrap());
        }
        let mut now = T0;
        let mut done = std::collections::BTreeSet::new();
        let mut answers = answers.into_iter().cycle();
        for _ in 0..2_000 {
            let actions = drain(&mut bot, now);
            for action in &actions {
                if let Action::Done { call, .. } = action {
                    prop_assert!(done.insert(*call), "a second report for {call}");
                }
            }
            for (id, request) in sends(&actions) {
                let text = body_text(request);
                prop_assert!(text.encode_utf16().count() <= 200 + 14);
                match answers.next().unwrap_or(0) {
                    0..=2 => bot.on_response(id, 204, NO_HEADERS, b"", now).unwrap(),
                    3 => bot.on_response(id, 429, NO_HEADERS, &problem_body(429, "OAPI_MNGR_0302"), now).unwrap(),
                    4 => bot.on_response(id, 403, NO_HEADERS, &problem_body(403, "OAPI_MNGR_0208"), now).unwrap(),
                    5 => bot.on_response(id, 502, NO_HEADERS, &problem_body(502, "OAPI_MNGR_2303"), now).unwrap(),
                    6 => bot.on_transport_error(id, now).unwrap(),
                    _ => bot.on_response(id, 429, [("Retry-After", "3600")], b"", now).unwrap(),
                }
            }
            if done.len() == calls.len() {
                break;
            }
            now = wait_until(&actions).unwrap_or(now + 1_000);
        }
        prop_assert_eq!(done.len(), calls.len());
    }
}

// ---- every stop for consent resumes with a new code --------------------------------

/// Ways the bot stops for the DJ's consent, each driven from a streaming bot;
/// returns the time of the stop.
#[derive(Debug, Clone, Copy)]
enum ConsentStop {
    /// The stream answers 401, the refresh works, the stream answers 401 again.
    StreamTwice401,
    /// The same with `OAPI_MNGR_0203` (within a minute after revocation).
    StreamTwice401Revoked,
    /// The scheduled refresh, with the stream open, is refused `invalid_grant`.
    RefreshInvalidGrant,
    /// `TOKEN_EXPIRED`, then the refresh is refused `invalid_grant`.
    TokenExpiredThenInvalidGrant,
    /// The DJ disconnected the integration: a call's 401, and the refresh
    /// refused `invalid_grant`.
    Disconnected,
    /// A call's 401 twice (a refresh between) while the stream is open.
    CallTwice401,
}

fn stop_for_consent(how: ConsentStop) -> (Bot, u64) {
    let (mut bot, stream) = streaming();
    let mut now = T0 + MIN;
    bot.on_stream_bytes(stream, chat_frame("1-0", "before").as_bytes(), now)
        .unwrap();
    drain(&mut bot, now);
    let refuse_stream = |bot: &mut Bot, id: RequestId, body: &[u8], now: u64| {
        bot.on_response(id, 401, NO_HEADERS, body, now).unwrap();
    };
    let invalid_grant = br#"{"error":"invalid_grant","error_description":"gone"}"#;
    match how {
        ConsentStop::StreamTwice401 | ConsentStop::StreamTwice401Revoked => {
            let body = match how {
                ConsentStop::StreamTwice401Revoked => {
                    b"data:{\"status\":401,\"detailCode\":\"OAPI_MNGR_0203\"}".to_vec()
                }
                _ => Vec::new(),
            };
            // The connection drops; the reconnect meets a 401.
            bot.on_stream_closed(stream, now).unwrap();
            now += 2_000;
            let actions = drain(&mut bot, now);
            let (id, _) = stream_open(&actions).expect("reconnects");
            refuse_stream(&mut bot, id, &body, now);
            let (id, request) = only_send(&drain(&mut bot, now));
            assert!(body_text(&request).contains("grant_type=refresh_token"));
            bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", ALL_SCOPES), now)
                .unwrap();
            let actions = drain(&mut bot, now);
            let (id, request) = stream_open(&actions).expect("reconnects with the new pair");
            assert_eq!(request.header("authorization"), Some("Bearer at2"));
            refuse_stream(&mut bot, id, &body, now);
        }
        ConsentStop::RefreshInvalidGrant => {
            now = T0 + 50 * MIN;
            bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
            let (id, _) = only_send(&drain(&mut bot, now));
            bot.on_response(id, 400, NO_HEADERS, invalid_grant, now)
                .unwrap();
        }
        ConsentStop::TokenExpiredThenInvalidGrant => {
            bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), now)
                .unwrap();
            let (id, request) = only_send(&drain(&mut bot, now));
            assert!(body_text(&request).contains("grant_type=refresh_token"));
            bot.on_response(id, 400, NO_HEADERS, invalid_grant, now)
                .unwrap();
        }
        ConsentStop::Disconnected => {
            bot.fetch_fans();
            let (id, _) = only_send(&drain(&mut bot, now));
            bot.on_response(id, 401, NO_HEADERS, b"", now).unwrap();
            let (id, request) = only_send(&drain(&mut bot, now));
            assert!(body_text(&request).contains("grant_type=refresh_token"));
            bot.on_response(id, 400, NO_HEADERS, invalid_grant, now)
                .unwrap();
        }
        ConsentStop::CallTwice401 => {
            bot.fetch_fans();
            let (id, _) = only_send(&drain(&mut bot, now));
            bot.on_response(id, 401, NO_HEADERS, b"", now).unwrap();
            let (id, _) = only_send(&drain(&mut bot, now));
            bot.on_response(id, 200, NO_HEADERS, &pair("at2", "rt2", ALL_SCOPES), now)
                .unwrap();
            let (id, _) = only_send(&drain(&mut bot, now));
            bot.on_response(id, 401, NO_HEADERS, b"", now).unwrap();
        }
    }
    let actions = drain(&mut bot, now);
    assert!(
        matches!(actions.last(), Some(Action::Stopped(Stop::Reauthorize(_)))),
        "{how:?}: {actions:?}"
    );
    // Sticky, and nothing goes out with the refused pair.
    let later = drain(&mut bot, now + 10 * MIN);
    assert!(
        matches!(later.as_slice(), [Action::Stopped(Stop::Reauthorize(_))]),
        "{how:?}: {later:?}"
    );
    (bot, now + 10 * MIN)
}

/// Gives the stopped bot a new code, polls `polls` times over the following
/// seconds before the exchange is answered, then checks that the stream
/// reopens with the new token and events flow.
fn resume_with_new_code(how: ConsentStop, mut bot: Bot, mut now: u64, polls: u32) {
    bot.authorize("new-code", "https://bot.test/cb");
    let actions = drain(&mut bot, now);
    let (exchange, request) = only_send(&actions);
    assert!(
        body_text(&request).contains("grant_type=authorization_code"),
        "{how:?}"
    );
    assert!(
        stream_open(&actions).is_none(),
        "{how:?}: no stream before the pair"
    );
    for _ in 0..polls {
        now += 3_000;
        let actions = drain(&mut bot, now);
        assert!(
            !matches!(actions.last(), Some(Action::Stopped(_))),
            "{how:?}: stopped again while the code is exchanged: {actions:?}"
        );
        assert!(sends(&actions).is_empty(), "{how:?}: {actions:?}");
        assert!(stream_open(&actions).is_none(), "{how:?}: {actions:?}");
    }
    bot.on_response(
        exchange,
        200,
        NO_HEADERS,
        &pair("at9", "rt9", ALL_SCOPES),
        now,
    )
    .unwrap();
    let actions = drain(&mut bot, now);
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::PersistTokens(_))),
        "{how:?}: {actions:?}"
    );
    let (stream, request) =
        stream_open(&actions).unwrap_or_else(|| panic!("{how:?}: the stream reopens: {actions:?}"));
    assert_eq!(
        request.header("authorization"),
        Some("Bearer at9"),
        "{how:?}"
    );
    for (id, request) in sends(&actions) {
        // A call held through the stop goes out with the new token only.
        assert_eq!(
            request.header("authorization"),
            Some("Bearer at9"),
            "{how:?}"
        );
        bot.on_response(id, 200, NO_HEADERS, br#"{"totalCount":0,"fans":[]}"#, now)
            .unwrap();
    }
    bot.on_stream_open(stream, 200, [("content-type", "text/event-stream")], now)
        .unwrap();
    bot.on_stream_bytes(stream, chat_frame("2-0", "after").as_bytes(), now)
        .unwrap();
    let actions = drain(&mut bot, now);
    let chats: Vec<&str> = events_of(&actions)
        .into_iter()
        .filter_map(|e| match e {
            Event::Chat(c) => Some(c.message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(chats, ["after"], "{how:?}: {actions:?}");
    assert!(bot.stop().is_none(), "{how:?}");
    assert!(
        matches!(bot.status(now).connection, Connection::Connected { .. }),
        "{how:?}"
    );
}

#[test]
fn every_stop_for_consent_resumes_with_a_new_code_and_the_stream_reopens() {
    for how in [
        ConsentStop::StreamTwice401,
        ConsentStop::StreamTwice401Revoked,
        ConsentStop::RefreshInvalidGrant,
        ConsentStop::TokenExpiredThenInvalidGrant,
        ConsentStop::Disconnected,
        ConsentStop::CallTwice401,
    ] {
        let (bot, now) = stop_for_consent(how);
        resume_with_new_code(how, bot, now, 0);
    }
}

#[test]
fn a_stop_for_consent_resumes_when_the_exchange_is_answered_after_several_polls() {
    for how in [
        ConsentStop::StreamTwice401,
        ConsentStop::StreamTwice401Revoked,
        ConsentStop::RefreshInvalidGrant,
        ConsentStop::TokenExpiredThenInvalidGrant,
        ConsentStop::Disconnected,
        ConsentStop::CallTwice401,
    ] {
        let (bot, now) = stop_for_consent(how);
        resume_with_new_code(how, bot, now, 6);
    }
}

// ---- the kit in the loop -------------------------------------------------------------

fn kit_config() -> crate::kit::KitConfig {
    crate::kit::KitConfig::from_json(
        r#"{"commands":[{"name":"hello","aliases":["hi"]},{"name":"top","cooldown_ms":60000}],
            "greetings":{"welcome_back_after_ms":600000},
            "milestones":{"hearts_every":100,"donations_every":1000},"tally":true}"#,
    )
    .unwrap()
}

/// A bot with the kit, authorized with `scope`, its stream open at `T0`.
fn kit_streaming(
    scope: &str,
    state: Option<&crate::kit::KitState>,
) -> (Bot, RequestId, Vec<Action>) {
    let mut config = config();
    config.kit = kit_config();
    let mut bot = Bot::new(config, None, 42);
    if let Some(state) = state {
        bot = bot.with_kit_state(state);
    }
    drain(&mut bot, T0);
    bot.authorize("consent-code", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(id, 200, NO_HEADERS, &pair("at1", "rt1", scope), T0)
        .unwrap();
    let (stream, _) = stream_open(&drain(&mut bot, T0)).expect("the stream opens");
    bot.on_stream_open(stream, 200, [("content-type", "text/event-stream")], T0)
        .unwrap();
    let after = drain(&mut bot, T0);
    (bot, stream, after)
}

fn join_frame(id: &str, user: &str) -> String {
    format!(
        "id:{id}\nevent:presence\ndata:{{\"user\":{{\"id\":\"{user}\",\"nickname\":\"N{user}\"}},\"type\":\"JOIN\",\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":null,\"time\":\"2024-11-22T04:33:20Z\"}}\n\n"
    )
}

/// The kit's actions in a drain, one short word each.
fn kit_words(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Event { event, .. } => Some(format!("event {}", event.name())),
            Action::PersistState(_) => Some("state".into()),
            Action::Arrival(a) => Some(format!("arrival {:?} {}", a.kind, a.user.id)),
            Action::Command(c) => Some(format!("command {} {}", c.name, c.user.id)),
            Action::Milestone(m) => Some(format!("milestone {m:?}").chars().take(40).collect()),
            Action::BroadcastEnded(b) => {
                Some(format!("ended {:?} {} people", b.live_id, b.tally.seen()))
            }
            Action::Notice(Notice::CommandRefused(r)) => Some(format!("refused {}", r.name)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_kit_says_what_an_event_means_and_saves_its_memory_within_the_checkpoint() {
    let (mut bot, stream, _) = kit_streaming("events.chat events.presence chat.send", None);
    let chunk = format!("{}{}", join_frame("1-0", "u1"), chat_frame("1-1", "!hi"));
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0).unwrap();
    let actions = drain(&mut bot, T0);
    // Each event, then what it means.
    assert_eq!(
        kit_words(&actions),
        [
            "event presence",
            "arrival First u1",
            "event chat",
            "command hello u1"
        ]
    );
    // The bot wakes for the checkpoint and hands out the state, once.
    let checkpoint = T0 + crate::kit::CHECKPOINT_MS;
    assert_eq!(wait_until(&actions), Some(checkpoint));
    assert_eq!(kit_words(&drain(&mut bot, checkpoint)), ["state"]);
    bot.on_stream_bytes(stream, b":heartbeat\n\n", checkpoint)
        .unwrap();
    assert!(kit_words(&drain(&mut bot, checkpoint + MIN)).is_empty());
    // A reply through `say`: split, queued, sent.
    let calls = bot.say(&format!("{} {}", "x".repeat(150), "y".repeat(150)));
    assert_eq!(calls.len(), 2);
    assert_eq!(
        sends(&drain(&mut bot, T0)).len(),
        1,
        "in order, one at a time"
    );
}

#[test]
fn a_restart_in_the_middle_of_a_broadcast_greets_nobody_twice_and_loses_no_total() {
    let scope = "events.chat events.presence events.like chat.send";
    let (mut bot, stream, _) = kit_streaming(scope, None);
    let like = "event:like\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"A\"},\"type\":\"PAID\",\"totalAmount\":60,\"amount\":60,\"extraAmount\":0,\"combo\":1,\"time\":\"t\"}\n\n";
    let chunk = format!("{}{like}", join_frame("1-0", "u1"));
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0).unwrap();
    drain(&mut bot, T0);
    // The process is told to stop: the state comes out as it stops.
    bot.shutdown(false);
    let saved = drain(&mut bot, T0)
        .into_iter()
        .find_map(|a| match a {
            Action::PersistState(state) => Some(state),
            _ => None,
        })
        .expect("the state to save");
    // A new process starts from the saved state.
    let restored = crate::kit::KitState::from_json(saved.to_json()).unwrap();
    let (mut bot, stream, _) = kit_streaming(scope, Some(&restored));
    let chunk = format!("{}{like}", join_frame("2-0", "u1"));
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0 + MIN)
        .unwrap();
    let words = kit_words(&drain(&mut bot, T0 + MIN));
    assert!(!words.iter().any(|w| w.starts_with("arrival")), "{words:?}");
    assert!(
        words
            .iter()
            .any(|w| w.starts_with("milestone Hearts { reached: 100")),
        "the total went on from 60: {words:?}"
    );
    assert_eq!(bot.kit().unwrap().tally().total_hearts(), 120);
}

#[test]
fn the_kit_asks_once_per_connection_which_broadcast_this_is_when_it_may() {
    let all = ALL_SCOPES;
    let (mut bot, stream, after) = kit_streaming(all, None);
    let (id, request) = only_send(&after);
    assert!(request.url.ends_with("/v1/live"), "{request:?}");
    assert_eq!(bot.pending_calls(), 0, "not an app call");
    let body = br#"{"liveId":42,"title":"t","startedAt":"2024-01-01T00:00:00Z","closeAirTime":"2024-01-01T01:00:00Z","listenerCount":2,"totalListenerCount":5,"welcomeMessage":"","isChatFrozen":false,"categories":[],"tags":[]}"#;
    bot.on_response(id, 200, NO_HEADERS, body, T0).unwrap();
    let actions = drain(&mut bot, T0);
    assert!(
        !actions.iter().any(|a| matches!(a, Action::Done { .. })),
        "{actions:?}"
    );
    assert_eq!(bot.kit().unwrap().live_id(), Some(42));
    // The broadcast ends: its tally, with its liveId.
    bot.on_stream_bytes(stream, end_frame("LIVE_ENDED").as_bytes(), T0)
        .unwrap();
    let actions = drain(&mut bot, T0);
    assert!(
        kit_words(&actions).contains(&"ended Some(42) 0 people".to_owned()),
        "{actions:?}"
    );
    // Without live.read: nothing is asked.
    let (_, _, after) = kit_streaming("events.chat chat.send", None);
    assert!(sends(&after).is_empty(), "{after:?}");
}

#[test]
fn not_on_air_after_a_restart_ends_the_broadcast_remembered() {
    let state = crate::kit::KitState::from_json(
        r#"{"format":"onair.kit","version":1,"live_id":7,"people":{"u1":{"greeted":true}},
            "tally":{"people":{"u1":{"nickname":"A","hearts":5,"paidHearts":0,"donated":0,"donations":0,"joins":1,"chats":0}}}}"#,
    )
    .unwrap();
    let mut config = config();
    config.kit = kit_config();
    let mut bot = Bot::new(config, None, 1).with_kit_state(&state);
    bot.authorize("c", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(id, 200, NO_HEADERS, &pair("a", "r", "events.chat"), T0)
        .unwrap();
    let (stream, _) = stream_open(&drain(&mut bot, T0)).unwrap();
    bot.on_response(
        stream,
        404,
        NO_HEADERS,
        b"data:{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\"}",
        T0,
    )
    .unwrap();
    let words = kit_words(&drain(&mut bot, T0));
    assert_eq!(words, ["state", "ended Some(7) 1 people"]);
}

#[test]
fn a_bot_without_a_kit_says_nothing_of_it() {
    let (mut bot, stream) = streaming();
    let chunk = format!("{}{}", join_frame("1-0", "u1"), chat_frame("1-1", "!hello"));
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0).unwrap();
    let words = kit_words(&drain(&mut bot, T0));
    assert_eq!(words, ["event presence", "event chat"]);
    assert!(bot.kit().is_none());
}

#[test]
fn the_actions_of_the_busy_fixture_stream() {
    let stream = include_bytes!("../../../fixtures/streams/busy.sse");
    let (mut bot, id, _) = kit_streaming(
        "events.chat events.presence events.like events.donation chat.send",
        None,
    );
    let mut lines = Vec::new();
    let mut now = T0;
    for chunk in stream.chunks(4096) {
        now += 1_000;
        bot.on_stream_bytes(id, chunk, now).unwrap();
        for action in drain(&mut bot, now) {
            let line = match &action {
                Action::Arrival(a) => format!("arrival {:?} {}", a.kind, a.user.id),
                Action::Command(c) => format!("command {} {}", c.name, c.user.id),
                Action::Milestone(crate::kit::Milestone::Hearts { reached, total, .. }) => {
                    format!("hearts {reached} ({total})")
                }
                Action::Milestone(crate::kit::Milestone::Donated {
                    user,
                    reached,
                    total,
                    ..
                }) => {
                    format!("donated {} {reached} ({total})", user.id)
                }
                Action::BroadcastEnded(b) => format!(
                    "ended: {} people, {} hearts, {} donated, {} joined",
                    b.tally.seen(),
                    b.tally.total_hearts(),
                    b.tally.total_donated(),
                    b.tally.joined()
                ),
                Action::PersistState(_) => "state".into(),
                _ => continue,
            };
            lines.push(line);
        }
    }
    insta::assert_snapshot!(lines.join("\n"));
}

// ---- a pair from a shared store -----------------------------------------------

/// The pair another process stored: generation `generation`, access `access`.
fn stored_pair(generation: u64, access: &str) -> Tokens {
    Tokens::from_json(
        format!(
            r#"{{"format":"onair.tokens","version":1,"generation":{generation},
            "access_token":"{access}","access_expires_at_ms":{},"issued_at_ms":{T0},
            "refresh_token":"rt-{access}","refresh_expires_at_ms":{},"scope":"{ALL_SCOPES}"}}"#,
            T0 + 120 * MIN,
            T0 + 1000 * MIN,
        )
        .as_bytes(),
    )
    .unwrap()
}

#[test]
fn a_newer_stored_pair_replaces_a_refresh_in_flight() {
    let (mut bot, stream) = streaming();
    // The stream is told the token expired: the bot wants a refresh.
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), T0)
        .unwrap();
    bot.on_stream_closed(stream, T0).unwrap();
    let actions = drain(&mut bot, T0);
    let (refresh, request) = only_send(&actions);
    assert!(body_text(&request).contains("grant_type=refresh_token"));
    // Meanwhile another process refreshed and stored generation 5.
    assert!(bot.adopt_tokens(stored_pair(5, "at-other"), T0 + 10));
    assert!(
        !bot.adopt_tokens(stored_pair(5, "at-other"), T0 + 10),
        "not newer"
    );
    let actions = drain(&mut bot, T0 + 10);
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, Action::PersistTokens(_))),
        "already stored: {actions:?}"
    );
    let (_, open) = stream_open(&actions).expect("the stream reconnects");
    assert_eq!(open.header("authorization"), Some("Bearer at-other"));
    // The dropped refresh's answer, if the driver reports it, is ignored.
    bot.on_response(
        refresh,
        200,
        NO_HEADERS,
        &pair("at2", "rt2", ALL_SCOPES),
        T0 + 20,
    )
    .unwrap();
    let actions = drain(&mut bot, T0 + 20);
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, Action::PersistTokens(_))),
        "{actions:?}"
    );
    assert_eq!(bot.token_pair().map(Tokens::generation), Some(5));
}

#[test]
fn refreshing_names_the_generation_a_refresh_in_flight_spends() {
    let mut bot = Bot::new(config(), None, 42);
    bot.authorize("consent-code", "https://bot.test/cb");
    let (exchange, _) = only_send(&drain(&mut bot, T0));
    assert_eq!(bot.refreshing(T0), None, "a code exchange is not a refresh");
    bot.on_response(
        exchange,
        200,
        NO_HEADERS,
        &pair("at1", "rt1", ALL_SCOPES),
        T0,
    )
    .unwrap();
    let after = drain(&mut bot, T0);
    let (stream, _) = stream_open(&after).unwrap_or_else(|| panic!("{after:?}"));
    bot.on_stream_open(stream, 200, [("content-type", "text/event-stream")], T0)
        .unwrap();
    assert_eq!(bot.refreshing(T0), None, "nothing in flight");
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), T0)
        .unwrap();
    bot.on_stream_closed(stream, T0).unwrap();
    let (refresh, request) = only_send(&drain(&mut bot, T0));
    assert!(body_text(&request).contains("grant_type=refresh_token"));
    assert_eq!(bot.refreshing(T0), Some(1));
    bot.on_response(
        refresh,
        200,
        NO_HEADERS,
        &pair("at2", "rt2", ALL_SCOPES),
        T0,
    )
    .unwrap();
    assert_eq!(bot.refreshing(T0), None);
    assert_eq!(bot.token_pair().map(Tokens::generation), Some(2));
}

#[test]
fn a_refresh_refused_for_a_rotated_token_is_lifted_by_the_stored_pair() {
    let (mut bot, stream) = streaming();
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), T0)
        .unwrap();
    bot.on_stream_closed(stream, T0).unwrap();
    let (refresh, _) = only_send(&drain(&mut bot, T0));
    // The other process rotated the refresh token first.
    bot.on_response(
        refresh,
        400,
        NO_HEADERS,
        br#"{"error":"invalid_grant"}"#,
        T0,
    )
    .unwrap();
    let actions = drain(&mut bot, T0);
    assert!(
        matches!(actions.last(), Some(Action::Stopped(Stop::Reauthorize(_)))),
        "{actions:?}"
    );
    assert!(bot.adopt_tokens(stored_pair(9, "at-rotated"), T0 + 5));
    let actions = drain(&mut bot, T0 + 5);
    let (_, open) = stream_open(&actions).expect("the stream starts over");
    assert_eq!(open.header("authorization"), Some("Bearer at-rotated"));
    assert_eq!(bot.tokens.problem(), None);
}

#[test]
fn a_stored_pair_is_refused_after_a_shutdown_and_during_an_exchange() {
    let (mut bot, _) = streaming();
    bot.shutdown(false);
    drain(&mut bot, T0);
    assert!(!bot.adopt_tokens(stored_pair(9, "late"), T0));
    let mut bot = Bot::new(config(), None, 1);
    drain(&mut bot, T0);
    bot.authorize("code", "https://bot.test/cb");
    let _ = only_send(&drain(&mut bot, T0));
    assert!(
        !bot.adopt_tokens(stored_pair(9, "x"), T0),
        "the exchange answers first"
    );
}

#[test]
fn a_block_another_bot_of_the_app_learned_holds_that_permission_here_too() {
    let (mut bot, stream) = streaming();
    let shared = crate::proto::quota::DailyQuota {
        blocks: vec![crate::proto::quota::Block {
            scope: Some(Permission::ListenersRead),
            until_ms: T0 + 3_600_000,
        }],
        ..Default::default()
    };
    bot.share_daily_quota(&shared, T0);
    let call = bot.list_listeners();
    let actions = drain(&mut bot, T0);
    assert!(
        actions.iter().any(|a| matches!(a, Action::Done { call: c, result: CallResult::Failed(CallFailure::QuotaBlocked { until_ms }) }
            if *c == call && *until_ms == T0 + 3_600_000)),
        "{actions:?}"
    );
    assert!(sends(&actions).is_empty(), "nothing sent: {actions:?}");
    // Chat and the stream go on.
    bot.send_chat("still here").unwrap();
    let (_, request) = only_send(&drain(&mut bot, T0));
    assert!(request.url.ends_with("/v1/live/chat"));
    bot.on_stream_bytes(stream, chat_frame("1-1", "hi").as_bytes(), T0)
        .unwrap();
    assert_eq!(events_of(&drain(&mut bot, T0)).len(), 1);
}

#[test]
fn chat_queued_for_a_broadcast_that_ended_is_cancelled_after_the_end() {
    let (mut bot, stream) = streaming();
    let sent = bot.send_chat("in flight").unwrap();
    let (in_flight, _) = only_send(&drain(&mut bot, T0));
    let queued = bot.send_chat("still queued").unwrap();
    let listeners = bot.list_listeners();
    bot.on_stream_bytes(stream, end_frame("LIVE_ENDED").as_bytes(), T0)
        .unwrap();
    let actions = drain(&mut bot, T0);
    let end_at = actions
        .iter()
        .position(|a| {
            matches!(
                a,
                Action::Event {
                    event: Event::End(_),
                    ..
                }
            )
        })
        .expect("the end event");
    let cancelled_at = actions
        .iter()
        .position(|a| matches!(a, Action::Done { call, result: CallResult::Failed(CallFailure::Cancelled) } if *call == queued))
        .expect("the queued chat cancelled");
    assert!(end_at < cancelled_at, "{actions:?}");
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, Action::Done { call, .. } if *call == sent || *call == listeners)),
        "the chat in flight and other calls keep going: {actions:?}"
    );
    bot.on_response(in_flight, 200, NO_HEADERS, b"{}", T0)
        .unwrap();
    let actions = drain(&mut bot, T0);
    assert!(
        actions.iter().any(
            |a| matches!(a, Action::Done { call, result: CallResult::ChatSent } if *call == sent)
        ),
        "{actions:?}"
    );
    // The listeners call goes on; a goodbye queued after the end goes out.
    let goodbye = bot.send_chat("goodbye").unwrap();
    let mut now = T0 + 1_000;
    let mut actions = drain(&mut bot, now);
    while sends(&actions).is_empty() {
        now = wait_until(&actions).expect("a deadline");
        actions = drain(&mut bot, now);
    }
    let (id, request) = only_send(&actions);
    assert!(request.url.ends_with("/v1/live/listeners"), "{request:?}");
    let empty = br#"{"listeners":[],"nextCursor":null}"#;
    bot.on_response(id, 200, NO_HEADERS, empty, now).unwrap();
    let mut actions = drain(&mut bot, now);
    while sends(&actions).is_empty() {
        now = wait_until(&actions).expect("a deadline");
        actions = drain(&mut bot, now);
    }
    assert!(
        sends(&actions)
            .iter()
            .any(|(_, r)| r.url.ends_with("/v1/live/chat")),
        "{actions:?}"
    );
    assert!(!actions
        .iter()
        .any(|a| matches!(a, Action::Done { call, .. } if *call == goodbye)));
}

#[test]
fn a_bot_waiting_for_consent_still_shuts_down() {
    let (mut bot, stream) = streaming();
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), T0)
        .unwrap();
    bot.on_stream_closed(stream, T0).unwrap();
    let (refresh, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(
        refresh,
        400,
        NO_HEADERS,
        br#"{"error":"invalid_grant"}"#,
        T0,
    )
    .unwrap();
    let actions = drain(&mut bot, T0);
    assert!(
        matches!(actions.last(), Some(Action::Stopped(Stop::Reauthorize(_)))),
        "{actions:?}"
    );
    // A call made meanwhile is held for the new consent.
    let held = bot.fetch_broadcast();
    drain(&mut bot, T0);
    bot.shutdown(false);
    let actions = drain(&mut bot, T0);
    assert!(
        actions.iter().any(|a| matches!(a, Action::Done { call, result: CallResult::Failed(CallFailure::Cancelled) } if *call == held)),
        "{actions:?}"
    );
    assert_eq!(actions.last(), Some(&Action::Stopped(Stop::ShutDown)));
    // A consent code no longer brings it back.
    bot.authorize("late-code", "https://bot.test/cb");
    assert_eq!(drain(&mut bot, T0), [Action::Stopped(Stop::ShutDown)]);
}

// ---- not sent, unreachable, given up, daily quota, the credentials check -------

fn notices(actions: &[Action]) -> Vec<&Notice> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Notice(n) => Some(n),
            _ => None,
        })
        .collect()
}

fn unreachable_notices(actions: &[Action]) -> Vec<(Endpoint, Unreached, u64, u64)> {
    notices(actions)
        .into_iter()
        .filter_map(|n| match n {
            Notice::Unreachable {
                endpoint,
                failure,
                failures,
                since_ms,
            } => Some((*endpoint, *failure, *failures, *since_ms)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_code_exchange_not_sent_goes_again_with_the_same_code_while_it_is_fresh() {
    let mut bot = Bot::new(config(), None, 42);
    bot.authorize("fresh-code", "https://bot.test/cb");
    let (id, request) = only_send(&drain(&mut bot, T0));
    assert!(body_text(&request).contains("code=fresh-code"));
    bot.on_not_sent(id, T0 + 5).unwrap();
    let actions = drain(&mut bot, T0 + 5);
    assert_eq!(
        unreachable_notices(&actions),
        [(Endpoint::Token, Unreached::NotSent, 1, T0 + 5)]
    );
    assert!(sends(&actions).is_empty(), "after a backoff: {actions:?}");
    assert!(!actions.contains(&Action::NeedsAuthorization));
    let at = wait_until(&actions).unwrap();
    assert!((T0 + 5..=T0 + 5 + 5_000).contains(&at), "{at}");
    let (again, request) = only_send(&drain(&mut bot, at));
    assert!(
        body_text(&request).contains("code=fresh-code"),
        "the same code"
    );
    // This time it is answered: the pair is in, and the service is reachable again.
    bot.on_response(again, 200, NO_HEADERS, &pair("at1", "rt1", ALL_SCOPES), at)
        .unwrap();
    let actions = drain(&mut bot, at);
    assert!(actions
        .iter()
        .any(|a| matches!(a, Action::PersistTokens(_))));
    assert!(notices(&actions).contains(&&Notice::Reachable {
        failures: 1,
        since_ms: T0 + 5
    }));
}

#[test]
fn the_consent_stop_is_that_of_a_bot_without_tokens_until_a_pair_comes() {
    let bot = Bot::new(config(), None, 42);
    assert_eq!(
        bot.consent_stop(),
        Some(Stop::Reauthorize(AuthProblem::NotAuthorized))
    );
    let (mut bot, _) = authorized(ALL_SCOPES, true);
    assert_eq!(bot.consent_stop(), None);
    bot.shutdown(false);
    drain(&mut bot, T0);
    assert_eq!(bot.consent_stop(), None, "a shutdown needs no consent");
}

#[test]
fn a_code_exchange_that_cannot_be_sent_for_a_minute_stops_saying_the_service_was_unreachable() {
    let mut bot = Bot::new(config(), None, 42);
    bot.authorize("fresh-code", "https://bot.test/cb");
    let mut now = T0;
    let mut tries = 0;
    let stop = loop {
        let actions = drain(&mut bot, now);
        if let Some(Action::Stopped(stop)) = actions.last() {
            break stop.clone();
        }
        if sends(&actions).is_empty() {
            // An Unreachable notice fell due first.
            now = wait_until(&actions).unwrap();
            continue;
        }
        let (id, request) = only_send(&actions);
        assert!(body_text(&request).contains("code=fresh-code"));
        tries += 1;
        bot.on_not_sent(id, now).unwrap();
        let after = drain(&mut bot, now);
        match after.last() {
            Some(Action::Wait { until_ms: Some(at) }) => now = *at,
            Some(Action::Stopped(stop)) => break stop.clone(),
            other => panic!("{other:?}"),
        }
        assert!(now < T0 + CODE_FRESH_MS, "no retry past the code's minute");
    };
    assert!(tries >= 5, "retried while fresh: {tries}");
    assert_eq!(
        stop,
        Stop::Reauthorize(AuthProblem::ExchangeFailed(
            crate::proto::oauth::TokenFailure::NotSent
        ))
    );
    assert!(stop.resumes_with_new_consent());
    assert!(stop.to_string().contains("could not be reached"), "{stop}");
    // What a driver with no new code to give ends its run with.
    assert_eq!(bot.consent_stop(), Some(stop.clone()));
    // A new code brings it back.
    bot.authorize("next-code", "https://bot.test/cb");
    let (_, request) = only_send(&drain(&mut bot, now));
    assert!(body_text(&request).contains("code=next-code"));
}

#[test]
fn a_code_exchange_without_an_answer_is_spent() {
    let mut bot = Bot::new(config(), None, 42);
    bot.authorize("fresh-code", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_transport_error(id, T0 + 5).unwrap();
    let actions = drain(&mut bot, T0 + 5);
    assert_eq!(
        unreachable_notices(&actions),
        [(Endpoint::Token, Unreached::NoResponse, 1, T0 + 5)]
    );
    assert_eq!(
        actions.last(),
        Some(&Action::Stopped(Stop::Reauthorize(
            AuthProblem::ExchangeFailed(crate::proto::oauth::TokenFailure::Transport)
        )))
    );
}

#[test]
fn a_refresh_not_sent_is_retried_with_backoff() {
    let (mut bot, stream) = streaming();
    bot.on_stream_bytes(stream, end_frame("TOKEN_EXPIRED").as_bytes(), T0)
        .unwrap();
    bot.on_stream_closed(stream, T0).unwrap();
    let (refresh, request) = only_send(&drain(&mut bot, T0));
    assert!(body_text(&request).contains("grant_type=refresh_token"));
    bot.on_not_sent(refresh, T0 + 1).unwrap();
    let actions = drain(&mut bot, T0 + 1);
    assert!(sends(&actions).is_empty(), "{actions:?}");
    assert!(bot.stop().is_none());
    let at = wait_until(&actions).unwrap();
    assert!(at <= T0 + 1 + Backoff::BASE_MS, "{at}");
    let (_, request) = only_send(&drain(&mut bot, at));
    assert!(body_text(&request).contains("refresh_token=rt1"));
}

#[test]
fn a_chat_not_sent_is_sent_again() {
    let (mut bot, _) = authorized("chat.send", false);
    let call = bot.send_chat("hello").unwrap();
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_not_sent(id, T0).unwrap();
    let actions = drain(&mut bot, T0);
    assert!(!actions.iter().any(|a| matches!(a, Action::Done { .. })));
    let at = wait_until(&actions).unwrap();
    let (again, request) = only_send(&drain(&mut bot, at));
    assert!(body_text(&request).contains("hello"));
    bot.on_response(again, 204, NO_HEADERS, b"", at).unwrap();
    assert!(drain(&mut bot, at).contains(&Action::Done {
        call,
        result: CallResult::ChatSent
    }));
}

#[test]
fn unreachable_is_told_at_once_then_at_most_every_30_s_then_reachable_ends_it() {
    let (mut bot, after) = authorized(ALL_SCOPES, true);
    let (mut id, _) = stream_open(&after).unwrap();
    let mut now = T0;
    let mut told = Vec::new();
    let mut failures = 0;
    while now < T0 + 95_000 {
        bot.on_not_sent(id, now).unwrap();
        failures += 1;
        let mut actions = drain(&mut bot, now);
        loop {
            told.extend(unreachable_notices(&actions).into_iter().map(|n| (now, n)));
            if let Some((next, _)) = stream_open(&actions) {
                id = next;
                break;
            }
            now = wait_until(&actions).unwrap();
            actions = drain(&mut bot, now);
        }
    }
    assert_eq!(bot.status(now).counters.unreached, failures);
    assert!(told.len() >= 3, "{told:?}");
    assert_eq!(told[0].1, (Endpoint::Events, Unreached::NotSent, 1, T0));
    for pair in told.windows(2) {
        assert!(
            pair[1].0 >= pair[0].0 + 30_000,
            "at most every 30 s: {told:?}"
        );
        assert!(pair[1].1 .2 > pair[0].1 .2, "counts grow: {told:?}");
        assert_eq!(pair[1].1 .3, T0, "since the first failure");
    }
    assert!(told.len() <= 4, "{told:?}");
    // The stream opens: the episode ends with one info notice.
    bot.on_stream_open(id, 200, NO_HEADERS, now).unwrap();
    let actions = drain(&mut bot, now);
    let reachable = Notice::Reachable {
        failures,
        since_ms: T0,
    };
    assert!(notices(&actions).contains(&&reachable), "{actions:?}");
    assert!(!reachable.is_warning());
    assert!(unreachable_notices(&actions).is_empty());
}

#[test]
fn a_stream_connect_timeout_is_unreachable_and_retried_with_backoff() {
    let (mut bot, after) = authorized(ALL_SCOPES, true);
    let (id, _) = stream_open(&after).unwrap();
    let at = wait_until(&after).unwrap();
    let actions = drain(&mut bot, at);
    assert!(
        actions.contains(&Action::CloseStream {
            id,
            reason: CloseReason::TimedOut
        }),
        "{actions:?}"
    );
    assert_eq!(
        unreachable_notices(&actions),
        [(Endpoint::Events, Unreached::TimedOut, 1, at)]
    );
    assert!(stream_open(&actions).is_none(), "backoff first");
}

#[test]
fn a_timed_out_call_is_unreachable() {
    let (mut bot, _) = authorized("live.read", false);
    bot.fetch_broadcast();
    let (id, _) = only_send(&drain(&mut bot, T0));
    let at = T0 + 30_000;
    let actions = drain(&mut bot, at);
    assert!(actions.contains(&Action::CloseStream {
        id,
        reason: CloseReason::TimedOut
    }));
    assert_eq!(
        unreachable_notices(&actions),
        [(Endpoint::Live, Unreached::TimedOut, 1, at)]
    );
}

#[test]
fn chat_cancelled_at_the_broadcast_end_is_told_first_at_once_then_counted_every_5_s() {
    let (mut bot, stream) = streaming();
    let drained = drain(&mut bot, T0);
    assert!(sends(&drained)
        .iter()
        .all(|(_, r)| !r.url.ends_with("/chat")));
    let calls: Vec<CallId> = (0..10)
        .map(|i| bot.send_chat(&format!("thanks {i}")).unwrap())
        .collect();
    bot.on_stream_bytes(stream, end_frame("LIVE_ENDED").as_bytes(), T0 + 10)
        .unwrap();
    let actions = drain(&mut bot, T0 + 10);
    let cancelled = actions
        .iter()
        .filter(|a| {
            matches!(a, Action::Done { call, result: CallResult::Failed(CallFailure::Cancelled) }
                if calls.contains(call))
        })
        .count();
    assert_eq!(cancelled, 10);
    let gave_up = |actions: &[Action]| -> Vec<Notice> {
        notices(actions)
            .into_iter()
            .filter(|n| matches!(n, Notice::GaveUp { .. }))
            .cloned()
            .collect()
    };
    let first = Notice::GaveUp {
        endpoint: Endpoint::Chat,
        reason: GiveUpReason::Cancelled,
        count: 1,
    };
    assert_eq!(gave_up(&actions), std::slice::from_ref(&first));
    assert!(first.is_warning());
    assert_eq!(
        first.to_string(),
        "gave up 1 chat message: cancelled (its broadcast ended, or the bot stopped)"
    );
    // The rest come in one notice within 5 s: the deadline is in the Wait.
    let at = wait_until(&actions).unwrap();
    assert!(at <= T0 + 10 + 5_000, "{at}");
    let mut now = at;
    let mut later = Vec::new();
    while now <= T0 + 10 + 5_000 {
        let actions = drain(&mut bot, now);
        later.extend(gave_up(&actions));
        match wait_until(&actions) {
            Some(next) => now = next,
            None => break,
        }
    }
    assert_eq!(
        later,
        [Notice::GaveUp {
            endpoint: Endpoint::Chat,
            reason: GiveUpReason::Cancelled,
            count: 9,
        }]
    );
    let counters = bot.status(now).counters;
    assert_eq!(counters.gave_up_cancelled, 10);
    assert_eq!(counters.chats_failed, 10);
}

#[test]
fn a_daily_quota_block_is_told_once_with_its_reset_and_its_calls_are_given_up() {
    let (mut bot, _) = authorized("live.read fans.read", false);
    bot.fetch_fans();
    let (id, _) = only_send(&drain(&mut bot, T0));
    let headers = [
        ("Retry-After", "3600"),
        ("x-ratelimit-daily-scope", "fans.read"),
    ];
    bot.on_response(id, 429, headers, b"", T0).unwrap();
    let actions = drain(&mut bot, T0);
    let reached = Notice::DailyQuotaReached {
        scope: Some(Permission::FansRead),
        until_ms: T0 + 3_600_000,
    };
    assert_eq!(
        notices(&actions)
            .into_iter()
            .filter(|n| matches!(n, Notice::DailyQuotaReached { .. }))
            .collect::<Vec<_>>(),
        [&reached]
    );
    assert!(reached.to_string().contains("fans.read"), "{reached}");
    assert!(reached.to_string().contains("GMT"), "{reached}");
    assert!(notices(&actions).contains(&&Notice::GaveUp {
        endpoint: Endpoint::Fans,
        reason: GiveUpReason::QuotaBlocked,
        count: 1
    }));
    // More calls held back: no second quota notice, counted gave-ups.
    for _ in 0..3 {
        bot.fetch_fans();
    }
    let actions = drain(&mut bot, T0 + 1);
    assert!(!notices(&actions)
        .iter()
        .any(|n| matches!(n, Notice::DailyQuotaReached { .. })));
    assert_eq!(bot.status(T0 + 1).counters.gave_up_quota_blocked, 4);
    // What another bot of the app learned is told too, once.
    let shared: crate::proto::quota::DailyQuota = serde_json::from_str(&format!(
        r#"{{"blocks":[{{"scope":null,"untilMs":{}}},{{"scope":"fans.read","untilMs":{}}}]}}"#,
        T0 + 7_200_000,
        T0 + 3_600_000
    ))
    .unwrap();
    bot.share_daily_quota(&shared, T0 + 2);
    let actions = drain(&mut bot, T0 + 2);
    assert_eq!(
        notices(&actions),
        [&Notice::DailyQuotaReached {
            scope: None,
            until_ms: T0 + 7_200_000
        }]
    );
    bot.share_daily_quota(&shared, T0 + 3);
    assert!(notices(&drain(&mut bot, T0 + 3)).is_empty());
}

/// A bot resuming from a saved pair, with the credentials check on.
fn resumed_checked() -> Bot {
    Bot::new(checked_config(), Some(stored_pair(3, "at3")), 42)
}

fn is_check(request: &HttpRequest) -> bool {
    request.url.ends_with("/v1/oauth/revoke")
        && body_text(request) == format!("token={CREDENTIALS_CHECK_TOKEN}")
}

#[test]
fn with_saved_tokens_the_credentials_check_goes_first_and_a_200_carries_on() {
    let mut bot = resumed_checked();
    let actions = drain(&mut bot, T0);
    let Some(Action::Send { id, request, .. }) = actions.first() else {
        panic!("{actions:?}")
    };
    assert!(is_check(request), "{request:?}");
    assert!(request
        .header("authorization")
        .is_some_and(|h| h.starts_with("Basic ")));
    let open = stream_open(&actions).expect("the stream does not wait for the check");
    bot.on_response(*id, 200, NO_HEADERS, b"", T0 + 5).unwrap();
    bot.on_stream_open(open.0, 200, NO_HEADERS, T0 + 5).unwrap();
    let actions = drain(&mut bot, T0 + 5);
    assert!(bot.stop().is_none(), "{actions:?}");
    assert!(
        sends(&actions).iter().all(|(_, r)| !is_check(r)),
        "checked once"
    );
}

#[test]
fn a_wrong_client_secret_with_saved_tokens_stops_at_start() {
    let mut bot = resumed_checked();
    let actions = drain(&mut bot, T0);
    let (id, _) = sends(&actions)
        .into_iter()
        .find(|(_, r)| is_check(r))
        .expect("the check");
    let body = br#"{"error":"invalid_client","error_description":"client authentication failed"}"#;
    bot.on_response(
        id,
        401,
        [("content-type", "application/json")],
        body,
        T0 + 5,
    )
    .unwrap();
    let actions = drain(&mut bot, T0 + 5);
    assert_eq!(actions.last(), Some(&Action::Stopped(Stop::InvalidClient)));
    let open = stream_open(&actions);
    assert!(open.is_none());
    assert!(bot.status(T0 + 5).to_json().contains("invalid_client"));
}

#[test]
fn a_credentials_check_without_an_answer_is_tried_again_a_few_times_then_dropped() {
    let mut bot = Bot::new(
        {
            let mut c = checked_config();
            c.events = false;
            c
        },
        Some(stored_pair(3, "at3")),
        42,
    );
    let mut now = T0;
    let mut checks = 0;
    for _ in 0..20 {
        let actions = drain(&mut bot, now);
        for (id, r) in sends(&actions) {
            assert!(is_check(r), "{r:?}");
            checks += 1;
            if checks % 2 == 0 {
                bot.on_not_sent(id, now).unwrap();
            } else {
                bot.on_transport_error(id, now).unwrap();
            }
        }
        match wait_until(&drain(&mut bot, now)) {
            Some(at) if at < T0 + 10 * MIN => now = at,
            _ => break,
        }
    }
    assert_eq!(checks, 4);
    assert!(bot.stop().is_none());
    // A 503 is tried again too.
    let mut bot = resumed_checked();
    let actions = drain(&mut bot, T0);
    let (id, _) = sends(&actions)
        .into_iter()
        .find(|(_, r)| is_check(r))
        .unwrap();
    bot.on_response(id, 503, NO_HEADERS, b"", T0).unwrap();
    let mut now = T0;
    let again = loop {
        let actions = drain(&mut bot, now);
        if let Some((_, r)) = sends(&actions).into_iter().find(|(_, r)| is_check(r)) {
            break r.clone();
        }
        now = wait_until(&actions).unwrap();
        assert!(now < T0 + MIN, "retried within a minute");
    };
    assert!(is_check(&again));
}

#[test]
fn without_saved_tokens_or_when_switched_off_there_is_no_credentials_check() {
    let mut bot = Bot::new(checked_config(), None, 42);
    assert_eq!(drain(&mut bot, T0), [Action::NeedsAuthorization]);
    bot.authorize("code", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(id, 200, NO_HEADERS, &pair("at1", "rt1", ALL_SCOPES), T0)
        .unwrap();
    assert!(sends(&drain(&mut bot, T0))
        .iter()
        .all(|(_, r)| !is_check(r)));
    let mut bot = Bot::new(config(), Some(stored_pair(3, "at3")), 42);
    assert!(sends(&drain(&mut bot, T0))
        .iter()
        .all(|(_, r)| !is_check(r)));
}

#[test]
fn what_was_given_up_is_all_told_before_the_stop() {
    let (mut bot, _) = authorized("chat.send", false);
    for i in 0..4 {
        bot.send_chat(&format!("thanks {i}")).unwrap();
    }
    bot.shutdown(false);
    let actions = drain(&mut bot, T0);
    assert_eq!(actions.last(), Some(&Action::Stopped(Stop::ShutDown)));
    let told: Vec<&Notice> = notices(&actions)
        .into_iter()
        .filter(|n| matches!(n, Notice::GaveUp { .. }))
        .collect();
    let cancelled = |count| Notice::GaveUp {
        endpoint: Endpoint::Chat,
        reason: GiveUpReason::Cancelled,
        count,
    };
    assert_eq!(told, [&cancelled(1), &cancelled(3)], "{actions:?}");
    assert_eq!(bot.status(T0).counters.gave_up_cancelled, 4);
    assert_eq!(bot.poll(T0), Action::Stopped(Stop::ShutDown));
}

mod drain;
mod replies;

// ---- the off-air wait a host sets, and when the broadcast found started ----

#[test]
fn a_host_spaces_off_air_probes_and_a_shorter_wait_cuts_in() {
    let (mut bot, after) = authorized("events.chat", true);
    let (id, _) = stream_open(&after).unwrap();
    assert_eq!(bot.set_not_on_air_wait(T0, 120_000), 120_000);
    let not_on_air = b"data:{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\"}";
    bot.on_response(id, 404, NO_HEADERS, not_on_air, T0)
        .unwrap();
    let at = wait_until(&drain(&mut bot, T0)).unwrap();
    assert!((T0 + 120_000..=T0 + 240_000).contains(&at), "{}", at - T0);
    assert!(stream_open(&drain(&mut bot, at - 1)).is_none());
    // Asked below the floor: 3 s, and the wait under way is cut to 3–6 s.
    let now = T0 + 10_000;
    assert_eq!(bot.set_not_on_air_wait(now, 1), 3_000);
    let sooner = wait_until(&drain(&mut bot, now)).unwrap();
    assert!(
        (now + 3_000..=now + 6_000).contains(&sooner),
        "{}",
        sooner - now
    );
    assert!(stream_open(&drain(&mut bot, sooner)).is_some());
}

#[test]
fn the_broadcast_start_is_known_once_the_kit_asked_and_forgotten_at_the_end() {
    let (mut bot, stream, after) = kit_streaming(ALL_SCOPES, None);
    assert_eq!(bot.broadcast_started_ms(), None, "not asked yet");
    let (id, _) = only_send(&after);
    let body = br#"{"liveId":42,"title":"t","startedAt":"2024-01-01T00:00:01.5Z","closeAirTime":"2024-01-01T01:00:00Z","listenerCount":2,"totalListenerCount":5,"welcomeMessage":"","isChatFrozen":false,"categories":[],"tags":[]}"#;
    bot.on_response(id, 200, NO_HEADERS, body, T0).unwrap();
    drain(&mut bot, T0);
    assert_eq!(bot.broadcast_started_ms(), Some(1_704_067_201_500));
    bot.on_stream_bytes(stream, end_frame("LIVE_ENDED").as_bytes(), T0)
        .unwrap();
    drain(&mut bot, T0);
    bot.on_stream_closed(stream, T0).unwrap();
    assert_eq!(bot.broadcast_started_ms(), None, "no stream open");
}
