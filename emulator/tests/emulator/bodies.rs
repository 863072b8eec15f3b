//! Every JSON body the emulator writes, byte for byte: REST resources, problem
//! bodies (7.1), stream open failures (7.2), OAuth bodies (4.1, 7.4), event
//! payloads and frames (2.6, 4.6), control errors, the consent page, the
//! request log and the ledger. One seeded,
//! frozen-clock run; the transcript is an insta snapshot, so a change in any
//! field's name, order, nullability or escaping shows up as a diff.

use onair_emulator::Emulator;
use serde_json::{json, Value};

use crate::common::*;

/// The transcript of one run: a label, the status, the exact body text.
#[derive(Default)]
struct Transcript {
    entries: Vec<String>,
    /// Secrets the run drew (tokens, codes, ids): replaced by names.
    secrets: Vec<(String, String)>,
}

impl Transcript {
    fn secret(&mut self, value: &str, name: &str) {
        self.secrets.push((value.to_owned(), format!("[{name}]")));
    }

    fn add(&mut self, label: &str, status: u16, body: &str) {
        self.entries.push(format!(
            "== {label}\n{status}\n{}",
            body.trim_end_matches('\n')
        ));
    }

    async fn response(&mut self, label: &str, r: reqwest::Response) -> String {
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        self.add(label, status, &body);
        body
    }

    fn frame(&mut self, label: &str, frame: &str) {
        self.entries.push(format!("== frame: {label}\n{frame}"));
    }

    fn text(&self) -> String {
        let mut out = self.entries.join("\n\n");
        for (value, name) in &self.secrets {
            out = out.replace(value.as_str(), name);
        }
        out
    }
}

/// `body` with the write sequence's numbers (`"writeSeq"`, `"openedSeq"`,
/// `"lastWriteSeq"`, `"closedSeq"`) shown as `[n]`.
fn write_numbers(body: &str) -> String {
    let mut out = body.to_owned();
    for key in [
        "\"writeSeq\":",
        "\"openedSeq\":",
        "\"lastWriteSeq\":",
        "\"closedSeq\":",
    ] {
        let mut done = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(key) {
            let (head, tail) = rest.split_at(i + key.len());
            done.push_str(head);
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            done.push_str(if digits > 0 { "[n]" } else { "" });
            rest = &tail[digits..];
        }
        done.push_str(rest);
        out = done;
    }
    out
}

async fn control_raw(env: &Env, method: &str, path: &str, body: &str) -> reqwest::Response {
    let url = format!("{}/_emulator{path}", env.base);
    let req = if method == "GET" {
        env.http.get(url)
    } else {
        env.http
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_owned())
    };
    req.send().await.unwrap()
}

