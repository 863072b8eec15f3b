//! The ledger: what the emulator delivered to each bot, per broadcast and per
//! stream connection, and the totals by person over what that bot was
//! delivered, as spec section 6 defines them — the truth a bot's own tally
//! must equal.
//!
//! Counting happens when a frame is handed to the connection's writer (not
//! when it is queued), so a frame lost with a cut connection is not counted.
//!
//! Rules (spec 6): hearts by `totalAmount` (free included; `paidHearts` the
//! `PAID` part); a donation's `amount` summed as is; attendance = distinct ids
//! that joined; a rejoin counts again in `joins` only; the DJ (a chat with
//! `isDj` true, or the DJ's own id) kept out of everything; an event that
//! reached the bot on two connections open at once counts once (by frame id).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::events::{EventInfo, Kind};

/// The whole ledger (`GET /_emulator/ledger`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Ledger {
    /// One entry per broadcast, in start order.
    pub broadcasts: Vec<BroadcastEntry>,
}

/// One broadcast of one DJ.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastEntry {
    /// The DJ's name in the control API.
    pub dj: String,
    /// The broadcast's `liveId`.
    pub live_id: u64,
    /// Every bot that opened a stream in it.
    pub bots: Vec<BotEntry>,
}

/// One bot (integration) in one broadcast.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BotEntry {
    /// The app's client id.
    pub client_id: String,
    /// The integration (app × DJ) id.
    pub integration: String,
    /// Its stream connections, in opening order.
    pub connections: Vec<Connection>,
    /// Totals over every event delivered to this bot in this broadcast.
    pub totals: Totals,
}

/// One stream connection.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// Emulator time it opened.
    pub opened_at_ms: i64,
    /// Emulator time it closed; `null` while open.
    pub closed_at_ms: Option<i64>,
    /// The end frame's reason, or `null` when none was sent.
    pub end: Option<String>,
    /// Closed without an end frame (drop, kick, slow reader cut, client gone).
    pub dropped: bool,
    /// Frozen by `POST /_emulator/streams/stall`: nothing was written after
    /// `stalledAtMs` (events, heartbeats, end frames), so nothing after it is
    /// counted here.
    pub stalled: bool,
    /// Emulator time the connection froze; `null` unless `stalled`.
    pub stalled_at_ms: Option<i64>,
    /// Frames with an `event:` line written (events, unknown events, the end frame).
    pub frames: u64,
    /// Events written, by name.
    pub events: EventCounts,
}

/// Events delivered by name.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct EventCounts {
    /// `chat` events.
    pub chat: u64,
    /// `presence` events.
    pub presence: u64,
    /// `like` events.
    pub like: u64,
    /// `donation` events.
    pub donation: u64,
}

/// Totals by person (spec 6), the DJ kept out.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct Totals {
    /// Hearts by `totalAmount`.
    pub hearts: u64,
    /// Currency units donated.
    pub donated: u64,
    /// Distinct ids that joined (presence).
    pub attendance: u64,
    /// By person id.
    pub people: BTreeMap<String, PersonTotals>,
}

/// One person's totals; the field names match the core's `tally::PersonTotals`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PersonTotals {
    /// The latest nickname delivered (`null` when none was).
    pub nickname: Option<String>,
    /// Hearts by `totalAmount`.
    pub hearts: u64,
    /// Of those, `PAID` hearts.
    pub paid_hearts: u64,
    /// Currency units donated.
    pub donated: u64,
    /// Number of donations.
    pub donations: u64,
    /// Number of joins (rejoins included).
    pub joins: u64,
    /// Number of chat messages.
    pub chats: u64,
}

/// The live record of one bot in one broadcast, shared with its stream writers.
#[derive(Debug)]
pub struct BotLedger {
    client_id: String,
    integration: String,
    dj_id: String,
    inner: Mutex<BotInner>,
}

#[derive(Debug, Default)]
struct BotInner {
    connections: Vec<Connection>,
    people: BTreeMap<String, PersonTotals>,
    joined: BTreeSet<String>,
    dj_ids: BTreeSet<String>,
    /// Frame ids already in the totals: two connections open at once count
    /// an event once (the totals are over the union of what was delivered).
    seen: HashSet<(i64, u64)>,
}

