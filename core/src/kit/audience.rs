//! Who is in the broadcast, as far as the stream shows, and whom to greet.
//!
//! [`Audience`] remembers each person of the current broadcast by `id`
//! (spec 2.5: the nickname changes and repeats) and turns `presence` joins into
//! greeting decisions that can only be given once:
//!
//! - a person's first `JOIN` in a broadcast gives [`Greeting::First`];
//! - their second `JOIN` (they left and came back: spec 6.4) gives
//!   [`Greeting::WelcomeBack`];
//! - any later `JOIN` gives nothing. A listener on a flaky connection rejoins
//!   again and again; one welcome-back per broadcast never spams the chat,
//!   and needs no invented "how long was I gone" threshold.
//!
//! The decision is made and remembered in the same call, so calling
//! [`Audience::on_event`] once per event is all it takes; the stored form
//! ([`Audience::to_json`]) keeps it across a restart, so a restart mid-broadcast
//! neither re-greets nor forgets. `favoriteTemperature` and `fanRank` are
//! passed through in the greeting, never judged: the service defines no
//! threshold for a regular.
//!
//! Presence arrives only when the bot is a manager (spec 4.6 rule 5); without
//! it there are no greetings, and the room is known from chat, hearts and
//! donations only. Leaving is never shown, so "present" means "seen in this
//! broadcast".
//!
//! ```
//! use onair::event::{Event, Presence, PresenceType, User};
//! use onair::kit::audience::{Audience, Greeting};
//! use onair::proto::time::Timestamp;
//!
//! let join = Event::Presence(Presence {
//!     user: User { id: "u1".into(), nickname: Some("Mina".into()) },
//!     kind: PresenceType::Join,
//!     fan_rank: Some(3),
//!     is_manager: false,
//!     favorite_temperature: Some(36.5),
//!     time: Timestamp::new("2024-11-22T04:33:20Z"),
//! });
//! let mut audience = Audience::new();
//! audience.start_broadcast(42);
//! assert!(matches!(audience.on_event(&join), Some(Greeting::First(p)) if p.fan_rank == Some(3)));
//! assert!(matches!(audience.on_event(&join), Some(Greeting::WelcomeBack(_))));
//! assert_eq!(audience.on_event(&join), None); // once is enough
//!
//! // A restart mid-broadcast: nobody is greeted twice.
//! let mut restored = Audience::from_json(audience.to_json()).unwrap();
//! assert_eq!(restored.on_event(&join), None);
//! ```

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::stored::{self, StateError};
use crate::event::{EndReason, Event, Presence, PresenceType, User};
use crate::kit::tally::ordered;

/// The `format` marker of [`Audience::to_json`].
pub const AUDIENCE_FORMAT: &str = "onair.audience";

/// The version of the stored form this build writes and reads.
pub const AUDIENCE_VERSION: u32 = 1;

/// How many people an [`Audience`] remembers by default (see [`Audience::with_cap`]).
pub const DEFAULT_AUDIENCE_CAP: usize = 10_000;

/// A greeting decision, given once per person per broadcast. It carries the
/// `presence` as received (nickname, `fanRank`, `favoriteTemperature`,
/// `isManager`), for the bot to word its greeting.
///
/// ```
/// # use onair::event::{Presence, PresenceType, User};
/// # use onair::kit::audience::Greeting;
/// # use onair::proto::time::Timestamp;
/// # let presence = Presence { user: User { id: "u1".into(), nickname: None },
/// #     kind: PresenceType::Join, fan_rank: None, is_manager: false,
/// #     favorite_temperature: None, time: Timestamp::new("t") };
/// let greeting = Greeting::First(presence);
/// let name = greeting.user().nickname.as_deref().unwrap_or("friend");
/// assert_eq!(format!("Welcome, {name}!"), "Welcome, friend!");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Greeting {
    /// The person's first join in this broadcast.
    First(Presence),
    /// The person's second join in this broadcast (the only welcome-back).
    WelcomeBack(Presence),
}

