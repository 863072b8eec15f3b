//! Tests of the api module: every request (snapshots), decoders, chat rules,
//! percent-encoding, the pager, and properties.

use super::*;
use crate::proto::chat::{ChatErrorKind, CHAT_MAX_UTF16};
use crate::proto::http::{form_component, query_component};
use crate::proto::model::COIN_COUNT_FIELD;
use proptest::prelude::*;

const CLIENT_ID: &str = "0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f";
const CLIENT_SECRET: &str = "cl1ent:s3cret/+&=";
const ACCESS: &str = "AT.access-token_value";
const REFRESH: &str = "RT.refresh-token_value";

fn base() -> BaseUrl {
    BaseUrl::new("https://api.example.test/").unwrap()
}

fn client(auth: ClientAuth) -> TokenClient {
    TokenClient::new(
        base(),
        ClientCredentials::new(CLIENT_ID, CLIENT_SECRET).unwrap(),
    )
    .with_auth(auth)
}

fn access() -> Secret {
    Secret::new(ACCESS)
}

/// No secret value appears in the request's Debug or redacted view.
fn assert_no_secret(req: &HttpRequest) {
    let shown = format!("{req:?} {:?}", req.redacted());
    for secret in [CLIENT_SECRET, ACCESS, REFRESH, "one-time-code", "cl1ent"] {
        assert!(!shown.contains(secret), "{secret} leaked in {shown}");
    }
}

fn body(req: &HttpRequest) -> String {
    String::from_utf8(req.body.to_vec()).unwrap()
}

#[test]
fn snapshot_token_requests() {
    let code = "one-time-code";
    let uri = "https://bot.example.test/callback?x=1 2";
    let requests = [
        ("issue_basic", client(ClientAuth::Basic).issue(code, uri)),
        (
            "issue_basic_form_encoded",
            client(ClientAuth::BasicFormEncoded).issue(code, uri),
        ),
        (
            "issue_form_fields",
            client(ClientAuth::FormFields).issue(code, uri),
        ),
        (
            "refresh_basic",
            client(ClientAuth::Basic).refresh(&Secret::new(REFRESH)),
        ),
        (
            "refresh_form_fields",
            client(ClientAuth::FormFields).refresh(&Secret::new(REFRESH)),
        ),
        (
            "revoke_refresh_hint",
            client(ClientAuth::Basic)
                .revoke(&Secret::new(REFRESH), Some(TokenTypeHint::RefreshToken)),
        ),
        (
            "revoke_no_hint",
            client(ClientAuth::Basic).revoke(&access(), None),
        ),
    ];
    for (name, req) in requests {
        let req = req.unwrap();
        assert_no_secret(&req);
        insta::assert_json_snapshot!(name, req.redacted());
    }
}

#[test]
fn snapshot_bot_requests() {
    let b = base();
    let t = access();
    let requests = [
        ("live", live(&b, &t)),
        ("listeners_first", listeners(&b, &t, None)),
        ("listeners_cursor", listeners(&b, &t, Some("eyJ0Ijo=/+ü"))),
        ("fans", fans(&b, &t)),
        ("events", events(&b, &t)),
        ("chat", chat(&b, &t, "안녕 \"DJ\" 😀\n")),
    ];
    for (name, req) in requests {
        let req = req.unwrap();
        assert_no_secret(&req);
        insta::assert_json_snapshot!(name, req.redacted());
    }
}

