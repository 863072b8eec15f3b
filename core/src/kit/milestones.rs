//! Heart and donation milestones, and each donor's running total for
//! thank-you messages, remembered across a restart.
//!
//! [`Milestones`] is built on [`Tally`]: every event goes through a tally,
//! which owns the counting rules (hearts by `totalAmount`, free hearts
//! included; a donation's `amount` never multiplied again; the DJ, known from
//! `isDj`, kept out, even retroactively). Milestones keeps a stored copy of
//! the two totals it needs (the broadcast's hearts and each donor's total),
//! updated by what the tally counted for each event, so a restart neither
//! forgets a running total nor announces a milestone twice.
//!
//! The rules:
//! - A signal when the broadcast's hearts cross a multiple of the heart step
//!   ([`Milestones::hearts_every`]), and when a person's donation total
//!   crosses a multiple of the donation step ([`Milestones::donations_every`]).
//!   Each multiple is announced at most once per broadcast.
//! - One event crossing several multiples (a combo of 250 hearts past 100 and
//!   200) gives one signal naming the highest multiple crossed (200): one chat
//!   message, not a burst into the broadcast-wide chat limit.
//! - Reset with the broadcast: [`Milestones::start_broadcast`] with a new
//!   `liveId`, or an `end` with `LIVE_ENDED`.
//! - Bounded: at most [`cap`](Milestones::cap) donors (default
//!   [`DEFAULT_DONOR_CAP`]); past it the eighth with the smallest totals is
//!   forgotten (the broadcast's total keeps their money).
//!
//! ```
//! use onair::event::{Donation, Event, User};
//! use onair::kit::milestones::{Milestone, Milestones};
//! use onair::proto::time::Timestamp;
//!
//! let mut milestones = Milestones::new().hearts_every(100).donations_every(1_000);
//! let donation = |amount| Event::Donation(Donation {
//!     user: User { id: "u1".into(), nickname: Some("Mina".into()) },
//!     amount,
//!     message: None,
//!     time: Timestamp::new("2024-11-22T04:33:20Z"),
//! });
//! assert_eq!(milestones.on_event(&donation(600)), None);
//! assert_eq!(milestones.donated_by("u1"), 600); // "thanks Mina, 600 in total"
//! let Some(Milestone::Donated { reached, total, .. }) = milestones.on_event(&donation(2_500)) else {
//!     panic!("expected a milestone");
//! };
//! assert_eq!((reached, total), (3_000, 3_100)); // the highest multiple crossed, once
//!
//! // A restart: the totals stay, nothing is announced twice.
//! let mut restored = Milestones::from_json(milestones.to_json()).unwrap().donations_every(1_000);
//! assert_eq!(restored.donated_by("u1"), 3_100);
//! assert_eq!(restored.on_event(&donation(1)), None);
//! ```

use std::collections::HashMap;
use std::num::NonZeroU64;

use serde::Serialize;

use super::stored::{self, StateError};
use crate::event::{Chat, EndReason, Event, User};
use crate::kit::tally::{ordered, Tally};
use crate::proto::time::Timestamp;

/// The `format` marker of [`Milestones::to_json`].
pub const MILESTONES_FORMAT: &str = "onair.milestones";

/// The version of the stored form this build writes and reads.
pub const MILESTONES_VERSION: u32 = 1;

/// How many donors [`Milestones`] remembers by default.
pub const DEFAULT_DONOR_CAP: usize = 10_000;

/// A milestone reached by one event.
///
/// ```
/// use onair::kit::milestones::Milestone;
///
/// let m = Milestone::Hearts { reached: 1_000, total: 1_042 };
/// assert_eq!(m.to_string(), "1000 hearts");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Milestone {
    /// The broadcast's hearts crossed `reached`, a multiple of the heart step.
    Hearts {
        /// The highest multiple of the step crossed by this event.
        reached: u64,
        /// The broadcast's hearts now.
        total: u64,
    },
    /// A person's donation total crossed `reached`, a multiple of the
    /// donation step.
    Donated {
        /// The donor (latest nickname).
        user: User,
        /// The highest multiple of the step crossed by this donation.
        reached: u64,
        /// Their total now.
        total: u64,
    },
}

