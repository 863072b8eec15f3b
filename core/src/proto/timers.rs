//! App timers as a pure data structure, for the bot's own loop: repeat
//! announcements and reminders need no timers of the author's own, so a
//! reconnect cannot lose them.
//!
//! [`Timers`] holds named timers and answers two questions with the time as
//! an argument: when is the next one due ([`Timers::next_deadline`], folded
//! into the driver's wait), and which one is due now ([`Timers::pop_due`], in
//! deadline order).
//!
//! The rules:
//! - A tag names one timer: setting a tag again replaces its timer.
//! - A repeating timer re-arms from its scheduled time, not from when it was
//!   popped, so it keeps its phase (`first_at + k·period`) however late the
//!   loop runs. After a long pause it fires once, not once per missed period:
//!   the missed ticks are skipped and the next one is the first scheduled
//!   tick after `now`. No bursts.
//! - A timer set [`while_connected`](Timer::while_connected) that falls due
//!   while the stream is not connected is deferred, not dropped: it fires once
//!   at the first `pop_due` that says connected (a repeating one then re-arms
//!   on its schedule as above). A reconnect blip does not lose a 30-minute
//!   announcement. While disconnected such timers give no deadline, since
//!   connecting is what they wait for.
//! - At most [`MAX_TIMERS`] timers; one more is a [`TimerError`], never a
//!   silent drop.

use std::fmt;

/// How many timers a [`Timers`] holds at most.
pub const MAX_TIMERS: usize = 256;

/// The longest tag, in bytes.
pub const MAX_TAG_LEN: usize = 64;

/// Why a timer was not set. A local error: the caller's misuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimerError {
    /// 256 timers are set already (replacing one is fine).
    #[error("timers: {MAX_TIMERS} are set already; cancel one first")]
    TooMany,
    /// The tag is empty, longer than 64 bytes, or holds a
    /// control character (tags travel to C, Python and Node as text).
    #[error("timers: the tag is unusable ({0})")]
    BadTag(&'static str),
    /// A repeating timer with a period of 0 would fire forever.
    #[error("timers: a repeating timer needs a period of at least 1 ms")]
    ZeroPeriod,
}

/// A timer's name: 1 to 64 bytes of text without control
/// characters, so it binds to C (a NUL-free string), Python and Node as a
/// plain string and reads well in logs.
///
/// ```
/// use onair::Tag;
///
/// let tag = Tag::new("announce").unwrap();
/// assert_eq!(tag, "announce");
/// assert_eq!(tag.as_str(), "announce");
/// assert!(Tag::new("a\0b").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(Box<str>);

impl Tag {
    /// Checks and wraps a tag.
    ///
    /// ```
    /// assert!(onair::Tag::new("x".repeat(65)).is_err());
    /// ```
    pub fn new(tag: impl AsRef<str>) -> Result<Tag, TimerError> {
        let tag = tag.as_ref();
        if tag.is_empty() {
            return Err(TimerError::BadTag("empty"));
        }
        if tag.len() > MAX_TAG_LEN {
            return Err(TimerError::BadTag("longer than 64 bytes"));
        }
        if tag.chars().any(char::is_control) {
            return Err(TimerError::BadTag("holds a control character"));
        }
        Ok(Tag(tag.into()))
    }

    /// The tag's text.
    ///
    /// ```
    /// assert_eq!(onair::Tag::new("t").unwrap().as_str(), "t");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Tag {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Tag {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

/// When a timer fires: once or repeatedly, always or only while connected.
/// The bot hosts the timers ([`Bot::set_timer`](crate::Bot::set_timer),
/// [`Bot::every`](crate::Bot::every), [`Bot::schedule`](crate::Bot::schedule))
/// and folds the next deadline into its `Wait`:
///
/// - A tag names one timer: setting a tag again replaces its timer.
/// - A repeating timer re-arms from its scheduled time, not from when it
///   fired, so it keeps its phase (`first_at + k·period`) however late the
///   loop runs. After a long pause it fires once, not once per missed
///   period: the next tick is the first scheduled one after now. No bursts.
/// - A timer set [`while_connected`](Timer::while_connected) that falls due
///   while the stream is not connected is deferred, not dropped: it fires
///   once when the stream is connected again (a repeating one then re-arms
///   on its schedule). A reconnect blip does not lose a 30-minute
///   announcement.
/// - At most 256 timers; one more is a [`TimerError`], never a silent drop.
///
/// ```
/// use onair::Timer;
///
/// let once = Timer::at(1_000);
/// let repeat = Timer::every(60_000, 0).while_connected();
/// assert_ne!(once, repeat);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timer {
    at_ms: u64,
    period_ms: Option<u64>,
    while_connected: bool,
}

