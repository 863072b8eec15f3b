//! Replay: `onair serve --replay CASSETTE` plays a [`Cassette`](crate::cassette::Cassette) to any bot.
//!
//! The emulator runs as ever (OAuth, the consent page, the control API), but
//! the bot endpoints answer from the cassette: the n-th `GET
//! /v1/live/events` gets the n-th recorded connection (its status and
//! headers, the same bytes in the same chunks at the recorded times divided
//! by the speed, then its recorded end: the server closing, a cut, or —
//! where the recorder closed it — nothing until the bot closes it); `GET
//! /v1/live`, listeners and fans get the recorded answers of that endpoint
//! in order (the last one again once they run out). A valid Bearer token of
//! the emulator is needed, as ever. Chat is accepted (204) and kept in the chat log.
//!
//! The ledger counts what the replay delivered (frames with an `event:`
//! line, handed to the connection), in the emulator's usual shape, under
//! the recorded `liveId`.
//!
//! A request the cassette has no answer for (an endpoint never recorded,
//! chat, more stream connections than recorded) is remembered
//! ([`Replay::unrecorded`]): with `--strict`, `onair serve` names each and
//! exits 1.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::body::EmuBody;
use crate::cassette::{CloseHow, Connection, SseFrame, SseReader};
use crate::events::{EventInfo, Kind};
use crate::ledger::BotLedger;
use crate::oauth;
use crate::paths::Endpoint;
pub use crate::playback::{Replay, ReplayBody};
use crate::shared::Shared;

/// Logs and remembers a request the cassette had no answer for.
fn note(shared: &Shared, replay: &Replay, line: String) {
    shared
        .world()
        .log(format!("replay: no recorded answer for {line}"));
    replay.push_unrecorded(line);
}

/// Whether the replay answers `path` (the bot endpoints; the token
/// endpoints, the consent page and the control API stay the emulator's).
fn replayed(path: &str) -> bool {
    Endpoint::of_path(path).is_some_and(|e| !e.is_oauth())
}

/// Answers one bot request from the cassette; `None` leaves it to the
/// emulator (another path, a Bearer it refuses, or nothing recorded).
/// A chat post (`body`) is taken and kept in the chat log (`GET
/// /_emulator/chat`) under the broadcast being replayed.
#[allow(clippy::too_many_arguments)]
pub fn handle(
    shared: &Shared,
    replay: &Replay,
    method: &str,
    path: &str,
    query: Option<&str>,
    authorization: Option<&str>,
    body: &[u8],
    now: i64,
) -> Option<Response<EmuBody>> {
    if !replayed(path) {
        return None;
    }
    let auth = {
        let w = shared.world();
        let auth = oauth::bearer(&w, authorization, now).ok()?;
        let i = &w.integrations[auth.integration];
        (w.apps[i.app].client_id.clone(), i.id.clone())
    };
    let what = match query {
        Some(q) => format!("{method} {path}?{}", crate::requests::redact_query(q)),
        None => format!("{method} {path}"),
    };
    if path == Endpoint::Chat.path() {
        let message = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let live_id = replay.lock().live_id.unwrap_or(0);
        {
            let mut w = shared.world();
            let dj = w.djs[0].name.clone();
            w.chat_log.push(crate::world::ChatRecord {
                at_ms: now,
                time: crate::clock::iso(now),
                dj,
                live_id,
                client_id: auth.0.clone(),
                integration: auth.1.clone(),
                message,
            });
        }
        note(shared, replay, what);
        return Some(respond(204, &[], EmuBody::Full(None)));
    }
    if path == Endpoint::Events.path() {
        let n = {
            let mut s = replay.lock();
            let n = s.next_conn;
            s.next_conn += 1;
            n
        };
        if let Some(id) = replay.cassette.connections.get(n).and_then(|c| c.live_id) {
            replay.lock().live_id = Some(id);
        }
        let Some(conn) = replay.cassette.connections.get(n) else {
            note(
                shared,
                replay,
                format!(
                    "{what} (connection {} of {} recorded)",
                    n + 1,
                    replay.cassette.connections.len()
                ),
            );
            return None;
        };
        return Some(stream(shared, replay, conn, &auth));
    }
    let key = format!("{method} {path}");
    let answer = {
        let mut s = replay.lock();
        match replay.cassette.rest.get(&key) {
            Some(list) if !list.is_empty() => {
                let i = s.rest_next.entry(key).or_default();
                let a = &list[(*i).min(list.len() - 1)];
                *i += 1;
                Some(a.clone())
            }
            _ => None,
        }
    };
    let Some(a) = answer else {
        note(shared, replay, what);
        return None;
    };
    Some(respond(
        a.status,
        &a.headers,
        EmuBody::Full((!a.body.is_empty()).then(|| Bytes::from(a.body))),
    ))
}

