//! The ledger's write sequence: `POST /mark`, `GET /frames` and the
//! connections' `openedSeq`/`lastWriteSeq`/`closedSeq` (a judge that stops a
//! bot tells the frames written before that moment from those after).

use serde_json::{json, Value};

use crate::common::*;

fn seq(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

async fn frames(env: &Env, query: &str) -> Value {
    env.ctl_get(&format!("/frames{query}")).await
}

#[tokio::test]
async fn a_mark_splits_the_frames_written_before_it_from_those_after() {
    let env = Env::start().await;
    let live = env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let before_open = seq(&env.ctl("/mark", json!({})).await["writeSeq"]);
    let mut s = env.stream(&access).await;
    env.emit(
        "chat",
        json!({"user": {"id": "u1", "nickname": "Mina"}, "message": "hi"}),
    )
    .await;
    env.emit(
        "like",
        json!({"user": {"id": "u1", "nickname": "Mina"}, "type": "PAID", "amount": 10, "combo": 3}),
    )
    .await;
    env.emit("chat", json!({"isDj": true, "message": "hello all"}))
        .await;
    for _ in 0..3 {
        s.event().await;
    }
    let mark = env.ctl("/mark", json!({})).await;
    let m = seq(&mark["writeSeq"]);
    assert!(mark["nowMs"].is_i64(), "{mark}");
    let donation = env
        .emit(
            "donation",
            json!({"user": {"id": "u2", "nickname": "Jo"}, "amount": 500}),
        )
        .await;
    s.event().await;

    let all = frames(&env, "").await;
    let list = all["frames"].as_array().unwrap();
    assert_eq!(list.len(), 4, "{all}");
    assert!(seq(&all["writeSeq"]) >= seq(&list[3]["writeSeq"]));
    let seqs: Vec<u64> = list.iter().map(|f| seq(&f["writeSeq"])).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in write order: {seqs:?}"
    );
    assert!(
        seqs[..3].iter().all(|n| *n > before_open && *n <= m),
        "{seqs:?} vs mark {m}"
    );
    assert!(seqs[3] > m, "written after the mark: {seqs:?} vs {m}");
    assert_eq!(list[0]["event"], "chat");
    assert_eq!(list[0]["userId"], "u1");
    assert_eq!(list[0]["isDj"], false);
    assert_eq!(list[0]["liveId"], live);
    assert_eq!(list[0]["dj"], "main");
    assert_eq!(list[0]["clientId"], env.client_id.as_str());
    assert_eq!(list[0]["connection"], 0);
    assert_eq!(
        (
            list[1]["event"].as_str(),
            seq(&list[1]["hearts"]),
            list[1]["paid"].as_bool()
        ),
        (Some("like"), 30, Some(true))
    );
    assert_eq!(list[2]["isDj"], true, "the DJ's chat: {}", list[2]);
    assert_eq!(
        (
            list[3]["event"].as_str(),
            list[3]["userId"].as_str(),
            seq(&list[3]["donated"])
        ),
        (Some("donation"), Some("u2"), 500)
    );
    assert_eq!(list[3]["id"], donation["id"]);

    // since: only what came after the mark; clientId and dj filter.
    let after = frames(&env, &format!("?since={m}")).await;
    assert_eq!(after["frames"].as_array().unwrap().len(), 1, "{after}");
    assert_eq!(after["frames"][0]["event"], "donation");
    let other = frames(&env, "?clientId=00000000-0000-0000-0000-000000000000").await;
    assert_eq!(other["frames"], json!([]));
    let mine = frames(&env, &format!("?dj=main&clientId={}", env.client_id)).await;
    assert_eq!(mine["frames"].as_array().unwrap().len(), 4);

    // The ledger's connection carries the same numbers.
    let bot = env.bot_ledger().await;
    let conn = &bot["connections"][0];
    assert!(
        seq(&conn["openedSeq"]) > before_open && seq(&conn["openedSeq"]) < seqs[0],
        "{conn}"
    );
    assert_eq!(seq(&conn["lastWriteSeq"]), seqs[3]);
    assert!(conn["closedSeq"].is_null());
    env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
        .await;
    let closed = env.closed_connection().await;
    let conn = &closed["connections"][0];
    assert!(
        seq(&conn["closedSeq"]) > seq(&conn["lastWriteSeq"]),
        "{conn}"
    );
    // The end frame is a frame too, with no person.
    let end = frames(&env, &format!("?since={}", seqs[3])).await;
    assert_eq!(end["frames"][0]["event"], "end", "{end}");
    assert!(end["frames"][0]["userId"].is_null());
}

#[tokio::test]
async fn one_event_on_two_connections_is_listed_on_each_with_one_id() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut first = env.stream(&access).await;
    let m = seq(&env.ctl("/mark", json!({})).await["writeSeq"]);
    let mut second = env.stream(&access).await;
    env.emit(
        "chat",
        json!({"user": {"id": "u7", "nickname": "Ana"}, "message": "hi"}),
    )
    .await;
    first.event().await;
    second.event().await;
    let all = frames(&env, "").await;
    let list = all["frames"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{all}");
    let mut conns: Vec<u64> = list.iter().map(|f| seq(&f["connection"])).collect();
    conns.sort_unstable();
    assert_eq!(conns, [0, 1]);
    assert_eq!(list[0]["id"], list[1]["id"]);
    let bot = env.bot_ledger().await;
    // The second connection opened after the mark, the first before it.
    assert!(seq(&bot["connections"][0]["openedSeq"]) <= m);
    assert!(seq(&bot["connections"][1]["openedSeq"]) > m);
    // Counted once in the totals.
    assert_eq!(bot["totals"]["people"]["u7"]["chats"], 1);
}

#[tokio::test]
async fn mark_and_frames_refuse_what_they_do_not_take() {
    let env = Env::start().await;
    assert_eq!(env.ctl("/mark", json!({})).await["writeSeq"], 0);
    assert_eq!(env.ctl_status("/frames", json!({})).await, 405);
    let r = env
        .http
        .get(format!("{}/_emulator/mark", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    for (query, status, error) in [
        ("?since=-1", 400, "since must be a write number (0 or more)"),
        ("?dj=nobody", 404, "unknown dj"),
    ] {
        let r = env
            .http
            .get(format!("{}/_emulator/frames{query}", env.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{query}");
        let v: Value = r.json().await.unwrap();
        assert!(v["error"].as_str().unwrap().contains(error), "{query}: {v}");
    }
    let empty = frames(&env, "").await;
    assert_eq!(empty, json!({"writeSeq": 0, "frames": []}));
}
