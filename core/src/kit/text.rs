//! Chat text that the server accepts: [`split`] a long text into messages and
//! [`truncate`] one, never cutting an emoji, a flag or a letter from its accents.
//!
//! A chat message holds at most [`CHAT_MAX_UTF16`] UTF-16 code units and may
//! not be empty or whitespace-only (spec 4.7). `.slice(0, 200)` cuts a
//! surrogate pair or a grapheme cluster in half; these functions cut only
//! between extended grapheme clusters (UAX #29), and every message they make
//! passes [`validate_chat`], the one check that answers what the server would.
//!
//! ```
//! use onair::kit::text::{split, validate_chat};
//!
//! let long = "Top donors tonight:\n".to_owned() + &"Mina 🇰🇷 500, ".repeat(20);
//! let parts = split(&long);
//! assert!(parts.len() > 1);
//! assert!(parts.iter().all(|part| validate_chat(part).is_ok()));
//! assert_eq!(parts[0], "Top donors tonight:"); // the line break was the cut
//! ```

use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;

pub use crate::proto::chat::{validate_chat, ChatError, ChatErrorKind, CHAT_MAX_UTF16};

/// The length of `text` in UTF-16 code units, as the server counts chat
/// (an emoji outside the BMP counts 2).
///
/// ```
/// use onair::kit::text::utf16_len;
///
/// assert_eq!(utf16_len("hi 😀"), 5);
/// ```
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// Splits `text` into chat messages the server accepts, in order.
///
/// The rules:
/// - A text that is already a valid message comes back unchanged, as one part.
/// - Otherwise each part is as long as fits in [`CHAT_MAX_UTF16`] UTF-16 code
///   units, and is cut, in this order of preference, at the last line break
///   that fits (lines stay whole), else at the last whitespace that fits
///   (words stay whole), else mid-word between two grapheme clusters.
/// - The whitespace at a cut is dropped, and so is whitespace at the very
///   start and end of the text: no part starts or ends with whitespace, and
///   none is empty or whitespace-only. A text that is all whitespace gives no
///   parts.
/// - Rejoining: the text equals the parts in order with only whitespace
///   (possibly none) before, between and after them. Nothing else is lost,
///   added or reordered.
/// - A single grapheme cluster longer than [`CHAT_MAX_UTF16`] units (only a
///   pathological one, e.g. a letter with hundreds of combining marks) is the
///   one thing cut inside a cluster: as a last resort it is cut between
///   `char`s, so no part is too long and no surrogate pair is ever split.
///
/// Every part passes [`validate_chat`].
///
/// ```
/// use onair::kit::text::split;
///
/// assert_eq!(split("hello"), ["hello"]);
/// assert!(split(" \n\u{3000}").is_empty());
/// let words = "word ".repeat(50); // 250 units
/// let parts = split(&words);
/// assert_eq!(parts.len(), 2);
/// assert!(parts.iter().all(|p| p.starts_with("word") && p.ends_with("word")));
/// // 101 emoji of 2 units each: 100 fit in the first message, none is cut.
/// assert_eq!(split(&"😀".repeat(101)), ["😀".repeat(100), "😀".to_owned()]);
/// ```
pub fn split(text: &str) -> Vec<String> {
    split_ranges(text)
        .into_iter()
        .filter_map(|range| text.get(range).map(str::to_owned))
        .collect()
}

