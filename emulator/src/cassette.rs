//! Cassettes: a recorded night on air (`onair record`), played back by
//! `onair serve --replay` ([`crate::replay`]) or turned into a scenario
//! ([`Cassette::to_scenario`]).
//!
//! The format is JSON Lines. The first line is the header
//! `{"format":"onair.cassette","version":1,…}` ([`Header`]); every other line
//! is one [`Entry`], in the order things happened, with `atMs`: real
//! milliseconds since the recording started. Bytes are base64 (standard
//! alphabet, padded):
//!
//! - `{"type":"open","conn":N,"atMs","liveId","status","headers":[[name,value],…]}`:
//!   the event stream's opening answer (any status: a refused connect is a
//!   connection too, its body in the chunks that follow);
//! - `{"type":"chunk","conn":N,"atMs","bytes":"…","rewritten":bool}`: the
//!   bytes of one read, exactly as received (line ends, BOM and chunking
//!   kept); `rewritten` when pseudonymising rewrote a frame's `data:` JSON in it;
//! - `{"type":"close","conn":N,"atMs","how":"eof|error|client"}`: the server
//!   closed the connection (`eof`, after an end frame or not), the read
//!   failed (`error`: a drop), or the recorder closed it (`client`: its
//!   watchdog found it silent, or it stopped);
//! - `{"type":"rest","atMs","method","path","query","status","headers","body","rewritten"}`:
//!   one read call's answer (`GET /v1/live`, listeners, fans) with its
//!   quota headers.
//!
//! No request header (so no `Authorization`), no token endpoint call and no
//! chat is ever written.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The header's `format`.
pub const FORMAT: &str = "onair.cassette";
/// The header's `version` this emulator reads and writes.
pub const VERSION: u32 = 1;

/// The first line of a cassette.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// Wall-clock time the recording started, epoch ms.
    pub recorded_at_ms: i64,
    /// Ids, nicknames (and texts unless `keepText`) replaced by stand-ins.
    pub pseudonymised: bool,
    /// Message texts kept as they were.
    pub keep_text: bool,
}

impl Header {
    /// A version-1 header.
    pub fn new(recorded_at_ms: i64, pseudonymised: bool, keep_text: bool) -> Self {
        Self {
            format: FORMAT.to_owned(),
            version: VERSION,
            recorded_at_ms,
            pseudonymised,
            keep_text,
        }
    }
}

/// How a stream connection ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum CloseHow {
    /// The server closed it (after an end frame, or a drop without one).
    Eof,
    /// The read failed (the connection was cut).
    Error,
    /// The recorder closed it (its watchdog, or it stopped).
    Client,
}

/// One line after the header.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Entry {
    /// A stream connection's opening answer.
    Open {
        /// The connection's number, from 0.
        conn: u32,
        /// Real ms since the start.
        at_ms: u64,
        /// The broadcast the recorder believed it followed (its last `GET /v1/live`).
        live_id: Option<u64>,
        /// HTTP status.
        status: u16,
        /// Response headers, in order.
        headers: Vec<(String, String)>,
    },
    /// Bytes of one read.
    Chunk {
        /// The connection.
        conn: u32,
        /// Real ms since the start.
        at_ms: u64,
        /// Base64 bytes.
        bytes: String,
        /// A frame's data JSON in it was rewritten (pseudonymised).
        rewritten: bool,
    },
    /// The connection closed.
    Close {
        /// The connection.
        conn: u32,
        /// Real ms since the start.
        at_ms: u64,
        /// How.
        how: CloseHow,
    },
    /// A read call's answer.
    Rest {
        /// Real ms since the start.
        at_ms: u64,
        /// `GET`.
        method: String,
        /// `/v1/live`, `/v1/live/listeners` or `/v1/live/fans`.
        path: String,
        /// The query string, if any (a listeners cursor).
        query: Option<String>,
        /// HTTP status.
        status: u16,
        /// Response headers (the quota's among them), in order.
        headers: Vec<(String, String)>,
        /// Base64 body.
        body: String,
        /// The body was rewritten (pseudonymised).
        rewritten: bool,
    },
}

impl Entry {
    /// The entry as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Base64 of `bytes` (the cassette's alphabet).
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// One recorded stream connection, its times relative to its opening.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// The broadcast it belonged to, as recorded.
    pub live_id: Option<u64>,
    /// Opening status.
    pub status: u16,
    /// Opening headers.
    pub headers: Vec<(String, String)>,
    /// (ms after the opening, bytes).
    pub chunks: Vec<(u64, Vec<u8>)>,
    /// (ms after the opening, how); `None` when the recording stopped first.
    pub close: Option<(u64, CloseHow)>,
}

