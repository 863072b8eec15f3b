//! Stream event payloads (spec 2.6) built from the control API's `emit`
//! input: every field the caller leaves out gets a realistic default, every
//! field given is checked for its wire type, and the result is the wire JSON
//! plus the facts the ledger needs ([`EventInfo`]).
//!
//! ```
//! use onair_emulator::events::{build, Kind, Defaults};
//! use onair_emulator::rng::Rng;
//! let data = serde_json::json!({"user": {"id": "u1", "nickname": null}, "type": "PAID", "amount": 10, "combo": 3});
//! let mut rng = Rng::new(1);
//! let d = Defaults { now_ms: 0, dj_id: "dj", dj_nickname: "DJ", fan_rank: None, fraction_digits: None };
//! let (json, info) = build(Kind::Like, &data, &d, &mut rng, false).unwrap();
//! assert_eq!(info.hearts, 30);
//! assert!(json.contains(r#""totalAmount":30"#));
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock::{iso, iso_digits};
use crate::rng::Rng;
use crate::scope::Perm;
use crate::wire::{to_json, User};

/// The event names of spec 4.6 the emulator emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `chat`.
    Chat,
    /// `presence`.
    Presence,
    /// `like`.
    Like,
    /// `donation`.
    Donation,
    /// `end`.
    End,
    /// A name a future server might add (wire variation `unknownEvents`).
    Unknown,
}

impl Kind {
    /// Parses an `emit` event name (only the four delivered kinds).
    pub fn from_emit(name: &str) -> Option<Kind> {
        match name {
            "chat" => Some(Kind::Chat),
            "presence" => Some(Kind::Presence),
            "like" => Some(Kind::Like),
            "donation" => Some(Kind::Donation),
            _ => None,
        }
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Chat => "chat",
            Kind::Presence => "presence",
            Kind::Like => "like",
            Kind::Donation => "donation",
            Kind::End => "end",
            Kind::Unknown => "gift",
        }
    }

    /// The permission a stream needs to receive it (spec 4.6 table).
    pub fn perm(self) -> Option<Perm> {
        match self {
            Kind::Chat => Some(Perm::EventsChat),
            Kind::Presence => Some(Perm::EventsPresence),
            Kind::Like => Some(Perm::EventsLike),
            Kind::Donation => Some(Perm::EventsDonation),
            Kind::End | Kind::Unknown => None,
        }
    }
}

/// What the ledger counts of one delivered event.
#[derive(Debug, Clone)]
pub struct EventInfo {
    /// The event kind.
    pub kind: Kind,
    /// `user.id`.
    pub user_id: String,
    /// `user.nickname`.
    pub nickname: Option<String>,
    /// A chat with `isDj` true (or any event of the DJ's own id).
    pub is_dj: bool,
    /// `like.totalAmount`.
    pub hearts: u64,
    /// Whether the like was `PAID`.
    pub paid: bool,
    /// `donation.amount`.
    pub donated: u64,
    /// The frame id as numbers (set when the event is given its id).
    pub seq: (i64, u64),
}

/// Context for defaults.
#[derive(Debug)]
pub struct Defaults<'a> {
    /// Emulator time now (for `sentTime`/`time`).
    pub now_ms: i64,
    /// The DJ's person id (the default poster of an `isDj` chat).
    pub dj_id: &'a str,
    /// The DJ's nickname.
    pub dj_nickname: &'a str,
    /// The person's rank in this broadcast's donation ranking (presence default).
    pub fan_rank: Option<i64>,
    /// Fractional-second digits of default timestamps (`None`: milliseconds).
    pub fraction_digits: Option<u8>,
}

/// Nicknames in many scripts, for default users.
pub const NICKNAMES: &[&str] = &[
    "민지",
    "하늘바라기",
    "さくら",
    "ゆうき",
    "Lucas",
    "Ana Clara",
    "Олег",
    "Мария",
    "محمد",
    "שירה",
    "नेहा",
    "Nguyễn Văn A",
    "李雷",
    "王芳",
    "Zoë",
    "🌸Bloom",
    "👩‍🚀 astro",
    "𝓜𝓲𝓷𝓪",
    "Kwame",
    "Ελένη",
    "สมชาย",
    "Ömer",
    "Jörg",
    "🎧DJ fan",
];

