//! A fast path for the payloads of `chat`, `presence`, `like` and `donation`.
//!
//! The service sends compact JSON objects with a fixed set of keys, and serde's
//! generic machinery (a visitor per field, a key string per field) costs about
//! twice the work of reading them directly (BENCHMARKS.md). [`decode`] first
//! reads the documented shape as a template (each key compared with a
//! constant), then any other object field by field — any key order,
//! whitespace, escapes, unknown fields skipped as serde ignores them — and
//! returns `None` the moment the input is anything it cannot decode exactly as
//! serde would (a duplicate key, an odd number, a lone surrogate, deep nesting,
//! bad JSON). `None` sends the frame down the serde path, which is the
//! reference: every value this returns equals serde's, and every error still
//! comes from serde (tested differentially, and fuzzed by `fuzz/fast_json`).

use super::{Chat, Donation, Event, Like, LikeType, Presence, PresenceType, User};

mod json;

use json::Json;

/// Decodes `data` of a frame named `name` when it is in a form this reader
/// handles exactly; `None` otherwise (and for other names).
pub(super) fn decode(name: &str, data: &str) -> Option<Event> {
    if let Some(event) = documented(name, data) {
        return Some(event);
    }
    let mut json = Json::new(data);
    let event = match name {
        "chat" => Event::Chat(chat(&mut json)?),
        "presence" => Event::Presence(presence(&mut json)?),
        "like" => Event::Like(like(&mut json)?),
        "donation" => Event::Donation(donation(&mut json)?),
        _ => return None,
    };
    json.end()?;
    Some(event)
}

/// The payload in exactly the documented shape (spec 2.6): compact, every
/// field present, in the documented order. Read as a template: each key is one
/// comparison with a constant, no key is scanned or looked up. Anything else
/// returns `None` and [`decode`] reads the object field by field.
fn documented(name: &str, data: &str) -> Option<Event> {
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
            let sent_time = json.timestamp()?;
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
            let time = json.timestamp()?;
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
            let time = json.timestamp()?;
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
            let message = json.nullable(|j| Some(j.string()?.into_owned()))?;
            json.after(b",\"time\":")?;
            let time = json.timestamp()?;
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
    let nickname = json.nullable(|j| Some(j.string()?.into_owned()))?;
    json.after(b"}")?;
    Some(User { id, nickname })
}

fn chat(json: &mut Json<'_>) -> Option<Chat> {
    let (mut user, mut is_dj, mut message, mut sent_time) = (None, None, None, None);
    json.object(|json, key| match key {
        b"user" => set(&mut user, user_object(json)?),
        b"isDj" => set(&mut is_dj, json.bool()?),
        b"message" => set(&mut message, json.string()?.into_owned()),
        b"sentTime" => set(&mut sent_time, json.timestamp()?),
        _ => json.skip(),
    })?;
    Some(Chat {
        user: user?,
        is_dj: is_dj?,
        message: message?,
        sent_time: sent_time?,
    })
}

fn presence(json: &mut Json<'_>) -> Option<Presence> {
    let (mut user, mut kind, mut fan_rank, mut is_manager) = (None, None, None, None);
    let (mut favorite_temperature, mut time) = (None, None);
    json.object(|json, key| match key {
        b"user" => set(&mut user, user_object(json)?),
        b"type" => set(&mut kind, PresenceType::from_wire(&json.string()?)),
        b"fanRank" => set(&mut fan_rank, json.nullable(Json::u64)?),
        b"isManager" => set(&mut is_manager, json.bool()?),
        b"favoriteTemperature" => set(&mut favorite_temperature, json.nullable(Json::f64)?),
        b"time" => set(&mut time, json.timestamp()?),
        _ => json.skip(),
    })?;
    Some(Presence {
        user: user?,
        kind: kind?,
        fan_rank: fan_rank.flatten(),
        is_manager: is_manager?,
        favorite_temperature: favorite_temperature.flatten(),
        time: time?,
    })
}

fn like(json: &mut Json<'_>) -> Option<Like> {
    let (mut user, mut kind, mut total_amount, mut amount) = (None, None, None, None);
    let (mut extra_amount, mut combo, mut time) = (None, None, None);
    json.object(|json, key| match key {
        b"user" => set(&mut user, user_object(json)?),
        b"type" => set(&mut kind, LikeType::from_wire(&json.string()?)),
        b"totalAmount" => set(&mut total_amount, json.u64()?),
        b"amount" => set(&mut amount, json.u64()?),
        b"extraAmount" => set(&mut extra_amount, json.u64()?),
        b"combo" => set(&mut combo, json.nullable(Json::u64)?),
        b"time" => set(&mut time, json.timestamp()?),
        _ => json.skip(),
    })?;
    Some(Like {
        user: user?,
        kind: kind?,
        total_amount: total_amount?,
        amount: amount?,
        extra_amount: extra_amount?,
        combo: combo.flatten(),
        time: time?,
    })
}

fn donation(json: &mut Json<'_>) -> Option<Donation> {
    let (mut user, mut amount, mut message, mut time) = (None, None, None, None);
    json.object(|json, key| match key {
        b"user" => set(&mut user, user_object(json)?),
        b"amount" => set(&mut amount, json.u64()?),
        b"message" => set(
            &mut message,
            json.nullable(|j| Some(j.string()?.into_owned()))?,
        ),
        b"time" => set(&mut time, json.timestamp()?),
        _ => json.skip(),
    })?;
    Some(Donation {
        user: user?,
        amount: amount?,
        message: message.flatten(),
        time: time?,
    })
}

fn user_object(json: &mut Json<'_>) -> Option<User> {
    let (mut id, mut nickname) = (None, None);
    json.object(|json, key| match key {
        b"id" => set(&mut id, json.string()?.into_owned()),
        b"nickname" => set(
            &mut nickname,
            json.nullable(|j| Some(j.string()?.into_owned()))?,
        ),
        _ => json.skip(),
    })?;
    Some(User {
        id: id?,
        nickname: nickname.flatten(),
    })
}

/// Stores a field's value; a second value for the same field is a duplicate
/// key, which serde rejects, so it ends the fast path.
fn set<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

#[cfg(test)]
mod tests;