/// Shortens `text` to at most `limit_utf16` UTF-16 code units, `ellipsis`
/// included, cutting only between grapheme clusters.
///
/// - A text that fits comes back unchanged (no ellipsis).
/// - Otherwise: the longest prefix of whole grapheme clusters that fits with
///   the ellipsis, whitespace at its end trimmed, then the ellipsis.
/// - An ellipsis longer than the limit is left out (the result is then the
///   prefix alone), so the result never exceeds the limit.
/// - A grapheme cluster longer than [`CHAT_MAX_UTF16`] units is cut between
///   `char`s, as in [`split`]; a normal cluster that does not fit is left out
///   whole, so the result may be only the ellipsis.
///
/// With `limit_utf16 <= CHAT_MAX_UTF16` and an ellipsis that is not
/// whitespace-only, the result of a text [`validate_chat`] rejected as too long
/// passes it. With an empty ellipsis the result may be empty (when only
/// whitespace, or nothing, fits before the limit).
///
/// ```
/// use onair::kit::text::truncate;
///
/// assert_eq!(truncate("short", 10, "…"), "short");
/// assert_eq!(truncate("hello wonderful world", 12, "…"), "hello wonde…");
/// assert_eq!(truncate("hello  world", 8, "..."), "hello...");
/// // A flag is two code points and four units: never cut in half.
/// assert_eq!(truncate("go 🇰🇷🇯🇵", 8, "…"), "go 🇰🇷…");
/// ```
pub fn truncate(text: &str, limit_utf16: usize, ellipsis: &str) -> String {
    if utf16_len(text) <= limit_utf16 {
        return text.to_owned();
    }
    let ellipsis_len = utf16_len(ellipsis);
    let (budget, ellipsis) = match limit_utf16.checked_sub(ellipsis_len) {
        Some(budget) => (budget, ellipsis),
        None => (limit_utf16, ""),
    };
    // Inside a cluster over the chat limit, any `char` boundary will do.
    let atoms = atoms(text, 1);
    let mut units = 0;
    let mut end = 0;
    while let Some(atom) = atoms.get(end) {
        if units + atom.units > budget {
            break;
        }
        units += atom.units;
        end += 1;
    }
    let kept = trim_end(&atoms, 0, end);
    let mut out = String::with_capacity(text.len().min(limit_utf16 * 4) + ellipsis.len());
    if kept > 0 {
        out.push_str(text.get(..atoms[kept - 1].end).unwrap_or_default());
    }
    out.push_str(ellipsis);
    out
}

/// What a piece of text is, for choosing where to cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Holds something other than whitespace: kept, cut inside only as a last resort.
    Word,
    /// Whitespace only, no line break: a good place to cut.
    Space,
    /// Whitespace holding a line break: the best place to cut.
    LineBreak,
}

/// One grapheme cluster (or, for a cluster over the chat limit, one
/// `char`-aligned piece of it) with its place in the text.
#[derive(Debug, Clone, Copy)]
struct Atom {
    start: usize,
    end: usize,
    units: usize,
    kind: Kind,
}

