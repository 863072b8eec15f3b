// scripts/dist's Rust bot: greets, thanks, prints the broadcast's tally when it ends, stops.
use onair::{json::TallyJson, kit::KitConfig, BaseUrl, Bot, BotConfig, ClientCredentials, Stop};
use onair_tokio::{BotEvent, Driver};
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let app = ClientCredentials::new(&var("ONAIR_CLIENT_ID"), var("ONAIR_CLIENT_SECRET"))?;
    let mut config = BotConfig::new(BaseUrl::new(&var("ONAIR_BASE_URL"))?, app);
    config.kit = KitConfig::from_json(r#"{"greetings":{},"tally":true}"#)?;
    let mut driver = Driver::new(Bot::new(config, None, 1));
    while let Some(event) = driver.next().await {
        match event {
            BotEvent::NeedsAuthorization => driver.bot_mut().authorize(&var("ONAIR_CODE"), &var("ONAIR_REDIRECT_URI")),
            BotEvent::BroadcastEnded(b) => {
                println!("{{\"liveId\":{},{}", b.live_id.unwrap_or(0), &TallyJson(&b.tally).to_line()[1..]);
                driver.bot_mut().shutdown(false);
            }
            BotEvent::Stopped(Stop::ShutDown) => return Ok(()),
            BotEvent::Stopped(stop) => return Err(stop.to_string().into()),
            _ => {}
        }
    }
    Ok(())
}