impl Greeting {
    /// The join this greeting answers.
    ///
    /// ```
    /// # use onair::event::{Presence, PresenceType, User};
    /// # use onair::kit::audience::Greeting;
    /// # use onair::proto::time::Timestamp;
    /// # let presence = Presence { user: User { id: "u1".into(), nickname: None },
    /// #     kind: PresenceType::Join, fan_rank: Some(1), is_manager: false,
    /// #     favorite_temperature: None, time: Timestamp::new("t") };
    /// assert_eq!(Greeting::WelcomeBack(presence).presence().fan_rank, Some(1));
    /// ```
    pub fn presence(&self) -> &Presence {
        match self {
            Greeting::First(p) | Greeting::WelcomeBack(p) => p,
        }
    }

    /// The person to greet.
    ///
    /// ```
    /// # use onair::event::{Presence, PresenceType, User};
    /// # use onair::kit::audience::Greeting;
    /// # use onair::proto::time::Timestamp;
    /// # let presence = Presence { user: User { id: "u1".into(), nickname: None },
    /// #     kind: PresenceType::Join, fan_rank: None, is_manager: false,
    /// #     favorite_temperature: None, time: Timestamp::new("t") };
    /// assert_eq!(Greeting::First(presence).user().id, "u1");
    /// ```
    pub fn user(&self) -> &User {
        &self.presence().user
    }
}

/// What the stream showed of one person in this broadcast.
///
/// ```
/// use onair::kit::audience::Audience;
///
/// let audience = Audience::new();
/// assert!(audience.person("u1").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Person {
    /// The person, with the latest nickname seen.
    pub user: User,
    /// `JOIN`s seen in this broadcast (0: seen only through chat, hearts or
    /// donations). 1 means greeted, 2 or more means welcomed back too.
    #[serde(default)]
    pub joins: u64,
    /// `isManager` of their latest join (the DJ may appoint or remove a manager).
    #[serde(default)]
    pub is_manager: bool,
    /// `fanRank` of their latest join, as sent.
    #[serde(default)]
    pub fan_rank: Option<u64>,
    /// `favoriteTemperature` of their latest join, as sent. Stored as the
    /// shortest number that reads back bit for bit (`36.5`); read back from
    /// a number or from text (what versions before 0.2 wrote).
    #[serde(default, deserialize_with = "stored_f64")]
    pub favorite_temperature: Option<f64>,
}

/// A stored temperature: a number, or its text.
fn stored_f64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Number(f64),
        Text(String),
    }
    match Option::<Stored>::deserialize(d)? {
        None => Ok(None),
        Some(Stored::Number(v)) => Ok(Some(v)),
        Some(Stored::Text(text)) => serde_json::from_str::<f64>(&text)
            .map(Some)
            .map_err(|_| serde::de::Error::custom("favorite_temperature is not a number")),
    }
}

/// The stored form of an audience, as written and read.
#[derive(Serialize, Deserialize)]
struct StoredAudience<P> {
    #[serde(default)]
    live_id: Option<u64>,
    #[serde(default)]
    dj_id: Option<String>,
    #[serde(default = "Vec::new")]
    people: Vec<P>,
}

#[derive(Debug, Clone)]
struct Entry {
    person: Person,
    /// When last seen, on the audience's own event counter (for forgetting
    /// the longest-unseen first).
    seen: u64,
}

/// Memory of the current broadcast's audience, keyed by person `id`.
///
/// Bounded: at most [`cap`](Audience::cap) people (default
/// [`DEFAULT_AUDIENCE_CAP`]). When a new person would pass the cap, the
/// eighth of the people unseen for longest is forgotten at once (forgetting in
/// batches keeps the cost per event constant). A forgotten person who joins
/// again is greeted as new; a forgotten manager is known again at their next
/// join. A week-long broadcast cannot grow the memory without bound.
///
/// ```
/// use onair::kit::audience::Audience;
///
/// let mut audience = Audience::new().with_cap(500);
/// assert!(!audience.start_broadcast(6)); // the first id is adopted
/// assert!(audience.start_broadcast(7)); // a new broadcast: memory cleared
/// assert!(!audience.start_broadcast(7)); // a reconnect to the same one: kept
/// assert_eq!((audience.cap(), audience.len()), (500, 0));
/// ```
#[derive(Debug, Clone)]
pub struct Audience {
    live_id: Option<u64>,
    dj_id: Option<String>,
    people: HashMap<String, Entry>,
    cap: usize,
    clock: u64,
}

impl Default for Audience {
    fn default() -> Self {
        Self {
            live_id: None,
            dj_id: None,
            people: HashMap::new(),
            cap: DEFAULT_AUDIENCE_CAP,
            clock: 0,
        }
    }
}

