use onair::kit::KitConfig;
use onair::{BaseUrl, BotConfig, ClientCredentials, Stop};
use onair_tokio::{BotEvent, Driver, FileStore, TokenStore};

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("{e}"); // one line: what is wrong and what to do
        std::process::exit(1);
    }
}

// Greetings, thanks, answers and the tally: configured, said by the bot.
const KIT: &str = r#"{"commands":[{"name":"hello","aliases":["hi"]}],"greetings":{},"tally":true,
  "replies":{"commands":{"hello":"Hello, {nickname}!"}}}"#;

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
    let app = ClientCredentials::new(&var("ONAIR_CLIENT_ID")?, var("ONAIR_CLIENT_SECRET")?)?;
    let mut config = BotConfig::new(BaseUrl::new(&var("ONAIR_BASE_URL")?)?, app);
    config.kit = KitConfig::from_json(KIT)?;
    let (tokens, state) = (FileStore::new("tokens.json"), FileStore::new("state.json"));
    // Ctrl-C or SIGTERM: what was read is counted, the files saved, exit 0.
    let mut driver = Driver::from_stores(config, tokens.clone(), state)?.stop_on_signals();
    while let Some(event) = driver.next().await {
        match event {
            BotEvent::NeedsAuthorization => {
                let code = var("ONAIR_CODE")
                    .map_err(|_| consent("no consent code (ONAIR_CODE is not set)"))?;
                let redirect_uri = var("ONAIR_REDIRECT_URI")?;
                driver.bot_mut().authorize(&code, &redirect_uri);
            }
            BotEvent::Notice(notice) if notice.is_warning() => {
                eprintln!("{notice}"); // e.g. the service cannot be reached
            }
            BotEvent::Stopped(Stop::ShutDown) => break,
            BotEvent::Stopped(stop @ Stop::Reauthorize(_)) => {
                tokens.clear()?; // the saved pair no longer works
                return Err(consent(&format!("stopped: {stop}")).into());
            }
            BotEvent::Stopped(stop) => return Err(format!("stopped: {stop}").into()),
            _ => {}
        }
    }
    Ok(())
}

/// The line for a bot that needs the DJ's consent.
fn consent(why: &str) -> String {
    format!("{why}. The DJ must connect the bot: set ONAIR_CODE to a fresh consent code and start it again")
}
