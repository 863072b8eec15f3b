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
//!
//! Every frame counted, and every connection opened or closed, takes the next
//! number of one sequence shared by the whole emulator (the *write
//! sequence*), and each frame is kept with its number ([`WrittenFrame`]): a
//! *mark* ([`WriteSeq::mark`], `POST /_emulator/mark`) answers the last
//! number taken, so whoever takes it just before stopping a bot knows which
//! frames were written before that moment (number ≤ mark) and which after.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::events::{EventInfo, Kind};

/// The write sequence: one counter for the whole emulator, shared by every
/// bot's ledger. Numbers start at 1; a mark of 0 is "before anything".
#[derive(Debug, Default)]
pub struct WriteSeq(AtomicU64);

impl WriteSeq {
    /// A sequence with nothing taken yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last number taken: every frame numbered at or below it was
    /// handed to its connection's writer before this call, every frame
    /// numbered above it after.
    pub fn mark(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Takes the next number.
    fn take(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst).saturating_add(1)
    }
}

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
    /// The write sequence's number taken when it opened: the connection
    /// opened after a mark `m` exactly when `openedSeq > m`.
    pub opened_seq: u64,
    /// The number of the last frame written to it (`null`: none yet).
    pub last_write_seq: Option<u64>,
    /// The number taken when it closed (`null` while open).
    pub closed_seq: Option<u64>,
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

/// One frame written to a bot's stream, in the order written
/// (`GET /_emulator/frames`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WrittenFrame {
    /// Its number in the write sequence.
    pub write_seq: u64,
    /// The DJ's name.
    pub dj: String,
    /// The broadcast's `liveId`.
    pub live_id: u64,
    /// The app's client id.
    pub client_id: String,
    /// The connection it went to: an index into the ledger's `connections`.
    pub connection: usize,
    /// `chat`, `presence`, `like`, `donation`, `end`, or `unknown` (an
    /// unknown event of the wire variation).
    pub event: &'static str,
    /// The frame id (`null` for end frames and unknown events). The same
    /// event sent on two connections has the same id.
    pub id: Option<String>,
    /// `user.id` (`null` for end frames and unknown events).
    pub user_id: Option<String>,
    /// From the DJ (kept out of the totals, as the ledger does).
    pub is_dj: bool,
    /// A like's `totalAmount` (0 otherwise).
    pub hearts: u64,
    /// A `PAID` like.
    pub paid: bool,
    /// A donation's `amount` (0 otherwise).
    pub donated: u64,
}

/// No person: an end frame or an unknown event.
const NOBODY: u32 = u32::MAX;

/// One written frame as kept (compact: tens of bytes, person ids interned).
#[derive(Debug, Clone, Copy)]
struct Written {
    write_seq: u64,
    conn: u32,
    kind: Kind,
    person: u32,
    frame: (i64, u64),
    amount: u64,
    paid: bool,
}

/// The live record of one bot in one broadcast, shared with its stream writers.
#[derive(Debug)]
pub struct BotLedger {
    client_id: String,
    integration: String,
    dj_id: String,
    writes: Arc<WriteSeq>,
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
    /// Every frame written, in write order.
    written: Vec<Written>,
    /// Person ids by index (`Written::person`), and the index by id.
    ids: Vec<String>,
    index: HashMap<String, u32>,
}

impl BotInner {
    fn person(&mut self, id: &str) -> u32 {
        if let Some(i) = self.index.get(id) {
            return *i;
        }
        let Ok(i) = u32::try_from(self.ids.len()) else {
            return NOBODY;
        };
        if i == NOBODY {
            return NOBODY;
        }
        self.ids.push(id.to_owned());
        self.index.insert(id.to_owned(), i);
        i
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Chat => "chat",
        Kind::Presence => "presence",
        Kind::Like => "like",
        Kind::Donation => "donation",
        Kind::End => "end",
        Kind::Unknown => "unknown",
    }
}

impl BotLedger {
    /// A bot with nothing delivered yet; `dj_id` is the DJ's person id. It
    /// numbers its writes with a sequence of its own (see [`Self::with_seq`]).
    pub fn new(client_id: &str, integration: &str, dj_id: &str) -> Self {
        Self::with_seq(client_id, integration, dj_id, Arc::new(WriteSeq::new()))
    }

