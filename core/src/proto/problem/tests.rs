use super::*;
use proptest::prelude::*;
use serde_json::{json, Value};

const NO_HEADERS: &[(&str, &str)] = &[];

/// One row of a decision table: the input and what `onair explain` would say.
fn row(endpoint: Endpoint, status: u16, headers: &[(&str, &str)], body: &str) -> Value {
    let problem = classify(endpoint, status, headers, body.as_bytes());
    json!({
        "input": {
            "endpoint": endpoint.as_str(),
            "status": status,
            "headers": headers.iter().map(|(n, v)| format!("{n}: {v}")).collect::<Vec<_>>(),
            "body": body,
        },
        "decision": problem.explain(Some(1_700_000_000_000)),
        "message": problem.message,
    })
}

fn bot_body(status: u16, code: &str) -> String {
    json!({
        "instance": "/v1/live/chat",
        "status": status,
        "title": "Some Title",
        "detailCode": code,
        "message": "wording that may change",
        "userId": null,
        "extra": null,
        "timestamp": 1_700_000_000_000u64,
    })
    .to_string()
}

fn oauth_body(error: &str) -> String {
    json!({"error": error, "error_description": "for people, not for code"}).to_string()
}

// ---- spec 7.3, one test per row ----

#[test]
fn spec_7_3_row_400_0103_malformed() {
    insta::assert_json_snapshot!(row(
        Endpoint::Chat,
        400,
        NO_HEADERS,
        &bot_body(400, "OAPI_MNGR_0103")
    ));
}

#[test]
fn spec_7_3_row_400_0108_chat_empty() {
    insta::assert_json_snapshot!(row(
        Endpoint::Chat,
        400,
        NO_HEADERS,
        &bot_body(400, "OAPI_MNGR_0108")
    ));
}

#[test]
fn spec_7_3_row_400_0109_chat_too_long() {
    insta::assert_json_snapshot!(row(
        Endpoint::Chat,
        400,
        NO_HEADERS,
        &bot_body(400, "OAPI_MNGR_0109")
    ));
}

#[test]
fn spec_7_3_row_401_without_code() {
    insta::assert_json_snapshot!(row(
        Endpoint::Live,
        401,
        &[("WWW-Authenticate", "Bearer")],
        ""
    ));
}

#[test]
fn spec_7_3_row_401_0203_recently_revoked() {
    insta::assert_json_snapshot!(row(
        Endpoint::Fans,
        401,
        NO_HEADERS,
        &bot_body(401, "OAPI_MNGR_0203")
    ));
}

#[test]
fn spec_7_3_row_403_without_code() {
    insta::assert_json_snapshot!(row(Endpoint::Listeners, 403, NO_HEADERS, ""));
}

#[test]
fn spec_7_3_row_403_0208_chat_blocked() {
    insta::assert_json_snapshot!(row(
        Endpoint::Chat,
        403,
        NO_HEADERS,
        &bot_body(403, "OAPI_MNGR_0208")
    ));
}

#[test]
fn spec_7_3_row_403_0209_join_forbidden() {
    insta::assert_json_snapshot!(row(
        Endpoint::Chat,
        403,
        NO_HEADERS,
        &bot_body(403, "OAPI_MNGR_0209")
    ));
}

#[test]
fn spec_7_3_row_404_0301_not_on_air() {
    insta::assert_json_snapshot!(row(
        Endpoint::Live,
        404,
        NO_HEADERS,
        &bot_body(404, "OAPI_MNGR_0301")
    ));
}

#[test]
fn spec_7_3_row_429_0302_chat_rate_limited() {
    insta::assert_json_snapshot!(row(
        Endpoint::Chat,
        429,
        NO_HEADERS,
        &bot_body(429, "OAPI_MNGR_0302")
    ));
}

#[test]
fn spec_7_3_row_429_empty_per_second_and_daily() {
    let per_second = row(Endpoint::Live, 429, &[("x-ratelimit-remaining", "0")], "");
    let daily_scoped = row(
        Endpoint::Fans,
        429,
        &[
            ("Retry-After", "3600"),
            ("X-RateLimit-Daily-Scope", "fans.read"),
        ],
        "",
    );
    let daily_app = row(Endpoint::Listeners, 429, &[("retry-after", "7200")], "");
    insta::assert_json_snapshot!(json!({
        "perSecond": per_second,
        "dailyOnePermission": daily_scoped,
        "dailyWholeApp": daily_app,
    }));
}

