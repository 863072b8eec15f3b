//! The reference bot: what `onair demo` runs and `scripts/e2e rust` checks,
//! on `onair-tokio` and the configured kit ([`KIT`]). It greets first
//! arrivals and returns after ten minutes away, answers `!hello` and `!top`
//! (top donors, split into several messages when long), thanks each donation,
//! calls every 100 hearts and each 1 000 a person gave, posts a reminder
//! every 30 minutes while connected, and keeps the tally of every broadcast
//! (the kit's, handed out at each end). The behaviour every language's
//! reference bot shares is written down in `scripts/e2e.d/README.md`.

use onair::event::Event;
use onair::kit::{ArrivalKind, KitConfig, Milestone};
use onair::proto::json::TallyJson;
use onair::proto::timers::Timer;
use onair::Bot;
use onair_tokio::BotEvent;

/// The reference bot's kit, the one `scripts/e2e.d/README.md` gives.
pub const KIT: &str = r#"{"commands":[{"name":"hello"},{"name":"top"}],
  "greetings":{"welcome_back_after_ms":600000},
  "milestones":{"hearts_every":100,"donations_every":1000},
  "tally":true}"#;

/// The reminder's period: 30 minutes.
pub const ANNOUNCE_EVERY_MS: u64 = 30 * 60 * 1000;

/// The kit configuration of [`KIT`].
pub fn kit() -> KitConfig {
    // A constant the tests read: it parses.
    KitConfig::from_json(KIT).unwrap_or_default()
}

/// One broadcast as the bot saw it: its `liveId` when known, its tally.
#[derive(Debug, Clone)]
pub struct Broadcast {
    /// Its `liveId`, when known.
    pub live_id: Option<u64>,
    /// Totals by person.
    pub tally: onair::kit::tally::Tally,
}

/// Something worth a line in the demo's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The bot decided to say this in chat.
    Said(String),
    /// A broadcast ended; its index (0-based).
    BroadcastEnded(usize),
}

/// The reference bot's memory and decisions (the kit keeps the rest).
#[derive(Debug, Default)]
pub struct RefBot {
    /// The broadcasts that ended, in order.
    ended: Vec<Broadcast>,
    /// Every arrival greeted: (liveId, person id, first or back).
    arrivals: Vec<(Option<u64>, String, &'static str)>,
    /// The reminder timer is set.
    announcing: bool,
    /// Chat messages given to the bot (some may fail: quota, frozen chat).
    pub chats_queued: u64,
}

fn name(user: &onair::User) -> &str {
    user.nickname.as_deref().unwrap_or("friend")
}

impl RefBot {
    /// A bot with an empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every broadcast so far: those that ended, then the current one (the
    /// kit's tally now).
    pub fn broadcasts(&self, bot: &Bot) -> Vec<Broadcast> {
        let mut all = self.ended.clone();
        if let Some(kit) = bot.kit() {
            all.push(Broadcast {
                live_id: kit.live_id(),
                tally: kit.tally().clone(),
            });
        }
        all
    }

    /// `{"broadcasts":[…],"arrivals":[…]}`: what `scripts/e2e.d/README.md`
    /// asks a bot to write at SIGTERM.
    pub fn tally_json(&self, bot: &Bot) -> String {
        let broadcasts: Vec<serde_json::Value> = self
            .broadcasts(bot)
            .iter()
            .map(|b| {
                let mut totals: serde_json::Value =
                    serde_json::from_str(&TallyJson(&b.tally).to_line()).unwrap_or_default();
                totals["liveId"] = serde_json::json!(b.live_id);
                totals
            })
            .collect();
        let arrivals: Vec<serde_json::Value> = self
            .arrivals
            .iter()
            .map(|(live_id, id, kind)| serde_json::json!({"liveId": live_id, "id": id, "kind": kind}))
            .collect();
        serde_json::json!({"broadcasts": broadcasts, "arrivals": arrivals}).to_string()
    }

    fn say(&mut self, bot: &mut Bot, text: &str, notes: &mut Vec<Note>) {
        self.chats_queued += bot.say(text).len() as u64;
        notes.push(Note::Said(text.to_owned()));
    }