impl Timer {
    /// Fires once, at `at_ms` (unix milliseconds) or at the first poll
    /// after it.
    ///
    /// ```
    /// let timer = onair::Timer::at(5);
    /// # let _ = timer;
    /// ```
    pub fn at(at_ms: u64) -> Timer {
        Timer {
            at_ms,
            period_ms: None,
            while_connected: false,
        }
    }

    /// Fires at `first_at_ms`, then every `period_ms` on that schedule
    /// (a period of 0 is refused: [`TimerError::ZeroPeriod`]).
    ///
    /// ```
    /// let timer = onair::Timer::every(1_000, 0);
    /// # let _ = timer;
    /// ```
    pub fn every(period_ms: u64, first_at_ms: u64) -> Timer {
        Timer {
            at_ms: first_at_ms,
            period_ms: Some(period_ms),
            while_connected: false,
        }
    }

    /// Fires only while the stream is connected; when due while disconnected
    /// it waits for the connection, then fires once.
    pub fn while_connected(mut self) -> Timer {
        self.while_connected = true;
        self
    }
}

#[derive(Debug, Clone)]
struct Entry {
    tag: Tag,
    timer: Timer,
    /// Registration order, to break ties between equal deadlines.
    seq: u64,
}

impl Entry {
    fn eligible(&self, connected: bool) -> bool {
        connected || !self.timer.while_connected
    }
}

/// The set of timers a bot's loop hosts. See the [module](self) for the rules.
#[derive(Debug, Clone, Default)]
pub struct Timers {
    entries: Vec<Entry>,
    seq: u64,
}

impl Timers {
    /// No timers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets timer `tag`, replacing any timer of that tag.
    pub fn set(&mut self, tag: &str, timer: Timer) -> Result<(), TimerError> {
        let tag = Tag::new(tag)?;
        if timer.period_ms == Some(0) {
            return Err(TimerError::ZeroPeriod);
        }
        self.seq = self.seq.wrapping_add(1);
        if let Some(entry) = self.entries.iter_mut().find(|e| e.tag == tag) {
            entry.timer = timer;
            entry.seq = self.seq;
            return Ok(());
        }
        if self.entries.len() >= MAX_TIMERS {
            return Err(TimerError::TooMany);
        }
        self.entries.push(Entry {
            tag,
            timer,
            seq: self.seq,
        });
        Ok(())
    }

    /// Fires once at `at_ms`: `set(tag, Timer::at(at_ms))`.
    pub fn schedule(&mut self, at_ms: u64, tag: &str) -> Result<(), TimerError> {
        self.set(tag, Timer::at(at_ms))
    }

    /// Fires at `first_at_ms`, then every `period_ms`:
    /// `set(tag, Timer::every(period_ms, first_at_ms))`.
    pub fn every(&mut self, period_ms: u64, tag: &str, first_at_ms: u64) -> Result<(), TimerError> {
        self.set(tag, Timer::every(period_ms, first_at_ms))
    }

