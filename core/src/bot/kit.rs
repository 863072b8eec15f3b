//! The configured kit in the loop: what it makes of each event becomes
//! actions, behind the state they depend on (write-ahead), and replies go
//! out split.

use super::*;

use crate::event::User;
use crate::kit::{ArrivalKind, RepliesConfig, ReplyKind};

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
        let Some(kit) = &mut self.kit else {
            return;
        };
        let actions = kit.on_event(id, event, now_ms);
        let replies: Vec<_> = match &kit.config().replies {
            Some(config) => actions
                .iter()
                .filter_map(|a| reply_of(config, kit, a))
                .collect(),
            None => Vec::new(),
        };
        into.extend(actions.into_iter().filter_map(action_of));
        for (kind, user, text) in replies {
            self.queue_reply(kind, user, text, now_ms);
        }
    }

    /// The kit's memory with the reply queue, as it is saved.
    fn sync_replies(&mut self) {
        let stored = self.unsent_replies();
        if let Some(kit) = &mut self.kit {
            kit.set_queued_replies(stored);
        }
    }

    /// Queues `actions`, the kit's state first when a decision among them
    /// depends on it or its unsaved changes are due ([`Kit::due_state`]): a
    /// driver that saves it before acting on the rest never greets twice
    /// nor loses a total across a restart.
    pub(super) fn push_behind_state(&mut self, actions: Vec<Action>, now_ms: u64) {
        if let Some(state) = self.due_kit_state(now_ms) {
            self.out.push_back(Action::PersistState(state));
        }
        self.out.extend(actions);
    }

    /// The kit's unsaved state, queued as the bot stops.
    pub(super) fn push_last_state(&mut self, unsent: Option<Vec<crate::kit::QueuedReply>>) {
        if self.kit.as_ref().is_some_and(Kit::has_unsaved) {
            match (unsent, &mut self.kit) {
                (Some(unsent), Some(kit)) => kit.set_queued_replies(unsent),
                _ => self.sync_replies(),
            }
        }
        if let Some(state) = self.kit.as_mut().and_then(Kit::unsaved_state) {
            self.out.push_back(Action::PersistState(state));
        }
    }

    /// The kit's state once its unsaved changes are due, while the bot waits.
    pub(super) fn poll_kit_state(&mut self, now_ms: u64) -> Option<Action> {
        self.due_kit_state(now_ms).map(Action::PersistState)
    }

    fn due_kit_state(&mut self, now_ms: u64) -> Option<KitState> {
        if !self.kit.as_ref().is_some_and(|k| k.is_due(now_ms)) {
            return None;
        }
        self.sync_replies();
        self.kit.as_mut().and_then(|kit| kit.due_state(now_ms))
    }

    /// What the kit made of news about the broadcast itself (another
    /// `liveId`, not on air), queued behind the state.
    pub(super) fn kit_news(&mut self, news: Option<KitAction>) {
        if self.kit.as_ref().is_some_and(Kit::is_decided) {
            self.sync_replies();
        }
        if let Some(state) = self.kit.as_mut().and_then(Kit::decided_state) {
            self.out.push_back(Action::PersistState(state));
        }
        self.out.extend(news.into_iter().filter_map(action_of));
    }
}

/// What a person did that a reply answers: their arrival, a donation, a
/// command they ran.
#[derive(Debug, Clone, Copy)]
enum Answered {
    Arrival(ArrivalKind),
    Donation,
    Command,
}

impl Answered {
    /// The one table of which reply answers what a person did: a first
    /// arrival a welcome, a return a welcome back, a donation a thanks, a
    /// command a command's answer. The kit's configured replies
    /// ([`reply_of`]) and the kind an action hands its driver
    /// ([`Action::reply_kind`], the action lines' `replyKind`) both read it.
    fn reply_kind(self) -> ReplyKind {
        match self {
            Answered::Arrival(ArrivalKind::First) => ReplyKind::Welcome,
            Answered::Arrival(ArrivalKind::Back { .. }) => ReplyKind::WelcomeBack,
            Answered::Donation => ReplyKind::Thanks,
            Answered::Command => ReplyKind::Command,
        }
    }
}

impl crate::kit::Arrival {
    /// The reply that answers this arrival (see [`Action::reply_kind`]).
    pub(crate) fn reply_kind(&self) -> ReplyKind {
        Answered::Arrival(self.kind).reply_kind()
    }
}

impl crate::kit::Command {
    /// The reply that answers this command (see [`Action::reply_kind`]).
    pub(crate) fn reply_kind(&self) -> ReplyKind {
        Answered::Command.reply_kind()
    }
}

