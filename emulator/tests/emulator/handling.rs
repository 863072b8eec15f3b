//! Spec 6 handling rules, checked through the ledger (what a bot's tally must equal).

use serde_json::{json, Value};

use crate::common::*;

async fn connected(env: &Env, scope: &str) -> Sse {
    env.live_start().await;
    let (access, _) = env.tokens(scope).await;
    env.stream(&access).await
}

#[tokio::test]
async fn the_dj_is_kept_out_of_every_total() {
    let env = Env::start().await;
    let mut s = connected(&env, ALL).await;
    let dj = env.ctl_get("/state").await["djUserId"]
        .as_str()
        .unwrap()
        .to_owned();
    env.emit("chat", json!({"isDj": true, "message": "welcome!"}))
        .await;
    env.emit("like", json!({"user": {"id": dj, "nickname": "DJ Mina"}, "type": "PAID", "amount": 10, "combo": 2})).await;
    env.emit("chat", json!({"user": {"id": "u1", "nickname": "Mina"}}))
        .await;
    let f = s.event().await;
    assert_eq!(data_of(&f)["isDj"], true);
    let b = env.bot_ledger().await;
    let people = b["totals"]["people"].as_object().unwrap();
    assert!(!people.contains_key(&dj));
    assert_eq!(people["u1"]["chats"], 1);
    assert_eq!(b["totals"]["hearts"], 0);
    assert_eq!(
        b["connections"][0]["events"]["chat"], 2,
        "delivered, just not tallied"
    );
}

#[tokio::test]
async fn hearts_count_total_amount_and_donations_are_not_multiplied() {
    let env = Env::start().await;
    let _s = connected(&env, ALL).await;
    let u = json!({"id": "u1", "nickname": "Mina"});
    env.emit(
        "like",
        json!({"user": u, "type": "PAID", "amount": 10, "extraAmount": 2, "combo": 3}),
    )
    .await;
    env.emit("like", json!({"user": u, "type": "FREE"})).await;
    env.emit("donation", json!({"user": u, "amount": 500}))
        .await;
    env.emit(
        "donation",
        json!({"user": u, "amount": 1000, "message": "for you"}),
    )
    .await;
    let b = env.bot_ledger().await;
    let p = &b["totals"]["people"]["u1"];
    assert_eq!(p["hearts"], 37);
    assert_eq!(p["paidHearts"], 36);
    assert_eq!(p["donated"], 1500);
    assert_eq!(p["donations"], 2);
    assert_eq!(b["totals"]["hearts"], 37);
    assert_eq!(b["totals"]["donated"], 1500);
}

#[tokio::test]
async fn free_hearts_have_null_combo_and_donations_null_message() {
    let env = Env::start().await;
    let mut s = connected(&env, ALL).await;
    env.emit("like", json!({})).await;
    env.emit("donation", json!({})).await;
    let like = data_of(&s.event().await);
    assert_eq!(like["type"], "FREE");
    assert!(like["combo"].is_null());
    assert_eq!(like["totalAmount"], 1);
    let donation = data_of(&s.event().await);
    assert!(donation["message"].is_null());
    assert!(donation["amount"].is_u64());
}

#[tokio::test]
async fn a_rejoin_is_another_presence_but_the_same_attendee() {
    let env = Env::start().await;
    env.ctl("/state", json!({"botManager": true})).await;
    let mut s = connected(&env, ALL).await;
    let u = json!({"id": "u1", "nickname": "Mina"});
    env.emit("presence", json!({"user": u})).await;
    env.ctl("/leave", json!({"userId": "u1"})).await;
    env.emit("presence", json!({"user": u})).await;
    env.emit("presence", json!({"user": {"id": "u2", "nickname": null}}))
        .await;
    for _ in 0..3 {
        assert_eq!(name_of(&s.event().await), "presence");
    }
    let b = env.bot_ledger().await;
    assert_eq!(b["totals"]["attendance"], 2);
    assert_eq!(b["totals"]["people"]["u1"]["joins"], 2);
    assert!(b["totals"]["people"]["u2"]["nickname"].is_null());
}