    /// Removes timer `tag`; `false` when there was none.
    pub fn cancel(&mut self, tag: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.tag != tag);
        self.entries.len() != before
    }

    /// When timer `tag` is next due, if it is set.
    #[cfg(test)]
    pub(crate) fn deadline(&self, tag: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|e| e.tag == tag)
            .map(|e| e.timer.at_ms)
    }

    /// The earliest time a timer is due, counting only the timers that may
    /// fire given `connected` (while disconnected, a `while_connected` timer
    /// waits for the connection, not for a time). It may be in the past: then
    /// [`pop_due`](Timers::pop_due) has something now.
    pub fn next_deadline(&self, connected: bool) -> Option<u64> {
        self.entries
            .iter()
            .filter(|e| e.eligible(connected))
            .map(|e| e.timer.at_ms)
            .min()
    }

    /// The next timer due at `now_ms` that may fire given `connected`, earliest
    /// deadline first (ties in the order they were set). A one-shot timer is
    /// removed; a repeating one re-arms on its schedule (see the
    /// [module](self) for the catch-up rule). Call it until `None`.
    pub fn pop_due(&mut self, now_ms: u64, connected: bool) -> Option<Tag> {
        let index = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.eligible(connected) && e.timer.at_ms <= now_ms)
            .min_by_key(|(_, e)| (e.timer.at_ms, e.seq))
            .map(|(i, _)| i)?;
        let entry = &mut self.entries[index];
        let Some(period) = entry.timer.period_ms else {
            return Some(self.entries.swap_remove(index).tag);
        };
        // The first tick on the schedule after `now` (period >= 1, checked in `set`).
        let missed = (now_ms - entry.timer.at_ms) / period;
        let next = missed
            .checked_add(1)
            .and_then(|n| n.checked_mul(period))
            .and_then(|delta| entry.timer.at_ms.checked_add(delta));
        match next {
            Some(next) => {
                entry.timer.at_ms = next;
                Some(entry.tag.clone())
            }
            // No tick left before the end of u64 time: it fires this last time.
            None => Some(self.entries.swap_remove(index).tag),
        }
    }

    /// How many timers are set.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no timer is set.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tags set, in no particular order.
    #[cfg(test)]
    pub(crate) fn tags(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.tag.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(timers: &mut Timers, now: u64, connected: bool) -> Vec<String> {
        std::iter::from_fn(|| timers.pop_due(now, connected))
            .map(|t| t.to_string())
            .collect()
    }

    #[test]
    fn fires_in_deadline_order_ties_in_set_order() {
        let mut t = Timers::new();
        t.schedule(30, "c").unwrap();
        t.schedule(10, "a").unwrap();
        t.schedule(10, "b").unwrap();
        assert_eq!(drain(&mut t, 29, true), ["a", "b"]);
        assert_eq!(drain(&mut t, 100, true), ["c"]);
        assert!(t.is_empty());
    }

    #[test]
    fn repeating_keeps_its_phase_and_never_bursts() {
        let mut t = Timers::new();
        t.every(100, "r", 1_000).unwrap();
        assert_eq!(drain(&mut t, 999, true), Vec::<String>::new());
        assert_eq!(drain(&mut t, 1_050, true), ["r"]);
        assert_eq!(t.deadline("r"), Some(1_100)); // from the schedule, not from 1_050
        assert_eq!(drain(&mut t, 10_000, true), ["r"]); // 89 missed ticks: one firing
        assert_eq!(t.deadline("r"), Some(10_100));
        assert_eq!(drain(&mut t, 10_100, true), ["r"]);
        assert_eq!(t.deadline("r"), Some(10_200));
    }

    #[test]
    fn while_connected_is_deferred_then_fires_once() {
        let mut t = Timers::new();
        t.set("announce", Timer::every(100, 0).while_connected())
            .unwrap();
        t.schedule(50, "always").unwrap();
        assert_eq!(t.next_deadline(false), Some(50));
        assert_eq!(drain(&mut t, 350, false), ["always"]);
        assert_eq!(t.next_deadline(false), None);
        assert_eq!(t.next_deadline(true), Some(0));
        assert_eq!(drain(&mut t, 360, true), ["announce"]);
        assert_eq!(t.deadline("announce"), Some(400));
    }

    #[test]
    fn set_again_replaces_cancel_removes() {
        let mut t = Timers::new();
        t.schedule(10, "x").unwrap();
        t.every(5, "x", 20).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(drain(&mut t, 12, true), Vec::<String>::new());
        assert!(t.cancel("x"));
        assert!(!t.cancel("x"));
        assert_eq!(drain(&mut t, 100, true), Vec::<String>::new());
    }

    #[test]
    fn bounded_count_and_checked_tags() {
        let mut t = Timers::new();
        for i in 0..MAX_TIMERS {
            t.schedule(i as u64, &format!("t{i}")).unwrap();
        }
        assert_eq!(t.schedule(0, "one more"), Err(TimerError::TooMany));
        assert_eq!(t.schedule(5, "t0"), Ok(())); // replacing is fine
        assert_eq!(t.len(), MAX_TIMERS);
        assert!(matches!(t.schedule(0, "a\nb"), Err(TimerError::BadTag(_))));
        assert!(matches!(
            t.schedule(0, &"x".repeat(65)),
            Err(TimerError::BadTag(_))
        ));
        assert_eq!(
            TimerError::TooMany.to_string(),
            "timers: 256 are set already; cancel one first"
        );
    }

    #[test]
    fn the_end_of_time_does_not_loop() {
        let mut t = Timers::new();
        t.every(10, "r", u64::MAX - 5).unwrap();
        assert_eq!(drain(&mut t, u64::MAX, true), ["r"]);
        assert!(t.is_empty());
        t.every(u64::MAX, "big", 1).unwrap();
        assert_eq!(drain(&mut t, 2, true), ["big"]);
        assert!(t.is_empty());
    }

    proptest! {
        #[test]
        fn never_due_twice_at_one_time_and_next_is_after_now(
            ops in prop::collection::vec((0u64..2_000, 1u64..500, any::<bool>(), any::<bool>()), 1..20),
            steps in prop::collection::vec((0u64..3_000, any::<bool>()), 1..30),
        ) {
            let mut t = Timers::new();
            for (i, (at, period, repeat, gated)) in ops.iter().enumerate() {
                let timer = if *repeat { Timer::every(*period, *at) } else { Timer::at(*at) };
                let timer = if *gated { timer.while_connected() } else { timer };
                t.set(&format!("t{i}"), timer).unwrap();
            }
            let mut now = 0;
            for (advance, connected) in steps {
                now += advance;
                let fired = drain(&mut t, now, connected);
                // Each timer fires at most once per drain (no bursts) …
                let mut unique = fired.clone();
                unique.sort();
                unique.dedup();
                prop_assert_eq!(unique.len(), fired.len());
                // … and afterwards nothing eligible is due at or before now.
                prop_assert!(t.next_deadline(connected).is_none_or(|d| d > now));
            }
        }
    }
}

