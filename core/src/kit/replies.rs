//! Configured replies: the texts the bot says by itself (welcome, welcome
//! back, thanks, milestones, each command's answer), their kinds, how
//! long each kind stays worth saying, and the filling of their
//! placeholders.
//!
//! ```toml
//! [replies]
//! welcome = "Welcome, {nickname}! 🎧"          # a person's first arrival
//! welcome_many = "Welcome, {nicknames}! 🎧"    # several merged (default: welcome)
//! welcome_back = "Welcome back, {nickname}!"
//! thanks = "Thank you, {nickname}!"            # each donation
//! hearts = "{reached} hearts tonight! 💜"
//! donated = "{nickname} has given {reached} tonight!"
//! no_donors = "No donations yet tonight."      # what {top} says without donors
//! and = " and "                                # "Ana, 민지 and Jörg"
//!
//! [replies.commands]
//! top = "Top donors: {top}"                    # {nickname}, {rest}, {top}
//!
//! [replies.fresh_ms]                           # dropped (with a notice) when not out by then
//! welcome = 60000
//! thanks = 180000
//! ```
//!
//! Filling is one pass: a value is never read for placeholders (a nickname
//! `{rest}` stays text). Each value is cut between grapheme clusters so the
//! filled text is one chat message (at most 200 UTF-16 units); an empty
//! text says nothing.
//!
//! ```
//! use onair::kit::replies::fill;
//! assert_eq!(fill("Hi {nickname}!", &[("nickname", "{rest}")]), "Hi {rest}!");
//! let long = fill("Hi {nickname}!", &[("nickname", &"가".repeat(100_000))]);
//! assert!(onair::kit::text::utf16_len(&long) <= 200);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::text::{truncate, utf16_len};
use crate::proto::chat::CHAT_MAX_UTF16;
use crate::wire::name_enum;

name_enum! {
/// What a reply is for: its freshness, and whether replies of its kind may
/// be merged into one message (welcome, welcome back, thanks).
pub enum ReplyKind {
    /// A person's first arrival in a broadcast.
    Welcome = "welcome",
    /// A return after the configured absence.
    WelcomeBack = "welcome_back",
    /// A donation.
    Thanks = "thanks",
    /// A milestone (hearts, a person's donations): never merged.
    Milestone = "milestone",
    /// A command's answer: never merged.
    Command = "command",
}
}

impl ReplyKind {
    /// Every kind, in the order counters list them.
    pub const ALL: [ReplyKind; 5] = [
        ReplyKind::Welcome,
        ReplyKind::WelcomeBack,
        ReplyKind::Thanks,
        ReplyKind::Milestone,
        ReplyKind::Command,
    ];

    /// Whether replies of this kind waiting together go out as one message.
    pub fn mergeable(self) -> bool {
        matches!(
            self,
            ReplyKind::Welcome | ReplyKind::WelcomeBack | ReplyKind::Thanks
        )
    }
}

/// How long a reply of each kind may wait for the chat limit (ms) before it
/// is dropped, with a notice, instead of going out late.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FreshConfig {
    /// Welcomes (default 60 000).
    #[serde(default = "minute")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub welcome: u64,
    /// Welcomes back (default 60 000).
    #[serde(default = "minute")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub welcome_back: u64,
    /// Thanks (default 180 000).
    #[serde(default = "three_minutes")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub thanks: u64,
    /// Milestones (default 120 000).
    #[serde(default = "two_minutes")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub milestone: u64,
    /// Command answers (default 30 000).
    #[serde(default = "half_minute")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub command: u64,
}

fn minute() -> u64 {
    60_000
}
fn two_minutes() -> u64 {
    120_000
}
fn three_minutes() -> u64 {
    180_000
}
fn half_minute() -> u64 {
    30_000
}

impl Default for FreshConfig {
    fn default() -> Self {
        FreshConfig {
            welcome: minute(),
            welcome_back: minute(),
            thanks: three_minutes(),
            milestone: two_minutes(),
            command: half_minute(),
        }
    }
}

impl FreshConfig {
    /// The freshness of `kind` (ms).
    pub fn of(&self, kind: ReplyKind) -> u64 {
        match kind {
            ReplyKind::Welcome => self.welcome,
            ReplyKind::WelcomeBack => self.welcome_back,
            ReplyKind::Thanks => self.thanks,
            ReplyKind::Milestone => self.milestone,
            ReplyKind::Command => self.command,
        }
    }
}

