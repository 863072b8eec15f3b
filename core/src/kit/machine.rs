//! The configured kit: the memory of one broadcast and the decisions it
//! makes from each event, delivered by the [`Bot`](crate::Bot) as actions.
//!
//! Per broadcast it keeps who is here (greeted or not, last seen, manager or
//! not), the tally, the milestone marks and the command cooldowns. A new
//! broadcast starts at `LIVE_ENDED`, when the stream finds the DJ not on air
//! after a broadcast, or when `GET /v1/live` names another `liveId` (the bot
//! asks once per stream connection when it holds `live.read`).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::commands::{fold, named, split_args, Allowed, Role};
use super::config::KitConfig;
use super::tally::Tally;
use crate::event::{Chat, Donation, End, EndReason, Event, Like, PresenceType, User};
use crate::proto::time::FrameId;
use crate::wire::{read_stored, StoredRefusal};

/// How many people the greeting memory keeps per broadcast; past it the
/// longest unseen is forgotten (and would be greeted again).
const MAX_PEOPLE: usize = 100_000;

/// How many (person, command) cooldowns are kept; past it the oldest go.
const MAX_COOLDOWNS: usize = 10_000;

/// How long a change (a person greeted, a heart counted, a milestone
/// marked) may stay unsaved before the bot hands out the state. A new
/// broadcast hands it out at once, ahead of its `BroadcastEnded`; a stop
/// hands out whatever is unsaved, so a restart greets nobody twice and loses
/// no total. Only a crash loses up to this much: it may greet again the
/// people it greeted in its last two seconds. Saving on every greeting would
/// write everyone present for each person who joins.
pub const CHECKPOINT_MS: u64 = 2_000;

/// An event and the id of its frame, as the actions the kit derives carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause<E> {
    /// The frame's id, when it had one.
    pub id: Option<FrameId>,
    /// The event.
    pub event: E,
}

/// A configured command, run by someone allowed to.
///
/// ```
/// # use onair::kit::{Command};
/// fn reply(command: &Command) -> String {
///     match command.name.as_str() {
///         "hello" => format!("Hello, {}!", command.user.nickname.as_deref().unwrap_or("friend")),
///         _ => String::new(),
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The command's name as configured (not as typed, not an alias).
    pub name: String,
    /// The arguments ([`split_args`]).
    pub args: Vec<String>,
    /// The text after the name, as typed (trimmed).
    pub rest: String,
    /// Who ran it.
    pub user: User,
    /// What they are, as far as the bot can tell.
    pub role: Role,
    /// The chat that ran it.
    pub chat: Cause<Chat>,
}

/// A command someone may not run: who, what they are, what it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The command's name as configured.
    pub name: String,
    /// Who tried.
    pub user: User,
    /// What they are.
    pub role: Role,
    /// Who may run it.
    pub needed: Allowed,
}

/// Whether an arrival is a first or a return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrivalKind {
    /// The person's first sign in this broadcast.
    First,
    /// The person is back after at least the configured absence.
    Back {
        /// How long they were not seen (ms).
        away_ms: u64,
    },
}

/// Someone to greet: first seen in this broadcast, or back after an absence.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    /// First or back.
    pub kind: ArrivalKind,
    /// Who, with the latest nickname.
    pub user: User,
    /// Whether they are a manager (from their join; `false` when unknown).
    pub is_manager: bool,
    /// The broadcast, when the bot knows its `liveId`.
    pub live_id: Option<u64>,
    /// Their join (presence), or their chat when the bot sees no presence.
    pub event: Cause<Event>,
}

/// A milestone crossed.
#[derive(Debug, Clone, PartialEq)]
pub enum Milestone {
    /// The broadcast's hearts reached a multiple of the step.
    Hearts {
        /// The multiple reached.
        reached: u64,
        /// Hearts in all now.
        total: u64,
        /// The hearts that crossed it.
        like: Cause<Like>,
    },
    /// One person's donations reached a multiple of the step.
    Donated {
        /// The donor.
        user: User,
        /// The multiple reached.
        reached: u64,
        /// Their total now.
        total: u64,
        /// The donation that crossed it.
        donation: Cause<Donation>,
    },
}