#[tokio::test]
async fn whole_broadcast_donations_include_people_who_left() {
    let env = Env::start().await;
    let _s = connected(&env, ALL).await;
    env.emit(
        "donation",
        json!({"user": {"id": "u1", "nickname": "a"}, "amount": 100}),
    )
    .await;
    env.ctl("/leave", json!({"userId": "u1"})).await;
    let b = env.bot_ledger().await;
    assert_eq!(b["totals"]["donated"], 100);
}

#[tokio::test]
async fn totals_are_per_bot_over_what_it_was_delivered() {
    let env = Env::start().await;
    let _s = connected(&env, "events.chat").await;
    env.emit("chat", json!({"user": {"id": "u1", "nickname": "a"}}))
        .await;
    env.emit(
        "donation",
        json!({"user": {"id": "u1", "nickname": "a"}, "amount": 100}),
    )
    .await;
    let b = env.bot_ledger().await;
    assert_eq!(b["totals"]["donated"], 0, "not delivered, not counted");
    assert_eq!(b["totals"]["people"]["u1"]["chats"], 1);
    assert_eq!(b["connections"][0]["frames"], 1);
}

#[tokio::test]
async fn ledger_spans_reconnects_and_splits_broadcasts() {
    let env = Env::start().await;
    let mut s = connected(&env, ALL).await;
    let u = json!({"id": "u1", "nickname": "a"});
    env.emit("like", json!({"user": u, "amount": 5})).await;
    env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
        .await;
    s.event().await;
    s.event().await;
    let (access, _) = env.tokens(ALL).await;
    let _s2 = env.stream(&access).await;
    env.emit("like", json!({"user": u, "amount": 5})).await;
    env.ctl("/live/end", json!({})).await;
    env.live_start().await;
    let l = env.ledger().await;
    let bs = l["broadcasts"].as_array().unwrap();
    assert_eq!(bs.len(), 2);
    let bot = &bs[0]["bots"][0];
    assert_eq!(bot["connections"].as_array().unwrap().len(), 2);
    assert_eq!(bot["totals"]["hearts"], 10);
    assert!(bs[1]["bots"].as_array().unwrap().is_empty());
    let _: Value = l;
}

#[tokio::test]
async fn chat_from_a_chat_banned_listener_is_never_created() {
    let env = Env::start().await;
    let mut s = connected(&env, ALL).await;
    env.ctl("/ban", json!({"userId": "troll"})).await;
    let v = env
        .emit("chat", json!({"user": {"id": "troll", "nickname": "t"}}))
        .await;
    assert_eq!(
        (v["id"].is_null(), v["delivered"].as_u64()),
        (true, Some(0))
    );
    env.emit("chat", json!({"user": {"id": "u1", "nickname": "a"}}))
        .await;
    assert_eq!(data_of(&s.event().await)["user"]["id"], "u1");
    let b = env.bot_ledger().await;
    assert!(b["totals"]["people"].get("troll").is_none());
}

#[tokio::test]
async fn an_event_on_two_open_connections_of_one_bot_counts_once() {
    let env = Env::start().await;
    let mut s1 = connected(&env, ALL).await;
    let (access, _) = env.tokens(ALL).await;
    let mut s2 = env.stream(&access).await;
    assert_eq!(
        env.emit(
            "like",
            json!({"user": {"id": "u1", "nickname": "a"}, "amount": 7})
        )
        .await["delivered"],
        2
    );
    s1.event().await;
    s2.event().await;
    let b = env.bot_ledger().await;
    assert_eq!(b["connections"][0]["events"]["like"], 1);
    assert_eq!(b["connections"][1]["events"]["like"], 1);
    assert_eq!(b["totals"]["hearts"], 7, "the union of what was delivered");
}