/// A response with recorded headers (the framing ones left to hyper).
fn respond(status: u16, headers: &[(String, String)], body: EmuBody) -> Response<EmuBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if matches!(
            lower.as_str(),
            "content-length" | "transfer-encoding" | "connection" | "keep-alive"
        ) {
            continue;
        }
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(lower.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            resp.headers_mut().append(n, v);
        }
    }
    resp
}

/// One recorded connection, played on its own task.
fn stream(
    shared: &Shared,
    replay: &Replay,
    conn: &Connection,
    (client_id, integration): &(String, String),
) -> Response<EmuBody> {
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(1);
    let ledger = (conn.status == 200).then(|| {
        let mut w = shared.world();
        w.log(format!("replay: stream connection for {client_id}"));
        w.replay_ledger(conn.live_id.unwrap_or(0), client_id, integration)
    });
    let clock = Arc::clone(&shared.clock);
    let index = ledger.as_ref().map(|l| l.open(clock.now_ms()));
    let chunks: Vec<(Duration, Vec<u8>)> = conn
        .chunks
        .iter()
        .map(|(t, b)| (replay.delay(*t), b.clone()))
        .collect();
    let close = conn.close.map(|(t, how)| (replay.delay(t), how));
    let finished = Arc::clone(&replay.finished);
    tokio::spawn(async move {
        let start = Instant::now();
        let mut reader = SseReader::default();
        let mut counter = 0u64;
        let mut gone = false;
        for (at, bytes) in chunks {
            tokio::select! {
                () = tokio::time::sleep_until(start + at) => {}
                () = tx.closed() => { gone = true; break; }
            }
            let frames = reader.feed(&bytes);
            if tx.send(Ok(Bytes::from(bytes))).await.is_err() {
                gone = true;
                break;
            }
            if let (Some(l), Some(i)) = (&ledger, index) {
                for f in frames {
                    count(l, i, &f, &mut counter);
                }
            }
        }
        if !gone {
            match close {
                Some((at, how @ (CloseHow::Eof | CloseHow::Error))) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(start + at) => {
                            if how == CloseHow::Error {
                                let _ = tx.send(Err(io::Error::other("recorded drop"))).await;
                            }
                        }
                        () = tx.closed() => {}
                    }
                }
                // The recorder closed it (or stopped): open until the bot closes it.
                _ => tx.closed().await,
            }
        }
        drop(tx);
        if let (Some(l), Some(i)) = (&ledger, index) {
            l.close(i, clock.now_ms());
        }
        finished.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    });
    respond(
        conn.status,
        &conn.headers,
        EmuBody::Replay(Box::new(ReplayBody { rx })),
    )
}

/// What the ledger counts of one replayed frame.
fn count(ledger: &BotLedger, conn: usize, f: &SseFrame, counter: &mut u64) {
    let Some(name) = f.event.as_deref() else {
        return;
    };
    let data: Value = serde_json::from_str(&f.data).unwrap_or(Value::Null);
    if name == "end" {
        let reason = data.get("reason").and_then(Value::as_str).unwrap_or("");
        ledger.record(conn, None, Some(reason));
        return;
    }
    let kind = match name {
        "chat" => Kind::Chat,
        "presence" => Kind::Presence,
        "like" => Kind::Like,
        "donation" => Kind::Donation,
        _ => Kind::Unknown,
    };
    let user = data.get("user");
    let text = |v: Option<&Value>, k: &str| {
        v.and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let number = |k: &str| data.get(k).and_then(Value::as_u64).unwrap_or(0);
    *counter += 1;
    let seq =
        f.id.as_deref()
            .and_then(|id| id.split_once('-'))
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .unwrap_or((i64::MIN, *counter));
    let info = EventInfo {
        kind,
        user_id: text(user, "id").unwrap_or_default(),
        nickname: text(user, "nickname"),
        is_dj: kind == Kind::Chat && data.get("isDj").and_then(Value::as_bool) == Some(true),
        hearts: if kind == Kind::Like {
            number("totalAmount")
        } else {
            0
        },
        paid: kind == Kind::Like && data.get("type").and_then(Value::as_str) == Some("PAID"),
        donated: if kind == Kind::Donation {
            number("amount")
        } else {
            0
        },
        seq,
    };
    ledger.record(conn, Some(&info), None);
}