/// A broadcast is over: its final tally.
#[derive(Debug, Clone, PartialEq)]
pub struct BroadcastEnded {
    /// Its `liveId`, when the bot learned it. The kit asks `GET /v1/live`
    /// once per stream connection, so this is `None` when the DJ did not
    /// grant `live.read`, or when the broadcast ended before that answer
    /// came (or every attempt failed). The tally is whole either way.
    pub live_id: Option<u64>,
    /// What everyone did in it (the DJ kept out).
    pub tally: Tally,
    /// The `LIVE_ENDED` frame, or `None` when the end was inferred (another
    /// `liveId`, or the DJ found not on air after a restart).
    pub end: Option<Cause<End>>,
}

/// What the kit derived from an event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KitAction {
    Arrival(Arrival),
    Command(Command),
    Refused(Refused),
    Milestone(Milestone),
    BroadcastEnded(BroadcastEnded),
    /// A donation to thank (only with replies configured): the donor, with
    /// the latest nickname.
    Thanks(User),
}

/// What the kit remembers of one person in this broadcast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct Person {
    #[serde(default)]
    nickname: Option<String>,
    #[serde(default)]
    is_manager: bool,
    #[serde(default)]
    greeted: bool,
    #[serde(default)]
    last_seen_ms: u64,
    /// Their donation total's last multiple announced.
    #[serde(default)]
    donated_announced: u64,
}

/// The memory of the current broadcast: what the kit state stores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct Memory {
    #[serde(default)]
    live_id: Option<u64>,
    #[serde(default)]
    dj_id: Option<String>,
    #[serde(default)]
    people: BTreeMap<String, Person>,
    #[serde(default)]
    tally: Tally,
    #[serde(default)]
    hearts_announced: u64,
    /// Replies not out yet (version 2): restored so a restart loses no
    /// one's reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    replies: Vec<super::replies::QueuedReply>,
}

impl Memory {
    fn is_empty(&self) -> bool {
        self.people.is_empty() && self.tally.seen() == 0
    }
}

/// The versioned, stored form of the kit's memory: save it when the bot
/// says [`Action::PersistState`](crate::Action::PersistState), give it back
/// with [`Bot::with_kit_state`](crate::Bot::with_kit_state) after a restart,
/// so a restart mid-broadcast greets nobody twice and loses no total.
///
/// ```
/// use onair::kit::KitState;
/// let state = KitState::from_json(r#"{"format":"onair.kit","version":1}"#)?;
/// assert!(state.to_json().starts_with(r#"{"format":"onair.kit","version":1,"#));
/// let newer = KitState::from_json(r#"{"format":"onair.kit","version":3}"#).unwrap_err();
/// assert!(newer.to_string().contains("version 3"));
/// # Ok::<(), onair::kit::StateError>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct KitState {
    json: String,
}

/// The `format` marker of the stored kit state.
pub const KIT_STATE_FORMAT: &str = "onair.kit";
/// The newest version this build writes and reads. Version 2 adds the
/// replies still queued; a state without any is written as version 1 (what
/// older builds read), and version 1 is read as a state without them.
pub const KIT_STATE_VERSION: u32 = 2;

impl KitState {
    /// The stored form: `{"format":"onair.kit","version":1,…}`.
    pub fn to_json(&self) -> &str {
        &self.json
    }

    /// Reads a stored form, refusing another format or a version this build
    /// does not know (a file from a newer onair).
    pub fn from_json(json: impl AsRef<[u8]>) -> Result<KitState, StateError> {
        let memory = Self::memory(json.as_ref())?;
        Ok(KitState::of(&memory))
    }