/// One recorded read-call answer.
#[derive(Debug, Clone)]
pub struct RestAnswer {
    /// The query it answered.
    pub query: Option<String>,
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

/// A cassette read.
#[derive(Debug, Clone)]
pub struct Cassette {
    /// Its header.
    pub header: Header,
    /// Stream connections in opening order.
    pub connections: Vec<Connection>,
    /// Read-call answers by `"METHOD path"`, in order.
    pub rest: HashMap<String, Vec<RestAnswer>>,
}

impl Cassette {
    /// Reads a cassette's text.
    ///
    /// # Errors
    /// A line that is not JSON, a header of another format or version, bad
    /// base64, or an entry of a connection never opened: the line's number
    /// and what is wrong.
    pub fn parse(text: &str) -> Result<Cassette, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or("empty cassette: no header line")?;
        let header: Header = serde_json::from_str(first)
            .map_err(|e| format!("line 1: not a cassette header: {e}"))?;
        if header.format != FORMAT {
            return Err(format!(
                "line 1: format {:?}, not {FORMAT:?}",
                header.format
            ));
        }
        if header.version != VERSION {
            return Err(format!(
                "line 1: cassette version {} (this emulator reads {VERSION})",
                header.version
            ));
        }
        let mut connections: Vec<Connection> = Vec::new();
        let mut opened_at: Vec<u64> = Vec::new();
        let mut rest: HashMap<String, Vec<RestAnswer>> = HashMap::new();
        let mut live_answers: Vec<(u64, u64)> = Vec::new();
        for (i, line) in lines {
            let n = i + 1;
            let entry: Entry = serde_json::from_str(line).map_err(|e| format!("line {n}: {e}"))?;
            let decode = |b: &str| {
                STANDARD
                    .decode(b)
                    .map_err(|e| format!("line {n}: base64: {e}"))
            };
            match entry {
                Entry::Open {
                    conn,
                    at_ms,
                    live_id,
                    status,
                    headers,
                } => {
                    if conn as usize != connections.len() {
                        return Err(format!("line {n}: connection {conn} opened out of order"));
                    }
                    connections.push(Connection {
                        live_id,
                        status,
                        headers,
                        ..Connection::default()
                    });
                    opened_at.push(at_ms);
                }
                Entry::Chunk {
                    conn, at_ms, bytes, ..
                } => {
                    let c = connections
                        .get_mut(conn as usize)
                        .ok_or(format!("line {n}: connection {conn} was never opened"))?;
                    let t = at_ms.saturating_sub(opened_at[conn as usize]);
                    c.chunks.push((t, decode(&bytes)?));
                }
                Entry::Close { conn, at_ms, how } => {
                    let c = connections
                        .get_mut(conn as usize)
                        .ok_or(format!("line {n}: connection {conn} was never opened"))?;
                    c.close = Some((at_ms.saturating_sub(opened_at[conn as usize]), how));
                }
                Entry::Rest {
                    at_ms,
                    method,
                    path,
                    query,
                    status,
                    headers,
                    body,
                    ..
                } => {
                    let body = decode(&body)?;
                    if path == crate::paths::Endpoint::Live.path() && status == 200 {
                        let id = serde_json::from_slice::<Value>(&body)
                            .ok()
                            .and_then(|v| v.get("liveId").and_then(Value::as_u64));
                        live_answers.extend(id.map(|id| (at_ms, id)));
                    }
                    rest.entry(format!("{method} {path}"))
                        .or_default()
                        .push(RestAnswer {
                            query,
                            status,
                            headers,
                            body,
                        });
                }
            }
        }
        // A stream opened before the first `GET /v1/live` was answered
        // belongs to the broadcast that answer names.
        let mut lives: Vec<(u64, u64)> = live_answers;
        lives.sort_by_key(|(at, _)| *at);
        for (c, at) in connections.iter_mut().zip(&opened_at) {
            if c.live_id.is_none() {
                c.live_id = lives
                    .iter()
                    .find(|(t, _)| t >= at)
                    .or(lives.last())
                    .map(|(_, id)| *id);
            }
        }
        Ok(Cassette {
            header,
            connections,
            rest,
        })
    }

