//! The reference bot: what `onair demo` runs and `scripts/e2e rust` checks,
//! on `onair-tokio` and the kit. It greets first joins once and welcomes
//! rejoiners back once, answers `!hello` and `!top` (top donors, split into
//! several messages when long), thanks donors with their running total,
//! announces every 100 hearts, posts a reminder every 30 minutes while
//! connected, and keeps a tally per broadcast (a new one after `LIVE_ENDED`).
//! It reads `GET /v1/live` once per broadcast, for the summary's title: no
//! polling.

use onair::bot::{CallId, CallResult};
use onair::event::{EndReason, Event};
use onair::kit::audience::{Audience, Greeting};
use onair::kit::commands::{Allowed, Commands};
use onair::kit::milestones::{Milestone, Milestones};
use onair::kit::tally::Tally;
use onair::kit::text::split;
use onair::proto::json::TallyJson;
use onair::proto::timers::Timer;
use onair::Bot;

/// The reminder's period: 30 minutes.
pub const ANNOUNCE_EVERY_MS: u64 = 30 * 60 * 1000;

/// One broadcast as the bot saw it.
#[derive(Debug, Default)]
pub struct Broadcast {
    /// Its title, when `GET /v1/live` answered.
    pub title: Option<String>,
    /// Its `liveId`, when known.
    pub live_id: Option<u64>,
    /// Totals by person.
    pub tally: Tally,
}

/// Something worth a line in the demo's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The bot decided to say this in chat (queued, or refused when the
    /// queue was full: see [`RefBot::chats_refused`]).
    Said(String),
    /// A broadcast ended; its index (0-based).
    BroadcastEnded(usize),
}

/// The reference bot's memory and decisions.
#[derive(Debug)]
pub struct RefBot {
    commands: Commands,
    audience: Audience,
    milestones: Milestones,
    broadcasts: Vec<Broadcast>,
    /// `GET /v1/live` was asked for the current broadcast.
    asked_broadcast: Option<CallId>,
    /// The reminder timer is set.
    announcing: bool,
    /// Chat messages given to the bot (some may fail: quota, frozen chat).
    pub chats_queued: u64,
    /// Chat messages refused locally (queue full).
    pub chats_refused: u64,
}

impl Default for RefBot {
    fn default() -> Self {
        Self::new()
    }
}

impl RefBot {
    /// A bot with an empty memory.
    pub fn new() -> Self {
        RefBot {
            commands: Commands::new()
                .command("hello", Allowed::Anyone)
                .command("top", Allowed::Anyone),
            audience: Audience::new(),
            milestones: Milestones::new().hearts_every(100),
            broadcasts: vec![Broadcast::default()],
            asked_broadcast: None,
            announcing: false,
            chats_queued: 0,
            chats_refused: 0,
        }
    }

    /// The broadcasts so far, the current one last.
    pub fn broadcasts(&self) -> &[Broadcast] {
        &self.broadcasts
    }

    /// `{"broadcasts":[totals…]}` in the ledger's shape (`scripts/e2e`).
    pub fn tally_json(&self) -> String {
        let list: Vec<String> = self
            .broadcasts
            .iter()
            .map(|b| TallyJson(&b.tally).to_line())
            .collect();
        format!("{{\"broadcasts\":[{}]}}", list.join(","))
    }

    fn current(&mut self) -> &mut Broadcast {
        if self.broadcasts.is_empty() {
            self.broadcasts.push(Broadcast::default());
        }
        let last = self.broadcasts.len() - 1;
        &mut self.broadcasts[last]
    }

    fn say(&mut self, bot: &mut Bot, text: &str, notes: &mut Vec<Note>) {
        for part in split(text) {
            // The queue may be full in a busy broadcast (the chat limit paces
            // it); such a message is counted as refused, never lost silently.
            match bot.send_chat(&part) {
                Ok(_) => self.chats_queued += 1,
                Err(_) => self.chats_refused += 1,
            }
            notes.push(Note::Said(part));
        }
    }

