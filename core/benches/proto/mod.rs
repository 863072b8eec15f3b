//! Bench-only prototype (issue 2, "Benchmarks"): the event payloads with
//! borrowed `Cow<'a, str>` strings, to measure what borrowing would gain over
//! the owned `onair::event` types before changing the library's API.
//!
//! Result (BENCHMARKS.md): about 1.17x faster framing + decoding than the owned
//! `Decoder`, below the 1.3x that would justify a lifetime on every event type;
//! serde_json's string scanning, not allocation, dominates typed decoding.

// Every field is decoded (that is the work measured); not every one is read.
#![allow(dead_code)]

use std::borrow::Cow;
use std::fmt;

use onair::event::{EndReason, LikeType, PresenceType};
use onair::sse;
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;

/// Borrows a string from the JSON text when it has no escapes.
struct CowStr;

impl<'de> Visitor<'de> for CowStr {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

struct OptCowStr;

impl<'de> Visitor<'de> for OptCowStr {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(CowStr).map(Some)
    }
}

fn opt_cow<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    d.deserialize_option(OptCowStr)
}

/// Owned or borrowed timestamp, chosen per variant below.
#[derive(Debug)]
pub struct TimeB<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for TimeB<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(CowStr).map(TimeB)
    }
}

#[derive(Debug, Deserialize)]
pub struct UserB<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    pub nickname: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatB<'a> {
    #[serde(borrow)]
    pub user: UserB<'a>,
    pub is_dj: bool,
    #[serde(borrow)]
    pub message: Cow<'a, str>,
    #[serde(borrow)]
    pub sent_time: TimeB<'a>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PresenceB<'a> {
    #[serde(borrow)]
    pub user: UserB<'a>,
    #[serde(rename = "type")]
    pub kind: PresenceType,
    #[serde(default)]
    pub fan_rank: Option<u64>,
    pub is_manager: bool,
    #[serde(default)]
    pub favorite_temperature: Option<f64>,
    #[serde(borrow)]
    pub time: TimeB<'a>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LikeB<'a> {
    #[serde(borrow)]
    pub user: UserB<'a>,
    #[serde(rename = "type")]
    pub kind: LikeType,
    pub total_amount: u64,
    pub amount: u64,
    pub extra_amount: u64,
    #[serde(default)]
    pub combo: Option<u64>,
    #[serde(borrow)]
    pub time: TimeB<'a>,
}

#[derive(Debug, Deserialize)]
pub struct DonationB<'a> {
    #[serde(borrow)]
    pub user: UserB<'a>,
    pub amount: u64,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    pub message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub time: TimeB<'a>,
}

#[derive(Debug, Deserialize)]
pub struct EndB {
    pub reason: EndReason,
}

#[derive(Debug)]
pub enum EventB<'a> {
    Chat(ChatB<'a>),
    Presence(PresenceB<'a>),
    Like(LikeB<'a>),
    Donation(DonationB<'a>),
    End(EndB),
}

impl<'a> EventB<'a> {
    pub fn user(&self) -> Option<&UserB<'a>> {
        match self {
            EventB::Chat(e) => Some(&e.user),
            EventB::Presence(e) => Some(&e.user),
            EventB::Like(e) => Some(&e.user),
            EventB::Donation(e) => Some(&e.user),
            EventB::End(_) => None,
        }
    }
}

#[derive(Debug)]
pub enum ItemB<'a> {
    Event {
        id: Option<Cow<'a, str>>,
        event: EventB<'a>,
    },
    Other,
}

/// What `Item::from_frame` does, with borrowed payloads.
pub fn from_frame<'a>(frame: &sse::Frame<'a>) -> ItemB<'a> {
    let data = frame.data;
    let event = match frame.event {
        "chat" => serde_json::from_str(data).map(EventB::Chat),
        "presence" => serde_json::from_str(data).map(EventB::Presence),
        "like" => serde_json::from_str(data).map(EventB::Like),
        "donation" => serde_json::from_str(data).map(EventB::Donation),
        "end" => serde_json::from_str(data).map(EventB::End),
        _ => return ItemB::Other,
    };
    match event {
        Ok(event) => ItemB::Event {
            id: frame.id.map(Cow::Borrowed),
            event,
        },
        Err(_) => ItemB::Other,
    }
}
