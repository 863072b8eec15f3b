//! Replies through the machine: merged when chat is behind, fresh or
//! dropped out loud, counted, saved with the kit state.

use super::*;
use crate::event::User;
use crate::kit::replies::ReplyKind;
use crate::kit::text::utf16_len;
use crate::kit::{KitConfig, KitState};

const SCOPE: &str = "events.chat events.presence events.donation chat.send";

fn replies_kit(extra: &str) -> KitConfig {
    KitConfig::from_json(&format!(
        r#"{{"greetings":{{"welcome_back_after_ms":600000}},
            "commands":[{{"name":"top","room_cooldown_ms":5000}}],
            "milestones":{{"donations_every":1000}},
            "replies":{{"commands":{{"top":"{{nickname}} asked: {{top}}"}}{extra}}}}}"#
    ))
    .unwrap()
}

/// A bot with `kit`, its stream open at `now`.
fn open_with(kit: KitConfig, state: Option<&KitState>, now: u64) -> (Bot, RequestId) {
    let (bot, stream, after) = open_with_after(kit, state, now);
    assert!(chat_sends(&after).is_empty(), "{after:?}");
    (bot, stream)
}

/// The same, with the actions of its last drain.
fn open_with_after(
    kit: KitConfig,
    state: Option<&KitState>,
    now: u64,
) -> (Bot, RequestId, Vec<Action>) {
    let mut config = config();
    config.kit = kit;
    let mut bot = Bot::new(config, None, 42);
    if let Some(state) = state {
        bot = bot.with_kit_state(state);
    }
    let mut after = drain(&mut bot, now);
    bot.authorize("consent-code", "https://bot.test/cb");
    let (id, _) = only_send(&drain(&mut bot, now));
    bot.on_response(id, 200, NO_HEADERS, &pair("at1", "rt1", SCOPE), now)
        .unwrap();
    after.extend(drain(&mut bot, now));
    let (stream, _) = stream_open(&after).expect("the stream opens");
    bot.on_stream_open(stream, 200, [("content-type", "text/event-stream")], now)
        .unwrap();
    after.extend(drain(&mut bot, now));
    (bot, stream, after)
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn join(user: &str, nickname: &str) -> String {
    format!(
        "event:presence\ndata:{{\"user\":{{\"id\":\"{user}\",\"nickname\":{}}},\"type\":\"JOIN\",\"fanRank\":null,\"isManager\":false,\"favoriteTemperature\":null,\"time\":\"2024-11-22T04:33:20Z\"}}\n\n",
        json_str(nickname)
    )
}

fn donation(user: &str, nickname: &str, amount: u64) -> String {
    format!(
        "event:donation\ndata:{{\"user\":{{\"id\":\"{user}\",\"nickname\":{}}},\"amount\":{amount},\"message\":null,\"time\":\"2024-11-22T04:33:23Z\"}}\n\n",
        json_str(nickname)
    )
}

fn chat(user: &str, nickname: &str, message: &str) -> String {
    format!(
        "event:chat\ndata:{{\"user\":{{\"id\":\"{user}\",\"nickname\":{}}},\"isDj\":false,\"message\":{},\"sentTime\":\"2024-11-22T04:33:20Z\"}}\n\n",
        json_str(nickname),
        json_str(message)
    )
}

fn message_of(request: &HttpRequest) -> String {
    let v: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    v["message"].as_str().unwrap().to_owned()
}

fn chat_sends(actions: &[Action]) -> Vec<(RequestId, String)> {
    sends(actions)
        .into_iter()
        .filter(|(_, r)| r.url.ends_with("/v1/live/chat"))
        .map(|(id, r)| (id, message_of(r)))
        .collect()
}

fn dropped(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Notice(n @ Notice::RepliesDropped { .. }) => {
                assert!(n.is_warning());
                Some(n.to_string())
            }
            _ => None,
        })
        .collect()
}

const LIMITED: &[(&str, &str)] = &[("content-type", "application/json")];

/// Answers every chat send: 204, or 429 `OAPI_MNGR_0302`.
fn answer(bot: &mut Bot, sent: &[(RequestId, String)], ok: bool, now: u64) {
    for (id, _) in sent {
        if ok {
            bot.on_response(*id, 204, NO_HEADERS, b"", now).unwrap();
        } else {
            bot.on_response(*id, 429, LIMITED, &problem_body(429, "OAPI_MNGR_0302"), now)
                .unwrap();
        }
    }
}

