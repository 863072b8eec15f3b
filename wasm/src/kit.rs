//! The tally and the kit of the bot module: chat split and truncate,
//! commands, the greet-once audience, milestones, app timers.

use onair::event::Event;
use onair::proto::json::TallyJson;
use serde::Serialize;

use crate::bot::to_json;
use onair::kit::audience::{Audience as CoreAudience, Greeting};
use onair::kit::commands::{Allowed, Commands as CoreCommands};
use onair::kit::milestones::{Milestone, Milestones as CoreMilestones};
use onair::kit::tally::Tally as CoreTally;
use wasm_bindgen::prelude::*;

use crate::bot::{error, ms};

/// A typed event from the `event` and `data` of an event object (the JS
/// layer passes `data` as JSON text).
fn event_from(name: &str, data: &str) -> Option<Event> {
    Event::decode(name, data).ok().flatten()
}

// ---- tally --------------------------------------------------------------------

/// Per-broadcast totals by person.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Tally {
    inner: CoreTally,
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl Tally {
    /// An empty tally.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Tally {
        Tally {
            inner: CoreTally::new(),
        }
    }

    /// Ties the tally to a broadcast; `true` when it started over.
    #[wasm_bindgen(js_name = startBroadcast)]
    pub fn start_broadcast(&mut self, live_id: f64) -> bool {
        self.inner.start_broadcast(ms(live_id))
    }

    /// Counts one event (`event` name, `data` as JSON text); `false` when
    /// it did not decode.
    pub fn record(&mut self, event: &str, data: &str) -> bool {
        match event_from(event, data) {
            Some(e) => {
                self.inner.record(&e);
                true
            }
            None => false,
        }
    }

    /// The totals as JSON (the ledger's shape).
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        TallyJson(&self.inner).to_line()
    }
}

// ---- kit ----------------------------------------------------------------------

/// Splits chat text into messages the service takes (grapheme-safe).
#[wasm_bindgen(js_name = splitChat)]
pub fn split_chat(text: &str) -> Vec<String> {
    onair::kit::text::split(text)
}

/// Truncates text to `limit` UTF-16 units at a grapheme boundary.
#[wasm_bindgen(js_name = truncateChat)]
pub fn truncate_chat(text: &str, limit: Option<u32>, ellipsis: &str) -> String {
    // Without a limit, the service's own: the core's CHAT_MAX_UTF16.
    let limit = limit.map_or(onair::proto::chat::CHAT_MAX_UTF16, |l| l as usize);
    onair::kit::text::truncate(text, limit, ellipsis)
}

/// Splits command arguments (quotes group words).
#[wasm_bindgen(js_name = splitArgs)]
pub fn split_args(text: &str) -> Vec<String> {
    onair::kit::commands::split_args(text)
}

/// Greet-once / welcome-back memory of one broadcast's audience.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Audience {
    inner: CoreAudience,
}

impl Default for Audience {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl Audience {
    /// An empty audience.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Audience {
        Audience {
            inner: CoreAudience::new(),
        }
    }

    /// Loads a stored audience (its `toJson`).
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(json: &str) -> Result<Audience, JsValue> {
        CoreAudience::from_json(json)
            .map(|inner| Audience { inner })
            .map_err(|e| error("StateError", "state", &e.to_string()))
    }

    /// The stored form.
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// Starts a broadcast; `true` when it is a new one.
    #[wasm_bindgen(js_name = startBroadcast)]
    pub fn start_broadcast(&mut self, live_id: f64) -> bool {
        self.inner.start_broadcast(ms(live_id))
    }

    /// Ends the broadcast.
    #[wasm_bindgen(js_name = endBroadcast)]
    pub fn end_broadcast(&mut self) {
        self.inner.end_broadcast();
    }

    /// Feeds one event; a greeting as JSON
    /// (`{"greeting":"first"|"welcomeBack","presence":{…}}`), or `undefined`.
    #[wasm_bindgen(js_name = onEvent)]
    pub fn on_event(&mut self, event: &str, data: &str) -> Option<String> {
        let greeting = self.inner.on_event(&event_from(event, data)?)?;
        let kind = match &greeting {
            Greeting::First(_) => "first",
            Greeting::WelcomeBack(_) => "welcomeBack",
        };
        #[derive(Serialize)]
        struct Out<'a> {
            greeting: &'static str,
            presence: &'a onair::event::Presence,
        }
        Some(to_json(&Out {
            greeting: kind,
            presence: greeting.presence(),
        }))
    }

    /// Whether the person is in the broadcast now.
    #[wasm_bindgen(js_name = isPresent)]
    pub fn is_present(&self, id: &str) -> bool {
        self.inner.is_present(id)
    }

    /// Whether the person is a manager.
    #[wasm_bindgen(js_name = isManager)]
    pub fn is_manager(&self, id: &str) -> bool {
        self.inner.is_manager(id)
    }

    /// People remembered.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.len()).unwrap_or(u32::MAX)
    }

    /// What the stream showed of person `id`, as JSON, or `undefined`.
    pub fn person(&self, id: &str) -> Option<String> {
        self.inner.person(id).map(|p| to_json(&PersonJson::of(p)))
    }

    /// Everyone seen in this broadcast, longest-unseen first, as a JSON array.
    pub fn people(&self) -> String {
        to_json(&self.inner.people().map(PersonJson::of).collect::<Vec<_>>())
    }
}