    /// One event of the driver: answered when it deserves an answer.
    pub fn on(&mut self, bot: &mut Bot, event: &BotEvent, now_ms: u64) -> Vec<Note> {
        let mut notes = Vec::new();
        match event {
            BotEvent::Event { event, .. } => {
                if !self.announcing {
                    let first = now_ms.saturating_add(ANNOUNCE_EVERY_MS);
                    let timer = Timer::every(ANNOUNCE_EVERY_MS, first).while_connected();
                    self.announcing = bot.set_timer("announce", timer).is_ok();
                }
                if let Event::Donation(d) = event {
                    self.say(bot, &format!("Thank you, {}!", name(&d.user)), &mut notes);
                }
            }
            BotEvent::Arrival(a) => {
                let (kind, text) = match a.kind {
                    ArrivalKind::First => ("first", format!("Welcome, {}! 🎧", name(&a.user))),
                    ArrivalKind::Back { .. } => {
                        ("back", format!("Welcome back, {}!", name(&a.user)))
                    }
                };
                self.arrivals.push((a.live_id, a.user.id.clone(), kind));
                self.say(bot, &text, &mut notes);
            }
            BotEvent::Command(c) => {
                let reply = match c.name.as_str() {
                    "hello" => format!("Hello, {}!", name(&c.user)),
                    _ => top_donors(bot),
                };
                self.say(bot, &reply, &mut notes);
            }
            BotEvent::Milestone(Milestone::Hearts { reached, .. }) => {
                self.say(bot, &format!("{reached} hearts tonight! 💜"), &mut notes);
            }
            BotEvent::Milestone(Milestone::Donated { user, reached, .. }) => {
                let text = format!("{} has given {reached} tonight!", name(user));
                self.say(bot, &text, &mut notes);
            }
            BotEvent::BroadcastEnded(b) => {
                notes.push(Note::BroadcastEnded(self.ended.len()));
                self.ended.push(Broadcast {
                    live_id: b.live_id,
                    tally: b.tally.clone(),
                });
            }
            BotEvent::Timer { tag } if tag.as_str() == "announce" => {
                let text = "Say !hello to say hi, or !top for tonight's top donors.";
                self.say(bot, text, &mut notes);
            }
            _ => {}
        }
        notes
    }
}

fn top_donors(bot: &Bot) -> String {
    let Some(kit) = bot.kit() else {
        return String::new();
    };
    let donors = kit.tally().donors();
    if donors.is_empty() {
        return "No donations yet tonight.".to_owned();
    }
    let list: Vec<String> = donors
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, (id, p))| {
            let name = p.nickname.as_deref().unwrap_or(id);
            format!("{}. {name} {}", i + 1, p.donated)
        })
        .collect();
    format!("Top donors: {}", list.join(" · "))
}

#[cfg(test)]
mod tests {
    //! The reference bot through the emulator's `busy` and `faulty`
    //! scenarios: what it says (a digest, snapshotted) and its tally against
    //! the ledger. The text depends only on the events, which the emulator
    //! delivers in a seeded order, so the snapshot is stable.

    use std::time::Duration;

    use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    use onair_emulator::{Emulator, Scenario};
    use onair_tokio::{BotEvent, Driver};

    use crate::demo::EmulatorClock;

    use super::{Note, RefBot};

    /// Runs the bot through `scenario`; returns what it said (timer
    /// reminders left out: they depend on time) and whether its tally
    /// equals the ledger.
    async fn said_through(scenario: &str, speed: f64) -> (Vec<String>, bool) {
        let emu = Emulator::builder()
            .speed(speed)
            .scenario(Scenario::builtin(scenario).unwrap())
            .start()
            .await
            .unwrap();
        let app = emu.app();
        let code = crate::demo::consent_code(&emu.control_url()).await.unwrap();
        let mut config = BotConfig::new(
            BaseUrl::new(&emu.base_url()).unwrap(),
            ClientCredentials::new(&app.client_id, app.client_secret.clone()).unwrap(),
        );
        config.kit = super::kit();
        // On a ×20–50 clock the 45 s watchdog is a second of real time: a
        // starved test machine could trip it and miss events. The text
        // depends on seeing every event, so the test gives it ten minutes.
        config.stream.watchdog_ms = 600_000;
        let mut driver =
            Driver::new(Bot::new(config, None, 5)).with_clock(EmulatorClock(emu.clock()));
        let mut refbot = RefBot::new();
        let mut said = Vec::new();
        let mut code = Some(code);
        let run = async {
            while let Some(event) = driver.next().await {
                let now = driver.now_ms();
                match &event {
                    BotEvent::NeedsAuthorization => {
                        let code = code.take().unwrap();
                        driver.bot_mut().authorize(&code, &app.redirect_uri);
                    }
                    BotEvent::Stopped(stop) => panic!("stopped: {stop}"),
                    BotEvent::Timer { .. } => {}
                    _ => {
                        for note in refbot.on(driver.bot_mut(), &event, now) {
                            if let Note::Said(text) = note {
                                said.push(text);
                            }
                        }
                    }
                }
            }
        };
        tokio::select! {
            () = run => panic!("the driver ended"),
            () = async {
                emu.wait_scenario().await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            } => {}
        }
        let ledger = serde_json::to_value(emu.ledger()).unwrap();
        let equal = crate::demo::tally_equals_ledger(
            &refbot.broadcasts(driver.bot()),
            &ledger,
            &app.client_id,
        );
        emu.shutdown().await;
        (said, equal)
    }

    fn digest(said: &[String]) -> serde_json::Value {
        let count = |prefix: &str| said.iter().filter(|s| s.starts_with(prefix)).count();
        serde_json::json!({
            "messages": said.len(),
            "welcome": count("Welcome, "),
            "welcomeBack": count("Welcome back, "),
            "hello": count("Hello, "),
            "thanks": count("Thank you, "),
            "given": said.iter().filter(|s| s.contains(" has given ")).count(),
            "hearts": said.iter().filter(|s| s.contains(" hearts tonight")).count(),
            "longest_utf16": said.iter().map(|s| s.encode_utf16().count()).max(),
            "first": said.iter().take(25).collect::<Vec<_>>(),
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_the_reference_bot_says_through_the_busy_night() {
        let (said, equal) = said_through("busy", 50.0).await;
        assert!(equal, "tally = ledger");
        assert!(said
            .iter()
            .all(|s| onair::proto::chat::validate_chat(s).is_ok()));
        insta::assert_json_snapshot!(digest(&said));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_the_reference_bot_says_through_the_faulty_night() {
        let (said, equal) = said_through("faulty", 20.0).await;
        assert!(equal, "tally = ledger");
        insta::assert_json_snapshot!(digest(&said));
    }
}
