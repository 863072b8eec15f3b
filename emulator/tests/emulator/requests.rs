//! The request log as a judge of a bot's manners: token safety (no refresh
//! token presented twice, no `invalid_grant`) and respect for a daily quota
//! block, from `GET /_emulator/requests` alone.

use std::collections::HashSet;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::*;

const DAY_MS: i64 = 86_400_000;

/// First 12 hex digits of SHA-256, computed here independently.
fn sha12(value: &str) -> String {
    Sha256::digest(value.as_bytes())
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Token safety: every refresh token presented once, no `invalid_grant`.
fn token_problems(requests: &[Value]) -> Vec<String> {
    let mut presented = HashSet::new();
    let mut problems = Vec::new();
    for r in requests.iter().filter(|r| r["path"] == "/v1/oauth/token") {
        if r["oauthError"] == "invalid_grant" {
            problems.push(format!("#{} answered invalid_grant", r["seq"]));
        }
        if r["grant"] == "refresh_token" {
            let credential = r["credential"].as_str().unwrap().to_owned();
            if !presented.insert(credential.clone()) {
                problems.push(format!(
                    "#{} presented refresh {credential} again",
                    r["seq"]
                ));
            }
        }
    }
    problems
}

/// Calls needing `perm` that `client` made while its daily block of `perm`
/// (or of the whole app) was in force: after a daily 429 until the
/// `Retry-After` it carried.
fn calls_during_block(requests: &[Value], client: &str, perm: &str) -> Vec<u64> {
    let mut until = i64::MIN;
    let mut calls = Vec::new();
    for r in requests.iter().filter(|r| r["clientId"] == client) {
        let at = r["atMs"].as_i64().unwrap();
        if r["permission"] != perm {
            continue;
        }
        if at < until {
            calls.push(r["seq"].as_u64().unwrap());
        }
        let daily = r["status"] == 429 && r["quota"] == "daily";
        if daily && (r["dailyScope"] == perm || r["dailyScope"].is_null()) {
            until = until.max(at + r["retryAfter"].as_i64().unwrap() * 1000);
        }
    }
    calls
}

async fn refresh(env: &Env, token: &str) -> (u16, Value) {
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", token)],
        )
        .await;
    problem(r).await
}