impl std::fmt::Display for Milestone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Milestone::Hearts { reached, .. } => write!(f, "{reached} hearts"),
            Milestone::Donated { user, reached, .. } => {
                write!(
                    f,
                    "{} donated {reached}",
                    user.nickname.as_deref().unwrap_or(&user.id)
                )
            }
        }
    }
}

/// One donor's running total in this broadcast.
///
/// ```
/// use onair::kit::milestones::Milestones;
///
/// assert!(Milestones::new().donor("u1").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Donor {
    /// The donor, with the nickname of their latest donation.
    pub user: User,
    /// Currency units donated (each donation's `amount`, never multiplied).
    pub donated: u64,
    /// Number of donations.
    pub donations: u64,
    /// The highest multiple of the donation step announced for them.
    #[serde(default)]
    pub announced: u64,
}

/// The stored form of milestones, as written and read (`D`: a donor or a
/// reference to one).
#[derive(Serialize, serde::Deserialize)]
struct StoredMilestones<D> {
    #[serde(default)]
    live_id: Option<u64>,
    #[serde(default)]
    dj_id: Option<String>,
    #[serde(default)]
    hearts: u64,
    #[serde(default)]
    hearts_announced: u64,
    #[serde(default)]
    total_donated: u64,
    #[serde(default = "Vec::new")]
    donors: Vec<D>,
}

/// Milestones and running totals of the current broadcast. See the
/// [module](self) for the rules.
///
/// ```
/// use onair::kit::milestones::Milestones;
///
/// let milestones = Milestones::new().hearts_every(100);
/// assert_eq!((milestones.hearts(), milestones.total_donated()), (0, 0));
/// ```
#[derive(Debug, Clone)]
pub struct Milestones {
    tally: Tally,
    heart_step: Option<NonZeroU64>,
    donation_step: Option<NonZeroU64>,
    cap: usize,
    live_id: Option<u64>,
    dj_id: Option<String>,
    hearts: u64,
    hearts_announced: u64,
    total_donated: u64,
    donors: HashMap<String, Donor>,
}

impl Default for Milestones {
    fn default() -> Self {
        Self {
            tally: Tally::new(),
            heart_step: None,
            donation_step: None,
            cap: DEFAULT_DONOR_CAP,
            live_id: None,
            dj_id: None,
            hearts: 0,
            hearts_announced: 0,
            total_donated: 0,
            donors: HashMap::new(),
        }
    }
}

