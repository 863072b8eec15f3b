//! `Driver::stop_on_signals` in-process: this test sends SIGINT to its own
//! process (so it is the only test of this binary). A signal while the bot
//! waits for a new consent code ends it with that stop; a signal while it
//! streams hands the bot everything the stream had read, then stops it with
//! the kit's last state handed out and `Stopped(ShutDown)`.

use std::process::Command;
use std::time::Duration;

use onair::{AuthProblem, Bot, Stop};
use onair_emulator::Emulator;
use onair_tokio::{BotEvent, Driver};
use serde_json::{json, Value};

mod common;

use common::{consent_code, on_air, post};

/// SIGINT to this very process.
fn interrupt_myself() {
    let sent = Command::new("kill")
        .args(["-INT", &std::process::id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
}

/// Everything the driver hands out until it ends (at most 10 s).
async fn rest(driver: &mut Driver) -> Vec<BotEvent> {
    let mut events = Vec::new();
    let all = async {
        while let Some(event) = driver.next().await {
            events.push(event);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .expect("the driver ends");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_a_waiting_bot_with_its_stop_and_a_streaming_one_with_all_it_read() {
    let emu = Emulator::builder().start().await.expect("emulator");
    let control = emu.control_url();
    let app = emu.app();
    let config = on_air(&emu).await;
    let code = || consent_code(&emu);

    // A spent code: the bot stops for a new one and waits; Ctrl-C ends it
    // with that stop, not with `ShutDown`.
    let spent = code().await;
    let mut first = Driver::new(Bot::new(config.clone(), None, 1));
    first.bot_mut().authorize(&spent, &app.redirect_uri);
    let exchanged =
        async { while !matches!(first.next().await, Some(BotEvent::TokensRenewed(_))) {} };
    tokio::time::timeout(Duration::from_secs(10), exchanged)
        .await
        .expect("the first exchange");
    first.shutdown(false).await.expect("shutdown");
    let mut waiting = Driver::new(Bot::new(config.clone(), None, 2)).stop_on_signals();
    waiting.bot_mut().authorize(&spent, &app.redirect_uri);
    let stopped = async {
        loop {
            if let Some(BotEvent::Stopped(stop)) = waiting.next().await {
                return stop;
            }
        }
    };
    let stop = tokio::time::timeout(Duration::from_secs(10), stopped)
        .await
        .expect("the stop");
    assert!(
        matches!(stop, Stop::Reauthorize(AuthProblem::ExchangeFailed(_))),
        "{stop:?}"
    );
    interrupt_myself();
    let after = rest(&mut waiting).await;
    assert!(
        matches!(after.as_slice(), [BotEvent::Stopped(again)] if *again == stop),
        "{after:?}"
    );
    drop(waiting);

    // A streaming bot: a burst, Ctrl-C at once; all of it is counted in the
    // kit's last state, then `ShutDown`.
    let mut streaming = Driver::new(Bot::new(config.clone(), None, 3)).stop_on_signals();
    streaming
        .bot_mut()
        .authorize(&code().await, &app.redirect_uri);
    let opened = async {
        while streaming.bot().status(streaming.now_ms()).counters.connects == 0 {
            let _ = streaming.next().await.expect("the driver runs");
        }
    };
    tokio::time::timeout(Duration::from_secs(10), opened)
        .await
        .expect("the stream opens");
    for i in 0..120 {
        let user = json!({"id": format!("u{}", i % 5), "nickname": "A"});
        let like = json!({"event": "like", "data": {"user": user, "type": "PAID", "amount": 1, "combo": 1}});
        assert_eq!(post(&format!("{control}/emit"), like).await["delivered"], 1);
    }
    interrupt_myself();
    let after = rest(&mut streaming).await;
    assert!(
        matches!(after.last(), Some(BotEvent::Stopped(Stop::ShutDown))),
        "{:?}",
        after.last()
    );
    let state = after
        .iter()
        .rev()
        .find_map(|e| match e {
            BotEvent::StateChanged(state) => Some(state.clone()),
            _ => None,
        })
        .expect("the kit's last state");
    let resumed = Bot::new(config, None, 4).with_kit_state(&state);
    let mine: Value =
        serde_json::from_str(&resumed.kit().expect("kit").tally().to_json()).expect("tally");
    let ledger = serde_json::to_value(emu.ledger()).expect("ledger");
    assert_eq!(mine, ledger["broadcasts"][0]["bots"][0]["totals"]);
    assert_eq!(mine["hearts"], 120);
    emu.shutdown().await;
}
