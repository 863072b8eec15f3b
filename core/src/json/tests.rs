//! The wire types read back what they write (serde's derives both ways),
//! and the lines keep their documented shape.

use proptest::prelude::*;
use serde::Serialize;

use super::*;
use crate::event::{
    Chat, Donation, End, EndReason, Event, Like, LikeType, Presence, PresenceType, User,
};
use crate::proto::model::{Broadcast, FanRanking, ListenersPage};
use crate::proto::time::Timestamp;

/// What the value writes reads back as the same value.
fn same<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, value, "{text}");
}

/// What the value writes is one JSON object.
fn object<T: Serialize>(value: &T) {
    let text = serde_json::to_string(value).unwrap();
    assert!(matches!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        serde_json::Value::Object(_)
    ));
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z\"\\\\\n\u{1}]{0,8}",
        Just(String::new())
    ]
}

fn user() -> impl Strategy<Value = User> {
    (text(), proptest::option::of(text())).prop_map(|(id, nickname)| User { id, nickname })
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(36.5),
        (0u32..1000).prop_map(|t| f64::from(t) / 10.0)
    ]
}

fn event() -> impl Strategy<Value = Event> {
    fn time() -> impl Strategy<Value = Timestamp> {
        text().prop_map(Timestamp::new)
    }
    prop_oneof![
        (user(), any::<bool>(), text(), time()).prop_map(|(user, is_dj, message, t)| {
            Event::Chat(Chat {
                user,
                is_dj,
                message,
                sent_time: t,
            })
        }),
        (
            user(),
            proptest::option::of(any::<u64>()),
            any::<bool>(),
            proptest::option::of(number()),
            time()
        )
            .prop_map(|(user, fan_rank, is_manager, favorite_temperature, time)| {
                Event::Presence(Presence {
                    user,
                    kind: PresenceType::Join,
                    fan_rank,
                    is_manager,
                    favorite_temperature,
                    time,
                })
            }),
        (
            user(),
            any::<bool>(),
            any::<[u64; 3]>(),
            proptest::option::of(any::<u64>()),
            time()
        )
            .prop_map(
                |(user, paid, [total_amount, amount, extra_amount], combo, time)| {
                    let kind = if paid {
                        LikeType::Paid
                    } else {
                        LikeType::Other("SOME".into())
                    };
                    Event::Like(Like {
                        user,
                        kind,
                        total_amount,
                        amount,
                        extra_amount,
                        combo,
                        time,
                    })
                }
            ),
        (user(), any::<u64>(), proptest::option::of(text()), time()).prop_map(
            |(user, amount, message, time)| {
                Event::Donation(Donation {
                    user,
                    amount,
                    message,
                    time,
                })
            }
        ),
        prop_oneof![
            Just(EndReason::LiveEnded),
            Just(EndReason::TokenExpired),
            Just(EndReason::Reconnect),
            text().prop_map(EndReason::Other),
        ]
        .prop_map(|reason| Event::End(End { reason })),
    ]
}

proptest! {
    #[test]
    fn every_event_reads_back_what_it_writes(event in event()) {
        let text = serde_json::to_string(&event).unwrap();
        let finite = match &event {
            Event::Presence(p) => p.favorite_temperature.is_none_or(f64::is_finite),
            _ => true,
        };
        if finite {
            let back = Event::decode(event.name(), &text).unwrap().unwrap();
            prop_assert_eq!(&back, &event);
        }
        // The line's `data` is that same text.
        let id = Some(crate::proto::time::FrameId::new("1-0"));
        let line = ItemJson(&event::Item::Event { id, event: event.clone() }).to_line();
        let tail = format!(",\"data\":{}}}", serde_json::to_string(&event).unwrap());
        prop_assert!(line.ends_with(&tail));
    }

    #[test]
    fn an_event_action_names_its_reply_only_for_a_donation(event in event()) {
        let is_donation = matches!(event, Event::Donation(_));
        let action = Action::Event { id: None, event };
        let line: serde_json::Value = serde_json::from_str(&ActionJson(&action).to_line()).unwrap();
        let kind = action.reply_kind();
        prop_assert_eq!(kind, is_donation.then_some(ReplyKind::Thanks));
        prop_assert_eq!(line.get("replyKind").and_then(|k| k.as_str()), kind.map(ReplyKind::as_str));
    }

    #[test]
    fn the_tally_reads_back_what_it_writes(events in proptest::collection::vec(event(), 0..12)) {
        let mut tally = crate::kit::tally::Tally::new();
        for event in &events {
            tally.record(event);
        }
        same(&tally);
        for (_, totals) in tally.people() {
            same(totals);
        }
    }
}

#[test]
fn the_rest_bodies_read_back_what_they_write() {
    let broadcast = crate::proto::api::decode_broadcast(
        br#"{"liveId":7,"title":"T \"q\"","startedAt":"2024-11-22T04:33:20Z","closeAirTime":"2024-11-22T06:33:20Z",
            "listenerCount":3,"totalListenerCount":9,"welcomeMessage":null,"isChatFrozen":false,
            "categories":["music"],"tags":[]}"#,
    )
    .unwrap();
    same::<Broadcast>(&broadcast);
    let page: ListenersPage = crate::proto::api::decode_listeners(
        br#"{"listeners":[{"id":"a","nickname":"A"},{"id":"b","nickname":"\u0001"}],"nextCursor":"c"}"#,
    )
    .unwrap();
    same(&page);
    same(&ListenersPage {
        listeners: vec![],
        next_cursor: None,
    });
    let fans: FanRanking = crate::proto::api::decode_fans(
        br#"{"totalCount":2,"fans":[{"id":"u1","nickname":"N","rank":1,"coinCount":5},{"id":"u2","nickname":"M","rank":2,"coinCount":null}]}"#,
    )
    .unwrap();
    same(&fans);
}

