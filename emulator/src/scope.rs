//! Permissions (spec 2.1) as a bit set, parsed from and written to the
//! space-separated `scope` string.
//!
//! ```
//! use onair_emulator::scope::{Scope, Perm};
//! let s = Scope::parse("events.chat chat.send bogus");
//! assert!(s.has(Perm::ChatSend));
//! assert!(!s.has(Perm::LiveRead));
//! assert_eq!(s.to_string(), "events.chat chat.send");
//! ```

use std::fmt;

/// One permission of the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Perm {
    /// `live.read`: GET /v1/live.
    LiveRead,
    /// `listeners.read`: GET /v1/live/listeners.
    ListenersRead,
    /// `fans.read`: GET /v1/live/fans.
    FansRead,
    /// `events.chat`: chat events on the stream.
    EventsChat,
    /// `events.presence`: presence events (manager bots only).
    EventsPresence,
    /// `events.like`: like events.
    EventsLike,
    /// `events.donation`: donation events.
    EventsDonation,
    /// `chat.send`: POST /v1/live/chat.
    ChatSend,
}

impl Perm {
    /// Every permission, in the spec's order.
    pub const ALL: [Perm; 8] = [
        Perm::LiveRead,
        Perm::ListenersRead,
        Perm::FansRead,
        Perm::EventsChat,
        Perm::EventsPresence,
        Perm::EventsLike,
        Perm::EventsDonation,
        Perm::ChatSend,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Perm::LiveRead => "live.read",
            Perm::ListenersRead => "listeners.read",
            Perm::FansRead => "fans.read",
            Perm::EventsChat => "events.chat",
            Perm::EventsPresence => "events.presence",
            Perm::EventsLike => "events.like",
            Perm::EventsDonation => "events.donation",
            Perm::ChatSend => "chat.send",
        }
    }

    /// The permission of a wire name.
    pub fn from_name(name: &str) -> Option<Perm> {
        Perm::ALL.into_iter().find(|p| p.name() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scope(u8);

impl Scope {
    /// Every permission.
    pub const FULL: Scope = Scope(0xFF);

    /// Parses a space-separated list; unknown names are dropped.
    pub fn parse(text: &str) -> Scope {
        Scope(
            text.split_whitespace()
                .filter_map(Perm::from_name)
                .fold(0, |acc, p| acc | p.bit()),
        )
    }

    /// Whether `perm` is in the set.
    pub fn has(self, perm: Perm) -> bool {
        self.0 & perm.bit() != 0
    }

    /// The permissions in both sets.
    pub fn intersect(self, other: Scope) -> Scope {
        Scope(self.0 & other.0)
    }

    /// Whether any `events.*` permission is held (the stream can open).
    pub fn any_events(self) -> bool {
        [
            Perm::EventsChat,
            Perm::EventsPresence,
            Perm::EventsLike,
            Perm::EventsDonation,
        ]
        .into_iter()
        .any(|p| self.has(p))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for p in Perm::ALL.into_iter().filter(|p| self.has(*p)) {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            f.write_str(p.name())?;
        }
        Ok(())
    }
}