/// Chat lines in many scripts, with emoji, ZWJ sequences and astral characters.
pub const MESSAGES: &[&str] = &[
    "안녕하세요!",
    "오늘 방송 최고 👍",
    "こんばんは〜",
    "この曲すき",
    "hello from Lisbon",
    "Привет всем",
    "مرحبا",
    "שלום",
    "नमस्ते",
    "Xin chào",
    "你好",
    "加油！",
    "👨‍👩‍👧‍👦 family night",
    "🏳️‍🌈🏳️‍⚧️",
    "𝄞 music",
    "😀😃😄😁",
    "{\"looks\":\"like json\"}",
    "  spaced  ",
    "🇰🇷🇯🇵",
    "a\\b \"quoted\"",
    "tab\there",
    "🧑🏽‍💻 coding",
    "ẞ ß Ǆ",
    "e\u{301}te\u{301}",
];

/// A stable id for a nickname-less default person number `n`.
pub fn person_id(n: u64) -> String {
    format!("u{:012x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16)
}

fn field<'a>(data: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    data.get(key)
}

fn opt_string(data: &Map<String, Value>, key: &str) -> Result<Option<Option<String>>, String> {
    match field(data, key) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) => Ok(Some(Some(s.clone()))),
        Some(_) => Err(format!("{key} must be a string or null")),
    }
}

fn opt_u64(data: &Map<String, Value>, key: &str) -> Result<Option<Option<u64>>, String> {
    match field(data, key) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(v) => v
            .as_u64()
            .map(|n| Some(Some(n)))
            .ok_or_else(|| format!("{key} must be a whole number ≥ 0 or null")),
    }
}

fn opt_bool(data: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match field(data, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{key} must be true or false")),
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Resolves `data.user` (default: a random person, or the DJ for an `isDj` chat).
pub fn resolve_user(
    kind: Kind,
    data: &Map<String, Value>,
    d: &Defaults<'_>,
    rng: &mut Rng,
) -> Result<(String, Option<String>), String> {
    match field(data, "user") {
        Some(Value::Object(user)) => {
            let id = match user.get("id") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(_) => return Err("user.id must be a non-empty string".into()),
                None => return Err("user needs an id".into()),
            };
            let nickname = match opt_string(user, "nickname")? {
                Some(n) => n,
                None if id == d.dj_id => Some(d.dj_nickname.to_owned()),
                None => Some(default_nickname(&id).to_owned()),
            };
            Ok((id, nickname))
        }
        Some(_) => Err("user must be an object {id, nickname}".into()),
        None => {
            if kind == Kind::Chat && opt_bool(data, "isDj")? == Some(true) {
                return Ok((d.dj_id.to_owned(), Some(d.dj_nickname.to_owned())));
            }
            let n = rng.below(NICKNAMES.len() as u64 * 2);
            let id = person_id(n);
            Ok((id.clone(), Some(default_nickname(&id).to_owned())))
        }
    }
}

/// The default nickname of an id (stable).
pub fn default_nickname(id: &str) -> &'static str {
    let h = id
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    NICKNAMES[(h % NICKNAMES.len() as u64) as usize]
}

/// One event payload (spec 2.6): `user`, the kind's fields in the spec's
/// order, then the caller's fields this version does not know (passed
/// through as given), then the wire variation's unknown field.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Payload<'a> {
    user: User<'a>,
    #[serde(flatten)]
    fields: Fields,
    #[serde(flatten)]
    passthrough: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    emulator_extra: Option<EmulatorExtra>,
}

/// The fields of each kind after `user` (spec 2.6); nullable ones are
/// written as `null`.
#[derive(Debug, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
enum Fields {
    Chat {
        is_dj: bool,
        message: String,
        sent_time: String,
    },
    Presence {
        #[serde(rename = "type")]
        kind: String,
        fan_rank: Option<i64>,
        is_manager: bool,
        favorite_temperature: Option<Value>,
        time: String,
    },
    Like {
        #[serde(rename = "type")]
        kind: String,
        total_amount: i64,
        amount: i64,
        extra_amount: i64,
        combo: Option<i64>,
        time: String,
    },
    Donation {
        amount: i64,
        message: Option<String>,
        time: String,
    },
}

/// A field a future server might add (wire variation `unknownFields`).
#[derive(Debug, Serialize)]
struct EmulatorExtra {
    note: &'static str,
    level: u8,
}

/// The payload of the unknown `gift` event (wire variation `unknownEvents`).
///
/// ```
/// assert_eq!(onair_emulator::events::gift("u1"), r#"{"user":{"id":"u1","nickname":null},"giftId":7}"#);
/// ```
pub fn gift(user_id: &str) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Gift<'a> {
        user: User<'a>,
        gift_id: u32,
    }
    to_json(&Gift {
        user: User {
            id: user_id,
            nickname: None,
        },
        gift_id: 7,
    })
}

