//! The bot kit: what every bot author writes by hand on top of the events,
//! done once, sans-IO, with the time as an argument.
//!
//! - [`text`]: [`split`](text::split) and [`truncate`](text::truncate) chat so
//!   the server accepts every message and no emoji is cut in half.
//! - [`commands`]: `!name arg…` parsed from chat, with who may run it
//!   (anyone, managers, the DJ); the bot's own and other bots' posts ignored.
//! - [`audience`]: who is in the broadcast; greet a first join once, welcome
//!   a rejoin back once; managers remembered; stored across a restart.
//! - [`milestones`]: a signal at every multiple of a heart or donation step,
//!   and each donor's running total, on top of [`tally`].
//! - [`timers`]: named one-shot and repeating app timers, optionally only
//!   while the stream is connected, for the bot's own loop.
//!
//! Each piece is a value the bot owns and feeds events to; each answers with
//! a decision (a greeting, an invocation, a milestone, a due timer), never a
//! callback. Per-broadcast memory resets on a new `liveId` or `LIVE_ENDED`
//! and is stored as versioned JSON, like the token file ([`StateError`] when
//! it cannot be read back).
//!
//! A chat handler using commands, the audience and split:
//!
//! ```
//! use onair::event::{Chat, Event, Presence, PresenceType, User};
//! use onair::kit::audience::{Audience, Greeting};
//! use onair::kit::commands::{Allowed, Commands};
//! use onair::kit::text::split;
//! use onair::proto::time::Timestamp;
//!
//! /// What the bot answers to one event: the chat messages to send.
//! fn handle(event: &Event, commands: &Commands, audience: &mut Audience) -> Vec<String> {
//!     let reply = match audience.on_event(event) {
//!         Some(Greeting::First(p)) => {
//!             format!("Welcome, {}!", p.user.nickname.as_deref().unwrap_or("friend"))
//!         }
//!         Some(Greeting::WelcomeBack(p)) => {
//!             format!("Welcome back, {}!", p.user.nickname.as_deref().unwrap_or("friend"))
//!         }
//!         None => {
//!             let Event::Chat(chat) = event else { return Vec::new() };
//!             match commands.match_chat(chat, audience) {
//!                 Some(Ok(run)) if run.name == "hello" => "Hello!".to_owned(),
//!                 Some(Ok(run)) if run.name == "who" => {
//!                     let names: Vec<String> = audience
//!                         .people()
//!                         .map(|p| p.user.nickname.clone().unwrap_or_else(|| p.user.id.clone()))
//!                         .collect();
//!                     format!("In the room: {}", names.join(", "))
//!                 }
//!                 Some(Ok(_)) | None => return Vec::new(),
//!                 Some(Err(denied)) => format!("Sorry, !{} is for managers.", denied.name),
//!             }
//!         }
//!     };
//!     split(&reply) // every part fits in one chat message
//! }
//!
//! let commands = Commands::new()
//!     .command("hello", Allowed::Anyone)
//!     .command("who", Allowed::Managers)
//!     .own_id("our-bot");
//! let mut audience = Audience::new();
//! let user = |id: &str, nickname: &str| User { id: id.into(), nickname: Some(nickname.into()) };
//! let join = |id: &str, nickname: &str, is_manager| Event::Presence(Presence {
//!     user: user(id, nickname),
//!     kind: PresenceType::Join,
//!     fan_rank: None,
//!     is_manager,
//!     favorite_temperature: None,
//!     time: Timestamp::new("2024-11-22T04:33:20Z"),
//! });
//! let chat = |id: &str, message: &str| Event::Chat(Chat {
//!     user: user(id, "x"),
//!     is_dj: false,
//!     message: message.into(),
//!     sent_time: Timestamp::new("2024-11-22T04:33:21Z"),
//! });
//!
//! assert_eq!(handle(&join("u1", "Mina", false), &commands, &mut audience), ["Welcome, Mina!"]);
//! assert_eq!(handle(&join("u1", "Mina", false), &commands, &mut audience), ["Welcome back, Mina!"]);
//! assert!(handle(&join("u1", "Mina", false), &commands, &mut audience).is_empty());
//! assert_eq!(handle(&chat("u1", "!HELLO"), &commands, &mut audience), ["Hello!"]);
//! assert_eq!(
//!     handle(&chat("u1", "!who"), &commands, &mut audience),
//!     ["Sorry, !who is for managers."]
//! );
//! assert!(handle(&chat("our-bot", "!hello"), &commands, &mut audience).is_empty());
//!
//! // A manager asks who is here; 60 listeners do not fit in one message.
//! for i in 0..60 {
//!     audience.on_event(&join(&format!("l{i}"), &format!("Listener{i}"), false));
//! }
//! audience.on_event(&join("m1", "Boss", true));
//! let parts = handle(&chat("m1", "!who"), &commands, &mut audience);
//! assert!(parts.len() > 1);
//! assert!(parts.iter().all(|p| onair::kit::text::validate_chat(p).is_ok()));
//! ```

pub mod audience;
pub mod commands;
pub mod milestones;
mod stored;
pub mod tally;
pub mod text;
/// The kit's one rule for a `liveId` (spec 2.2: the key of "once per
/// broadcast" rules): another id than the known one is a new broadcast; the
/// same id is a reconnect; a first id is adopted (what was seen before it was
/// seen in this broadcast).
fn is_new_broadcast(known: Option<u64>, live_id: u64) -> bool {
    known.is_some_and(|known| known != live_id)
}

/// App timers live below the bot, which hosts them ([`crate::bot::Bot::schedule`]);
/// they are part of the kit all the same.
pub use crate::proto::timers;

pub use stored::StateError;