/// Every chat message the bot sends from `now` on until `until`, the
/// service taking one message per `every` ms and answering 0302 to the rest.
fn run(bot: &mut Bot, mut now: u64, until: u64, every: u64, log: &mut Vec<(u64, String)>) -> u64 {
    let mut next_ok = now;
    while now < until {
        let actions = drain(bot, now);
        let sent = chat_sends(&actions);
        assert!(sent.len() <= 1, "one message in flight at a time");
        if sent.is_empty() {
            now = wait_until(&actions).map_or(until, |at| at.min(until));
            continue;
        }
        for (id, text) in sent {
            let ok = now >= next_ok;
            if ok {
                next_ok = now + every;
                log.push((now, text.clone()));
            }
            answer(bot, &[(id, text)], ok, now);
        }
    }
    now
}

#[test]
fn merged_welcomes_name_people_in_order_within_one_message_and_never_mix_kinds() {
    let (mut bot, stream) = open_with(replies_kit(""), None, T0);
    // The first message goes at once; the chat limit then holds the rest.
    bot.on_stream_bytes(stream, join("u0", "Mina").as_bytes(), T0)
        .unwrap();
    let first = chat_sends(&drain(&mut bot, T0));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].1, "Welcome, Mina! 🎧");
    // While it is in flight: a crowd of names (emoji, RTL, long), a donation
    // between them, and a command.
    let mut names: Vec<String> = [
        "Ana",
        "민지",
        "Jörg",
        "👩‍👩‍👧 family",
        "مريم",
        "שירה",
        "Lucas",
        "Мария",
        "🇰🇷🇯🇵",
        "Zoë",
        "健太",
        "Amélie",
        "Ngọc",
        "Ἀθηνᾶ",
        "Oğuz",
        "Siobhán",
        "Ρένα",
        "Kwame",
        "Ikaika",
        "Ólafur",
        "Dilnoza",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.extend((0..12).map(|i| format!("Guest{i}")));
    let mut chunk = String::new();
    for (i, n) in names.iter().enumerate() {
        chunk += &join(&format!("p{i}"), n);
        if i == 3 {
            chunk += &donation("p1", "민지", 10);
            chunk += &chat("p2", "Jörg", "!top");
        }
    }
    chunk += &donation("p5", "שירה", 20);
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0).unwrap();
    answer(&mut bot, &first, true, T0);
    let mut log = Vec::new();
    run(&mut bot, T0, T0 + 60_000, 1_000, &mut log);
    let messages: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
    insta::assert_json_snapshot!("merged_messages", messages);
    for m in &messages {
        assert!(utf16_len(m) <= 200, "{m}");
    }
    // Every welcome names the crowd in arrival order; no message mixes kinds.
    let welcomed: Vec<&str> = messages
        .iter()
        .filter(|m| m.starts_with("Welcome, "))
        .flat_map(|m| {
            m.trim_start_matches("Welcome, ")
                .trim_end_matches("! 🎧")
                .split(", ")
                .flat_map(|s| s.split(" and "))
        })
        .collect();
    assert_eq!(welcomed, names, "{messages:#?}");
    assert!(messages
        .iter()
        .all(|m| !(m.contains("Welcome") && m.contains("Thank"))));
    assert!(
        messages.contains(&"Thank you, 민지 and שירה!"),
        "{messages:#?}"
    );
    // `{top}` as it stood when the command ran (before שירה's donation).
    assert!(
        messages.contains(&"Jörg asked: 1. 민지 10"),
        "{messages:#?}"
    );
    let status = bot.status(T0);
    let w = &status.counters.replies.welcome;
    assert_eq!((w.people, w.dropped), (34, 0));
    assert!(w.messages >= 3 && w.merged == 33, "{w:?}");
    assert_eq!(status.counters.replies.thanks.merged, 2);
    assert_eq!(status.counters.replies.command.messages, 1);
    insta::assert_json_snapshot!("reply_counters", status.counters.replies);
}

