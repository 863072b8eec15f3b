//! Spec 3.1, 3.2, 4.1, 4.2, 5.2, 7.4: codes, tokens, revocation, client auth.

use serde_json::{json, Value};

use crate::common::*;

async fn oauth_error(r: reqwest::Response) -> (u16, String, Option<String>) {
    let status = r.status().as_u16();
    let challenge = r
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let v: Value = r.json().await.unwrap();
    assert!(v["error_description"].is_string());
    (status, v["error"].as_str().unwrap().to_owned(), challenge)
}

// ---- 3.1 authorization code ------------------------------------------------

#[tokio::test]
async fn code_issued_exchanges_once_for_a_token_pair() {
    let env = Env::start().await;
    let code = env.code("live.read chat.send").await;
    let r = env.exchange(&code).await;
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["token_type"], "Bearer");
    assert_eq!(v["expires_in"], 3600);
    assert_eq!(v["scope"], "live.read chat.send");
    assert!(v["access_token"].is_string() && v["refresh_token"].is_string());
    assert_eq!(v.as_object().unwrap().len(), 5);
}

#[tokio::test]
async fn code_expired_after_60_s_is_invalid_grant() {
    let env = Env::start().await;
    let code = env.code(ALL).await;
    env.advance(60_000).await;
    let (s, e, _) = oauth_error(env.exchange(&code).await).await;
    assert_eq!((s, e.as_str()), (400, "invalid_grant"));
}

#[tokio::test]
async fn code_with_another_redirect_uri_is_invalid_grant_and_stays_usable() {
    let env = Env::start().await;
    let code = env.code(ALL).await;
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", "http://127.0.0.1/other"),
            ],
        )
        .await;
    assert_eq!(oauth_error(r).await.1, "invalid_grant");
    assert_eq!(env.exchange(&code).await.status().as_u16(), 200);
}

#[tokio::test]
async fn code_of_another_app_is_invalid_grant() {
    let env = Env::start().await;
    let other = env.ctl("/apps", json!({})).await;
    let code = env
        .ctl(
            "/consent",
            json!({"scope": ALL, "clientId": other["clientId"], "redirectUri": env.redirect}),
        )
        .await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        oauth_error(env.exchange(&code).await).await.1,
        "invalid_grant"
    );
}

#[tokio::test]
async fn code_reused_is_invalid_grant_and_revokes_everything() {
    let env = Env::start().await;
    env.live_start().await;
    let code = env.code(ALL).await;
    let v: Value = env.exchange(&code).await.json().await.unwrap();
    let access = v["access_token"].as_str().unwrap();
    let refresh = v["refresh_token"].as_str().unwrap();
    assert_eq!(env.get("/v1/live", access).await.status().as_u16(), 200);
    assert_eq!(
        oauth_error(env.exchange(&code).await).await.1,
        "invalid_grant"
    );
    let (s, p) = problem(env.get("/v1/live", access).await).await;
    assert_eq!((s, p["detailCode"].as_str()), (401, Some("OAPI_MNGR_0203")));
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
        )
        .await;
    assert_eq!(oauth_error(r).await.1, "invalid_grant");
}

// ---- 3.2 refresh and access tokens --------------------------------------------

#[tokio::test]
async fn refresh_rotates_old_access_lives_old_refresh_dies() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, refresh) = env.tokens(ALL).await;
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await;
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_ne!(v["refresh_token"].as_str().unwrap(), refresh);
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 200);
    assert_eq!(
        env.get("/v1/live", v["access_token"].as_str().unwrap())
            .await
            .status()
            .as_u16(),
        200
    );
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await;
    assert_eq!(oauth_error(r).await.1, "invalid_grant");
    // The old access token expires naturally.
    env.advance(3_600_000).await;
    let (s, p) = problem(env.get("/v1/live", &access).await).await;
    assert_eq!(s, 401);
    assert!(p.get("detailCode").is_none());
}

#[tokio::test]
async fn narrowed_consent_shows_in_the_next_refresh_and_gives_403() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, refresh) = env.tokens(ALL).await;
    env.ctl("/consent/narrow", json!({"scope": "events.chat chat.send"}))
        .await;
    let (s, p) = problem(env.get("/v1/live", &access).await).await;
    assert_eq!(s, 403);
    assert!(p.get("detailCode").is_none(), "{p}");
    let v: Value = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["scope"], "events.chat chat.send");
}