/// A person of the audience in JS idiom (camelCase, the temperature a
/// number); the stored form (`toJson`) stays the core's.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PersonJson<'a> {
    user: &'a onair::event::User,
    joins: u64,
    is_manager: bool,
    fan_rank: Option<u64>,
    favorite_temperature: Option<f64>,
}

impl<'a> PersonJson<'a> {
    fn of(p: &'a onair::kit::audience::Person) -> Self {
        PersonJson {
            user: &p.user,
            joins: p.joins,
            is_manager: p.is_manager,
            fan_rank: p.fan_rank,
            favorite_temperature: p.favorite_temperature,
        }
    }
}

/// Heart and donation milestones, running donor totals.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Milestones {
    inner: CoreMilestones,
}

#[wasm_bindgen]
impl Milestones {
    /// Milestones every `hearts_every` hearts and `donations_every` units
    /// donated by one person (0: none).
    #[wasm_bindgen(constructor)]
    pub fn new(hearts_every: f64, donations_every: f64) -> Milestones {
        Milestones::with_steps(CoreMilestones::new(), hearts_every, donations_every)
    }

    fn with_steps(
        mut inner: CoreMilestones,
        hearts_every: f64,
        donations_every: f64,
    ) -> Milestones {
        if hearts_every >= 1.0 {
            inner = inner.hearts_every(ms(hearts_every));
        }
        if donations_every >= 1.0 {
            inner = inner.donations_every(ms(donations_every));
        }
        Milestones { inner }
    }

    /// Loads stored milestones (their `toJson`); the steps are
    /// configuration, not state, so they are given again.
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(
        json: &str,
        hearts_every: f64,
        donations_every: f64,
    ) -> Result<Milestones, JsValue> {
        CoreMilestones::from_json(json)
            .map(|inner| Milestones::with_steps(inner, hearts_every, donations_every))
            .map_err(|e| error("StateError", "state", &e.to_string()))
    }

    /// Ends the broadcast (its totals are forgotten).
    #[wasm_bindgen(js_name = endBroadcast)]
    pub fn end_broadcast(&mut self) {
        self.inner.end_broadcast();
    }

    /// One person's donations this broadcast as JSON
    /// (`{"user","donated","donations","announced"}`), or `undefined`.
    pub fn donor(&self, id: &str) -> Option<String> {
        self.inner.donor(id).map(to_json)
    }

    /// Donors, highest total first, as a JSON array.
    pub fn donors(&self) -> String {
        to_json(&self.inner.donors())
    }

    /// Starts a broadcast; `true` when it is a new one.
    #[wasm_bindgen(js_name = startBroadcast)]
    pub fn start_broadcast(&mut self, live_id: f64) -> bool {
        self.inner.start_broadcast(ms(live_id))
    }

    /// Feeds one event; a milestone as JSON, or `undefined`:
    /// `{"milestone":"hearts","reached","total"}` or
    /// `{"milestone":"donated","user","reached","total"}`.
    #[wasm_bindgen(js_name = onEvent)]
    pub fn on_event(&mut self, event: &str, data: &str) -> Option<String> {
        let milestone = self.inner.on_event(&event_from(event, data)?)?;
        #[derive(Serialize)]
        struct Out<'a> {
            milestone: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            user: Option<&'a onair::event::User>,
            reached: u64,
            total: u64,
        }
        Some(to_json(&match &milestone {
            Milestone::Hearts { reached, total } => Out {
                milestone: "hearts",
                user: None,
                reached: *reached,
                total: *total,
            },
            Milestone::Donated {
                user,
                reached,
                total,
            } => Out {
                milestone: "donated",
                user: Some(user),
                reached: *reached,
                total: *total,
            },
        }))
    }

    /// Hearts this broadcast.
    #[wasm_bindgen(getter)]
    pub fn hearts(&self) -> f64 {
        self.inner.hearts() as f64
    }

    /// Donated this broadcast.
    #[wasm_bindgen(getter, js_name = totalDonated)]
    pub fn total_donated(&self) -> f64 {
        self.inner.total_donated() as f64
    }

    /// What one person donated this broadcast.
    #[wasm_bindgen(js_name = donatedBy)]
    pub fn donated_by(&self, id: &str) -> f64 {
        self.inner.donated_by(id) as f64
    }

    /// The stored form.
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        self.inner.to_json()
    }
}

/// Chat commands: `!name args`, who may run them.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Commands {
    inner: CoreCommands,
}