#[tokio::test]
async fn the_log_shows_grants_and_credential_fingerprints_never_values() {
    let env = Env::start().await;
    let code = env.code(ALL).await;
    let v: Value = env.exchange(&code).await.json().await.unwrap();
    let (a1, r1) = (
        v["access_token"].as_str().unwrap().to_owned(),
        v["refresh_token"].as_str().unwrap().to_owned(),
    );
    let (status, v) = refresh(&env, &r1).await;
    assert_eq!(status, 200);
    let r2 = v["refresh_token"].as_str().unwrap().to_owned();
    env.oauth("/v1/oauth/revoke", &[("token", &r2)]).await;
    let log = env.ctl_get("/requests").await;
    let text = log.to_string();
    for secret in [&code, &a1, &r1, &r2, &env.secret] {
        assert!(!text.contains(secret.as_str()), "a secret in the log");
    }
    let reqs = log["requests"].as_array().unwrap();
    let grants: Vec<(&str, &str)> = reqs
        .iter()
        .map(|r| {
            (
                r["grant"].as_str().unwrap(),
                r["credential"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        grants,
        [
            ("authorization_code", sha12(&code).as_str()),
            ("refresh_token", sha12(&r1).as_str()),
            ("revoke", sha12(&r2).as_str()),
        ]
    );
    for r in reqs {
        assert_eq!(r["clientId"], env.client_id.as_str());
        assert_eq!(r["integration"], "int-1");
        assert!(r.get("oauthError").is_none());
    }
    assert!(token_problems(reqs).is_empty());
}

#[tokio::test]
async fn a_refresh_token_presented_twice_and_invalid_grant_are_caught() {
    let env = Env::start().await;
    let (_, r1) = env.tokens(ALL).await;
    let (_, v) = refresh(&env, &r1).await;
    let r2 = v["refresh_token"].as_str().unwrap().to_owned();
    assert!(token_problems(
        env.ctl_get("/requests").await["requests"]
            .as_array()
            .unwrap()
    )
    .is_empty());
    // Two replicas refreshing the same token: the second loses.
    let (status, v) = refresh(&env, &r1).await;
    assert_eq!((status, v["error"].as_str()), (400, Some("invalid_grant")));
    let log = env.ctl_get("/requests").await;
    let reqs = log["requests"].as_array().unwrap();
    let last = reqs.last().unwrap();
    assert_eq!(last["oauthError"], "invalid_grant");
    assert_eq!(last["credential"], sha12(&r1));
    assert_eq!(last["integration"], "int-1");
    let problems = token_problems(reqs);
    assert_eq!(problems.len(), 2, "{problems:?}");
    // r2 is still the current one and was presented once.
    assert!(!problems.iter().any(|p| p.contains(&sha12(&r2))));
}

#[tokio::test]
async fn bot_calls_name_their_app_integration_and_permission() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    env.get("/v1/live", &access).await;
    env.get("/v1/live/fans", &access).await;
    env.chat(&access, "hi").await;
    let _s = env.stream(&access).await;
    env.get("/v1/live", "not-a-token").await;
    let log = env.ctl_get("/requests").await;
    let reqs = log["requests"].as_array().unwrap();
    let rows: Vec<(&str, Option<&str>, Option<&str>)> = reqs[1..]
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap(),
                r["permission"].as_str(),
                r["integration"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("/v1/live", Some("live.read"), Some("int-1")),
            ("/v1/live/fans", Some("fans.read"), Some("int-1")),
            ("/v1/live/chat", Some("chat.send"), Some("int-1")),
            ("/v1/live/events", None, Some("int-1")),
            ("/v1/live", Some("live.read"), None),
        ]
    );
    assert_eq!(reqs[1]["clientId"], env.client_id.as_str());
    assert!(reqs[5].get("clientId").is_none(), "unknown token: no app");
}

#[tokio::test]
async fn no_listeners_read_while_the_apps_daily_block_is_in_force() {
    let env = Env::start().await;
    env.live_start().await;
    env.ctl(
        "/quota",
        json!({"daily": {"perPermission": {"listeners.read": 1}}}),
    )
    .await;
    let (access, _) = env.tokens(ALL).await;
    assert_eq!(env.get("/v1/live/listeners", &access).await.status(), 200);
    let r = env.get("/v1/live/listeners", &access).await;
    assert_eq!(r.status(), 429);
    // A well-behaved bot goes on with other permissions only.
    assert_eq!(env.get("/v1/live/fans", &access).await.status(), 200);
    let log = env.ctl_get("/requests").await;
    let reqs = log["requests"].as_array().unwrap();
    let refused = reqs.iter().find(|r| r["status"] == 429).unwrap();
    assert_eq!(refused["quota"], "daily");
    assert_eq!(refused["dailyScope"], "listeners.read");
    assert_eq!(refused["permission"], "listeners.read");
    let now = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
    let midnight = (now / DAY_MS + 1) * DAY_MS;
    assert_eq!(refused["retryAfter"], (midnight - now + 999) / 1000);
    assert!(calls_during_block(reqs, &env.client_id, "listeners.read").is_empty());
    // Another bot of the same app (another DJ) asking during the block is caught:
    // the daily quota is the app's, across its integrations.
    let other = env.ctl("/consent", json!({"dj": "second"})).await;
    let v: Value = env
        .exchange(other["code"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    let second = v["access_token"].as_str().unwrap().to_owned();
    env.ctl("/live/start", json!({"dj": "second"})).await;
    assert_eq!(env.get("/v1/live/listeners", &second).await.status(), 429);
    let log = env.ctl_get("/requests").await;
    let reqs = log["requests"].as_array().unwrap();
    let caught = calls_during_block(reqs, &env.client_id, "listeners.read");
    assert_eq!(caught, [reqs.last().unwrap()["seq"].as_u64().unwrap()]);
    assert_eq!(reqs.last().unwrap()["integration"], other["integration"]);
    // After midnight the block is over: a call then is fine.
    env.advance(midnight - now).await;
    let (access, _) = env.tokens(ALL).await;
    assert_eq!(env.get("/v1/live/listeners", &access).await.status(), 200);
    let log = env.ctl_get("/requests").await;
    let reqs = log["requests"].as_array().unwrap();
    assert_eq!(
        calls_during_block(reqs, &env.client_id, "listeners.read"),
        caught
    );
}

#[tokio::test]
async fn the_log_pages_with_since_and_filters_by_path_and_client() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    for _ in 0..3 {
        env.get("/v1/live", &access).await;
    }
    env.get("/v1/live/fans", &access).await;
    let all = env.ctl_get("/requests").await;
    assert_eq!(all["total"], 5);
    let seqs = |v: &Value| -> Vec<u64> {
        v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["seq"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(seqs(&all), [1, 2, 3, 4, 5]);
    assert_eq!(seqs(&env.ctl_get("/requests?since=3").await), [4, 5]);
    assert_eq!(
        seqs(&env.ctl_get("/requests?path=/v1/live&since=2").await),
        [3, 4]
    );
    let mine = env
        .ctl_get(&format!("/requests?clientId={}", env.client_id))
        .await;
    assert_eq!(seqs(&mine), [1, 2, 3, 4, 5]);
    assert!(seqs(&env.ctl_get("/requests?clientId=nobody").await).is_empty());
    let r = env
        .http
        .get(format!("{}/_emulator/requests?since=x", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}