/// The replies the bot says by itself (the same keys as `onair host`'s
/// `[bot.replies]`). Every text is optional; the defaults are below. An
/// empty text says nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RepliesConfig {
    /// A person's first arrival (`{nickname}`); default `Welcome, {nickname}! 🎧`.
    #[serde(default = "d_welcome")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub welcome: String,
    /// A return (`{nickname}`); default `Welcome back, {nickname}!`.
    #[serde(default = "d_welcome_back")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub welcome_back: String,
    /// Each donation (`{nickname}`); default `Thank you, {nickname}!`.
    #[serde(default = "d_thanks")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub thanks: String,
    /// A hearts milestone (`{reached}`); default `{reached} hearts tonight! 💜`.
    #[serde(default = "d_hearts")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub hearts: String,
    /// A person's donation milestone (`{nickname}`, `{reached}`).
    #[serde(default = "d_donated")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub donated: String,
    /// What `{top}` says when nobody donated yet.
    #[serde(default = "d_no_donors")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub no_donors: String,
    /// An answer per configured command name (`{nickname}`, `{rest}`: the
    /// text after the name, `{top}`: the broadcast's top ten donors).
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub commands: BTreeMap<String, String>,
    /// Several welcomes in one message (`{nicknames}`); default: `welcome`
    /// with `{nickname}` read as `{nicknames}`.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub welcome_many: Option<String>,
    /// Several welcomes back in one message (`{nicknames}`).
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub welcome_back_many: Option<String>,
    /// Several thanks in one message (`{nicknames}`).
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub thanks_many: Option<String>,
    /// Joins the last name to the others (default `" and "`); the others
    /// are joined by `", "`.
    #[serde(default = "d_and", rename = "and")]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub and: String,
    /// How long each kind stays worth saying.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(as = "Option<_>", optional))]
    pub fresh_ms: FreshConfig,
}

fn d_welcome() -> String {
    "Welcome, {nickname}! 🎧".to_owned()
}
fn d_welcome_back() -> String {
    "Welcome back, {nickname}!".to_owned()
}
fn d_thanks() -> String {
    "Thank you, {nickname}!".to_owned()
}
fn d_hearts() -> String {
    "{reached} hearts tonight! 💜".to_owned()
}
fn d_donated() -> String {
    "{nickname} has given {reached} tonight!".to_owned()
}
fn d_no_donors() -> String {
    "No donations yet tonight.".to_owned()
}
fn d_and() -> String {
    " and ".to_owned()
}

impl Default for RepliesConfig {
    fn default() -> Self {
        RepliesConfig {
            welcome: d_welcome(),
            welcome_back: d_welcome_back(),
            thanks: d_thanks(),
            hearts: d_hearts(),
            donated: d_donated(),
            no_donors: d_no_donors(),
            commands: BTreeMap::new(),
            welcome_many: None,
            welcome_back_many: None,
            thanks_many: None,
            and: d_and(),
            fresh_ms: FreshConfig::default(),
        }
    }
}

const NICKNAME: &[&str] = &["nickname"];
const NICKNAMES: &[&str] = &["nicknames", "nickname"];

impl RepliesConfig {
    /// The text for several people of a mergeable `kind` (`{nicknames}`;
    /// `{nickname}` is read the same), `None` for a kind never merged or
    /// whose text for many is empty (each reply then goes out as its own:
    /// `thanks = ""` silences the configured thanks, a handler's own still
    /// go out).
    pub fn many(&self, kind: ReplyKind) -> Option<&str> {
        let (many, one) = match kind {
            ReplyKind::Welcome => (&self.welcome_many, &self.welcome),
            ReplyKind::WelcomeBack => (&self.welcome_back_many, &self.welcome_back),
            ReplyKind::Thanks => (&self.thanks_many, &self.thanks),
            ReplyKind::Milestone | ReplyKind::Command => return None,
        };
        Some(many.as_deref().unwrap_or(one)).filter(|t| !t.trim().is_empty())
    }