#[test]
fn a_reply_past_its_freshness_is_dropped_with_a_notice_never_sent_late() {
    let (mut bot, stream) = open_with(replies_kit(r#","fresh_ms":{"welcome":10000}"#), None, T0);
    let chunk = format!(
        "{}{}{}",
        join("u0", "Mina"),
        join("u1", "Ana"),
        join("u2", "Jörg")
    );
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0).unwrap();
    let first = chat_sends(&drain(&mut bot, T0));
    assert_eq!(first[0].1, "Welcome, Mina, Ana and Jörg! 🎧");
    // The limit refuses everything from now on.
    answer(&mut bot, &first, false, T0 + 1);
    let mut now = T0 + 1;
    let mut notices = Vec::new();
    let mut sent_late = Vec::new();
    while now < T0 + 30_000 {
        let actions = drain(&mut bot, now);
        notices.extend(dropped(&actions));
        for (id, text) in chat_sends(&actions) {
            if now >= T0 + 10_001 {
                sent_late.push((now, text.clone()));
            }
            answer(&mut bot, &[(id, text)], false, now);
        }
        now = wait_until(&drain(&mut bot, now)).unwrap();
    }
    assert!(sent_late.is_empty(), "{sent_late:?}");
    // One notice for the kind and reason, not one per person.
    assert_eq!(
        notices,
        ["dropped 3 welcome replies: not sent within their freshness (the chat limit held them back)"]
    );
    let w = &bot.status(now).counters.replies.welcome;
    assert_eq!((w.messages, w.dropped, w.dropped_stale), (0, 3, 3));
}

#[test]
fn replies_queued_at_live_ended_are_dropped_and_told() {
    let (mut bot, stream) = open_with(replies_kit(""), None, T0);
    let chunk = format!(
        "{}{}{}{}",
        join("u0", "Mina"),
        join("u1", "Ana"),
        donation("u1", "Ana", 5),
        end_frame("LIVE_ENDED")
    );
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0).unwrap();
    let actions = drain(&mut bot, T0);
    assert!(chat_sends(&actions).is_empty(), "{actions:?}");
    let mut told = dropped(&actions);
    told.sort();
    assert_eq!(
        told,
        [
            "dropped 1 thanks reply: the broadcast ended before they went out",
            "dropped 2 welcome replies: the broadcast ended before they went out",
        ]
    );
    let r = &bot.status(T0).counters.replies;
    assert_eq!((r.welcome.dropped_ended, r.thanks.dropped_ended), (2, 1));
    // Chat after the end goes out as before.
    bot.send_chat("see you").unwrap();
    assert_eq!(chat_sends(&drain(&mut bot, T0))[0].1, "see you");
}

#[test]
fn substitution_is_done_once_and_a_100_kb_nickname_is_one_message() {
    let (mut bot, stream) = open_with(
        replies_kit(
            r#","welcome":"Hi {nickname}, you said {rest}?""#.replace("{rest}", "").as_str(),
        ),
        None,
        T0,
    );
    let huge = "가나다라👩‍👩‍👧".repeat(4_000);
    assert!(huge.len() > 100_000);
    bot.on_stream_bytes(stream, join("u0", "{rest}").as_bytes(), T0)
        .unwrap();
    let first = chat_sends(&drain(&mut bot, T0));
    assert_eq!(first[0].1, "Hi {rest}, you said ?");
    answer(&mut bot, &first, true, T0);
    bot.on_stream_bytes(stream, chat("u1", &huge, "!top {nickname}").as_bytes(), T0)
        .unwrap();
    let mut log = Vec::new();
    run(&mut bot, T0, T0 + 30_000, 1, &mut log);
    let messages: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    // The huge one: one message, cut between graphemes.
    assert!(messages[0].starts_with("Hi 가나다라👩‍👩‍👧"));
    assert!(messages[0].ends_with("…, you said ?"));
    assert!(utf16_len(messages[0]) <= 200);
    assert!(
        messages[1].starts_with("가나다라")
            && messages[1].ends_with("… asked: No donations yet tonight.")
    );
    assert!(utf16_len(messages[1]) <= 200);
}

