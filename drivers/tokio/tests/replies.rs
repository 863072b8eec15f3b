//! The kit's configured replies through the driver, against the emulator:
//! held back by the chat limit, welcomes go out as one message and the
//! handler's own thanks (`Bot::reply`) merge with each other; a welcome
//! the limit holds past its freshness is dropped, told as a
//! `RepliesDropped` notice and logged by the driver at warn (target
//! `onair`), and counted in the status.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use onair::bot::{DropReason, Notice};
use onair::kit::{KitConfig, ReplyKind};
use onair::{Bot, Event};
use onair_emulator::clock::Clock as VirtualClock;
use onair_emulator::Emulator;
use onair_tokio::{BotEvent, Clock, Driver};
use serde_json::{json, Value};

mod common;

use common::{consent_code, on_air, post};

/// The emulator's clock for the driver: the bot's freshness and the
/// service's time agree, a jump included.
struct EmulatorClock(Arc<VirtualClock>);

impl Clock for EmulatorClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.0.now_ms()).unwrap_or(0)
    }

    fn real_delay(&self, at_ms: u64) -> Duration {
        let left = at_ms.saturating_sub(self.now_ms()) as f64;
        Duration::from_secs_f64((left / 1000.0).min(0.2))
    }
}

/// The driver's log lines: (level, target, message).
type Lines = Arc<Mutex<Vec<(tracing::Level, String, String)>>>;

/// A subscriber that keeps every event's level, target and message.
struct Capture(Lines);

struct Message<'a>(&'a mut String);

impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut message = String::new();
        event.record(&mut Message(&mut message));
        let meta = event.metadata();
        if let Ok(mut lines) = self.0.lock() {
            lines.push((*meta.level(), meta.target().to_owned(), message));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

async fn said(control: &str) -> Vec<String> {
    let body = reqwest::get(format!("{control}/chat"))
        .await
        .expect("chat log")
        .bytes()
        .await
        .expect("body");
    let chat: Value = serde_json::from_slice(&body).expect("JSON");
    chat["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_replies_merge_and_a_stale_one_is_dropped_logged_at_warn_and_counted() {
    let lines: Lines = Arc::default();
    tracing::subscriber::set_global_default(Capture(lines.clone())).expect("one subscriber");
    let emu = Emulator::builder().start().await.expect("emulator");
    let control = emu.control_url();
    let app = emu.app();
    let mut config = on_air(&emu).await;
    // The kit greets; thanks are the handler's own text ("thanks" says
    // nothing by itself), merged with the kit's text for many.
    config.kit = KitConfig::from_json(
        r#"{"greetings":{},"tally":true,"replies":{"thanks":"","thanks_many":"Thank you, {nicknames}!",
            "fresh_ms":{"welcome":20000}}}"#,
    )
    .expect("kit");
    post(&format!("{control}/state"), json!({"botManager": true})).await;
    let code = consent_code(&emu).await;
    let mut driver = Driver::new(Bot::new(config, None, 11)).with_clock(EmulatorClock(emu.clock()));
    driver.bot_mut().authorize(&code, &app.redirect_uri);
    let emit = |event: &'static str, data: Value| {
        let control = control.clone();
        async move {
            let sent = post(
                &format!("{control}/emit"),
                json!({"event": event, "data": data}),
            )
            .await;
            assert_eq!(sent["delivered"], 1, "{event}");
        }
    };
    let quota = |per_second: u64| {
        let control = control.clone();
        async move {
            post(
                &format!("{control}/quota"),
                json!({"chatPerSecond": per_second}),
            )
            .await;
        }
    };
    let person = |id: &str, nickname: &str| json!({"id": id, "nickname": nickname});

    // Until the stream is open.
    let open = async {
        while driver.bot().status(driver.now_ms()).counters.connects == 0 {
            let _ = tokio::time::timeout(Duration::from_millis(50), driver.next()).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), open)
        .await
        .expect("the stream opens");

    // The chat limit holds everything back while three people arrive and
    // two donate; then it opens.
    quota(0).await;
    for (id, nickname) in [("u1", "Ana"), ("u2", "민지"), ("u3", "Jörg")] {
        emit("presence", json!({"user": person(id, nickname)})).await;
    }
    for (id, nickname) in [("u4", "Lucas"), ("u5", "Мария")] {
        emit(
            "donation",
            json!({"user": person(id, nickname), "amount": 500}),
        )
        .await;
    }
    let mut donations = 0;
    let mut notices: Vec<Notice> = Vec::new();
    let mut opened = false;
    let run = async {
        loop {
            match driver.next().await.expect("the driver runs") {
                BotEvent::Event {
                    event: Event::Donation(d),
                    ..
                } => {
                    let name = d.user.nickname.as_deref().unwrap_or("friend");
                    let text = format!("Thank you, {name}, for the {}!", d.amount);
                    driver
                        .bot_mut()
                        .reply(ReplyKind::Thanks, &d.user, &text)
                        .expect("one message");
                    donations += 1;
                }
                BotEvent::Notice(n @ Notice::RepliesDropped { .. }) => notices.push(n),
                _ => {}
            }
            let c = driver.bot().status(driver.now_ms()).counters.replies;
            if donations == 2 && !opened && c.welcome.messages == 0 {
                // Everything is queued, nothing went out: open the limit.
                tokio::time::sleep(Duration::from_millis(300)).await;
                quota(5).await;
                opened = true;
            }
            if c.welcome.people == 3 && c.thanks.people == 2 {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the replies go out");
    assert_eq!(
        said(&control).await,
        [
            "Welcome, Ana, 민지 and Jörg! 🎧",
            "Thank you, Lucas and Мария!"
        ]
    );
    assert!(notices.is_empty(), "{notices:?}");

    // The limit closes again; a welcome waits past its 20 s freshness
    // (the emulator's clock jumps): dropped, never sent, told and logged.
    quota(0).await;
    emit("presence", json!({"user": person("u6", "Zoë")})).await;
    let mut jumped = false;
    let run = async {
        loop {
            if let BotEvent::Notice(n @ Notice::RepliesDropped { .. }) =
                driver.next().await.expect("the driver runs")
            {
                return n;
            }
            if !jumped && driver.bot().kit().is_some_and(|k| k.tally().joined() == 4) {
                // Zoë's welcome is queued: 21 s pass on the clock.
                emu.advance_ms(21_000);
                jumped = true;
            }
        }
    };
    let notice = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the drop is told");
    assert_eq!(
        notice,
        Notice::RepliesDropped {
            kind: ReplyKind::Welcome,
            people: 1,
            reason: DropReason::Stale,
        }
    );
    let welcome = driver
        .bot()
        .status(driver.now_ms())
        .counters
        .replies
        .welcome;
    assert_eq!(
        (welcome.messages, welcome.people, welcome.merged),
        (1, 3, 3)
    );
    assert_eq!((welcome.dropped, welcome.dropped_stale), (1, 1));
    let warned: Vec<String> = lines
        .lock()
        .expect("log")
        .iter()
        .filter(|(level, target, _)| *level == tracing::Level::WARN && target == "onair")
        .map(|(_, _, message)| message.clone())
        .collect();
    assert!(
        warned.contains(
            &"dropped 1 welcome reply: not sent within their freshness (the chat limit held them back)"
                .to_owned()
        ),
        "{warned:?}"
    );
    assert!(!said(&control).await.iter().any(|m| m.contains("Zoë")));
    let _ = driver.shutdown(false).await;
    emu.shutdown().await;
}
