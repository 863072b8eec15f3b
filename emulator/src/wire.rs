//! The emulator's own wire writers: JSON objects in a fixed field order, the
//! RFC 7807 problem body (spec 7.1), the RFC 6749 error body (7.4), the
//! stream's open-failure body (7.2) and SSE frames exactly as spec 4.6 writes
//! them, with the WHATWG-legal variations of [`WireConfig`] when asked.
//!
//! Independent of the core on purpose: a misread field must not cancel out
//! between client and server.
//!
//! ```
//! use onair_emulator::wire::{Obj, WireConfig, event_frame};
//! let data = Obj::new().str("reason", "RECONNECT").finish();
//! assert_eq!(data, r#"{"reason":"RECONNECT"}"#);
//! let frame = event_frame(&WireConfig::default(), None, "end", &data);
//! assert_eq!(&frame[..], b"event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n");
//! ```

use bytes::Bytes;
use serde::Deserialize;

/// Builds one JSON object, fields in the order written.
#[derive(Debug)]
pub struct Obj {
    out: String,
    empty: bool,
}

impl Default for Obj {
    fn default() -> Self {
        Self::new()
    }
}

impl Obj {
    /// An empty object.
    pub fn new() -> Self {
        Self {
            out: String::from("{"),
            empty: true,
        }
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        push_json_str(&mut self.out, key);
        self.out.push(':');
    }

    /// A string field.
    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        push_json_str(&mut self.out, value);
        self
    }

    /// A string-or-null field.
    pub fn opt_str(mut self, key: &str, value: Option<&str>) -> Self {
        self.key(key);
        match value {
            Some(v) => push_json_str(&mut self.out, v),
            None => self.out.push_str("null"),
        }
        self
    }

    /// A number field.
    pub fn num(mut self, key: &str, value: i64) -> Self {
        self.key(key);
        self.out.push_str(&value.to_string());
        self
    }

    /// A number-or-null field.
    pub fn opt_num(mut self, key: &str, value: Option<i64>) -> Self {
        self.key(key);
        match value {
            Some(v) => self.out.push_str(&v.to_string()),
            None => self.out.push_str("null"),
        }
        self
    }

    /// A boolean field.
    pub fn bool(mut self, key: &str, value: bool) -> Self {
        self.key(key);
        self.out.push_str(if value { "true" } else { "false" });
        self
    }

    /// A `null` field.
    pub fn null(mut self, key: &str) -> Self {
        self.key(key);
        self.out.push_str("null");
        self
    }

    /// A field whose value is already JSON text (an object or array).
    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.key(key);
        self.out.push_str(json);
        self
    }

    /// The finished object text.
    pub fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

/// Appends `s` as a JSON string literal.
pub fn push_json_str(out: &mut String, s: &str) {
    // serde_json's escaping of a plain &str cannot fail.
    out.push_str(&serde_json::Value::from(s).to_string());
}

/// A JSON array of already-written JSON values.
pub fn array<I: IntoIterator<Item = String>>(items: I) -> String {
    let mut out = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}

/// The reason phrase of a status (the problem body's `title`).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// The bot endpoints' error body (spec 7.1). `detail_code` `None` is the
/// gateway's shape: the field is left out.
pub fn problem(
    instance: &str,
    status: u16,
    detail_code: Option<&str>,
    message: &str,
    now_ms: i64,
) -> String {
    let mut o = Obj::new()
        .str("instance", instance)
        .num("status", i64::from(status))
        .str("title", reason_phrase(status));
    if let Some(code) = detail_code {
        o = o.str("detailCode", code);
    }
    o.str("message", message)
        .null("userId")
        .null("extra")
        .num("timestamp", now_ms)
        .finish()
}

/// The token endpoints' error body (RFC 6749 5.2, spec 7.4).
pub fn oauth_error(error: &str, description: &str) -> String {
    Obj::new()
        .str("error", error)
        .str("error_description", description)
        .finish()
}

/// The body of a stream open failure (spec 7.2): `data:{status,detailCode,message}`.
pub fn stream_error(status: u16, detail_code: Option<&str>, message: &str) -> String {
    let mut o = Obj::new().num("status", i64::from(status));
    if let Some(code) = detail_code {
        o = o.str("detailCode", code);
    }
    format!("data:{}\n\n", o.str("message", message).finish())
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

/// Decodes `%XX` escapes and `+` (form encoding); bad escapes stay as they are.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