impl Audience {
    /// An empty audience, not yet tied to a broadcast.
    ///
    /// ```
    /// let audience = onair::kit::audience::Audience::new();
    /// assert!(audience.is_empty() && audience.live_id().is_none());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The same audience remembering at most `cap` people (at least 1). The
    /// longest-unseen are forgotten at once if there are more.
    ///
    /// ```
    /// let audience = onair::kit::audience::Audience::new().with_cap(0);
    /// assert_eq!(audience.cap(), 1);
    /// ```
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap.max(1);
        if self.people.len() > self.cap {
            let excess = self.people.len() - self.cap;
            self.forget_oldest(excess);
        }
        self
    }

    /// How many people this audience remembers at most.
    ///
    /// ```
    /// use onair::kit::audience::{Audience, DEFAULT_AUDIENCE_CAP};
    /// assert_eq!(Audience::new().cap(), DEFAULT_AUDIENCE_CAP);
    /// ```
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Ties the memory to broadcast `live_id` (from `GET /v1/live`). Another
    /// id than the one known clears it and returns `true`; the same id (a
    /// reconnect) keeps it and returns `false`. When no id was known yet (a new
    /// audience, or after `LIVE_ENDED`), the id is adopted and what was seen
    /// so far is kept: it was seen in this broadcast.
    ///
    /// ```
    /// use onair::kit::audience::Audience;
    ///
    /// let mut audience = Audience::new();
    /// assert!(!audience.start_broadcast(1)); // adopted
    /// assert!(audience.start_broadcast(2)); // a new broadcast
    /// assert_eq!(audience.live_id(), Some(2));
    /// ```
    pub fn start_broadcast(&mut self, live_id: u64) -> bool {
        let new = super::is_new_broadcast(self.live_id, live_id);
        if new {
            self.clear();
        }
        self.live_id = Some(live_id);
        new
    }

    /// Forgets the broadcast: called on `end` with `LIVE_ENDED` by
    /// [`on_event`](Audience::on_event), for a bot that cannot learn the
    /// `liveId`. The DJ's id is kept (the same DJ's next broadcast).
    ///
    /// ```
    /// use onair::kit::audience::Audience;
    ///
    /// let mut audience = Audience::new();
    /// audience.start_broadcast(1);
    /// audience.end_broadcast();
    /// assert_eq!(audience.live_id(), None);
    /// ```
    pub fn end_broadcast(&mut self) {
        self.clear();
        self.live_id = None;
    }

    fn clear(&mut self) {
        self.people.clear();
        self.clock = 0;
    }

    /// The broadcast this memory belongs to, when known.
    ///
    /// ```
    /// assert_eq!(onair::kit::audience::Audience::new().live_id(), None);
    /// ```
    pub fn live_id(&self) -> Option<u64> {
        self.live_id
    }

    /// The DJ's `id`, once a chat with `isDj` has shown it. The DJ is never
    /// part of the audience.
    ///
    /// ```
    /// assert_eq!(onair::kit::audience::Audience::new().dj_id(), None);
    /// ```
    pub fn dj_id(&self) -> Option<&str> {
        self.dj_id.as_deref()
    }

    /// Remembers one event and says whom to greet, if anyone.
    ///
    /// - `presence` `JOIN`: counts the join, keeps `isManager`, `fanRank` and
    ///   `favoriteTemperature`, and gives [`Greeting::First`] for the first
    ///   join, [`Greeting::WelcomeBack`] for the second, nothing after. A
    ///   presence of another type changes nothing.
    /// - `chat`, `like`, `donation`: the person is present.
    /// - `chat` with `isDj`: the DJ's id is learned and the DJ kept out.
    /// - `end` with `LIVE_ENDED`: [`end_broadcast`](Audience::end_broadcast).
    ///
    /// ```
    /// use onair::event::{Chat, Event, User};
    /// use onair::kit::audience::Audience;
    /// use onair::proto::time::Timestamp;
    ///
    /// let mut audience = Audience::new();
    /// let chat = Event::Chat(Chat {
    ///     user: User { id: "u1".into(), nickname: None },
    ///     is_dj: false,
    ///     message: "hi".into(),
    ///     sent_time: Timestamp::new("t"),
    /// });
    /// assert_eq!(audience.on_event(&chat), None); // chat greets nobody
    /// assert!(audience.is_present("u1"));
    /// ```
    pub fn on_event(&mut self, event: &Event) -> Option<Greeting> {
        match event {
            Event::End(end) => {
                if end.reason == EndReason::LiveEnded {
                    self.end_broadcast();
                }
                None
            }
            Event::Chat(chat) if chat.is_dj => {
                self.people.remove(&chat.user.id);
                self.dj_id = Some(chat.user.id.clone());
                None
            }
            Event::Presence(presence) => {
                if presence.kind != PresenceType::Join || self.is_dj(&presence.user.id) {
                    return None;
                }
                let person = self.touch(&presence.user)?;
                person.joins = person.joins.saturating_add(1);
                person.is_manager = presence.is_manager;
                person.fan_rank = presence.fan_rank;
                person.favorite_temperature = presence.favorite_temperature;
                match person.joins {
                    1 => Some(Greeting::First(presence.clone())),
                    2 => Some(Greeting::WelcomeBack(presence.clone())),
                    _ => None,
                }
            }
            Event::Chat(_) | Event::Like(_) | Event::Donation(_) => {
                if let Some(user) = event.user() {
                    if !self.is_dj(&user.id) {
                        self.touch(user);
                    }
                }
                None
            }
        }
    }

    fn is_dj(&self, id: &str) -> bool {
        self.dj_id.as_deref() == Some(id)
    }

    /// The person's entry, created if new, marked as seen now (`None` never
    /// happens: the entry was just made).
    fn touch(&mut self, user: &User) -> Option<&mut Person> {
        self.clock = self.clock.saturating_add(1);
        if !self.people.contains_key(&user.id) {
            if self.people.len() >= self.cap {
                // Forget an eighth at once, so this happens once per cap/8 newcomers.
                let batch = (self.cap / 8).max(1);
                self.forget_oldest(batch);
            }
            let person = Person {
                user: user.clone(),
                joins: 0,
                is_manager: false,
                fan_rank: None,
                favorite_temperature: None,
            };
            let entry = Entry {
                person,
                seen: self.clock,
            };
            self.people.insert(user.id.clone(), entry);
        }
        let entry = self.people.get_mut(&user.id)?;
        entry.seen = self.clock;
        if user.nickname.is_some() {
            entry.person.user.nickname.clone_from(&user.nickname);
        }
        Some(&mut entry.person)
    }

    /// Forgets the `count` people unseen for longest.
    fn forget_oldest(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        if count >= self.people.len() {
            self.people.clear();
            return;
        }
        // The one sort of the per-person collections (`tally::ordered`), not
        // a selection of its own: forgetting is rare, and each instance of a
        // sort routine is kilobytes of the WASM bot module. `seen` values are
        // distinct (one tick per touch), so exactly `count` go.
        let entries: Vec<&Entry> = self.people.values().collect();
        let oldest = ordered(&entries, |e| (e.seen, &e.person.user.id));
        let threshold = oldest.get(count - 1).map_or(0, |e| e.seen);
        self.people.retain(|_, e| e.seen > threshold);
    }

    /// What the stream showed of person `id` in this broadcast.
    ///
    /// ```
    /// assert!(onair::kit::audience::Audience::new().person("u1").is_none());
    /// ```
    pub fn person(&self, id: &str) -> Option<&Person> {
        self.people.get(id).map(|e| &e.person)
    }

    /// Whether person `id` was seen in this broadcast (joined, chatted,
    /// hearted or donated). Leaving is never shown.
    ///
    /// ```
    /// assert!(!onair::kit::audience::Audience::new().is_present("u1"));
    /// ```
    pub fn is_present(&self, id: &str) -> bool {
        self.people.contains_key(id)
    }

    /// Whether person `id`'s latest join in this broadcast said `isManager`.
    /// Unknown without presence events (the bot must be a manager to get them).
    ///
    /// ```
    /// assert!(!onair::kit::audience::Audience::new().is_manager("u1"));
    /// ```
    pub fn is_manager(&self, id: &str) -> bool {
        self.person(id).is_some_and(|p| p.is_manager)
    }

    /// Everyone seen in this broadcast, longest-unseen first.
    ///
    /// ```
    /// assert_eq!(onair::kit::audience::Audience::new().people().count(), 0);
    /// ```
    pub fn people(&self) -> impl Iterator<Item = &Person> {
        let entries: Vec<&Entry> = self.people.values().collect();
        ordered(&entries, |e| (e.seen, &e.person.user.id))
            .into_iter()
            .map(|e| &e.person)
    }

    /// How many people are remembered.
    ///
    /// ```
    /// assert_eq!(onair::kit::audience::Audience::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.people.len()
    }

    /// Whether nobody is remembered.
    ///
    /// ```
    /// assert!(onair::kit::audience::Audience::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.people.is_empty()
    }

    /// The versioned JSON form to store, so a restart mid-broadcast neither
    /// re-greets nor forgets: `{"format":"onair.audience","version":1,
    /// "live_id":…,"dj_id":…,"people":[…]}`, people longest-unseen first.
    ///
    /// ```
    /// let json = onair::kit::audience::Audience::new().to_json();
    /// assert_eq!(
    ///     json,
    ///     r#"{"format":"onair.audience","version":1,"live_id":null,"dj_id":null,"people":[]}"#
    /// );
    /// ```
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Out<'a> {
            format: &'static str,
            version: u32,
            #[serde(flatten)]
            audience: StoredAudience<&'a Person>,
        }
        let out = Out {
            format: AUDIENCE_FORMAT,
            version: AUDIENCE_VERSION,
            audience: StoredAudience {
                live_id: self.live_id,
                dj_id: self.dj_id.clone(),
                people: self.people().collect(),
            },
        };
        serde_json::to_string(&out).unwrap_or_default()
    }

    /// Reads the form written by [`to_json`](Audience::to_json), with the
    /// default cap (chain [`with_cap`](Audience::with_cap) for another).
    /// Unknown fields are ignored; another `format` or an unknown `version`
    /// is refused with a [`StateError`].
    ///
    /// After loading, call [`start_broadcast`](Audience::start_broadcast) with
    /// the current `liveId` when the bot can learn it: memory of another
    /// broadcast (one whose `LIVE_ENDED` came while the bot was down) is then
    /// cleared instead of welcoming everyone "back".
    ///
    /// ```
    /// use onair::kit::audience::Audience;
    /// use onair::kit::StateError;
    ///
    /// let json = r#"{"format":"onair.audience","version":1,"live_id":9,"dj_id":null,
    ///   "people":[{"user":{"id":"u1","nickname":"Mina"},"joins":1,"is_manager":true}]}"#;
    /// let audience = Audience::from_json(json).unwrap();
    /// assert!(audience.is_manager("u1"));
    /// assert_eq!(
    ///     Audience::from_json(r#"{"format":"onair.tokens","version":1}"#).unwrap_err(),
    ///     StateError::UnknownFormat { expected: "onair.audience" },
    /// );
    /// ```
    pub fn from_json(json: impl AsRef<[u8]>) -> Result<Audience, StateError> {
        let StoredAudience {
            live_id,
            dj_id,
            people,
        } = stored::load::<StoredAudience<Person>>(
            json.as_ref(),
            AUDIENCE_FORMAT,
            AUDIENCE_VERSION,
        )?;
        let mut audience = Audience {
            live_id,
            dj_id,
            ..Audience::default()
        };
        for person in people {
            if audience.is_dj(&person.user.id) {
                continue;
            }
            audience.clock = audience.clock.saturating_add(1);
            let entry = Entry {
                person,
                seen: audience.clock,
            };
            audience.people.insert(entry.person.user.id.clone(), entry);
        }
        let cap = audience.cap;
        Ok(audience.with_cap(cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Chat, Donation, End, Like, LikeType};
    use crate::proto::time::Timestamp;
    use proptest::prelude::*;

    fn user(id: &str, nickname: Option<&str>) -> User {
        User {
            id: id.into(),
            nickname: nickname.map(Into::into),
        }
    }

    fn join(id: &str, is_manager: bool) -> Event {
        Event::Presence(Presence {
            user: user(id, Some("n")),
            kind: PresenceType::Join,
            fan_rank: None,
            is_manager,
            favorite_temperature: None,
            time: Timestamp::new("t"),
        })
    }

    fn chat(id: &str, is_dj: bool) -> Event {
        Event::Chat(Chat {
            user: user(id, None),
            is_dj,
            message: "m".into(),
            sent_time: Timestamp::new("t"),
        })
    }

    fn end(reason: EndReason) -> Event {
        Event::End(End { reason })
    }

    fn kinds(audience: &mut Audience, events: &[Event]) -> Vec<&'static str> {
        events
            .iter()
            .map(|e| match audience.on_event(e) {
                Some(Greeting::First(_)) => "first",
                Some(Greeting::WelcomeBack(_)) => "back",
                None => "-",
            })
            .collect()
    }

    #[test]
    fn first_join_then_one_welcome_back_then_silence() {
        let mut a = Audience::new();
        let events = [join("u1", false), join("u2", false), join("u1", false)];
        assert_eq!(kinds(&mut a, &events), ["first", "first", "back"]);
        assert_eq!(kinds(&mut a, &vec![join("u1", false); 5]), ["-"; 5]);
        assert_eq!(a.person("u1").map(|p| p.joins), Some(7));
    }

    #[test]
    fn keyed_by_id_not_nickname() {
        let mut a = Audience::new();
        let mut renamed = join("u1", false);
        if let Event::Presence(p) = &mut renamed {
            p.user.nickname = Some("other".into());
        }
        assert_eq!(
            kinds(&mut a, &[join("u1", false), renamed]),
            ["first", "back"]
        );
        assert_eq!(
            a.person("u1").and_then(|p| p.user.nickname.as_deref()),
            Some("other")
        );
    }

    #[test]
    fn a_null_nickname_keeps_the_one_known() {
        let mut a = Audience::new();
        a.on_event(&join("u1", false));
        a.on_event(&chat("u1", false));
        assert_eq!(
            a.person("u1").and_then(|p| p.user.nickname.as_deref()),
            Some("n")
        );
    }

    #[test]
    fn chatters_hearts_and_donors_are_present_but_not_greeted() {
        let mut a = Audience::new();
        let like = Event::Like(Like {
            user: user("u2", None),
            kind: LikeType::Free,
            total_amount: 1,
            amount: 1,
            extra_amount: 0,
            combo: None,
            time: Timestamp::new("t"),
        });
        let donation = Event::Donation(Donation {
            user: user("u3", None),
            amount: 5,
            message: None,
            time: Timestamp::new("t"),
        });
        assert_eq!(
            kinds(&mut a, &[chat("u1", false), like, donation]),
            ["-"; 3]
        );
        assert_eq!(a.len(), 3);
        // Their first join is still greeted as a first join.
        assert_eq!(kinds(&mut a, &[join("u1", false)]), ["first"]);
    }

    #[test]
    fn the_dj_is_kept_out() {
        let mut a = Audience::new();
        a.on_event(&chat("dj", false));
        a.on_event(&chat("dj", true));
        assert_eq!((a.dj_id(), a.is_present("dj")), (Some("dj"), false));
        assert_eq!(
            kinds(&mut a, &[join("dj", true), chat("dj", false)]),
            ["-"; 2]
        );
        assert!(a.is_empty());
    }

    #[test]
    fn managers_follow_their_latest_join() {
        let mut a = Audience::new();
        a.on_event(&join("m", true));
        assert!(a.is_manager("m"));
        a.on_event(&join("m", false));
        assert!(!a.is_manager("m"));
        assert!(!a.is_manager("nobody"));
    }

    #[test]
    fn a_presence_of_another_type_changes_nothing() {
        let mut a = Audience::new();
        let mut leave = join("u1", false);
        if let Event::Presence(p) = &mut leave {
            p.kind = PresenceType::Other("LEAVE".into());
        }
        assert_eq!(a.on_event(&leave), None);
        assert!(a.is_empty());
    }

    #[test]
    fn live_ended_and_a_new_live_id_reset_other_ends_do_not() {
        let mut a = Audience::new();
        a.start_broadcast(1);
        a.on_event(&chat("dj", true));
        a.on_event(&join("u1", false));
        a.on_event(&end(EndReason::Reconnect));
        a.on_event(&end(EndReason::TokenExpired));
        assert!(!a.start_broadcast(1));
        assert_eq!(kinds(&mut a, &[join("u1", false)]), ["back"]);
        a.on_event(&end(EndReason::LiveEnded));
        assert_eq!((a.len(), a.live_id(), a.dj_id()), (0, None, Some("dj")));
        assert_eq!(kinds(&mut a, &[join("u1", false)]), ["first"]);
        assert!(!a.start_broadcast(2)); // adopted: u1 joined this one
        assert_eq!(a.len(), 1);
        assert!(a.start_broadcast(3));
        assert_eq!(kinds(&mut a, &[join("u1", false)]), ["first"]);
    }

    #[test]
    fn memory_is_capped_forgetting_the_longest_unseen() {
        let mut a = Audience::new().with_cap(16);
        for i in 0..16 {
            a.on_event(&join(&format!("u{i}"), false));
        }
        a.on_event(&chat("u0", false)); // u0 seen again: u1, u2 are oldest
        a.on_event(&join("new", false));
        assert_eq!(a.len(), 15); // 16 / 8 = 2 forgotten, 1 added
        assert!(a.is_present("u0") && !a.is_present("u1") && !a.is_present("u2"));
        for i in 0..1000 {
            a.on_event(&join(&format!("x{i}"), false));
            assert!(a.len() <= 16);
        }
        let a = a.with_cap(4);
        assert_eq!(a.len(), 4);
        assert!(a.is_present("x999"));
    }

    #[test]
    fn restart_neither_regreets_nor_forgets() {
        let mut a = Audience::new();
        a.start_broadcast(5);
        a.on_event(&chat("dj", true));
        kinds(
            &mut a,
            &[join("u1", true), join("u2", false), join("u2", false)],
        );
        let mut b = Audience::from_json(a.to_json()).expect("round trip");
        assert_eq!((b.live_id(), b.dj_id()), (Some(5), Some("dj")));
        assert!(b.is_manager("u1"));
        assert_eq!(
            kinds(&mut b, &[join("u1", true), join("u2", false)]),
            ["back", "-"]
        );
    }

    #[test]
    fn from_json_refuses_what_it_cannot_read() {
        let err = |json: &str| Audience::from_json(json).expect_err(json);
        assert!(matches!(err("not json"), StateError::Json { .. }));
        assert!(matches!(err("{}"), StateError::UnknownFormat { .. }));
        assert_eq!(
            err(r#"{"format":"onair.audience"}"#),
            StateError::MissingVersion {
                format: AUDIENCE_FORMAT
            }
        );
        let e = err(r#"{"format":"onair.audience","version":2}"#);
        assert_eq!(
            e.to_string(),
            "stored onair.audience: version 2 is not supported (this build reads 1)"
        );
        assert!(matches!(
            err(r#"{"format":"onair.audience","version":1,"people":[{"joins":1}]}"#),
            StateError::Json { .. }
        ));
        // Unknown fields are ignored; missing optional ones default.
        let ok = Audience::from_json(r#"{"format":"onair.audience","version":1,"extra":[]}"#);
        assert!(ok.is_ok_and(|a| a.is_empty()));
    }

    fn person() -> impl Strategy<Value = Person> {
        (
            "[a-z0-9]{1,6}",
            proptest::option::of("\\PC{0,8}"),
            any::<u64>(),
            any::<bool>(),
            proptest::option::of(any::<u64>()),
            proptest::option::of(prop_oneof![-1e9f64..1e9, any::<f64>()]),
        )
            .prop_map(|(id, nickname, joins, is_manager, fan_rank, temp)| Person {
                user: User { id, nickname },
                joins,
                is_manager,
                fan_rank,
                favorite_temperature: temp,
            })
    }

    proptest! {
        #[test]
        fn round_trips_through_json(
            live_id in proptest::option::of(any::<u64>()),
            dj_id in proptest::option::of("[a-z]{1,4}"),
            people in prop::collection::vec(person(), 0..30),
        ) {
            let mut a = Audience { live_id, dj_id, ..Audience::default() };
            for (i, person) in people.into_iter().enumerate() {
                if a.is_dj(&person.user.id) {
                    continue;
                }
                let seen = 1000 - i as u64 * 7; // any distinct order
                a.people.insert(person.user.id.clone(), Entry { person, seen });
            }
            let json = a.to_json();
            let b = Audience::from_json(&json).expect("own output");
            prop_assert_eq!((a.live_id(), a.dj_id()), (b.live_id(), b.dj_id()));
            let before: Vec<&Person> = a.people().collect();
            let after: Vec<&Person> = b.people().collect();
            prop_assert_eq!(before, after);
            prop_assert_eq!(b.to_json(), json);
        }
    }
}
