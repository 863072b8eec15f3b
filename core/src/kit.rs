//! The bot kit: what every bot author writes by hand on top of the events.
//!
//! - [`text`]: split and truncate chat so the server accepts every message.
pub mod text;