impl Milestones {
    /// Totals only: no step set, so no milestones until one is.
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().live_id(), None);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Signals every `step` hearts in the broadcast (0: never).
    ///
    /// ```
    /// let milestones = onair::kit::milestones::Milestones::new().hearts_every(100);
    /// assert_eq!(milestones.heart_step(), Some(100));
    /// ```
    pub fn hearts_every(mut self, step: u64) -> Self {
        self.heart_step = NonZeroU64::new(step);
        self
    }

    /// Signals every `step` units of one person's donation total (0: never).
    ///
    /// ```
    /// let milestones = onair::kit::milestones::Milestones::new().donations_every(0);
    /// assert_eq!(milestones.donation_step(), None);
    /// ```
    pub fn donations_every(mut self, step: u64) -> Self {
        self.donation_step = NonZeroU64::new(step);
        self
    }

    /// Remembers at most `cap` donors (at least 1), forgetting the smallest
    /// totals first.
    ///
    /// ```
    /// let milestones = onair::kit::milestones::Milestones::new().with_cap(100);
    /// assert_eq!(milestones.cap(), 100);
    /// ```
    pub fn with_cap(mut self, cap: usize) -> Self {
        self.cap = cap.max(1);
        if self.donors.len() > self.cap {
            let excess = self.donors.len() - self.cap;
            self.forget_smallest(excess);
        }
        self
    }

    /// The heart step, if set.
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().heart_step(), None);
    /// ```
    pub fn heart_step(&self) -> Option<u64> {
        self.heart_step.map(NonZeroU64::get)
    }

    /// The donation step, if set.
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().donation_step(), None);
    /// ```
    pub fn donation_step(&self) -> Option<u64> {
        self.donation_step.map(NonZeroU64::get)
    }

    /// How many donors are remembered at most.
    ///
    /// ```
    /// use onair::kit::milestones::{Milestones, DEFAULT_DONOR_CAP};
    /// assert_eq!(Milestones::new().cap(), DEFAULT_DONOR_CAP);
    /// ```
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Ties the totals to broadcast `live_id`, as
    /// [`Audience::start_broadcast`](super::audience::Audience::start_broadcast):
    /// another id clears them (`true`), the same id keeps them, a first id is
    /// adopted.
    ///
    /// ```
    /// let mut milestones = onair::kit::milestones::Milestones::new();
    /// assert!(!milestones.start_broadcast(1));
    /// assert!(milestones.start_broadcast(2));
    /// ```
    pub fn start_broadcast(&mut self, live_id: u64) -> bool {
        self.tally.start_broadcast(live_id);
        let new = super::is_new_broadcast(self.live_id, live_id);
        if new {
            self.clear();
        }
        self.live_id = Some(live_id);
        new
    }

    /// Forgets the broadcast (an `end` with `LIVE_ENDED` does this). The DJ's
    /// id is kept.
    ///
    /// ```
    /// let mut milestones = onair::kit::milestones::Milestones::new();
    /// milestones.start_broadcast(3);
    /// milestones.end_broadcast();
    /// assert_eq!(milestones.live_id(), None);
    /// ```
    pub fn end_broadcast(&mut self) {
        self.clear();
        self.live_id = None;
    }

    fn clear(&mut self) {
        let dj_id = self.dj_id.take();
        *self = Milestones {
            heart_step: self.heart_step,
            donation_step: self.donation_step,
            cap: self.cap,
            ..Milestones::default()
        };
        self.learn_dj(dj_id);
    }

    /// Tells the (fresh) tally who the DJ is, so it keeps them out.
    fn learn_dj(&mut self, dj_id: Option<String>) {
        if let Some(id) = &dj_id {
            self.tally.record(&Event::Chat(Chat {
                user: User {
                    id: id.clone(),
                    nickname: None,
                },
                is_dj: true,
                message: String::new(),
                sent_time: Timestamp::new(""),
            }));
        }
        self.dj_id = dj_id;
    }

    /// Counts one event (through the tally) and says which milestone it
    /// reached, if any. At most one per event: hearts come from `like`,
    /// donor totals from `donation`.
    ///
    /// ```
    /// use onair::event::{Event, Like, LikeType, User};
    /// use onair::kit::milestones::{Milestone, Milestones};
    /// use onair::proto::time::Timestamp;
    ///
    /// let mut milestones = Milestones::new().hearts_every(100);
    /// let like = Event::Like(Like {
    ///     user: User { id: "u1".into(), nickname: None },
    ///     kind: LikeType::Paid,
    ///     total_amount: 250, // (amount + extraAmount) × combo
    ///     amount: 50,
    ///     extra_amount: 0,
    ///     combo: Some(5),
    ///     time: Timestamp::new("t"),
    /// });
    /// assert_eq!(milestones.on_event(&like), Some(Milestone::Hearts { reached: 200, total: 250 }));
    /// ```
    pub fn on_event(&mut self, event: &Event) -> Option<Milestone> {
        if let Event::End(end) = event {
            if end.reason == EndReason::LiveEnded {
                self.end_broadcast();
            }
            return None;
        }
        let user = event.user()?;
        let before = self
            .tally
            .person(&user.id)
            .map_or((0, 0, 0), |p| (p.hearts, p.donated, p.donations));
        self.tally.record(event);
        if self.tally.dj_id() == Some(user.id.as_str()) {
            if self.dj_id.as_deref() != Some(user.id.as_str()) {
                // Just learned who the DJ is: take back what they counted for.
                self.hearts = self.hearts.saturating_sub(before.0);
                if let Some(donor) = self.donors.remove(&user.id) {
                    self.total_donated = self.total_donated.saturating_sub(donor.donated);
                }
                self.dj_id = Some(user.id.clone());
            }
            return None;
        }
        let after = self.tally.person(&user.id)?;
        match event {
            Event::Like(_) => {
                let added = after.hearts.saturating_sub(before.0);
                self.hearts = self.hearts.saturating_add(added);
                let reached = crossed(self.hearts, self.heart_step, self.hearts_announced)?;
                self.hearts_announced = reached;
                Some(Milestone::Hearts {
                    reached,
                    total: self.hearts,
                })
            }
            Event::Donation(_) => {
                let added = after.donated.saturating_sub(before.1);
                let donations = after.donations.saturating_sub(before.2);
                self.total_donated = self.total_donated.saturating_add(added);
                let step = self.donation_step;
                let donor = self.donor_entry(user);
                donor.donated = donor.donated.saturating_add(added);
                donor.donations = donor.donations.saturating_add(donations);
                let reached = crossed(donor.donated, step, donor.announced)?;
                donor.announced = reached;
                Some(Milestone::Donated {
                    user: donor.user.clone(),
                    reached,
                    total: donor.donated,
                })
            }
            _ => None,
        }
    }

    fn donor_entry(&mut self, user: &User) -> &mut Donor {
        if !self.donors.contains_key(&user.id) && self.donors.len() >= self.cap {
            let batch = (self.cap / 8).max(1);
            self.forget_smallest(batch);
        }
        let donor = self.donors.entry(user.id.clone()).or_insert_with(|| Donor {
            user: user.clone(),
            donated: 0,
            donations: 0,
            announced: 0,
        });
        if user.nickname.is_some() {
            donor.user.nickname.clone_from(&user.nickname);
        }
        donor
    }

    /// Forgets the `count` donors with the smallest totals (ties by `id`).
    fn forget_smallest(&mut self, count: usize) {
        let donors: Vec<(&String, &Donor)> = self.donors.iter().collect();
        let smallest: Vec<String> = ordered(&donors, |(id, d)| (d.donated, id))
            .into_iter()
            .take(count)
            .map(|(id, _)| id.clone())
            .collect();
        for id in smallest {
            self.donors.remove(&id);
        }
    }

    /// The broadcast this belongs to, when known.
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().live_id(), None);
    /// ```
    pub fn live_id(&self) -> Option<u64> {
        self.live_id
    }

    /// The DJ's `id`, once a chat with `isDj` has shown it.
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().dj_id(), None);
    /// ```
    pub fn dj_id(&self) -> Option<&str> {
        self.dj_id.as_deref()
    }

    /// The broadcast's hearts (by `totalAmount`, the DJ's excluded).
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().hearts(), 0);
    /// ```
    pub fn hearts(&self) -> u64 {
        self.hearts
    }

    /// The currency donated over the whole broadcast (spec 6.5: accumulated
    /// from events), including donors who left or were forgotten.
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().total_donated(), 0);
    /// ```
    pub fn total_donated(&self) -> u64 {
        self.total_donated
    }

    /// Person `id`'s running donation total (0 when none), for a thank-you.
    ///
    /// ```
    /// assert_eq!(onair::kit::milestones::Milestones::new().donated_by("u1"), 0);
    /// ```
    pub fn donated_by(&self, id: &str) -> u64 {
        self.donor(id).map_or(0, |d| d.donated)
    }

    /// Person `id`'s donations in this broadcast.
    ///
    /// ```
    /// assert!(onair::kit::milestones::Milestones::new().donor("u1").is_none());
    /// ```
    pub fn donor(&self, id: &str) -> Option<&Donor> {
        self.donors.get(id)
    }

    /// Donors, highest total first (ties by `id`, so the order is stable):
    /// a `!top` answer.
    ///
    /// ```
    /// assert!(onair::kit::milestones::Milestones::new().donors().is_empty());
    /// ```
    pub fn donors(&self) -> Vec<&Donor> {
        let donors: Vec<&Donor> = self.donors.values().collect();
        ordered(&donors, |d| (!d.donated, &d.user.id))
    }

    /// The versioned JSON form to store: `{"format":"onair.milestones",
    /// "version":1,"live_id":…,"dj_id":…,"hearts":…,"hearts_announced":…,
    /// "total_donated":…,"donors":[…]}`, donors by `id`. The steps are
    /// configuration, not state: set them again after loading.
    ///
    /// ```
    /// let json = onair::kit::milestones::Milestones::new().to_json();
    /// assert!(json.starts_with(r#"{"format":"onair.milestones","version":1,"#));
    /// ```
    pub fn to_json(&self) -> String {
        let donors: Vec<&Donor> = self.donors.values().collect();
        #[derive(Serialize)]
        struct Out<'a> {
            format: &'static str,
            version: u32,
            #[serde(flatten)]
            milestones: StoredMilestones<&'a Donor>,
        }
        let out = Out {
            format: MILESTONES_FORMAT,
            version: MILESTONES_VERSION,
            milestones: StoredMilestones {
                live_id: self.live_id,
                dj_id: self.dj_id.clone(),
                hearts: self.hearts,
                hearts_announced: self.hearts_announced,
                total_donated: self.total_donated,
                donors: ordered(&donors, |d| (0, &d.user.id)),
            },
        };
        serde_json::to_string(&out).unwrap_or_default()
    }

    /// Reads the form written by [`to_json`](Milestones::to_json), with no
    /// steps and the default cap. Another `format` or an unknown `version` is
    /// refused with a [`StateError`]. As with the audience, call
    /// [`start_broadcast`](Milestones::start_broadcast) after loading when the
    /// `liveId` is known, so totals of an earlier broadcast are cleared.
    ///
    /// ```
    /// use onair::kit::milestones::Milestones;
    ///
    /// let json = r#"{"format":"onair.milestones","version":1,"hearts":250,"hearts_announced":200}"#;
    /// let milestones = Milestones::from_json(json).unwrap().hearts_every(100);
    /// assert_eq!(milestones.hearts(), 250);
    /// assert!(Milestones::from_json(r#"{"format":"onair.milestones","version":9}"#).is_err());
    /// ```
    pub fn from_json(json: impl AsRef<[u8]>) -> Result<Milestones, StateError> {
        let stored: StoredMilestones<Donor> =
            stored::load(json.as_ref(), MILESTONES_FORMAT, MILESTONES_VERSION)?;
        let mut milestones = Milestones {
            live_id: stored.live_id,
            hearts: stored.hearts,
            hearts_announced: stored.hearts_announced,
            total_donated: stored.total_donated,
            ..Milestones::default()
        };
        if let Some(live_id) = stored.live_id {
            milestones.tally.start_broadcast(live_id);
        }
        milestones.learn_dj(stored.dj_id);
        for donor in stored.donors {
            if milestones.dj_id.as_deref() != Some(donor.user.id.as_str()) {
                milestones.donors.insert(donor.user.id.clone(), donor);
            }
        }
        let cap = milestones.cap;
        Ok(milestones.with_cap(cap))
    }
}

