//! The reader of the payloads of `chat`, `presence`, `like`, `donation` and
//! `end`: every event the stream carries is read here, and every decoding
//! error comes from here.
//!
//! The service sends compact JSON objects with a fixed set of keys, and a
//! generic reader (a visitor per field, a key string per field) costs about
//! twice the work of reading them directly (BENCHMARKS.md). So
//! [`documented`] first reads the documented shape as a template (each key
//! compared with a constant); anything else goes to [`read`], field by
//! field — any key order, whitespace, escapes, unknown fields skipped but
//! checked — which answers an event or the [`Fault`] that stops it (a
//! missing or duplicate field, a wrong type, text that is not JSON).

use super::{Chat, Donation, End, EndReason, Event, Like, LikeType, Presence, PresenceType, User};
use crate::time::Timestamp;
use crate::wire::json::{self, field, need, Fault, Json};

/// Reads `data` of a frame named `name` field by field: the event, `None`
/// for a name that is not one of the service's events, or the fault.
pub(super) fn read(name: &str, data: &str) -> Result<Option<Event>, Fault> {
    let event = match name {
        "chat" => json::read(data, chat).map(Event::Chat),
        "presence" => json::read(data, presence).map(Event::Presence),
        "like" => json::read(data, like).map(Event::Like),
        "donation" => json::read(data, donation).map(Event::Donation),
        "end" => end(data).map(Event::End),
        _ => return Ok(None),
    };
    event.map(Some)
}

/// The end frame's data: the documented `{"reason":…}` object. A bare reason
/// (`LIVE_ENDED` or `"LIVE_ENDED"`) is accepted too, because the spec writes the
/// frame as `data:{reason}` and missing an end frame would break reconnection.
fn end(data: &str) -> Result<End, Fault> {
    let trimmed = data.trim();
    let bare = !trimmed.is_empty()
        && trimmed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if bare {
        return Ok(End {
            reason: EndReason::from_wire(trimmed),
        });
    }
    let reason = |json: &mut Json<'_>| Some(EndReason::from_wire(&json.string()?));
    if trimmed.starts_with('"') {
        return json::read(data, reason).map(|reason| End { reason });
    }
    json::read(data, |json| {
        let mut slot = None;
        json.object(&mut |json, key| match key {
            b"reason" => field(json, &mut slot, "reason", reason),
            _ => json.skip(),
        })?;
        Some(End {
            reason: need(json, slot, "reason")?,
        })
    })
}

/// The payload in exactly the documented shape (spec 2.6): compact, every
/// field present, in the documented order. Read as a template: each key is one
/// comparison with a constant, no key is scanned or looked up. Anything else
/// returns `None` and [`read`] reads the object field by field.
pub(super) fn documented(name: &str, data: &str) -> Option<Event> {
    let mut json = Json::new(data);
    let event = match name {
        "chat" => {
            let user = json
                .after(b"{\"user\":")
                .and_then(|()| documented_user(&mut json))?;
            json.after(b",\"isDj\":")?;
            let is_dj = json.bool()?;
            json.after(b",\"message\":")?;
            let message = json.string()?.into_owned();
            json.after(b",\"sentTime\":")?;
            let sent_time = Timestamp::read(&mut json)?;
            Event::Chat(Chat {
                user,
                is_dj,
                message,
                sent_time,
            })
        }
        "like" => {
            let user = json
                .after(b"{\"user\":")
                .and_then(|()| documented_user(&mut json))?;
            json.after(b",\"type\":")?;
            let kind = LikeType::from_wire(&json.string()?);
            json.after(b",\"totalAmount\":")?;
            let total_amount = json.u64()?;
            json.after(b",\"amount\":")?;
            let amount = json.u64()?;
            json.after(b",\"extraAmount\":")?;
            let extra_amount = json.u64()?;
            json.after(b",\"combo\":")?;
            let combo = json.nullable(Json::u64)?;
            json.after(b",\"time\":")?;
            let time = Timestamp::read(&mut json)?;
            Event::Like(Like {
                user,
                kind,
                total_amount,
                amount,
                extra_amount,
                combo,
                time,
            })
        }
        "presence" => {
            let user = json
                .after(b"{\"user\":")
                .and_then(|()| documented_user(&mut json))?;
            json.after(b",\"type\":")?;
            let kind = PresenceType::from_wire(&json.string()?);
            json.after(b",\"fanRank\":")?;
            let fan_rank = json.nullable(Json::u64)?;
            json.after(b",\"isManager\":")?;
            let is_manager = json.bool()?;
            json.after(b",\"favoriteTemperature\":")?;
            let favorite_temperature = json.nullable(Json::f64)?;
            json.after(b",\"time\":")?;
            let time = Timestamp::read(&mut json)?;
            Event::Presence(Presence {
                user,
                kind,
                fan_rank,
                is_manager,
                favorite_temperature,
                time,
            })
        }
        "donation" => {
            let user = json
                .after(b"{\"user\":")
                .and_then(|()| documented_user(&mut json))?;
            json.after(b",\"amount\":")?;
            let amount = json.u64()?;
            json.after(b",\"message\":")?;
            let message = json.nullable_string()?;
            json.after(b",\"time\":")?;
            let time = Timestamp::read(&mut json)?;
            Event::Donation(Donation {
                user,
                amount,
                message,
                time,
            })
        }
        _ => return None,
    };
    json.after(b"}")?;
    json.end()?;
    Some(event)
}

