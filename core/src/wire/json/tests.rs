//! The reader against serde_json (the oracle): the same texts are JSON, the
//! same strings and numbers come out; and one test per rule.

use super::*;
use proptest::prelude::*;

fn is_json(text: &str) -> bool {
    read(text, Json::skip).is_ok()
}

#[test]
fn faults_say_what_and_where() {
    let text = "{\n  \"a\": tru }";
    let fault = read(text, Json::skip).unwrap_err();
    assert!(fault.is_syntax());
    assert_eq!(fault.line_column(text.as_bytes()), (2, 8));
    assert_eq!(
        fault.to_string(),
        "invalid JSON: expected a value at byte 9"
    );
    let fault = read("[1,2]", Json::u64).unwrap_err();
    assert_eq!(fault.to_string(), "expected a whole number at byte 0");
    assert!(!fault.is_syntax());
}

#[test]
fn a_shape_fault_before_broken_text_is_a_syntax_fault() {
    let text = br#"{"a":1} x"#;
    let fault = read_bytes(text, Json::string).unwrap_err();
    assert_eq!(shape_or_syntax(text, fault).unwrap_err().at, 8);
    let text = br#"{"a":1}"#;
    let fault = read_bytes(text, Json::string).unwrap_err();
    assert_eq!(shape_or_syntax(text, fault), Ok(fault));
}

#[test]
fn invalid_utf8_is_not_json() {
    let fault = read_bytes(b"\"\xff\"", Json::string).unwrap_err();
    assert_eq!((fault.at, fault.is_syntax()), (1, true));
}

#[test]
fn fields_are_read_once() {
    let text = r#"{"a":1,"a":2}"#;
    let read_a = |json: &mut Json<'_>| {
        let mut a = None;
        json.object(&mut |json, key| match key {
            b"a" => field(json, &mut a, "a", Json::u64),
            _ => json.skip(),
        })?;
        need(json, a, "a")
    };
    assert_eq!(
        read(text, read_a).unwrap_err().to_string(),
        "duplicate field `a` at byte 11"
    );
    assert_eq!(
        read("{}", read_a).unwrap_err().to_string(),
        "missing field `a` at byte 2"
    );
}

#[test]
fn stored_documents_are_checked_before_they_are_read() {
    let text = br#"{"x":[{}],"version":2,"format":"onair.tokens","rest":"\u00e9"}"#;
    let read_rest = |json: &mut Json<'_>| json.skip();
    assert_eq!(read_stored(text, "onair.tokens", 2, read_rest), Ok(()));
    assert_eq!(
        read_stored(text, "onair.tokens", 1, read_rest),
        Err(StoredRefusal::UnsupportedVersion(2))
    );
    assert_eq!(
        read_stored(text, "onair.audience", 2, read_rest),
        Err(StoredRefusal::UnknownFormat)
    );
    assert_eq!(
        read_stored(br#"{"format":"f"}"#, "f", 1, read_rest),
        Err(StoredRefusal::MissingVersion)
    );
    assert_eq!(
        read_stored(b"{}", "f", 1, read_rest),
        Err(StoredRefusal::UnknownFormat)
    );
    assert_eq!(
        read_stored(b"\n[]", "f", 1, read_rest),
        Err(StoredRefusal::Json { line: 2, column: 1 })
    );
}

#[test]
fn nesting_is_bounded_from_the_top() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(is_json(&nested(128)));
    assert!(!is_json(&nested(129)));
    assert_eq!(
        read(&nested(129), Json::skip).unwrap_err().to_string(),
        "nested too deep at byte 128"
    );
    // Deep input ends in a fault, not a stack overflow.
    assert!(!is_json(&nested(100_000)));
}

/// Text that is often JSON and often nearly so.
fn text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("fals".to_owned()),
        "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?",
        "-?0[0-9]",
        "\"([ -~]|별|🎧|\\\\[\"\\\\/bfnrtx]|\\\\u[0-9a-fA-F]{4}|\\\\uD83C\\\\uDFA7|\t){0,8}\"",
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| format!("[{}]", v.join(","))),
            proptest::collection::vec(("\"[a-z]{0,2}\"", inner), 0..4).prop_map(|v| {
                let fields: Vec<String> = v.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", fields.join(","))
            }),
            (Just("[1,]".to_owned())),
            (Just("{\"a\" 1}".to_owned())),
        ]
    })
    .prop_flat_map(|t| {
        (
            Just(t),
            prop_oneof![Just(""), Just(" "), Just(" x"), Just("\n")],
        )
    })
    .prop_map(|(t, end)| format!(" {t}{end}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// (Generated text nests at most five deep.)
    #[test]
    fn json_exactly_when_serde_json_says_so(text in text()) {
        let serde = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
        prop_assert_eq!(is_json(&text), serde, "{}", text);
    }

    #[test]
    fn strings_and_numbers_read_as_serde_json_reads_them(text in text()) {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::String(s)) => {
                prop_assert_eq!(read(&text, Json::string).map(|s| s.into_owned()), Ok(s));
            }
            Ok(serde_json::Value::Number(n)) => {
                if let Some(u) = n.as_u64() {
                    prop_assert_eq!(read(&text, Json::u64), Ok(u));
                }
                let ours = read(&text, Json::f64);
                let exact: Option<f64> = text.trim().parse().ok().filter(|v: &f64| v.is_finite());
                prop_assert_eq!(ours.ok().map(f64::to_bits), exact.map(f64::to_bits), "{}", text);
            }
            _ => {}
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = read_bytes(&bytes, Json::skip);
        let _ = read_stored(&bytes, "f", 1, Json::skip);
    }
}

#[test]
fn a_key_with_a_lone_surrogate_is_an_unknown_key() {
    // serde_json reads such a key when it ignores the value; so does skip.
    let text = r#"{"a\ud83d":1,"\ud83d\u0041":2,"b":3}"#;
    assert!(is_json(text));
    let mut keys = Vec::new();
    read(text, |json| {
        json.object(&mut |json, key| {
            keys.push(String::from_utf8_lossy(key).into_owned());
            json.skip()
        })
    })
    .unwrap();
    assert_eq!(keys, ["a\u{fffd}", "\u{fffd}A", "b"]);
    // In a value it is refused: it is no character.
    assert!(read(r#""a\ud83d""#, Json::string).is_err());
}