#[test]
fn spec_7_3_row_500_1002_server_error() {
    insta::assert_json_snapshot!(row(
        Endpoint::Live,
        500,
        NO_HEADERS,
        &bot_body(500, "OAPI_MNGR_1002")
    ));
}

#[test]
fn spec_7_3_row_502_2302_broadcast_server_error() {
    insta::assert_json_snapshot!(row(
        Endpoint::Fans,
        502,
        NO_HEADERS,
        &bot_body(502, "OAPI_MNGR_2302")
    ));
}

#[test]
fn spec_7_3_row_502_2303_chat_server_error() {
    insta::assert_json_snapshot!(row(
        Endpoint::Chat,
        502,
        NO_HEADERS,
        &bot_body(502, "OAPI_MNGR_2303")
    ));
}

// ---- spec 7.4, one test per row ----

#[test]
fn spec_7_4_row_invalid_request() {
    insta::assert_json_snapshot!(row(
        Endpoint::Token,
        400,
        NO_HEADERS,
        &oauth_body("invalid_request")
    ));
}

#[test]
fn spec_7_4_row_invalid_client() {
    insta::assert_json_snapshot!(row(
        Endpoint::Token,
        401,
        &[("WWW-Authenticate", "Basic realm=\"oauth\"")],
        &oauth_body("invalid_client")
    ));
}

#[test]
fn spec_7_4_row_invalid_grant() {
    insta::assert_json_snapshot!(row(
        Endpoint::Token,
        400,
        NO_HEADERS,
        &oauth_body("invalid_grant")
    ));
}

#[test]
fn spec_7_4_row_unsupported_grant_type() {
    insta::assert_json_snapshot!(row(
        Endpoint::Revoke,
        400,
        NO_HEADERS,
        &oauth_body("unsupported_grant_type")
    ));
}

// ---- the rest of the decision table ----

#[test]
fn issue_table_other_rows() {
    let rows = vec![
        row(Endpoint::Live, 200, NO_HEADERS, "{\"liveId\":1}"),
        row(Endpoint::Chat, 204, NO_HEADERS, ""),
        row(Endpoint::Revoke, 200, NO_HEADERS, ""),
        row(Endpoint::Chat, 405, NO_HEADERS, ""),
        row(Endpoint::Token, 415, NO_HEADERS, ""),
        row(
            Endpoint::Chat,
            415,
            NO_HEADERS,
            &bot_body(415, "OAPI_MNGR_0103"),
        ),
        row(Endpoint::Live, 404, NO_HEADERS, ""),
        row(Endpoint::Events, 404, NO_HEADERS, "<html>not found</html>"),
        row(Endpoint::Live, 500, NO_HEADERS, ""),
        row(Endpoint::Live, 502, NO_HEADERS, "<html>Bad Gateway</html>"),
        row(Endpoint::Live, 503, NO_HEADERS, ""),
        row(Endpoint::Live, 504, NO_HEADERS, ""),
        row(Endpoint::Token, 401, NO_HEADERS, ""),
        row(
            Endpoint::Token,
            400,
            NO_HEADERS,
            &oauth_body("invalid_scope"),
        ),
        row(Endpoint::Token, 404, NO_HEADERS, ""),
        row(Endpoint::Token, 503, NO_HEADERS, ""),
        row(Endpoint::Live, 418, NO_HEADERS, ""),
        row(Endpoint::Live, 501, NO_HEADERS, ""),
        row(Endpoint::Live, 302, &[("Location", "/elsewhere")], ""),
        row(
            Endpoint::Live,
            403,
            NO_HEADERS,
            &bot_body(403, "OAPI_MNGR_9999"),
        ),
        row(
            Endpoint::Live,
            429,
            NO_HEADERS,
            &bot_body(429, "OAPI_MNGR_9999"),
        ),
        row(Endpoint::Live, 0, NO_HEADERS, ""),
        row(Endpoint::Live, 999, NO_HEADERS, ""),
    ];
    insta::assert_json_snapshot!(rows);
}

