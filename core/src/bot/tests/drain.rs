//! The shutdown drain as actions: which requests are dropped, which are
//! awaited and until when, the last pair and kit state handed out, and
//! `Stopped` last.

use super::*;

/// A bot without the stream, its refresh in flight at `now` and a call
/// sent beside it: (bot, now, refresh, the call's request, the call).
fn refreshing_with_a_call(grace_ms: u64) -> (Bot, u64, RequestId, RequestId, CallId) {
    let mut config = config();
    config.events = false;
    config.shutdown_grace_ms = grace_ms;
    let mut bot = Bot::new(config, None, 42);
    drain(&mut bot, T0);
    bot.authorize("consent-code", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, T0));
    bot.on_response(id, 200, NO_HEADERS, &pair("at1", "rt1", ALL_SCOPES), T0)
        .unwrap();
    drain(&mut bot, T0);
    let now = T0 + 50 * MIN;
    let call = bot.fetch_fans();
    let actions = drain(&mut bot, now);
    let sent = sends(&actions);
    let refresh = sent
        .iter()
        .find(|(_, r)| r.url.ends_with("/v1/oauth/token"))
        .map(|(id, _)| *id)
        .unwrap_or_else(|| panic!("the refresh goes: {actions:?}"));
    let fans = sent
        .iter()
        .find(|(_, r)| r.url.contains("/fans"))
        .map(|(id, _)| *id)
        .unwrap_or_else(|| panic!("the call goes: {actions:?}"));
    (bot, now, refresh, fans, call)
}

fn stopped_at(actions: &[Action]) -> Option<usize> {
    actions.iter().position(|a| matches!(a, Action::Stopped(_)))
}

#[test]
fn a_shutdown_drops_a_call_in_flight_and_awaits_the_refresh_then_stops_last() {
    let (mut bot, now, refresh, fans, call) = refreshing_with_a_call(SHUTDOWN_GRACE_MS);
    bot.shutdown(false);
    let actions = drain(&mut bot, now);
    // The call's request is dropped, and the call answered; the refresh is not.
    assert!(
        actions.contains(&Action::CloseStream {
            id: fans,
            reason: CloseReason::Stopping
        }),
        "{actions:?}"
    );
    assert!(!actions.contains(&Action::CloseStream {
        id: refresh,
        reason: CloseReason::Stopping
    }));
    assert!(actions.contains(&Action::Done {
        call,
        result: CallResult::Failed(CallFailure::Cancelled)
    }));
    // Not stopped yet: it waits for the refresh, at most the grace.
    assert_eq!(stopped_at(&actions), None, "{actions:?}");
    assert_eq!(
        actions.last(),
        Some(&Action::Wait {
            until_ms: Some(now + SHUTDOWN_GRACE_MS)
        })
    );
    // Polled early, it still waits; the dropped call's late answer is ignored.
    assert_eq!(
        drain(&mut bot, now + 1_000),
        [Action::Wait {
            until_ms: Some(now + SHUTDOWN_GRACE_MS)
        }]
    );
    assert_eq!(
        bot.on_response(fans, 200, NO_HEADERS, b"{}", now + 1_000),
        Ok(())
    );
    // The new pair is handed out to be saved, then the stop, for good.
    bot.on_response(
        refresh,
        200,
        NO_HEADERS,
        &pair("at2", "rt2", ALL_SCOPES),
        now + 2_000,
    )
    .unwrap();
    let actions = drain(&mut bot, now + 2_000);
    let Some(Action::PersistTokens(tokens)) = actions.first() else {
        panic!("{actions:?}")
    };
    assert_eq!(tokens.access_token().expose(), "at2");
    assert_eq!(actions.last(), Some(&Action::Stopped(Stop::ShutDown)));
    assert!(sends(&actions).is_empty(), "{actions:?}");
    assert_eq!(
        drain(&mut bot, now + 99 * MIN),
        [Action::Stopped(Stop::ShutDown)]
    );
}

#[test]
fn a_refresh_still_unanswered_when_the_grace_is_over_is_dropped_and_the_bot_stops() {
    let (mut bot, now, refresh, _, _) = refreshing_with_a_call(5_000);
    bot.shutdown(false);
    // The grace counts from the first poll after the stop.
    let later = now + 2_000;
    assert_eq!(wait_until(&drain(&mut bot, later)), Some(later + 5_000));
    assert_eq!(
        drain(&mut bot, later + 5_000),
        [
            Action::CloseStream {
                id: refresh,
                reason: CloseReason::Stopping
            },
            Action::Stopped(Stop::ShutDown)
        ]
    );
    // A late answer changes nothing: no pair is handed out after the stop.
    bot.on_response(
        refresh,
        200,
        NO_HEADERS,
        &pair("at2", "rt2", ALL_SCOPES),
        later + 6_000,
    )
    .unwrap();
    assert_eq!(
        drain(&mut bot, later + 6_000),
        [Action::Stopped(Stop::ShutDown)]
    );
}