/// The highest multiple of `step` at or below `total`, when it is above what
/// was announced.
fn crossed(total: u64, step: Option<NonZeroU64>, announced: u64) -> Option<u64> {
    let step = step?.get();
    let reached = total / step * step;
    (reached > announced).then_some(reached)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Donation, End, Like, LikeType};
    use proptest::prelude::*;

    fn user(id: &str) -> User {
        User {
            id: id.into(),
            nickname: Some(format!("nick-{id}")),
        }
    }

    fn like(id: &str, total: u64) -> Event {
        Event::Like(Like {
            user: user(id),
            kind: LikeType::Free,
            total_amount: total,
            amount: 1,
            extra_amount: 0,
            combo: None,
            time: Timestamp::new("t"),
        })
    }

    fn donation(id: &str, amount: u64) -> Event {
        Event::Donation(Donation {
            user: user(id),
            amount,
            message: None,
            time: Timestamp::new("t"),
        })
    }

    fn chat(id: &str, is_dj: bool) -> Event {
        Event::Chat(Chat {
            user: user(id),
            is_dj,
            message: "m".into(),
            sent_time: Timestamp::new("t"),
        })
    }

    fn signals(m: &mut Milestones, events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| m.on_event(e))
            .map(|s| match s {
                Milestone::Hearts { reached, total } => format!("hearts {reached}/{total}"),
                Milestone::Donated {
                    user,
                    reached,
                    total,
                } => format!("{} {reached}/{total}", user.id),
            })
            .collect()
    }

    #[test]
    fn each_multiple_once_the_highest_when_several_are_crossed() {
        let mut m = Milestones::new().hearts_every(100);
        let events = [
            like("a", 99),
            like("b", 1),
            like("a", 50),
            like("b", 260),
            like("a", 1),
        ];
        assert_eq!(
            signals(&mut m, &events),
            ["hearts 100/100", "hearts 400/410"]
        );
        assert_eq!(m.hearts(), 411);
    }

    #[test]
    fn donation_milestones_are_per_person_and_totals_never_multiplied() {
        let mut m = Milestones::new().donations_every(1_000);
        let events = [
            donation("a", 600),
            donation("b", 900),
            donation("a", 600),
            donation("b", 50),
            donation("b", 2_100),
        ];
        assert_eq!(signals(&mut m, &events), ["a 1000/1200", "b 3000/3050"]);
        assert_eq!((m.donated_by("a"), m.donated_by("b")), (1_200, 3_050));
        assert_eq!(m.donor("b").map(|d| d.donations), Some(3));
        assert_eq!(m.total_donated(), 4_250);
        let order: Vec<&str> = m.donors().iter().map(|d| d.user.id.as_str()).collect();
        assert_eq!(order, ["b", "a"]);
    }

    #[test]
    fn no_step_no_signal_but_totals_still_count() {
        let mut m = Milestones::new();
        assert!(signals(&mut m, &[like("a", 500), donation("a", 5_000)]).is_empty());
        assert_eq!((m.hearts(), m.donated_by("a")), (500, 5_000));
    }

    #[test]
    fn the_dj_is_kept_out_even_retroactively() {
        let mut m = Milestones::new().hearts_every(10).donations_every(10);
        signals(&mut m, &[like("dj", 5), donation("dj", 5), like("a", 1)]);
        assert_eq!((m.hearts(), m.total_donated()), (6, 5));
        m.on_event(&chat("dj", true));
        assert_eq!(
            (m.hearts(), m.total_donated(), m.donated_by("dj")),
            (1, 0, 0)
        );
        assert!(signals(&mut m, &[like("dj", 100), donation("dj", 100)]).is_empty());
        assert_eq!(m.dj_id(), Some("dj"));
    }

    #[test]
    fn reset_with_the_broadcast() {
        let mut m = Milestones::new().hearts_every(100);
        m.start_broadcast(1);
        signals(
            &mut m,
            &[chat("dj", true), like("a", 150), donation("a", 5)],
        );
        m.on_event(&Event::End(End {
            reason: EndReason::Reconnect,
        }));
        assert!(!m.start_broadcast(1));
        assert_eq!(m.hearts(), 150);
        m.on_event(&Event::End(End {
            reason: EndReason::LiveEnded,
        }));
        assert_eq!((m.hearts(), m.total_donated(), m.live_id()), (0, 0, None));
        assert_eq!(m.heart_step(), Some(100)); // configuration stays
        assert_eq!(signals(&mut m, &[like("a", 100)]), ["hearts 100/100"]);
        assert!(signals(&mut m, &[like("dj", 500)]).is_empty()); // the DJ stays known
        assert!(!m.start_broadcast(2)); // adopted: those hearts were for it
        assert_eq!(signals(&mut m, &[like("a", 100)]), ["hearts 200/200"]);
        assert!(m.start_broadcast(3));
        assert_eq!(m.hearts(), 0);
        assert!(signals(&mut m, &[like("dj", 500)]).is_empty());
    }

    #[test]
    fn a_restart_keeps_totals_and_announces_nothing_twice() {
        let mut m = Milestones::new().hearts_every(100).donations_every(100);
        m.start_broadcast(7);
        signals(
            &mut m,
            &[chat("dj", true), like("a", 250), donation("a", 150)],
        );
        let json = m.to_json();
        let mut r = Milestones::from_json(&json)
            .expect("own output")
            .hearts_every(100)
            .donations_every(100);
        assert_eq!(r.to_json(), json);
        assert_eq!((r.live_id(), r.dj_id()), (Some(7), Some("dj")));
        assert_eq!(
            signals(&mut r, &[like("b", 10), donation("a", 10)]),
            Vec::<String>::new()
        );
        assert_eq!(
            signals(&mut r, &[like("b", 40), donation("a", 40)]),
            ["hearts 300/300", "a 200/200"]
        );
        // The DJ is still kept out after the restart.
        assert!(signals(&mut r, &[like("dj", 1_000)]).is_empty());
    }

    #[test]
    fn donors_are_capped_by_smallest_total() {
        let mut m = Milestones::new().with_cap(8);
        for i in 0..8u64 {
            m.on_event(&donation(&format!("d{i}"), 100 + i));
        }
        m.on_event(&donation("new", 1));
        assert_eq!(m.donors().len(), 8);
        assert_eq!(m.donated_by("d0"), 0); // the smallest was forgotten
        assert_eq!(m.donated_by("new"), 1);
        assert_eq!(m.total_donated(), (100..108).sum::<u64>() + 1);
    }

    #[test]
    fn from_json_refuses_another_format() {
        assert_eq!(
            Milestones::from_json(r#"{"format":"onair.audience","version":1}"#).unwrap_err(),
            StateError::UnknownFormat {
                expected: MILESTONES_FORMAT
            }
        );
    }

    fn event() -> impl Strategy<Value = Event> {
        let id = prop_oneof![Just("a"), Just("b"), Just("c"), Just("dj")];
        prop_oneof![
            (id.clone(), 0u64..300).prop_map(|(id, n)| like(id, n)),
            (id.clone(), 0u64..3_000).prop_map(|(id, n)| donation(id, n)),
            (id, any::<bool>()).prop_map(|(id, is_dj)| chat(id, is_dj && id == "dj")),
        ]
    }

    proptest! {
        #[test]
        fn agrees_with_a_tally_and_signals_each_multiple_once(
            events in prop::collection::vec(event(), 0..80),
            heart_step in 1u64..500,
            donation_step in 1u64..5_000,
            restart_at in 0usize..80,
        ) {
            let mut m = Milestones::new().hearts_every(heart_step).donations_every(donation_step);
            let mut oracle = Tally::new();
            let mut heart_marks = Vec::new();
            let mut donor_marks: HashMap<String, Vec<u64>> = HashMap::new();
            for (i, e) in events.iter().enumerate() {
                if i == restart_at {
                    m = Milestones::from_json(m.to_json())
                        .expect("own output")
                        .hearts_every(heart_step)
                        .donations_every(donation_step);
                }
                oracle.record(e);
                match m.on_event(e) {
                    Some(Milestone::Hearts { reached, total }) => {
                        prop_assert_eq!(reached % heart_step, 0);
                        prop_assert!(reached <= total && total - reached < heart_step);
                        heart_marks.push(reached);
                    }
                    Some(Milestone::Donated { user, reached, total }) => {
                        prop_assert_eq!(reached % donation_step, 0);
                        prop_assert!(reached <= total && total - reached < donation_step);
                        donor_marks.entry(user.id).or_default().push(reached);
                    }
                    None => {}
                }
            }
            // Totals are the tally's. One known difference: hearts the DJ
            // sent before a restart, when the DJ is only revealed after it
            // (the restarted tally never saw them), stay in the total.
            if restart_at >= events.len() {
                prop_assert_eq!(m.hearts(), oracle.total_hearts());
            }
            for (id, totals) in oracle.people() {
                prop_assert_eq!(m.donated_by(id), totals.donated);
            }
            prop_assert_eq!(m.total_donated(), oracle.total_donated());
            // Signals strictly increase: no multiple twice.
            prop_assert!(heart_marks.windows(2).all(|w| w[0] < w[1]));
            for marks in donor_marks.values() {
                prop_assert!(marks.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }
}