#[test]
fn basic_header_is_base64_of_id_colon_secret() {
    let engine = base64::engine::general_purpose::STANDARD;
    let req = client(ClientAuth::Basic).issue("c", "https://r").unwrap();
    let value = req.header("Authorization").unwrap();
    let decoded = engine
        .decode(value.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(decoded, format!("{CLIENT_ID}:{CLIENT_SECRET}").as_bytes());

    let req = client(ClientAuth::BasicFormEncoded)
        .issue("c", "https://r")
        .unwrap();
    let value = req.header("Authorization").unwrap();
    let decoded = engine
        .decode(value.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(decoded).unwrap(),
        format!("{CLIENT_ID}:cl1ent%3As3cret%2F%2B%26%3D")
    );

    let req = client(ClientAuth::FormFields)
        .issue("c", "https://r")
        .unwrap();
    assert_eq!(req.header("authorization"), None);
    assert!(body(&req).ends_with(
        "&client_id=0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f&client_secret=cl1ent%3As3cret%2F%2B%26%3D"
    ));
}

#[test]
fn form_bodies_decode_back_to_the_fields() {
    let uri = "https://bot.example.test/cb?a=b&c=d é";
    let req = client(ClientAuth::Basic).issue("c+d=e&f", uri).unwrap();
    let fields: Vec<(String, String)> = form_urlencoded::parse(body(&req).as_bytes())
        .into_owned()
        .collect();
    assert_eq!(
        fields,
        [
            ("grant_type".into(), "authorization_code".into()),
            ("code".into(), "c+d=e&f".into()),
            ("redirect_uri".into(), uri.into()),
        ]
    );
}

#[test]
fn base_url_rules() {
    for (given, normal) in [
        ("https://a.test", "https://a.test"),
        ("https://a.test/", "https://a.test"),
        ("HTTPS://a.test///", "HTTPS://a.test"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
        ("https://a.test/gateway/", "https://a.test/gateway"),
    ] {
        assert_eq!(BaseUrl::new(given).unwrap().as_str(), normal);
    }
    assert_eq!(
        live(&BaseUrl::new("https://a.test/gw/").unwrap(), &access())
            .unwrap()
            .url,
        "https://a.test/gw/v1/live"
    );
    for bad in [
        "",
        "/",
        "a.test",
        "ftp://a.test",
        "https://",
        "https:///path",
        "https://a.test/?q",
        "https://a.test#f",
        "https://a .test",
        "https://a.test\r\nX: y",
        "ééééééééé",
    ] {
        assert!(BaseUrl::new(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn control_characters_and_empty_values_are_refused() {
    let b = base();
    for bad in [
        "tok\r\nX-Injected: 1",
        "tok\n",
        "tok\0",
        "tok\u{7f}",
        "tok\u{85}",
    ] {
        let t = Secret::new(bad);
        for result in [
            live(&b, &t),
            listeners(&b, &t, None),
            fans(&b, &t),
            events(&b, &t),
            chat(&b, &t, "hi"),
        ] {
            assert_eq!(
                result.unwrap_err(),
                RequestError::ControlCharacter {
                    field: "access_token"
                }
            );
        }
        let c = client(ClientAuth::Basic);
        assert!(matches!(
            c.refresh(&t),
            Err(RequestError::ControlCharacter {
                field: "refresh_token"
            })
        ));
        assert!(matches!(
            c.revoke(&t, None),
            Err(RequestError::ControlCharacter { field: "token" })
        ));
        assert!(matches!(
            c.issue(bad, "https://r"),
            Err(RequestError::ControlCharacter { field: "code" })
        ));
        assert!(matches!(
            c.issue("code", bad),
            Err(RequestError::ControlCharacter {
                field: "redirect_uri"
            })
        ));
    }
    assert_eq!(
        live(&b, &Secret::new("")).unwrap_err(),
        RequestError::Empty {
            field: "access_token"
        }
    );
    assert_eq!(
        listeners(&b, &access(), Some("")).unwrap_err(),
        RequestError::EmptyCursor
    );
    // Errors never carry the value.
    let e = live(&b, &Secret::new("secret\nvalue")).unwrap_err();
    assert!(!format!("{e} {e:?}").contains("secret"));
}

#[test]
fn client_id_must_be_a_uuid() {
    for bad in [
        "",
        "my-app",
        "0b3e8f3c5a2b4c1d9e8f7a6b5c4d3e2f",
        "{0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f}",
        "0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2g",
        "0b3e8f3c-5a2b-4c1d-9e8f7-a6b5c4d3e2f",
        "0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f ",
    ] {
        let err = ClientCredentials::new(bad, "s").unwrap_err();
        assert_eq!(err, CredentialsError::InvalidClientId, "{bad:?}");
        assert!(err.to_string().contains("UUID"));
    }
    assert!(ClientCredentials::new("0B3E8F3C-5A2B-4C1D-9E8F-7A6B5C4D3E2F", "s").is_ok());
    assert_eq!(
        ClientCredentials::new(CLIENT_ID, "").unwrap_err(),
        CredentialsError::EmptySecret
    );
}

#[test]
fn chat_rules() {
    assert!(validate_chat("a").is_ok());
    assert!(validate_chat(&"a".repeat(200)).is_ok());
    assert!(validate_chat(&"가".repeat(200)).is_ok()); // BMP: one unit each
    assert!(validate_chat(&format!("{}😀", "a".repeat(198))).is_ok());
    let e = validate_chat(&format!("{}😀", "a".repeat(199))).unwrap_err();
    assert_eq!((e.kind, e.utf16_len), (ChatErrorKind::TooLong, 201));
    assert_eq!(e.kind.code(), "chat_too_long");
    assert_eq!(
        validate_chat(&"a".repeat(201)).unwrap_err().kind,
        ChatErrorKind::TooLong
    );
    for empty in [
        "", " ", "\t\r\n", "\u{a0}", "\u{3000}", "\u{2028}", "\u{85}", "\u{1680}",
    ] {
        let e = validate_chat(empty).unwrap_err();
        assert_eq!(e.kind, ChatErrorKind::Empty, "{empty:?}");
        assert_eq!(e.kind.code(), "chat_empty");
    }
    // Long but blank is "empty", as the blank rule is the more useful message.
    assert_eq!(
        validate_chat(&" ".repeat(300)).unwrap_err().kind,
        ChatErrorKind::Empty
    );
    // U+200B ZERO WIDTH SPACE is not White_Space.
    assert!(validate_chat("\u{200b}").is_ok());
    let err = chat(&base(), &access(), &"x".repeat(201)).unwrap_err();
    assert_eq!(err.code(), "chat_too_long");
    assert!(err.to_string().contains("201"));
}

#[test]
fn encoders() {
    assert_eq!(form_component(""), "");
    assert_eq!(form_component("AZaz09*-._"), "AZaz09*-._");
    assert_eq!(form_component("~ +"), "%7E+%2B");
    assert_eq!(query_component("~ +"), "~%20%2B");
}

const BROADCAST: &str = r#"{
  "liveId": 9876543210,
  "title": "Late night lo-fi",
  "startedAt": "2024-11-22T04:33:20.123456Z",
  "closeAirTime": "2024-11-22T06:33:20Z",
  "listenerCount": 42,
  "totalListenerCount": 108,
  "welcomeMessage": "",
  "isChatFrozen": false,
  "categories": ["music", "talk"],
  "tags": ["lofi"],
  "someNewField": {"nested": [1, 2]}
}"#;

#[test]
fn snapshot_decoded_resources() {
    let broadcast = decode_broadcast(BROADCAST.as_bytes()).unwrap();
    assert_eq!(broadcast.started_at.unix_ms(), Some(1_732_250_000_123));
    insta::assert_json_snapshot!("broadcast", broadcast);

    let page = decode_listeners(
        br#"{"listeners":[{"id":"enc-1","nickname":"Mina","extra":true},
            {"id":"enc-2","nickname":"Mina"}],"nextCursor":"c-2"}"#,
    )
    .unwrap();
    insta::assert_json_snapshot!("listeners_page", page);
    let last = decode_listeners(br#"{"listeners":[],"nextCursor":null}"#).unwrap();
    insta::assert_json_snapshot!("listeners_page_last", last);

    let fans = decode_fans(
        format!(
            r#"{{"totalCount":2,"fans":[
            {{"id":"enc-1","nickname":"Top","rank":1,"{COIN_COUNT_FIELD}":1200,"badge":"x"}},
            {{"id":"enc-2","nickname":"Second","rank":2,"{COIN_COUNT_FIELD}":null}}]}}"#
        )
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(fans.fans[1].coin_count, None);
    insta::assert_json_snapshot!("fan_ranking", fans);

    let pair = decode_token_pair(
        br#"{"access_token":"AT.access-token_value","token_type":"Bearer","expires_in":3600,
            "refresh_token":"RT.refresh-token_value","scope":"live.read events.chat chat.send",
            "id_token_future":"ignored"}"#,
    )
    .unwrap();
    insta::assert_debug_snapshot!("token_pair", pair);
}

#[test]
fn token_pair_rules() {
    for tt in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let body = format!(r#"{{"access_token":"a","token_type":"{tt}"}}"#);
        let pair = decode_token_pair(body.as_bytes()).unwrap();
        assert_eq!(pair.expires_in, 3600);
        assert_eq!(pair.refresh_token, None);
        assert_eq!(pair.scope, None);
    }
    let pair = decode_token_pair(
        br#"{"access_token":"a","token_type":"Bearer","expires_in":"120","scope":""}"#,
    )
    .unwrap();
    assert_eq!(pair.expires_in, 120);
    assert_eq!(pair.scope, Some(crate::proto::scope::Scope::new()));
    let pair =
        decode_token_pair(br#"{"access_token":"a","token_type":"Bearer","expires_in":null}"#)
            .unwrap();
    assert_eq!(pair.expires_in, 3600);

    let e = decode_token_pair(br#"{"access_token":"a","token_type":"MAC"}"#).unwrap_err();
    assert_eq!(e.kind, ResponseErrorKind::UnsupportedTokenType);
    for (body, kind) in [
        (&b"not json"[..], ResponseErrorKind::InvalidJson),
        (
            br#"{"token_type":"Bearer"}"#,
            ResponseErrorKind::InvalidBody,
        ),
        (
            br#"{"access_token":"","token_type":"Bearer"}"#,
            ResponseErrorKind::InvalidBody,
        ),
        (
            br#"{"access_token":"a\r\nb","token_type":"Bearer"}"#,
            ResponseErrorKind::InvalidBody,
        ),
        (
            br#"{"access_token":"a","refresh_token":"r\n","token_type":"Bearer"}"#,
            ResponseErrorKind::InvalidBody,
        ),
        (
            br#"{"access_token":"a","token_type":"Bearer","expires_in":-1}"#,
            ResponseErrorKind::InvalidBody,
        ),
        (
            br#"{"access_token":"a","token_type":"Bearer","expires_in":"soon"}"#,
            ResponseErrorKind::InvalidBody,
        ),
    ] {
        assert_eq!(decode_token_pair(body).unwrap_err().kind, kind);
    }
    // A decode error never quotes a token.
    let e = decode_token_pair(br#"{"access_token":"SECRETVALUE","token_type":7}"#).unwrap_err();
    assert!(!format!("{e} {e:?}").contains("SECRETVALUE"));
    let e = decode_token_pair(br#"{"access_token":["SECRETVALUE"],"token_type":"Bearer"}"#)
        .unwrap_err();
    assert!(!format!("{e} {e:?}").contains("SECRETVALUE"));
}

#[test]
fn resource_decoders_reject_bad_bodies() {
    assert_eq!(
        decode_broadcast(b"").unwrap_err().kind,
        ResponseErrorKind::InvalidJson
    );
    assert_eq!(
        decode_broadcast(br#"{"liveId":"x"}"#).unwrap_err().kind,
        ResponseErrorKind::InvalidBody
    );
    assert_eq!(
        decode_fans(br#"{"totalCount":1}"#).unwrap_err().kind,
        ResponseErrorKind::InvalidBody
    );
    assert_eq!(
        decode_listeners(br#"{"listeners":[{"id":"a"}]}"#)
            .unwrap_err()
            .kind,
        ResponseErrorKind::InvalidBody
    );
    let fans = decode_fans(br#"{"totalCount":0,"fans":[]}"#).unwrap();
    assert!(fans.fans.is_empty());
    let fans =
        decode_fans(br#"{"totalCount":1,"fans":[{"id":"a","nickname":"n","rank":3}]}"#).unwrap();
    assert_eq!(fans.fans[0].rank, 3);
}

// --- pager -----------------------------------------------------------------

fn page(ids: &[&str], next: Option<&str>) -> ListenersPage {
    ListenersPage {
        listeners: ids
            .iter()
            .map(|id| Listener {
                id: (*id).to_owned(),
                nickname: format!("nick-{id}"),
            })
            .collect(),
        next_cursor: next.map(str::to_owned),
    }
}

#[test]
fn pager_follows_dedups_and_finishes() {
    let (b, t) = (base(), access());
    let mut pager = ListenerPager::new();
    let r1 = pager.next_request(&b, &t).unwrap().unwrap();
    assert_eq!(r1.url, "https://api.example.test/v1/live/listeners");
    // One page at a time.
    assert!(pager.next_request(&b, &t).unwrap().is_none());
    assert_eq!(
        pager.on_page(page(&["a", "b"], Some("c 2"))),
        Ok(PagerProgress::More)
    );
    assert_eq!(
        pager.on_page(page(&["x"], None)),
        Err(PagerError::NotAwaiting)
    );
    let r2 = pager.next_request(&b, &t).unwrap().unwrap();
    assert_eq!(
        r2.url,
        "https://api.example.test/v1/live/listeners?cursor=c%202"
    );
    // A transport failure: the same page again.
    pager.retry_page();
    let r2b = pager.next_request(&b, &t).unwrap().unwrap();
    assert_eq!(r2b.url, r2.url);
    // A bad body: the same page again, and the error says why.
    assert!(matches!(pager.on_body(b"{"), Err(PagerError::Decode(_))));
    let r2c = pager.next_request(&b, &t).unwrap().unwrap();
    assert_eq!(r2c.url, r2.url);
    assert_eq!(
        pager.on_page(page(&["b", "c"], Some(""))),
        Ok(PagerProgress::Complete)
    );
    assert!(pager.is_complete());
    assert!(pager.next_request(&b, &t).unwrap().is_none());
    let ids: Vec<_> = pager.listeners().iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(pager.pages(), 2);
    assert_eq!(pager.into_listeners().len(), 3);
}

#[test]
fn pager_stops_on_a_repeated_cursor() {
    let (b, t) = (base(), access());
    let mut pager = ListenerPager::new();
    for (i, next) in ["c1", "c2", "c1"].iter().enumerate() {
        pager.next_request(&b, &t).unwrap().unwrap();
        let result = pager.on_page(page(&["a"], Some(next)));
        if i < 2 {
            assert_eq!(result, Ok(PagerProgress::More));
        } else {
            assert_eq!(result, Err(PagerError::RepeatedCursor));
        }
    }
    assert_eq!(pager.error(), Some(&PagerError::RepeatedCursor));
    assert!(pager.next_request(&b, &t).unwrap().is_none());
    assert!(!pager.is_complete());
}

#[test]
fn pager_stops_after_max_pages() {
    let (b, t) = (base(), access());
    let mut pager = ListenerPager::with_max_pages(2);
    pager.next_request(&b, &t).unwrap().unwrap();
    assert_eq!(pager.on_page(page(&[], Some("1"))), Ok(PagerProgress::More));
    pager.next_request(&b, &t).unwrap().unwrap();
    assert_eq!(
        pager.on_page(page(&[], Some("2"))),
        Err(PagerError::TooManyPages { limit: 2 })
    );
    assert!(PagerError::TooManyPages { limit: 2 }
        .to_string()
        .contains('2'));
}

#[test]
fn pager_keeps_ready_state_when_the_token_is_bad() {
    let mut pager = ListenerPager::new();
    assert!(pager.next_request(&base(), &Secret::new("a\nb")).is_err());
    assert!(pager.next_request(&base(), &access()).unwrap().is_some());
}

proptest! {
    #[test]
    fn form_encoding_round_trips(s in "\\PC*|[\\x00-\\x7f]*") {
        let encoded = form_component(&s);
        prop_assert!(encoded.bytes().all(|b| b.is_ascii_alphanumeric() || b"*-._+%".contains(&b)));
        let decode = |text: &str| -> String {
            percent_encoding::percent_decode_str(&text.replace('+', " ")).decode_utf8_lossy().into_owned()
        };
        prop_assert_eq!(decode(&encoded), s.clone());
        let q = query_component(&s);
        prop_assert!(q.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
        prop_assert_eq!(decode(&q), s);
    }

    #[test]
    fn base_url_never_panics(s in "\\PC*|[hHtTpPsS:/é]{0,12}") {
        if let Ok(b) = BaseUrl::new(&s) {
            prop_assert!(!b.as_str().ends_with('/'));
            prop_assert!(b.as_str().to_ascii_lowercase().starts_with("http"));
        }
    }

    #[test]
    fn chat_validation_matches_its_definition(s in "[ a\u{3000}\u{a0}😀가\n]{0,210}") {
        let units = s.encode_utf16().count();
        let blank = s.trim_matches(char::is_whitespace).is_empty();
        match validate_chat(&s) {
            Ok(()) => prop_assert!(!blank && units <= CHAT_MAX_UTF16),
            Err(e) => {
                prop_assert_eq!(e.utf16_len, units);
                prop_assert_eq!(e.kind == ChatErrorKind::Empty, blank);
                prop_assert!(blank || units > CHAT_MAX_UTF16);
            }
        }
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_token_pair(&bytes);
        let _ = decode_broadcast(&bytes);
        let _ = decode_listeners(&bytes);
        let _ = decode_fans(&bytes);
        let _ = ListenerPager::new().on_body(&bytes);
    }

    #[test]
    fn decoders_never_panic_on_json_like_input(s in r#"[{}\[\]":,0-9a-zA-Z_ .\-nul]{0,120}"#) {
        let _ = decode_token_pair(s.as_bytes());
        let _ = decode_broadcast(s.as_bytes());
        let _ = decode_listeners(s.as_bytes());
        let _ = decode_fans(s.as_bytes());
    }

    #[test]
    fn requests_never_carry_control_characters(token in "\\PC*|.*", cursor in ".*") {
        let t = Secret::new(token);
        for req in [live(&base(), &t), listeners(&base(), &t, Some(&cursor))].into_iter().flatten() {
            prop_assert!(!req.url.chars().any(char::is_control));
            for (_, v) in &req.headers {
                prop_assert!(!v.chars().any(char::is_control));
            }
        }
    }

    /// Whatever cursors a server sends, the pager ends within (distinct
    /// cursors + 1) requests and never sends an empty cursor.
    #[test]
    fn pager_never_loops(pages in proptest::collection::vec(
        (proptest::collection::vec("[a-c]", 0..4), proptest::option::of("[a-d]{0,1}")), 1..40)) {
        let (b, t) = (base(), access());
        let mut pager = ListenerPager::new();
        let distinct: HashSet<&str> = pages.iter().filter_map(|(_, c)| c.as_deref()).filter(|c| !c.is_empty()).collect();
        let mut requests = 0;
        let mut all_ids = HashSet::new();
        for (ids, next) in pages.iter().cycle().take(200) {
            let Some(req) = pager.next_request(&b, &t).unwrap() else { break };
            requests += 1;
            prop_assert!(!req.url.ends_with("cursor="));
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            all_ids.extend(ids.iter().map(|s| s.to_string()));
            let _ = pager.on_page(page(&ids, next.as_deref()));
        }
        prop_assert!(requests <= distinct.len() + 1, "{} requests, {} cursors", requests, distinct.len());
        prop_assert!(pager.is_complete() || pager.error().is_some());
        let got: HashSet<String> = pager.listeners().iter().map(|l| l.id.clone()).collect();
        prop_assert_eq!(got.len(), pager.listeners().len());
        prop_assert!(got.is_subset(&all_ids));
    }
}