fn kind_of(piece: &str) -> Kind {
    if !piece.chars().all(char::is_whitespace) {
        Kind::Word
    } else if piece.chars().any(|c| {
        matches!(
            c,
            '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    }) {
        Kind::LineBreak
    } else {
        Kind::Space
    }
}

/// The text as atoms: its extended grapheme clusters, except that a cluster
/// longer than [`CHAT_MAX_UTF16`] units is cut into `char`-aligned pieces of
/// at most `piece_max` units (a piece holds at least one `char`).
fn atoms(text: &str, piece_max: usize) -> Vec<Atom> {
    let mut out = Vec::new();
    for (start, cluster) in text.grapheme_indices(true) {
        let units = utf16_len(cluster);
        if units <= CHAT_MAX_UTF16 {
            out.push(Atom {
                start,
                end: start + cluster.len(),
                units,
                kind: kind_of(cluster),
            });
            continue;
        }
        let mut piece_start = start;
        let mut piece_units = 0;
        for (offset, c) in cluster.char_indices() {
            let here = start + offset;
            // A whitespace `char` in such a cluster (e.g. U+3000 carrying
            // hundreds of combining marks) is its own atom, so a cut there
            // drops it like any whitespace: no part starts with it.
            if c.is_whitespace() {
                if piece_units > 0 {
                    out.push(piece(text, piece_start, here, piece_units));
                }
                let next = here + c.len_utf8();
                out.push(piece(text, here, next, c.len_utf16()));
                piece_start = next;
                piece_units = 0;
                continue;
            }
            if piece_units > 0 && piece_units + c.len_utf16() > piece_max {
                out.push(piece(text, piece_start, here, piece_units));
                piece_start = here;
                piece_units = 0;
            }
            piece_units += c.len_utf16();
        }
        if piece_units > 0 {
            out.push(piece(text, piece_start, start + cluster.len(), piece_units));
        }
    }
    out
}

fn piece(text: &str, start: usize, end: usize, units: usize) -> Atom {
    Atom {
        start,
        end,
        units,
        kind: text.get(start..end).map_or(Kind::Word, kind_of),
    }
}

/// The end of `atoms[from..to]` with trailing whitespace atoms left out.
fn trim_end(atoms: &[Atom], from: usize, mut to: usize) -> usize {
    while to > from && atoms[to - 1].kind != Kind::Word {
        to -= 1;
    }
    to
}

/// [`split`] as byte ranges of `text` (ascending, not overlapping).
fn split_ranges(text: &str) -> Vec<Range<usize>> {
    if validate_chat(text).is_ok() {
        return std::iter::once(0..text.len()).collect();
    }
    let atoms = atoms(text, CHAT_MAX_UTF16);
    let mut parts = Vec::new();
    let mut pos = 0;
    loop {
        // Whitespace at the start and at a cut is dropped.
        while atoms.get(pos).is_some_and(|a| a.kind != Kind::Word) {
            pos += 1;
        }
        if pos >= atoms.len() {
            return parts;
        }
        let mut units = 0;
        let mut end = pos;
        while let Some(atom) = atoms.get(end) {
            if units + atom.units > CHAT_MAX_UTF16 {
                break;
            }
            units += atom.units;
            end += 1;
        }
        let cut = if end == atoms.len() {
            end
        } else {
            // Candidates: any whitespace after the first atom, up to and
            // including the atom that did not fit (it is dropped, not sent).
            let last_of = |kind: Kind| (pos + 1..=end).rev().find(|&i| atoms[i].kind == kind);
            last_of(Kind::LineBreak)
                .or_else(|| last_of(Kind::Space))
                .unwrap_or(end)
        };
        let kept = trim_end(&atoms, pos, cut);
        // `atoms[pos]` is a word, so `kept > pos`.
        parts.push(atoms[pos].start..atoms[kept - 1].end);
        pos = cut;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    fn units(parts: &[String]) -> Vec<usize> {
        parts.iter().map(|p| utf16_len(p)).collect()
    }

    #[test]
    fn a_valid_message_is_returned_unchanged() {
        assert_eq!(split("  hi  "), ["  hi  "]);
        let exactly = "a".repeat(CHAT_MAX_UTF16);
        assert_eq!(split(&exactly), std::slice::from_ref(&exactly));
    }

    /// Found by the `chat_text` fuzz target: an ideographic space carrying
    /// 300 combining marks is one grapheme cluster over the limit; cut
    /// between `char`s, its first part started with the space.
    #[test]
    fn whitespace_inside_an_over_long_cluster_is_dropped_at_a_cut() {
        let text = format!("\u{3000}{}", "\u{301}".repeat(300));
        let parts = split(&text);
        assert_eq!(parts, ["\u{301}".repeat(200), "\u{301}".repeat(100)]);
        let text = format!("a{}\u{3000}{}", "\u{301}".repeat(250), "\u{301}".repeat(10));
        for part in split(&text) {
            assert_eq!(part.trim(), part);
            assert!(validate_chat(&part).is_ok());
        }
    }

    #[test]
    fn empty_and_whitespace_only_give_no_parts() {
        assert!(split("").is_empty());
        assert!(split(" \t\r\n\u{3000}\u{2028}").is_empty());
        assert!(split(&" ".repeat(500)).is_empty());
    }

    #[test]
    fn prefers_the_last_line_break_that_fits() {
        let text = format!(
            "{}\n{} {}",
            "a".repeat(50),
            "b".repeat(100),
            "c".repeat(100)
        );
        let parts = split(&text);
        // The break at 50 wins over the space at 151 (both fit).
        assert_eq!(parts, ["a".repeat(50), "b".repeat(100), "c".repeat(100)]);
    }

    #[test]
    fn then_the_last_whitespace_that_fits() {
        let text = format!("{} {} {}", "a".repeat(90), "b".repeat(90), "c".repeat(90));
        assert_eq!(
            split(&text),
            [
                format!("{} {}", "a".repeat(90), "b".repeat(90)),
                "c".repeat(90)
            ]
        );
    }

    #[test]
    fn whitespace_just_past_the_limit_is_a_clean_cut() {
        let text = format!("{}\r\n{}", "a".repeat(200), "b".repeat(10));
        assert_eq!(split(&text), ["a".repeat(200), "b".repeat(10)]);
    }

    #[test]
    fn a_long_word_is_cut_at_the_limit() {
        let parts = split(&"x".repeat(450));
        assert_eq!(units(&parts), [200, 200, 50]);
    }

    #[test]
    fn emoji_flags_and_zwj_sequences_stay_whole() {
        let family = "👨‍👩‍👧‍👦"; // 11 units
        let parts = split(&family.repeat(30));
        assert!(parts.iter().all(|p| p.len() % family.len() == 0));
        assert_eq!(units(&parts), [198, 132]);
        let flags = "🇰🇷".repeat(60); // 4 units each
        assert_eq!(units(&split(&flags)), [200, 40]);
    }

    #[test]
    fn a_cluster_over_the_limit_is_cut_between_chars() {
        let zalgo = format!("a{}", "\u{301}".repeat(450));
        let parts = split(&zalgo);
        assert_eq!(units(&parts), [200, 200, 51]);
        assert_eq!(parts.concat(), zalgo);
        // Astral combining marks (2 units each) are never split in half.
        let astral = format!("a{}", "\u{1D167}".repeat(150));
        let parts = split(&astral);
        assert!(parts.iter().all(|p| utf16_len(p) <= CHAT_MAX_UTF16));
        assert_eq!(parts.concat(), astral);
    }

    #[test]
    fn a_cluster_that_starts_with_a_space_is_a_word() {
        // Space + combining mark is one cluster: never trimmed apart.
        let text = format!("{} \u{301}", "a".repeat(199));
        assert_eq!(split(&text), ["a".repeat(199), " \u{301}".to_owned()]);
    }

    #[test]
    fn truncate_fits_unchanged() {
        assert_eq!(truncate("", 0, "…"), "");
        assert_eq!(truncate("abc", 3, "…"), "abc");
    }

    #[test]
    fn truncate_trims_before_the_ellipsis() {
        assert_eq!(truncate("ab   cdef", 6, "…"), "ab…");
        assert_eq!(truncate("     xxxxxx", 4, "…"), "…");
    }

    #[test]
    fn truncate_leaves_out_an_ellipsis_longer_than_the_limit() {
        assert_eq!(truncate("abcdef", 2, "..."), "ab");
        assert_eq!(truncate("abcdef", 0, "..."), "");
    }

    #[test]
    fn truncate_never_cuts_a_cluster_or_a_pair() {
        assert_eq!(truncate("😀😀😀", 4, "…"), "😀…");
        assert_eq!(truncate("👨‍👩‍👧‍👦x", 10, "…"), "…");
        let zalgo = format!("a{}", "\u{301}".repeat(450));
        assert_eq!(utf16_len(&truncate(&zalgo, 200, "…")), 200);
    }

    #[test]
    fn truncate_to_the_chat_limit_is_valid() {
        let text = format!("{}{}", " ".repeat(199), "ab");
        assert_eq!(validate_chat(&truncate(&text, CHAT_MAX_UTF16, "…")), Ok(()));
    }

    /// Pieces that make splitting hard, concatenated by the strategies below.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,12}",
            Just(" ".to_owned()),
            Just("\n".to_owned()),
            Just("\r\n".to_owned()),
            Just("\t".to_owned()),
            Just("\u{3000}".to_owned()),
            Just("\u{2028}".to_owned()),
            Just("👨‍👩‍👧‍👦".to_owned()),
            Just("👩🏽‍💻".to_owned()),
            Just("🏳️‍🌈".to_owned()),
            Just("🇰🇷".to_owned()),
            Just("🇯🇵".to_owned()),
            Just("😀".to_owned()),
            Just("e\u{301}".to_owned()),
            Just("a\u{300}\u{316}\u{31B}".to_owned()),
            Just(" \u{301}".to_owned()),
            Just("漢字かな".to_owned()),
            Just("한국어".to_owned()),
            Just("\u{1100}\u{1161}\u{11A8}".to_owned()),
            Just("𝔘𝔫𝔦".to_owned()),
            (1usize..450).prop_map(|n| "w".repeat(n)),
            (1usize..120).prop_map(|n| "😀".repeat(n)),
            (150usize..400).prop_map(|n| format!("o{}", "\u{308}".repeat(n))),
            (90usize..200).prop_map(|n| format!("o{}", "\u{1D167}".repeat(n))),
            any::<char>().prop_map(String::from),
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(piece(), 0..60).prop_map(|pieces| pieces.concat())
    }

    /// Byte offsets at which `text` may be cut: its grapheme-cluster
    /// boundaries, plus `char` boundaries inside clusters over the limit.
    fn allowed_cuts(text: &str) -> Vec<usize> {
        let mut cuts = vec![text.len()];
        for (start, cluster) in text.grapheme_indices(true) {
            cuts.push(start);
            if utf16_len(cluster) > CHAT_MAX_UTF16 {
                cuts.extend(cluster.char_indices().map(|(i, _)| start + i));
            }
        }
        cuts
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_part_is_a_valid_message(text in text()) {
            for part in split(&text) {
                prop_assert!(utf16_len(&part) <= CHAT_MAX_UTF16);
                prop_assert_eq!(validate_chat(&part), Ok(()));
                prop_assert!(char::decode_utf16(part.encode_utf16()).all(|c| c.is_ok()));
            }
        }

        #[test]
        fn parts_rejoin_to_the_text_modulo_whitespace_at_the_cuts(text in text()) {
            let ranges = split_ranges(&text);
            let parts = split(&text);
            prop_assert_eq!(parts.len(), ranges.len());
            let mut at = 0;
            for (range, part) in ranges.iter().zip(&parts) {
                // The gap before each part is whitespace only (maybe empty).
                prop_assert!(range.start >= at);
                prop_assert!(text[at..range.start].chars().all(char::is_whitespace));
                prop_assert_eq!(&text[range.clone()], part.as_str());
                at = range.end;
            }
            prop_assert!(text[at..].chars().all(char::is_whitespace));
            // No parts only when there is nothing but whitespace.
            prop_assert_eq!(parts.is_empty(), text.chars().all(char::is_whitespace));
            // A valid message is never touched.
            if validate_chat(&text).is_ok() {
                prop_assert_eq!(parts, vec![text.clone()]);
            }
        }

        #[test]
        fn cuts_only_between_grapheme_clusters(text in text()) {
            let allowed = allowed_cuts(&text);
            for range in split_ranges(&text) {
                prop_assert!(allowed.contains(&range.start), "start {}", range.start);
                prop_assert!(allowed.contains(&range.end), "end {}", range.end);
            }
        }

        #[test]
        fn cuts_follow_the_preferences(text in text()) {
            let ranges = split_ranges(&text);
            for pair in ranges.windows(2) {
                let part = &text[pair[0].clone()];
                let gap = &text[pair[0].end..pair[1].start];
                let kinds: Vec<Kind> = part.graphemes(true).map(kind_of).collect();
                if gap.is_empty() {
                    // A mid-word cut: the part holds no whitespace to cut at,
                    // and the next cluster would not have fit.
                    let next = text[pair[1].clone()].graphemes(true).next().unwrap_or("");
                    prop_assert!(kinds.iter().all(|k| *k == Kind::Word));
                    prop_assert!(utf16_len(part) + utf16_len(next) > CHAT_MAX_UTF16);
                } else if !gap.graphemes(true).any(|g| kind_of(g) == Kind::LineBreak) {
                    // Cut at whitespace: no line break was there to cut at.
                    prop_assert!(!kinds.contains(&Kind::LineBreak));
                }
            }
        }

        #[test]
        fn truncate_fits_and_keeps_whole_clusters(
            text in text(),
            limit in 0usize..260,
            ellipsis in prop_oneof![Just(""), Just("…"), Just("..."), Just("😀")],
        ) {
            let out = truncate(&text, limit, ellipsis);
            prop_assert!(utf16_len(&out) <= limit);
            if utf16_len(&text) <= limit {
                prop_assert_eq!(&out, &text);
            } else {
                let kept = out.strip_suffix(ellipsis).unwrap_or(&out);
                prop_assert!(text.starts_with(kept));
                prop_assert!(allowed_cuts(&text).contains(&kept.len()));
                prop_assert!(kept.graphemes(true).next_back().is_none_or(|g| kind_of(g) == Kind::Word));
                if limit <= CHAT_MAX_UTF16 && limit >= utf16_len(ellipsis) && !ellipsis.is_empty() {
                    prop_assert_eq!(validate_chat(&out), Ok(()));
                }
            }
        }
    }
}
