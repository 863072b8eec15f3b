//! What the driver's emulator tests share: the DJ on air, a consent code,
//! a bot's configuration with the kit's tally, and the control API.

use onair::kit::KitConfig;
use onair::{BaseUrl, BotConfig, ClientCredentials};
use onair_emulator::Running;
use serde_json::{json, Value};

/// `POST` to the emulator's control API; its JSON answer.
pub async fn post(url: &str, body: Value) -> Value {
    let response = reqwest::Client::new()
        .post(url)
        .body(body.to_string())
        .send()
        .await
        .expect("control call");
    assert!(response.status().is_success(), "POST {url}");
    serde_json::from_slice(&response.bytes().await.expect("body")).expect("JSON")
}

/// A fresh consent code of the emulator's DJ.
pub async fn consent_code(emu: &Running) -> String {
    post(&format!("{}/consent", emu.control_url()), json!({})).await["code"]
        .as_str()
        .expect("code")
        .to_owned()
}

/// The DJ goes on air; a bot's configuration for `emu` with the kit's tally.
pub async fn on_air(emu: &Running) -> BotConfig {
    post(&format!("{}/live/start", emu.control_url()), json!({})).await;
    let app = emu.app();
    let creds = ClientCredentials::new(&app.client_id, app.client_secret.clone()).expect("creds");
    let mut config = BotConfig::new(BaseUrl::new(&emu.base_url()).expect("url"), creds);
    config.kit = KitConfig::from_json(r#"{"tally":true}"#).expect("kit");
    config
}