    fn memory(json: &[u8]) -> Result<Memory, StateError> {
        let read = match read_stored::<Memory>(json, KIT_STATE_FORMAT, KIT_STATE_VERSION) {
            Err(StoredRefusal::UnsupportedVersion(1)) => {
                read_stored::<Memory>(json, KIT_STATE_FORMAT, 1)
            }
            other => other,
        };
        read.map_err(|r| match r {
            StoredRefusal::Json { line, column } => StateError::Json { line, column },
            StoredRefusal::UnknownFormat => StateError::UnknownFormat,
            StoredRefusal::MissingVersion => StateError::MissingVersion,
            StoredRefusal::UnsupportedVersion(found) => StateError::UnsupportedVersion {
                found,
                supported: KIT_STATE_VERSION,
            },
        })
    }

    fn of(memory: &Memory) -> KitState {
        let stored = StoredState {
            format: KIT_STATE_FORMAT,
            version: if memory.replies.is_empty() {
                1
            } else {
                KIT_STATE_VERSION
            },
            memory,
        };
        KitState {
            json: serde_json::to_string(&stored).unwrap_or_default(),
        }
    }
}

/// The stored form as written: `format`, `version`, then the memory.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct StoredState<'a> {
    /// Always `onair.kit`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "onair.kit")))]
    format: &'static str,
    /// 1, or 2 when `replies` are kept.
    version: u32,
    #[serde(flatten)]
    memory: &'a Memory,
}

impl std::fmt::Debug for KitState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KitState({} bytes)", self.json.len())
    }
}

/// Why stored kit state could not be loaded (a local error: the caller's
/// file). Messages never quote the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not JSON of the expected shape (position only).
    #[error("stored kit state: not valid (error at line {line} column {column})")]
    Json {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// The `format` marker is missing or names another kind of document.
    #[error("stored kit state: format is not \"{KIT_STATE_FORMAT}\"")]
    UnknownFormat,
    /// The `version` is missing.
    #[error("stored kit state: version is missing")]
    MissingVersion,
    /// A version this build does not read (written by a newer onair?).
    #[error(
        "stored kit state: version {found} is not supported (this build reads versions 1 to {supported})"
    )]
    UnsupportedVersion {
        /// The version found.
        found: u64,
        /// The newest version this build reads and writes (it reads every
        /// older one too).
        supported: u32,
    },
}

/// A configured command, its names folded for matching.
#[derive(Debug, Clone)]
struct Compiled {
    config: super::config::CommandConfig,
    folded: Vec<String>,
}

/// The configured kit, inside the bot. See the [kit module](crate::kit).
#[derive(Debug, Clone)]
pub struct Kit {
    config: KitConfig,
    commands: Vec<Compiled>,
    memory: Memory,
    /// (command index, person id) → not before (ms).
    cooldowns: HashMap<(usize, String), u64>,
    /// command index → nobody runs it before (ms).
    room_cooldowns: HashMap<usize, u64>,
    /// When the oldest change not yet handed out was made.
    changed_at_ms: Option<u64>,
    /// A new broadcast (its `BroadcastEnded`, a new `liveId`) is not handed
    /// out yet: it is saved before it is acted on.
    decided: bool,
}

impl Kit {
    /// A kit with `config` and an empty memory.
    pub(crate) fn new(config: KitConfig) -> Kit {
        let commands = config
            .commands
            .iter()
            .map(|c| Compiled {
                folded: std::iter::once(&c.name)
                    .chain(&c.aliases)
                    .map(|n| fold(n))
                    .collect(),
                config: c.clone(),
            })
            .collect();
        Kit {
            config,
            commands,
            memory: Memory::default(),
            cooldowns: HashMap::new(),
            room_cooldowns: HashMap::new(),
            changed_at_ms: None,
            decided: false,
        }
    }

    /// Restores the memory of a stored state.
    pub(crate) fn restore(&mut self, state: &KitState) {
        if let Ok(memory) = KitState::memory(state.json.as_bytes()) {
            self.memory = memory;
        }
    }

    /// The configuration.
    pub fn config(&self) -> &KitConfig {
        &self.config
    }

    /// The current broadcast's tally (the DJ kept out).
    pub fn tally(&self) -> &Tally {
        &self.memory.tally
    }

    /// The current broadcast's `liveId`, once the bot learned it.
    pub fn live_id(&self) -> Option<u64> {
        self.memory.live_id
    }