    /// Checks every text's placeholders, its length without them, and that
    /// each command text answers a configured command. `key` is where the
    /// replies sit (`replies`).
    pub(crate) fn validate(&self, key: &str, commands: &[String]) -> Result<(), (String, String)> {
        let at = |name: &str| format!("{key}.{name}");
        let texts: [(&str, &str, &[&str]); 6] = [
            ("welcome", &self.welcome, NICKNAME),
            ("welcome_back", &self.welcome_back, NICKNAME),
            ("thanks", &self.thanks, NICKNAME),
            ("hearts", &self.hearts, &["reached"]),
            ("donated", &self.donated, &["nickname", "reached"]),
            ("no_donors", &self.no_donors, &[]),
        ];
        for (name, text, allowed) in texts {
            check(text, allowed).map_err(|m| (at(name), m))?;
        }
        for (name, text) in [
            ("welcome_many", &self.welcome_many),
            ("welcome_back_many", &self.welcome_back_many),
            ("thanks_many", &self.thanks_many),
        ] {
            if let Some(text) = text {
                check(text, NICKNAMES).map_err(|m| (at(name), m))?;
            }
        }
        check(&self.and, &[]).map_err(|m| (at("and"), m))?;
        if utf16_len(&self.and) > 20 {
            return Err((at("and"), "at most 20 UTF-16 units".to_owned()));
        }
        for (name, text) in &self.commands {
            let key = at(&format!("commands.{name}"));
            if !commands.iter().any(|c| c == name) {
                return Err((key, "no such command in the kit's commands".to_owned()));
            }
            check(text, &["nickname", "rest", "top"]).map_err(|m| (key, m))?;
        }
        for kind in ReplyKind::ALL {
            if self.fresh_ms.of(kind) == 0 {
                return Err((
                    at(&format!("fresh_ms.{kind}")),
                    "must be above zero".to_owned(),
                ));
            }
        }
        Ok(())
    }
}

/// One piece of a template: text, or a placeholder's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Slot(&'a str),
}

/// A template's pieces: `{name}` (a lowercase ASCII word with `_`) is a
/// placeholder; every other brace is text.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    let mut text_start = 0;
    let mut offset = 0;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let word_len = after
            .bytes()
            .take_while(|b| b.is_ascii_lowercase() || *b == b'_')
            .count();
        if word_len > 0 && after.as_bytes().get(word_len) == Some(&b'}') {
            let start = offset + open;
            if start > text_start {
                out.push(Piece::Text(&template[text_start..start]));
            }
            out.push(Piece::Slot(&after[..word_len]));
            let consumed = open + 1 + word_len + 1;
            offset += consumed;
            text_start = offset;
            rest = &rest[consumed..];
        } else {
            offset += open + 1;
            rest = &rest[open + 1..];
        }
    }
    if text_start < template.len() {
        out.push(Piece::Text(&template[text_start..]));
    }
    out
}

/// A template's own text (its placeholders left out) must leave room in
/// one chat message, and name only `allowed` placeholders.
fn check(template: &str, allowed: &[&str]) -> Result<(), String> {
    let mut fixed = 0;
    for piece in pieces(template) {
        match piece {
            Piece::Text(t) => fixed += utf16_len(t),
            Piece::Slot(name) if allowed.contains(&name) => {}
            Piece::Slot(name) => {
                return Err(if allowed.is_empty() {
                    format!("unknown placeholder {{{name}}} (this text takes none)")
                } else {
                    let names: Vec<String> = allowed.iter().map(|a| format!("{{{a}}}")).collect();
                    format!(
                        "unknown placeholder {{{name}}} (this text takes {})",
                        names.join(", ")
                    )
                })
            }
        }
    }
    if fixed > CHAT_MAX_UTF16 - 20 {
        return Err(format!(
            "{fixed} UTF-16 units without its values: a chat message holds {CHAT_MAX_UTF16}"
        ));
    }
    Ok(())
}

/// Fills `template` in one pass: each placeholder named in `values` gets
/// its value, cut between grapheme clusters (with `…`) so the whole is at
/// most one chat message; placeholders not given stay as written, and a
/// value is never read for placeholders. The room left by the template's
/// own text is shared among the values, the short ones first.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let pieces = pieces(template);
    let value_of = |name: &str| values.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    let mut fixed = 0;
    let mut slots: Vec<(usize, usize)> = Vec::new(); // (piece index, value length)
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Text(t) => fixed += utf16_len(t),
            Piece::Slot(name) => match value_of(name) {
                Some(v) => slots.push((i, utf16_len(v))),
                None => fixed += utf16_len(name) + 2,
            },
        }
    }
    // Water-filling: a value shorter than an even share keeps its length,
    // the rest share what is left (no sort: each sort instance is kilobytes
    // of the WebAssembly module).
    let mut room = CHAT_MAX_UTF16.saturating_sub(fixed);
    let mut budgets: Vec<Option<usize>> = vec![None; pieces.len()];
    let mut left = slots.len();
    while left > 0 {
        let share = room / left;
        let mut settled = false;
        for &(i, len) in &slots {
            if budgets[i].is_none() && len <= share {
                budgets[i] = Some(len);
                room -= len;
                left -= 1;
                settled = true;
            }
        }
        if !settled {
            for &(i, _) in &slots {
                budgets[i].get_or_insert(share);
            }
            break;
        }
    }
    let mut out = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Slot(name) => match value_of(name) {
                Some(v) => out.push_str(&truncate(v, budgets[i].unwrap_or(0), "…")),
                None => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            },
        }
    }
    out
}

