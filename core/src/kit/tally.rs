//! Per-broadcast totals by person, from stream events (spec 2.5, 6).
//!
//! What attendance and donation-board bots need, with the spec's handling
//! rules built in: people are keyed by `user.id` (never the nickname); hearts
//! count `totalAmount` (free hearts included); a donation's `amount` is already
//! multiplied out; a rejoin is the same person; the whole-broadcast donation
//! total comes from events, since the fan ranking only lists people present;
//! and the DJ, known from chat's `isDj`, is kept out everywhere.
//!
//! ```
//! use onair::event::Event;
//! use onair::kit::tally::Tally;
//!
//! let donation = Event::decode(
//!     "donation",
//!     r#"{"user":{"id":"u1","nickname":"Mina"},"amount":500,"message":null,"time":"t"}"#,
//! ).unwrap().unwrap();
//! let mut tally = Tally::new();
//! tally.start_broadcast(42);
//! tally.record(&donation);
//! tally.record(&donation);
//! assert_eq!(tally.total_donated(), 1000);
//! assert_eq!(tally.person("u1").map(|p| p.donations), Some(2));
//! ```

use std::collections::BTreeMap;

use crate::event::{Event, LikeType};

/// What one person did in this broadcast. Its JSON form (camelCase) is the
/// one of the emulator's ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PersonTotals {
    /// The latest nickname seen (it changes; `None` when never sent).
    pub nickname: Option<String>,
    /// Hearts added, by `totalAmount` (paid and free).
    pub hearts: u64,
    /// Of those, hearts from `PAID` items.
    pub paid_hearts: u64,
    /// Currency units donated (each donation's `amount`, never multiplied).
    pub donated: u64,
    /// Number of donations.
    pub donations: u64,
    /// Number of `presence` joins (a rejoin counts again here, not in
    /// [`Tally::joined`]).
    pub joins: u64,
    /// Number of chat messages.
    pub chats: u64,
}

/// Totals for the current broadcast, keyed by person `id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Tally {
    #[serde(default)]
    live_id: Option<u64>,
    #[serde(default)]
    dj_id: Option<String>,
    #[serde(default)]
    people: BTreeMap<String, PersonTotals>,
}

impl Tally {
    /// An empty tally, not yet tied to a broadcast.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ties the tally to broadcast `live_id` (from `GET /v1/live`). A different
    /// id than before starts from zero and returns `true`; the same id (a
    /// reconnect to the same broadcast) keeps the totals and returns `false`.
    pub fn start_broadcast(&mut self, live_id: u64) -> bool {
        if self.live_id == Some(live_id) {
            return false;
        }
        self.live_id = Some(live_id);
        self.people.clear();
        // The DJ of the next broadcast is the same person for a bot acting
        // for one DJ, so what we learned of the DJ's id stays.
        true
    }

    /// The broadcast these totals belong to.
    pub fn live_id(&self) -> Option<u64> {
        self.live_id
    }

    /// The DJ's `id`, once a chat with `isDj` has shown it.
    pub fn dj_id(&self) -> Option<&str> {
        self.dj_id.as_deref()
    }

    /// Counts one event. `end` and events from the DJ change nothing.
    pub fn record(&mut self, event: &Event) {
        if let Event::Chat(chat) = event {
            if chat.is_dj {
                self.people.remove(&chat.user.id);
                self.dj_id = Some(chat.user.id.clone());
                return;
            }
        }
        let Some(user) = event.user() else {
            return;
        };
        if self.dj_id.as_deref() == Some(user.id.as_str()) {
            return;
        }
        let person = self.people.entry(user.id.clone()).or_default();
        if user.nickname.is_some() {
            person.nickname.clone_from(&user.nickname);
        }
        match event {
            Event::Chat(_) => person.chats = person.chats.saturating_add(1),
            Event::Presence(_) => person.joins = person.joins.saturating_add(1),
            Event::Like(like) => {
                person.hearts = person.hearts.saturating_add(like.total_amount);
                if like.kind == LikeType::Paid {
                    person.paid_hearts = person.paid_hearts.saturating_add(like.total_amount);
                }
            }
            Event::Donation(donation) => {
                person.donated = person.donated.saturating_add(donation.amount);
                person.donations = person.donations.saturating_add(1);
            }
            Event::End(_) => {}
        }
    }

