//! Every JSON line format of the crate, pinned by one snapshot: the actions
//! of every kind, typed and raw items of every kind, stops, the tally, the
//! token file, stored kit state and the status. Other programs parse these
//! lines: fields may be added, never changed or removed.
#![allow(clippy::unwrap_used)]

use onair::api::{classify, PagerError, ResponseError, ResponseErrorKind};
use onair::bot::{
    Action, CallFailure, CallId, CallResult, CloseReason, GiveUpReason, Notice, Unreached,
};
use onair::event::{
    Chat, DecodeError, DecodeErrorKind, Decoder, Donation, End, EndReason, Event, Item, Like,
    LikeType, Presence, PresenceType, User,
};
use onair::json::{ActionJson, ItemJson, RawItemJson, RequestJson, StopJson, TallyJson};
use onair::kit::tally::Tally;
use onair::kit::{
    Arrival, ArrivalKind, BroadcastEnded, Cause, Command, KitState, Milestone, Refused, Role,
};
use onair::{AuthProblem, Endpoint, FrameId, Permission, RequestId, Stop, Tag, Timestamp, Tokens};

fn events() -> Vec<Event> {
    let user = |id: &str, nickname: Option<&str>| User {
        id: id.into(),
        nickname: nickname.map(Into::into),
    };
    vec![
        Event::Chat(Chat {
            user: user("u1", Some("Mi\"na\u{1}한🎧")),
            is_dj: false,
            message: "!hello {\"not\":\"json\"}\n\ttab \\ slash \u{7f} \u{2028}".into(),
            sent_time: Timestamp::new("2024-11-22T04:33:20.123Z"),
        }),
        Event::Chat(Chat {
            user: user("dj", None),
            is_dj: true,
            message: String::new(),
            sent_time: Timestamp::new("2024-11-22T04:33:20Z"),
        }),
        Event::Presence(Presence {
            user: user("u2", Some("Jo")),
            kind: PresenceType::Join,
            fan_rank: Some(3),
            is_manager: true,
            favorite_temperature: Some(36.5),
            time: Timestamp::new("2024-11-22T04:33:21Z"),
        }),
        Event::Presence(Presence {
            user: user("u3", None),
            kind: PresenceType::Other("LEAVE".into()),
            fan_rank: None,
            is_manager: false,
            favorite_temperature: Some(0.1 + 0.2),
            time: Timestamp::new("t"),
        }),
        Event::Presence(Presence {
            user: user("u4", Some("")),
            kind: PresenceType::Join,
            fan_rank: None,
            is_manager: false,
            favorite_temperature: Some(-1e300),
            time: Timestamp::new("t"),
        }),
        Event::Like(Like {
            user: user("u2", Some("Jo")),
            kind: LikeType::Paid,
            total_amount: 30,
            amount: 10,
            extra_amount: 5,
            combo: Some(2),
            time: Timestamp::new("2024-11-22T04:33:22Z"),
        }),
        Event::Like(Like {
            user: user("u5", None),
            kind: LikeType::Free,
            total_amount: 1,
            amount: 1,
            extra_amount: 0,
            combo: None,
            time: Timestamp::new("t"),
        }),
        Event::Donation(Donation {
            user: user("u1", Some("Mina")),
            amount: u64::MAX,
            message: Some("thanks ❤".into()),
            time: Timestamp::new("2024-11-22T04:33:23Z"),
        }),
        Event::Donation(Donation {
            user: user("u6", None),
            amount: 0,
            message: None,
            time: Timestamp::new("t"),
        }),
        Event::End(End {
            reason: EndReason::LiveEnded,
        }),
        Event::End(End {
            reason: EndReason::Other("SOMETHING_NEW".into()),
        }),
    ]
}

