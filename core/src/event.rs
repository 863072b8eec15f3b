//! The service's stream events (spec 2.6, 4.6, 6), typed.
//!
//! [`Decoder`] wraps the [`sse::Parser`] and turns each
//! frame into an [`Item`]: a typed [`Event`] (`chat`, `presence`, `like`,
//! `donation`, `end`), an [`Item::Unknown`] for a name this version does not
//! know, a heartbeat, or a [`DecodeError`] that keeps the raw frame. Bad input
//! never stops the stream.
//!
//! Every wire field has a typed home; nullable fields are `Option`; unknown
//! fields are ignored; unknown enum values are kept as `Other(String)`.
//!
//! ```
//! use onair::event::{Decoder, Event, Item};
//!
//! let mut decoder = Decoder::new();
//! let mut rest: &[u8] = b"event:donation\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":null},\
//!     \"amount\":100,\"message\":null,\"time\":\"2024-11-22T04:33:20Z\"}\n\n";
//! let Some(Item::Event { event: Event::Donation(d), .. }) = decoder.next_item(&mut rest) else {
//!     panic!("expected a donation");
//! };
//! assert_eq!((d.amount, d.user.nickname, d.message), (100, None, None));
//! ```

use serde::{Deserialize, Serialize};

use crate::proto::sse::{self, FrameErrorKind};
use crate::proto::time::{FrameId, Timestamp};
use crate::wire::wire_enum;

mod payload;

/// The payload reader's two ways, for the fuzz targets
/// (`fuzz/fuzz_targets/fast_json.rs`): the documented-shape fast path and
/// serde_json must agree wherever the fast path answers.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    use super::{DecodeErrorKind, Event};

    /// The fast path's answer (`None`: not the documented shape).
    pub fn documented(name: &str, data: &str) -> Option<Event> {
        super::payload::documented(name, data)
    }

    /// serde_json's answer (every error comes from it).
    pub fn read(name: &str, data: &str) -> Result<Option<Event>, (DecodeErrorKind, String)> {
        super::payload::read(name, data)
    }
}

/// The person behind an event. `id` is the stable key (spec 2.5); the
/// nickname changes, repeats, and may be `null`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct User {
    /// Encrypted identifier, scoped to (bot, DJ). Use it as the key.
    pub id: String,
    /// Nickname; `None` when the service sent `null` (never an empty string).
    #[serde(default)]
    pub nickname: Option<String>,
}

/// A chat message posted by a listener or the DJ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Chat {
    /// The poster.
    #[serde(deserialize_with = "crate::wire::object")]
    pub user: User,
    /// True when the DJ posted; use it to keep the DJ out of tallies.
    pub is_dj: bool,
    /// The text as typed; always a string, even if it looks like JSON.
    pub message: String,
    /// When it was sent.
    pub sent_time: Timestamp,
}

wire_enum! {
    /// `presence.type`: only `JOIN` is sent today.
    pub enum PresenceType {
        /// A listener joined.
        Join = "JOIN",
    }
}

/// A listener joined (delivered only when the bot is a manager).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Presence {
    /// Who joined.
    #[serde(deserialize_with = "crate::wire::object")]
    pub user: User,
    /// The kind of presence change.
    #[serde(rename = "type")]
    pub kind: PresenceType,
    /// Rank in this broadcast's donation ranking; `None` with no donations.
    #[serde(default)]
    pub fan_rank: Option<u64>,
    /// Whether the DJ made this listener a manager.
    pub is_manager: bool,
    /// Affinity score across broadcasts (may be fractional); `None` if unknown.
    #[serde(default)]
    pub favorite_temperature: Option<f64>,
    /// Join time.
    pub time: Timestamp,
}

wire_enum! {
    /// `like.type`.
    pub enum LikeType {
        /// An item heart bought with the paid currency.
        Paid = "PAID",
        /// Everything else: tapped hearts and zero-heart free items.
        Free = "FREE",
    }
}

/// Hearts sent to the broadcast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Like {
    /// The sender.
    #[serde(deserialize_with = "crate::wire::object")]
    pub user: User,
    /// Paid or free.
    #[serde(rename = "type")]
    pub kind: LikeType,
    /// Hearts added this time: (amount + extraAmount) × combo. Tally this one.
    pub total_amount: u64,
    /// Hearts one item gives.
    pub amount: u64,
    /// Hearts added by a boost item; 0 when none.
    pub extra_amount: u64,
    /// How many were stacked; `None` for free tapped hearts.
    #[serde(default)]
    pub combo: Option<u64>,
    /// When sent.
    pub time: Timestamp,
}