#[tokio::test]
async fn revoking_an_access_token_gives_0203_then_plain_401() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let r = env
        .oauth(
            "/v1/oauth/revoke",
            &[("token", &access), ("token_type_hint", "access_token")],
        )
        .await;
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.bytes().await.unwrap().is_empty());
    let (s, p) = problem(env.get("/v1/live", &access).await).await;
    assert_eq!((s, p["detailCode"].as_str()), (401, Some("OAPI_MNGR_0203")));
    env.advance(60_000).await;
    let (s, p) = problem(env.get("/v1/live", &access).await).await;
    assert_eq!(s, 401);
    assert!(p.get("detailCode").is_none());
}

#[tokio::test]
async fn revoking_a_refresh_token_revokes_its_access_token() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, refresh) = env.tokens(ALL).await;
    assert_eq!(
        env.oauth("/v1/oauth/revoke", &[("token", &refresh)])
            .await
            .status()
            .as_u16(),
        200
    );
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 401);
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await;
    assert_eq!(oauth_error(r).await.1, "invalid_grant");
}

#[tokio::test]
async fn revoking_unknown_or_another_clients_token_is_200_and_changes_nothing() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let r = env
        .oauth("/v1/oauth/revoke", &[("token", "no-such-token")])
        .await;
    assert_eq!(r.status().as_u16(), 200);
    let other = env.ctl("/apps", json!({})).await;
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!(
                "{}:{}",
                other["clientId"].as_str().unwrap(),
                other["clientSecret"].as_str().unwrap()
            )
        )
    );
    let r = env
        .http
        .post(format!("{}/v1/oauth/revoke", env.base))
        .header("authorization", basic)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("token", &access)]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 200);
}

#[tokio::test]
async fn disconnecting_the_integration_gives_401_and_needs_new_consent() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, refresh) = env.tokens(ALL).await;
    env.ctl("/integration/disconnect", json!({})).await;
    let (s, p) = problem(env.get("/v1/live", &access).await).await;
    assert_eq!((s, p["detailCode"].as_str()), (401, Some("OAPI_MNGR_0203")));
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await;
    assert_eq!(oauth_error(r).await.1, "invalid_grant");
    // Consent again: the bot's person id survives (spec 2.5).
    let (access2, _) = env.tokens(ALL).await;
    assert_eq!(env.get("/v1/live", &access2).await.status().as_u16(), 200);
}

// ---- 5.2 client authentication, 7.4 errors -------------------------------------

async fn raw_token(env: &Env, auth: Option<String>, ct: &str, body: String) -> reqwest::Response {
    let mut b = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .header("content-type", ct)
        .body(body);
    if let Some(a) = auth {
        b = b.header("authorization", a);
    }
    b.send().await.unwrap()
}

const FORM: &str = "application/x-www-form-urlencoded";

#[tokio::test]
async fn form_credentials_work_without_basic() {
    let env = Env::start().await;
    let code = env.code(ALL).await;
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", &env.redirect),
        ("client_id", &env.client_id),
        ("client_secret", &env.secret),
    ]);
    assert_eq!(
        raw_token(&env, None, FORM, body).await.status().as_u16(),
        200
    );
}

#[tokio::test]
async fn basic_beats_form_credentials() {
    let env = Env::start().await;
    let code = env.code(ALL).await;
    // Right Basic, wrong form: accepted.
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", &env.redirect),
        ("client_id", "00000000-0000-4000-8000-000000000000"),
        ("client_secret", "wrong"),
    ]);
    assert_eq!(
        raw_token(&env, Some(env.basic()), FORM, body)
            .await
            .status()
            .as_u16(),
        200
    );
    // Wrong Basic, right form: refused.
    let code = env.code(ALL).await;
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", &env.redirect),
        ("client_id", &env.client_id),
        ("client_secret", &env.secret),
    ]);
    let bad = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{}:nope", env.client_id)
        )
    );
    let (s, e, ch) = oauth_error(raw_token(&env, Some(bad), FORM, body).await).await;
    assert_eq!(
        (s, e.as_str(), ch.as_deref()),
        (401, "invalid_client", Some("Basic realm=\"oauth\""))
    );
}