fn tokens(refresh: bool) -> Tokens {
    let text = if refresh {
        r#"{"format":"onair.tokens","version":1,"generation":4,"access_token":"A\"1","access_expires_at_ms":5000,"issued_at_ms":1000,"refresh_token":"R/2","refresh_expires_at_ms":90000,"scope":"live.read future.x events.chat"}"#
    } else {
        r#"{"format":"onair.tokens","version":1,"generation":1,"access_token":"A","access_expires_at_ms":5000,"issued_at_ms":1000,"refresh_token":null,"refresh_expires_at_ms":null,"scope":""}"#
    };
    Tokens::from_json(text.as_bytes()).unwrap()
}

fn decode_error() -> DecodeError {
    DecodeError {
        kind: DecodeErrorKind::InvalidEvent,
        event: Some("like".into()),
        id: Some(FrameId::new("1-2")),
        raw: "{\"user\":1}".into(),
        message: "some reason".into(),
    }
}

fn actions() -> Vec<Action> {
    let base = onair::BaseUrl::new("http://127.0.0.1:9/prefix").unwrap();
    let credentials =
        onair::ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s3cret").unwrap();
    let config = onair::BotConfig::new(base, credentials);
    let mut bot = onair::Bot::new(config, None, 1);
    bot.authorize("code/1 +x", "https://bot.test/cb?a=1&b=é");
    let mut sends = Vec::new();
    loop {
        match bot.poll(0) {
            Action::Wait { .. } | Action::NeedsAuthorization => break,
            other => sends.push(other),
        }
    }
    let problem = classify(
        Endpoint::Chat,
        429,
        [
            ("x-ratelimit-daily-scope", "chat.send"),
            ("Retry-After", "30"),
        ],
        b"",
    );
    let blocked = classify(
        Endpoint::Live,
        403,
        &[] as &[(&str, &str)],
        br#"{"status":403,"detailCode":"OAPI_MNGR_0208","message":"m"}"#,
    );
    let listeners = onair::api::decode_listeners(
        br#"{"listeners":[{"id":"a","nickname":"A"}],"nextCursor":null}"#,
    )
    .unwrap()
    .listeners;
    let broadcast = onair::api::decode_broadcast(
        br#"{"liveId":7,"title":"T \"q\"","startedAt":"2024-11-22T04:33:20Z","closeAirTime":"2024-11-22T06:33:20Z","listenerCount":3,"totalListenerCount":9,"welcomeMessage":"hi","isChatFrozen":false,"categories":["music"],"tags":[]}"#,
    )
    .unwrap();
    let fans = onair::api::decode_fans(
        br#"{"totalCount":2,"fans":[{"id":"u1","nickname":"N","rank":1,"coinCount":5},{"id":"u2","nickname":"M","rank":2,"coinCount":null}]}"#,
    )
    .unwrap();
    let done = |call: u64, result: CallResult| Action::Done {
        call: CallId(call),
        result,
    };
    let mut all = sends;
    all.extend([
        Action::OpenStream {
            id: RequestId(9),
            request: onair::api::events(
                &onair::BaseUrl::new("https://a.test").unwrap(),
                &onair::Secret::new("at"),
            )
            .unwrap(),
        },
        Action::CloseStream {
            id: RequestId(9),
            reason: CloseReason::Ended,
        },
    ]);
    for (i, event) in events().into_iter().enumerate() {
        let id = (i % 2 == 0).then(|| FrameId::new(format!("17322500000{i}-{i}")));
        all.push(Action::Event { id, event });
    }
    all.extend([
        Action::Notice(Notice::FrameSkipped(decode_error())),
        Action::Notice(Notice::UnknownEvent {
            event: "poll".into(),
            data: "{\"q\":1}".into(),
        }),
        Action::Notice(Notice::Problem {
            endpoint: Endpoint::Chat,
            problem: problem.clone(),
        }),
        Action::CloseStream {
            id: RequestId(3),
            reason: CloseReason::TimedOut,
        },
        Action::Notice(Notice::CallHeld { call: CallId(11) }),
        Action::Notice(Notice::ReconnectStormBraked { until_ms: 77 }),
        Action::Notice(Notice::Unreachable {
            endpoint: Endpoint::Events,
            failure: Unreached::NotSent,
            failures: 4,
            since_ms: 1_732_250_000_000,
        }),
        Action::Notice(Notice::Reachable {
            failures: 1,
            since_ms: 1_732_250_000_000,
        }),
        Action::Notice(Notice::GaveUp {
            endpoint: Endpoint::Chat,
            reason: GiveUpReason::Cancelled,
            count: 12,
        }),
        Action::Notice(Notice::GaveUp {
            endpoint: Endpoint::Listeners,
            reason: GiveUpReason::QuotaBlocked,
            count: 1,
        }),
        Action::Notice(Notice::RepliesDropped {
            kind: onair::kit::ReplyKind::Welcome,
            people: 7,
            reason: onair::bot::DropReason::Stale,
        }),
        Action::Notice(Notice::DailyQuotaReached {
            scope: Some(onair::Permission::ChatSend),
            until_ms: 1_732_320_000_000,
        }),
        Action::Notice(Notice::DailyQuotaReached {
            scope: None,
            until_ms: 1_732_320_000_000,
        }),
        done(1, CallResult::Broadcast(broadcast)),
        done(2, CallResult::Listeners(listeners)),
        done(3, CallResult::Fans(fans)),
        done(4, CallResult::ChatSent),
        done(5, CallResult::Failed(CallFailure::Problem(blocked.clone()))),
        done(
            6,
            CallResult::Failed(CallFailure::QuotaBlocked { until_ms: 99 }),
        ),
        done(
            7,
            CallResult::Failed(CallFailure::InvalidBody(ResponseError {
                kind: ResponseErrorKind::InvalidBody,
                message: "missing field".into(),
            })),
        ),
        done(
            8,
            CallResult::Failed(CallFailure::Pager(PagerError::RepeatedCursor)),
        ),
        done(9, CallResult::Failed(CallFailure::Transport)),
        done(10, CallResult::Failed(CallFailure::Cancelled)),
        done(
            12,
            CallResult::Failed(CallFailure::QueueFull { limit: 100 }),
        ),
        done(13, CallResult::Failed(CallFailure::Stopped(Stop::ShutDown))),
        Action::PersistTokens(tokens(true)),
        Action::PersistTokens(tokens(false)),
        Action::Timer {
            tag: Tag::new("every-minute").unwrap(),
        },
        Action::NeedsAuthorization,
        Action::Wait { until_ms: Some(5) },
        Action::Wait { until_ms: None },
    ]);
    for stop in stops(&blocked) {
        all.push(Action::Stopped(stop));
    }
    all
}