#[test]
fn explanations_are_objects_and_to_json_is_serde_json() {
    use crate::proto::endpoint::Endpoint;
    type Case = (
        Endpoint,
        u16,
        &'static [(&'static str, &'static str)],
        &'static [u8],
    );
    let cases: [Case; 4] = [
        (Endpoint::Chat, 429, &[("Retry-After", "30")], b""),
        (Endpoint::Token, 400, &[], br#"{"error":"invalid_grant"}"#),
        (
            Endpoint::Live,
            403,
            &[],
            br#"{"status":403,"detailCode":"OAPI_MNGR_0208","message":"m"}"#,
        ),
        (
            Endpoint::Fans,
            429,
            &[
                ("x-ratelimit-daily-scope", "fans.read"),
                ("x-ratelimit-daily-remaining", "0"),
            ],
            b"",
        ),
    ];
    for (endpoint, status, headers, body) in cases {
        let explained =
            crate::proto::problem::classify(endpoint, status, headers, body).explain(Some(1_000));
        object(&explained);
        assert_eq!(
            explained.to_json(),
            serde_json::to_string(&explained).unwrap()
        );
    }
}

#[test]
fn every_connection_state_and_a_status_are_objects() {
    use crate::bot::{Connection, Counters, QuotaBlock};
    let states = [
        Connection::NeedsAuthorization,
        Connection::Off,
        Connection::WaitingForBroadcast { next_attempt_ms: 5 },
        Connection::Connecting { since_ms: None },
        Connection::Connecting { since_ms: Some(3) },
        Connection::Connected { since_ms: 4 },
        Connection::BackingOff { until_ms: 6 },
        Connection::Refreshing,
        Connection::Stopped {
            code: "reauthorize".into(),
            message: "a \"person\" must act".into(),
        },
    ];
    for state in &states {
        object(state);
    }
    object(&Counters {
        last_heartbeat_ms: Some(9),
        chat: 2,
        ..Counters::default()
    });
    object(&QuotaBlock {
        scope: None,
        until_ms: 1,
    });
    object(&QuotaBlock {
        scope: Some("chat.send".into()),
        until_ms: 1,
    });
    let base = crate::proto::http::BaseUrl::new("http://127.0.0.1:1").unwrap();
    let credentials =
        crate::ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret").unwrap();
    let saved = crate::proto::oauth::Tokens::from_json(
        br#"{"format":"onair.tokens","version":1,"generation":4,"access_token":"A",
            "access_expires_at_ms":5000,"issued_at_ms":1000,"refresh_token":"R",
            "refresh_expires_at_ms":90000,"scope":"live.read events.presence"}"#,
    )
    .unwrap();
    for saved in [None, Some(saved)] {
        let config = crate::BotConfig::new(base.clone(), credentials.clone());
        let status = crate::Bot::new(config, saved, 1).status(0);
        object(&status);
        assert_eq!(status.to_json(), serde_json::to_string(&status).unwrap());
    }
}

/// Arrivals and commands name the reply that answers their person, in the
/// line as in [`Action::reply_kind`]; the kit's other actions name none.
#[test]
fn arrivals_and_commands_name_their_reply_kind() {
    use crate::kit::{Arrival, ArrivalKind, Cause, Command, Milestone, Role};
    let ana = User {
        id: "u1".into(),
        nickname: Some("Ana".into()),
    };
    let chat = Chat {
        user: ana.clone(),
        is_dj: false,
        message: "!hello".into(),
        sent_time: Timestamp::new("t"),
    };
    let arrival = |kind| {
        Action::Arrival(Arrival {
            kind,
            user: ana.clone(),
            is_manager: false,
            live_id: None,
            event: Cause {
                id: None,
                event: Event::Chat(chat.clone()),
            },
        })
    };
    let command = Action::Command(Command {
        name: "hello".into(),
        args: Vec::new(),
        rest: String::new(),
        user: ana.clone(),
        role: Role::Listener,
        chat: Cause {
            id: None,
            event: chat.clone(),
        },
    });
    let like = Like {
        user: ana.clone(),
        kind: LikeType::Free,
        total_amount: 100,
        amount: 100,
        extra_amount: 0,
        combo: None,
        time: Timestamp::new("t"),
    };
    let milestone = Action::Milestone(Milestone::Hearts {
        reached: 100,
        total: 100,
        like: Cause {
            id: None,
            event: like,
        },
    });
    let cases = [
        (arrival(ArrivalKind::First), Some("welcome")),
        (
            arrival(ArrivalKind::Back { away_ms: 600_000 }),
            Some("welcome_back"),
        ),
        (command, Some("command")),
        (milestone, None),
        (Action::Wait { until_ms: None }, None),
    ];
    for (action, expected) in cases {
        let line: serde_json::Value = serde_json::from_str(&ActionJson(&action).to_line()).unwrap();
        assert_eq!(
            line.get("replyKind").and_then(|k| k.as_str()),
            expected,
            "{line}"
        );
        assert_eq!(action.reply_kind().map(ReplyKind::as_str), expected);
    }
}
