//! A naive reference parser, written from the WHATWG HTML standard's "event
//! stream interpretation" (9.2.6) and nothing else: decode the whole stream as
//! UTF-8, split it into lines, process each line. Tests and fuzzing only: it
//! is the oracle the real [`Parser`](crate::proto::sse::Parser) is checked against, so it
//! shares no code with it and favours plainness over speed.

/// What the reference saw, in the form the tests compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Event {
        event: String,
        data: String,
        /// Whether this frame had an `id` field (then `last_event_id` is it).
        own_id: bool,
        last_event_id: String,
    },
    Comment(String),
    Retry(u64),
    /// The stream ended inside a frame or a line.
    Incomplete,
}

impl Seen {
    /// What the real parser said, in the reference's terms; `None` for an
    /// oversized frame (the cap is onair's, not the standard's).
    pub fn of(item: &super::Item<'_>) -> Option<Seen> {
        use super::{FrameErrorKind, Item};
        Some(match item {
            Item::Event(f) => Seen::Event {
                event: f.event.to_string(),
                data: f.data.to_string(),
                own_id: f.id.is_some(),
                last_event_id: f.last_event_id.to_string(),
            },
            Item::Comment(text) => Seen::Comment(text.to_string()),
            Item::Retry(ms) => Seen::Retry(*ms),
            Item::Error(e) => match e.kind {
                FrameErrorKind::Incomplete => Seen::Incomplete,
                FrameErrorKind::TooLarge { .. } => return None,
            },
        })
    }
}

/// Parses a whole stream.
pub fn parse(stream: &[u8]) -> Vec<Seen> {
    // "Streams must be decoded using the UTF-8 decode algorithm": one leading
    // BOM is dropped and invalid sequences become U+FFFD.
    let bytes = stream.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(stream);
    let text = String::from_utf8_lossy(bytes);

    let mut out = Vec::new();
    let mut data = String::new();
    let mut event_type = String::new();
    let mut last_event_id = String::new();
    let mut own_id = false;

    // "Lines must be separated by either a CRLF pair, a single LF, or a
    // single CR." What follows the last line end is not a line.
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                lines.push(std::mem::take(&mut line));
            }
            '\n' => lines.push(std::mem::take(&mut line)),
            c => line.push(c),
        }
    }
    let unterminated = !line.is_empty();

    for line in lines {
        if line.is_empty() {
            // Dispatch the event.
            if data.is_empty() {
                event_type.clear();
                own_id = false;
                continue;
            }
            if data.ends_with('\n') {
                data.pop();
            }
            let event = if event_type.is_empty() {
                "message".to_string()
            } else {
                event_type.clone()
            };
            out.push(Seen::Event {
                event,
                data: std::mem::take(&mut data),
                own_id,
                last_event_id: last_event_id.clone(),
            });
            event_type.clear();
            own_id = false;
        } else if let Some(comment) = line.strip_prefix(':') {
            out.push(Seen::Comment(comment.to_string()));
        } else {
            let (name, value) = match line.find(':') {
                Some(colon) => {
                    let value = &line[colon + 1..];
                    (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
                }
                None => (&line[..], ""),
            };
            match name {
                "event" => event_type = value.to_string(),
                "data" => {
                    data.push_str(value);
                    data.push('\n');
                }
                "id" if !value.contains('\0') => {
                    last_event_id = value.to_string();
                    own_id = true;
                }
                "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                    let ms = value.bytes().fold(0u64, |acc, d| {
                        acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                    });
                    out.push(Seen::Retry(ms));
                }
                _ => {}
            }
        }
    }
    // "If the file ends in the middle of an event, before the final empty
    // line, the incomplete event is not dispatched." onair says so once.
    if unterminated || !data.is_empty() || !event_type.is_empty() || own_id {
        out.push(Seen::Incomplete);
    }
    out
}