#[test]
fn a_handler_reply_joins_the_merge_by_naming_its_kind() {
    let (mut bot, stream) = open_with(
        replies_kit(r#","thanks_many":"Thanks to {nicknames} 💜""#),
        None,
        T0,
    );
    bot.send_chat("first").unwrap();
    let first = chat_sends(&drain(&mut bot, T0));
    let ana = User {
        id: "a".into(),
        nickname: Some("Ana".into()),
    };
    bot.reply(ReplyKind::Thanks, &ana, "Ana, you are a star!")
        .unwrap();
    bot.on_stream_bytes(stream, donation("b", "Lucas", 3).as_bytes(), T0)
        .unwrap();
    bot.send_chat("plain").unwrap();
    // Alone, a handler's text goes out as written.
    let solo = User {
        id: "c".into(),
        nickname: Some("Zoë".into()),
    };
    answer(&mut bot, &first, true, T0);
    let mut log = Vec::new();
    let now = run(&mut bot, T0, T0 + 10_000, 1, &mut log);
    bot.reply(ReplyKind::Welcome, &solo, "Zoë! Long time no see.")
        .unwrap();
    run(&mut bot, now, now + 10_000, 1, &mut log);
    let messages: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Thanks to Ana and Lucas 💜",
            "plain",
            "Zoë! Long time no see."
        ]
    );
}