    /// Whether `id` was greeted in this broadcast.
    pub fn greeted(&self, id: &str) -> bool {
        self.memory.people.get(id).is_some_and(|p| p.greeted)
    }

    /// Whether `id` is a manager, as their latest join said.
    pub fn is_manager(&self, id: &str) -> bool {
        self.memory.people.get(id).is_some_and(|p| p.is_manager)
    }

    /// The stored form of the memory now.
    pub fn state(&self) -> KitState {
        KitState::of(&self.memory)
    }

    /// The state to hand out now: at once for a new broadcast, else once a
    /// change is [`CHECKPOINT_MS`] old.
    pub(crate) fn due_state(&mut self, now_ms: u64) -> Option<KitState> {
        let due = self.decided || self.checkpoint_at().is_some_and(|at| now_ms >= at);
        if due {
            self.unsaved_state()
        } else {
            None
        }
    }

    /// The state to hand out now when a new broadcast depends on it.
    pub(crate) fn decided_state(&mut self) -> Option<KitState> {
        if self.decided {
            self.unsaved_state()
        } else {
            None
        }
    }

    /// Whatever is not handed out yet, now (the bot is stopping).
    pub(crate) fn unsaved_state(&mut self) -> Option<KitState> {
        self.changed_at_ms.take()?;
        self.decided = false;
        Some(self.state())
    }

    /// When the unsaved changes are due, if any.
    pub(crate) fn checkpoint_at(&self) -> Option<u64> {
        self.changed_at_ms
            .map(|at| at.saturating_add(CHECKPOINT_MS))
    }

    /// Something saved with the state changed (the reply queue).
    pub(crate) fn touch(&mut self, now_ms: u64) {
        self.changed(now_ms);
    }

    /// The replies a restored state held, handed to the bot's queue.
    pub(crate) fn take_queued_replies(&mut self) -> Vec<super::replies::QueuedReply> {
        std::mem::take(&mut self.memory.replies)
    }

    /// The bot's reply queue, stored with the next state.
    pub(crate) fn set_queued_replies(&mut self, replies: Vec<super::replies::QueuedReply>) {
        self.memory.replies = replies;
    }

    /// Whether a state would be handed out now ([`Kit::due_state`]).
    pub(crate) fn is_due(&self, now_ms: u64) -> bool {
        self.changed_at_ms.is_some()
            && (self.decided || self.checkpoint_at().is_some_and(|at| now_ms >= at))
    }

    /// Whether anything is unsaved.
    pub(crate) fn has_unsaved(&self) -> bool {
        self.changed_at_ms.is_some()
    }

    /// Whether a new broadcast waits to be saved.
    pub(crate) fn is_decided(&self) -> bool {
        self.decided && self.changed_at_ms.is_some()
    }

    fn changed(&mut self, now_ms: u64) {
        self.changed_at_ms.get_or_insert(now_ms);
    }

    fn decided(&mut self) {
        self.changed(0);
        self.decided = true;
    }

    /// The bot learned the broadcast's `liveId` (`GET /v1/live`). Another id
    /// than the one known ends the known broadcast (it ended while the bot
    /// was not looking); a first id is adopted.
    pub(crate) fn on_live_id(&mut self, live_id: u64) -> Option<KitAction> {
        match self.memory.live_id {
            Some(known) if known == live_id => None,
            Some(_) => {
                let ended = self.end_broadcast(None);
                self.memory.live_id = Some(live_id);
                Some(ended)
            }
            None => {
                self.memory.live_id = Some(live_id);
                self.decided();
                None
            }
        }
    }

    /// The stream found the DJ not on air: a broadcast the kit remembers is
    /// over (it ended while the bot was down or the stream was away).
    pub(crate) fn on_not_on_air(&mut self) -> Option<KitAction> {
        (!self.memory.is_empty()).then(|| self.end_broadcast(None))
    }

