//! Field values the parser keeps between lines and frames: the event name and
//! the last event id, validated once when read.

use super::one_go::Span;
use super::{append_bounded, growth, shrink_idle, shrink_idle_string, text, IDLE_CAPACITY};

/// A short field value (the event name, the last event id), validated as UTF-8
/// once when its line is read rather than at every dispatch. A value equal to
/// the one held (a repeated event name) is neither copied nor validated again.
#[derive(Debug, Clone, Default)]
pub(super) struct Field {
    /// The value, when it is valid UTF-8 (the common case).
    text: String,
    /// The raw value, when it is not (repaired only when an item needs it).
    /// Non-empty exactly when the value is invalid (empty text is valid).
    invalid: Vec<u8>,
}

impl Field {
    /// Bytes of the value as received.
    pub(super) fn len(&self) -> usize {
        self.text.len() + self.invalid.len()
    }

    pub(super) fn capacity(&self) -> usize {
        self.text.capacity() + self.invalid.capacity()
    }

    fn holds(&self, value: &[u8]) -> bool {
        self.invalid.is_empty() && self.text.as_bytes() == value
    }

    /// Replaces the value, growing its buffer to no more than `room` bytes of
    /// capacity unless the value itself needs more (see [`append_bounded`]).
    fn replace(&mut self, value: &[u8], room: usize) {
        self.text.clear();
        self.invalid.clear();
        match simdutf8::basic::from_utf8(value) {
            Ok(valid) => {
                if let Some(extra) = growth(0, self.text.capacity(), valid.len(), room) {
                    self.text.reserve_exact(extra);
                }
                self.text.push_str(valid);
                shrink_idle(&mut self.invalid);
            }
            Err(_) => {
                append_bounded(&mut self.invalid, value, room);
                shrink_idle_string(&mut self.text);
            }
        }
    }

    /// Replaces the value unless it already is `value` (a repeated event name
    /// is neither copied nor validated again).
    pub(super) fn keep(&mut self, value: &[u8], room: usize) {
        if !self.holds(value) {
            self.replace(value, room);
        }
    }

    /// Replaces a valid value with `value` when it fits the capacity held
    /// (the common case: ids of one length); `false` changes nothing.
    #[inline]
    fn refill(&mut self, value: &str) -> bool {
        if !self.invalid.is_empty() || value.len() > self.text.capacity() {
            return false;
        }
        self.text.clear();
        self.text.push_str(value);
        true
    }

    /// Replaces the value with text already validated.
    pub(super) fn set_text(&mut self, value: &str, room: usize) {
        self.text.clear();
        if !self.invalid.is_empty() {
            self.invalid.clear();
            shrink_idle(&mut self.invalid);
        }
        if let Some(extra) = growth(0, self.text.capacity(), value.len(), room) {
            self.text.reserve_exact(extra);
        }
        self.text.push_str(value);
    }

    /// The value as text, repairing invalid UTF-8 into `fix` only when needed.
    pub(super) fn text<'a>(&'a self, fix: &'a mut String) -> &'a str {
        if self.invalid.is_empty() {
            &self.text
        } else {
            fix.clear();
            fix.push_str(&String::from_utf8_lossy(&self.invalid));
            fix
        }
    }

    pub(super) fn clear(&mut self) {
        self.text.clear();
        self.invalid.clear();
        self.shrink_idle();
    }

    pub(super) fn shrink_idle(&mut self) {
        shrink_idle(&mut self.invalid);
        if self.text.capacity() > IDLE_CAPACITY {
            self.text = String::new();
        }
    }
}

/// Bytes of an id copied as one block by [`LastEventId::copy_block`].
const ID_BLOCK: usize = 32;

/// The stream's last event id: a [`Field`], or a short id of a frame read in
/// one go, copied from its validated text as one fixed-size block. That copy
/// is two vector moves instead of a call (ids change every frame); the block
/// is validated again only when lent, which a frame with its own id never is.
#[derive(Debug, Clone, Default)]
pub(super) struct LastEventId {
    field: Field,
    /// The value is `block[..len]` when `Some(len)`; otherwise `field`.
    block_len: Option<u8>,
    block: [u8; ID_BLOCK],
}

impl LastEventId {
    pub(super) fn len(&self) -> usize {
        self.block_len.map_or_else(|| self.field.len(), usize::from)
    }

    pub(super) fn capacity(&self) -> usize {
        self.field.capacity()
    }

    pub(super) fn holds(&self, value: &[u8]) -> bool {
        match self.block_len {
            Some(len) => self.block.get(..usize::from(len)) == Some(value),
            None => self.field.holds(value),
        }
    }

    /// Sets the id `text[span]` by copying [`ID_BLOCK`] bytes of `text` from
    /// its start; `false` (nothing changed) when the id is longer or `text`
    /// ends before the block does.
    #[inline]
    pub(super) fn copy_block(&mut self, text: &str, span: Span) -> bool {
        let Ok(len) = u8::try_from(span.end - span.start) else {
            return false;
        };
        let block = text.as_bytes().get(span.start..span.start + ID_BLOCK);
        match block.and_then(|block| <&[u8; ID_BLOCK]>::try_from(block).ok()) {
            Some(block) if usize::from(len) <= ID_BLOCK => {
                self.block = *block;
                self.block_len = Some(len);
                true
            }
            _ => false,
        }
    }

    /// Sets the id `text[span]` of a frame read in one go, as a block or into
    /// the capacity held; `false` (nothing changed) when it needs
    /// [`LastEventId::set_text`] with room to grow.
    #[inline]
    pub(super) fn copy_or_refill(&mut self, text: &str, span: Span) -> bool {
        self.copy_block(text, span)
            || text
                .get(span.start..span.end)
                .is_some_and(|id| self.refill(id))
    }

    /// See [`Field::keep`].
    pub(super) fn keep(&mut self, value: &[u8], room: usize) {
        if !self.holds(value) {
            self.replace(value, room);
        }
    }

    /// See [`Field::refill`].
    fn refill(&mut self, value: &str) -> bool {
        let done = self.field.refill(value);
        if done {
            self.block_len = None;
        }
        done
    }

    pub(super) fn set_text(&mut self, value: &str, room: usize) {
        self.block_len = None;
        self.field.set_text(value, room);
    }

    pub(super) fn replace(&mut self, value: &[u8], room: usize) {
        self.block_len = None;
        self.field.replace(value, room);
    }

    pub(super) fn text<'a>(&'a self, fix: &'a mut String) -> &'a str {
        let Some(len) = self.block_len else {
            return self.field.text(fix);
        };
        // Valid: the block was cut from validated text on character boundaries.
        text(self.block.get(..usize::from(len)).unwrap_or_default(), fix)
    }

    pub(super) fn clear(&mut self) {
        self.block_len = None;
        self.field.clear();
    }
}