/// A donation of the paid currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Donation {
    /// The donor.
    #[serde(deserialize_with = "crate::wire::object")]
    pub user: User,
    /// Total currency units, already multiplied out: never multiply again.
    pub amount: u64,
    /// The note sent along; `None` (never `""`) when there was none.
    #[serde(default)]
    pub message: Option<String>,
    /// When sent.
    pub time: Timestamp,
}

wire_enum! {
    /// Why the stream is ending (spec 4.6). Each asks for a different reconnect.
    pub enum EndReason {
        /// The broadcast ended: back off, then wait for the next one.
        LiveEnded = "LIVE_ENDED",
        /// The access token expired: refresh, then reconnect at once.
        TokenExpired = "TOKEN_EXPIRED",
        /// The server closed this connection only: reconnect at once.
        Reconnect = "RECONNECT",
    }
}

/// The final frame of a stream. Nothing follows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct End {
    /// Why the stream ends.
    pub reason: EndReason,
}

/// A typed stream event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Event {
    /// `chat`
    Chat(Chat),
    /// `presence`
    Presence(Presence),
    /// `like`
    Like(Like),
    /// `donation`
    Donation(Donation),
    /// `end`
    End(End),
}

impl Event {
    /// The SSE event name this event arrives under.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Chat(_) => "chat",
            Event::Presence(_) => "presence",
            Event::Like(_) => "like",
            Event::Donation(_) => "donation",
            Event::End(_) => "end",
        }
    }

    /// The person behind the event (every event but `end` has one).
    pub fn user(&self) -> Option<&User> {
        match self {
            Event::Chat(e) => Some(&e.user),
            Event::Presence(e) => Some(&e.user),
            Event::Like(e) => Some(&e.user),
            Event::Donation(e) => Some(&e.user),
            Event::End(_) => None,
        }
    }

    /// Decodes the data of a frame named `name`. `Ok(None)` means the name is
    /// not one of the service's events.
    ///
    /// ```
    /// use onair::event::{EndReason, Event};
    ///
    /// let end = Event::decode("end", r#"{"reason":"RECONNECT"}"#).unwrap().unwrap();
    /// assert_eq!(end, Event::End(onair::event::End { reason: EndReason::Reconnect }));
    /// assert!(Event::decode("poll", "{}").unwrap().is_none());
    /// ```
    pub fn decode(name: &str, data: &str) -> Result<Option<Event>, (DecodeErrorKind, String)> {
        // `Item::from_frame` runs these two readers in the same order, in
        // place (the stream's hot path): change both together.
        if let Some(event) = payload::documented(name, data) {
            return Ok(Some(event));
        }
        payload::read(name, data)
    }
}

/// What went wrong with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecodeErrorKind {
    /// The data of a known event is not JSON.
    InvalidJson,
    /// JSON, but a required field is missing or has the wrong type.
    InvalidEvent,
    /// The frame outgrew the parser's cap and was skipped.
    FrameTooLarge,
    /// The input ended inside a frame.
    IncompleteFrame,
}

impl DecodeErrorKind {
    /// The code `onair decode` prints: `invalid_json`, `invalid_event`,
    /// `frame_too_large` or `incomplete_frame`.
    pub fn code(self) -> &'static str {
        match self {
            DecodeErrorKind::InvalidJson => "invalid_json",
            DecodeErrorKind::InvalidEvent => "invalid_event",
            DecodeErrorKind::FrameTooLarge => "frame_too_large",
            DecodeErrorKind::IncompleteFrame => "incomplete_frame",
        }
    }
}

/// A frame that did not decode, with enough of it to log. The stream goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", kind.code())]
pub struct DecodeError {
    /// What went wrong.
    pub kind: DecodeErrorKind,
    /// The frame's event name, when known.
    pub event: Option<String>,
    /// The frame's own id, when it had one.
    pub id: Option<FrameId>,
    /// The frame's data as received (a prefix for an oversized frame).
    pub raw: String,
    /// A human-readable description, for logs.
    pub message: String,
}

/// One thing the event stream said, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A typed event and the id of its frame.
    Event {
        /// The frame's own id (`<epochMillis>-<offset>`), if it had one.
        id: Option<FrameId>,
        /// The event.
        event: Event,
    },
    /// A frame whose name this version does not know, kept raw.
    Unknown {
        /// The frame's event name (`message` when it had none).
        event: String,
        /// The frame's own id, if any.
        id: Option<FrameId>,
        /// The frame's data.
        data: String,
    },
    /// The service's `:heartbeat` comment: the connection is alive.
    Heartbeat,
    /// Any other comment (text after `:`, verbatim).
    Comment(String),
    /// The server's reconnection time in milliseconds.
    Retry(u64),
    /// A frame that could not be decoded.
    Error(DecodeError),
}