    fn end_broadcast(&mut self, end: Option<Cause<End>>) -> KitAction {
        let memory = std::mem::take(&mut self.memory);
        // The DJ of the next broadcast is the same person: their id stays.
        self.memory.dj_id.clone_from(&memory.dj_id);
        self.cooldowns.clear();
        self.room_cooldowns.clear();
        self.decided();
        KitAction::BroadcastEnded(BroadcastEnded {
            live_id: memory.live_id,
            tally: memory.tally,
            end,
        })
    }

    /// What one event means, at `now_ms`.
    pub(crate) fn on_event(
        &mut self,
        id: Option<&FrameId>,
        event: &Event,
        now_ms: u64,
    ) -> Vec<KitAction> {
        let mut out = Vec::new();
        if let Event::End(end) = event {
            if end.reason == EndReason::LiveEnded {
                let cause = Cause {
                    id: id.cloned(),
                    event: end.clone(),
                };
                out.push(self.end_broadcast(Some(cause)));
            }
            return out;
        }
        let Some(user) = event.user() else {
            return out;
        };
        if let Event::Chat(chat) = event {
            if chat.is_dj {
                if self.memory.dj_id.as_deref() != Some(user.id.as_str()) {
                    self.memory.dj_id = Some(user.id.clone());
                    self.memory.people.remove(&user.id);
                }
                self.memory.tally.record(event);
                self.changed(now_ms);
                if let Some(action) = self.command(id, chat, now_ms) {
                    out.push(action);
                }
                return out;
            }
        }
        if self.memory.dj_id.as_deref() == Some(user.id.as_str()) {
            return out;
        }
        self.memory.tally.record(event);
        self.changed(now_ms);
        if let Some(arrival) = self.arrival(id, event, user, now_ms) {
            out.push(KitAction::Arrival(arrival));
        }
        if let Event::Chat(chat) = event {
            if let Some(action) = self.command(id, chat, now_ms) {
                out.push(action);
            }
        }
        if let Some(milestone) = self.milestone(id, event) {
            out.push(KitAction::Milestone(milestone));
        }
        if let (Event::Donation(d), Some(_)) = (event, &self.config.replies) {
            let nickname = self
                .memory
                .people
                .get(&d.user.id)
                .and_then(|p| p.nickname.clone())
                .or_else(|| d.user.nickname.clone());
            out.push(KitAction::Thanks(User {
                id: d.user.id.clone(),
                nickname,
            }));
        }
        self.bound_people();
        out
    }

    /// Notes a sign of `user`; an arrival when it is their first sign (a join
    /// or a chat) or they are back after the configured absence.
    fn arrival(
        &mut self,
        id: Option<&FrameId>,
        event: &Event,
        user: &User,
        now_ms: u64,
    ) -> Option<Arrival> {
        let person = self
            .memory
            .people
            .entry(user.id.clone())
            .or_insert_with(|| Person {
                nickname: None,
                is_manager: false,
                greeted: false,
                last_seen_ms: now_ms,
                donated_announced: 0,
            });
        if user.nickname.is_some() {
            person.nickname.clone_from(&user.nickname);
        }
        let away_ms = now_ms.saturating_sub(person.last_seen_ms);
        person.last_seen_ms = person.last_seen_ms.max(now_ms);
        let sign = match event {
            Event::Presence(p) => {
                person.is_manager = p.is_manager;
                p.kind == PresenceType::Join
            }
            Event::Chat(_) => true,
            _ => false,
        };
        let greetings = self.config.greetings.as_ref()?;
        if !sign {
            return None;
        }
        let kind = if !person.greeted {
            person.greeted = true;
            if !greetings.first {
                return None;
            }
            ArrivalKind::First
        } else {
            let after = greetings.welcome_back_after_ms?;
            if away_ms < after.max(1) {
                return None;
            }
            ArrivalKind::Back { away_ms }
        };
        Some(Arrival {
            kind,
            user: User {
                id: user.id.clone(),
                nickname: person.nickname.clone(),
            },
            is_manager: person.is_manager,
            live_id: self.memory.live_id,
            event: Cause {
                id: id.cloned(),
                event: event.clone(),
            },
        })
    }

