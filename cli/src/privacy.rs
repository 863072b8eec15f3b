//! `onair record`'s privacy: listeners' ids, nicknames and message texts
//! replaced by stand-ins before anything is written.
//!
//! - Every `user.id` (and a listener's or fan's `id`) becomes `person-N`,
//!   numbered in order of first appearance: the same person keeps the same
//!   stand-in for the whole recording, across connections and in the read
//!   calls' answers. The map lives in memory only.
//! - Every nickname becomes a stand-in of the same script and UTF-16 length
//!   (Hangul syllables for Hangul, kana for kana, CJK for CJK, Latin letters
//!   of the same case for Latin, digits for digits, an emoji for any astral
//!   character; spaces, punctuation and joiners kept); the same nickname
//!   always gets the same stand-in.
//! - Every `message` becomes fresh text the same way unless `--keep-text`.
//!
//! A JSON document is rewritten keeping its field order and its numbers as
//! written ([`Json`]: a small order-keeping reading), re-serialized compact.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// The stand-ins of one recording.
#[derive(Debug)]
pub struct Pseudonyms {
    ids: HashMap<String, String>,
    nicknames: HashMap<String, String>,
    keep_text: bool,
    rng: u64,
}

impl Pseudonyms {
    /// A fresh map with a random key (never written).
    pub fn new(keep_text: bool) -> Self {
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Self::with_seed(keep_text, seed)
    }

    /// A map drawing its stand-in letters from `seed`.
    pub fn with_seed(keep_text: bool, seed: u64) -> Self {
        Self {
            ids: HashMap::new(),
            nicknames: HashMap::new(),
            keep_text,
            rng: seed | 1,
        }
    }

    fn next(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick(&mut self, lo: u32, hi: u32) -> char {
        let span = u64::from(hi - lo + 1);
        let c = lo + (self.next() % span) as u32;
        char::from_u32(c).unwrap_or('x')
    }

    /// The stand-in of a person id.
    pub fn id(&mut self, id: &str) -> String {
        let n = self.ids.len() + 1;
        self.ids
            .entry(id.to_owned())
            .or_insert_with(|| format!("person-{n}"))
            .clone()
    }

    /// The stand-in of a nickname (the same one each time).
    pub fn nickname(&mut self, nickname: &str) -> String {
        if let Some(s) = self.nicknames.get(nickname) {
            return s.clone();
        }
        let s = self.text(nickname);
        self.nicknames.insert(nickname.to_owned(), s.clone());
        s
    }

    /// Fresh text of the same UTF-16 length and script mix.
    pub fn text(&mut self, text: &str) -> String {
        text.chars().map(|c| self.stand_in(c)).collect()
    }

    fn stand_in(&mut self, c: char) -> char {
        let u = c as u32;
        match u {
            0x30..=0x39 => self.pick(0x30, 0x39),
            0x41..=0x5A => self.pick(0x41, 0x5A),
            0x61..=0x7A => self.pick(0x61, 0x7A),
            0xC0..=0x24F if c.is_alphabetic() => {
                if c.is_uppercase() {
                    self.pick(0x41, 0x5A)
                } else {
                    self.pick(0x61, 0x7A)
                }
            }
            0xAC00..=0xD7A3 => self.pick(0xAC00, 0xD7A3),
            0x3041..=0x3096 => self.pick(0x3041, 0x3096),
            0x30A1..=0x30FA => self.pick(0x30A1, 0x30FA),
            0x4E00..=0x9FFF => self.pick(0x4E00, 0x9FFF),
            // Astral (emoji and the like): two UTF-16 units, as before.
            0x10000.. => self.pick(0x1F600, 0x1F64F),
            _ if c.is_alphanumeric() => {
                // Another letter of the same 128-character block, when one is found.
                let block = u & !0x7F;
                for _ in 0..32 {
                    let d = self.pick(block, block + 0x7F);
                    if d.is_alphanumeric() && d != c {
                        return d;
                    }
                }
                'x'
            }
            _ => c,
        }
    }

    /// Rewrites a JSON document; `None` when nothing in it changed (or it
    /// is not JSON).
    pub fn rewrite_json(&mut self, text: &str) -> Option<String> {
        let mut doc = Json::parse(text)?;
        let mut changed = false;
        self.walk(&mut doc, None, &mut changed);
        changed.then(|| doc.to_string())
    }

    /// `parent`: the key the value sits under (for arrays, their key).
    fn walk(&mut self, v: &mut Json, parent: Option<&str>, changed: &mut bool) {
        match v {
            Json::Arr(items) => {
                for item in items {
                    self.walk(item, parent, changed);
                }
            }
            Json::Obj(fields) => {
                let person = matches!(parent, Some("user" | "listeners" | "fans"));
                for (key, value) in fields.iter_mut() {
                    let new = match (key.as_str(), &*value) {
                        ("id", Json::Str(s)) if person => Some(self.id(s)),
                        ("nickname", Json::Str(s)) => Some(self.nickname(s)),
                        ("message", Json::Str(s)) if !self.keep_text => Some(self.text(s)),
                        _ => None,
                    };
                    match new {
                        Some(s) => {
                            *value = Json::Str(s);
                            *changed = true;
                        }
                        None => self.walk(value, Some(key.as_str()), changed),
                    }
                }
            }
            _ => {}
        }
    }
}

/// JSON as written: fields in order, numbers as their text.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`, `true`, `false` or a number, as written.
    Lit(String),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, fields in order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// Reads a whole document (surrounding whitespace allowed).
    pub fn parse(text: &str) -> Option<Json> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
            depth: 0,
        };
        let v = p.value()?;
        p.ws();
        (p.i == p.s.len()).then_some(v)
    }
}

