//! Tests of the token state machine, the stored form and secret redaction.

use super::*;
use crate::proto::api::ClientAuth;
use crate::proto::http::BaseUrl;
use crate::proto::scope::Permission;
use crate::proto::secret::ClientCredentials;
use proptest::prelude::*;

const CLIENT_ID: &str = "0b3e8f3c-5a2b-4c1d-9e8f-7a6b5c4d3e2f";
const CLIENT_SECRET: &str = "CLIENT-SECRET-VALUE";
const T0: u64 = 1_732_250_000_000;
const MIN: u64 = 60_000;

fn client() -> TokenClient {
    TokenClient::new(
        BaseUrl::new("https://api.example.test").unwrap(),
        ClientCredentials::new(CLIENT_ID, CLIENT_SECRET).unwrap(),
    )
}

fn manager() -> TokenManager {
    TokenManager::new(client(), RefreshPolicy::default())
}

fn pair_body(access: &str, refresh: Option<&str>, scope: Option<&str>) -> Vec<u8> {
    let mut fields = vec![
        format!(r#""access_token":"{access}""#),
        r#""token_type":"Bearer""#.to_owned(),
        r#""expires_in":3600"#.to_owned(),
    ];
    if let Some(r) = refresh {
        fields.push(format!(r#""refresh_token":"{r}""#));
    }
    if let Some(s) = scope {
        fields.push(format!(r#""scope":"{s}""#));
    }
    format!("{{{}}}", fields.join(",")).into_bytes()
}

/// A manager holding generation-1 tokens AT1/RT1 issued at T0.
fn authorized() -> TokenManager {
    let mut m = manager();
    m.start_exchange("code-1", "https://bot.test/cb", T0)
        .unwrap();
    let out = m
        .on_response(
            200,
            &pair_body("AT1", Some("RT1"), Some("live.read events.chat")),
            T0 + 100,
        )
        .unwrap();
    assert!(matches!(out, TokenOutcome::Persist(ref t) if t.generation() == 1));
    m
}

fn persisted(out: TokenOutcome) -> Tokens {
    match out {
        TokenOutcome::Persist(t) => t,
        other => panic!("expected Persist, got {other:?}"),
    }
}

#[test]
fn exchange_sets_times_and_generation() {
    let mut m = manager();
    assert_eq!(
        m.status(T0),
        TokenStatus::Blocked(AuthProblem::NotAuthorized)
    );
    assert!(!m.refresh_due(T0));
    let req = m
        .start_exchange("code-1", "https://bot.test/cb", T0)
        .unwrap();
    insta::assert_json_snapshot!("exchange_request", req.redacted());
    assert_eq!(m.status(T0), TokenStatus::Exchanging);
    let t = persisted(
        m.on_response(
            200,
            &pair_body("AT1", Some("RT1"), Some("chat.send")),
            T0 + 250,
        )
        .unwrap(),
    );
    // Expiry counts from the send time (conservative).
    assert_eq!(t.issued_at_ms(), T0);
    assert_eq!(t.access_expires_at_ms(), T0 + 3_600_000);
    assert_eq!(
        t.refresh_expires_at_ms(),
        Some(T0 + DEFAULT_REFRESH_TOKEN_LIFETIME_MS)
    );
    assert!(t.scope().contains(&Permission::ChatSend));
    assert_eq!(m.access_token(T0).map(Secret::expose), Some("AT1"));
    assert_eq!(m.access_token(T0 + 3_600_000), None);
    assert_eq!(
        m.status(T0),
        TokenStatus::Valid {
            refresh_at_ms: T0 + 50 * MIN
        }
    );
    insta::assert_debug_snapshot!("tokens_after_exchange", t);
}

#[test]
fn refresh_is_due_ten_minutes_before_expiry() {
    let m = authorized();
    assert!(!m.refresh_due(T0 + 50 * MIN - 1));
    assert!(m.refresh_due(T0 + 50 * MIN));
    assert_eq!(m.status(T0 + 50 * MIN), TokenStatus::RefreshDue);
    assert_eq!(m.refresh_at_ms(), Some(T0 + 50 * MIN));
    // A short-lived token refreshes at half-life, never at once.
    let p = RefreshPolicy::default();
    assert_eq!(p.refresh_at_ms(0, 60_000), 30_000);
    assert_eq!(p.refresh_at_ms(0, 0), 0);
    assert_eq!(p.refresh_at_ms(10, 5), 5); // nonsense input: no panic
    let big = RefreshPolicy {
        margin_ms: u64::MAX,
        ..p
    };
    assert_eq!(big.refresh_at_ms(0, 3_600_000), 1_800_000);
}

#[test]
fn refresh_rotates_and_bumps_the_generation() {
    let mut m = authorized();
    let now = T0 + 50 * MIN;
    let req = m.start_refresh(now).unwrap();
    insta::assert_json_snapshot!("refresh_request", req.redacted());
    assert_eq!(
        String::from_utf8_lossy(&req.body),
        "grant_type=refresh_token&refresh_token=RT1"
    );
    assert_eq!(m.status(now), TokenStatus::Refreshing);
    assert!(!m.refresh_due(now));
    // Exactly one token request in flight.
    assert_eq!(
        m.start_refresh(now).unwrap_err(),
        OAuthError::Misuse(Misuse::TokenRequestInFlight)
    );
    assert_eq!(
        m.start_exchange("code-2", "https://bot.test/cb", now)
            .unwrap_err(),
        OAuthError::Misuse(Misuse::TokenRequestInFlight)
    );
    assert_eq!(
        m.revoke().unwrap_err(),
        OAuthError::Misuse(Misuse::TokenRequestInFlight)
    );
    let t = persisted(
        m.on_response(
            200,
            &pair_body("AT2", Some("RT2"), Some("chat.send")),
            now + 50,
        )
        .unwrap(),
    );
    assert_eq!(t.generation(), 2);
    assert_eq!(t.access_token().expose(), "AT2");
    assert_eq!(t.refresh_token().map(Secret::expose), Some("RT2"));
    assert_eq!(
        t.refresh_expires_at_ms(),
        Some(now + DEFAULT_REFRESH_TOKEN_LIFETIME_MS)
    );
    // The DJ narrowed consent: the new scope replaces the old one.
    assert!(!t.scope().contains(&Permission::LiveRead));
    assert_eq!(
        m.on_response(200, b"{}", now),
        Err(OAuthError::Misuse(Misuse::NoTokenRequestInFlight))
    );
}

#[test]
fn refresh_without_refresh_token_or_scope_keeps_the_old_ones() {
    let mut m = authorized();
    let now = T0 + 55 * MIN;
    m.start_refresh(now).unwrap();
    let t = persisted(
        m.on_response(200, &pair_body("AT2", None, None), now)
            .unwrap(),
    );
    assert_eq!(t.refresh_token().map(Secret::expose), Some("RT1"));
    assert_eq!(
        t.refresh_expires_at_ms(),
        Some(T0 + DEFAULT_REFRESH_TOKEN_LIFETIME_MS)
    );
    assert_eq!(t.scope().to_string(), "live.read events.chat");
    assert_eq!(t.generation(), 2);
    // The next refresh sends the kept refresh token.
    let req = m.start_refresh(now + 60 * MIN).unwrap();
    assert!(String::from_utf8_lossy(&req.body).ends_with("refresh_token=RT1"));
}

#[test]
fn invalid_grant_on_refresh_needs_authorization() {
    let mut m = authorized();
    let now = T0 + 50 * MIN;
    m.start_refresh(now).unwrap();
    let out = m
        .on_response(
            400,
            br#"{"error":"invalid_grant","error_description":"rotated"}"#,
            now,
        )
        .unwrap();
    assert_eq!(out, TokenOutcome::Blocked(AuthProblem::RefreshRejected));
    assert!(AuthProblem::RefreshRejected.needs_authorization());
    assert!(!m.refresh_due(now));
    assert_eq!(m.access_token(now), None);
    assert_eq!(
        m.status(now),
        TokenStatus::Blocked(AuthProblem::RefreshRejected)
    );
    assert_eq!(
        m.start_refresh(now).unwrap_err(),
        OAuthError::Blocked(AuthProblem::RefreshRejected)
    );
    // A new authorization clears it and the generation keeps growing.
    m.start_exchange("code-2", "https://bot.test/cb", now)
        .unwrap();
    let t = persisted(
        m.on_response(200, &pair_body("AT9", Some("RT9"), Some("live.read")), now)
            .unwrap(),
    );
    assert_eq!(t.generation(), 2);
    assert_eq!(
        m.status(now),
        TokenStatus::Valid {
            refresh_at_ms: now + 50 * MIN
        }
    );
}

#[test]
fn transient_refresh_failures_are_retried_later() {
    let mut m = authorized();
    let now = T0 + 50 * MIN;
    for (status, body, error) in [
        (500, &br#"{"detailCode":"OAPI_MNGR_1002"}"#[..], None),
        (429, &b""[..], None),
        (503, &b"<html>unavailable</html>"[..], None),
        (408, &b""[..], None),
    ] {
        m.start_refresh(now).unwrap();
        let out = m.on_response(status, body, now).unwrap();
        assert_eq!(
            out,
            TokenOutcome::RetryLater(TokenFailure::Http { status, error })
        );
        assert!(m.refresh_due(now));
        assert_eq!(m.access_token(now).map(Secret::expose), Some("AT1"));
    }
    m.start_refresh(now).unwrap();
    assert_eq!(
        m.on_transport_failure(now).unwrap(),
        TokenOutcome::RetryLater(TokenFailure::Transport)
    );
    m.start_refresh(now).unwrap();
    assert!(matches!(
        m.on_response(200, b"<html>", now).unwrap(),
        TokenOutcome::RetryLater(TokenFailure::InvalidBody(_))
    ));
    assert_eq!(m.tokens().map(Tokens::generation), Some(1));
}

#[test]
fn a_malformed_refresh_is_not_retried() {
    for (status, body, error) in [
        (
            400,
            &br#"{"error":"invalid_request"}"#[..],
            Some(OAuthErrorCode::InvalidRequest),
        ),
        (
            400,
            &br#"{"error":"unsupported_grant_type"}"#[..],
            Some(OAuthErrorCode::UnsupportedGrantType),
        ),
        (415, &b""[..], None),
    ] {
        let mut m = authorized();
        m.start_refresh(T0).unwrap();
        let failure = TokenFailure::Http { status, error };
        assert_eq!(
            m.on_response(status, body, T0).unwrap(),
            TokenOutcome::Blocked(AuthProblem::RequestRejected(failure))
        );
        assert!(!m.refresh_due(T0));
    }
}

#[test]
fn client_rejection_blocks_without_blaming_the_dj() {
    let mut m = authorized();
    m.start_refresh(T0).unwrap();
    let out = m
        .on_response(401, br#"{"error":"invalid_client"}"#, T0)
        .unwrap();
    assert_eq!(out, TokenOutcome::Blocked(AuthProblem::ClientRejected));
    assert!(!AuthProblem::ClientRejected.needs_authorization());
    let mut m = manager();
    m.start_exchange("c", "https://r", T0).unwrap();
    assert_eq!(
        m.on_response(400, br#"{"error":"invalid_client"}"#, T0)
            .unwrap(),
        TokenOutcome::Blocked(AuthProblem::ClientRejected)
    );
}

#[test]
fn the_code_exchange_is_never_retried() {
    for (status, body) in [
        (500u16, &b""[..]),
        (429, &b""[..]),
        (400, &br#"{"error":"invalid_grant"}"#[..]),
        (200, &b"garbage"[..]),
    ] {
        let mut m = manager();
        m.start_exchange("code-x", "https://r", T0).unwrap();
        let out = m.on_response(status, body, T0).unwrap();
        assert!(
            matches!(out, TokenOutcome::Blocked(AuthProblem::ExchangeFailed(_))),
            "{status}: {out:?}"
        );
        // The same code is refused locally.
        assert_eq!(
            m.start_exchange("code-x", "https://r", T0).unwrap_err(),
            OAuthError::CodeAlreadyUsed
        );
        assert_eq!(
            m.start_refresh(T0).unwrap_err(),
            OAuthError::Blocked(match out {
                TokenOutcome::Blocked(p) => p,
                _ => unreachable!(),
            })
        );
    }
    let mut m = manager();
    m.start_exchange("code-y", "https://r", T0).unwrap();
    assert_eq!(
        m.on_transport_failure(T0).unwrap(),
        TokenOutcome::Blocked(AuthProblem::ExchangeFailed(TokenFailure::Transport))
    );
    assert_eq!(
        m.start_exchange("code-y", "https://r", T0).unwrap_err(),
        OAuthError::CodeAlreadyUsed
    );
    // A bad request is refused before the code is spent.
    assert!(matches!(
        m.start_exchange("code-z", "bad\nuri", T0),
        Err(OAuthError::Request(_))
    ));
    assert!(m.start_exchange("code-z", "https://r", T0).is_ok());
}

#[test]
fn refresh_token_expiry_and_absence_block() {
    let mut m = authorized();
    let late = T0 + DEFAULT_REFRESH_TOKEN_LIFETIME_MS;
    assert!(m.tokens().unwrap().is_refresh_expired(late));
    assert_eq!(
        m.start_refresh(late).unwrap_err(),
        OAuthError::Blocked(AuthProblem::RefreshTokenExpired)
    );
    assert_eq!(
        m.status(late),
        TokenStatus::Blocked(AuthProblem::RefreshTokenExpired)
    );

    let mut m = manager();
    m.start_exchange("c", "https://r", T0).unwrap();
    m.on_response(200, &pair_body("AT", None, None), T0)
        .unwrap();
    assert!(m.tokens().unwrap().scope().is_empty());
    assert_eq!(
        m.start_refresh(T0).unwrap_err(),
        OAuthError::Blocked(AuthProblem::NoRefreshToken)
    );
    assert_eq!(
        manager().start_refresh(T0).unwrap_err(),
        OAuthError::Blocked(AuthProblem::NotAuthorized)
    );
}

#[test]
fn a_rejected_access_token_makes_refresh_due_now() {
    let mut m = authorized();
    assert!(!m.refresh_due(T0 + MIN));
    let g1 = m.tokens().unwrap().generation();
    assert_eq!(m.on_unauthorized(g1), Unauthorized::Refresh);
    assert!(m.refresh_due(T0 + MIN));
    m.start_refresh(T0 + MIN).unwrap();
    m.on_response(200, &pair_body("AT2", Some("RT2"), None), T0 + MIN)
        .unwrap();
    assert!(!m.refresh_due(T0 + 2 * MIN));
    let mut fresh = manager();
    assert_eq!(fresh.on_unauthorized(0), Unauthorized::Reauthorize);
    assert!(!fresh.refresh_due(T0));
}

#[test]
fn the_one_refresh_rule_is_per_pair_and_reset_by_any_other_answer() {
    let mut m = authorized();
    let g1 = m.tokens().unwrap().generation();
    // A 401: one refresh.
    assert_eq!(m.on_unauthorized(g1), Unauthorized::Refresh);
    // Another requester's 401 with the same pair meanwhile: the same refresh.
    assert_eq!(m.on_unauthorized(g1), Unauthorized::Refresh);
    m.start_refresh(T0).unwrap();
    m.on_response(200, &pair_body("AT2", Some("RT2"), None), T0)
        .unwrap();
    let g2 = m.tokens().unwrap().generation();
    // A late 401 for the old pair: retry with the new one, no refresh spent.
    assert_eq!(m.on_unauthorized(g1), Unauthorized::RetryWithNewer);
    assert!(!m.refresh_due(T0));
    // The pair that answers a 401 is refused too: the grant is gone.
    assert_eq!(m.on_unauthorized(g2), Unauthorized::Reauthorize);
    assert_eq!(m.problem(), Some(&AuthProblem::AccessRejected));
    assert!(m.access_token(T0).is_none());

    // Once a request is accepted with the new pair, a later 401 gets its
    // refresh again.
    let mut m = authorized();
    let g1 = m.tokens().unwrap().generation();
    assert_eq!(m.on_unauthorized(g1), Unauthorized::Refresh);
    m.start_refresh(T0).unwrap();
    m.on_response(200, &pair_body("AT2", Some("RT2"), None), T0)
        .unwrap();
    let g2 = m.tokens().unwrap().generation();
    m.on_accepted(g2);
    assert_eq!(m.on_unauthorized(g2), Unauthorized::Refresh);

    // A scheduled refresh's pair is not on probation.
    let mut m = authorized();
    m.start_refresh(T0).unwrap();
    m.on_response(200, &pair_body("AT2", Some("RT2"), None), T0)
        .unwrap();
    let g2 = m.tokens().unwrap().generation();
    assert_eq!(m.on_unauthorized(g2), Unauthorized::Refresh);
}

#[test]
fn revoke_forgets_the_tokens() {
    let mut m = authorized();
    let req = m.revoke().unwrap();
    insta::assert_json_snapshot!("revoke_request", req.redacted());
    assert_eq!(
        String::from_utf8_lossy(&req.body),
        "token=RT1&token_type_hint=refresh_token"
    );
    assert!(m.tokens().is_none());
    assert_eq!(m.status(T0), TokenStatus::Blocked(AuthProblem::Revoked));
    assert_eq!(m.revoke().unwrap_err(), OAuthError::NoTokens);

    let mut m = manager();
    m.start_exchange("c", "https://r", T0).unwrap();
    m.on_response(200, &pair_body("AT", None, None), T0)
        .unwrap();
    let req = m.revoke().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&req.body),
        "token=AT&token_type_hint=access_token"
    );
}

#[test]
fn stored_form_round_trips_and_is_versioned() {
    let m = authorized();
    let t = m.tokens().unwrap().clone();
    let json = t.to_json();
    insta::assert_snapshot!("stored_tokens", json.as_str());
    let back = Tokens::from_json(json.as_bytes()).unwrap();
    assert_eq!(back, t);
    let resumed = TokenManager::with_tokens(client(), RefreshPolicy::default(), back);
    assert_eq!(resumed.access_token(T0).map(Secret::expose), Some("AT1"));
    assert_eq!(resumed.refresh_at_ms(), Some(T0 + 50 * MIN));

    let v2 = json.replace(r#""version":1"#, r#""version":2"#);
    assert_eq!(
        Tokens::from_json(v2.as_bytes()),
        Err(LoadError::UnsupportedVersion(2))
    );
    let other = json.replace("onair.tokens", "other");
    assert_eq!(
        Tokens::from_json(other.as_bytes()),
        Err(LoadError::UnknownFormat)
    );
    let no_version = json.replace(r#""version":1,"#, "");
    assert!(matches!(
        Tokens::from_json(no_version.as_bytes()),
        Err(LoadError::Invalid(_))
    ));
    let no_expiry = json.replace(r#""refresh_expires_at_ms":"#, r#""x":"#);
    assert!(matches!(
        Tokens::from_json(no_expiry.as_bytes()),
        Err(LoadError::Invalid(_))
    ));
    let injected = json.replace("AT1", "AT1\\r\\nX: y");
    assert!(matches!(
        Tokens::from_json(injected.as_bytes()),
        Err(LoadError::Invalid(_))
    ));
    // Unknown fields are ignored (a newer writer may add some).
    let extra = json.replace(r#""version":1"#, r#""version":1,"note":"x""#);
    assert_eq!(Tokens::from_json(extra.as_bytes()).unwrap(), t);
    // Errors never quote the input.
    let broken = json.replace(r#""generation":1"#, r#""generation":"AT1""#);
    let e = Tokens::from_json(broken.as_bytes()).unwrap_err();
    assert!(!format!("{e} {e:?}").contains("AT1"));
    assert!(matches!(e, LoadError::Json { .. }));
}

#[test]
fn adopt_takes_only_newer_pairs() {
    let mut a = authorized();
    let mut b = TokenManager::with_tokens(
        client(),
        RefreshPolicy::default(),
        a.tokens().unwrap().clone(),
    );
    // Process B refreshes and stores generation 2.
    b.start_refresh(T0 + 50 * MIN).unwrap();
    let newer = persisted(
        b.on_response(200, &pair_body("AT2", Some("RT2"), None), T0 + 50 * MIN)
            .unwrap(),
    );
    let older = a.tokens().unwrap().clone();
    assert!(newer.is_newer_than(&older));
    assert!(!b.adopt(older));
    let mut exchanging = TokenManager::new(client(), RefreshPolicy::default());
    exchanging
        .start_exchange("code", "https://bot.test/cb", T0)
        .unwrap();
    assert!(
        !exchanging.adopt(newer.clone()),
        "refused during an exchange"
    );
    // A refresh in flight is dropped: the store's pair makes it needless.
    a.start_refresh(T0).unwrap();
    assert!(a.adopt(newer.clone()));
    assert_eq!(a.tokens(), Some(&newer));
    assert!(a.on_response(200, b"{}", T0).is_err(), "nothing in flight");
    // The next pair A makes is generation 3.
    a.start_refresh(T0 + 100 * MIN).unwrap();
    let t = persisted(
        a.on_response(200, &pair_body("AT3", None, None), T0 + 100 * MIN)
            .unwrap(),
    );
    assert_eq!(t.generation(), 3);
}

#[test]
fn secrets_never_show_in_debug_display_or_errors() {
    let secrets = [CLIENT_SECRET, "AT1", "RT1", "AT2", "RT2"];
    let mut m = authorized();
    let mut shown = vec![format!("{m:?}")];
    let t = m.tokens().unwrap().clone();
    shown.push(format!("{t:?} {t}"));
    shown.push(format!("{:?} {}", t.access_token(), t.access_token()));
    let creds = ClientCredentials::new(CLIENT_ID, CLIENT_SECRET).unwrap();
    shown.push(format!("{creds:?} {:?}", client()));
    let req = m.start_refresh(T0).unwrap();
    shown.push(format!("{req:?} {:?}", req.redacted()));
    let out = m
        .on_response(200, &pair_body("AT2", Some("RT2"), None), T0)
        .unwrap();
    shown.push(format!("{out:?}"));
    shown.push(format!("{m:?}"));
    let revoke = m.revoke().unwrap();
    shown.push(format!("{revoke:?}"));
    let e = OAuthError::Blocked(AuthProblem::ExchangeFailed(TokenFailure::InvalidBody(
        crate::proto::api::decode_token_pair(br#"{"access_token":"AT1","token_type":1}"#)
            .unwrap_err(),
    )));
    shown.push(format!("{e} {e:?}"));
    for c in [ClientAuth::FormFields, ClientAuth::BasicFormEncoded] {
        let r = client().with_auth(c).refresh(&Secret::new("RT1")).unwrap();
        shown.push(format!("{r:?}"));
    }
    let all = shown.join("\n");
    for s in secrets {
        assert!(!all.contains(s), "{s} leaked:\n{all}");
    }
    assert!(all.contains("<redacted>"));
}

#[test]
fn secrets_are_zeroized_on_drop() {
    fn zeroize_on_drop<T: zeroize::ZeroizeOnDrop>() {}
    zeroize_on_drop::<Secret>();
    // The stored form is handed out in a zeroizing buffer.
    let json: Zeroizing<String> = authorized().tokens().unwrap().to_json();
    assert!(json.contains("\"access_token\":\"AT1\""));
}

#[derive(Debug, Clone)]
enum Op {
    Exchange(u8),
    Refresh,
    Respond(u16, u8),
    Transport,
    Rejected,
    Revoke,
    Adopt(u64),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..4).prop_map(Op::Exchange),
        Just(Op::Refresh),
        (
            prop::sample::select(vec![200u16, 400, 401, 429, 500, 502]),
            0u8..5
        )
            .prop_map(|(s, b)| Op::Respond(s, b)),
        Just(Op::Transport),
        Just(Op::Rejected),
        Just(Op::Revoke),
        (0u64..5).prop_map(Op::Adopt),
        (0u64..40_000_000_000).prop_map(Op::Advance),
    ]
}

proptest! {
    /// No sequence of calls and responses panics, holds two requests in
    /// flight, lowers the generation, or leaks a secret into Debug.
    #[test]
    fn token_machine_invariants(ops in proptest::collection::vec(op(), 0..60)) {
        let mut m = manager();
        let mut now = T0;
        let mut in_flight = false;
        let mut last_generation = 0;
        for op in ops {
            match op {
                Op::Exchange(c) => {
                    let r = m.start_exchange(&format!("code-{c}"), "https://r", now);
                    if in_flight { prop_assert_eq!(r.unwrap_err(), OAuthError::Misuse(Misuse::TokenRequestInFlight)); }
                    else if r.is_ok() { in_flight = true; }
                }
                Op::Refresh => {
                    let r = m.start_refresh(now);
                    if in_flight { prop_assert_eq!(r.unwrap_err(), OAuthError::Misuse(Misuse::TokenRequestInFlight)); }
                    else if r.is_ok() { in_flight = true; }
                }
                Op::Respond(status, b) => {
                    let body: Vec<u8> = match b {
                        0 => pair_body("ATn", Some("RTn"), Some("live.read")),
                        1 => pair_body("ATn", None, None),
                        2 => br#"{"error":"invalid_grant"}"#.to_vec(),
                        3 => br#"{"error":"invalid_client"}"#.to_vec(),
                        _ => b"\xff{".to_vec(),
                    };
                    let r = m.on_response(status, &body, now);
                    prop_assert_eq!(r.is_ok(), in_flight);
                    in_flight = false;
                }
                Op::Transport => {
                    prop_assert_eq!(m.on_transport_failure(now).is_ok(), in_flight);
                    in_flight = false;
                }
                Op::Rejected => {
                    let g = m.tokens().map_or(0, Tokens::generation);
                    let _ = m.on_unauthorized(g);
                }
                Op::Revoke => {
                    let r = m.revoke();
                    if in_flight { prop_assert_eq!(r.unwrap_err(), OAuthError::Misuse(Misuse::TokenRequestInFlight)); }
                }
                Op::Adopt(g) => {
                    if let Some(t) = m.tokens().cloned() {
                        let mut t = t;
                        t.generation = t.generation.saturating_add(g);
                        // A newer pair drops a refresh in flight (not an exchange).
                        if m.adopt(t) { in_flight = false; }
                    }
                }
                Op::Advance(ms) => now = now.saturating_add(ms),
            }
            let g = m.tokens().map_or(last_generation, Tokens::generation);
            prop_assert!(g >= last_generation);
            last_generation = g;
            let status = m.status(now);
            prop_assert_eq!(in_flight, matches!(status, TokenStatus::Exchanging | TokenStatus::Refreshing));
            if in_flight { prop_assert!(!m.refresh_due(now)); }
            let shown = format!("{m:?} {status:?}");
            prop_assert!(!shown.contains("ATn") && !shown.contains(CLIENT_SECRET));
        }
    }

    #[test]
    fn load_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Tokens::from_json(&bytes);
    }
}
