//! Many DJs at once (a hosted service: one app, many DJs, each with its own
//! bot): `Builder::djs(n)` runs the scenario for `dj-1` … `dj-n` beside the
//! default DJ, not in lockstep; the ledger answers per DJ and per bot; the
//! daily quota is the app's across all its integrations, per permission.

use std::collections::BTreeMap;
use std::time::Duration;

use onair::event::{Decoder, EndReason, Event, Item};
use onair::kit::tally::Tally;
use onair_emulator::{Emulator, Scenario};
use serde_json::{json, Value};

use crate::common::*;

const DAY_MS: i64 = 86_400_000;

/// One DJ's broadcast: the DJ greets, 120 generated events, the end.
const NIGHT: &str = r#"{"name":"night","steps":[
    {"do":"state","botManager":true},
    {"do":"liveStart","title":"night"},
    {"do":"waitForStream","timeoutMs":20000},
    {"afterMs":100,"do":"emit","event":"chat","data":{"isDj":true,"message":"hi all"}},
    {"afterMs":100,"do":"generate","seed":5,"count":120,"intervalMs":10,"people":25,"djChatEvery":0},
    {"afterMs":200,"do":"liveEnd"}
]}"#;

/// A DJ's bot: consents for `dj`, waits until on air, tallies until `LIVE_ENDED`.
async fn dj_bot(env: &Env, dj: &str) -> Tally {
    let c = env
        .ctl("/consent", json!({"dj": dj, "redirectUri": env.redirect}))
        .await;
    let v: Value = env
        .exchange(c["code"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    let access = v["access_token"].as_str().unwrap().to_owned();
    let mut r = loop {
        let r = env.open(&access).await;
        if r.status() == 200 {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let mut tally = Tally::new();
    tally.start_broadcast(1);
    let mut decoder = Decoder::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(20), r.chunk())
            .await
            .expect("frames within 20 s")
            .unwrap()
            .expect("the stream ends with LIVE_ENDED");
        let mut input = &chunk[..];
        while let Some(item) = decoder.next_item(&mut input) {
            if let Item::Event { event, .. } = item {
                if let Event::End(end) = &event {
                    assert_eq!(end.reason, EndReason::LiveEnded, "{dj}");
                    return tally;
                }
                tally.record(&event);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_dj_plays_the_scenario_with_its_own_bot_and_ledger() {
    let emu = Emulator::builder()
        .djs(3)
        .speed(20.0)
        .seed(3)
        .scenario(Scenario::from_json(NIGHT).unwrap())
        .start()
        .await
        .unwrap();
    assert_eq!(emu.dj_names(), ["main", "dj-1", "dj-2", "dj-3"]);
    let app = emu.app();
    let env = Env {
        base: emu.base_url(),
        http: reqwest::Client::new(),
        client_id: app.client_id,
        secret: app.client_secret,
        redirect: app.redirect_uri,
        emu,
    };
    let djs = ["main", "dj-1", "dj-2", "dj-3"];
    let [f0, f1, f2, f3] = djs.map(|dj| dj_bot(&env, dj));
    let (a, b, c, d) = tokio::join!(f0, f1, f2, f3);
    let tallies: BTreeMap<&str, Tally> = djs.into_iter().zip([a, b, c, d]).collect();
    tokio::time::timeout(Duration::from_secs(10), env.emu.wait_scenario())
        .await
        .unwrap();
    let progress = env.ctl_get("/scenario").await;
    assert_eq!(progress["total"], 4 * 6);
    assert_eq!(progress["position"], 4 * 6);
    assert!(progress["error"].is_null(), "{progress}");
    let mut hearts = Vec::new();
    for (dj, tally) in &tallies {
        // Per DJ, what this bot (client id + integration) was delivered.
        let ledger = env
            .ctl_get(&format!("/ledger?dj={dj}&clientId={}", env.client_id))
            .await;
        let broadcasts = ledger["broadcasts"].as_array().unwrap();
        assert_eq!(broadcasts.len(), 1, "{dj}");
        assert_eq!(broadcasts[0]["dj"], *dj);
        let bots = broadcasts[0]["bots"].as_array().unwrap();
        assert_eq!(bots.len(), 1, "{dj}");
        let totals = &bots[0]["totals"];
        assert_eq!(totals["hearts"], tally.total_hearts(), "{dj}");
        assert_eq!(totals["donated"], tally.total_donated(), "{dj}");
        let people = totals["people"].as_object().unwrap();
        assert_eq!(people.len(), tally.people().count(), "{dj}");
        for (id, p) in people {
            let t = tally.person(id).unwrap();
            assert_eq!(p["hearts"], t.hearts, "{dj} {id}");
            assert_eq!(p["joins"], t.joins, "{dj} {id}");
            assert_eq!(p["chats"], t.chats, "{dj} {id}");
        }
        hearts.push(tally.total_hearts());
    }
    // Seeded per DJ: the copies are not the same night.
    hearts.sort_unstable();
    hearts.dedup();
    assert!(hearts.len() >= 3, "{hearts:?}");
    // Every DJ is listed with its state; the broadcasts are over.
    let list = env.ctl_get("/djs").await;
    let names: Vec<&str> = list["djs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["dj"].as_str().unwrap())
        .collect();
    assert_eq!(names, djs);
    assert!(list["djs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["onAir"] == false));
    // Unknown DJ in a ledger query: 404.
    let r = env
        .http
        .get(format!("{}/_emulator/ledger?dj=nobody", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn the_copies_start_apart_and_leave_app_wide_steps_to_the_default_dj() {
    // Frozen clock: the default DJ's timeline goes on air at once; the copies
    // wait their offsets (0.25–5 s of emulator time) first.
    let text = r#"{"name":"t","steps":[
        {"do":"liveStart"},
        {"do":"quota","daily":{"limit":7}},
        {"do":"advance","ms":1}
    ]}"#;
    let env = Env::with(
        Emulator::builder()
            .djs(2)
            .scenario(Scenario::from_json(text).unwrap()),
    )
    .await;
    let on_air = |v: &Value| -> Vec<bool> {
        v["djs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["onAir"] == true)
            .collect()
    };
    // Until the default DJ's timeline is through (its three steps).
    for _ in 0..400 {
        if env.ctl_get("/scenario").await["position"] == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(env.ctl_get("/scenario").await["position"], 3);
    assert_eq!(on_air(&env.ctl_get("/djs").await), [true, false, false]);
    let t0 = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
    env.advance(5_000).await;
    tokio::time::timeout(Duration::from_secs(5), env.emu.wait_scenario())
        .await
        .unwrap();
    assert_eq!(on_air(&env.ctl_get("/djs").await), [true, true, true]);
    // The app-wide advance ran once (the default DJ's), not three times.
    let now = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
    assert_eq!(now, t0 + 5_000);
    let p = env.ctl_get("/scenario").await;
    assert_eq!(
        (p["position"].as_u64(), p["total"].as_u64()),
        (Some(9), Some(9))
    );
}

/// A bot of `app` (client id, secret, redirect) for `dj`: its access token.
async fn access_for(env: &Env, dj: &str, app: Option<&Value>) -> String {
    let (id, secret, redirect) = match app {
        None => (
            env.client_id.clone(),
            env.secret.clone(),
            env.redirect.clone(),
        ),
        Some(a) => (
            a["clientId"].as_str().unwrap().to_owned(),
            a["clientSecret"].as_str().unwrap().to_owned(),
            a["redirectUri"].as_str().unwrap().to_owned(),
        ),
    };
    let c = env
        .ctl(
            "/consent",
            json!({"dj": dj, "clientId": id, "redirectUri": redirect}),
        )
        .await;
    let r = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .basic_auth(&id, Some(&secret))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", c["code"].as_str().unwrap()),
            ("redirect_uri", redirect.as_str()),
        ])
        .send()
        .await
        .unwrap();
    r.json::<Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn the_daily_quota_is_the_apps_across_integrations_and_per_permission() {
    let env = Env::with(Emulator::builder().djs(2)).await;
    for dj in ["main", "dj-1", "dj-2"] {
        env.ctl("/live/start", json!({"dj": dj})).await;
    }
    env.ctl(
        "/quota",
        json!({"daily": {"limit": 5, "perPermission": {"listeners.read": 2}}}),
    )
    .await;
    let a = access_for(&env, "main", None).await;
    let b = access_for(&env, "dj-1", None).await;
    let other = env.ctl("/apps", json!({})).await;
    let c = access_for(&env, "dj-2", Some(&other)).await;
    let now = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
    let midnight = (now / DAY_MS + 1) * DAY_MS;
    let retry = ((midnight - now + 999) / 1000).to_string();
    // listeners.read: two calls of the app, whichever integration makes them.
    let r = env.get("/v1/live/listeners", &a).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "x-ratelimit-daily-remaining").as_deref(),
        Some("4")
    );
    assert_eq!(
        header(&r, "x-ratelimit-daily-reset"),
        Some((midnight / 1000).to_string())
    );
    let r = env.get("/v1/live/listeners", &b).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "x-ratelimit-daily-remaining").as_deref(),
        Some("3")
    );
    for token in [&a, &b] {
        let r = env.get("/v1/live/listeners", token).await;
        assert_eq!(r.status(), 429);
        assert_eq!(
            header(&r, "x-ratelimit-daily-scope").as_deref(),
            Some("listeners.read")
        );
        assert_eq!(header(&r, "retry-after"), Some(retry.clone()));
        assert!(r.bytes().await.unwrap().is_empty());
    }
    // Another app's integration counts apart.
    assert_eq!(env.get("/v1/live/listeners", &c).await.status(), 200);
    // Other permissions go on until the app's total (5) is used up.
    assert_eq!(env.get("/v1/live/fans", &b).await.status(), 200);
    assert_eq!(env.get("/v1/live", &a).await.status(), 200);
    assert_eq!(env.get("/v1/live", &b).await.status(), 200);
    let r = env.get("/v1/live/fans", &a).await;
    assert_eq!(r.status(), 429);
    assert_eq!(header(&r, "x-ratelimit-daily-scope"), None, "the whole app");
    assert_eq!(header(&r, "retry-after"), Some(retry));
    // The refused calls were not counted; the other app still has its own.
    assert_eq!(env.get("/v1/live/fans", &c).await.status(), 200);
    // At midnight UTC of emulator time the counts start again.
    env.advance(midnight - now).await;
    let a = access_for(&env, "main", None).await;
    let r = env.get("/v1/live/listeners", &a).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "x-ratelimit-daily-remaining").as_deref(),
        Some("4")
    );
}
