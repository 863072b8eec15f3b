use onair::kit::KitConfig;
use onair::{BaseUrl, BotConfig, ClientCredentials, Event, User};
use onair_tokio::{BotEvent, Driver, FileStore};

const KIT: &str = r#"{"commands":[{"name":"hello","aliases":["hi"]}],"greetings":{},"tally":true}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let app = ClientCredentials::new(&var("ONAIR_CLIENT_ID")?, var("ONAIR_CLIENT_SECRET")?)?;
    let mut config = BotConfig::new(BaseUrl::new(&var("ONAIR_BASE_URL")?)?, app);
    config.kit = KitConfig::from_json(KIT)?;
    let (tokens, state) = (FileStore::new("tokens.json"), FileStore::new("state.json"));
    let mut driver = Driver::from_stores(config, tokens, state)?;
    while let Some(event) = driver.next().await {
        let bot = driver.bot_mut();
        let reply = match event {
            BotEvent::NeedsAuthorization => {
                bot.authorize(&var("ONAIR_CODE")?, &var("ONAIR_REDIRECT_URI")?);
                continue;
            }
            BotEvent::Arrival(a) => format!("Welcome, {}!", name(&a.user)),
            BotEvent::Command(c) => format!("Hello, {}!", name(&c.user)),
            BotEvent::Event {
                event: Event::Donation(d),
                ..
            } => format!("Thank you, {}!", name(&d.user)),
            BotEvent::Stopped(stop) => return Err(format!("stopped: {stop}").into()),
            _ => continue,
        };
        bot.say(&reply);
    }
    Ok(())
}

fn name(user: &User) -> &str {
    user.nickname.as_deref().unwrap_or("friend")
}
