//! The configured kit in the loop: what it makes of each event becomes
//! actions, behind the state they depend on (write-ahead), and replies go
//! out split.

use super::*;

impl Bot {
    /// Queues a reply: `text` split between grapheme clusters into parts
    /// the service takes ([`crate::kit::text::split`]), each queued with
    /// [`send_chat`](Self::send_chat). Returns the calls, one per message
    /// queued (none for a blank text); each is answered by its `Done`.
    ///
    /// ```
    /// # use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// # let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// # let mut bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// assert_eq!(bot.say("hello!").len(), 1);
    /// assert_eq!(bot.say(&"🎧".repeat(150)).len(), 2); // 300 UTF-16 units: two messages
    /// assert!(bot.say("   ").is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn say(&mut self, text: &str) -> Vec<CallId> {
        crate::kit::text::split(text)
            .iter()
            .filter_map(|part| self.send_chat(part).ok())
            .collect()
    }

    /// The kit's reading of one event, as actions after it.
    pub(super) fn kit_event(
        &mut self,
        id: Option<&FrameId>,
        event: &Event,
        now_ms: u64,
        into: &mut Vec<Action>,
    ) {
        if let Some(kit) = &mut self.kit {
            into.extend(kit.on_event(id, event, now_ms).into_iter().map(action_of));
        }
    }

    /// Queues `actions`, the kit's state first when a decision among them
    /// depends on it or its unsaved changes are due ([`Kit::due_state`]): a
    /// driver that saves it before acting on the rest never greets twice
    /// nor loses a total across a restart.
    pub(super) fn push_behind_state(&mut self, actions: Vec<Action>, now_ms: u64) {
        if let Some(state) = self.kit.as_mut().and_then(|kit| kit.due_state(now_ms)) {
            self.out.push_back(Action::PersistState(state));
        }
        self.out.extend(actions);
    }

    /// The kit's unsaved state, queued as the bot stops.
    pub(super) fn push_last_state(&mut self) {
        if let Some(state) = self.kit.as_mut().and_then(Kit::unsaved_state) {
            self.out.push_back(Action::PersistState(state));
        }
    }

    /// The kit's state once its unsaved changes are due, while the bot waits.
    pub(super) fn poll_kit_state(&mut self, now_ms: u64) -> Option<Action> {
        self.kit
            .as_mut()
            .and_then(|kit| kit.due_state(now_ms))
            .map(Action::PersistState)
    }

    /// What the kit made of news about the broadcast itself (another
    /// `liveId`, not on air), queued behind the state.
    pub(super) fn kit_news(&mut self, news: Option<KitAction>) {
        if let Some(state) = self.kit.as_mut().and_then(Kit::decided_state) {
            self.out.push_back(Action::PersistState(state));
        }
        self.out.extend(news.into_iter().map(action_of));
    }
}

fn action_of(action: KitAction) -> Action {
    match action {
        KitAction::Arrival(a) => Action::Arrival(a),
        KitAction::Command(c) => Action::Command(c),
        KitAction::Refused(r) => Action::Notice(Notice::CommandRefused(r)),
        KitAction::Milestone(m) => Action::Milestone(m),
        KitAction::BroadcastEnded(b) => Action::BroadcastEnded(b),
    }
}
