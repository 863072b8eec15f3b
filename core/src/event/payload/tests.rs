//! The payload reader: one test per rule, and properties over generated
//! payloads, each answer checked against serde_json (the fuzz body
//! `crate::fuzz::event_json`: template = reader, `invalid_json` exactly when
//! serde_json refuses the text, every field read as serde_json reads it).

use super::*;
use crate::event::DecodeErrorKind;
use proptest::prelude::*;

/// The reader's answer for a frame; wherever the fast path answers, serde_json
/// answers the same.
fn answer(name: &str, data: &str) -> Result<Option<Event>, (DecodeErrorKind, String)> {
    if let Some(fast) = super::documented(name, data) {
        assert_eq!(super::read(name, data), Ok(Some(fast)), "{name} {data}");
    }
    Event::decode(name, data)
}

/// The event the reader makes of a frame, if any.
fn fast(name: &str, data: &str) -> Option<Event> {
    answer(name, data).ok().flatten()
}

/// The error kind and message for a frame that must not decode.
fn refused(name: &str, data: &str) -> (DecodeErrorKind, String) {
    match answer(name, data) {
        Err(error) => error,
        Ok(event) => panic!("{name} {data}: read as {event:?}"),
    }
}

const USER: &str = r#"{"id":"u1","nickname":"Mina"}"#;

fn chat(message: &str) -> String {
    format!(
        r#"{{"user":{USER},"isDj":false,"message":{message},"sentTime":"2024-11-22T04:33:20.123Z"}}"#
    )
}

#[test]
fn every_event_of_the_fixture_stream_decodes() {
    let stream = include_str!("../../../../fixtures/streams/service.sse");
    let mut seen = 0;
    for frame in stream.split("\n\n") {
        let name = frame.lines().find_map(|l| l.strip_prefix("event:"));
        let data = frame.lines().find_map(|l| l.strip_prefix("data:"));
        if let (Some(name), Some(data)) = (name.map(str::trim), data.map(str::trim_start)) {
            if ["chat", "presence", "like", "donation"].contains(&name) {
                assert!(fast(name, data).is_some(), "{name} {data}");
                seen += 1;
            }
        }
    }
    assert!(seen >= 5, "{seen}");
}