/// `{"id":…,"nickname":…}` exactly (see [`documented`]).
fn documented_user(json: &mut Json<'_>) -> Option<User> {
    json.after(b"{\"id\":")?;
    let id = json.string()?.into_owned();
    json.after(b",\"nickname\":")?;
    let nickname = json.nullable_string()?;
    json.after(b"}")?;
    Some(User { id, nickname })
}

fn chat(json: &mut Json<'_>) -> Option<Chat> {
    let (mut user, mut is_dj, mut message, mut sent_time) = (None, None, None, None);
    json.object_inlined(|json, key| match key {
        b"user" => field(json, &mut user, "user", User::read),
        b"isDj" => field(json, &mut is_dj, "isDj", Json::bool),
        b"message" => field(json, &mut message, "message", Json::owned_string),
        b"sentTime" => field(json, &mut sent_time, "sentTime", Timestamp::read),
        _ => json.skip(),
    })?;
    Some(Chat {
        user: need(json, user, "user")?,
        is_dj: need(json, is_dj, "isDj")?,
        message: need(json, message, "message")?,
        sent_time: need(json, sent_time, "sentTime")?,
    })
}

fn presence(json: &mut Json<'_>) -> Option<Presence> {
    let (mut user, mut kind, mut fan_rank, mut is_manager) = (None, None, None, None);
    let (mut favorite_temperature, mut time) = (None, None);
    json.object_inlined(|json, key| match key {
        b"user" => field(json, &mut user, "user", User::read),
        b"type" => field(json, &mut kind, "type", |json| {
            Some(PresenceType::from_wire(&json.string()?))
        }),
        b"fanRank" => field(json, &mut fan_rank, "fanRank", |json| {
            json.nullable(Json::u64)
        }),
        b"isManager" => field(json, &mut is_manager, "isManager", Json::bool),
        b"favoriteTemperature" => field(
            json,
            &mut favorite_temperature,
            "favoriteTemperature",
            |json| json.nullable(Json::f64),
        ),
        b"time" => field(json, &mut time, "time", Timestamp::read),
        _ => json.skip(),
    })?;
    Some(Presence {
        user: need(json, user, "user")?,
        kind: need(json, kind, "type")?,
        fan_rank: fan_rank.flatten(),
        is_manager: need(json, is_manager, "isManager")?,
        favorite_temperature: favorite_temperature.flatten(),
        time: need(json, time, "time")?,
    })
}

fn like(json: &mut Json<'_>) -> Option<Like> {
    let (mut user, mut kind, mut total_amount, mut amount) = (None, None, None, None);
    let (mut extra_amount, mut combo, mut time) = (None, None, None);
    json.object_inlined(|json, key| match key {
        b"user" => field(json, &mut user, "user", User::read),
        b"type" => field(json, &mut kind, "type", |json| {
            Some(LikeType::from_wire(&json.string()?))
        }),
        b"totalAmount" => field(json, &mut total_amount, "totalAmount", Json::u64),
        b"amount" => field(json, &mut amount, "amount", Json::u64),
        b"extraAmount" => field(json, &mut extra_amount, "extraAmount", Json::u64),
        b"combo" => field(json, &mut combo, "combo", |json| json.nullable(Json::u64)),
        b"time" => field(json, &mut time, "time", Timestamp::read),
        _ => json.skip(),
    })?;
    Some(Like {
        user: need(json, user, "user")?,
        kind: need(json, kind, "type")?,
        total_amount: need(json, total_amount, "totalAmount")?,
        amount: need(json, amount, "amount")?,
        extra_amount: need(json, extra_amount, "extraAmount")?,
        combo: combo.flatten(),
        time: need(json, time, "time")?,
    })
}

fn donation(json: &mut Json<'_>) -> Option<Donation> {
    let (mut user, mut amount, mut message, mut time) = (None, None, None, None);
    json.object_inlined(|json, key| match key {
        b"user" => field(json, &mut user, "user", User::read),
        b"amount" => field(json, &mut amount, "amount", Json::u64),
        b"message" => field(json, &mut message, "message", Json::nullable_string),
        b"time" => field(json, &mut time, "time", Timestamp::read),
        _ => json.skip(),
    })?;
    Some(Donation {
        user: need(json, user, "user")?,
        amount: need(json, amount, "amount")?,
        message: message.flatten(),
        time: need(json, time, "time")?,
    })
}

impl User {
    /// Reads a `user` object (`id` required, `nickname` nullable): the one
    /// reader of the shape, for stored state that keeps users too.
    pub(crate) fn read(json: &mut Json<'_>) -> Option<User> {
        let (mut id, mut nickname) = (None, None);
        json.object_inlined(|json, key| match key {
            b"id" => field(json, &mut id, "id", Json::owned_string),
            b"nickname" => field(json, &mut nickname, "nickname", Json::nullable_string),
            _ => json.skip(),
        })?;
        Some(User {
            id: need(json, id, "id")?,
            nickname: nickname.flatten(),
        })
    }
}

#[cfg(test)]
mod tests;