    /// One person's totals.
    pub fn person(&self, id: &str) -> Option<&PersonTotals> {
        self.people.get(id)
    }

    /// The people who joined (a `presence` event), each once however often
    /// they rejoined (spec 6 rule 4), the DJ excluded: the ledger's
    /// `attendance`. (Everyone seen, chat and hearts included: [`seen`](Self::seen).)
    pub fn joined(&self) -> usize {
        self.people.values().filter(|p| p.joins > 0).count()
    }

    /// Everyone seen in this broadcast (joined, chatted, hearted or
    /// donated), each once, the DJ excluded.
    pub fn seen(&self) -> usize {
        self.people.len()
    }

    /// People seen, by `id`, in no particular order.
    pub fn people(&self) -> impl Iterator<Item = (&str, &PersonTotals)> {
        self.people.iter().map(|(id, totals)| (id.as_str(), totals))
    }

    /// Hearts added to the broadcast by everyone seen.
    pub fn total_hearts(&self) -> u64 {
        self.people
            .values()
            .fold(0, |sum, p| sum.saturating_add(p.hearts))
    }

    /// Currency donated over the whole broadcast, including people who left.
    pub fn total_donated(&self) -> u64 {
        self.people
            .values()
            .fold(0, |sum, p| sum.saturating_add(p.donated))
    }

    /// The top ten donors as one line, `1. Ana 500 · 2. …` (`{top}` in a
    /// reply), or `no_donors` when nobody donated.
    pub fn top_donors_text(&self, no_donors: &str) -> String {
        let donors = self.donors();
        if donors.is_empty() {
            return no_donors.to_owned();
        }
        donors
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, (id, p))| {
                format!(
                    "{}. {} {}",
                    i + 1,
                    p.nickname.as_deref().unwrap_or(id),
                    p.donated
                )
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// Donors, highest total first (ties by `id`, so the order is stable).
    pub fn donors(&self) -> Vec<(&str, &PersonTotals)> {
        let donors: Vec<_> = self.people().filter(|(_, p)| p.donated > 0).collect();
        ordered(&donors, |(id, p)| (!p.donated, id))
    }
}

/// `items` in the order of their keys, a number then an id: the one sort of
/// the per-person collections (the tally's donors, the kit's milestones and
/// audience; `!n` as the number sorts by `n` descending). Every caller
/// shares one instance of the sort routine: each instance is kilobytes of
/// code (five of them were 17 KB of the WebAssembly bot module). Keys are
/// unique wherever it is used (ids are), so the order is total.
pub(crate) fn ordered<'a, T: Copy>(items: &[T], key: impl Fn(T) -> (u64, &'a str)) -> Vec<T> {
    let keys: Vec<(u64, &str)> = items.iter().map(|&item| key(item)).collect();
    order(&keys).into_iter().map(|i| items[i]).collect()
}