#[tokio::test]
async fn no_credentials_is_invalid_client_with_challenge() {
    let env = Env::start().await;
    let (s, e, ch) = oauth_error(
        raw_token(
            &env,
            None,
            FORM,
            "grant_type=refresh_token&refresh_token=x".into(),
        )
        .await,
    )
    .await;
    assert_eq!(
        (s, e.as_str(), ch.as_deref()),
        (401, "invalid_client", Some("Basic realm=\"oauth\""))
    );
    // Revoke too.
    let r = env
        .http
        .post(format!("{}/v1/oauth/revoke", env.base))
        .header("content-type", FORM)
        .body("token=x")
        .send()
        .await
        .unwrap();
    let (s, e, ch) = oauth_error(r).await;
    assert_eq!(
        (s, e.as_str(), ch.as_deref()),
        (401, "invalid_client", Some("Basic realm=\"oauth\""))
    );
}

#[tokio::test]
async fn malformed_client_id_is_invalid_client() {
    let env = Env::start().await;
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", "x"),
        ("client_id", "not-a-uuid"),
        ("client_secret", &env.secret),
    ]);
    let (s, e, ch) = oauth_error(raw_token(&env, None, FORM, body).await).await;
    assert_eq!((s, e.as_str(), ch.is_some()), (401, "invalid_client", true));
}

#[tokio::test]
async fn missing_fields_are_invalid_request() {
    let env = Env::start().await;
    for fields in [
        vec![("code", "x"), ("redirect_uri", "y")],
        vec![("grant_type", "authorization_code"), ("redirect_uri", "y")],
        vec![("grant_type", "authorization_code"), ("code", "x")],
        vec![("grant_type", "refresh_token")],
    ] {
        let (s, e, _) = oauth_error(env.oauth("/v1/oauth/token", &fields).await).await;
        assert_eq!((s, e.as_str()), (400, "invalid_request"), "{fields:?}");
    }
    let (s, e, _) = oauth_error(
        env.oauth("/v1/oauth/revoke", &[("token_type_hint", "access_token")])
            .await,
    )
    .await;
    assert_eq!((s, e.as_str()), (400, "invalid_request"));
}

#[tokio::test]
async fn unknown_grant_is_unsupported_grant_type() {
    let env = Env::start().await;
    let (s, e, _) = oauth_error(
        env.oauth("/v1/oauth/token", &[("grant_type", "password")])
            .await,
    )
    .await;
    assert_eq!((s, e.as_str()), (400, "unsupported_grant_type"));
}

#[tokio::test]
async fn unknown_refresh_token_is_invalid_grant() {
    let env = Env::start().await;
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", "nope")],
        )
        .await;
    assert_eq!(oauth_error(r).await.1, "invalid_grant");
}

#[tokio::test]
async fn json_body_on_token_endpoint_is_415_0103() {
    let env = Env::start().await;
    let r = raw_token(
        &env,
        Some(env.basic()),
        "application/json",
        "{\"grant_type\":\"refresh_token\"}".into(),
    )
    .await;
    let (s, p) = problem(r).await;
    assert_eq!((s, p["detailCode"].as_str()), (415, Some("OAPI_MNGR_0103")));
}

#[tokio::test]
async fn get_on_token_endpoint_is_405_0103() {
    let env = Env::start().await;
    let r = env
        .http
        .get(format!("{}/v1/oauth/token", env.base))
        .send()
        .await
        .unwrap();
    let (s, p) = problem(r).await;
    assert_eq!((s, p["detailCode"].as_str()), (405, Some("OAPI_MNGR_0103")));
}

#[tokio::test]
async fn a_suspended_app_is_invalid_client_and_401() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, refresh) = env.tokens(ALL).await;
    env.ctl("/app/suspend", json!({})).await;
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await;
    let (s, e, ch) = oauth_error(r).await;
    assert_eq!((s, e.as_str(), ch.is_some()), (401, "invalid_client", true));
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 401);
    env.ctl("/app/suspend", json!({"suspended": false})).await;
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 200);
}
