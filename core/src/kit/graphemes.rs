//! Extended grapheme clusters (UAX #29), forward only: where the chat
//! splitter may cut.
//!
//! Why not the unicode-segmentation crate, which does this job: its tables
//! (three-char-tuple ranges, a lookup index, the InCB sets) were 26.6 KiB of
//! the WASM bot module, measured (BENCHMARKS.md). Here every code point's
//! class is one `u32` run in `graphemes/table.rs` (5.5 KiB), generated from
//! that crate's own tables by `scripts/gen-graphemes`, with the precomposed
//! Hangul syllables told apart by arithmetic. The crate stays the oracle: the
//! tests check every code point against it, and the `split` fuzz body checks
//! any text.

mod table;

/// A code point's part in the cluster rules: its Grapheme_Cluster_Break,
/// with Extend refined by Indic_Conjunct_Break and Extended_Pictographic
/// (which is `Any` for the break property) a class of its own.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Any,
    Cr,
    Lf,
    Control,
    /// Extend, InCB=None.
    Extend,
    /// Extend, InCB=Extend.
    InCbExtend,
    /// Extend, InCB=Linker (a virama).
    Linker,
    /// U+200D, which is also InCB=Extend.
    Zwj,
    SpacingMark,
    Prepend,
    RegionalIndicator,
    L,
    V,
    T,
    /// LV or LVT, resolved by [`class`]; never returned.
    HangulSyllable,
    Lv,
    Lvt,
    ExtendedPictographic,
    /// Any, InCB=Consonant.
    InCbConsonant,
}

/// The class of `c`.
fn class(c: char) -> Class {
    let c = u32::from(c);
    if (0x20..0x7f).contains(&c) {
        return Class::Any; // printable ASCII, most of any chat
    }
    let at = table::RUNS.partition_point(|&run| run >> 5 <= c);
    let class = (table::RUNS.get(at.wrapping_sub(1)))
        .and_then(|&run| table::CLASSES.get((run & 31) as usize))
        .copied()
        .unwrap_or(Class::Any);
    match class {
        // LV when no trailing consonant is composed in (`scripts/gen-graphemes`
        // checks the rule against the table; the table holds the class only
        // for U+AC00..=U+D7A3).
        Class::HangulSyllable if c.wrapping_sub(0xAC00) % 28 == 0 => Class::Lv,
        Class::HangulSyllable => Class::Lvt,
        class => class,
    }
}

/// What the characters since the cluster's last break say about the next
/// one: the previous class, and the three rules that look further back.
#[derive(Clone, Copy)]
struct State {
    previous: Class,
    /// An odd number of regional indicators ends here (GB12, GB13).
    odd_indicators: bool,
    /// GB11: `ExtPict Extend*` (Pictographic) or `ExtPict Extend* ZWJ`
    /// (Joined) ends here.
    emoji: Sequence,
    /// GB9c: `InCB=Consonant [InCB=Extend InCB=Linker]*` ends here
    /// (Started), with a linker among them (Joined).
    conjunct: Sequence,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sequence {
    None,
    Started,
    Joined,
}

impl State {
    fn new(first: Class) -> Self {
        State {
            previous: first,
            odd_indicators: first == Class::RegionalIndicator,
            emoji: match first {
                Class::ExtendedPictographic => Sequence::Started,
                _ => Sequence::None,
            },
            conjunct: match first {
                Class::InCbConsonant => Sequence::Started,
                _ => Sequence::None,
            },
        }
    }

    /// Whether a cluster boundary lies before a character of class `next`.
    fn breaks_before(&self, next: Class) -> bool {
        use Class::*;
        match (self.previous, next) {
            (Cr, Lf) => false,                                                      // GB3
            (Cr | Lf | Control, _) | (_, Cr | Lf | Control) => true,                // GB4, GB5
            (L, L | V | Lv | Lvt) | (Lv | V, V | T) | (Lvt | T, T) => false,        // GB6-8
            (_, Extend | InCbExtend | Linker | Zwj | SpacingMark) => false,         // GB9, GB9a
            (Prepend, _) => false,                                                  // GB9b
            (_, InCbConsonant) if self.conjunct == Sequence::Joined => false,       // GB9c
            (Zwj, ExtendedPictographic) if self.emoji == Sequence::Joined => false, // GB11
            (RegionalIndicator, RegionalIndicator) => !self.odd_indicators,         // GB12, GB13
            _ => true,                                                              // GB999
        }
    }

    /// The state once a character of class `next` joined the cluster.
    fn then(self, next: Class) -> Self {
        use Class::*;
        let mut state = State::new(next);
        state.odd_indicators = next == RegionalIndicator && !self.odd_indicators;
        state.emoji = match (self.emoji, next) {
            (Sequence::Started, Extend | InCbExtend | Linker) => Sequence::Started,
            (Sequence::Started, Zwj) => Sequence::Joined,
            (_, _) => state.emoji,
        };
        state.conjunct = match (self.conjunct, next) {
            (Sequence::Started | Sequence::Joined, InCbExtend | Zwj) => self.conjunct,
            (Sequence::Started | Sequence::Joined, Linker) => Sequence::Joined,
            (_, _) => state.conjunct,
        };
        state
    }
}

/// The extended grapheme clusters of `text` with their byte offsets, like
/// unicode-segmentation's `grapheme_indices(true)`.
pub(crate) fn grapheme_indices(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = text.get(at..)?;
        let mut chars = rest.char_indices();
        let (_, first) = chars.next()?;
        let mut state = State::new(class(first));
        let mut end = rest.len();
        for (offset, c) in chars {
            let next = class(c);
            if state.breaks_before(next) {
                end = offset;
                break;
            }
            state = state.then(next);
        }
        let start = at;
        at += end;
        Some((start, rest.get(..end)?))
    })
}

#[cfg(test)]
mod tests;
