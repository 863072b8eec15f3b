//! The emulator's own wire types: JSON bodies as serde derives (fields in
//! the order the spec lists them, nullable fields written as `null`), the
//! RFC 7807 problem body (spec 7.1), the RFC 6749 error body (7.4), the
//! stream's open-failure body (7.2) and SSE frames exactly as spec 4.6 writes
//! them, with the WHATWG-legal variations of [`WireConfig`] when asked.
//!
//! Independent of the core on purpose: a misread field must not cancel out
//! between client and server.
//!
//! ```
//! use onair_emulator::wire::{event_frame, to_json, End, WireConfig};
//! let data = to_json(&End { reason: "RECONNECT" });
//! assert_eq!(data, r#"{"reason":"RECONNECT"}"#);
//! let frame = event_frame(&WireConfig::default(), None, "end", &data);
//! assert_eq!(&frame[..], b"event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n");
//! ```

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// `value` as JSON text.
///
/// The emulator's wire types have string keys only and no fallible
/// `Serialize`, so serde_json cannot refuse them; were it ever to, the body
/// says so rather than the server panicking.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("the emulator could not write this body: {e}") })
            .to_string()
    })
}

/// `user` of an event payload (spec 2.6): `nickname` may be `null`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct User<'a> {
    /// The person's id.
    pub id: &'a str,
    /// The nickname, `null` when unknown.
    pub nickname: Option<&'a str>,
}

/// The `end` event's payload (spec 4.6).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct End<'a> {
    /// `RECONNECT`, `TOKEN_EXPIRED` or `LIVE_ENDED`.
    pub reason: &'a str,
}

/// The bot endpoints' error body (spec 7.1).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem<'a> {
    /// The request path.
    pub instance: &'a str,
    /// The HTTP status.
    pub status: u16,
    /// The status's reason phrase.
    pub title: &'a str,
    /// `None` is the gateway's shape: the field is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail_code: Option<&'a str>,
    /// A human-readable message.
    pub message: &'a str,
    /// Always `null` here.
    pub user_id: Option<&'a str>,
    /// Always `null` here.
    pub extra: Option<&'a str>,
    /// Emulator time, unix milliseconds.
    pub timestamp: i64,
}

/// The token endpoints' error body (RFC 6749 5.2, spec 7.4).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct OAuthError<'a> {
    /// The RFC 6749 error code.
    pub error: &'a str,
    /// Why.
    pub error_description: &'a str,
}

/// The JSON of a stream open failure (spec 7.2), sent as one `data:` line.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamError<'a> {
    /// The HTTP status.
    pub status: u16,
    /// Left out when `None` (the gateway's errors have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail_code: Option<&'a str>,
    /// A human-readable message.
    pub message: &'a str,
}

/// A control API error: `{"error": message}`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ControlError<'a> {
    /// What went wrong.
    pub error: &'a str,
}

/// The reason phrase of a status (the problem body's `title`): the
/// canonical one of `http::StatusCode`, `Error` for a status without one.
pub fn reason_phrase(status: u16) -> &'static str {
    hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error")
}

/// The body of a stream open failure (spec 7.2): `data:{status,detailCode,message}`.
pub fn stream_error(status: u16, detail_code: Option<&str>, message: &str) -> String {
    let data = to_json(&StreamError {
        status,
        detail_code,
        message,
    });
    format!("data:{data}\n\n")
}

/// Line ending of the stream (the WHATWG parser accepts all three).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum LineEnding {
    /// `\n`, the spec's form.
    #[default]
    #[serde(rename = "LF")]
    Lf,
    /// `\r\n`.
    #[serde(rename = "CRLF")]
    CrLf,
    /// `\r` alone.
    #[serde(rename = "CR")]
    Cr,
}

impl LineEnding {
    fn text(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::CrLf => "\r\n",
            LineEnding::Cr => "\r",
        }
    }
}

/// Wire variations a conformant client must survive (control `POST /_emulator/wire`).
/// The default is exactly the spec's frame form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WireConfig {
    /// Line ending.
    pub line_ending: LineEnding,
    /// Write the stream a few bytes per TCP write (0 = whole frames).
    pub chunk_bytes: usize,
    /// Start the stream with a UTF-8 BOM.
    pub bom: bool,
    /// `data: ` with a space after the colon.
    pub space_after_colon: bool,
    /// Comment lines other than the heartbeat inside frames.
    pub comments: bool,
    /// Unknown fields in event payloads.
    pub unknown_fields: bool,
    /// An event name a future server might add, before each event.
    pub unknown_events: bool,
    /// Fractional-second digits of default timestamps (0–9; `None`: 3).
    pub fraction_digits: Option<u8>,
    /// No heartbeat comments: the stream carries only events and end frames
    /// (control `"heartbeats": false`).
    pub heartbeats_off: bool,
}

impl WireConfig {
    /// The heartbeat comment (spec 4.6).
    pub fn heartbeat(&self) -> Bytes {
        let nl = self.line_ending.text();
        Bytes::from(format!(":heartbeat{nl}{nl}"))
    }
}

/// One event frame (spec 4.6): `id:` (when given), `event:`, `data:`, blank line.
pub fn event_frame(wire: &WireConfig, id: Option<&str>, name: &str, data: &str) -> Bytes {
    let nl = wire.line_ending.text();
    let sp = if wire.space_after_colon { " " } else { "" };
    let mut out = String::with_capacity(data.len() + 64);
    if wire.comments {
        out.push_str(":emulator note");
        out.push_str(nl);
    }
    if let Some(id) = id {
        out.push_str("id:");
        out.push_str(sp);
        out.push_str(id);
        out.push_str(nl);
    }
    out.push_str("event:");
    out.push_str(sp);
    out.push_str(name);
    out.push_str(nl);
    out.push_str("data:");
    out.push_str(sp);
    out.push_str(data);
    out.push_str(nl);
    out.push_str(nl);
    Bytes::from(out)
}