/// The longest a name in a merged message may be (UTF-16 units), so one
/// long nickname does not keep everyone else out.
pub const MERGED_NAME_MAX: usize = 40;

/// Fills a text for several people: as many of `names` (in order) as fit in
/// one chat message, joined by `", "` and `and` before the last. Returns the
/// text and how many names it holds (at least one when `names` is not
/// empty).
///
/// ```
/// use onair::kit::replies::fill_many;
/// let (text, n) = fill_many("Welcome, {nicknames}! 🎧", &["Ana", "민지", "Jörg"], " and ");
/// assert_eq!((text.as_str(), n), ("Welcome, Ana, 민지 and Jörg! 🎧", 3));
/// ```
pub fn fill_many(template: &str, names: &[&str], and: &str) -> (String, usize) {
    let cut: Vec<String> = names
        .iter()
        .map(|n| truncate(n, MERGED_NAME_MAX, "…"))
        .collect();
    let join = |k: usize| -> String {
        match k {
            0 => String::new(),
            1 => cut[0].clone(),
            _ => format!("{}{and}{}", cut[..k - 1].join(", "), cut[k - 1]),
        }
    };
    let filled = |k: usize| {
        let joined = join(k);
        fill(template, &[("nicknames", &joined), ("nickname", &joined)])
    };
    let fixed = utf16_len(&fill(template, &[("nicknames", ""), ("nickname", "")]));
    let slots = pieces(template)
        .iter()
        .filter(|p| matches!(p, Piece::Slot("nicknames" | "nickname")))
        .count()
        .max(1);
    let mut best = 1.min(cut.len());
    for k in 2..=cut.len() {
        // Whole names only: a cut list is never sent.
        if fixed + slots * utf16_len(&join(k)) > CHAT_MAX_UTF16 {
            break;
        }
        best = k;
    }
    (filled(best), best)
}

/// A reply waiting for the chat limit, as the kit state stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QueuedReply {
    /// Its kind.
    pub kind: ReplyKind,
    /// Who it names, when it names someone (merging needs it).
    #[serde(default)]
    pub user: Option<crate::event::User>,
    /// The text when it goes out alone.
    pub text: String,
    /// When it was queued (unix ms).
    pub queued_ms: u64,
    /// After this it is dropped, not sent (unix ms).
    pub deadline_ms: u64,
    /// The replies it stands for: more than one when later milestones about
    /// the same replaced their text into it (counted sent or dropped as
    /// that many).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub covers: u64,
}

impl QueuedReply {
    /// Whether `other` is a milestone about the same as this one (the
    /// room's hearts, or one person's gifts): the later replaces the earlier.
    pub(crate) fn same_milestone(&self, other: &QueuedReply) -> bool {
        fn about(r: &QueuedReply) -> Option<&str> {
            r.user.as_ref().map(|u| u.id.as_str())
        }
        self.kind == ReplyKind::Milestone
            && other.kind == ReplyKind::Milestone
            && about(self) == about(other)
    }

    /// Takes `later`'s text, person and freshness, and stands for its
    /// replies too.
    pub(crate) fn absorb(&mut self, later: QueuedReply) {
        self.text = later.text;
        self.user = later.user;
        self.deadline_ms = later.deadline_ms;
        self.covers += later.covers;
    }
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::KitConfig;
    use proptest::prelude::*;

    #[test]
    fn placeholders_are_found_and_other_braces_are_text() {
        assert_eq!(
            pieces("a {b} {C} {} {x y} {c_d}}"),
            [
                Piece::Text("a "),
                Piece::Slot("b"),
                Piece::Text(" {C} {} {x y} "),
                Piece::Slot("c_d"),
                Piece::Text("}"),
            ]
        );
    }

    #[test]
    fn substitution_is_one_pass() {
        assert_eq!(
            fill(
                "!{nickname}: {rest}",
                &[("nickname", "{rest}"), ("rest", "{nickname}")]
            ),
            "!{rest}: {nickname}"
        );
        assert_eq!(fill("{top}", &[("nickname", "x")]), "{top}");
    }

