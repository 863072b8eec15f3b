use super::*;
use proptest::prelude::*;
use unicode_segmentation::UnicodeSegmentation;

fn ours(text: &str) -> Vec<usize> {
    grapheme_indices(text).map(|(at, _)| at).collect()
}

fn oracle(text: &str) -> Vec<usize> {
    text.grapheme_indices(true).map(|(at, _)| at).collect()
}

/// One code point of each class (the first of its first run), and the
/// Hangul syllables of both kinds.
fn representatives() -> Vec<char> {
    let mut found: Vec<char> = vec!['\u{AC00}', '\u{AC01}'];
    for class in table::CLASSES {
        let first = table::RUNS
            .iter()
            .find(|&&run| table::CLASSES[(run & 31) as usize] == class)
            .and_then(|&run| char::from_u32(run >> 5));
        found.extend(first.filter(|_| class != Class::HangulSyllable));
    }
    found
}

#[test]
fn the_table_is_the_oracles_unicode() {
    let (major, minor, update) = table::UNICODE_VERSION;
    assert_eq!(
        unicode_segmentation::UNICODE_VERSION,
        (u64::from(major), u64::from(minor), u64::from(update)),
        "unicode-segmentation moved on: run scripts/gen-graphemes"
    );
}

const CONSONANT: char = '\u{915}';
const LINKER: char = '\u{94D}';
const PICTOGRAPH: char = '\u{1F600}';
const ZWJ: char = '\u{200D}';

/// The places around `c` that tell each class from every other (checked by
/// `the_places_tell_every_class_apart`).
fn places(c: char) -> [Vec<char>; 12] {
    [
        vec!['a', c, 'a'],                     // Any; joins before, after; controls
        vec!['\r', c, '\n'],                   // LF; CR
        vec!['\u{1100}', c, '\u{11A8}'],       // Hangul: after L, before T
        vec!['\u{1161}', c, '\u{1161}'],       // Hangul: after V, before V
        vec!['\u{1F1E6}', c, '\u{1F1E6}'],     // regional indicators
        vec![PICTOGRAPH, c, PICTOGRAPH],       // ZWJ (GB11)
        vec![ZWJ, c, 'a'],                     // pictographs after ZWJ
        vec![CONSONANT, c, CONSONANT],         // linkers (GB9c)
        vec![LINKER, c, 'a'],                  // consonants after a linker
        vec![CONSONANT, LINKER, c, CONSONANT], // InCB=Extend keeps a conjunct
        vec![CONSONANT, LINKER, c],            // a consonant joins a conjunct
        vec![PICTOGRAPH, c, ZWJ, PICTOGRAPH],  // Extend keeps an emoji sequence
    ]
}

/// How the oracle clusters each of `c`'s places.
fn signature(c: char) -> Vec<Vec<usize>> {
    places(c)
        .iter()
        .map(|parts| oracle(&parts.iter().collect::<String>()))
        .collect()
}

#[test]
fn the_places_tell_every_class_apart() {
    let all = representatives();
    assert_eq!(all.len(), 18, "every class, LV and LVT for the syllables");
    for (i, &a) in all.iter().enumerate() {
        for &b in &all[i + 1..] {
            assert_ne!(
                signature(a),
                signature(b),
                "{:?} and {:?}",
                class(a),
                class(b)
            );
        }
    }
}

/// Every code point in its places (a wrong class in the table for any one
/// code point changes one of them), and the first code point of each run
/// against every class on either side.
#[test]
#[cfg_attr(
    miri,
    ignore = "1.1 million code points: hours under miri, and no unsafe code"
)]
fn every_code_point_clusters_as_the_oracle_says() {
    let mut text = String::new();
    let mut check = |parts: &[char]| {
        text.clear();
        text.extend(parts);
        assert_eq!(ours(&text), oracle(&text), "{parts:X?}");
    };
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        for parts in places(c) {
            check(&parts);
        }
    }
    let probes = representatives();
    for &run in &table::RUNS {
        let Some(c) = char::from_u32(run >> 5) else {
            continue;
        };
        for &p in &probes {
            check(&[p, c]);
            check(&[c, p]);
        }
    }
}

#[test]
fn the_rules_by_example() {
    for text in [
        "",
        "a",
        "\r\n",
        "\n\r",
        "e\u{301}\u{302}x",
        "🇫🇷🇩🇪🇯",
        "👩‍👩‍👧‍👦!",
        "👍🏽",
        "क्ष",
        "क्\u{200D}ष",
        "क\u{300}्\u{300}ष",
        "\u{600}1",
        "각가\u{1100}\u{1161}\u{11A8}",
        "\u{1F600}\u{200D}\u{200D}\u{1F600}",
    ] {
        assert_eq!(ours(text), oracle(text), "{text:?}");
    }
}

/// Characters where the rules meet, mixed with any.
fn interesting() -> impl Strategy<Value = char> {
    prop_oneof![
        proptest::sample::select(vec![
            '\r',
            '\n',
            '\u{1}',
            'a',
            '\u{300}',
            '\u{94D}',
            '\u{915}',
            '\u{200D}',
            '\u{1F600}',
            '\u{1F3FD}',
            '\u{1F1E6}',
            '\u{1100}',
            '\u{1161}',
            '\u{11A8}',
            '\u{AC00}',
            '\u{AC01}',
            '\u{600}',
            '\u{903}',
            '\u{E33}',
            ' ',
        ]),
        any::<char>(),
    ]
}

proptest! {
    #[test]
    fn any_text_clusters_as_the_oracle_says(chars in proptest::collection::vec(interesting(), 0..24)) {
        let text: String = chars.into_iter().collect();
        prop_assert_eq!(ours(&text), oracle(&text), "{:?}", text);
        let whole: String = grapheme_indices(&text).map(|(_, g)| g).collect();
        prop_assert_eq!(whole, text);
    }
}