    /// A bot with nothing delivered yet, numbering its writes in `writes`
    /// (the emulator's one sequence).
    pub fn with_seq(
        client_id: &str,
        integration: &str,
        dj_id: &str,
        writes: Arc<WriteSeq>,
    ) -> Self {
        Self {
            client_id: client_id.to_owned(),
            integration: integration.to_owned(),
            dj_id: dj_id.to_owned(),
            writes,
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

    /// The app's client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Starts a connection; returns its index.
    pub fn open(&self, now_ms: i64) -> usize {
        let mut inner = self.lock();
        let opened_seq = self.writes.take();
        inner.connections.push(Connection {
            opened_at_ms: now_ms,
            opened_seq,
            ..Connection::default()
        });
        inner.connections.len() - 1
    }

    /// Records one frame written to connection `conn`.
    pub fn record(&self, conn: usize, info: Option<&EventInfo>, end: Option<&str>) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        // Numbered under the lock: this bot's frames are kept in number order.
        let write_seq = self.writes.take();
        let kind = info.map_or(Kind::End, |i| i.kind);
        let person = match info {
            Some(i) if !matches!(i.kind, Kind::End | Kind::Unknown) => inner.person(&i.user_id),
            _ => NOBODY,
        };
        inner.written.push(Written {
            write_seq,
            conn: u32::try_from(conn).unwrap_or(u32::MAX),
            kind,
            person,
            frame: info.map_or((0, 0), |i| i.seq),
            amount: info.map_or(0, |i| match i.kind {
                Kind::Like => i.hearts,
                Kind::Donation => i.donated,
                _ => 0,
            }),
            paid: info.is_some_and(|i| i.paid),
        });
        if let Some(c) = inner.connections.get_mut(conn) {
            c.frames += 1;
            c.last_write_seq = Some(write_seq);
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
                c.closed_seq = Some(self.writes.take());
                c.dropped = c.end.is_none();
            }
        }
    }

    /// The frames written after write number `since` and up to `upto`, in
    /// write order, as values (`dj` and `live_id` name the broadcast).
    pub fn frames(&self, dj: &str, live_id: u64, since: u64, upto: u64) -> Vec<WrittenFrame> {
        let inner = self.lock();
        let start = inner.written.partition_point(|w| w.write_seq <= since);
        let end = inner.written.partition_point(|w| w.write_seq <= upto);
        inner.written[start..end.max(start)]
            .iter()
            .map(|w| {
                let person = inner.ids.get(w.person as usize);
                let is_dj = person.is_some_and(|id| *id == self.dj_id || inner.dj_ids.contains(id));
                WrittenFrame {
                    write_seq: w.write_seq,
                    dj: dj.to_owned(),
                    live_id,
                    client_id: self.client_id.clone(),
                    connection: w.conn as usize,
                    event: kind_name(w.kind),
                    id: person.map(|_| format!("{}-{}", w.frame.0, w.frame.1)),
                    user_id: person.cloned(),
                    is_dj,
                    hearts: if w.kind == Kind::Like { w.amount } else { 0 },
                    paid: w.kind == Kind::Like && w.paid,
                    donated: if w.kind == Kind::Donation {
                        w.amount
                    } else {
                        0
                    },
                }
            })
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn info(kind: Kind, user: &str, seq: u64, hearts: u64) -> EventInfo {
        EventInfo {
            kind,
            user_id: user.to_owned(),
            nickname: None,
            is_dj: false,
            hearts,
            paid: false,
            donated: 0,
            seq: (1_000, seq),
        }
    }

    #[test]
    fn a_kept_frame_is_48_bytes() {
        assert_eq!(std::mem::size_of::<Written>(), 48);
    }

    #[test]
    fn frames_are_numbered_in_one_sequence_and_listed_between_two_marks() {
        let writes = Arc::new(WriteSeq::new());
        let a = BotLedger::with_seq("app", "int-1", "dj", Arc::clone(&writes));
        let b = BotLedger::with_seq("app", "int-2", "dj", Arc::clone(&writes));
        assert_eq!(writes.mark(), 0);
        let ca = a.open(0); // 1
        let cb = b.open(0); // 2
        a.record(ca, Some(&info(Kind::Like, "u1", 0, 5)), None); // 3
        b.record(cb, Some(&info(Kind::Chat, "u2", 1, 0)), None); // 4
        let mark = writes.mark();
        assert_eq!(mark, 4);
        a.record(ca, Some(&info(Kind::Chat, "dj", 2, 0)), None); // 5: the DJ
        a.record(ca, None, Some("RECONNECT")); // 6
        a.close(ca, 10); // 7
        let all = a.frames("main", 9, 0, u64::MAX);
        let numbers: Vec<u64> = all.iter().map(|f| f.write_seq).collect();
        assert_eq!(numbers, [3, 5, 6]);
        assert_eq!((all[0].event, all[0].hearts), ("like", 5));
        assert_eq!(all[0].id.as_deref(), Some("1000-0"));
        assert!(all[1].is_dj);
        assert_eq!((all[2].event, all[2].user_id.as_deref()), ("end", None));
        let after: Vec<u64> = a
            .frames("main", 9, mark, u64::MAX)
            .iter()
            .map(|f| f.write_seq)
            .collect();
        assert_eq!(after, [5, 6]);
        let upto: Vec<u64> = a
            .frames("main", 9, 0, mark)
            .iter()
            .map(|f| f.write_seq)
            .collect();
        assert_eq!(upto, [3]);
        let conn = &a.snapshot().connections[0];
        assert_eq!(
            (conn.opened_seq, conn.last_write_seq, conn.closed_seq),
            (1, Some(6), Some(7))
        );
        assert_eq!(b.snapshot().connections[0].opened_seq, 2);
    }
}