    /// One stream event: tally it, then answer what deserves an answer.
    pub fn on_event(&mut self, bot: &mut Bot, event: &Event, now_ms: u64) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Event::End(end) = event {
            if end.reason == EndReason::LiveEnded {
                notes.push(Note::BroadcastEnded(self.broadcasts.len() - 1));
                self.broadcasts.push(Broadcast::default());
                self.audience.end_broadcast();
                self.milestones.end_broadcast();
                self.asked_broadcast = None;
            }
            return notes;
        }
        self.current().tally.record(event);
        if self.asked_broadcast.is_none() {
            // Once per broadcast, for the summary: not a poll.
            self.asked_broadcast = Some(bot.fetch_broadcast());
        }
        if !self.announcing {
            let first = now_ms.saturating_add(ANNOUNCE_EVERY_MS);
            let timer = Timer::every(ANNOUNCE_EVERY_MS, first).while_connected();
            self.announcing = bot.set_timer("announce", timer).is_ok();
        }
        match self.audience.on_event(event) {
            Some(Greeting::First(p)) => {
                let name = p.user.nickname.as_deref().unwrap_or("friend");
                self.say(bot, &format!("Welcome, {name}! 🎧"), &mut notes);
            }
            Some(Greeting::WelcomeBack(p)) => {
                let name = p.user.nickname.as_deref().unwrap_or("friend");
                self.say(bot, &format!("Welcome back, {name}!"), &mut notes);
            }
            None => {}
        }
        match self.milestones.on_event(event) {
            Some(Milestone::Hearts { reached, .. }) => {
                self.say(bot, &format!("{reached} hearts tonight! 💜"), &mut notes);
            }
            Some(Milestone::Donated { .. }) | None => {}
        }
        match event {
            Event::Donation(d) => {
                let name = d.user.nickname.as_deref().unwrap_or("friend");
                let total = self.milestones.donated_by(&d.user.id);
                self.say(
                    bot,
                    &format!("Thank you, {name}! {total} in all tonight."),
                    &mut notes,
                );
            }
            Event::Chat(chat) => {
                if let Some(Ok(run)) = self.commands.match_chat(chat, &self.audience) {
                    let reply = match run.name.as_str() {
                        "hello" => {
                            let name = chat.user.nickname.as_deref().unwrap_or("friend");
                            format!("Hello, {name}!")
                        }
                        _ => self.top_donors(),
                    };
                    self.say(bot, &reply, &mut notes);
                }
            }
            _ => {}
        }
        notes
    }

    fn top_donors(&self) -> String {
        let Some(current) = self.broadcasts.last() else {
            return String::new();
        };
        let donors = current.tally.donors();
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

    /// A timer fired.
    pub fn on_timer(&mut self, bot: &mut Bot, tag: &str) -> Vec<Note> {
        let mut notes = Vec::new();
        if tag == "announce" {
            self.say(
                bot,
                "Say !hello to say hi, or !top for tonight's top donors.",
                &mut notes,
            );
        }
        notes
    }

    /// An app call's answer.
    pub fn on_done(&mut self, call: CallId, result: &CallResult) {
        if Some(call) == self.asked_broadcast {
            if let CallResult::Broadcast(b) = result {
                let current = self.current();
                current.title = Some(b.title.clone());
                current.live_id = Some(b.live_id);
            }
        }
    }
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
                match event {
                    BotEvent::NeedsAuthorization => {
                        let code = code.take().unwrap();
                        driver.bot_mut().authorize(&code, &app.redirect_uri);
                    }
                    BotEvent::Event { event, .. } => {
                        for note in refbot.on_event(driver.bot_mut(), &event, now) {
                            if let Note::Said(text) = note {
                                said.push(text);
                            }
                        }
                    }
                    BotEvent::Done { call, result } => refbot.on_done(call, &result),
                    BotEvent::Stopped(stop) => panic!("stopped: {stop}"),
                    _ => {}
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
        let equal = crate::demo::tally_equals_ledger(&refbot, &ledger, &app.client_id);
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