impl Item {
    /// Decodes one framed item.
    pub fn from_sse(item: sse::Item<'_>) -> Item {
        match item {
            sse::Item::Event(frame) => Item::from_frame(&frame),
            sse::Item::Comment(text) => {
                if text.strip_prefix(' ').unwrap_or(text) == "heartbeat" {
                    Item::Heartbeat
                } else {
                    Item::Comment(text.to_owned())
                }
            }
            sse::Item::Retry(ms) => Item::Retry(ms),
            sse::Item::Error(e) => {
                let kind = match e.kind {
                    FrameErrorKind::TooLarge { .. } => DecodeErrorKind::FrameTooLarge,
                    FrameErrorKind::Incomplete => DecodeErrorKind::IncompleteFrame,
                };
                let message = e.kind.to_string();
                Item::Error(DecodeError {
                    kind,
                    event: e.event.map(str::to_owned),
                    id: e.id.map(FrameId::new),
                    raw: e.raw.to_owned(),
                    message,
                })
            }
        }
    }

    /// Decodes one dispatched frame.
    pub fn from_frame(frame: &sse::Frame<'_>) -> Item {
        let id = frame.id.map(FrameId::new);
        // `Event::decode` inlined by hand: the fast reader's event goes
        // straight into the item instead of through a `Result` (a 150-byte
        // event moved once less; typed race -5 to -9 %, BENCHMARKS.md).
        if let Some(event) = payload::documented(frame.event, frame.data) {
            return Item::Event { id, event };
        }
        match payload::read(frame.event, frame.data) {
            Ok(Some(event)) => Item::Event { id, event },
            Ok(None) => Item::Unknown {
                event: frame.event.to_owned(),
                id,
                data: frame.data.to_owned(),
            },
            Err((kind, message)) => Item::Error(DecodeError {
                kind,
                event: Some(frame.event.to_owned()),
                id,
                raw: frame.data.to_owned(),
                message,
            }),
        }
    }
}

/// SSE framing plus typed decoding: bytes in, [`Item`]s out.
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    parser: sse::Parser,
}

impl Decoder {
    /// A decoder with the default frame cap.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder over a parser configured by the caller (e.g. its frame cap).
    pub fn with_parser(parser: sse::Parser) -> Self {
        Self { parser }
    }

    /// Consumes bytes from `input` until one item is decoded; `None` when the
    /// input is used up. Same contract as [`sse::Parser::next_item`].
    pub fn next_item(&mut self, input: &mut &[u8]) -> Option<Item> {
        self.parser.next_item(input).map(Item::from_sse)
    }

    /// Like [`Decoder::next_item`], over a [`sse::Chunk`] (faster: see
    /// [`sse::Parser::next_item_in`]).
    pub fn next_item_in(&mut self, chunk: &mut sse::Chunk<'_>) -> Option<Item> {
        self.parser.next_item_in(chunk).map(Item::from_sse)
    }

    /// The items of one whole chunk, decoded as they are pulled: the usual
    /// way to feed a decoder.
    ///
    /// ```
    /// use onair::event::{Decoder, Item};
    ///
    /// let mut decoder = Decoder::new();
    /// let chunk = b":heartbeat\n\nevent: end\ndata: {\"reason\":\"LIVE_ENDED\"}\n\n";
    /// let items: Vec<Item> = decoder.items(chunk).collect();
    /// assert_eq!(items.len(), 2);
    /// ```
    pub fn items<'d, 'i>(&'d mut self, chunk: &'i [u8]) -> Items<'d, 'i> {
        Items {
            decoder: self,
            chunk: sse::Chunk::new(chunk),
        }
    }

    /// Ends the stream: an `incomplete_frame` error if a frame was pending.
    pub fn finish(&mut self) -> Option<Item> {
        self.parser.finish().map(Item::from_sse)
    }
}

/// The decoded items of one chunk; see [`Decoder::items`].
#[derive(Debug)]
#[must_use = "the chunk is only read as the iterator is drained"]
pub struct Items<'d, 'i> {
    decoder: &'d mut Decoder,
    chunk: sse::Chunk<'i>,
}

impl Iterator for Items<'_, '_> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        self.decoder.next_item_in(&mut self.chunk)
    }
}

#[cfg(test)]
mod tests;
