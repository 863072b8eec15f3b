//! The permissions a DJ grants a bot (spec 2.1) and the `scope` string that
//! lists them.
//!
//! Unknown permission names are kept as [`Permission::Other`], never an error,
//! so a new permission on the service does not break an old bot.

use crate::wire::wire_enum;

wire_enum! {
    /// One permission of the service (spec 2.1, 4). It also names the daily
    /// quota a 429 hit (`x-ratelimit-daily-scope`, spec 8).
    ///
    /// ```
    /// use onair::scope::Permission;
    ///
    /// assert_eq!(Permission::from_wire("chat.send"), Permission::ChatSend);
    /// assert_eq!(Permission::ChatSend.as_str(), "chat.send");
    /// assert_eq!(Permission::from_wire("polls.read"), Permission::Other("polls.read".into()));
    /// ```
    pub enum Permission {
        /// `GET /v1/live`.
        LiveRead = "live.read",
        /// `GET /v1/live/listeners`.
        ListenersRead = "listeners.read",
        /// `GET /v1/live/fans`.
        FansRead = "fans.read",
        /// `chat` events on the stream.
        EventsChat = "events.chat",
        /// `presence` events on the stream (the bot must also be a manager).
        EventsPresence = "events.presence",
        /// `like` events on the stream.
        EventsLike = "events.like",
        /// `donation` events on the stream.
        EventsDonation = "events.donation",
        /// `POST /v1/live/chat`.
        ChatSend = "chat.send",
    }
}

impl Permission {
    /// Reads a space-separated `scope` string (spec 2.1) into permissions, in
    /// order, skipping empty pieces (runs of spaces, leading or trailing ones).
    ///
    /// ```
    /// use onair::scope::Permission;
    ///
    /// let granted = Permission::parse_scope("live.read  events.chat ");
    /// assert_eq!(granted, [Permission::LiveRead, Permission::EventsChat]);
    /// ```
    pub fn parse_scope(scope: &str) -> Vec<Permission> {
        scope
            .split([' ', '\t'])
            .filter(|piece| !piece.is_empty())
            .map(Permission::from_wire)
            .collect()
    }

    /// Whether this is one of the four `events.*` permissions, any one of
    /// which opens the event stream (spec 4.6 rule 1).
    pub fn is_event(&self) -> bool {
        matches!(
            self,
            Permission::EventsChat
                | Permission::EventsPresence
                | Permission::EventsLike
                | Permission::EventsDonation
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_known_name() {
        for name in [
            "live.read",
            "listeners.read",
            "fans.read",
            "events.chat",
            "events.presence",
            "events.like",
            "events.donation",
            "chat.send",
        ] {
            let p = Permission::from_wire(name);
            assert!(!matches!(p, Permission::Other(_)), "{name}");
            assert_eq!(p.as_str(), name);
        }
    }

    #[test]
    fn event_permissions() {
        assert!(Permission::EventsLike.is_event());
        assert!(!Permission::ChatSend.is_event());
        assert!(!Permission::from_wire("events.poll").is_event());
    }

    #[test]
    fn scope_string() {
        assert!(Permission::parse_scope("").is_empty());
        assert_eq!(
            Permission::parse_scope("chat.send x.y"),
            [Permission::ChatSend, Permission::Other("x.y".into())]
        );
    }
}