#[tokio::test]
async fn every_body_the_emulator_writes() {
    let env = Env::with(Emulator::builder().page_size(2)).await;
    let mut t = Transcript::default();
    t.secret(&env.client_id, "client id");
    t.secret(&env.secret, "client secret");

    // OAuth: a pair, a rotation, the errors of 7.4.
    env.live_start().await;
    let code = env.code(ALL).await;
    t.secret(&code, "code 1");
    let body = t
        .response("token: exchange", env.exchange(&code).await)
        .await;
    let v: Value = serde_json::from_str(&body).unwrap();
    let (access, refresh) = (
        v["access_token"].as_str().unwrap().to_owned(),
        v["refresh_token"].as_str().unwrap().to_owned(),
    );
    t.secret(&access, "access 1");
    t.secret(&refresh, "refresh 1");
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await;
    let body = t.response("token: refresh", r).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    let access = v["access_token"].as_str().unwrap().to_owned();
    t.secret(&access, "access 2");
    t.secret(v["refresh_token"].as_str().unwrap(), "refresh 2");
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await;
    t.response("token: the spent refresh token", r).await;
    let r = env.oauth("/v1/oauth/token", &[]).await;
    t.response("token: no grant_type", r).await;
    let r = env
        .oauth("/v1/oauth/token", &[("grant_type", "password")])
        .await;
    t.response("token: an unknown grant", r).await;
    let r = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("grant_type", "refresh_token"),
            ("client_id", &env.client_id),
            ("client_secret", "wrong \"secret\""),
        ]))
        .send()
        .await
        .unwrap();
    t.response("token: a wrong secret (form)", r).await;
    let r = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    t.response("token: a JSON body", r).await;
    let r = env.oauth("/v1/oauth/revoke", &[("token", "nothing")]).await;
    t.response("revoke", r).await;

    // Problem bodies (7.1).
    let r = env.get("/v1/nowhere", &access).await;
    t.response("problem: no such endpoint", r).await;
    let r = env
        .http
        .post(format!("{}/v1/live", env.base))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    t.response("problem: wrong method", r).await;
    t.response(
        "problem: a bad token",
        env.get("/v1/live", "not-a-token").await,
    )
    .await;
    t.response(
        "problem: listeners, a bad cursor",
        env.get("/v1/live/listeners?cursor=bogus", &access).await,
    )
    .await;
    t.response("chat: blank", env.chat(&access, " \t").await)
        .await;
    t.response("chat: too long", env.chat(&access, &"x".repeat(201)).await)
        .await;
    let r = env
        .http
        .post(format!("{}/v1/live/chat", env.base))
        .bearer_auth(&access)
        .body("{\"message\":\"hi\"}")
        .send()
        .await
        .unwrap();
    t.response("chat: no content type", r).await;
    let r = env
        .http
        .post(format!("{}/v1/live/chat", env.base))
        .bearer_auth(&access)
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .unwrap();
    t.response("chat: text/plain", r).await;
    env.ctl(
        "/fail",
        json!({"path": "/v1/live/fans", "status": 502, "times": 1}),
    )
    .await;
    t.response(
        "problem: injected 502",
        env.get("/v1/live/fans", &access).await,
    )
    .await;
    env.ctl(
        "/fail",
        json!({"path": "/v1/oauth/token", "status": 503, "times": 1}),
    )
    .await;
    let r = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", "x")],
        )
        .await;
    t.response("token: injected 503", r).await;

    // Stream open failures (7.2).
    t.response("events: a bad token", env.open("nope").await)
        .await;
    let r = env
        .http
        .get(format!("{}/v1/live/events", env.base))
        .bearer_auth(&access)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    t.response("events: a wrong Accept", r).await;
    env.ctl(
        "/fail",
        json!({"path": "/v1/live/events", "status": 502, "times": 1}),
    )
    .await;
    t.response("events: injected 502", env.open(&access).await)
        .await;

    // The resources (2.2, 4.3–4.5), with strings that need escaping.
    env.ctl("/live/end", json!({})).await;
    t.response("live: not on air", env.get("/v1/live", &access).await)
        .await;
    t.response("events: not on air", env.open(&access).await)
        .await;
    env.ctl(
        "/live/start",
        json!({
            "title": "Night \"shift\" \\ </script>\u{2028}",
            "welcomeMessage": "hi\n\ttab \u{1}",
            "categories": ["music", "🎧"],
            "tags": [],
        }),
    )
    .await;
    // A manager's stream, so presence events reach it too.
    env.ctl("/state", json!({"botManager": true})).await;
    let mut s = env.stream(&access).await;
    for (i, who) in ["Ana", "Ömer \"O\"", "李雷", "👩‍🚀 astro"].iter().enumerate() {
        env.emit(
            "presence",
            json!({"user": {"id": format!("p{i}"), "nickname": who}}),
        )
        .await;
        s.event().await;
    }
    env.emit(
        "donation",
        json!({"user": {"id": "p1", "nickname": "Ömer \"O\""}, "amount": 500}),
    )
    .await;
    s.event().await;
    env.emit(
        "donation",
        json!({"user": {"id": "p2", "nickname": "李雷"}, "amount": 70}),
    )
    .await;
    s.event().await;
    t.response("live", env.get("/v1/live", &access).await).await;
    let body = t
        .response(
            "listeners: page 1",
            env.get("/v1/live/listeners", &access).await,
        )
        .await;
    let v: Value = serde_json::from_str(&body).unwrap();
    let mut cursor = v["nextCursor"].as_str().map(str::to_owned);
    let mut page = 2;
    while let Some(c) = cursor {
        let path = format!("/v1/live/listeners?cursor={}", urlencode(&c));
        let body = t
            .response(
                &format!("listeners: page {page}"),
                env.get(&path, &access).await,
            )
            .await;
        let v: Value = serde_json::from_str(&body).unwrap();
        cursor = v["nextCursor"].as_str().map(str::to_owned);
        page += 1;
    }
    t.response("fans", env.get("/v1/live/fans", &access).await)
        .await;

    // Event payloads (2.6): defaults, explicit values, nulls, passthrough.
    let emits = [
        (
            "chat, explicit, escapes",
            "chat",
            json!({"user": {"id": "u1", "nickname": "Mina \"M\" \\ </script>\u{2028}", "extra": 1},
                   "message": "tab\there 👩‍🚀 \u{1}", "sentTime": "2025-11-23T06:40:00Z"}),
        ),
        ("chat, defaults", "chat", json!({})),
        (
            "chat, the DJ",
            "chat",
            json!({"isDj": true, "message": "DJ here"}),
        ),
        (
            "chat, a null nickname",
            "chat",
            json!({"user": {"id": "u2", "nickname": null}, "message": "x"}),
        ),
        (
            "chat, unknown input fields pass through",
            "chat",
            json!({"message": "x", "zeta": {"b": [1, 2.5, null]}, "alpha": "a",
                   "user": {"id": "u9", "nickname": "Z"}}),
        ),
        ("presence, defaults", "presence", json!({})),
        (
            "presence, explicit",
            "presence",
            json!({"user": {"id": "u3", "nickname": "Ana"}, "type": "LEAVE", "fanRank": null,
                   "isManager": true, "favoriteTemperature": 36.5, "time": "2025-11-23T06:41:00.5Z"}),
        ),
        (
            "presence, a whole temperature and a rank",
            "presence",
            json!({"user": {"id": "u4"}, "favoriteTemperature": 37, "fanRank": 3}),
        ),
        (
            "presence, a null temperature",
            "presence",
            json!({"user": {"id": "u5"}, "favoriteTemperature": null}),
        ),
        ("like, defaults", "like", json!({})),
        (
            "like, paid",
            "like",
            json!({"type": "PAID", "amount": 10, "extraAmount": 5, "combo": 3}),
        ),
        (
            "like, paid, no combo",
            "like",
            json!({"type": "PAID", "combo": null, "totalAmount": 99}),
        ),
        ("donation, defaults", "donation", json!({})),
        (
            "donation, explicit",
            "donation",
            json!({"user": {"id": "u6", "nickname": "Zoë"}, "amount": 1000, "message": "thanks 💖"}),
        ),
        (
            "donation, a null message",
            "donation",
            json!({"amount": 1, "message": null, "omega": true}),
        ),
    ];
    for (label, event, data) in &emits {
        let r = control_raw(
            &env,
            "POST",
            "/emit",
            &json!({"event": event, "data": data}).to_string(),
        )
        .await;
        t.response(&format!("emit: {label}"), r).await;
        let f = s.event().await;
        t.frame(label, &f);
    }

    // A second bot on the same broadcast: its join and its chat reach the first.
    let app2 = env.ctl("/apps", json!({})).await;
    let (id2, secret2) = (
        app2["clientId"].as_str().unwrap().to_owned(),
        app2["clientSecret"].as_str().unwrap().to_owned(),
    );
    t.secret(&id2, "client id 2");
    t.secret(&secret2, "client secret 2");
    let c2 = env
        .ctl(
            "/consent",
            json!({"scope": ALL, "clientId": id2, "redirectUri": env.redirect}),
        )
        .await;
    let code2 = c2["code"].as_str().unwrap().to_owned();
    t.secret(&code2, "code 3");
    t.secret(c2["integration"].as_str().unwrap(), "integration 2");
    let r = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("grant_type", "authorization_code"),
            ("code", &code2),
            ("redirect_uri", &env.redirect),
            ("client_id", &id2),
            ("client_secret", &secret2),
        ]))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    let access2 = v["access_token"].as_str().unwrap().to_owned();
    t.secret(&access2, "access 4");
    t.secret(v["refresh_token"].as_str().unwrap(), "refresh 4");
    let mut s2 = env.stream(&access2).await;
    let f = s.event().await;
    t.frame("the second bot joins", &f);
    assert_eq!(env.chat(&access2, "hello \"all\" 🎧").await.status(), 204);
    let f = s.event().await;
    t.frame("the second bot chats", &f);

    // Wire variations: unknown fields and events, six fraction digits.
    let r = control_raw(
        &env,
        "POST",
        "/wire",
        r#"{"unknownFields":true,"unknownEvents":true,"fractionDigits":6}"#,
    )
    .await;
    t.response("wire", r).await;
    env.emit(
        "chat",
        json!({"user": {"id": "u7", "nickname": "Kwame"}, "message": "new"}),
    )
    .await;
    let f = s.event().await;
    t.frame("an unknown event", &f);
    let f = s.event().await;
    t.frame("a chat with an unknown field", &f);
    s2.event().await;
    s2.event().await;
    env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
        .await;
    let f = s.event().await;
    t.frame("end", &f);

    // Control errors.
    t.response(
        "control: no such call",
        control_raw(&env, "GET", "/nowhere", "").await,
    )
    .await;
    t.response(
        "control: bad JSON",
        control_raw(&env, "POST", "/emit", "{").await,
    )
    .await;
    t.response(
        "control: wrong method",
        control_raw(&env, "GET", "/emit", "").await,
    )
    .await;
    t.response(
        "control: unknown event",
        control_raw(&env, "POST", "/emit", r#"{"event":"gift","data":{}}"#).await,
    )
    .await;
    t.response(
        "control: a bad field",
        control_raw(
            &env,
            "POST",
            "/emit",
            r#"{"event":"like","data":{"amount":"x"}}"#,
        )
        .await,
    )
    .await;
    t.response(
        "control: unknown dj",
        control_raw(&env, "GET", "/state?dj=nobody", "").await,
    )
    .await;

    // A token without the permission (the consent narrowed to events.chat).
    let narrow_code = {
        let v = env
            .ctl(
                "/consent",
                json!({"scope": "events.chat", "redirectUri": env.redirect}),
            )
            .await;
        v["code"].as_str().unwrap().to_owned()
    };
    t.secret(&narrow_code, "code 2");
    let v: Value = env.exchange(&narrow_code).await.json().await.unwrap();
    let narrow = v["access_token"].as_str().unwrap().to_owned();
    t.secret(&narrow, "access 3");
    t.secret(v["refresh_token"].as_str().unwrap(), "refresh 3");
    t.response("problem: no permission", env.get("/v1/live", &narrow).await)
        .await;

    // The theft signal: a reused code revokes everything of the integration.
    let r = env.exchange(&code).await;
    t.response("token: a reused code", r).await;

    // The consent page: a redirect with the code, an HTML refusal, the DJ chooser.
    let no_follow = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let authorize = |query: String| format!("{}/oauth/authorize?{query}", env.base);
    let r = no_follow
        .get(authorize(format!(
            "response_type=code&client_id={}&state=s%20%261&scope=events.chat&dj=late",
            env.client_id
        )))
        .send()
        .await
        .unwrap();
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let page_code = location
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("code="))
        .unwrap()
        .to_owned();
    t.secret(&page_code, "code 3");
    t.entries
        .push(format!("== consent page: location\n{location}"));
    t.response("consent page: found", r).await;
    let r = no_follow
        .get(authorize("client_id=nobody&state=s".to_owned()))
        .send()
        .await
        .unwrap();
    t.response("consent page: unknown client", r).await;
    let r = no_follow
        .get(authorize(format!("client_id={}&state=s", env.client_id)))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    t.response("consent page: which DJ", r).await;
    t.response(
        "control: stall",
        control_raw(&env, "POST", "/streams/stall", r#"{"count":1}"#).await,
    )
    .await;

    // The token requests as the log shows them (fingerprints, never values).
    let r = control_raw(&env, "GET", "/requests?path=/v1/oauth/token", "").await;
    t.response("control: requests of the token endpoint", r)
        .await;

    // The write sequence: a mark, and the second app's frames. Two stream
    // writers may number their frames in either order: numbers are shown as
    // [n] (tests/emulator/marks.rs checks them).
    let r = control_raw(&env, "POST", "/mark", "{}").await;
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    t.add("control: mark", status, &write_numbers(&body));
    let r = control_raw(&env, "GET", &format!("/frames?clientId={id2}"), "").await;
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    t.add("control: frames", status, &write_numbers(&body));

    // The ledger of the whole run.
    let r = control_raw(&env, "GET", "/ledger", "").await;
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    t.add("ledger", status, &write_numbers(&body));

    insta::assert_snapshot!(t.text());
}
