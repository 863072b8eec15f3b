//! Typed decoding: one test per rule of spec 2.6 / 6, snapshots, properties.

use super::*;
use proptest::prelude::*;

const SERVICE: &[u8] = include_bytes!("../../../fixtures/streams/service.sse");
const BROKEN: &[u8] = include_bytes!("../../../fixtures/streams/broken.sse");

fn decode_all(chunks: &[&[u8]]) -> Vec<Item> {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        let mut rest = *chunk;
        while let Some(item) = decoder.next_item(&mut rest) {
            out.push(item);
        }
    }
    out.extend(decoder.finish());
    out
}

fn one(name: &str, data: &str) -> Item {
    let input = format!("id:1732250000000-3\nevent:{name}\ndata:{data}\n\n");
    let mut items = decode_all(&[input.as_bytes()]);
    assert_eq!(items.len(), 1, "{items:?}");
    items.remove(0)
}

fn event(name: &str, data: &str) -> Event {
    match one(name, data) {
        Item::Event { event, .. } => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

fn error(name: &str, data: &str) -> DecodeError {
    match one(name, data) {
        Item::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

const USER: &str = r#"{"id":"u1","nickname":"Mina"}"#;

#[test]
fn chat_fields() {
    let data = format!(
        r#"{{"user":{USER},"isDj":true,"message":"hi","sentTime":"2024-11-22T04:33:20Z"}}"#
    );
    let Event::Chat(chat) = event("chat", &data) else {
        panic!()
    };
    assert_eq!(chat.user.id, "u1");
    assert_eq!(chat.user.nickname.as_deref(), Some("Mina"));
    assert!(chat.is_dj);
    assert_eq!(chat.message, "hi");
    assert_eq!(chat.sent_time.unix_ms(), Some(1_732_250_000_000));
}

#[test]
fn chat_message_that_looks_like_json_stays_a_string() {
    let data =
        format!(r#"{{"user":{USER},"isDj":false,"message":"{{\"a\":[1,2]}}","sentTime":"t"}}"#);
    let Event::Chat(chat) = event("chat", &data) else {
        panic!()
    };
    assert_eq!(chat.message, r#"{"a":[1,2]}"#);
}

#[test]
fn chat_message_that_is_not_a_string_is_invalid() {
    let data = format!(r#"{{"user":{USER},"isDj":false,"message":{{"a":1}},"sentTime":"t"}}"#);
    assert_eq!(error("chat", &data).kind, DecodeErrorKind::InvalidEvent);
}

#[test]
fn nickname_null_or_absent_is_none() {
    for user in [r#"{"id":"u1","nickname":null}"#, r#"{"id":"u1"}"#] {
        let data = format!(r#"{{"user":{user},"isDj":false,"message":"m","sentTime":"t"}}"#);
        assert_eq!(
            event("chat", &data).user().and_then(|u| u.nickname.clone()),
            None
        );
    }
}

#[test]
fn user_id_is_required_and_not_null() {
    for user in [
        r#"{"nickname":"x"}"#,
        r#"{"id":null,"nickname":"x"}"#,
        "null",
    ] {
        let data = format!(r#"{{"user":{user},"isDj":false,"message":"m","sentTime":"t"}}"#);
        assert_eq!(
            error("chat", &data).kind,
            DecodeErrorKind::InvalidEvent,
            "{user}"
        );
    }
}

#[test]
fn presence_nullable_fields() {
    let data = format!(
        r#"{{"user":{USER},"type":"JOIN","fanRank":null,"isManager":false,"favoriteTemperature":null,"time":"t"}}"#
    );
    let Event::Presence(p) = event("presence", &data) else {
        panic!()
    };
    assert_eq!(p.kind, PresenceType::Join);
    assert_eq!((p.fan_rank, p.favorite_temperature), (None, None));
    let data = format!(
        r#"{{"user":{USER},"type":"LEAVE","fanRank":3,"isManager":true,"favoriteTemperature":36.5,"time":"t"}}"#
    );
    let Event::Presence(p) = event("presence", &data) else {
        panic!()
    };
    assert_eq!(p.kind, PresenceType::Other("LEAVE".into()));
    assert_eq!(
        (p.fan_rank, p.favorite_temperature, p.is_manager),
        (Some(3), Some(36.5), true)
    );
}

#[test]
fn favorite_temperature_may_be_whole_or_fractional() {
    for (wire, value) in [("40", 40.0), ("-1.25", -1.25), ("1e2", 100.0)] {
        let data = format!(
            r#"{{"user":{USER},"type":"JOIN","isManager":false,"favoriteTemperature":{wire},"time":"t"}}"#
        );
        let Event::Presence(p) = event("presence", &data) else {
            panic!()
        };
        assert_eq!(p.favorite_temperature, Some(value));
    }
}

#[test]
fn like_paid_and_free() {
    let data = format!(
        r#"{{"user":{USER},"type":"PAID","totalAmount":60,"amount":10,"extraAmount":5,"combo":4,"time":"t"}}"#
    );
    let Event::Like(like) = event("like", &data) else {
        panic!()
    };
    assert_eq!(like.kind, LikeType::Paid);
    assert_eq!(
        (
            like.total_amount,
            like.amount,
            like.extra_amount,
            like.combo
        ),
        (60, 10, 5, Some(4))
    );
    let data = format!(
        r#"{{"user":{USER},"type":"FREE","totalAmount":1,"amount":1,"extraAmount":0,"combo":null,"time":"t"}}"#
    );
    let Event::Like(like) = event("like", &data) else {
        panic!()
    };
    assert_eq!((like.kind, like.combo), (LikeType::Free, None));
}

#[test]
fn amounts_are_integers() {
    let data = format!(
        r#"{{"user":{USER},"type":"PAID","totalAmount":1.5,"amount":1,"extraAmount":0,"combo":1,"time":"t"}}"#
    );
    assert_eq!(error("like", &data).kind, DecodeErrorKind::InvalidEvent);
    let data = format!(r#"{{"user":{USER},"amount":-1,"message":null,"time":"t"}}"#);
    assert_eq!(error("donation", &data).kind, DecodeErrorKind::InvalidEvent);
    let data = format!(r#"{{"user":{USER},"amount":18446744073709551615,"time":"t"}}"#);
    let Event::Donation(d) = event("donation", &data) else {
        panic!()
    };
    assert_eq!(d.amount, u64::MAX);
}

#[test]
fn donation_message_null_absent_or_text() {
    for (message, expected) in [
        (r#","message":null"#, None),
        ("", None),
        (r#","message":"gg""#, Some("gg")),
    ] {
        let data = format!(r#"{{"user":{USER},"amount":500{message},"time":"t"}}"#);
        let Event::Donation(d) = event("donation", &data) else {
            panic!()
        };
        assert_eq!(d.message.as_deref(), expected);
        assert_eq!(d.amount, 500);
    }
}

#[test]
fn end_reasons() {
    for (data, reason) in [
        (r#"{"reason":"LIVE_ENDED"}"#, EndReason::LiveEnded),
        (r#"{"reason":"TOKEN_EXPIRED"}"#, EndReason::TokenExpired),
        (r#"{"reason":"RECONNECT"}"#, EndReason::Reconnect),
        (
            r#"{"reason":"MAINTENANCE"}"#,
            EndReason::Other("MAINTENANCE".into()),
        ),
        ("LIVE_ENDED", EndReason::LiveEnded),
        (r#""RECONNECT""#, EndReason::Reconnect),
        (" TOKEN_EXPIRED ", EndReason::TokenExpired),
    ] {
        assert_eq!(event("end", data), Event::End(End { reason }), "{data}");
    }
    assert_eq!(error("end", "{}").kind, DecodeErrorKind::InvalidEvent);
    assert_eq!(error("end", "").kind, DecodeErrorKind::InvalidJson);
    assert_eq!(
        error("end", "{\"reason\":").kind,
        DecodeErrorKind::InvalidJson
    );
}

#[test]
fn unknown_fields_and_is_dj_outside_chat_are_ignored() {
    let data = r#"{"user":{"id":"u1","nickname":"x","level":9},"isDj":true,"amount":5,"time":"t","new":[1]}"#;
    let Event::Donation(d) = event("donation", data) else {
        panic!()
    };
    assert_eq!(d.amount, 5);
    let json = serde_json::to_value(Event::Donation(d)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"user":{"id":"u1","nickname":"x"},"amount":5,"message":null,"time":"t"})
    );
}

#[test]
fn unknown_event_name_is_kept_raw() {
    assert_eq!(
        one("poll", r#"{"q":1}"#),
        Item::Unknown {
            event: "poll".into(),
            id: Some(FrameId::new("1732250000000-3")),
            data: r#"{"q":1}"#.into()
        }
    );
}

#[test]
fn bad_json_and_bad_shape_are_told_apart() {
    let e = error("chat", "{not json");
    assert_eq!(
        (e.kind, e.raw.as_str()),
        (DecodeErrorKind::InvalidJson, "{not json")
    );
    assert_eq!(e.event.as_deref(), Some("chat"));
    assert_eq!(
        e.id.as_ref().and_then(FrameId::parts),
        Some((1_732_250_000_000, 3))
    );
    assert_eq!(
        error("chat", "{} trailing").kind,
        DecodeErrorKind::InvalidJson
    );
    assert_eq!(error("chat", "[1,2]").kind, DecodeErrorKind::InvalidEvent);
    assert_eq!(
        error("chat", "\"text\"").kind,
        DecodeErrorKind::InvalidEvent
    );
    assert_eq!(error("chat", "{}").kind, DecodeErrorKind::InvalidEvent);
    let missing = format!(r#"{{"user":{USER},"message":"m","sentTime":"t"}}"#);
    let e = error("chat", &missing);
    assert_eq!(e.kind, DecodeErrorKind::InvalidEvent);
    assert!(e.message.contains("isDj"), "{}", e.message);
    let null_required = format!(r#"{{"user":{USER},"isDj":null,"message":"m","sentTime":"t"}}"#);
    assert_eq!(
        error("chat", &null_required).kind,
        DecodeErrorKind::InvalidEvent
    );
}

#[test]
fn heartbeat_is_recognised_other_comments_kept() {
    let items = decode_all(&[b":heartbeat\n: heartbeat\n:heartbeats\n:\n"]);
    assert_eq!(
        items,
        [
            Item::Heartbeat,
            Item::Heartbeat,
            Item::Comment("heartbeats".into()),
            Item::Comment(String::new())
        ]
    );
}

#[test]
fn the_stream_goes_on_after_bad_frames() {
    let items = decode_all(&[BROKEN]);
    let errors = items.iter().filter(|i| matches!(i, Item::Error(_))).count();
    let events = items
        .iter()
        .filter(|i| matches!(i, Item::Event { .. }))
        .count();
    assert_eq!((errors, events), (4, 6));
    assert!(matches!(
        items.last(),
        Some(Item::Error(DecodeError {
            kind: DecodeErrorKind::IncompleteFrame,
            ..
        }))
    ));
}

#[test]
fn decode_lines_are_the_documented_shapes() {
    let line = |item: &Item| crate::json::ItemJson(item).to_line();
    assert_eq!(line(&Item::Heartbeat), r#"{"type":"heartbeat"}"#);
    assert_eq!(
        line(&Item::Comment(" x".into())),
        r#"{"type":"comment","text":" x"}"#
    );
    assert_eq!(line(&Item::Retry(3000)), r#"{"type":"retry","ms":3000}"#);
    assert_eq!(
        line(&decode_all(&[b"event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n"])[0]),
        r#"{"type":"event","event":"end","id":null,"data":{"reason":"LIVE_ENDED"}}"#
    );
    assert_eq!(
        line(&one("poll", "raw")),
        r#"{"type":"unknown","event":"poll","id":"1732250000000-3","data":"raw"}"#
    );
}

#[test]
fn snapshot_of_typed_values() {
    insta::assert_debug_snapshot!(decode_all(&[SERVICE]));
}

#[test]
fn snapshot_of_decode_lines() {
    let items = decode_all(&[SERVICE, BROKEN]);
    let lines: Vec<_> = items
        .iter()
        .map(|i| crate::json::ItemJson(i).to_line())
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn chunking_never_changes_typed_items(points in proptest::collection::vec(any::<usize>(), 0..40)) {
        let input = [SERVICE, BROKEN].concat();
        let mut cuts: Vec<usize> = points.iter().map(|p| p % (input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts {
            chunks.push(&input[start..cut]);
            start = cut;
        }
        chunks.push(&input[start..]);
        prop_assert_eq!(decode_all(&chunks), decode_all(&[&input]));
    }

    #[test]
    fn any_data_decodes_without_panic(name in prop_oneof![
        Just("chat"), Just("presence"), Just("like"), Just("donation"), Just("end"), Just("x")
    ], data in ".{0,200}") {
        let _ = Event::decode(name, &data);
    }
}

#[test]
fn a_payload_is_an_object_never_an_array_of_its_fields() {
    // serde's derived readers take a struct as an array of its fields in
    // order; the service sends objects, so an array is the wrong shape.
    let chat_as_array = r#"[{"id":"u","nickname":null},false,"hi","2026-01-01T00:00:00Z"]"#;
    let e = error("chat", chat_as_array);
    assert_eq!(e.kind, DecodeErrorKind::InvalidEvent, "{}", e.message);
    assert!(
        e.message
            .contains("invalid type: sequence, expected struct Chat"),
        "{}",
        e.message
    );
    let user_as_array =
        r#"{"user":["u",null],"isDj":false,"message":"hi","sentTime":"2026-01-01T00:00:00Z"}"#;
    assert_eq!(
        error("chat", user_as_array).kind,
        DecodeErrorKind::InvalidEvent
    );
    // The fuzz target's input: JSON, one element too many; the wrong shape.
    let fuzzed = "[[\"\",\n \"\",\n \"\"\n]\n]";
    assert_eq!(
        Event::decode("like", fuzzed).map_err(|e| e.0),
        Err(DecodeErrorKind::InvalidEvent)
    );
    assert_eq!(
        error("end", r#"["LIVE_ENDED"]"#).kind,
        DecodeErrorKind::InvalidEvent
    );
    for name in ["presence", "like", "donation"] {
        assert_eq!(
            error(name, "[]").kind,
            DecodeErrorKind::InvalidEvent,
            "{name}"
        );
    }
    // An unknown field may hold an array.
    let extra = r#"{"user":{"id":"u","nickname":"n","badges":[1,2]},"amount":5,"message":null,"time":"t","emotes":[["a"]]}"#;
    assert!(matches!(event("donation", extra), Event::Donation(_)));
}