    /// The configured command a chat runs, if any: to run, or refused.
    fn command(&mut self, id: Option<&FrameId>, chat: &Chat, now_ms: u64) -> Option<KitAction> {
        if self.commands.is_empty() || self.config.ignore.contains(&chat.user.id) {
            return None;
        }
        let (typed, rest) = named(&chat.message, &[self.config.prefix.as_str()])?;
        let folded = fold(typed);
        let index = self
            .commands
            .iter()
            .position(|c| c.folded.contains(&folded))?;
        let command = &self.commands[index].config;
        let role = if chat.is_dj {
            Role::Dj
        } else if self.is_manager(&chat.user.id) {
            Role::Manager
        } else {
            Role::Listener
        };
        if !command.allowed.permits(role) {
            return Some(KitAction::Refused(Refused {
                name: command.name.clone(),
                user: chat.user.clone(),
                role,
                needed: command.allowed,
            }));
        }
        if command.room_cooldown_ms.is_some_and(|_| {
            self.room_cooldowns
                .get(&index)
                .is_some_and(|&until| now_ms < until)
        }) {
            // The room asked a moment ago: answered once, like a person's
            // own cooldown.
            return None;
        }
        if let Some(cooldown) = command.cooldown_ms {
            let key = (index, chat.user.id.clone());
            if self
                .cooldowns
                .get(&key)
                .is_some_and(|&until| now_ms < until)
            {
                return None;
            }
            if self.cooldowns.len() >= MAX_COOLDOWNS {
                self.cooldowns.retain(|_, &mut until| until > now_ms);
                if self.cooldowns.len() >= MAX_COOLDOWNS {
                    self.cooldowns.clear();
                }
            }
            self.cooldowns.insert(key, now_ms.saturating_add(cooldown));
        }
        if let Some(cooldown) = command.room_cooldown_ms {
            self.room_cooldowns
                .insert(index, now_ms.saturating_add(cooldown));
        }
        Some(KitAction::Command(Command {
            name: command.name.clone(),
            args: split_args(rest),
            rest: rest.to_owned(),
            user: chat.user.clone(),
            role,
            chat: Cause {
                id: id.cloned(),
                event: chat.clone(),
            },
        }))
    }

    fn milestone(&mut self, id: Option<&FrameId>, event: &Event) -> Option<Milestone> {
        let steps = self.config.milestones.as_ref()?;
        match event {
            Event::Like(like) => {
                let total = self.memory.tally.total_hearts();
                let reached = crossed(total, steps.hearts_every, self.memory.hearts_announced)?;
                self.memory.hearts_announced = reached;
                Some(Milestone::Hearts {
                    reached,
                    total,
                    like: Cause {
                        id: id.cloned(),
                        event: like.clone(),
                    },
                })
            }
            Event::Donation(donation) => {
                let user = &donation.user;
                let total = self.memory.tally.person(&user.id).map_or(0, |p| p.donated);
                let person = self.memory.people.get_mut(&user.id)?;
                let reached = crossed(total, steps.donations_every, person.donated_announced)?;
                person.donated_announced = reached;
                Some(Milestone::Donated {
                    user: User {
                        id: user.id.clone(),
                        nickname: person.nickname.clone(),
                    },
                    reached,
                    total,
                    donation: Cause {
                        id: id.cloned(),
                        event: donation.clone(),
                    },
                })
            }
            _ => None,
        }
    }

    /// Forgets the longest unseen person past the cap (their tally stays).
    fn bound_people(&mut self) {
        if self.memory.people.len() <= MAX_PEOPLE {
            return;
        }
        let oldest = self
            .memory
            .people
            .iter()
            .min_by_key(|(id, p)| (p.last_seen_ms, id.as_str()))
            .map(|(id, _)| id.clone());
        if let Some(id) = oldest {
            self.memory.people.remove(&id);
        }
    }
}

/// The highest multiple of `step` at or below `total`, when it is above what
/// was announced.
fn crossed(total: u64, step: Option<u64>, announced: u64) -> Option<u64> {
    let step = step.filter(|&s| s > 0)?;
    let reached = total / step * step;
    (reached > announced).then_some(reached)
}

#[cfg(test)]
mod tests;
