//! `Driver::close`: a driver without stores hands back, as it stops, what
//! the bot handed out on the way (the kit's last state), so an author who
//! saves state elsewhere (a database) loses nothing at a stop.

use std::time::Duration;

use onair::Bot;
use onair_emulator::Emulator;
use onair_tokio::{BotEvent, Driver};
use serde_json::json;

mod common;

use common::{consent_code, on_air, post};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_hands_back_the_kit_state_a_storeless_driver_did_not_save() {
    let emu = Emulator::builder().start().await.expect("emulator");
    let control = emu.control_url();
    let app = emu.app();
    let config = on_air(&emu).await;
    let code = consent_code(&emu).await;
    let mut driver = Driver::new(Bot::new(config.clone(), None, 1));
    let mut code = Some(code);
    let mut emitted = false;
    let run = async {
        loop {
            match driver.next().await.expect("the driver runs") {
                BotEvent::NeedsAuthorization => {
                    let code = code.take().expect("one code");
                    driver.bot_mut().authorize(&code, &app.redirect_uri);
                }
                BotEvent::Event {
                    event: onair::Event::Like(like),
                    ..
                } => return like.total_amount,
                _ => {}
            }
            let connected = driver.bot().status(driver.now_ms()).counters.connects > 0;
            if connected && !emitted {
                let like = json!({"event":"like","data":{"user":{"id":"u1","nickname":"A"}}});
                post(&format!("{control}/emit"), like).await;
                emitted = true;
            }
        }
    };
    let hearts = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the like arrives");
    let closed = tokio::time::timeout(Duration::from_secs(5), driver.close(false))
        .await
        .expect("closed in time")
        .expect("closed");
    assert!(
        closed.tokens.is_none(),
        "no pair was handed out while stopping"
    );
    let state = closed
        .state
        .expect("the kit state, handed out as the bot stopped");
    let resumed = Bot::new(config, None, 2).with_kit_state(&state);
    let tally = resumed.kit().expect("kit").tally();
    assert!(hearts > 0);
    assert_eq!(tally.total_hearts(), hearts, "{}", state.to_json());
    emu.shutdown().await;
}

/// `close` first hands the bot what the stream has read and what its
/// connection already holds: a burst the service wrote just before the
/// close is all in the kit's last state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_counts_every_event_the_service_wrote_before_it() {
    let emu = Emulator::builder().start().await.expect("emulator");
    let control = emu.control_url();
    let app = emu.app();
    let config = on_air(&emu).await;
    let code = consent_code(&emu).await;
    let mut driver = Driver::new(Bot::new(config.clone(), None, 3));
    driver.bot_mut().authorize(&code, &app.redirect_uri);
    // Until the stream is open.
    let opened = async {
        while driver.bot().status(driver.now_ms()).counters.connects == 0 {
            let _ = driver.next().await.expect("the driver runs");
        }
    };
    tokio::time::timeout(Duration::from_secs(10), opened)
        .await
        .expect("the stream opens");
    // The burst, while nobody polls the driver: it waits in the channel and
    // in the connection.
    for i in 0..200 {
        let user = json!({"id": format!("u{}", i % 7), "nickname": "A"});
        let like =
            json!({"event":"like","data":{"user": user, "type": "PAID", "amount": 1, "combo": 1}});
        let sent = post(&format!("{control}/emit"), like).await;
        assert_eq!(sent["delivered"], 1);
    }
    let closed = tokio::time::timeout(Duration::from_secs(5), driver.close(false))
        .await
        .expect("closed in time")
        .expect("closed");
    let state = closed.state.expect("the kit's last state");
    let resumed = Bot::new(config, None, 4).with_kit_state(&state);
    let tally = resumed.kit().expect("kit").tally().to_json();
    let ledger = serde_json::to_value(emu.ledger()).expect("ledger");
    let truth = ledger["broadcasts"][0]["bots"][0]["totals"].clone();
    let mine: serde_json::Value = serde_json::from_str(&tally).expect("tally JSON");
    assert_eq!(mine, truth);
    assert_eq!(mine["hearts"], 200);
    emu.shutdown().await;
}