impl Default for Commands {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl Commands {
    /// No commands yet, prefix `!`.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Commands {
        Commands {
            inner: CoreCommands::new(),
        }
    }

    /// Adds a command; `allowed`: `anyone`, `managers` or `dj`.
    pub fn add(&mut self, name: &str, allowed: &str) -> Result<(), JsValue> {
        let allowed = Allowed::from_name(allowed).ok_or_else(|| {
            error(
                "OnairError",
                "invalid_allowed",
                &format!("allowed must be anyone, managers or dj, not \"{allowed}\""),
            )
        })?;
        let inner = std::mem::take(&mut self.inner);
        self.inner = inner.command(name, allowed);
        Ok(())
    }

    /// Sets the prefix (replacing `!`).
    pub fn prefix(&mut self, prefix: &str) {
        let inner = std::mem::take(&mut self.inner);
        self.inner = inner.prefix(prefix);
    }

    /// The bot's own id (its chat is ignored).
    #[wasm_bindgen(js_name = ownId)]
    pub fn own_id(&mut self, id: &str) {
        let inner = std::mem::take(&mut self.inner);
        self.inner = inner.own_id(id);
    }

    /// Matches a chat event (`data` as JSON text) against the commands, with
    /// the audience's managers; JSON or `undefined`:
    /// `{"ok":true,"name","args","rest","user","role"}` or
    /// `{"ok":false,"name","needed","user","role"}`.
    #[wasm_bindgen(js_name = matchChat)]
    pub fn match_chat(&self, data: &str, audience: &Audience) -> Option<String> {
        let Some(Event::Chat(chat)) = event_from("chat", data) else {
            return None;
        };
        #[derive(Serialize)]
        struct Out<'a> {
            ok: bool,
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            args: Option<&'a [String]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            rest: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            needed: Option<&'static str>,
            user: &'a onair::event::User,
            role: &'static str,
        }
        Some(match self.inner.match_chat(&chat, &audience.inner)? {
            Ok(inv) => to_json(&Out {
                ok: true,
                name: &inv.name,
                args: Some(&inv.args),
                rest: Some(&inv.rest),
                needed: None,
                user: &inv.user,
                role: inv.role.as_str(),
            }),
            Err(denied) => to_json(&Out {
                ok: false,
                name: &denied.name,
                args: None,
                rest: None,
                needed: Some(denied.needed.as_str()),
                user: &denied.user,
                role: denied.role.as_str(),
            }),
        })
    }
}

// ---- app timers ---------------------------------------------------------------

/// Named one-shot and repeating app timers (the kit's, for a loop of the
/// app's own; the `Bot` hosts its own set).
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct Timers {
    inner: onair::proto::timers::Timers,
}

#[wasm_bindgen]
impl Timers {
    /// No timers.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Timers {
        Timers::default()
    }

    /// Sets timer `tag` (replacing one of that tag): once at `at_ms`
    /// without `period_ms`, else every `period_ms` from `at_ms`; with
    /// `while_connected`, only while the stream is connected.
    pub fn set(
        &mut self,
        tag: &str,
        at_ms: f64,
        period_ms: Option<f64>,
        while_connected: bool,
    ) -> Result<(), JsValue> {
        use onair::proto::timers::Timer;
        let timer = match period_ms {
            Some(period) => Timer::every(ms(period), ms(at_ms)),
            None => Timer::at(ms(at_ms)),
        };
        let timer = if while_connected {
            timer.while_connected()
        } else {
            timer
        };
        self.inner.set(tag, timer).map_err(crate::bot::timer_error)
    }

    /// Cancels timer `tag`; `false` when there was none.
    pub fn cancel(&mut self, tag: &str) -> bool {
        self.inner.cancel(tag)
    }

    /// When timer `tag` is next due, or `undefined`.
    pub fn deadline(&self, tag: &str) -> Option<f64> {
        self.inner.deadline(tag).map(|t| t as f64)
    }

    /// When the next timer is due (given whether the stream is connected),
    /// or `undefined`.
    #[wasm_bindgen(js_name = nextDeadline)]
    pub fn next_deadline(&self, connected: bool) -> Option<f64> {
        self.inner.next_deadline(connected).map(|t| t as f64)
    }

    /// The tag of a timer due at `now_ms`, earliest first (a repeating one
    /// re-arms on its schedule), or `undefined`.
    #[wasm_bindgen(js_name = popDue)]
    pub fn pop_due(&mut self, now_ms: f64, connected: bool) -> Option<String> {
        self.inner
            .pop_due(ms(now_ms), connected)
            .map(|tag| tag.as_str().to_owned())
    }

    /// How many timers are set.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.len()).unwrap_or(u32::MAX)
    }

    /// The tags of the timers set.
    pub fn tags(&self) -> Vec<String> {
        self.inner.tags().map(str::to_owned).collect()
    }
}
