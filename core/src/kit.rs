//! The bot kit: what every bot author writes by hand on top of the events.
//!
//! - [`text`]: split and truncate chat so the server accepts every message.
//! - [`audience`]: who is in the broadcast; greet once, welcome back once.

pub mod audience;
pub mod commands;
pub mod milestones;
mod stored;
pub mod text;
pub mod timers;

pub use stored::StateError;