impl BotLedger {
    /// A bot with nothing delivered yet; `dj_id` is the DJ's person id.
    pub fn new(client_id: &str, integration: &str, dj_id: &str) -> Self {
        Self {
            client_id: client_id.to_owned(),
            integration: integration.to_owned(),
            dj_id: dj_id.to_owned(),
            inner: Mutex::new(BotInner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BotInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The integration id.
    pub fn integration(&self) -> &str {
        &self.integration
    }

    /// Starts a connection; returns its index.
    pub fn open(&self, now_ms: i64) -> usize {
        let mut inner = self.lock();
        inner.connections.push(Connection {
            opened_at_ms: now_ms,
            ..Connection::default()
        });
        inner.connections.len() - 1
    }

    /// Records one frame written to connection `conn`.
    pub fn record(&self, conn: usize, info: Option<&EventInfo>, end: Option<&str>) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        if let Some(c) = inner.connections.get_mut(conn) {
            c.frames += 1;
            if let Some(reason) = end {
                c.end = Some(reason.to_owned());
            }
            if let Some(info) = info {
                match info.kind {
                    Kind::Chat => c.events.chat += 1,
                    Kind::Presence => c.events.presence += 1,
                    Kind::Like => c.events.like += 1,
                    Kind::Donation => c.events.donation += 1,
                    Kind::End | Kind::Unknown => {}
                }
            }
        }
        let Some(info) = info else { return };
        if matches!(info.kind, Kind::End | Kind::Unknown) || !inner.seen.insert(info.seq) {
            return;
        }
        if info.is_dj || info.user_id == self.dj_id {
            inner.dj_ids.insert(info.user_id.clone());
            return;
        }
        // Look up before inserting: no allocation per frame for a known person.
        if !inner.people.contains_key(&info.user_id) {
            inner
                .people
                .insert(info.user_id.clone(), PersonTotals::default());
        }
        let Some(person) = inner.people.get_mut(&info.user_id) else {
            return;
        };
        if info.nickname.is_some() {
            person.nickname.clone_from(&info.nickname);
        }
        match info.kind {
            Kind::Chat => person.chats += 1,
            Kind::Presence => {
                person.joins += 1;
                if !inner.joined.contains(&info.user_id) {
                    inner.joined.insert(info.user_id.clone());
                }
            }
            Kind::Like => {
                person.hearts = person.hearts.saturating_add(info.hearts);
                if info.paid {
                    person.paid_hearts = person.paid_hearts.saturating_add(info.hearts);
                }
            }
            Kind::Donation => {
                person.donated = person.donated.saturating_add(info.donated);
                person.donations += 1;
            }
            Kind::End | Kind::Unknown => {}
        }
    }

    /// Connections not closed yet.
    pub fn open_connections(&self) -> Vec<usize> {
        let inner = self.lock();
        (0..inner.connections.len())
            .filter(|i| inner.connections[*i].closed_at_ms.is_none())
            .collect()
    }

    /// Marks connection `conn` stalled at `now_ms` (idempotent; the first time stays).
    pub fn stall(&self, conn: usize, now_ms: i64) {
        let mut inner = self.lock();
        if let Some(c) = inner.connections.get_mut(conn) {
            c.stalled = true;
            c.stalled_at_ms.get_or_insert(now_ms);
        }
    }

    /// Closes connection `conn` (idempotent).
    pub fn close(&self, conn: usize, now_ms: i64) {
        let mut inner = self.lock();
        if let Some(c) = inner.connections.get_mut(conn) {
            if c.closed_at_ms.is_none() {
                c.closed_at_ms = Some(now_ms);
                c.dropped = c.end.is_none();
            }
        }
    }

    /// The entry as a value.
    pub fn snapshot(&self) -> BotEntry {
        let inner = self.lock();
        let people: BTreeMap<String, PersonTotals> = inner
            .people
            .iter()
            .filter(|(id, _)| !inner.dj_ids.contains(*id))
            .map(|(id, p)| (id.clone(), p.clone()))
            .collect();
        let totals = Totals {
            hearts: people.values().map(|p| p.hearts).sum(),
            donated: people.values().map(|p| p.donated).sum(),
            attendance: inner
                .joined
                .iter()
                .filter(|id| !inner.dj_ids.contains(*id))
                .count() as u64,
            people,
        };
        BotEntry {
            client_id: self.client_id.clone(),
            integration: self.integration.clone(),
            connections: inner.connections.clone(),
            totals,
        }
    }
}
