//! The bot kit: what every bot author writes by hand on top of the events,
//! configured once on the bot ([`BotConfig::kit`](crate::BotConfig)) and
//! delivered through the one poll loop as actions, the same in every
//! language.
//!
//! | configured | the bot says |
//! |---|---|
//! | commands: a prefix, names and aliases, who may run each, a cooldown per person | [`Action::Command`](crate::Action::Command) (a refused one: [`Notice::CommandRefused`](crate::Notice::CommandRefused)) |
//! | greetings: a person's first sign in a broadcast (their join, or their first chat when presence does not reach the bot), and a return after an absence | [`Action::Arrival`](crate::Action::Arrival) |
//! | milestones: every N hearts of the broadcast, every N units one person donated | [`Action::Milestone`](crate::Action::Milestone) |
//! | the tally per broadcast | [`Action::BroadcastEnded`](crate::Action::BroadcastEnded) with the final [`Tally`](tally::Tally) |
//!
//! Each of these actions carries the event that caused it; the raw
//! [`Action::Event`](crate::Action::Event) still comes first, so nothing is
//! hidden. The memory behind them (who was greeted in which broadcast, the
//! running tally, the milestone marks) is saved like tokens: the bot says
//! [`Action::PersistState`](crate::Action::PersistState) within
//! [`CHECKPOINT_MS`] of a change, at once for a new broadcast, and as it
//! stops, and takes it back with
//! [`Bot::with_kit_state`](crate::Bot::with_kit_state), so a restart in the
//! middle of a broadcast greets nobody twice and loses no total (a crash
//! loses at most the last [`CHECKPOINT_MS`]).
//!
//! Replies go through [`Bot::say`](crate::Bot::say), which splits a long
//! text between grapheme clusters ([`text::split`]) and queues every part.
//!
//! With [`KitConfig::replies`] set ([`replies::RepliesConfig`]), the bot
//! says the configured replies itself: a welcome (or welcome back) for each
//! arrival, thanks for each donation, the milestones, each command's answer.
//! They wait in the chat queue with [`Bot::say`](crate::Bot::say)'s
//! messages; when the broadcast's chat limit holds the queue back, the
//! welcomes (and the thanks) waiting together go out as one message
//! ("Welcome, Ana, 민지 and Jörg! 🎧"), and a reply not out within its kind's
//! freshness is dropped and told ([`Notice::RepliesDropped`](crate::Notice::RepliesDropped)),
//! never sent late. A handler's own text joins the merging with
//! [`Bot::reply`](crate::Bot::reply). The actions above still come, for
//! logs and custom work.
//!
//! ```
//! use onair::kit::{CommandConfig, GreetingsConfig, KitConfig};
//! use onair::{Action, BaseUrl, Bot, BotConfig, ClientCredentials};
//!
//! let mut config = BotConfig::new(
//!     BaseUrl::new("https://api.example.test")?,
//!     ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret")?,
//! );
//! config.kit.commands.push(CommandConfig::new("hello"));
//! config.kit.greetings = Some(GreetingsConfig::default());
//! let mut bot = Bot::new(config, None, 7);
//! # let _ = &mut bot;
//! // In the loop:
//! fn on(bot: &mut Bot, action: Action) {
//!     match action {
//!         Action::Command(c) if c.name == "hello" => {
//!             bot.say(&format!("Hello, {}!", c.user.nickname.as_deref().unwrap_or("friend")));
//!         }
//!         Action::Arrival(a) => {
//!             bot.say(&format!("Welcome, {}!", a.user.nickname.as_deref().unwrap_or("friend")));
//!         }
//!         _ => {}
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod commands;
mod config;
mod machine;
pub mod replies;
pub mod tally;
pub mod text;

pub use commands::{Allowed, Role};
pub use config::{CommandConfig, ConfigError, GreetingsConfig, KitConfig, MilestonesConfig};
pub(crate) use machine::KitAction;
#[cfg(feature = "schema")]
pub(crate) use machine::StoredState;
pub use machine::{
    Arrival, ArrivalKind, BroadcastEnded, Cause, Command, Kit, KitState, Milestone, Refused,
    StateError, CHECKPOINT_MS, KIT_STATE_FORMAT, KIT_STATE_VERSION,
};
pub use replies::{FreshConfig, QueuedReply, RepliesConfig, ReplyKind};