// ---- body shapes ----

fn kind_and_code(endpoint: Endpoint, status: u16, body: &[u8]) -> (ProblemKind, Option<String>) {
    let p = classify(endpoint, status, NO_HEADERS, body);
    (p.kind, p.detail_code)
}

#[test]
fn stream_error_body_starts_with_data() {
    for body in [
        &b"data:{\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\",\"message\":\"off\"}\n\n"[..],
        b"data: {\"status\":404,\"detailCode\":\"OAPI_MNGR_0301\"}",
        b"\xEF\xBB\xBFdata:{\"detailCode\":\"OAPI_MNGR_0301\"}\r\n\r\n",
        b"event:error\ndata:{\"status\":404,\ndata:\"detailCode\":\"OAPI_MNGR_0301\"}\n\n",
    ] {
        // The last body has its data line first only after `event:`; it is
        // not an SSE body by our rule (must start with data:) but the status
        // still decides: a 404 on the stream is not on air.
        let (kind, _) = kind_and_code(Endpoint::Events, 404, body);
        assert_eq!(
            kind,
            ProblemKind::NotOnAir,
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
    let (kind, code) = kind_and_code(
        Endpoint::Events,
        403,
        b"data:{\"status\":403,\ndata:\"detailCode\":\"OAPI_MNGR_0209\"}\n\n",
    );
    assert_eq!(
        (kind, code.as_deref()),
        (ProblemKind::JoinForbidden, Some("OAPI_MNGR_0209"))
    );
}

#[test]
fn tolerates_unknown_fields_nulls_and_wrong_types() {
    let body = br#"{"detailCode":"OAPI_MNGR_0208","userId":null,"extra":null,"new":{"a":[1,2]},"message":7}"#;
    let p = classify(Endpoint::Chat, 403, NO_HEADERS, body);
    assert_eq!(p.kind, ProblemKind::ChatBlocked);
    assert_eq!(p.message, None);
    // A detailCode that is not a string is as good as none.
    let p = classify(Endpoint::Chat, 403, NO_HEADERS, br#"{"detailCode":208}"#);
    assert_eq!(p.kind, ProblemKind::PermissionMissing);
    let p = classify(Endpoint::Chat, 403, NO_HEADERS, br#"{"detailCode":""}"#);
    assert_eq!(
        (p.kind, p.detail_code),
        (ProblemKind::PermissionMissing, None)
    );
    let p = classify(
        Endpoint::Chat,
        403,
        NO_HEADERS,
        br#"{"detailCode":["x"],"title":"Forbidden"}"#,
    );
    assert_eq!(p.kind, ProblemKind::PermissionMissing);
}

#[test]
fn unreadable_bodies_classify_by_status() {
    for body in [
        &b""[..],
        b"   ",
        b"<html><body>502 Bad Gateway</body></html>",
        b"{\"detailCode\":\"OAPI_MNGR_23",
        b"{\"detailCode\":\"OAPI_\xff\xfe\"}",
        b"\xff\xfe\xfd",
        b"null",
        b"[1,2,3]",
        b"data:",
        b"data:not json",
    ] {
        let p = classify(Endpoint::Live, 502, NO_HEADERS, body);
        assert_eq!(
            p.kind,
            ProblemKind::ServerError,
            "{:?}",
            String::from_utf8_lossy(body)
        );
        assert_eq!(p.detail_code, None);
    }
}

#[test]
fn never_branches_on_message_text() {
    let p = classify(
        Endpoint::Chat,
        400,
        NO_HEADERS,
        br#"{"message":"OAPI_MNGR_0108 chat empty","title":"OAPI_MNGR_0109"}"#,
    );
    assert_eq!(p.kind, ProblemKind::Unexpected);
    let p = classify(
        Endpoint::Token,
        400,
        NO_HEADERS,
        br#"{"error_description":"invalid_grant"}"#,
    );
    assert_eq!(p.kind, ProblemKind::Unexpected);
}

#[test]
fn token_endpoints_ignore_bot_codes_for_oauth_errors_and_vice_versa() {
    // A bot endpoint does not read `error`.
    let p = classify(
        Endpoint::Live,
        400,
        NO_HEADERS,
        oauth_body("invalid_grant").as_bytes(),
    );
    assert_eq!((p.kind, p.oauth_error), (ProblemKind::Unexpected, None));
    // The common 0103 rule also holds on the token endpoints.
    let p = classify(
        Endpoint::Token,
        400,
        NO_HEADERS,
        bot_body(400, "OAPI_MNGR_0103").as_bytes(),
    );
    assert_eq!(p.kind, ProblemKind::MalformedRequest);
}

#[test]
fn keeps_the_message_for_logs_truncated() {
    let long = "é".repeat(Problem::MAX_MESSAGE_BYTES);
    let body = json!({"detailCode": "OAPI_MNGR_0301", "message": long}).to_string();
    let p = classify(Endpoint::Live, 404, NO_HEADERS, body.as_bytes());
    let message = p.message.unwrap();
    assert!(message.len() <= Problem::MAX_MESSAGE_BYTES && message.starts_with('é'));
    let escaped = br#"{"error":"invalid_grant","error_description":"code \"x\" expired"}"#;
    let p = classify(Endpoint::Token, 400, NO_HEADERS, escaped);
    assert_eq!(p.message.as_deref(), Some("code \"x\" expired"));
}

#[test]
fn display_is_one_line() {
    let p = classify(
        Endpoint::Live,
        404,
        NO_HEADERS,
        bot_body(404, "OAPI_MNGR_0301").as_bytes(),
    );
    assert_eq!(
        p.to_string(),
        "not_on_air (HTTP 404, OAPI_MNGR_0301): wait_not_on_air"
    );
}

#[test]
fn endpoint_names_round_trip() {
    for e in Endpoint::ALL {
        assert_eq!(Endpoint::from_name(e.as_str()), Some(e));
        assert!(e.path().starts_with("/v1/"));
        assert!(matches!(e.method().as_str(), "GET" | "POST"));
    }
    assert_eq!(Endpoint::from_name("Live"), None);
    assert_eq!(Endpoint::Events.permission(), None);
    assert_eq!(Endpoint::Chat.permission(), Some(Permission::ChatSend));
}

#[test]
fn http_date_retry_after_needs_now() {
    let headers = [("Retry-After", "Tue, 14 Nov 2023 22:13:40 GMT")];
    let p = classify(Endpoint::Live, 429, headers, b"");
    assert_eq!(p.kind, ProblemKind::QuotaDaily);
    assert_eq!(p.explain(None).retry_after_ms, None);
    assert_eq!(
        p.explain(Some(1_700_000_000_000)).retry_after_ms,
        Some(20_000)
    );
    assert_eq!(p.explain(Some(1_800_000_000_000)).retry_after_ms, Some(0));
}

proptest! {
    #[test]
    fn no_bytes_panic_the_classifier(
        status in any::<u16>(),
        endpoint in 0usize..7,
        headers in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..30), proptest::collection::vec(any::<u8>(), 0..40)),
            0..8,
        ),
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let endpoint = Endpoint::ALL[endpoint];
        let p = classify(endpoint, status, &headers, &body);
        let _ = p.explain(Some(0));
        let _ = p.explain(Some(u64::MAX));
        let _ = p.to_string();
    }

    #[test]
    fn json_like_bodies_never_panic(
        status in prop_oneof![Just(400u16), Just(401), Just(403), Just(404), Just(429), Just(502)],
        code in "[A-Z_0-9]{0,16}",
        junk in "[ -~]{0,40}",
        cut in 0usize..120,
    ) {
        let full = format!("{{\"detailCode\":\"{code}\",\"message\":\"{junk}\",\"error\":\"{junk}\"}}");
        let body = full.as_bytes().get(..cut.min(full.len())).unwrap_or_default();
        for endpoint in Endpoint::ALL {
            let p = classify(endpoint, status, [("retry-after", junk.as_str())], body);
            prop_assert_eq!(p.status, status);
            let sse = [b"data:".as_slice(), body].concat();
            let _ = classify(endpoint, status, NO_HEADERS, &sse);
        }
    }
}