    #[test]
    fn a_huge_value_is_cut_to_one_message_between_graphemes() {
        let nick = "👩‍👩‍👧".repeat(20_000); // 100+ KB
        let text = fill("Welcome, {nickname}! 🎧", &[("nickname", &nick)]);
        assert!(utf16_len(&text) <= CHAT_MAX_UTF16, "{}", utf16_len(&text));
        assert!(text.starts_with("Welcome, 👩‍👩‍👧"));
        assert!(text.ends_with("…! 🎧"), "{text}");
        assert_eq!(crate::kit::text::split(&text).len(), 1);
        // Two values share the room; the short one whole.
        let text = fill(
            "{nickname}: {rest}",
            &[("nickname", "Ana"), ("rest", &"x".repeat(500))],
        );
        assert!(text.starts_with("Ana: xxx") && utf16_len(&text) == CHAT_MAX_UTF16);
    }

    #[test]
    fn config_mistakes_name_the_key() {
        for (text, key) in [
            (r#"{"replies":{"welcome":"Hi {nick}"}}"#, "replies.welcome"),
            (r#"{"replies":{"hearts":"{nickname}"}}"#, "replies.hearts"),
            (
                r#"{"replies":{"thanks_many":"{top}"}}"#,
                "replies.thanks_many",
            ),
            (r#"{"replies":{"no_donors":"{top}"}}"#, "replies.no_donors"),
            (
                r#"{"replies":{"commands":{"bye":"x"}}}"#,
                "replies.commands.bye",
            ),
            (
                r#"{"commands":[{"name":"top"}],"replies":{"commands":{"top":"{total}"}}}"#,
                "replies.commands.top",
            ),
            (
                r#"{"replies":{"fresh_ms":{"thanks":0}}}"#,
                "replies.fresh_ms.thanks",
            ),
            (
                r#"{"replies":{"fresh_ms":{"wave":1}}}"#,
                "replies.fresh_ms.wave",
            ),
            (r#"{"replies":{"welcom":"x"}}"#, "replies.welcom"),
        ] {
            let e = KitConfig::from_json(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
        }
        let long = format!(r#"{{"replies":{{"welcome":"{}"}}}}"#, "x".repeat(190));
        assert_eq!(
            KitConfig::from_json(&long).unwrap_err().key,
            "replies.welcome"
        );
        let ok = KitConfig::from_json(
            r#"{"commands":[{"name":"top"}],"replies":{"commands":{"top":"{nickname}: {top} {rest}"},"welcome_many":"Hi {nicknames}"}}"#,
        )
        .unwrap();
        let replies = ok.replies.unwrap();
        assert_eq!(replies.fresh_ms, FreshConfig::default());
        assert_eq!(replies.many(ReplyKind::Welcome), Some("Hi {nicknames}"));
        assert_eq!(
            replies.many(ReplyKind::Thanks),
            Some("Thank you, {nickname}!")
        );
        assert_eq!(replies.many(ReplyKind::Command), None);
    }

    #[test]
    fn merged_names_pack_in_order_within_one_message() {
        let names = ["Ana", "민지", "Jörg"];
        assert_eq!(
            fill_many("Thank you, {nickname}!", &names, " and "),
            ("Thank you, Ana, 민지 and Jörg!".to_owned(), 3)
        );
        let many: Vec<String> = (0..60).map(|i| format!("🎧name{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let (text, n) = fill_many("Welcome, {nicknames}!", &refs, " and ");
        assert!(utf16_len(&text) <= CHAT_MAX_UTF16);
        assert!(n > 5 && n < 60, "{n}");
        assert!(text.contains(&format!(" and {}!", refs[n - 1])), "{text}");
    }

    proptest! {
        #[test]
        fn any_fill_is_one_message(nick in "\\PC{0,400}", rest in "\\PC{0,400}") {
            let text = fill("{nickname} ran {rest} for {nickname}", &[("nickname", &nick), ("rest", &rest)]);
            prop_assert!(utf16_len(&text) <= CHAT_MAX_UTF16);
        }

        #[test]
        fn any_merge_is_one_message_naming_a_prefix(names in proptest::collection::vec("\\PC{1,60}", 1..40)) {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let (text, n) = fill_many("Thanks {nicknames}!", &refs, " and ");
            prop_assert!(n >= 1 && n <= names.len());
            prop_assert!(utf16_len(&text) <= CHAT_MAX_UTF16);
        }
    }
}