#[test]
fn a_request_past_its_own_deadline_during_the_drain_times_out_first() {
    let (mut bot, now, refresh, _, _) = refreshing_with_a_call(3 * MIN);
    bot.shutdown(false);
    // The refresh's own timeout (30 s from when it was sent) comes before
    // the grace (3 minutes).
    assert_eq!(wait_until(&drain(&mut bot, now)), Some(now + 30_000));
    let actions = drain(&mut bot, now + 30_000);
    assert!(
        actions.contains(&Action::CloseStream {
            id: refresh,
            reason: CloseReason::TimedOut
        }),
        "{actions:?}"
    );
    assert_eq!(actions.last(), Some(&Action::Stopped(Stop::ShutDown)));
}

#[test]
fn with_revoke_the_credentials_check_is_dropped_and_the_revocation_awaited() {
    let mut bot = Bot::new(checked_config(), Some(stored_pair(3, "at3")), 42);
    let actions = drain(&mut bot, T0);
    let (check, stream) = match (sends(&actions).first(), stream_open(&actions)) {
        (Some((id, request)), Some((stream, _))) if is_check(request) => (*id, stream),
        _ => panic!("{actions:?}"),
    };
    bot.shutdown(true);
    let actions = drain(&mut bot, T0 + 10);
    assert!(actions.contains(&Action::CloseStream {
        id: check,
        reason: CloseReason::Stopping
    }));
    assert!(actions.contains(&Action::CloseStream {
        id: stream,
        reason: CloseReason::Stopping
    }));
    let (revoke, request) = only_send(&actions);
    assert!(body_text(&request).contains("token=rt-at3"));
    assert_eq!(wait_until(&actions), Some(T0 + 10 + SHUTDOWN_GRACE_MS));
    assert_eq!(stopped_at(&actions), None);
    bot.on_response(revoke, 200, NO_HEADERS, b"", T0 + 50)
        .unwrap();
    assert_eq!(drain(&mut bot, T0 + 50), [Action::Stopped(Stop::ShutDown)]);
}

#[test]
fn a_revocation_asked_after_the_stop_gets_its_own_grace() {
    let (mut bot, _) = streaming();
    bot.shutdown(false);
    assert_eq!(
        drain(&mut bot, T0).last(),
        Some(&Action::Stopped(Stop::ShutDown))
    );
    bot.shutdown(true);
    let actions = drain(&mut bot, T0 + 100);
    let (revoke, request) = only_send(&actions);
    assert!(request.url.ends_with("/v1/oauth/revoke"));
    assert_eq!(
        actions.last(),
        Some(&Action::Wait {
            until_ms: Some(T0 + 100 + SHUTDOWN_GRACE_MS)
        })
    );
    bot.on_response(revoke, 200, NO_HEADERS, b"", T0 + 200)
        .unwrap();
    assert_eq!(drain(&mut bot, T0 + 200), [Action::Stopped(Stop::ShutDown)]);
    // Asked again: nothing left to revoke, nothing sent.
    bot.shutdown(true);
    assert_eq!(drain(&mut bot, T0 + 300), [Action::Stopped(Stop::ShutDown)]);
}

#[test]
fn the_kit_state_with_everything_read_is_handed_out_before_the_stop() {
    let (mut bot, stream, _) = kit_streaming("events.chat events.presence chat.send", None);
    // Bytes the driver handed over before shutting down: counted, saved.
    bot.on_stream_bytes(stream, join_frame("1-0", "u1").as_bytes(), T0 + 5)
        .unwrap();
    bot.shutdown(false);
    let actions = drain(&mut bot, T0 + 5);
    let close = actions.iter().position(|a| {
        *a == Action::CloseStream {
            id: stream,
            reason: CloseReason::Stopping,
        }
    });
    let state = actions
        .iter()
        .rposition(|a| matches!(a, Action::PersistState(_)));
    let stopped = stopped_at(&actions);
    assert!(close.is_some() && state.is_some(), "{actions:?}");
    assert!(state < stopped, "the state before the stop: {actions:?}");
    assert_eq!(stopped, Some(actions.len() - 1), "stopped last, no wait");
    let Some(Action::PersistState(saved)) = state.map(|i| &actions[i]) else {
        unreachable!()
    };
    assert!(saved.to_json().contains("u1"), "{}", saved.to_json());
}

#[test]
fn a_stop_for_consent_drains_nothing_and_a_shutdown_then_does() {
    let (mut bot, now, refresh, fans, call) = refreshing_with_a_call(SHUTDOWN_GRACE_MS);
    // The refresh is refused: the bot waits for consent, the call stays queued.
    bot.on_response(
        refresh,
        400,
        NO_HEADERS,
        br#"{"error":"invalid_grant"}"#,
        now,
    )
    .unwrap();
    let actions = drain(&mut bot, now);
    assert!(matches!(
        actions.last(),
        Some(Action::Stopped(Stop::Reauthorize(_)))
    ));
    assert!(!actions.contains(&Action::CloseStream {
        id: fans,
        reason: CloseReason::Stopping
    }));
    // A shutdown now: the call in flight is dropped and answered, and the
    // bot stops for good at once (nothing worth waiting for).
    bot.shutdown(false);
    let actions = drain(&mut bot, now + 1);
    assert!(
        actions.contains(&Action::CloseStream {
            id: fans,
            reason: CloseReason::Stopping
        }),
        "{actions:?}"
    );
    assert!(actions.contains(&Action::Done {
        call,
        result: CallResult::Failed(CallFailure::Cancelled)
    }));
    assert_eq!(actions.last(), Some(&Action::Stopped(Stop::ShutDown)));
}