fn stops(problem: &onair::Problem) -> Vec<Stop> {
    vec![
        Stop::Reauthorize(AuthProblem::AccessRejected),
        Stop::Reauthorize(AuthProblem::RefreshRejected),
        Stop::Reconsent {
            missing: vec![Permission::EventsChat, Permission::Other("x.y".into())],
        },
        Stop::JoinForbidden,
        Stop::InvalidClient,
        Stop::FixRequest(Box::new(problem.clone())),
        Stop::Unexpected(Box::new(problem.clone())),
        Stop::ShutDown,
    ]
}

fn kit_actions(tally: &Tally) -> Vec<Action> {
    let all = events();
    let Event::Chat(chat) = all[0].clone() else {
        unreachable!()
    };
    let (Event::Like(like), Event::Donation(donation), Event::End(end)) =
        (all[5].clone(), all[7].clone(), all[9].clone())
    else {
        unreachable!()
    };
    let id = Some(FrameId::new("1732250000000-3"));
    vec![
        Action::Command(Command {
            name: "hello".into(),
            args: vec!["dear DJ".into(), "now".into()],
            rest: "\"dear DJ\" now".into(),
            user: chat.user.clone(),
            role: Role::Listener,
            chat: Cause {
                id: id.clone(),
                event: chat.clone(),
            },
        }),
        Action::Notice(Notice::CommandRefused(Refused {
            name: "reset".into(),
            user: chat.user.clone(),
            role: Role::Manager,
            needed: onair::kit::Allowed::Dj,
        })),
        Action::Arrival(Arrival {
            kind: ArrivalKind::First,
            user: chat.user.clone(),
            is_manager: false,
            live_id: Some(42),
            event: Cause {
                id: None,
                event: all[2].clone(),
            },
        }),
        Action::Arrival(Arrival {
            kind: ArrivalKind::Back { away_ms: 600_000 },
            user: chat.user.clone(),
            is_manager: true,
            live_id: None,
            event: Cause {
                id: id.clone(),
                event: all[0].clone(),
            },
        }),
        Action::Milestone(Milestone::Hearts {
            reached: 100,
            total: 130,
            like: Cause {
                id: id.clone(),
                event: like,
            },
        }),
        Action::Milestone(Milestone::Donated {
            user: chat.user.clone(),
            reached: 1000,
            total: 1500,
            donation: Cause {
                id: None,
                event: donation,
            },
        }),
        Action::BroadcastEnded(BroadcastEnded {
            live_id: Some(42),
            tally: tally.clone(),
            end: Some(Cause {
                id: None,
                event: end,
            }),
        }),
        Action::BroadcastEnded(BroadcastEnded {
            live_id: None,
            tally: Tally::new(),
            end: None,
        }),
        Action::PersistState(
            KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":42}"#)
                .expect("a kit state"),
        ),
    ]
}