impl Action {
    /// The kind of reply that answers the person this action is about, for
    /// a driver that sends a handler's text for it with
    /// [`Bot::reply`]`(kind, person, text)` so it merges with the replies
    /// of its kind: an [`Arrival`](Action::Arrival)'s
    /// [`Welcome`](ReplyKind::Welcome) (first) or
    /// [`WelcomeBack`](ReplyKind::WelcomeBack), a donation
    /// [`Event`](Action::Event)'s [`Thanks`](ReplyKind::Thanks) (the person:
    /// the donor), a [`Command`](Action::Command)'s
    /// [`Command`](ReplyKind::Command) (whoever typed it). `None` for every
    /// other action (a text for it is said, [`Bot::say`]). Its JSON line
    /// carries it as `replyKind`.
    ///
    /// ```
    /// use onair::event::Event;
    /// use onair::kit::ReplyKind;
    /// use onair::Action;
    ///
    /// let donation = Event::decode(
    ///     "donation",
    ///     r#"{"user":{"id":"u1","nickname":"Ana"},"amount":300,"message":null,"time":"t"}"#,
    /// ).unwrap().unwrap();
    /// let action = Action::Event { id: None, event: donation };
    /// assert_eq!(action.reply_kind(), Some(ReplyKind::Thanks));
    /// assert_eq!(Action::Wait { until_ms: None }.reply_kind(), None);
    /// ```
    pub fn reply_kind(&self) -> Option<ReplyKind> {
        match self {
            Action::Arrival(a) => Some(a.reply_kind()),
            Action::Event {
                event: Event::Donation(_),
                ..
            } => Some(Answered::Donation.reply_kind()),
            Action::Command(c) => Some(c.reply_kind()),
            _ => None,
        }
    }
}

fn action_of(action: KitAction) -> Option<Action> {
    Some(match action {
        KitAction::Arrival(a) => Action::Arrival(a),
        KitAction::Command(c) => Action::Command(c),
        KitAction::Refused(r) => Action::Notice(Notice::CommandRefused(r)),
        KitAction::Milestone(m) => Action::Milestone(m),
        KitAction::BroadcastEnded(b) => Action::BroadcastEnded(b),
        KitAction::Thanks(_) => return None,
    })
}

/// The configured reply to what the kit made of an event: its kind, who it
/// names, its text (filled once, one chat message); `None` when the text
/// is empty or nothing is configured for it.
fn reply_of(
    config: &RepliesConfig,
    kit: &Kit,
    action: &KitAction,
) -> Option<(ReplyKind, Option<User>, String)> {
    let nickname = |u: &User| u.nickname.clone().unwrap_or_else(|| "friend".to_owned());
    let (kind, user, template, values): (_, _, &str, Vec<(&str, String)>) = match action {
        KitAction::Arrival(a) => {
            let template = match a.kind {
                ArrivalKind::First => &config.welcome,
                ArrivalKind::Back { .. } => &config.welcome_back,
            };
            let values = vec![("nickname", nickname(&a.user))];
            (a.reply_kind(), Some(a.user.clone()), template, values)
        }
        KitAction::Thanks(user) => (
            Answered::Donation.reply_kind(),
            Some(user.clone()),
            &config.thanks,
            vec![("nickname", nickname(user))],
        ),
        KitAction::Milestone(Milestone::Hearts { reached, .. }) => (
            ReplyKind::Milestone,
            None,
            &config.hearts,
            vec![("reached", reached.to_string())],
        ),
        KitAction::Milestone(Milestone::Donated { user, reached, .. }) => (
            ReplyKind::Milestone,
            Some(user.clone()),
            &config.donated,
            vec![
                ("nickname", nickname(user)),
                ("reached", reached.to_string()),
            ],
        ),
        KitAction::Command(c) => {
            let template = config.commands.get(&c.name)?;
            let mut values = vec![("nickname", nickname(&c.user)), ("rest", c.rest.clone())];
            if template.contains("{top}") {
                values.push(("top", kit.tally().top_donors_text(&config.no_donors)));
            }
            (c.reply_kind(), Some(c.user.clone()), template, values)
        }
        KitAction::Refused(_) | KitAction::BroadcastEnded(_) => return None,
    };
    if template.trim().is_empty() {
        return None;
    }
    let pairs: Vec<(&str, &str)> = values.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let text = crate::kit::replies::fill(template, &pairs);
    crate::proto::chat::validate_chat(&text).ok()?;
    Some((kind, user, text))
}