    /// The cassette as an ordinary scenario (`crate::scenario`'s JSON): the
    /// broadcast started with the first recorded `GET /v1/live`'s title,
    /// each event frame of an opened connection an `emit` step with its
    /// data, spaced as recorded; each end frame a `streamsEnd` (`LIVE_ENDED`
    /// a `liveEnd`), each connection that ended without one a
    /// `streamsDrop`, each followed by a `waitForStream`. What it cannot
    /// say: the exact bytes and chunking, refused connects, REST answers.
    pub fn to_scenario(&self, name: &str) -> Value {
        let title = self
            .rest
            .get("GET /v1/live")
            .and_then(|a| a.iter().find(|a| a.status == 200))
            .and_then(|a| serde_json::from_slice::<Value>(&a.body).ok())
            .and_then(|v| v.get("title").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| "Replayed broadcast".to_owned());
        let mut steps = vec![
            json!({"do": "state", "botManager": true}),
            json!({"do": "liveStart", "title": title}),
            json!({"do": "waitForStream"}),
        ];
        for c in self.connections.iter().filter(|c| c.status == 200) {
            let mut reader = SseReader::default();
            let mut last = 0u64;
            let mut ended = false;
            for (t, bytes) in &c.chunks {
                for f in reader.feed(bytes) {
                    let after = t.saturating_sub(last);
                    last = *t;
                    match f.event.as_deref() {
                        Some("end") => {
                            let reason = serde_json::from_str::<Value>(&f.data)
                                .ok()
                                .and_then(|v| {
                                    v.get("reason").and_then(Value::as_str).map(str::to_owned)
                                })
                                .unwrap_or_else(|| "RECONNECT".to_owned());
                            ended = true;
                            if reason == "LIVE_ENDED" {
                                steps.push(json!({"do": "liveEnd", "afterMs": after}));
                            } else {
                                steps.push(
                                    json!({"do": "streamsEnd", "afterMs": after, "reason": reason}),
                                );
                                steps.push(json!({"do": "waitForStream"}));
                            }
                        }
                        Some(kind @ ("chat" | "presence" | "like" | "donation")) => {
                            if let Ok(data) = serde_json::from_str::<Value>(&f.data) {
                                steps.push(json!({"do": "emit", "afterMs": after, "event": kind, "data": data}));
                            }
                        }
                        _ => {}
                    }
                }
            }
            if !ended && c.close.is_some_and(|(_, how)| how != CloseHow::Client) {
                steps.push(json!({"do": "streamsDrop"}));
                steps.push(json!({"do": "waitForStream"}));
            }
        }
        json!({
            "name": name,
            "description": "Converted from a cassette (onair record --to-scenario).",
            "steps": steps,
        })
    }
}

/// One frame of an event stream as read back (the emulator's own small
/// reading of the SSE framing, independent of the core's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseFrame {
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:` field.
    pub id: Option<String>,
}

/// An incremental SSE reader: any chunking, LF, CRLF or CR line ends, a
/// leading BOM, comments.
#[derive(Debug, Default)]
pub struct SseReader {
    line: Vec<u8>,
    started: bool,
    after_cr: bool,
    frame: SseFrame,
    has_field: bool,
}

impl SseReader {
    /// Feeds bytes; returns the frames they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseFrame> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, &mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    fn line_done(&mut self, raw: &[u8], out: &mut Vec<SseFrame>) {
        let mut line = raw;
        if !self.started {
            self.started = true;
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            if self.has_field {
                out.push(std::mem::take(&mut self.frame));
                self.has_field = false;
            }
            return;
        }
        if line.first() == Some(&b':') {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (name, value) = match text.split_once(':') {
            Some((n, v)) => (n, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match name {
            "event" => self.frame.event = Some(value.to_owned()),
            "data" => {
                if self.has_field && !self.frame.data.is_empty() {
                    self.frame.data.push('\n');
                }
                self.frame.data.push_str(value);
            }
            "id" => self.frame.id = Some(value.to_owned()),
            _ => return,
        }
        self.has_field = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_takes_cr_crlf_lf_a_bom_and_any_chunking() {
        let wire =
            "\u{feff}: hi\revent: chat\r\nid: 5-1\ndata: {\"a\":1}\r\r\nevent: end\rdata: {}\r\r";
        let whole = SseReader::default().feed(wire.as_bytes());
        let mut one = SseReader::default();
        let bytewise: Vec<SseFrame> = wire
            .as_bytes()
            .iter()
            .flat_map(|b| one.feed(&[*b]))
            .collect();
        assert_eq!(whole, bytewise);
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].event.as_deref(), Some("chat"));
        assert_eq!(whole[0].id.as_deref(), Some("5-1"));
        assert_eq!(whole[0].data, "{\"a\":1}");
        assert_eq!(whole[1].event.as_deref(), Some("end"));
    }

    #[test]
    fn a_cassette_reads_back_and_refuses_another_version() {
        let text = [
            serde_json::to_string(&Header::new(0, true, false)).unwrap_or_default(),
            Entry::Open {
                conn: 0,
                at_ms: 10,
                live_id: Some(3),
                status: 200,
                headers: vec![],
            }
            .to_line(),
            Entry::Chunk {
                conn: 0,
                at_ms: 15,
                bytes: encode(b"event: end\ndata: {\"reason\":\"LIVE_ENDED\"}\n\n"),
                rewritten: false,
            }
            .to_line(),
            Entry::Close {
                conn: 0,
                at_ms: 16,
                how: CloseHow::Eof,
            }
            .to_line(),
        ]
        .join("\n");
        let c = Cassette::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.connections.len(), 1);
        assert_eq!(c.connections[0].chunks[0].0, 5);
        assert_eq!(c.connections[0].close, Some((6, CloseHow::Eof)));
        let steps = c.to_scenario("x")["steps"].clone();
        assert_eq!(steps[3]["do"], "liveEnd");
        let v2 = text.replacen("\"version\":1", "\"version\":2", 1);
        assert!(Cassette::parse(&v2).unwrap_err().contains("version 2"));
    }
}