/// The examples once in the docs of this crate-private module, kept as tests.
#[cfg(test)]
mod examples {
    #[test]
    fn module() {
        use super::Timers;
        use crate::Timer;

        const MINUTE: u64 = 60_000;
        let mut timers = Timers::new();
        timers
            .set("announce", Timer::every(30 * MINUTE, 0).while_connected())
            .unwrap();
        timers.schedule(5 * MINUTE, "remind").unwrap();

        assert_eq!(timers.next_deadline(true), Some(0));
        assert_eq!(timers.pop_due(0, true).unwrap(), "announce");
        assert_eq!(timers.pop_due(0, true), None);
        assert_eq!(timers.next_deadline(true), Some(5 * MINUTE));
        // The loop was asleep for two hours: one announcement, one reminder.
        let now = 120 * MINUTE + 1;
        assert_eq!(timers.pop_due(now, true).unwrap(), "remind");
        assert_eq!(timers.pop_due(now, true).unwrap(), "announce");
        assert_eq!(timers.pop_due(now, true), None);
        assert_eq!(timers.next_deadline(true), Some(150 * MINUTE)); // on its schedule
    }

    #[test]
    fn timererror() {
        use super::Timers;
        use crate::TimerError;

        assert_eq!(
            Timers::new().schedule(0, ""),
            Err(TimerError::BadTag("empty"))
        );
    }

    #[test]
    fn while_connected() {
        use super::Timers;
        use crate::Timer;

        let mut timers = Timers::new();
        timers.set("hi", Timer::at(0).while_connected()).unwrap();
        assert_eq!(timers.pop_due(10, false), None);
        assert_eq!(timers.pop_due(10, true).unwrap(), "hi");
    }

    #[test]
    fn timers() {
        use super::Timers;

        let mut timers = Timers::new();
        timers.schedule(100, "once").unwrap();
        assert!(timers.cancel("once"));
        assert!(timers.is_empty());
    }

    #[test]
    fn new() {
        assert_eq!(super::Timers::new().next_deadline(true), None);
    }

    #[test]
    fn set() {
        use super::Timers;
        use crate::{Timer, TimerError};

        let mut timers = Timers::new();
        timers.set("a", Timer::at(50)).unwrap();
        timers.set("a", Timer::at(70)).unwrap(); // replaced
        assert_eq!(timers.deadline("a"), Some(70));
        assert_eq!(
            timers.set("b", Timer::every(0, 0)),
            Err(TimerError::ZeroPeriod)
        );
    }

    #[test]
    fn schedule() {
        let mut timers = super::Timers::new();
        timers.schedule(1_000, "remind").unwrap();
        assert_eq!(timers.pop_due(999, true), None);
        assert_eq!(timers.pop_due(1_000, true).unwrap(), "remind");
    }

    #[test]
    fn every() {
        let mut timers = super::Timers::new();
        timers.every(1_000, "tick", 500).unwrap();
        assert_eq!(timers.pop_due(500, true).unwrap(), "tick");
        assert_eq!(timers.next_deadline(true), Some(1_500));
    }

    #[test]
    fn cancel() {
        assert!(!super::Timers::new().cancel("none"));
    }

    #[test]
    fn deadline() {
        let mut timers = super::Timers::new();
        timers.schedule(7, "t").unwrap();
        assert_eq!(timers.deadline("t"), Some(7));
    }

    #[test]
    fn next_deadline() {
        use super::Timers;
        use crate::Timer;

        let mut timers = Timers::new();
        timers.set("chat", Timer::at(10).while_connected()).unwrap();
        assert_eq!(timers.next_deadline(false), None);
        assert_eq!(timers.next_deadline(true), Some(10));
    }

    #[test]
    fn pop_due() {
        let mut timers = super::Timers::new();
        timers.schedule(20, "b").unwrap();
        timers.schedule(10, "a").unwrap();
        assert_eq!(timers.pop_due(30, true).unwrap(), "a");
        assert_eq!(timers.pop_due(30, true).unwrap(), "b");
        assert_eq!(timers.pop_due(30, true), None);
    }

    #[test]
    fn len() {
        assert_eq!(super::Timers::new().len(), 0);
    }

    #[test]
    fn is_empty() {
        assert!(super::Timers::new().is_empty());
    }

    #[test]
    fn tags() {
        let mut timers = super::Timers::new();
        timers.schedule(1, "x").unwrap();
        assert_eq!(timers.tags().collect::<Vec<_>>(), ["x"]);
    }
}
