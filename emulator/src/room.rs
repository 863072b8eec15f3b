//! One broadcast on air and its room (spec 2.2–2.5, 4.4, 4.5): who is
//! present and in which order (the listener pages), who ever passed through
//! (`totalListenerCount`), the donation ranking of this broadcast (the fan
//! list shows only people present; `fanRank` counts everyone), chat-banned
//! listeners, the broadcast-wide chat window, and the open streams.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use crate::events;
use crate::stream::StreamHandle;

/// One listener row: (join sequence, id, nickname).
pub type ListenerRow = (u64, String, String);

/// A person in the room.
#[derive(Debug, Clone)]
pub struct Member {
    seq: u64,
    /// Nickname (`None` when unknown).
    pub nickname: Option<String>,
}

/// One broadcast on air.
#[derive(Debug)]
pub struct Live {
    /// `liveId`.
    pub live_id: u64,
    /// Title.
    pub title: String,
    /// Pinned greeting.
    pub welcome_message: String,
    /// Categories.
    pub categories: Vec<String>,
    /// Hashtags.
    pub tags: Vec<String>,
    /// Start (emulator ms).
    pub started_at: i64,
    /// Scheduled end.
    pub close_air_at: i64,
    members: HashMap<String, Member>,
    order: BTreeMap<u64, String>,
    next_seq: u64,
    ever: HashSet<String>,
    /// Donated in this broadcast, and the order of the first donation (ties).
    donated: HashMap<String, (u64, u64)>,
    /// Listeners banned from chat in this broadcast (their chat is never created).
    pub chat_banned: HashSet<String>,
    /// Open streams.
    pub streams: Vec<StreamHandle>,
    /// Index of this broadcast in the ledger.
    pub ledger: usize,
    chat_times: VecDeque<i64>,
}

impl Live {
    /// A broadcast starting at `now` with an empty room.
    pub fn new(live_id: u64, title: Option<String>, now: i64, ledger: usize) -> Self {
        Self {
            live_id,
            title: title.unwrap_or_else(|| "Late night lo-fi 🎧".to_owned()),
            welcome_message: String::new(),
            categories: vec!["music".to_owned()],
            tags: vec!["lofi".to_owned(), "onair".to_owned()],
            started_at: now,
            close_air_at: now + 2 * 3_600_000,
            members: HashMap::new(),
            order: BTreeMap::new(),
            next_seq: 1,
            ever: HashSet::new(),
            donated: HashMap::new(),
            chat_banned: HashSet::new(),
            streams: Vec::new(),
            ledger,
            chat_times: VecDeque::new(),
        }
    }

    /// Puts a person in the room (a rejoin after leaving gets a new place at
    /// the end of the list); a known nickname is updated.
    pub fn enter(&mut self, id: &str, nickname: Option<String>) {
        if let Some(m) = self.members.get_mut(id) {
            if nickname.is_some() {
                m.nickname = nickname;
            }
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.members.insert(id.to_owned(), Member { seq, nickname });
        self.order.insert(seq, id.to_owned());
        self.ever.insert(id.to_owned());
    }

    /// A person leaves (no event: presence only carries JOIN).
    pub fn leave(&mut self, id: &str) -> bool {
        match self.members.remove(id) {
            Some(m) => {
                self.order.remove(&m.seq);
                true
            }
            None => false,
        }
    }

    /// Whether `id` is in the room.
    pub fn is_present(&self, id: &str) -> bool {
        self.members.contains_key(id)
    }

    /// Adds a donation to this broadcast's ranking.
    pub fn add_donation(&mut self, id: &str, amount: u64) {
        let next = self.donated.len() as u64;
        let e = self.donated.entry(id.to_owned()).or_insert((0, next));
        e.0 = e.0.saturating_add(amount);
    }

    /// `id`'s rank in this broadcast's donation ranking (`None` without donations).
    pub fn fan_rank(&self, id: &str) -> Option<i64> {
        let mine = self.donated.get(id)?.0;
        if mine == 0 {
            return None;
        }
        let above = self.donated.values().filter(|(n, _)| *n > mine).count();
        Some(above as i64 + 1)
    }

    fn nickname_of(&self, id: &str) -> String {
        self.members
            .get(id)
            .and_then(|m| m.nickname.clone())
            .unwrap_or_else(|| events::default_nickname(id).to_owned())
    }

    /// The room in join order after `after_seq`, at most `limit` rows, and
    /// whether more follow (a snapshot of the moment, spec 4.4).
    pub fn listeners(&self, after_seq: u64, limit: usize) -> (Vec<ListenerRow>, bool) {
        let mut out = Vec::new();
        for (seq, id) in self.order.range(after_seq.saturating_add(1)..) {
            if out.len() == limit {
                return (out, true);
            }
            out.push((*seq, id.clone(), self.nickname_of(id)));
        }
        (out, false)
    }

    /// The top 30 donors present (spec 4.5): (id, nickname, donated), highest
    /// first, ties by who donated first.
    pub fn fans(&self) -> Vec<(String, String, u64)> {
        let mut donors: Vec<(&String, &(u64, u64))> = self
            .donated
            .iter()
            .filter(|(id, (n, _))| *n > 0 && self.members.contains_key(*id))
            .collect();
        donors.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        donors
            .into_iter()
            .take(30)
            .map(|(id, (n, _))| (id.clone(), self.nickname_of(id), *n))
            .collect()
    }

    /// Listeners now and people who ever passed through.
    pub fn counts(&self) -> (usize, usize) {
        (self.members.len(), self.ever.len())
    }

    /// Takes one slot of the broadcast-wide chat limit (`limit` messages per
    /// emulator second); false when full (429 `OAPI_MNGR_0302`).
    pub fn chat_slot(&mut self, now: i64, limit: usize) -> bool {
        while self.chat_times.front().is_some_and(|t| now - *t >= 1000) {
            self.chat_times.pop_front();
        }
        if self.chat_times.len() >= limit {
            return false;
        }
        self.chat_times.push_back(now);
        true
    }
}