#[test]
fn queued_replies_are_saved_and_restored_fresh_or_dropped() {
    let (mut bot, stream) = open_with(replies_kit(""), None, T0);
    bot.on_stream_bytes(stream, join("u0", "Mina").as_bytes(), T0)
        .unwrap();
    let first = chat_sends(&drain(&mut bot, T0));
    answer(&mut bot, &first, true, T0);
    let chunk = format!("{}{}", join("u1", "Ana"), donation("u2", "Lucas", 5));
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0 + 10)
        .unwrap();
    let sent = chat_sends(&drain(&mut bot, T0 + 10));
    answer(&mut bot, &sent, false, T0 + 10);
    drain(&mut bot, T0 + 10);
    bot.shutdown(false);
    let saved = drain(&mut bot, T0 + 20)
        .into_iter()
        .filter_map(|a| match a {
            Action::PersistState(s) => Some(s),
            _ => None,
        })
        .next_back()
        .expect("the state to save");
    assert!(saved
        .to_json()
        .starts_with(r#"{"format":"onair.kit","version":2,"#));
    assert!(
        saved.to_json().contains(r#""replies":[{"kind":"welcome""#),
        "{}",
        saved.to_json()
    );
    // Restarted 30 s later: Ana is still fresh (60 s), Lucas too (180 s);
    // Mina, greeted before, is not greeted again.
    let restored = KitState::from_json(saved.to_json()).unwrap();
    let (mut bot, stream, after) = open_with_after(replies_kit(""), Some(&restored), T0 + 30_000);
    let first = chat_sends(&after);
    let mut log: Vec<(u64, String)> = first
        .iter()
        .map(|(_, m)| (T0 + 30_000, m.clone()))
        .collect();
    answer(&mut bot, &first, true, T0 + 30_000);
    bot.on_stream_bytes(stream, join("u0", "Mina").as_bytes(), T0 + 30_000)
        .unwrap();
    run(&mut bot, T0 + 30_000, T0 + 40_000, 1, &mut log);
    let messages: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(messages, ["Welcome, Ana! 🎧", "Thank you, Lucas!"]);
    // Restarted 2 minutes later instead: Ana's welcome is stale, told.
    let (mut bot, _, after) = open_with_after(replies_kit(""), Some(&restored), T0 + 120_000);
    let first = chat_sends(&after);
    assert_eq!(dropped(&after), ["dropped 1 welcome reply: not sent within their freshness (the chat limit held them back)"]);
    let mut log: Vec<(u64, String)> = first
        .iter()
        .map(|(_, m)| (T0 + 120_000, m.clone()))
        .collect();
    answer(&mut bot, &first, true, T0 + 120_000);
    run(&mut bot, T0 + 120_000, T0 + 130_000, 1, &mut log);
    let r = &bot.status(T0 + 130_000).counters.replies;
    assert_eq!((r.welcome.dropped_stale, r.thanks.people), (1, 1));
    assert_eq!(log.len(), 1);
    // A version 1 state still reads.
    let v1 = KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":7}"#).unwrap();
    assert!(v1
        .to_json()
        .starts_with(r#"{"format":"onair.kit","version":1,"#));
}

#[test]
fn a_busy_room_is_greeted_and_thanked_in_time_through_the_chat_limit() {
    // 400 arrivals and 1 300 donations over 10 minutes; the broadcast's chat
    // limit takes one message every 5 s and answers 0302 to the rest.
    let (welcomed, thanked, _) = busy_room(5_000);
    assert!(welcomed * 100 >= 400 * 95, "{welcomed}");
    assert!(thanked * 100 >= 1300 * 95, "{thanked}");
}

#[test]
fn a_room_busier_than_the_limit_drops_what_goes_stale_and_counts_it() {
    // One message every 30 s: not everyone can be named in time; what is
    // not is dropped (never sent late), counted and told.
    let (_, _, dropped) = busy_room(30_000);
    assert!(dropped > 0);
}

/// The busy room with the chat limit taking one message every `every` ms:
/// (arrivals welcomed within 60 s, donations thanked within 180 s, replies
/// dropped). Checks that no reply names someone after its freshness and
/// that every reply is sent or dropped, each drop told.
fn busy_room(every: u64) -> (u64, u64, u64) {
    const SPAN: u64 = 600_000;
    let kit = KitConfig::from_json(r#"{"greetings":{},"replies":{}}"#).unwrap();
    let (mut bot, stream) = open_with(kit, None, T0);
    let mut events: Vec<(u64, String, &str, String)> = Vec::new(); // (at, frame, kind, person)
    for i in 0..400u64 {
        let at = T0 + i * SPAN / 400;
        let name = format!("P{i}");
        events.push((at, join(&format!("u{i}"), &name), "join", name));
    }
    for j in 0..1300u64 {
        let at = T0 + 1 + j * SPAN / 1300;
        // A donor who has arrived.
        let arrived = ((at - T0) * 400 / SPAN).max(1);
        let who = (j * 7919) % arrived;
        let name = format!("P{who}");
        events.push((at, donation(&format!("u{who}"), &name, 1), "donation", name));
    }
    events.sort_by_key(|e| e.0);
    let mut now = T0;
    let mut next_ok = T0;
    let mut next_event = 0;
    let mut log: Vec<(u64, String)> = Vec::new();
    let mut notices = Vec::new();
    let mut rejected = 0u64;
    let end = T0 + SPAN;
    loop {
        let mut chunk = String::new();
        while next_event < events.len() && events[next_event].0 <= now {
            chunk += &events[next_event].1;
            next_event += 1;
        }
        if !chunk.is_empty() {
            bot.on_stream_bytes(stream, chunk.as_bytes(), now).unwrap();
        }
        if now >= end {
            bot.on_stream_bytes(stream, b":heartbeat\n\n", now).unwrap();
        }
        loop {
            let actions = drain(&mut bot, now);
            notices.extend(dropped(&actions));
            let sent = chat_sends(&actions);
            if sent.is_empty() {
                let wake = wait_until(&actions);
                let next = events.get(next_event).map(|e| e.0);
                now = match (wake, next) {
                    (Some(a), Some(b)) => a.min(b),
                    (Some(a), None) => a,
                    (None, Some(b)) => b,
                    (None, None) => end,
                };
                break;
            }
            for (id, text) in sent {
                let ok = now >= next_ok;
                if ok {
                    next_ok = now + every;
                    log.push((now, text.clone()));
                } else {
                    rejected += 1;
                }
                answer(&mut bot, &[(id, text)], ok, now);
            }
        }
        if now >= end + 240_000 {
            break;
        }
        // Keep the stream alive past the events.
        if next_event == events.len() && now < end {
            now = now.min(end);
        }
    }
    // Who was named when.
    let joins: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e.2 == "join")
        .map(|e| (e.0, e.3.as_str()))
        .collect();
    let mut welcomed_in_time = 0;
    let mut thanks_named = 0u64;
    for (at, text) in &log {
        let (body, kind) = if let Some(b) = text.strip_prefix("Welcome, ") {
            (b.trim_end_matches("! 🎧"), "welcome")
        } else if let Some(b) = text.strip_prefix("Thank you, ") {
            (b.trim_end_matches('!'), "thanks")
        } else {
            panic!("unexpected message {text:?}");
        };
        for name in body.split(", ").flat_map(|s| s.split(" and ")) {
            if kind == "welcome" {
                let joined = joins
                    .iter()
                    .find(|j| j.1 == name)
                    .expect("a person who joined")
                    .0;
                assert!(
                    *at >= joined && *at < joined + 60_000,
                    "{name} welcomed late at {at}"
                );
                welcomed_in_time += 1;
            } else {
                // Sent within the freshness of a donation of theirs.
                assert!(
                    events.iter().any(|e| e.2 == "donation"
                        && e.3 == name
                        && e.0 <= *at
                        && *at < e.0 + 180_000),
                    "{name} thanked late at {at}"
                );
                thanks_named += 1;
            }
        }
    }
    let r = bot.status(now).counters.replies;
    let thanked = r.thanks.people;
    eprintln!(
        "busy room, one message per {every} ms: {} messages ({rejected} answered 0302); welcomed {welcomed_in_time}/400 within 60 s; \
         thanked {thanked}/1300 donations within 180 s ({thanks_named} names); welcome {:?}; thanks {:?}",
        log.len(),
        r.welcome,
        r.thanks
    );
    // Every reply is accounted for: sent or dropped, each drop told.
    assert_eq!(r.welcome.people + r.welcome.dropped, 400);
    assert_eq!(r.thanks.people + r.thanks.dropped, 1300);
    let told: u64 = notices
        .iter()
        .map(|n| n.split(' ').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(told, r.welcome.dropped + r.thanks.dropped);
    (welcomed_in_time, thanked, told)
}

#[test]
fn fifty_people_typing_a_command_in_a_second_get_one_answer() {
    let (mut bot, stream) = open_with(
        KitConfig::from_json(
            r#"{"commands":[{"name":"top","room_cooldown_ms":5000}],
                "replies":{"commands":{"top":"Top: {top}"}}}"#,
        )
        .unwrap(),
        None,
        T0,
    );
    let mut log = Vec::new();
    for i in 0..50u64 {
        let at = T0 + i * 20;
        bot.on_stream_bytes(stream, chat(&format!("u{i}"), "N", "!top").as_bytes(), at)
            .unwrap();
        run(&mut bot, at, at + 20, 1, &mut log);
    }
    run(&mut bot, T0 + 1_000, T0 + 4_000, 1, &mut log);
    let messages: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(messages, ["Top: No donations yet tonight."]);
    assert_eq!(bot.status(T0).counters.replies.command.messages, 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Whatever arrives and whatever the limit answers: each message is one
    /// kind, within one chat message, and welcomes name people in the order
    /// they arrived.
    #[test]
    fn merges_never_mix_kinds_and_keep_arrival_order(
        script in proptest::collection::vec((0u8..3, 0u8..8, any::<bool>()), 1..40)
    ) {
        let (mut bot, stream) = open_with(replies_kit(""), None, T0);
        let mut now = T0;
        let mut sent: Vec<String> = Vec::new();
        let mut arrived: Vec<String> = Vec::new();
        for (what, who, ok) in script {
            let id = format!("u{who}");
            let name = format!("N{who}");
            let frame = match what {
                0 => join(&id, &name),
                1 => donation(&id, &name, 7),
                _ => chat(&id, &name, "!top"),
            };
            // A join or a chat is a sign (a donation is not).
            if what != 1 && !arrived.contains(&name) {
                arrived.push(name.clone());
            }
            bot.on_stream_bytes(stream, frame.as_bytes(), now).unwrap();
            loop {
                let actions = drain(&mut bot, now);
                let out = chat_sends(&actions);
                if out.is_empty() {
                    break;
                }
                for (_, m) in &out {
                    if ok {
                        sent.push(m.clone());
                    }
                }
                answer(&mut bot, &out, ok, now);
                if !ok {
                    break;
                }
            }
            now += 700;
        }
        let mut welcomed: Vec<&str> = Vec::new();
        for m in &sent {
            prop_assert!(utf16_len(m) <= 200);
            let kinds = [m.starts_with("Welcome, "), m.starts_with("Thank you, "), m.contains(" asked: ")];
            prop_assert_eq!(kinds.iter().filter(|k| **k).count(), 1, "{}", m);
            if let Some(body) = m.strip_prefix("Welcome, ") {
                welcomed.extend(body.trim_end_matches("! 🎧").split(", ").flat_map(|s| s.split(" and ")));
            }
        }
        // Welcomed names are the arrivals, in order (a prefix of them may be
        // still queued or dropped, never reordered).
        let positions: Vec<usize> = welcomed
            .iter()
            .map(|n| arrived.iter().position(|a| a == n).expect("an arrival"))
            .collect();
        prop_assert!(positions.windows(2).all(|w| w[0] < w[1]), "{:?} {:?}", welcomed, arrived);
    }
}

#[test]
fn a_later_milestone_about_the_same_replaces_the_one_still_waiting() {
    let (mut bot, stream) = open_with(replies_kit(r#","thanks":"""#), None, T0);
    // The first message goes; the limit holds the rest while Ana passes
    // 1 000, 2 000 and 3 000 and Lucas 1 000.
    bot.on_stream_bytes(stream, donation("u0", "Ana", 1_000).as_bytes(), T0)
        .unwrap();
    let first = chat_sends(&drain(&mut bot, T0));
    assert_eq!(first[0].1, "Ana has given 1000 tonight!");
    let chunk = format!(
        "{}{}{}",
        donation("u0", "Ana", 1_000),
        donation("u1", "Lucas", 1_000),
        donation("u0", "Ana", 1_000)
    );
    bot.on_stream_bytes(stream, chunk.as_bytes(), T0).unwrap();
    answer(&mut bot, &first, false, T0);
    let mut log = Vec::new();
    run(&mut bot, T0 + 1, T0 + 60_000, 1_000, &mut log);
    let messages: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
    // Ana's first waits again at its place, now saying her latest; Lucas's
    // is his own.
    assert_eq!(
        messages,
        [
            "Ana has given 3000 tonight!",
            "Lucas has given 1000 tonight!"
        ]
    );
    let m = &bot.status(T0 + 60_000).counters.replies.milestone;
    // Ana's message stands for her three milestones.
    assert_eq!(
        (m.messages, m.people, m.merged, m.dropped),
        (2, 4, 3, 0),
        "{m:?}"
    );
}

#[test]
fn drops_spread_over_time_are_told_at_a_bounded_rate_and_all_before_the_stop() {
    let (mut bot, stream) = open_with(replies_kit(r#","fresh_ms":{"welcome":1000}"#), None, T0);
    // One arrival a second for 20 s; the limit refuses every message, so
    // each welcome goes stale on its own.
    let mut notices = Vec::new();
    let mut now = T0;
    for i in 0..20u64 {
        let at = T0 + i * 1_000;
        while now < at {
            let actions = drain(&mut bot, now);
            notices.extend(
                actions
                    .iter()
                    .filter(|a| matches!(a, Action::Notice(Notice::RepliesDropped { .. })))
                    .map(|_| now),
            );
            let sent = chat_sends(&actions);
            answer(&mut bot, &sent, false, now);
            now = wait_until(&drain(&mut bot, now)).map_or(at, |w| w.min(at));
        }
        bot.on_stream_bytes(
            stream,
            join(&format!("u{i}"), &format!("P{i}")).as_bytes(),
            now,
        )
        .unwrap();
    }
    // The first at once, then at most one every 5 s.
    assert!(notices.len() <= 1 + 20 / 5, "{notices:?}");
    for pair in notices.windows(2) {
        assert!(pair[1] - pair[0] >= 5_000, "{notices:?}");
    }
    // Whatever is untold is told before the bot says it stopped.
    bot.shutdown(false);
    let mut people = 0;
    let mut stopped_after = false;
    for _ in 0..50 {
        match bot.poll(now) {
            Action::Notice(Notice::RepliesDropped { people: p, .. }) => {
                assert!(!stopped_after);
                people += p;
            }
            Action::Stopped(_) => {
                stopped_after = true;
                break;
            }
            Action::Wait { .. } => now += 100,
            _ => {}
        }
    }
    assert!(stopped_after);
    let w = &bot.status(now).counters.replies.welcome;
    assert_eq!(w.dropped, 20, "{w:?}");
    assert!(people > 0);
}

#[test]
fn a_kind_whose_text_for_many_is_empty_sends_each_handler_reply_as_written() {
    // The configured thanks silenced; the handler thanks in its own words.
    let (mut bot, _stream) = open_with(replies_kit(r#","thanks":"""#), None, T0);
    bot.send_chat("first").unwrap();
    let first = chat_sends(&drain(&mut bot, T0));
    for (id, name) in [("a", "Ana"), ("b", "Lucas")] {
        let user = User {
            id: id.into(),
            nickname: Some(name.into()),
        };
        bot.reply(
            ReplyKind::Thanks,
            &user,
            &format!("{name}, you are a star!"),
        )
        .unwrap();
    }
    answer(&mut bot, &first, true, T0);
    let mut log = Vec::new();
    run(&mut bot, T0, T0 + 10_000, 1_000, &mut log);
    let messages: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(messages, ["Ana, you are a star!", "Lucas, you are a star!"]);
    let t = &bot.status(T0 + 10_000).counters.replies.thanks;
    assert_eq!((t.messages, t.people, t.merged, t.dropped), (2, 2, 0, 0));
}