/// The positions of `keys` in ascending order (not generic: one instance).
fn order(keys: &[(u64, &str)]) -> Vec<usize> {
    let mut positions: Vec<usize> = (0..keys.len()).collect();
    positions.sort_unstable_by(|&a, &b| keys[a].cmp(&keys[b]));
    positions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Decoder, Item};

    fn events(stream: &str) -> Vec<Event> {
        let mut decoder = Decoder::new();
        let mut rest = stream.as_bytes();
        let mut out = Vec::new();
        while let Some(item) = decoder.next_item(&mut rest) {
            if let Item::Event { event, .. } = item {
                out.push(event);
            }
        }
        out
    }

    fn frame(name: &str, data: &str) -> String {
        format!("event:{name}\ndata:{data}\n\n")
    }

    fn chat(id: &str, is_dj: bool) -> String {
        frame(
            "chat",
            &format!(
                r#"{{"user":{{"id":"{id}","nickname":"n"}},"isDj":{is_dj},"message":"m","sentTime":"t"}}"#
            ),
        )
    }

    fn like(id: &str, kind: &str, total: u64, amount: u64, combo: &str) -> String {
        frame(
            "like",
            &format!(
                r#"{{"user":{{"id":"{id}","nickname":null}},"type":"{kind}","totalAmount":{total},"amount":{amount},"extraAmount":0,"combo":{combo},"time":"t"}}"#
            ),
        )
    }

    fn donation(id: &str, amount: u64, message: &str) -> String {
        frame(
            "donation",
            &format!(
                r#"{{"user":{{"id":"{id}","nickname":"d"}},"amount":{amount},"message":{message},"time":"t"}}"#
            ),
        )
    }

    fn join(id: &str, nickname: &str) -> String {
        frame(
            "presence",
            &format!(
                r#"{{"user":{{"id":"{id}","nickname":"{nickname}"}},"type":"JOIN","fanRank":null,"isManager":false,"favoriteTemperature":null,"time":"t"}}"#
            ),
        )
    }

    fn tally(stream: &str) -> Tally {
        let mut tally = Tally::new();
        tally.start_broadcast(1);
        for event in events(stream) {
            tally.record(&event);
        }
        tally
    }

    #[test]
    fn rule_1_is_dj_keeps_the_dj_out_even_retroactively() {
        let t = tally(
            &[
                like("dj", "FREE", 1, 1, "null"),
                chat("dj", true),
                donation("dj", 5, "null"),
                chat("u1", false),
            ]
            .concat(),
        );
        assert_eq!(t.dj_id(), Some("dj"));
        assert_eq!(t.person("dj"), None);
        assert_eq!(
            (t.seen(), t.joined(), t.total_hearts(), t.total_donated()),
            (1, 0, 0, 0),
            "u1 was seen chatting, nobody joined"
        );
    }

    #[test]
    fn rule_2_hearts_by_total_amount_donations_never_multiplied() {
        let t = tally(
            &[
                like("u1", "PAID", 60, 10, "4"),
                like("u1", "FREE", 1, 1, "null"),
                donation("u1", 500, "null"),
            ]
            .concat(),
        );
        let p = t.person("u1").unwrap();
        assert_eq!(
            (p.hearts, p.paid_hearts, p.donated, p.donations),
            (61, 60, 500, 1)
        );
    }

    #[test]
    fn rule_3_null_combo_and_null_message_count_normally() {
        let t = tally(
            &[
                like("u1", "FREE", 3, 3, "null"),
                donation("u1", 7, "null"),
                donation("u1", 8, "\"hi\""),
            ]
            .concat(),
        );
        assert_eq!((t.total_hearts(), t.total_donated()), (3, 15));
    }

    #[test]
    fn rule_4_rejoin_is_the_same_person_by_id_not_nickname() {
        let t = tally(
            &[
                join("u1", "a"),
                join("u1", "renamed"),
                join("u2", "renamed"),
            ]
            .concat(),
        );
        assert_eq!(t.joined(), 2);
        let p = t.person("u1").unwrap();
        assert_eq!((p.joins, p.nickname.as_deref()), (2, Some("renamed")));
    }

    #[test]
    fn rule_5_donation_total_includes_people_who_left() {
        // Leaving is not an event: a donor who left stays in the totals.
        let t = tally(&[donation("gone", 1000, "null"), donation("here", 10, "null")].concat());
        assert_eq!(t.total_donated(), 1010);
        let order: Vec<&str> = t.donors().iter().map(|(id, _)| *id).collect();
        assert_eq!(order, ["gone", "here"]);
    }

    #[test]
    fn a_new_live_id_resets_the_same_one_keeps() {
        let mut t = tally(&donation("u1", 5, "null"));
        assert!(!t.start_broadcast(1));
        assert_eq!(t.total_donated(), 5);
        assert!(t.start_broadcast(2));
        assert_eq!(
            (t.total_donated(), t.joined(), t.live_id()),
            (0, 0, Some(2))
        );
    }

    #[test]
    fn sums_saturate_instead_of_overflowing() {
        let t = tally(
            &[
                donation("u1", u64::MAX, "null"),
                donation("u2", u64::MAX, "null"),
            ]
            .concat(),
        );
        assert_eq!(t.total_donated(), u64::MAX);
    }

    #[test]
    fn snapshot_of_the_fixture_stream() {
        let stream = include_str!("../../../fixtures/streams/service.sse");
        let t = tally(stream);
        let mut people: Vec<_> = t.people().collect();
        people.sort_by_key(|(id, _)| *id);
        insta::assert_debug_snapshot!((
            t.dj_id(),
            t.seen(),
            t.total_hearts(),
            t.total_donated(),
            people
        ));
    }
}