/// Builds the wire payload of one `emit` (spec 2.6) and its ledger facts.
/// `unknown_fields` adds a field a future server might send.
///
/// # Errors
/// A message naming the field when `data` is not an object or a field has
/// the wrong wire type.
pub fn build(
    kind: Kind,
    data: &Value,
    d: &Defaults<'_>,
    rng: &mut Rng,
    unknown_fields: bool,
) -> Result<(String, EventInfo), String> {
    let empty = Map::new();
    let data = match data {
        Value::Object(map) => map,
        Value::Null => &empty,
        _ => return Err("data must be an object".into()),
    };
    let (user_id, nickname) = resolve_user(kind, data, d, rng)?;
    let now = d
        .fraction_digits
        .map_or_else(|| iso(d.now_ms), |n| iso_digits(d.now_ms, n));
    let time = |key: &str| -> Result<String, String> {
        Ok(opt_string(data, key)?
            .flatten()
            .unwrap_or_else(|| now.clone()))
    };
    let mut info = EventInfo {
        kind,
        user_id: user_id.clone(),
        nickname: nickname.clone(),
        is_dj: user_id == d.dj_id,
        hearts: 0,
        paid: false,
        donated: 0,
        seq: (0, 0),
    };
    let mut known: Vec<&str> = vec!["user"];
    let fields = match kind {
        Kind::Chat => {
            let is_dj = opt_bool(data, "isDj")?.unwrap_or(user_id == d.dj_id);
            info.is_dj = is_dj;
            let message = match field(data, "message") {
                None => MESSAGES[rng.below(MESSAGES.len() as u64) as usize].to_owned(),
                Some(Value::String(s)) => s.clone(),
                Some(_) => return Err("message must be a string".into()),
            };
            known.extend(["isDj", "message", "sentTime"]);
            Fields::Chat {
                is_dj,
                message,
                sent_time: time("sentTime")?,
            }
        }
        Kind::Presence => {
            let kind_text = opt_string(data, "type")?
                .flatten()
                .unwrap_or_else(|| "JOIN".into());
            let fan_rank = match opt_u64(data, "fanRank")? {
                None => d.fan_rank,
                Some(v) => v.map(to_i64),
            };
            let temperature = match field(data, "favoriteTemperature") {
                None => Some(Value::from(rng.below(1000) as f64 / 10.0)),
                Some(Value::Null) => None,
                Some(v @ Value::Number(_)) => Some(v.clone()),
                Some(_) => return Err("favoriteTemperature must be a number or null".into()),
            };
            known.extend([
                "type",
                "fanRank",
                "isManager",
                "favoriteTemperature",
                "time",
            ]);
            Fields::Presence {
                kind: kind_text,
                fan_rank,
                is_manager: opt_bool(data, "isManager")?.unwrap_or(false),
                favorite_temperature: temperature,
                time: time("time")?,
            }
        }
        Kind::Like => {
            let kind_text = opt_string(data, "type")?
                .flatten()
                .unwrap_or_else(|| "FREE".into());
            let paid = kind_text == "PAID";
            let amount = opt_u64(data, "amount")?
                .flatten()
                .unwrap_or(if paid { 10 } else { 1 });
            let extra = opt_u64(data, "extraAmount")?.flatten().unwrap_or(0);
            let combo = match opt_u64(data, "combo")? {
                Some(c) => c,
                None if paid => Some(1),
                None => None,
            };
            let total = match opt_u64(data, "totalAmount")?.flatten() {
                Some(t) => t,
                None => amount
                    .saturating_add(extra)
                    .saturating_mul(combo.unwrap_or(1)),
            };
            info.hearts = total;
            info.paid = paid;
            known.extend([
                "type",
                "totalAmount",
                "amount",
                "extraAmount",
                "combo",
                "time",
            ]);
            Fields::Like {
                kind: kind_text,
                total_amount: to_i64(total),
                amount: to_i64(amount),
                extra_amount: to_i64(extra),
                combo: combo.map(to_i64),
                time: time("time")?,
            }
        }
        Kind::Donation => {
            let amount = opt_u64(data, "amount")?.flatten().unwrap_or(100);
            let message = opt_string(data, "message")?.flatten();
            info.donated = amount;
            known.extend(["amount", "message", "time"]);
            Fields::Donation {
                amount: to_i64(amount),
                message,
                time: time("time")?,
            }
        }
        Kind::End | Kind::Unknown => {
            return Err("only chat, presence, like and donation can be emitted".into())
        }
    };
    let passthrough = data
        .iter()
        .filter(|(key, _)| !known.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let payload = Payload {
        user: User {
            id: &user_id,
            nickname: nickname.as_deref(),
        },
        fields,
        passthrough,
        emulator_extra: unknown_fields.then_some(EmulatorExtra {
            note: "a field this version does not know",
            level: 3,
        }),
    };
    Ok((to_json(&payload), info))
}