const STREAM: &[u8] = b":heartbeat\n\n: a comment\n\nretry: 3000\n\n\
id:1-0\nevent:chat\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mina\"},\"isDj\":false,\"message\":\"hi\",\"sentTime\":\"2024-11-22T04:33:20Z\"}\n\n\
event:poll\ndata:{\"q\":1}\n\n\
id:1-2\nevent:like\ndata:{\"user\":{\"id\":\"u1\"}}\n\n\
data:no event name\n\n\
event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n\
id:9\nevent:chat\ndata:{\"cut";

#[test]
fn every_json_line_format_is_pinned() {
    let mut lines = Vec::new();
    lines.push("# actions".to_owned());
    for action in actions() {
        lines.push(ActionJson(&action).to_line());
    }
    lines.push("# requests and stops".to_owned());
    for action in actions() {
        if let Action::Send { request, .. } = &action {
            lines.push(RequestJson(request).to_line());
        }
    }
    let blocked = classify(Endpoint::Live, 403, &[] as &[(&str, &str)], b"");
    for stop in stops(&blocked) {
        lines.push(StopJson(&stop).to_line());
    }
    lines.push("# typed items".to_owned());
    let mut decoder = Decoder::new();
    let mut items: Vec<Item> = decoder.items(STREAM).collect();
    items.extend(decoder.finish());
    items.push(Item::Error(decode_error()));
    for item in &items {
        lines.push(ItemJson(item).to_line());
    }
    lines.push("# raw items".to_owned());
    let mut parser = onair::sse::Parser::new();
    let mut rest = STREAM;
    while let Some(item) = parser.next_item(&mut rest) {
        lines.push(RawItemJson(&item).to_line());
    }
    if let Some(item) = parser.finish() {
        lines.push(RawItemJson(&item).to_line());
    }
    lines.push("# tally, token files, kit state, status".to_owned());
    let mut tally = Tally::new();
    for event in events().iter().filter(|e| !matches!(e, Event::End(_))) {
        tally.record(event);
    }
    lines.push(TallyJson(&tally).to_line());
    lines.push(TallyJson(&Tally::new()).to_line());
    lines.push(tokens(true).to_json().to_string());
    lines.push(tokens(false).to_json().to_string());
    lines.push("# the kit's actions and state".to_owned());
    for action in kit_actions(&tally) {
        lines.push(ActionJson(&action).to_line());
    }
    let base = onair::BaseUrl::new("http://127.0.0.1:1").unwrap();
    let credentials =
        onair::ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret").unwrap();
    let status = onair::Bot::new(
        onair::BotConfig::new(base, credentials),
        Some(tokens(true)),
        1,
    )
    .status(2000);
    lines.push(status.to_json());
    insta::assert_snapshot!(lines.join("\n"));
}