#[test]
fn each_event_in_its_documented_form() {
    let user = r#"{"id":"Qm9i","nickname":"별빛소녀🌟"}"#;
    let time = r#""2024-11-22T04:33:20.123Z""#;
    let cases = [
        (
            "chat",
            format!(r#"{{"user":{user},"isDj":true,"message":"안녕 ❤️","sentTime":{time}}}"#),
        ),
        (
            "presence",
            format!(
                r#"{{"user":{user},"type":"JOIN","fanRank":3,"isManager":false,"favoriteTemperature":45.3,"time":{time}}}"#
            ),
        ),
        (
            "presence",
            format!(
                r#"{{"user":{user},"type":"JOIN","fanRank":null,"isManager":true,"favoriteTemperature":null,"time":{time}}}"#
            ),
        ),
        (
            "like",
            format!(
                r#"{{"user":{user},"type":"PAID","totalAmount":45,"amount":10,"extraAmount":5,"combo":3,"time":{time}}}"#
            ),
        ),
        (
            "like",
            format!(
                r#"{{"user":{user},"type":"FREE","totalAmount":1,"amount":1,"extraAmount":0,"combo":null,"time":{time}}}"#
            ),
        ),
        (
            "donation",
            format!(r#"{{"user":{user},"amount":1000,"message":null,"time":{time}}}"#),
        ),
        (
            "donation",
            format!(
                r#"{{"user":{{"id":"x","nickname":null}},"amount":0,"message":"감사","time":{time}}}"#
            ),
        ),
    ];
    for (name, data) in cases {
        assert!(fast(name, &data).is_some(), "{data}");
    }
}

#[test]
fn any_key_order_whitespace_and_absent_optional_fields() {
    let data = " {\n\t\"sentTime\" : \"t\" , \"message\":\"m\",\"isDj\":false,\r\n \"user\":{\"nickname\":\"n\",\"id\":\"i\"} } ";
    assert!(fast("chat", data).is_some());
    let data = r#"{"user":{"id":"i"},"amount":5,"time":"t"}"#;
    let Some(Event::Donation(d)) = fast("donation", data) else {
        panic!()
    };
    assert_eq!((d.user.nickname, d.message), (None, None));
}

#[test]
fn escapes_decode() {
    for message in [
        r#""a\"b\\c\/d\b\f\n\r\t""#,
        r#""\u0041\u00e9\uD83C\uDFA7 end""#,
        r#""{\"looks\":\"like json\"}""#,
        r#""\u0000""#,
    ] {
        assert!(fast("chat", &chat(message)).is_some(), "{message}");
    }
}

#[test]
fn unknown_scalar_fields_are_skipped() {
    let data = r#"{"user":{"id":"i","badge":"gold","level":3},"isDj":false,"extra":null,"score":-1.5,"flag":true,"message":"m","sentTime":"t"}"#;
    assert!(fast("chat", data).is_some());
}

#[test]
fn unknown_nested_fields_are_skipped() {
    let data = r#"{"user":{"id":"i"},"isDj":false,"meta":{"a":[1,{"b":null}],"c":"\uD83C"},"n":-1.5e-3,"message":"m","sentTime":"t"}"#;
    assert!(fast("chat", data).is_some());
}

#[test]
fn unknown_fields_nest_up_to_the_reader_s_bound() {
    let field = |depth: usize| {
        let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        format!(
            r#"{{"user":{{"id":"i"}},"isDj":false,"meta":{deep},"message":"m","sentTime":"t"}}"#
        )
    };
    // serde_json skips an unknown value without recursion: any depth is
    // read in bounded stack.
    assert!(fast("chat", &field(40)).is_some());
    assert!(fast("chat", &field(100_000)).is_some());
}

#[test]
fn duplicate_keys_are_refused() {
    let data = r#"{"user":{"id":"i"},"isDj":false,"isDj":true,"message":"m","sentTime":"t"}"#;
    assert_eq!(
        refused("chat", data),
        (
            DecodeErrorKind::InvalidEvent,
            "duplicate field `isDj` at byte 38".to_owned()
        )
    );
}

#[test]
fn lone_surrogates_are_refused_in_read_strings() {
    for message in [r#""\uD83C""#, r#""\uDFA7""#, r#""\uD83Cx""#] {
        let (kind, text) = refused("chat", &chat(message));
        assert_eq!(kind, DecodeErrorKind::InvalidJson, "{message}: {text}");
    }
}

#[test]
fn control_characters_in_strings_are_not_json() {
    assert_eq!(
        refused("chat", &chat("\"a\tb\"")).0,
        DecodeErrorKind::InvalidJson
    );
}

#[test]
fn amounts_are_plain_whole_numbers() {
    for (amount, kind) in [
        ("01", DecodeErrorKind::InvalidJson),
        ("+1", DecodeErrorKind::InvalidJson),
        ("-1", DecodeErrorKind::InvalidEvent),
        ("-0", DecodeErrorKind::InvalidEvent),
        ("1.0", DecodeErrorKind::InvalidEvent),
        ("1e3", DecodeErrorKind::InvalidEvent),
        ("18446744073709551616", DecodeErrorKind::InvalidEvent),
        ("\"5\"", DecodeErrorKind::InvalidEvent),
    ] {
        let data = format!(r#"{{"user":{USER},"amount":{amount},"message":null,"time":"t"}}"#);
        assert_eq!(refused("donation", &data).0, kind, "{amount}");
    }
    let data =
        format!(r#"{{"user":{USER},"amount":18446744073709551615,"message":null,"time":"t"}}"#);
    assert!(fast("donation", &data).is_some());
}

#[test]
fn temperatures_are_the_nearest_f64() {
    for t in [
        "0",
        "-0",
        "45",
        "45.3",
        "99.99",
        "0.1",
        "123456789012345",
        "1.23456789012345",
        "-7.25",
        "1e2",
        "1234567890123456",
        "0.30000000000000004",
        "2.2250738585072011e-308",
        "1.7976931348623157e308",
    ] {
        let data = format!(
            r#"{{"user":{USER},"type":"JOIN","isManager":false,"favoriteTemperature":{t},"time":"t"}}"#
        );
        let Some(Event::Presence(p)) = fast("presence", &data) else {
            panic!("{t}")
        };
        let exact: f64 = t.parse().unwrap();
        assert_eq!(
            p.favorite_temperature.map(f64::to_bits),
            Some(exact.to_bits()),
            "{t}"
        );
    }
    for (t, kind) in [
        ("01.5", DecodeErrorKind::InvalidJson),
        ("1.", DecodeErrorKind::InvalidJson),
        (".5", DecodeErrorKind::InvalidJson),
        ("1e400", DecodeErrorKind::InvalidJson),
    ] {
        let data = format!(
            r#"{{"user":{USER},"type":"JOIN","isManager":false,"favoriteTemperature":{t},"time":"t"}}"#
        );
        assert_eq!(refused("presence", &data).0, kind, "{t}");
    }
}

#[test]
fn bad_json_and_bad_events_are_told_apart() {
    for data in [
        "",
        "{",
        r#"{"user":{"id":"i"},"isDj":false,"message":"m","sentTime":"t",}"#,
        r#"{"user":{"id":"i"},"isDj":false,"message":"m","sentTime":"t"} x"#,
        r#"{"user":{"id":"i"},"isDj":falsey,"message":"m","sentTime":"t"}"#,
        r#"{"user":{"id":null},"isDj":"no","message":"m","sentTime":"t"} x"#,
    ] {
        assert_eq!(
            refused("chat", data).0,
            DecodeErrorKind::InvalidJson,
            "{data}"
        );
    }
    for (data, message) in [
        ("null", "invalid type: null, expected struct Chat at byte 4"),
        (
            r#"{"user":{"id":"i"},"isDj":false,"message":"m"}"#,
            "missing field `sentTime` at byte 46",
        ),
        (
            r#"{"user":{"id":null},"isDj":false,"message":"m","sentTime":"t"}"#,
            "invalid type: null, expected a string at byte 18",
        ),
        (
            // The value is not quoted: in a token response it could be a secret.
            r#"{"user":{"id":"i"},"isDj":"no","message":"m","sentTime":"t"}"#,
            "invalid type: string, expected a boolean at byte 30",
        ),
        (
            r#"{"user":{"id":"i"},"isDj":false,"message":null,"sentTime":"t"}"#,
            "invalid type: null, expected a string at byte 46",
        ),
    ] {
        assert_eq!(
            refused("chat", data),
            (DecodeErrorKind::InvalidEvent, message.to_owned()),
            "{data}"
        );
    }
    // An escaped key is the same key.
    let data = r#"{"us\u0065r":{"id":"i"},"isDj":false,"message":"m","sentTime":"t"}"#;
    assert!(fast("chat", data).is_some());
    assert!(super::documented("end", r#"{"reason":"RECONNECT"}"#).is_none());
    assert!(fast("end", r#"{"reason":"RECONNECT"}"#).is_some());
    assert_eq!(answer("poll", "{}"), Ok(None));
}

// ---- differential properties ---------------------------------------------------------

fn json_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("a".to_owned()),
        Just("별빛".to_owned()),
        Just("🎧".to_owned()),
        Just("\\\"".to_owned()),
        Just("\\\\".to_owned()),
        Just("\\/".to_owned()),
        Just("\\n".to_owned()),
        Just("\\u0041".to_owned()),
        Just("\\uD83C\\uDFA7".to_owned()),
        Just("\\uD83C".to_owned()),
        Just("\\uDFA7".to_owned()),
        Just("\\x".to_owned()),
        Just("\\u12".to_owned()),
        Just("\t".to_owned()),
        Just("\u{1}".to_owned()),
        "[ -~]{0,12}".prop_map(|s| s.replace(['"', '\\'], "")),
    ];
    proptest::collection::vec(piece, 0..6).prop_map(|p| format!("\"{}\"", p.concat()))
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..100_000).prop_map(|n| n.to_string()),
        Just("0".to_owned()),
        Just("-0".to_owned()),
        Just("01".to_owned()),
        Just("-5".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("1e2".to_owned()),
        Just("1E+2".to_owned()),
        Just("1.".to_owned()),
        Just("1e400".to_owned()),
        (0u64..100_000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
        (0u64..1_000_000_000_000_000, 0u32..6).prop_map(|(a, k)| {
            let s = a.to_string();
            let k = (k as usize).min(s.len().saturating_sub(1));
            format!("{}.{}", &s[..s.len() - k], &s[s.len() - k..])
                .trim_end_matches('.')
                .to_owned()
        }),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => json_string(),
        4 => number(),
        1 => Just("true".to_owned()),
        1 => Just("false".to_owned()),
        2 => Just("null".to_owned()),
        1 => Just("[1,2]".to_owned()),
        1 => Just("[]".to_owned()),
        1 => Just("[1,]".to_owned()),
        1 => Just("{\"a\":1}".to_owned()),
        1 => Just("{\"a\":[{}],\"b\":\"\\uDFA7\"}".to_owned()),
        1 => Just("{\"a\" 1}".to_owned()),
        1 => Just("tru".to_owned()),
    ]
}

fn user() -> impl Strategy<Value = String> {
    let fields = proptest::collection::vec(
        prop_oneof![
            json_string().prop_map(|v| format!("\"id\":{v}")),
            value().prop_map(|v| format!("\"nickname\":{v}")),
            value().prop_map(|v| format!("\"extra\":{v}")),
        ],
        0..4,
    );
    prop_oneof![
        4 => fields.prop_map(|f| format!("{{{}}}", f.join(","))),
        1 => value(),
    ]
}

/// An object with the event's fields (right and wrong types), unknown and
/// duplicate keys, in any order, with random whitespace and endings.
fn payload(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    let field = prop_oneof![
        8 => (proptest::sample::select(keys), value())
            .prop_map(|(k, v)| format!("\"{k}\":{v}")),
        4 => user().prop_map(|u| format!("\"user\":{u}")),
        1 => value().prop_map(|v| format!("\"unknown\":{v}")),
    ];
    let ws = proptest::sample::select(vec!["", "", "", " ", "\n", "\t "]);
    let end = proptest::sample::select(vec!["", "", "", " ", "x", ",", "}"]);
    (
        proptest::collection::vec((field, ws.clone()), 0..9),
        ws,
        end,
    )
        .prop_map(|(fields, ws, end)| {
            let body: Vec<String> = fields
                .into_iter()
                .map(|(f, w)| format!("{w}{f}{w}"))
                .collect();
            format!("{ws}{{{}}}{end}", body.join(","))
        })
}

/// A well-formed payload with the event's documented fields, shuffled.
fn documented(fields: &'static [(&'static str, &'static str)]) -> impl Strategy<Value = String> {
    Just(fields.to_vec())
        .prop_shuffle()
        .prop_flat_map(|fields| {
            (user(), json_string(), number()).prop_map(move |(user, text, num)| {
                let body: Vec<String> = fields
                    .iter()
                    .map(|(k, kind)| {
                        let v = match *kind {
                            "user" => user.clone(),
                            "text" => text.clone(),
                            "num" => num.clone(),
                            other => other.to_owned(),
                        };
                        format!("\"{k}\":{v}")
                    })
                    .collect();
                format!("{{{}}}", body.join(","))
            })
        })
}

const CHAT_KEYS: &[&str] = &["isDj", "message", "sentTime"];
const PRESENCE_KEYS: &[&str] = &[
    "type",
    "fanRank",
    "isManager",
    "favoriteTemperature",
    "time",
];
const LIKE_KEYS: &[&str] = &[
    "type",
    "totalAmount",
    "amount",
    "extraAmount",
    "combo",
    "time",
];
const DONATION_KEYS: &[&str] = &["amount", "message", "time"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn the_reader_agrees_with_serde_json_on_random_payloads(
        (name, data) in prop_oneof![
            payload(CHAT_KEYS).prop_map(|d| ("chat", d)),
            payload(PRESENCE_KEYS).prop_map(|d| ("presence", d)),
            payload(LIKE_KEYS).prop_map(|d| ("like", d)),
            payload(DONATION_KEYS).prop_map(|d| ("donation", d)),
        ]
    ) {
        fast(name, &data);
    }

    #[test]
    fn the_reader_agrees_with_serde_json_on_well_formed_payloads(
        (name, data) in prop_oneof![
            documented(&[("user", "user"), ("isDj", "false"), ("message", "text"), ("sentTime", "text")])
                .prop_map(|d| ("chat", d)),
            documented(&[("user", "user"), ("type", "\"JOIN\""), ("fanRank", "num"), ("isManager", "true"),
                ("favoriteTemperature", "num"), ("time", "text")]).prop_map(|d| ("presence", d)),
            documented(&[("user", "user"), ("type", "text"), ("totalAmount", "num"), ("amount", "7"),
                ("extraAmount", "0"), ("combo", "null"), ("time", "text")]).prop_map(|d| ("like", d)),
            documented(&[("user", "user"), ("amount", "num"), ("message", "text"), ("time", "text")])
                .prop_map(|d| ("donation", d)),
        ]
    ) {
        fast(name, &data);
    }

    #[test]
    fn arbitrary_text_never_panics(name in prop_oneof![Just("chat"), Just("like")], data in ".{0,300}") {
        fast(name, &data);
    }
}

/// A string serde accepts: plain text, Korean, emoji and every escape.
fn valid_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[ -~]{0,12}".prop_map(|s| s.replace(['"', '\\'], "")),
        Just("별빛 소녀".to_owned()),
        Just("🎧❤️".to_owned()),
        Just("\\\"q\\\"".to_owned()),
        Just("\\\\".to_owned()),
        Just("\\n\\t\\/".to_owned()),
        Just("\\u00e9\\uD83C\\uDFA7".to_owned()),
    ];
    proptest::collection::vec(piece, 0..5).prop_map(|p| format!("\"{}\"", p.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The service's form in any field order, with any valid strings and
    /// numbers, always decodes (so the checks are not vacuous).
    #[test]
    fn valid_payloads_always_decode(
        id in valid_string(),
        nickname in prop_oneof![valid_string(), Just("null".to_owned())],
        text in valid_string(),
        amount in any::<u64>(),
        temperature in prop_oneof![
            (0u32..1000, 0u32..100).prop_map(|(a, b)| format!("{a}.{b}")),
            (0u32..1000).prop_map(|a| a.to_string()),
            Just("null".to_owned()),
        ],
        order in Just((0..6).collect::<Vec<usize>>()).prop_shuffle(),
    ) {
        let user = format!(r#"{{"id":{id},"nickname":{nickname}}}"#);
        let fields = [
            format!(r#""user":{user}"#),
            r#""type":"JOIN""#.to_owned(),
            format!(r#""fanRank":{}"#, amount % 100),
            r#""isManager":false"#.to_owned(),
            format!(r#""favoriteTemperature":{temperature}"#),
            format!(r#""time":{text}"#),
        ];
        let body: Vec<&str> = order.iter().map(|&i| fields[i].as_str()).collect();
        let data = format!("{{{}}}", body.join(","));
        prop_assert!(fast("presence", &data).is_some(), "{}", data);
        let data = format!(r#"{{"user":{user},"amount":{amount},"message":{text},"time":{text}}}"#);
        prop_assert!(fast("donation", &data).is_some(), "{}", data);
        let data = format!(r#"{{"user":{user},"isDj":true,"message":{text},"sentTime":{text}}}"#);
        prop_assert!(fast("chat", &data).is_some(), "{}", data);
    }
}