impl std::fmt::Display for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
        match self {
            Json::Lit(s) => f.write_str(s),
            Json::Str(s) => f.write_str(&quote(s)),
            Json::Arr(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Json::Obj(fields) => {
                f.write_str("{")?;
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{v}", quote(k))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Deepest nesting read (a stream's JSON is shallow).
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Option<Json> {
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => {
                self.nest()?;
                self.i += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(Json::Obj(fields));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.ws();
                    (self.s.get(self.i) == Some(&b':')).then_some(())?;
                    self.i += 1;
                    let v = self.value()?;
                    fields.push((k, v));
                    self.ws();
                    match self.s.get(self.i)? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            self.depth -= 1;
                            return Some(Json::Obj(fields));
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.nest()?;
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(Json::Arr(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    match self.s.get(self.i)? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            self.depth -= 1;
                            return Some(Json::Arr(items));
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => self.string().map(Json::Str),
            _ => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
                {
                    self.i += 1;
                }
                let lit = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                // Checked by serde_json: a literal or a number.
                serde_json::from_str::<serde_json::Value>(lit).ok()?;
                Some(Json::Lit(lit.to_owned()))
            }
        }
    }

    fn nest(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A string at `i` (its quotes included), unescaped by serde_json.
    fn string(&mut self) -> Option<String> {
        (self.s.get(self.i) == Some(&b'"')).then_some(())?;
        let start = self.i;
        self.i += 1;
        loop {
            match *self.s.get(self.i)? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    let raw = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                    return serde_json::from_str(raw).ok();
                }
                _ => self.i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> usize {
        s.encode_utf16().count()
    }

    #[test]
    fn stand_ins_keep_script_length_and_the_person() {
        let mut p = Pseudonyms::with_seed(false, 7);
        let nick = p.nickname("민지 Lucas🎧");
        assert_ne!(nick, "민지 Lucas🎧");
        assert_eq!(utf16(&nick), utf16("민지 Lucas🎧"));
        let chars: Vec<char> = nick.chars().collect();
        assert!(('\u{AC00}'..='\u{D7A3}').contains(&chars[0]));
        assert_eq!(chars[2], ' ');
        assert!(chars[3].is_ascii_uppercase() && chars[4].is_ascii_lowercase());
        assert_eq!(p.nickname("민지 Lucas🎧"), nick);
        assert_eq!(p.id("u-1"), "person-1");
        assert_eq!(p.id("u-2"), "person-2");
        assert_eq!(p.id("u-1"), "person-1");
    }

    #[test]
    fn a_frame_keeps_its_field_order_and_numbers() {
        let mut p = Pseudonyms::with_seed(false, 1);
        let data = r#"{"user":{"id":"u9","nickname":"さくら","isNew":true},"message":"hi there","sentTime":"2026-01-01T00:00:00.000Z","x":1.50,"fans":[{"id":"u9","nickname":"さくら"}]}"#;
        let out = p.rewrite_json(data).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(v["user"]["id"], "person-1");
        assert_eq!(v["fans"][0]["id"], "person-1");
        assert_eq!(v["fans"][0]["nickname"], v["user"]["nickname"]);
        assert_ne!(v["message"], "hi there");
        assert_eq!(utf16(v["message"].as_str().unwrap_or("")), 8);
        assert!(out.starts_with(r#"{"user":{"id":"person-1","#));
        assert!(out.contains(r#""x":1.50"#));
        let mut keep = Pseudonyms::with_seed(true, 1);
        let kept = keep.rewrite_json(data).unwrap_or_default();
        assert!(kept.contains("hi there"));
        assert_eq!(p.rewrite_json(r#"{"reason":"RECONNECT"}"#), None);
    }
}
